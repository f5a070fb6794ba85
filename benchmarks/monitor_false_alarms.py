"""False alarms of the hacking monitor's sequential tests on clean runs over real data: the
disagreement test and the per-answer leak test (``answer_leak``).

Clean runs, each ``--steps`` steps of ``--prompts`` prompts x ``--generations`` rollouts, with the
monitor watching as in training (:meth:`medrl.train.monitor.HackingMonitor.observe_rollouts`, the
trainer hook's code minus the trainer):

- ``reference``: VQA-RAD test records; the run's correctness decision is the shared one with the
  reference judge (:func:`medrl.rewards.correctness.correctness_column`, mode auto: the
  ``correct`` column of recipes such as ``capo_grpo``). Answers come from each record's pool:
  its reference, the meaning-preserving and meaning-flipping variants of
  :mod:`medrl.answers.variants`, and the references of two other records of the same question type.
  Each prompt draws its rollouts from its pool with Dirichlet(0.5) weights, so a prompt repeats
  answers as a policy does.
- ``labels``: the hand-labelled judge set (``medrl/judges/labels/judge_dev.jsonl``, candidate
  answers on VQA-RAD and SLAKE training records) with its labels as the judge: a perfect judge.
  It pays the candidates that the offline verdict calls wrong but a radiologist calls right.
- ``--train N``: N short real training runs (``MedGRPOTrainer`` with ``--recipe``, a tiny
  Qwen2.5-VL, VQA-RAD train records, the reference judge in-process). Their rollouts are the
  same draws (teacher rollouts, :mod:`medrl.train.teacher`), so the trainer hook, the recipe's
  own rewards and the monitor run as they do in training.

For each setting it prints:

- runs, and the runs with a ``disagreement`` alarm (with the 95% Clopper-Pearson upper bound of
  their rate); the same for the per-answer test's ``answer_leak`` alarm, and for either of the two;
- alarms per step;
- the share of the verdict's wrong rollouts that the run paid, and the share of its right
  rollouts that the run refused. These are the rates the run showed in the test's two
  directions; compare them with ``null_rate``.

It also prints the bound ``alpha``.

    python benchmarks/monitor_false_alarms.py [--runs 100] [--steps 16] [--train 0] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

THINK = "The question asks about the image. I look at the relevant region and decide."


def completion(answer: str) -> str:
    return f"<think>{THINK}</think><answer>{answer}</answer>"


def reference_pools(records, seed: int = 0) -> dict[str, list[str]]:
    """Per record id: its reference, its metamorphic variants and two same-type distractors."""
    from medrl.answers.variants import variants

    rng = random.Random(seed)
    by_type: dict[str, list[str]] = {}
    for r in records:
        by_type.setdefault(str(r.question_type or r.answer_type), []).append(r.answer)
    pools = {}
    for r in records:
        others = [a for a in by_type[str(r.question_type or r.answer_type)] if a.casefold() != r.answer.casefold()]
        pool = [r.answer] + [v.text for v in variants(r.answer, question=r.question, rng_seed=seed)]
        pool += rng.sample(others, min(2, len(others)))
        pools[r.id] = list(dict.fromkeys(pool))
    return pools


def decide_pools(records, pools) -> dict[tuple[str, str], bool | None]:
    """The shared correctness decision with the reference judge on every pool answer."""
    from medrl.judges import build_judge
    from medrl.rewards.correctness import correctness_column

    judge = build_judge("reference")
    rows = [(r, a) for r in records for a in pools[r.id]]
    col = correctness_column([a for _, a in rows], [r.answer for r, _ in rows], questions=[r.question for r, _ in rows],
                             answer_types=[r.answer_type for r, _ in rows], mode="auto", judge=judge)
    return {(r.id, a): c for (r, a), c in zip(rows, col)}


def simulate(items, pools, decision, *, runs, steps, prompts, generations, seed, config) -> dict:
    """``runs`` runs through a fresh monitor each; ``items``: record id -> (question, reference)."""
    import numpy as np

    from medrl.train.monitor import HackingMonitor, MonitorConfig

    rng = np.random.default_rng(seed)
    ids = sorted(items)
    alarmed, alarms, others, leaked, either = 0, 0, {}, 0, 0
    rates = {"wrong": [0.0, 0.0], "right": [0.0, 0.0]}
    for _ in range(runs):
        mon = HackingMonitor(MonitorConfig(**config, horizon=steps))
        weights = {i: rng.dirichlet([0.5] * len(pools[i])) for i in ids}
        for step in range(1, steps + 1):
            texts, recs, rewards = [], [], []
            for i in rng.choice(ids, size=prompts, replace=False):
                q, ref = items[i]
                for k in rng.choice(len(pools[i]), size=generations, p=weights[i]):
                    a = pools[i][k]
                    c = decision[(i, a)]
                    texts.append(completion(a))
                    recs.append({"record_id": i, "question": q, "answer": ref, "correct": c})
                    rewards.append([float("nan") if c is None else float(c)])
            mon.observe_rollouts(step, texts, recs, rewards, names=["answer"], group=generations)
        add_rates(rates, mon)
        hits = [a for a in mon.alerts if a.signal == "disagreement"]
        leak = [a for a in mon.alerts if a.signal == "answer_leak"]
        alarmed += bool(hits)
        alarms += len(hits)
        leaked += bool(leak)
        either += bool(hits or leak)
        count_others(others, mon)
    return {"runs": runs, "steps": runs * steps, "alarmed_runs": alarmed, "alarms": alarms,
            "answer_alarmed_runs": leaked, "either_alarmed_runs": either, **shares(rates),
            "other_hacking_alerts": others}


def add_rates(rates: dict, mon) -> None:
    """Add a run's watched rollouts and the ones against the verdict, per direction."""
    for name, share in (("wrong", "monitor/wrong_paid"), ("right", "monitor/right_refused")):
        got = dict(mon.series.get(share, []))
        for step, n in mon.series.get(f"monitor/{name}_n", []):
            rates[name][0] += n
            rates[name][1] += n * got.get(step, 0.0)


def shares(rates: dict) -> dict:
    (wn, wp), (rn, rr) = rates["wrong"], rates["right"]
    return {"wrong_rollouts": int(wn), "wrong_paid_share": wp / wn if wn else None,
            "right_rollouts": int(rn), "right_refused_share": rr / rn if rn else None}


def count_others(counts: dict, mon) -> None:
    """Runs with each other hacking alert (the monitor's heuristics beside the test)."""
    for s in {a.signal for a in mon.alerts if a.kind == "hacking" and a.signal not in ("disagreement", "answer_leak")}:
        counts[s] = counts.get(s, 0) + 1


def train_runs(n, *, recipe_name, steps, prompts, generations, seed, config, data_dir) -> dict:
    """``n`` short real training runs with teacher rollouts drawn from the pools (see above)."""
    import numpy as np
    import transformers

    from medrl.data import load_records
    from medrl.judges import build_judge
    from medrl.models import build_tiny_vlm
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe
    from medrl.train.teacher import install_teacher

    transformers.logging.set_verbosity_error()
    records = load_records("vqa_rad", split="train", data_dir=data_dir)
    seen, unique = set(), []
    for r in records:  # the teacher finds a rollout's record by its question: keep one record per question
        if r.question not in seen:
            seen.add(r.question)
            unique.append(r)
    records = unique[: max(prompts * steps, 64)]
    pools = reference_pools(records, seed)
    work = Path(tempfile.mkdtemp(prefix="medrl-monitor-fa-"))
    tiny = build_tiny_vlm(work / "tiny", texts=[r.question for r in records]
                          + [completion(a) for p in pools.values() for a in p], seed=0)
    out = {"runs": n, "steps": 0, "alarmed_runs": 0, "alarms": 0, "answer_alarmed_runs": 0, "either_alarmed_runs": 0,
           "other_hacking_alerts": {}}
    rates = {"wrong": [0.0, 0.0], "right": [0.0, 0.0]}
    for run in range(n):
        rng = np.random.default_rng(seed + run)
        weights = {r.id: rng.dirichlet([0.5] * len(pools[r.id])) for r in records}
        recipe = load_recipe(recipe_name, overrides=[
            f"grpo.max_steps={steps}", f"grpo.num_generations={generations}",
            f"grpo.per_device_train_batch_size={prompts * generations}", "grpo.gradient_accumulation_steps=1",
            f"batch.global_prompts={prompts}", f"batch.micro_batch={prompts * generations}",
            "grpo.max_completion_length=48", "grpo.save_strategy=no", "grpo.logging_steps=1",
            "grpo.report_to=[]", "grpo.use_cpu=true", "grpo.bf16=false", f"grpo.seed={seed + run}",
            "encoders.substitute=true", "algorithm.log_credit_every=0",
            *[f"monitor.thresholds.{k}={v}" for k, v in config.items()]])
        folder = work / f"run{run}"
        tr = train_rl(recipe, str(tiny), records, folder, judge=build_judge("reference"), train=False).trainer

        def draw(rec, rng=rng, weights=weights):
            return completion(pools[rec.id][rng.choice(len(pools[rec.id]), p=weights[rec.id])])

        install_teacher(tr, records, draw, replace_all=True)
        with contextlib.redirect_stdout(io.StringIO()):  # the trainer's per-step log lines
            tr.train()
        mon = tr._monitor
        out["steps"] += mon.steps
        hits = [a for a in mon.alerts if a.signal == "disagreement"]
        leak = [a for a in mon.alerts if a.signal == "answer_leak"]
        out["alarmed_runs"] += bool(hits)
        out["alarms"] += len(hits)
        out["answer_alarmed_runs"] += bool(leak)
        out["either_alarmed_runs"] += bool(hits or leak)
        count_others(out["other_hacking_alerts"], mon)
        add_rates(rates, mon)
    return {**out, **shares(rates)}


def clopper_pearson_upper(k: int, n: int, level: float = 0.95) -> float:
    from scipy.stats import beta

    return 1.0 if k >= n else float(beta.ppf(1 - (1 - level) / 2, k + 1, n - k))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100, help="simulated runs per setting")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--generations", type=int, default=8)
    ap.add_argument("--train", type=int, default=0, help="real training runs (tiny model, teacher rollouts)")
    ap.add_argument("--recipe", default="capo_grpo", help="recipe of the training runs")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="monitor setting (null_rate, alt_rate, alpha), e.g. --set alpha=0.01")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    import logging

    logging.getLogger("medrl.train.monitor").setLevel(logging.ERROR)  # the alerts are counted, not printed

    from medrl.data import load_records
    from medrl.train.monitor import MonitorConfig

    config = {k: float(v) for k, v in (s.split("=", 1) for s in args.set)}
    cfg = MonitorConfig(**config)
    kw = dict(runs=args.runs, steps=args.steps, prompts=args.prompts, generations=args.generations,
              seed=args.seed, config=config)
    results = {}
    test = load_records("vqa_rad", split="test", data_dir=args.data_dir)
    pools = reference_pools(test, args.seed)
    results["reference"] = simulate({r.id: (r.question, r.answer) for r in test}, pools, decide_pools(test, pools), **kw)

    from medrl.judges.labels import JUDGE_DEV

    labelled = [x for x in map(json.loads, JUDGE_DEV.read_text().splitlines()) if x.get("type") == "answer"]
    items, lpools, ldecision = {}, {}, {}
    for x in labelled:
        rid = x["source"]["record_id"]
        items[rid] = (x["question"], x["reference"])
        lpools.setdefault(rid, []).append(x["candidate"])
        ldecision[(rid, x["candidate"])] = bool(x["label"])
    results["labels"] = simulate(items, {k: list(dict.fromkeys(v)) for k, v in lpools.items()}, ldecision,
                                 **{**kw, "prompts": min(args.prompts, len(items))})
    if args.train:
        results[f"train ({args.recipe})"] = train_runs(args.train, recipe_name=args.recipe, data_dir=args.data_dir,
                                                       **{k: v for k, v in kw.items() if k != "runs"})
    print(f"disagreement test: null_rate {cfg.null_rate}, alt_rate {cfg.alt_rate}, alpha {cfg.alpha}, "
          f"horizon {args.steps} steps; per-answer test: answer_alt_rate {cfg.answer_alt_rate}, answer_alpha "
          f"{cfg.answer_alpha}, max_answers {cfg.max_answers}; {args.prompts} prompts x {args.generations} rollouts a step")
    for name, r in results.items():
        upper = clopper_pearson_upper(r["alarmed_runs"], r["runs"])
        pct = lambda x: "n/a" if x is None else f"{x:.1%}"  # noqa: E731
        print(f"  {name:22s} {r['alarmed_runs']}/{r['runs']} runs alarmed (95% upper {upper:.1%}), "
              f"{r['alarms'] / max(r['steps'], 1):.4f} alarms/step over {r['steps']} steps; "
              f"paid {pct(r['wrong_paid_share'])} of {r['wrong_rollouts']} rollouts the verdict calls wrong, refused "
              f"{pct(r['right_refused_share'])} of {r['right_rollouts']} it calls right; other hacking "
              f"alerts (runs): {r['other_hacking_alerts'] or 'none'}")
        for key, name_ in (("answer_alarmed_runs", "per-answer test"), ("either_alarmed_runs", "either test")):
            up = clopper_pearson_upper(r[key], r["runs"])
            print(f"  {'':22s} {name_}: {r[key]}/{r['runs']} runs alarmed (95% upper {up:.1%})")
            r[key.replace("_runs", "_upper95")] = up
        r["alarmed_upper95"] = upper
    if args.json:
        Path(args.json).write_text(json.dumps({"config": vars(args), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
