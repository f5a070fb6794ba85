"""The effects harness's numbers: per-seed values, paired comparisons, controls and the claims.

:func:`analyse` turns a folder's finished runs (:func:`read_results`) into every number the report
shows (written as ``results.json``): the main comparison (MRPO vs GRPO beside the warm-up model,
the coin-flip and plain-TRL controls, at every evaluation temperature), each signature task's arms
and controls, the judge-noise sweep, the leaky-reward runs, and one row per paper's claim
(:func:`claim_rows`) with its verdict (:func:`verdict`).

Decodings (:func:`decodings`): ``sampled`` (``eval_samples`` outputs per question at the run's
training temperature, the primary measure: RL trains on samples), ``sampled_t<T>`` (the same at
another evaluation temperature) and ``greedy``. The warm-up model at its best temperature
(:func:`best_decoding`: the sampled decoding with its highest mean accuracy over seeds) is a
control every arm must beat, as the coin flip is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from medrl.effects.config import SIGNATURES, EffectsConfig
from medrl.effects.controls import CONTROLS
from medrl.effects.metrics import sampled_key
from medrl.effects.runner import (BASELINE, MAIN, METHOD, arm_key, control_key, plan, rl_key, signature_controls,
                                  warmup_key)
from medrl.effects.stats import mean_over_seeds, paired_over_seeds, proportion_ci, significant

LABELS = {"grpo": "GRPO", "mrpo": "MRPO", "warmup": "warm-up", "warmup_best": "warm-up at its best temperature",
          "coin_flip": "coin-flip reward", "trl": "plain TRL (oracle verdict)"}

#: metric name -> (getter on one decoding's eval summary, is a share in [0, 1], lower is better)
METRICS: dict[str, tuple[Callable[[dict], Any], bool, bool]] = {
    "accuracy": (lambda e: (e.get("accuracy") or {}).get("p"), True, False),
    "early_share": (lambda e: e.get("early_share"), True, True),
    "far": (lambda e: e.get("far"), True, True),
    # the same failures counted over every held-out output: a share among failed outputs rises
    # when late failures disappear even if early ones stay as they were
    "early_rate": (lambda e: e.get("early_rate"), True, True),
    "failed_rate": (lambda e: e.get("failed_rate"), True, True),
    # where failures go when they leave the steps: every step valid, the answer wrong
    "valid_wrong_rate": (lambda e: e.get("valid_wrong_rate"), True, True),
    "pass_at_k": (lambda e: _pass_at_max(e), True, False),
    "consistency": (lambda e: (e.get("consistency") or {}).get("p"), True, False),
    "corruption_drop": (lambda e: e.get("corruption_drop"), True, False),
    "key_step_coverage": (lambda e: e.get("key_step_coverage"), True, False),
    "tag_accuracy": (lambda e: (e.get("tag_accuracy") or {}).get("p"), True, False),
    "format": (lambda e: (e.get("format") or {}).get("p"), True, False),
    "attribute_accuracy": (lambda e: e.get("attribute_accuracy"), True, False),
    "counter_prior_accuracy": (lambda e: e.get("counter_prior_accuracy"), True, False),
    "prior_accuracy": (lambda e: e.get("prior_accuracy"), True, False),
    "held_out_accuracy": (lambda e: e.get("held_out_accuracy"), True, False),
    "paraphrase_kept": (lambda e: e.get("paraphrase_kept"), True, False),
}
CLAIMS = {"accuracy": "accuracy", "early_share": "early-failure share (FFP < 0.4 among outputs with a failed step)",
          "early_rate": "early failures per output (FFP < 0.4, over all outputs)",
          "failed_rate": "outputs with a failed step",
          "valid_wrong_rate": "outputs with every step valid and a wrong answer",
          "pass_at_k": "pass@k (k = all samples of a question)",
          "far": "failure accumulation rate", "consistency": "reasoning-answer consistency",
          "corruption_drop": "accuracy drop on corrupted images (reliance on the image)",
          "key_step_coverage": "key-step coverage", "tag_accuracy": "modality-tag accuracy",
          "format": "well-formed outputs", "attribute_accuracy": "attribute-level accuracy",
          "counter_prior_accuracy": "accuracy on counter-prior records",
          "prior_accuracy": "accuracy on prior-consistent records",
          "held_out_accuracy": "accuracy on held-out answer combinations",
          "paraphrase_kept": "right answers in other words (paraphrases kept)"}
#: metrics where a decrease is the claimed improvement, beyond METRICS' own flag (a drop on corruption
#: is the reliance on the image CAPO claims to raise, so higher is "better" there)
LOWER_IS_BETTER = {k for k, v in METRICS.items() if v[2]}


def _pass_at_max(e: dict) -> float | None:
    pk = e.get("pass_at_k") or {}
    return pk[max(pk, key=int)] if pk else None


def label(arm: str, task: str = MAIN) -> str:
    """An arm's name in tables and sentences."""
    if task != MAIN:
        sig = SIGNATURES[task]
        for a in sig.arms:
            if a.key == arm:
                return a.label
    return LABELS.get(arm, arm)


# ----------------------------------------------------------------------------- decodings


def train_temperature(config: EffectsConfig, task: str = MAIN) -> float:
    """The rollout temperature of a task: a signature's paper's, else the config's."""
    sig = SIGNATURES.get(task) if task != MAIN else None
    return float(sig.temperature) if sig is not None and sig.temperature is not None else float(config.temperature)


def decodings(config: EffectsConfig, task: str = MAIN) -> list[str]:
    """A task's decodings: sampled at its training temperature, at each other evaluation
    temperature (ascending), greedy."""
    t = train_temperature(config, task)
    others = [sampled_key(x, t) for x in config.temperatures(t) if x != t]
    return ["sampled", *others, "greedy"] if config.eval_samples else ["greedy"]


def decoding_label(config: EffectsConfig, decoding: str, task: str = MAIN) -> str:
    """How a number was decoded, in words (every table and sentence carries it)."""
    if decoding == "greedy":
        return "greedy"
    t = train_temperature(config, task)
    if decoding == "sampled":
        return f"sampled, {config.eval_samples} per question at the training temperature {t:g}"
    return f"sampled, {config.eval_samples} per question at temperature {float(decoding.split('_t', 1)[1]):g}"


def short_decoding(config: EffectsConfig, decoding: str, task: str = MAIN) -> str:
    """``sampled T=1``, ``sampled T=0.7``, ``greedy``: the decoding in a table header."""
    if decoding == "greedy":
        return "greedy"
    t = train_temperature(config, task) if decoding == "sampled" else float(decoding.split("_t", 1)[1])
    return f"sampled T={t:g}"


def value(result: dict | None, metric: str, decoding: str = "sampled") -> Any:
    """``metric`` of one run's evaluation in ``decoding`` (None when absent)."""
    if not result or "eval" not in result:
        return None
    e = result["eval"].get(decoding)
    return METRICS[metric][0](e) if e else None


# ----------------------------------------------------------------------------- keys and pairs


def arm_keys(config: EffectsConfig, arm: str, seeds: int, task: str = MAIN) -> list[str]:
    """The run key of ``arm`` at each seed: ``warmup`` (the warm-up model each seed starts from),
    a control (``coin_flip``, ``trl``), an RL recipe trained with the main judge, or a signature
    task's arm."""
    if arm in ("warmup", "warmup_best"):
        return [warmup_key(config, s, task) for s in range(seeds)]
    if arm in CONTROLS:
        return [control_key(s, arm, task) for s in range(seeds)]
    if task != MAIN:
        return [arm_key(s, task, arm) for s in range(seeds)]
    return [rl_key(s, arm, config.judge) for s in range(seeds)]


def paired_runs(results: dict, keys_a: list[str], keys_b: list[str], metric: str, decoding: str = "sampled",
                decoding_b: str | None = None) -> dict:
    """Paired over seeds: the runs ``keys_b`` minus ``keys_a`` (same seed order) on ``metric``
    (``keys_a`` in ``decoding``, ``keys_b`` in ``decoding_b``, default the same)."""
    db = decoding_b or decoding
    va = [value(results.get(k), metric, decoding) for k in keys_a]
    vb = [value(results.get(k), metric, db) for k in keys_b]
    out = {"metric": metric, "decoding": db, "a_values": va, "b_values": vb, **paired_over_seeds(va, vb)}
    if db != decoding:
        out["decoding_a"] = decoding
    return out


def paired(results: dict, seeds: int, a: tuple[str, str], b: tuple[str, str], metric: str,
           decoding: str = "sampled") -> dict:
    """Paired over seeds: ``b`` (recipe, judge) minus ``a`` on ``metric``, with per-seed values."""
    r = paired_runs(results, [rl_key(s, *a) for s in range(seeds)], [rl_key(s, *b) for s in range(seeds)], metric,
                    decoding)
    return {**r, "a": list(a), "b": list(b)}


def best_decoding(config: EffectsConfig, results: dict, keys: list[str], task: str = MAIN) -> str | None:
    """The sampled decoding at which the runs ``keys`` (the warm-up models) have their highest mean
    accuracy over seeds (one temperature for every seed; None without sampled evaluations)."""
    best, best_v = None, None
    for d in decodings(config, task):
        if d == "greedy":
            continue
        v = mean_over_seeds([value(results.get(k), "accuracy", d) for k in keys])["mean"]
        if v is not None and (best_v is None or v > best_v):
            best, best_v = d, v
    return best


def verdict(result: dict, lower_is_better: bool) -> str:
    """The claims table's verdict: ``supports the claim``, ``against the claim`` or ``no
    significant difference (detectable X pp)`` - significant when both paired tests are below
    0.05 (:func:`medrl.effects.stats.significant`)."""
    sig = significant(result)
    diff = result.get("diff")
    if sig and diff is not None:
        better = diff < 0 if lower_is_better else diff > 0
        return "supports the claim" if better else "against the claim"
    mde = result.get("mde")
    if result.get("n", 0) < 2:
        return "no significant difference (one seed: no test)"
    return f"no significant difference (detectable {100 * mde:.1f} pp)" if mde is not None else \
        "no significant difference (no spread to size the detectable difference)"


def could_detect(result: dict, paper_gain: float | None) -> bool | None:
    """Whether the seeds' minimum detectable difference is at most the paper's own reported gain
    (None when either is unknown)."""
    mde = result.get("mde")
    if mde is None or paper_gain is None:
        return None
    return mde <= abs(paper_gain)


# ----------------------------------------------------------------------------- results


def read_results(config: EffectsConfig, out: str | Path) -> dict:
    """Every finished run of ``config`` in the folder ``out`` (``runs/*.json``), by job key."""
    results = {}
    for j in plan(config):
        f = Path(out) / "runs" / j.file
        if f.is_file():
            results[j.key] = json.loads(f.read_text())
    return results


def _ends(points, k: int = 3) -> dict | None:
    """Mean of the first and last ``k`` logged values of a training series, and the mean overall."""
    vals = [p[1] for p in points or [] if p[1] is not None]
    if not vals:
        return None
    k = max(1, min(k, len(vals) // 2 or 1))
    return {"first": sum(vals[:k]) / k, "last": sum(vals[-k:]) / k, "mean": sum(vals) / len(vals), "n": len(vals)}


def _series_mean(points) -> float | None:
    vals = [p[1] for p in points or [] if p[1] is not None]
    return sum(vals) / len(vals) if vals else None


#: the arms of the main comparison, in the order the report shows them
ARMS = ("warmup", "coin_flip", BASELINE, "trl", METHOD)
#: (arm a, arm b, why): the comparisons that say whether RL learned at this budget
CONTROL_PAIRS = (("warmup", BASELINE, "Does GRPO learn?"), ("coin_flip", BASELINE, "Is it more than the noise floor?"),
                 ("warmup", "coin_flip", "What does drift alone do?"), ("warmup", "trl", "Does plain TRL learn?"),
                 ("warmup", METHOD, "Does MRPO learn?"))
#: the main comparison's metrics (at every sampled decoding; greedy for those marked)
MAIN_METRICS = ("early_rate", "early_share", "accuracy", "failed_rate", "valid_wrong_rate", "pass_at_k", "far")
GREEDY_METRICS = ("accuracy", "early_rate", "early_share", "valid_wrong_rate")
ARM_METRICS = ("accuracy", "early_rate", "early_share", "failed_rate", "valid_wrong_rate", "pass_at_k", "far",
               "attribute_accuracy", "held_out_accuracy")
#: the claim each part of the harness tests: MRPO's on the main task (and under judge noise)
MRPO_CLAIM = {"paper": "MRPO (000_20b05565d28598f4)",
              "claim": "step-aware token advantages cut early-stage reasoning failures against GRPO (Sec. 5.3, Fig. 3)",
              "task": "modality, organ, plane and study questions (48 question/answer pairs, 4 modality/organ pairs "
                      "held out of training)",
              "failure": "failure cascade",
              "planted": "30% of warm-up traces open with a wrong first step carried into a wrong answer",
              "metric": "early_share", "paper_gain": -0.082,
              "paper_gain_note": "early-stage share of failures, GRPO 21.2% -> MRPO 13.0% (Sec. 5.3)"}


def _arms(config: EffectsConfig) -> list[str]:
    return [a for a in ARMS if a not in CONTROLS or a in config.controls]


def _curves(config: EffectsConfig, results: dict, arms: list[str], task: str = MAIN, seeds: int | None = None) -> dict:
    """Per arm: ``{metric: {step: [value of each seed]}}`` of the sampled learning curves; each
    seed's warm-up model's sampled evaluation of the same subset is step 0 of its runs."""
    n = config.seeds if seeds is None else seeds
    out: dict[str, dict] = {}
    for arm in arms:
        if arm in ("warmup", "warmup_best"):
            continue
        per: dict[str, dict] = {"accuracy": {}, "early_rate": {}}
        for s, key in enumerate(arm_keys(config, arm, n, task)):
            pts = list((results.get(key) or {}).get("curve") or [])
            w = (results.get(warmup_key(config, s, task)) or {}).get("eval", {}).get("sampled_subset")
            if pts and w:
                pts = [{"step": 0, **w}, *pts]
            for p in pts:
                for m in per:
                    if p.get(m) is not None:
                        per[m].setdefault(p["step"], []).append(p[m])
        out[arm] = per
    return out


def _timing(results: dict, workers: int) -> dict:
    """Seconds per training step (the training loop alone), wall and CPU, per run and per kind of
    run; and what the whole run takes on ``workers`` idle cores, estimated from CPU times.

    A worker runs one torch thread, so its CPU time is about the wall time the same work takes on
    a core of its own: on a loaded machine the wall times grow, the CPU times much less. The
    estimate is the first warm-up's CPU time (nothing else can start before it but the judges'
    kappa) plus every other job's CPU time spread over the workers; a job that recorded no CPU time
    counts with its wall time (an upper bound)."""
    rows = {k: {"seconds_per_step": r.get("seconds_per_step"), "cpu_seconds_per_step": r.get("cpu_seconds_per_step"),
                "train_seconds": r.get("train_seconds"), "curve_seconds": r.get("curve_seconds"),
                "eval_seconds": r.get("eval_seconds"), "seconds": r.get("seconds"), "cpu_seconds": r.get("cpu_seconds"),
                "steps": r.get("steps"), "trainer": r.get("trainer")}
            for k, r in results.items() if r.get("kind") in ("rl", "control", "hack")}
    by: dict[str, dict[str, list[float]]] = {}
    for k, r in rows.items():
        for m in ("seconds_per_step", "cpu_seconds_per_step"):
            if r[m] is not None:
                by.setdefault(k.split("/", 1)[1], {}).setdefault(m, []).append(r[m])
    by_arm = {k: {m: {**mean_over_seeds(v), "min": min(v), "max": max(v)} for m, v in d.items()}
              for k, d in sorted(by.items())}

    def cost(r: dict) -> float | None:
        v = r.get("cpu_seconds")
        return v if v is not None else r.get("seconds")

    first = min((k for k, r in results.items() if "sft_seconds" in r), default=None)
    costs = {k: cost(r) for k, r in results.items() if cost(r) is not None}
    estimate = None
    if costs:
        head = costs.get(first, 0.0) if first else 0.0
        estimate = head + (sum(costs.values()) - head) / max(workers, 1)
    return {"runs": rows, "by_arm": by_arm, "job_seconds": costs,
            "idle_estimate_seconds": estimate, "workers": workers,
            "jobs_without_cpu_time": sorted(k for k, r in results.items() if r.get("cpu_seconds") is None)}


def _warmup_summary(config: EffectsConfig, results: dict, keys: list[str]) -> dict:
    """The warm-up models' traces (the planted failures' realised shares, mean over seeds)."""
    planted: dict[str, list[float]] = {}
    early: list[float] = []
    for k in dict.fromkeys(keys):
        w = (results.get(k) or {}).get("warmup") or {}
        if w.get("early_error_share") is not None:
            early.append(w["early_error_share"])
        for kind, v in (w.get("planted") or {}).items():
            planted.setdefault(kind, []).append(v[2])
    return {"early_error_share": mean_over_seeds(early)["mean"] if early else None,
            "planted": {k: mean_over_seeds(v)["mean"] for k, v in planted.items()},
            "n_models": len(dict.fromkeys(keys)),
            "first": (results.get(keys[0]) or {}).get("warmup") if keys else None}


def _arm_table(config: EffectsConfig, results: dict, arms: list[str], seeds: int, task: str,
               metrics: tuple[str, ...]) -> dict:
    return {a: {f"{m}@{d}": [value(results.get(k), m, d) for k in arm_keys(config, a, seeds, task)]
                for m in metrics for d in decodings(config, task)} for a in arms}


def analyse_main(config: EffectsConfig, results: dict) -> dict:
    """The main comparison: arms, controls (the warm-up at its best temperature among them), MRPO
    vs GRPO at every decoding, by question type, curves, training dynamics."""
    c = config
    out: dict[str, Any] = {}
    arms = _arms(c)
    wkeys = arm_keys(c, "warmup", c.seeds)
    out["warmup"] = _warmup_summary(c, results, wkeys)
    out["arms"] = _arm_table(c, results, arms, c.seeds, MAIN, ARM_METRICS)
    best = best_decoding(c, results, wkeys)
    out["warmup_best_decoding"] = best
    sampled = [d for d in decodings(c) if d != "greedy"]
    controls = []
    for a, b, why in CONTROL_PAIRS:
        if a not in arms or b not in arms:
            continue
        comp = {"a": a, "b": b, "why": why}
        for d in sampled:
            comp[f"accuracy@{d}"] = paired_runs(results, arm_keys(c, a, c.seeds), arm_keys(c, b, c.seeds),
                                                "accuracy", d)
        comp["early_rate@sampled"] = paired_runs(results, arm_keys(c, a, c.seeds), arm_keys(c, b, c.seeds),
                                                 "early_rate", "sampled")
        comp["accuracy@greedy"] = paired_runs(results, arm_keys(c, a, c.seeds), arm_keys(c, b, c.seeds),
                                              "accuracy", "greedy")
        controls.append(comp)
    if best is not None:  # every arm, sampled at its training temperature, against the best warm-up
        for b in arms:
            if b in ("warmup", "coin_flip"):
                continue
            controls.append({"a": "warmup_best", "b": b, "why": "Does it beat the warm-up model at its best "
                             "temperature?", "accuracy@sampled": paired_runs(
                                 results, wkeys, arm_keys(c, b, c.seeds), "accuracy", best, "sampled")})
    out["controls"] = controls
    base, meth = (BASELINE, c.judge), (METHOD, c.judge)
    out["main"] = {**{f"{m}@{d}": paired(results, c.seeds, base, meth, m, d) for d in sampled for m in MAIN_METRICS},
                   **{f"{m}@greedy": paired(results, c.seeds, base, meth, m, "greedy") for m in GREEDY_METRICS}}
    by_type: dict[str, dict] = {}
    for a in arms:
        for k in arm_keys(c, a, c.seeds):
            for d in ("sampled", "greedy"):
                e = ((results.get(k) or {}).get("eval") or {}).get(d) or {}
                for q, v in (e.get("by_type") or {}).items():
                    slot = by_type.setdefault(q, {}).setdefault(a, {}).setdefault(d, {"accuracy": [], "early_rate": []})
                    slot["accuracy"].append(v.get("accuracy"))
                    slot["early_rate"].append(v.get("early_rate"))
    out["by_type"] = by_type
    out["curves"] = _curves(c, results, arms)
    dyn = {}
    for who in (BASELINE, METHOD):
        rows = []
        for s in range(c.seeds):
            ser = (results.get(rl_key(s, who, c.judge)) or {}).get("series") or {}
            rows.append({k: _ends(ser.get(k)) for k in ("monitor/truth_accuracy", "reward", "mrpo/reshaped_frac",
                                                        "ffp/early", "ffp/no_ffp", "kl")})
        dyn[who] = rows
    out["dynamics"] = dyn
    return out


def steps_to_reach(curve_points: dict, start: dict, reach: float) -> list[int | None]:
    """Per seed: the first learning-curve step at which the sampled accuracy reaches that seed's
    step-0 value (its warm-up model) plus ``reach``; None when the run never does.
    ``curve_points[s]``: seed s's (step, accuracy) points; ``start[s]``: its step-0 value."""
    out = []
    for s, pts in curve_points.items():
        base = start.get(s)
        hit = None
        if base is not None:
            for step, acc in sorted(pts):
                if step > 0 and acc is not None and acc >= base + reach:
                    hit = step
                    break
        out.append(hit)
    return out


def analyse_signature(config: EffectsConfig, results: dict, name: str) -> dict:
    """One signature task: its description, the warm-up models' planted failures, every arm at every
    decoding, the controls (the baseline against the warm-up model, its best temperature and the
    coin flip), the method against the baseline on the claimed metric and the secondary ones, and
    what only this paper's claim needs (ARMed: the semantic reward's spread; StepGRPO: the steps to
    reach a stated accuracy)."""
    c = config
    sig = SIGNATURES[name]
    n = c.signature_seeds
    ctl = signature_controls(c)
    arms = ["warmup", *ctl, *[a.key for a in sig.arms]]
    metrics = tuple(dict.fromkeys(("accuracy", sig.metric, *sig.secondary, "format")))
    out: dict[str, Any] = {"describe": sig.describe(), "arms_order": arms,
                           "labels": {a: label(a, name) for a in arms}}
    wkeys = arm_keys(c, "warmup", n, name)
    out["warmup"] = _warmup_summary(c, results, wkeys)
    out["arms"] = _arm_table(c, results, arms, n, name, metrics)
    best = best_decoding(c, results, wkeys, name)
    out["warmup_best_decoding"] = best
    base, meth = sig.baseline.key, sig.method.key
    dec = "greedy" if sig.metric == "corruption_drop" else "sampled"
    controls = [{"a": "warmup", "b": base, "why": "Does the baseline learn?",
                 "result": paired_runs(results, wkeys, arm_keys(c, base, n, name), "accuracy", "sampled")}]
    if best is not None:
        controls.append({"a": "warmup_best", "b": base, "why": "Does the baseline beat the warm-up model at its best "
                         "temperature?", "result": paired_runs(results, wkeys, arm_keys(c, base, n, name), "accuracy",
                                                               best, "sampled")})
    if "coin_flip" in ctl:
        controls.append({"a": "coin_flip", "b": base, "why": "Is it more than the noise floor?",
                         "result": paired_runs(results, arm_keys(c, "coin_flip", n, name),
                                               arm_keys(c, base, n, name), "accuracy", "sampled")})
    controls.append({"a": "warmup", "b": meth, "why": "Does the method learn?",
                     "result": paired_runs(results, wkeys, arm_keys(c, meth, n, name), "accuracy", "sampled")})
    out["controls"] = controls
    comps = {}
    for m in metrics:
        for d in decodings(c, name):
            if m == "corruption_drop" and d != "greedy":
                continue
            comps[f"{m}@{d}"] = paired_runs(results, arm_keys(c, base, n, name), arm_keys(c, meth, n, name), m, d)
    out["method_vs_baseline"] = comps
    out["claim"] = comps.get(f"{sig.metric}@{dec}")
    out["others"] = {o.key: paired_runs(results, arm_keys(c, o.key, n, name), arm_keys(c, meth, n, name),
                                        sig.metric, dec) for o in sig.others}
    out["curves"] = _curves(c, results, [a for a in arms if a != "warmup"], name, n)
    dyn: dict[str, Any] = {}
    for a in sig.arms:
        per = []
        for k in arm_keys(c, a.key, n, name):
            ser = (results.get(k) or {}).get("series") or {}
            per.append({"reward_std": _series_mean(ser.get("reward_std")), "reward": _ends(ser.get("reward")),
                        "length": _series_mean(ser.get("completions/mean_length"))})
        dyn[a.key] = per
    out["dynamics"] = dyn
    out["within_group_reward_std"] = {a.key: paired_over_seeds([r["reward_std"] for r in dyn[base]],
                                                               [r["reward_std"] for r in dyn[a.key]])
                                      for a in sig.arms if a.key != base}
    if name == "armed":  # Fig. 3: the raw and adaptive semantic rewards over the ARMed run's rollouts
        sem = {}
        for metric in ("cosine", "bertscore"):
            for kind in ("raw", "adaptive"):
                means, vars_ = [], []
                for k in arm_keys(c, meth, n, name):
                    ser = (results.get(k) or {}).get("series") or {}
                    means.append(_series_mean(ser.get(f"armed/{metric}_{kind}_mean")))
                    vars_.append(_series_mean(ser.get(f"armed/{metric}_{kind}_var")))
                sem[f"{metric}_{kind}"] = {"mean": mean_over_seeds(means), "var": mean_over_seeds(vars_),
                                           "per_seed_mean": means, "per_seed_var": vars_}
        out["semantic_reward"] = sem
        out["semantic_paper"] = {"cosine_raw": {"mean": 0.903, "var": 0.045}, "bertscore_raw": {"mean": 0.986,
                                                                                                 "var": 0.029}}
    if name == "stepgrpo":  # the steps each arm takes to reach the warm-up's accuracy plus a stated margin
        from medrl.effects.signatures.stepgrpo import REACH

        reach = {}
        for a in sig.arms:
            pts, start = {}, {}
            for s, k in enumerate(arm_keys(c, a.key, n, name)):
                pts[s] = [(p["step"], p.get("accuracy")) for p in (results.get(k) or {}).get("curve") or []]
                w = (results.get(warmup_key(c, s, name)) or {}).get("eval", {}).get("sampled_subset") or {}
                start[s] = w.get("accuracy")
            reach[a.key] = steps_to_reach(pts, start, REACH)
        out["steps_to_reach"] = {"reach": REACH, "per_arm": reach}
    return out


def claim_rows(config: EffectsConfig, a: dict) -> list[dict]:
    """One row per paper's claim this folder tested: MRPO's on the main task (and under each noisy
    judge of the sweep), each signature's. Each row: paper, claim, task, planted failure, metric
    with its decoding, the paired difference over the seeds with its interval, the minimum
    detectable difference, the verdict, and whether the seeds could have detected the paper's own
    reported gain."""
    rows = []

    def row(info: dict, result: dict | None, metric: str, decoding_text: str, judge: str | None = None) -> dict:
        result = result or {}
        lower = metric in LOWER_IS_BETTER
        return {"paper": info["paper"], "claim": info["claim"], "task": info["task"], "failure": info["failure"],
                "planted": info["planted"], "metric": metric, "metric_label": CLAIMS.get(metric, metric),
                "decoding": decoding_text, "judge": judge, "n": result.get("n", 0), "diff": result.get("diff"),
                "ci_low": result.get("ci_low"), "ci_high": result.get("ci_high"), "mde": result.get("mde"),
                "t_p": result.get("t_p"), "wilcoxon_p": result.get("wilcoxon_p"),
                "verdict": verdict(result, lower) if result else "not run",
                "paper_gain": info.get("paper_gain"), "paper_gain_note": info.get("paper_gain_note"),
                "could_detect_paper_gain": could_detect(result, info.get("paper_gain"))}

    c = config
    if "main" in a:
        m = MRPO_CLAIM["metric"]
        rows.append(row(MRPO_CLAIM, a["main"].get(f"{m}@sampled"), m, decoding_label(c, "sampled"), c.judge))
    for r in a.get("sweep", []):
        if r["judge"] == c.judge and "main" in a:
            continue
        m = MRPO_CLAIM["metric"]
        info = {**MRPO_CLAIM, "claim": MRPO_CLAIM["claim"] + f", with a noisy judge ({r['judge']})"}
        rows.append(row(info, r.get(m), m, decoding_label(c, "sampled"), r["judge"]))
    for name, s in a.get("signatures", {}).items():
        sig = SIGNATURES[name]
        d = "greedy" if sig.metric == "corruption_drop" else "sampled"
        info = {"paper": sig.paper, "claim": sig.claim, "task": sig.task, "failure": sig.failure,
                "planted": sig.planted, "paper_gain": sig.paper_gain, "paper_gain_note": sig.paper_gain_note}
        rows.append(row(info, s.get("claim"), sig.metric, decoding_label(c, d, name), c.judge))
    return rows


def analyse(config: EffectsConfig, results: dict) -> dict:
    """Every number of the report (also written as ``results.json``)."""
    c = config
    out: dict[str, Any] = {"config": c.to_dict()}
    first_env = next((r.get("env") for r in results.values() if r.get("env")), None)
    out["env"] = dict(first_env or {})
    if out["env"]:  # the cores the workers were pinned to, over every job
        out["env"]["affinities"] = sorted({tuple(r["env"]["affinity"]) for r in results.values()
                                           if (r.get("env") or {}).get("affinity") is not None})
    out["decoding"] = {d: decoding_label(c, d) for d in decodings(c)}
    if c.main:
        out.update(analyse_main(c, results))
    out["timing"] = _timing(results, max(c.workers, 1))
    kap = (results.get("kappa") or {}).get("judges", {})
    out["kappa"] = kap
    sweep = []
    for j in ([c.judge] if c.main else []) + list(c.noise_sweep):
        n = c.seeds if j == c.judge and c.main else c.sweep_seeds
        sweep.append({"judge": j, "kappa": (kap.get(j) or {}).get("step_validity_kappa"),
                      "answer_kappa": (kap.get(j) or {}).get("answer_kappa"),
                      **{m: paired(results, n, (BASELINE, j), (METHOD, j), m) for m in
                         ("early_rate", "early_share", "accuracy", "valid_wrong_rate")},
                      "early": paired(results, n, (BASELINE, j), (METHOD, j), "early_rate")})
    out["sweep"] = sweep
    out["signatures"] = {name: analyse_signature(c, results, name) for name in c.signatures}
    out["hacking"] = analyse_hacking(c, results)
    out["claims"] = claim_rows(c, out)
    return out


def analyse_hacking(config: EffectsConfig, results: dict) -> dict:
    """The leaky-reward runs: per run the hack rate per step and the monitor's alerts; precision
    and recall of the alerts, and the alerts on every other training run."""
    c = config
    hacks = {}
    for h in c.hacks:
        per = []
        for s in range(c.hack_seeds):
            r = results.get(f"s{s}/hack-{h}") or {}
            hr = (r.get("series") or {}).get("monitor/hack_rate") or []
            alerts = [a for a in (r.get("monitor") or {}).get("alerts", []) if a.get("kind", "hacking") == "hacking"]
            per.append({"seed": s, "hack_rate": hr, "mean_hack_rate": sum(p[1] for p in hr) / len(hr) if hr else None,
                        "last_hack_rate": hr[-1][1] if hr else None, "alerts": alerts,
                        "alerted": bool(alerts), "accuracy": value(r, "accuracy", "greedy")})
        hacks[h] = {"leaky": h != "oracle", "runs": per}
    tp = sum(1 for h, v in hacks.items() if v["leaky"] for r in v["runs"] if r["alerted"])
    fp = sum(1 for h, v in hacks.items() if not v["leaky"] for r in v["runs"] if r["alerted"])
    pos = sum(len(v["runs"]) for v in hacks.values() if v["leaky"])
    hacked = [r for v in hacks.values() if v["leaky"] for r in v["runs"] if (r["mean_hack_rate"] or 0) > 0]

    def hacking_alerts(r):
        return [a for a in (r.get("monitor") or {}).get("alerts", []) if a.get("kind", "hacking") == "hacking"]

    # every other training run is watched too: those trained with the exact oracle are clean as
    # well (their reward pays only what is true), those with a noisy or reference judge in between
    honest = {k: hacking_alerts(r) for k, r in results.items() if r.get("kind") == "rl" and r.get("judge") == "oracle"}
    noisy = {k: hacking_alerts(r) for k, r in results.items() if r.get("kind") == "rl" and r.get("judge") != "oracle"}
    fp_all = fp + sum(bool(v) for v in honest.values())
    return {"runs": hacks, "true_positives": tp, "false_positives": fp, "leaky_runs": pos,
            "hacked_runs": len(hacked), "hacked_alerted": sum(r["alerted"] for r in hacked),
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / pos if pos else None,
            "recall_ci": proportion_ci(tp, pos) if pos else None,
            "clean_training_runs": len(honest), "clean_training_alerted": sum(bool(v) for v in honest.values()),
            "clean_alerts": {k: [f"{a.get('signal')}@{a.get('step')}" for a in v] for k, v in honest.items() if v},
            "noisy_training_runs": len(noisy), "noisy_training_alerted": sum(bool(v) for v in noisy.values()),
            "noisy_alerts": {k: [f"{a.get('signal')}@{a.get('step')}" for a in v] for k, v in noisy.items() if v},
            "precision_all": tp / (tp + fp_all) if tp + fp_all else None}


__all__ = ["ARMS", "CLAIMS", "LABELS", "METRICS", "analyse", "analyse_main", "analyse_signature", "arm_keys",
           "best_decoding", "claim_rows", "could_detect", "decoding_label", "decodings", "label", "paired",
           "paired_runs", "read_results", "steps_to_reach", "value", "verdict"]
