"""``medrl bench effects``: what each method changes where the truth is known (phantom + oracle)."""

from __future__ import annotations

HELP = "benchmarks with known truth: `medrl bench effects` measures each method's claimed effect"

DESCRIPTION = """\
medrl bench effects: train the methods side by side on synthetic medical VQA whose every answer
and reasoning step is known exactly (the `phantom` data source, scored by the `oracle` judge),
and report what each method changes - with its controls and statistics over seeds, not one
lucky run.

What runs:
  1. a warm-up model: a tiny Qwen2.5-VL built for the task, fine-tuned (SFT) on reasoning traces
     of which a stated share (--early-error-share, default 30%) opens with a wrong first step
     that carries into a wrong answer - a failure cascade RL can learn to remove;
  2. from that model, for every seed (--seeds; 8 in the full profile) with the same seed, data
     order and budget: GRPO, MRPO and two controls - GRPO's recipe with a coin-flip reward (the
     noise floor: what the optimizer's drift alone does) and plain trl.GRPOTrainer with the
     oracle's answer verdict as its only reward (the trainer control);
  3. evaluation on held-out phantoms, scored by the oracle, two ways: sampled (eval_samples
     outputs per question at the training temperature, seeded: the primary measure, as RL
     trains on samples; pass@k too) and greedy. Accuracy, First Failure Point stage shares and
     early failures per output, FAR, consistency, key-step coverage, modality tags, per question
     type; learning curves every curve_every steps on a fixed subset of held-out records;
  4. each paper's signature effect on the same task (when --set signatures=... names them):
     ARMed adaptive vs raw semantic reward, CAPO vs GRPO (accuracy drop on corrupted images,
     consistency), StepGRPO (key-step coverage), MediX-R1 (modality tags);
  5. the judge as a variable (--set noise_sweep=oracle:0.1,oracle:0.2,oracle:0.3,reference):
     GRPO vs MRPO trained with a noisy oracle and with the reference judge, next to each judge's
     kappa against the oracle, measured the way `medrl judge-bench` measures it;
  6. reward hacking while it happens (--set hacks=yes_judge,length_judge,planted_hole,oracle):
     GRPO whose answer reward pays a leaky judge's verdict directly; the hack rate per step and
     the hacking monitor's precision and recall.

Every comparison is paired over seeds: per-seed values, the mean difference with a 95%
t-interval, the minimum difference detectable at 80% power, a paired t-test and a Wilcoxon
signed-rank test, and a plain sentence that says what the numbers show - including "no
significant difference" - and which decoding it uses.

Profiles:
  --quick          1 seed, a few steps, the smallest model: the machinery end to end (the fast
                   test suite runs it; its numbers mean nothing). About a minute.
  (default) full   8 seeds x (GRPO, MRPO, coin-flip, plain TRL), 60 steps x 4 prompts x 8
                   rollouts each, from one warm-up model (0.8M tiny model): docs/effects.md has
                   the run, its command, its time on 2 CPU cores and its report.
                   --set warmup_from=FOLDER reuses an already fine-tuned warm-up model.
  --profile gpu    one GPU: a larger tiny model built from a config, more steps, rollouts and
                   held-out records, 8 worker processes sharing the GPU (unmeasured).

Scheduling: --workers processes at once (default 2), each pinned to its own CPU core with one
torch thread; they end with this process (kill it and they stop).

Output (--out, default effects_out/<profile>):
  report.md, report.html (figures embedded), results.json (every number of the report),
  seeds/seed<N>.json (per-seed results), runs/*.json (one per training run), figures/,
  models/ (warm-up and trained models; eval/ holds every scored output), logs/ (one per run).
One writer per folder: a second `medrl bench effects` on the same --out is refused (exit code 6)
and touches nothing. Resumable: rerun the same command; finished runs are read back, and a seed
whose seeds/ file exists is skipped. A folder made with other settings is refused.
--report-only rewrites the report from a folder's finished runs with the settings stored in it.

Examples:
  medrl bench effects --quick
  medrl bench effects --out effects_out/full
  medrl bench effects --report-only --out effects_out/full
  medrl bench effects --seeds 3 --set rl_steps=80 --set noise_sweep=oracle:0.2,reference
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
                   help="training processes at once, each pinned to its own core with one torch thread "
                        "(0: in this process; default 2, the gpu profile 8)")
    e.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any setting of medrl.effects.EffectsConfig (repeatable; a comma makes a list)")
    e.add_argument("--out", default=None, help="output folder (default effects_out/<profile>)")
    e.add_argument("--report-only", action="store_true",
                   help="rewrite the report from the finished runs in --out, with the settings stored there")
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
    from medrl.effects.runner import EffectsFolderMismatch, stored_config

    profile = "quick" if args.quick else (args.profile or "full")
    out = Path(args.out or f"effects_out/{profile}")
    try:
        overrides = parse_set(args.set)
        for key, val in (("seeds", args.seeds), ("early_error_share", args.early_error_share), ("judge", args.judge),
                         ("workers", args.workers)):
            if val is not None:
                overrides[key] = val
        stored = stored_config(out) if args.report_only else None
        if stored is not None and (overrides or args.quick or args.profile):
            print("medrl bench effects: --report-only uses the settings stored in "
                  f"{out / 'config.json'}; give only --out", file=sys.stderr)
            return 2
        config = stored if stored is not None else make_config(profile, **overrides)
    except ValueError as exc:
        print(f"medrl bench effects: {exc}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    try:
        md, html = run_effects(config, out, report_only=args.report_only, progress=not args.no_progress,
                               command="medrl " + " ".join(shlex.quote(a) for a in sys.argv[1:] if a != "--report-only"))
    except EffectsFolderMismatch as exc:
        print(f"medrl bench effects: {exc}", file=sys.stderr)
        return 2
    print(f"\nReport: {html}\n        {md}\n({(time.monotonic() - t0) / 60:.1f} min)")
    return 0
