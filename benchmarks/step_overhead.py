"""Seconds per training step: MedGRPOTrainer (MRPO recipe) vs plain TRL GRPOTrainer.

Both trainers get the same tiny Qwen2.5-VL policy (built offline), the same real VQA-RAD
records, the same reward functions (MRPO's answer, process and length rewards, the reference
judge in-process), the same GRPOConfig and the same teacher rollouts (every second rollout is
the record's evidence-based chain of thought, so the process reward judges real steps and MRPO's
token mapping has work to do; :mod:`medrl.train.teacher`). They run alternately, in blocks of
``--steps`` optimizer steps, in one process; per-step times are TRL's own ``step_time`` (the
whole ``training_step``: generation, rewards, advantages, loss, backward). Each trainer first
runs one untimed block (lazy model loads, caches), and the first step of every timed block is
dropped. Prints the median seconds per step of each and the ratio
MedGRPOTrainer / GRPOTrainer (target: under 1.10).

MedGRPOTrainer also runs the reward-hacking monitor (:mod:`medrl.train.monitor`, on by default)
on every batch; its time per step and its share of MedGRPOTrainer's median step are printed
(target: under 2%).

The hooks are timed where they live: every hook of :data:`medrl.methods.HOOK_ORDER` that a
method of the run defines, and the trainer's own step at each hook point
(:data:`TRAINER_HOOK_POINTS`); a hook point the trainer no longer has is an error naming it,
not a silent zero.

MedGRPOTrainer logs credit evidence (``credit.jsonl``: rollouts with their token advantages,
:mod:`medrl.train.credit`) every ``--credit-every`` steps, by default every step - the worst
case; recipes log every 10.

    python benchmarks/step_overhead.py [--rounds 3] [--steps 4] [--model DIR] [--credit-every N] [--smoke]

``--smoke`` (1 round of 2 steps, 2 records, 2 rollouts, 16 tokens): the test suite runs it so the
script cannot rot; its numbers are noise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


#: the trainer's own work at the hook points of one step (medrl.train.trainer.MedGRPOTrainer)
TRAINER_HOOK_POINTS = ("_shared_correctness", "_collect_reward_outputs", "_advantages", "_log_medrl_metrics")


def time_hooks(trainer, clock: list[float]) -> list[str]:
    """Wrap the trainer's hook-point steps and every hook its methods define so their time adds
    up in ``clock[0]``; returns what is timed (``Class.hook``). AttributeError names a hook point
    the trainer lacks."""
    from medrl.methods import HOOK_ORDER, Method

    def wrap(owner, name):
        fn = getattr(owner, name)

        def timed(*a, _fn=fn, **kw):
            t = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                clock[0] += time.perf_counter() - t

        setattr(owner, name, timed)
        return f"{type(owner).__name__}.{name}"

    missing = [n for n in TRAINER_HOOK_POINTS if not hasattr(trainer, n)]
    if missing:
        raise AttributeError(f"MedGRPOTrainer has no hook point {missing}: update TRAINER_HOOK_POINTS")
    timed = [wrap(trainer, n) for n in TRAINER_HOOK_POINTS]
    for m in trainer.methods:
        timed += [wrap(m, h) for h in (*HOOK_ORDER, "load_state_dict") if getattr(type(m), h) is not getattr(Method, h)]
    return timed


def _args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (each trainer runs once per round)")
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps per block (the first is warm-up)")
    ap.add_argument("--records", type=int, default=8)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--max-completion-length", type=int, default=128)
    ap.add_argument("--model", default=None, help="policy folder (default: build a tiny Qwen2.5-VL)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: on a shared small CPU more threads add noise)")
    ap.add_argument("--credit-every", type=int, default=1,
                    help="MedGRPOTrainer logs credit.jsonl every N steps (default 1: every step; 0 = off)")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument("--smoke", action="store_true", help="a tiny run in seconds (the test suite's check)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rounds, args.steps, args.records, args.generations, args.max_completion_length = 1, 2, 2, 2, 16
    return args


def _trainers(args):
    """The two trainers (same policy, records, rewards, GRPOConfig and teacher rollouts) and the work folder."""
    import torch
    import transformers
    from trl import GRPOTrainer

    from medrl.data import load_records
    from medrl.data.prompts import format_target
    from medrl.judges import build_judge
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe
    from medrl.train.teacher import install_teacher
    from medrl.train.trainer import MedGRPOTrainer

    transformers.logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    records = load_records("vqa_rad", split="train", data_dir=args.data_dir, open_only=True, limit=args.records)
    work = Path(tempfile.mkdtemp(prefix="medrl-bench-"))
    model = args.model
    if model is None:
        from medrl.models import build_tiny_vlm

        model = build_tiny_vlm(work / "tiny", texts=[r.question for r in records]
                               + [format_target(r) for r in records], seed=0)
    judge = build_judge("reference")
    g = args.generations
    overrides = [f"grpo.num_generations={g}", f"grpo.per_device_train_batch_size={2 * g}",
                 f"grpo.max_completion_length={args.max_completion_length}", "grpo.save_strategy='no'",
                 "grpo.logging_steps=1", f"grpo.max_steps={args.steps}", "grpo.report_to='none'",
                 f"algorithm.log_credit_every={args.credit_every}"]
    recipe = load_recipe("mrpo", profile="cpu", overrides=overrides)

    trainers = {}
    for label, cls in (("MedGRPOTrainer (mrpo)", MedGRPOTrainer), ("GRPOTrainer (TRL)", GRPOTrainer)):
        tr = train_rl(recipe, model, records, work / label.split()[0], judge=judge, train=False, trainer_cls=cls).trainer
        trainers[label] = install_teacher(tr, records, every=2)
    return trainers, records, work


def main(argv=None) -> int:
    import torch

    args = _args(argv)
    trainers, records, work = _trainers(args)
    g = args.generations
    hook_time = [0.0]
    med_tr = trainers["MedGRPOTrainer (mrpo)"]
    credit_time = [0.0]
    log_batch = med_tr._credit.log_batch

    def timed_credit(*a, **kw):
        t = time.perf_counter()
        try:
            return log_batch(*a, **kw)
        finally:
            credit_time[0] += time.perf_counter() - t

    med_tr._credit.log_batch = timed_credit
    hooks = time_hooks(med_tr, hook_time)
    for tr in trainers.values():  # warm-up block each (lazy model loads, caches): not timed
        tr.train()
    med_tr._monitor.seconds = 0.0
    times: dict[str, list[float]] = {k: [] for k in trainers}
    t0 = time.perf_counter()
    hook_time[0] = credit_time[0] = 0.0
    for r in range(args.rounds):
        order = list(trainers) if r % 2 == 0 else list(reversed(trainers))
        for label in order:
            tr = trainers[label]
            tr.train()
            steps = [h["step_time"] for h in tr.state.log_history if "step_time" in h]
            times[label] += steps[1:]  # drop the block's warm-up step
    elapsed = time.perf_counter() - t0

    med = {k: statistics.median(v) for k, v in times.items()}
    ours, base = list(med)
    ratio = med[ours] / med[base]
    print(f"setup: {len(records)} VQA-RAD records, {g} rollouts/prompt, batch {2 * g}, "
          f"max {args.max_completion_length} new tokens, reference judge, {args.rounds} rounds x {args.steps} steps, "
          f"{torch.get_num_threads()} torch thread(s)")
    for k, v in times.items():
        print(f"  {k:24s} median {med[k]:.3f} s/step  (n={len(v)}, min {min(v):.3f}, max {max(v):.3f})")
    n_med = args.rounds * args.steps
    print(f"  hooks ({', '.join(hooks)}): {1000 * hook_time[0] / n_med:.1f} ms/step")
    credit_file = work / "MedGRPOTrainer" / "credit.jsonl"
    size = credit_file.stat().st_size if credit_file.is_file() else 0
    print(f"  credit logging (every {args.credit_every} step(s)): {1000 * credit_time[0] / n_med:.1f} ms/step, "
          f"credit.jsonl {size / 1024:.0f} kB")
    monitor_ms = 1000 * med_tr._monitor.seconds / n_med
    monitor_share = med_tr._monitor.seconds / n_med / med[ours]
    print(f"  hacking monitor (medrl.train.monitor): {monitor_ms:.1f} ms/step = {100 * monitor_share:.2f}% of a "
          f"MedGRPOTrainer step (target < 2%)")
    print(f"ratio MedGRPOTrainer / GRPOTrainer = {ratio:.3f}   (target < 1.10; wall {elapsed:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps({"median_s_per_step": med, "times": times, "ratio": ratio,
                                               "hooks": hooks, "hooks_ms_per_step": 1000 * hook_time[0] / n_med,
                                               "credit_every": args.credit_every,
                                               "monitor_ms_per_step": monitor_ms, "monitor_share": monitor_share},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
