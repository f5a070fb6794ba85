"""``medrl bench effects``: what each method changes where the truth is known (phantom + oracle)."""

from __future__ import annotations

HELP = "benchmarks with known truth: `medrl bench effects` measures each method's claimed effect"

DESCRIPTION = """\
medrl bench effects: train the methods side by side on synthetic medical VQA whose every answer
and reasoning step is known exactly (the `phantom` data source, scored by the `oracle` judge),
and report what each method changes - with its controls and statistics over seeds, not one
lucky run - ending in one claims table: a row per paper, its verdict over 8 seeds.

What runs (the full profile: MRPO's claim):
  1. per seed: its own phantom records, and a warm-up model - a tiny Qwen2.5-VL built for the
     task, fine-tuned (SFT) on reasoning traces of which a stated share (--early-error-share,
     default 30%) opens with a wrong first step that carries into a wrong answer - the failure
     cascade MRPO claims to cut;
  2. from that model, with the same seed, data order and budget: GRPO, MRPO and two controls -
     GRPO's recipe with a coin-flip reward (the noise floor: what the optimizer's drift alone
     does) and plain trl.GRPOTrainer with the oracle's answer verdict as its only reward;
  3. evaluation on the seed's held-out phantoms, scored by the oracle: sampled (eval_samples
     outputs per question at the training temperature and at each eval_temperatures, seeded per
     seed; pass@k too) and greedy. The warm-up model at its best temperature is a control. Accuracy,
     First Failure Point stage shares, early failures per output, outputs with valid steps and a
     wrong answer (where failures go), FAR, consistency, key-step coverage, modality tags, per
     question type; learning curves every curve_every steps.

Signature tasks: one per paper whose mechanism the main task gives nothing to act on, each with
the failure its paper claims to fix planted in the warm-up model (--profile NAME runs one over 8
seeds; --set signatures=... adds them to any profile):
  armed     reward collapse: open-ended answers naming three attributes, near misses planted;
            ARMed-I vs GRPO with the raw semantic reward vs GRPO-wo-semantic
  capo      language shortcut (a prior in the question's wording) and reasoning-answer
            inconsistency; CAPO vs GRPO, on counter-prior records and corrupted images
  stepgrpo  sparse reward: multi-step questions the warm-up rarely answers right; StepGRPO
            (StepRAR + StepRVR) vs GRPO with the outcome-level reward
  medix     paraphrased right answers (open-ended answers in other words) and wrong modality
            tags; MediX-R1's composite reward vs GRPO with an exact-match reward

Also on request: the judge as a variable (--set noise_sweep=oracle:0.2,reference: GRPO vs MRPO
trained with a noisy oracle and the reference judge, beside each judge's kappa), and reward
hacking while it happens (--set hacks=yes_judge,length_judge,planted_hole,oracle).

Every comparison is paired over seeds: per-seed values, the mean difference with a 95%
t-interval, the minimum difference detectable at 80% power, a paired t-test and a Wilcoxon
signed-rank test, and a plain sentence that says what the numbers show - including "no
significant difference" - and which decoding it uses.

Profiles:
  --quick          1 seed, a few steps, the smallest model, every signature: the machinery end
                   to end (the fast test suite runs it; its numbers mean nothing).
  (default) full   MRPO's claim: 8 seeds x (GRPO, MRPO, coin-flip, plain TRL), 60 steps x 4
                   prompts x 8 rollouts each (0.8M tiny model): docs/effects.md has the run,
                   its command, its time on 2 CPU cores and its report.
  --profile armed|capo|stepgrpo|medix
                   one signature task: 8 seeds of its arms and the coin-flip control.
  --profile gpu    one GPU: a larger tiny model built from a config, more steps, rollouts and
                   held-out records, the signatures too, 8 worker processes sharing the GPU.
  --set warmup_from=FOLDER reuses the warm-up models (and records) of another effects folder,
  e.g. the judge-noise row: --set main=false --set noise_sweep=oracle:0.2 --set sweep_seeds=8.

Scheduling: --workers processes at once (default 2), each pinned to its own CPU core with one
torch thread; they end with this process (kill it and they stop).

Output (--out, default effects_out/<profile>):
  report.md, report.html (figures embedded; the claims table first), results.json (every number
  of the report), seeds/seed<N>.json (per-seed results), runs/*.json (one per training run),
  figures/, models/ (warm-up and trained models; eval/ holds every scored output), logs/.
One writer per folder: a second `medrl bench effects` on the same --out is refused (exit code 6)
and touches nothing. Resumable: rerun the same command; finished runs are read back. A folder made
with other settings is refused; more seeds (--seeds, --set signature_seeds=N) grow it.
--report-only rewrites the report from a folder's finished runs with the settings stored in it.
--claims FOLDER [FOLDER ...] writes one claims table (claims.md, claims.html) into --out from
several finished folders.

Examples:
  medrl bench effects --quick
  medrl bench effects --out effects_out/full
  medrl bench effects --profile armed --out effects_out/armed
  medrl bench effects --report-only --out effects_out/full
  medrl bench effects --out effects_out/claims --claims effects_out/full effects_out/armed
  medrl bench effects --seeds 3 --set rl_steps=80 --set noise_sweep=oracle:0.2,reference
"""


def settings_help() -> str:
    """Every --set key with its help (EffectsConfig's field metadata)."""
    import textwrap

    from medrl.effects.config import EffectsConfig

    lines = ["settings (--set KEY=VALUE; a comma makes a list):"]
    for k, v in EffectsConfig.help().items():
        lines += textwrap.wrap(f"{k}: {v}", width=96, initial_indent="  ", subsequent_indent="      ")
    return "\n".join(lines)


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="bench", metavar="<benchmark>")
    e = sub.add_parser("effects", help="each method's claimed effect on phantom data with an exact oracle",
                       description=DESCRIPTION, epilog=settings_help(),
                       formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    e.add_argument("--quick", action="store_true", help="the quick profile (1 seed, a few steps)")
    e.add_argument("--profile", choices=("full", "quick", "armed", "capo", "stepgrpo", "medix", "gpu"), default=None,
                   help="settings profile (default full: MRPO's claim; armed, capo, stepgrpo, medix: one signature "
                        "task; --quick is --profile quick)")
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
    e.add_argument("--claims", nargs="+", default=None, metavar="FOLDER",
                   help="write one claims table into --out from these finished effects folders (no training)")
    e.add_argument("--no-progress", action="store_true", help="no progress bars")


def command_line(args) -> str:
    """The ``medrl bench effects`` command these arguments make (what the report shows; built from
    the parsed arguments, not ``sys.argv``, which is the caller's when a test or script runs it)."""
    import shlex

    parts = ["medrl", "bench", "effects"]
    if args.quick:
        parts.append("--quick")
    elif args.profile:
        parts += ["--profile", args.profile]
    for flag, val in (("--seeds", args.seeds), ("--early-error-share", args.early_error_share), ("--judge", args.judge),
                      ("--workers", args.workers)):
        if val is not None:
            parts += [flag, str(val)]
    for item in args.set:
        parts += ["--set", item]
    if args.out:
        parts += ["--out", args.out]
    return " ".join(shlex.quote(p) for p in parts)


def run(args) -> int:
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
    if args.claims:
        from medrl.effects.report import claims_report

        try:
            md, html, rows = claims_report(args.claims, out)
        except (FileNotFoundError, ValueError) as exc:
            print(f"medrl bench effects: {exc}", file=sys.stderr)
            return 4
        print(f"Claims ({len(rows)} rows): {html}\n        {md}")
        return 0
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
                               command=None if args.report_only else command_line(args))
    except EffectsFolderMismatch as exc:
        print(f"medrl bench effects: {exc}", file=sys.stderr)
        return 2
    print(f"\nReport: {html}\n        {md}\n({(time.monotonic() - t0) / 60:.1f} min)")
    return 0
