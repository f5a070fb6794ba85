"""``medrl bench effects``: what each method changes where the truth is known (phantom + oracle)."""

from __future__ import annotations

HELP = "benchmarks with known truth: `medrl bench effects` measures each method's claimed effect"

DESCRIPTION = """\
medrl bench effects: train the methods side by side on synthetic medical VQA whose every answer
and reasoning step is known exactly (the `phantom` data source, scored by the `oracle` judge),
and report what each method changes - with statistics over seeds, not one lucky run.

What runs:
  1. a warm-up model: a tiny Qwen2.5-VL built for the task, fine-tuned (SFT) on reasoning traces
     of which a stated share (--early-error-share, default 30%) opens with a wrong first step
     that carries into a wrong answer - a failure cascade RL can learn to remove;
  2. GRPO and MRPO from that same model, with the same seed, data order and budget, for every
     seed (--seeds; 5 in the full profile);
  3. greedy evaluation on held-out phantoms, scored by the oracle: accuracy, First Failure Point
     stage shares (early/mid/late), FAR, consistency, key-step coverage, modality tags;
  4. each paper's signature effect on the same task: ARMed adaptive vs raw semantic reward
     (mean and variance over training, accuracy), CAPO vs GRPO (accuracy drop on corrupted
     images, reasoning-answer consistency), StepGRPO (key-step coverage), MediX-R1 (modality
     tags);
  5. the judge as a variable: GRPO vs MRPO trained with a noisy oracle (each verdict flipped
     with probability 0.1, 0.2, 0.3) and with the reference judge, next to each judge's kappa
     against the oracle, measured the way `medrl judge-bench` measures it;
  6. reward hacking while it happens: GRPO whose answer reward pays a leaky judge's verdict
     directly (yes to everything, pays length, one planted hole) and the clean oracle; the
     hack rate per step (share of paid rollouts the oracle calls wrong) and the hacking
     monitor's precision and recall (its alerts on every other training run counted too).

Every comparison is paired over seeds: per-seed values, the mean difference with a 95%
t-interval, a paired t-test and a Wilcoxon signed-rank test, and a plain sentence that says
what the numbers show - including "no significant difference".

Profiles:
  --quick          1 seed, a few steps, the smallest model: the machinery end to end (the fast
                   test suite runs it; its numbers mean nothing). A few minutes.
  (default) full   8 seeds, every signature, the sweep and the leaky runs with a 0.8M tiny model:
                   14 minutes on 2 idle CPU cores, measured (docs/effects.md has the run, its
                   command and its report).
                   --set warmup_from=FOLDER reuses an already fine-tuned warm-up model.
  --profile gpu    a real small VLM (--set model=...), more seeds and steps.

Output (--out, default effects_out/<profile>):
  report.md, report.html (figures embedded), results.json (every number of the report),
  seeds/seed<N>.json (per-seed results), runs/*.json (one per training run), figures/,
  models/ (warm-up and trained models), logs/ (one log per run in worker processes).
Resumable: rerun the same command; finished runs are read back, and a seed whose seeds/ file
exists is skipped. A folder made with other settings is refused.

Examples:
  medrl bench effects --quick
  medrl bench effects --out effects_out/full
  medrl bench effects --seeds 8 --set rl_steps=80 --set noise_sweep=oracle:0.2,reference
"""


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="bench", metavar="<benchmark>")
    e = sub.add_parser("effects", help="each method's claimed effect on phantom data with an exact oracle",
                       description=DESCRIPTION, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    e.add_argument("--quick", action="store_true", help="the quick profile (1 seed, a few steps)")
    e.add_argument("--profile", choices=("full", "quick", "gpu"), default=None,
                   help="settings profile (default full; --quick is --profile quick)")
    e.add_argument("--seeds", type=int, default=None, help="seeds of the GRPO vs MRPO comparison")
    e.add_argument("--early-error-share", type=float, default=None,
                   help="share of warm-up traces that open with a wrong first step (default 0.3)")
    e.add_argument("--judge", default=None, help="training judge of the main comparison (default oracle)")
    e.add_argument("--workers", type=int, default=None,
                   help="training processes at once, one torch thread each (0: in this process)")
    e.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any setting of medrl.effects.EffectsConfig (repeatable; a comma makes a list)")
    e.add_argument("--out", default=None, help="output folder (default effects_out/<profile>)")
    e.add_argument("--report-only", action="store_true", help="rewrite the report from finished runs")
    e.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args) -> int:
    import shlex
    import sys
    import time
    from pathlib import Path

    if getattr(args, "bench", None) != "effects":
        print("medrl bench: choose a benchmark: `medrl bench effects --help`", file=sys.stderr)
        return 2
    from medrl.effects import make_config, parse_set, run_effects

    from medrl.effects.runner import EffectsFolderMismatch

    profile = "quick" if args.quick else (args.profile or "full")
    try:
        overrides = parse_set(args.set)
        for key, val in (("seeds", args.seeds), ("early_error_share", args.early_error_share), ("judge", args.judge),
                         ("workers", args.workers)):
            if val is not None:
                overrides[key] = val
        config = make_config(profile, **overrides)
    except ValueError as exc:
        print(f"medrl bench effects: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out or f"effects_out/{profile}")
    t0 = time.monotonic()
    try:
        md, html = run_effects(config, out, report_only=args.report_only, progress=not args.no_progress,
                               command="medrl " + " ".join(shlex.quote(a) for a in sys.argv[1:] if a != "--report-only"))
    except EffectsFolderMismatch as exc:
        print(f"medrl bench effects: {exc}", file=sys.stderr)
        return 2
    print(f"\nReport: {html}\n        {md}\n({(time.monotonic() - t0) / 60:.1f} min)")
    return 0
