"""The effects report: the controls, sampled and greedy results, learning curves, paired results
with a plain sentence per claim, plots.

Writes ``report.md``, ``report.html`` (figures embedded) and ``results.json`` (every number the
report shows) into the run folder, figures into ``figures/effects_*.png``. Every claim is stated
in words by :func:`medrl.effects.stats.claim_sentence` (with the minimum detectable difference
at 80% power), which says "no significant difference" when the seeds do not show one, and every
sentence and table names the decoding it uses: *sampled* (``eval_samples`` outputs per held-out
question at the training temperature, the primary measure: RL trains on samples) or *greedy*.
:func:`read_results` gathers a folder's finished runs, so the report regenerates from the folder
alone (``medrl bench effects --report-only --out FOLDER``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from medrl.effects.config import SIGNATURES, EffectsConfig
from medrl.effects.controls import CONTROLS
from medrl.effects.runner import BASELINE, METHOD, control_key, plan, read_invocations, rl_key, warmup_key
from medrl.effects.stats import claim_sentence, mean_over_seeds, paired_over_seeds, proportion_ci
from medrl.eval.report import Report

LABELS = {"grpo": "GRPO", "mrpo": "MRPO", "armed": "ARMed (adaptive)", "armed_ablation_raw": "ARMed (raw semantic)",
          "capo": "CAPO", "capo_grpo": "GRPO (CAPO's baseline)", "stepgrpo": "StepGRPO", "medix_r1": "MediX-R1",
          "warmup": "warm-up", "coin_flip": "coin-flip reward", "trl": "plain TRL (oracle verdict)"}
DECODINGS = ("sampled", "greedy")

#: metric name -> (getter on one decoding's eval summary, is a share in [0, 1], lower is better)
METRICS: dict[str, tuple[Callable[[dict], Any], bool, bool]] = {
    "accuracy": (lambda e: (e.get("accuracy") or {}).get("p"), True, False),
    "early_share": (lambda e: e.get("early_share"), True, True),
    "far": (lambda e: e.get("far"), True, True),
    # the same failures counted over every held-out output: a share among failed outputs rises
    # when late failures disappear even if early ones stay as they were
    "early_rate": (lambda e: e.get("early_rate"), True, True),
    "failed_rate": (lambda e: e.get("failed_rate"), True, True),
    "pass_at_k": (lambda e: _pass_at_max(e), True, False),
    "consistency": (lambda e: (e.get("consistency") or {}).get("p"), True, False),
    "corruption_drop": (lambda e: e.get("corruption_drop"), True, False),
    "key_step_coverage": (lambda e: e.get("key_step_coverage"), True, False),
    "tag_accuracy": (lambda e: (e.get("tag_accuracy") or {}).get("p"), True, False),
    "format": (lambda e: (e.get("format") or {}).get("p"), True, False),
}
CLAIMS = {"accuracy": "accuracy", "early_share": "early-failure share (FFP < 0.4 among outputs with a failed step)",
          "early_rate": "early failures per output (FFP < 0.4, over all outputs)",
          "failed_rate": "outputs with a failed step",
          "pass_at_k": "pass@k (k = all samples of a question)",
          "far": "failure accumulation rate", "consistency": "reasoning-answer consistency",
          "corruption_drop": "accuracy drop on corrupted images (reliance on the image)",
          "key_step_coverage": "key-step coverage", "tag_accuracy": "modality-tag accuracy"}


def _pass_at_max(e: dict) -> float | None:
    pk = e.get("pass_at_k") or {}
    return pk[max(pk, key=int)] if pk else None


def decoding_label(config: EffectsConfig, decoding: str) -> str:
    """How a number was decoded, in words (every table and sentence carries it)."""
    if decoding == "greedy":
        return "greedy"
    return f"sampled, {config.eval_samples} per question at temperature {config.temperature:g}"


def value(result: dict | None, metric: str, decoding: str = "sampled") -> Any:
    """``metric`` of one run's evaluation in ``decoding`` (None when absent)."""
    if not result or "eval" not in result:
        return None
    e = result["eval"].get(decoding)
    return METRICS[metric][0](e) if e else None


def arm_keys(config: EffectsConfig, arm: str, seeds: int) -> list[str]:
    """The run key of ``arm`` at each seed: ``warmup`` (the warm-up model each seed starts from),
    a control (``coin_flip``, ``trl``) or an RL recipe trained with the main judge."""
    if arm == "warmup":
        return [warmup_key(config, s) for s in range(seeds)]
    if arm in CONTROLS:
        return [control_key(s, arm) for s in range(seeds)]
    return [rl_key(s, arm, config.judge) for s in range(seeds)]


def paired_runs(results: dict, keys_a: list[str], keys_b: list[str], metric: str, decoding: str = "sampled") -> dict:
    """Paired over seeds: the runs ``keys_b`` minus ``keys_a`` (same seed order) on ``metric``."""
    va = [value(results.get(k), metric, decoding) for k in keys_a]
    vb = [value(results.get(k), metric, decoding) for k in keys_b]
    return {"metric": metric, "decoding": decoding, "a_values": va, "b_values": vb, **paired_over_seeds(va, vb)}


def paired(results: dict, seeds: int, a: tuple[str, str], b: tuple[str, str], metric: str,
           decoding: str = "sampled") -> dict:
    """Paired over seeds: ``b`` (recipe, judge) minus ``a`` on ``metric``, with per-seed values."""
    r = paired_runs(results, [rl_key(s, *a) for s in range(seeds)], [rl_key(s, *b) for s in range(seeds)], metric,
                    decoding)
    return {**r, "a": list(a), "b": list(b)}


def _p(v: Any, pct: bool = True) -> str:
    if v is None:
        return "n/a"
    return f"{100 * v:.1f}%" if pct else f"{v:.3f}"


def _d(v: Any, pct: bool = True) -> str:
    if v is None:
        return "n/a"
    return f"{100 * v:+.1f} pp" if pct else f"{v:+.3f}"


def _ci(r: dict, pct: bool = True) -> str:
    if r.get("ci_low") is None:
        return "n/a"
    return f"[{_d(r['ci_low'], pct)}, {_d(r['ci_high'], pct)}]"


def _pv(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def _plot_paired(path: Path, comps: list[dict], title: str) -> Path | None:
    """One panel per comparison: per-seed values of both runs joined by a line."""
    if not comps:
        return None
    from medrl.eval.plots import _plt, _save

    plt = _plt()

    fig, axes = plt.subplots(1, len(comps), figsize=(3.2 * len(comps), 3.2), squeeze=False)
    for ax, c in zip(axes[0], comps):
        for x, y in zip(c["a_values"], c["b_values"]):
            if x is not None and y is not None:
                ax.plot([0, 1], [x, y], "-o", color="0.5", alpha=0.7)
        ax.set_xticks([0, 1], [LABELS.get(c["a"][0], c["a"][0]), LABELS.get(c["b"][0], c["b"][0])], fontsize=8)
        ax.set_title(c["metric"], fontsize=9)
        ax.set_xlim(-0.4, 1.4)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def _plot_lines(path: Path, series: dict[str, list], title: str, ylabel: str) -> Path | None:
    series = {k: v for k, v in series.items() if v}
    if not series:
        return None
    from medrl.eval.plots import _plt, _save

    plt = _plt()

    fig, ax = plt.subplots(figsize=(6, 3.4))
    for name, pts in series.items():
        xs = [p[0] if p[0] is not None else i + 1 for i, p in enumerate(pts)]
        ax.plot(xs, [p[1] for p in pts], "-", label=name, lw=1.4)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_sweep(path: Path, rows: list[dict]) -> Path | None:
    rows = [r for r in rows if r["early"].get("diff") is not None]
    if not rows:
        return None
    from medrl.eval.plots import _plt, _save

    plt = _plt()

    fig, ax = plt.subplots(figsize=(6, 3.4))
    xs = list(range(len(rows)))
    for off, key, lab in ((-0.1, "early", "early failures per output (sampled)"), (0.1, "accuracy", "accuracy (sampled)")):
        ys = [r[key]["diff"] for r in rows]
        lo = [r[key]["diff"] - r[key]["ci_low"] if r[key].get("ci_low") is not None else 0 for r in rows]
        hi = [r[key]["ci_high"] - r[key]["diff"] if r[key].get("ci_high") is not None else 0 for r in rows]
        ax.errorbar([x + off for x in xs], ys, yerr=[lo, hi], fmt="o", capsize=3, label=f"MRPO - GRPO: {lab}")
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set_xticks(xs, [f"{r['judge']}\nkappa {_pv(r['kappa'])}" for r in rows], fontsize=7)
    ax.set_title("MRPO - GRPO by judge (95% CI over seeds)", fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _ends(points, k: int = 3) -> dict | None:
    """Mean of the first and last ``k`` logged values of a training series, and the mean overall."""
    vals = [p[1] for p in points or [] if p[1] is not None]
    if not vals:
        return None
    k = max(1, min(k, len(vals) // 2 or 1))
    return {"first": sum(vals[:k]) / k, "last": sum(vals[-k:]) / k, "mean": sum(vals) / len(vals), "n": len(vals)}


#: the arms of the main comparison, in the order the report shows them
ARMS = ("warmup", "coin_flip", BASELINE, "trl", METHOD)
#: (arm a, arm b, why): the comparisons that say whether RL learned at this budget
CONTROL_PAIRS = (("warmup", BASELINE, "Does GRPO learn?"), ("coin_flip", BASELINE, "Is it more than the noise floor?"),
                 ("warmup", "coin_flip", "What does drift alone do?"), ("warmup", "trl", "Does plain TRL learn?"),
                 ("warmup", METHOD, "Does MRPO learn?"))
CONTROL_METRICS = (("accuracy", "sampled"), ("early_rate", "sampled"), ("accuracy", "greedy"))
MAIN_METRICS = (("early_rate", "sampled"), ("early_share", "sampled"), ("accuracy", "sampled"),
                ("failed_rate", "sampled"), ("pass_at_k", "sampled"), ("far", "sampled"), ("accuracy", "greedy"),
                ("early_rate", "greedy"), ("early_share", "greedy"))


def read_results(config: EffectsConfig, out: str | Path) -> dict:
    """Every finished run of ``config`` in the folder ``out`` (``runs/*.json``), by job key."""
    results = {}
    for j in plan(config):
        f = Path(out) / "runs" / j.file
        if f.is_file():
            results[j.key] = json.loads(f.read_text())
    return results


def _arms(config: EffectsConfig) -> list[str]:
    return [a for a in ARMS if a not in CONTROLS or a in config.controls]


def _curves(config: EffectsConfig, results: dict, arms: list[str]) -> dict:
    """Per arm: ``{metric: {step: [value of each seed]}}`` of the sampled learning curves; the
    warm-up model's sampled evaluation of the same subset is step 0 of every arm."""
    warm = (results.get(warmup_key(config, 0)) or {}).get("eval", {}).get("sampled_subset")
    out: dict[str, dict] = {}
    for arm in arms:
        if arm == "warmup":
            continue
        per: dict[str, dict] = {"accuracy": {}, "early_rate": {}}
        for s, key in enumerate(arm_keys(config, arm, config.seeds)):
            pts = list((results.get(key) or {}).get("curve") or [])
            w = (results.get(warmup_key(config, s)) or {}).get("eval", {}).get("sampled_subset") or warm
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


def analyse(config: EffectsConfig, results: dict) -> dict:
    """Every number of the report (also written as ``results.json``)."""
    c = config
    out: dict[str, Any] = {"config": c.to_dict()}
    warm = results.get(warmup_key(c, 0)) or {}
    out["warmup"] = {"warmup": warm.get("warmup"), "eval": warm.get("eval"), "sft_seconds": warm.get("sft_seconds")}
    out["env"] = dict(warm.get("env") or next((r.get("env") for r in results.values() if r.get("env")), None) or {})
    if out["env"]:  # the cores the workers were pinned to, over every job
        out["env"]["affinities"] = sorted({tuple(r["env"]["affinity"]) for r in results.values()
                                           if (r.get("env") or {}).get("affinity") is not None})
    out["decoding"] = {d: decoding_label(c, d) for d in DECODINGS}
    arms = _arms(c)
    out["arms"] = {a: {f"{m}@{d}": [value(results.get(k), m, d) for k in arm_keys(c, a, c.seeds)]
                       for m in ("accuracy", "early_rate", "early_share", "failed_rate", "pass_at_k", "far")
                       for d in DECODINGS} for a in arms}
    out["controls"] = [{"a": a, "b": b, "why": why, **{f"{m}@{d}": paired_runs(results, arm_keys(c, a, c.seeds),
                                                                             arm_keys(c, b, c.seeds), m, d)
                                                        for m, d in CONTROL_METRICS}}
                       for a, b, why in CONTROL_PAIRS if a in arms and b in arms]
    base, meth = (BASELINE, c.judge), (METHOD, c.judge)
    out["main"] = {f"{m}@{d}": paired(results, c.seeds, base, meth, m, d) for m, d in MAIN_METRICS}
    by_type: dict[str, dict] = {}
    for a in arms:
        for k in arm_keys(c, a, c.seeds):
            for d in DECODINGS:
                e = ((results.get(k) or {}).get("eval") or {}).get(d) or {}
                for q, v in (e.get("by_type") or {}).items():
                    slot = by_type.setdefault(q, {}).setdefault(a, {}).setdefault(d, {"accuracy": [], "early_rate": []})
                    slot["accuracy"].append(v.get("accuracy"))
                    slot["early_rate"].append(v.get("early_rate"))
            if a == "warmup":
                break  # one warm-up model: its values once
    out["by_type"] = by_type
    out["curves"] = _curves(c, results, arms)
    out["timing"] = _timing(results, max(c.workers, 1))
    dyn = {}
    for who in (BASELINE, METHOD):
        rows = []
        for s in range(c.seeds):
            ser = (results.get(rl_key(s, who, c.judge)) or {}).get("series") or {}
            rows.append({k: _ends(ser.get(k)) for k in ("monitor/truth_accuracy", "reward", "mrpo/reshaped_frac",
                                                        "ffp/early", "ffp/no_ffp", "kl")})
        dyn[who] = rows
    out["dynamics"] = dyn
    kap = (results.get("kappa") or {}).get("judges", {})
    out["kappa"] = kap
    sweep = []
    for j in [c.judge, *c.noise_sweep]:
        n = c.seeds if j == c.judge else c.sweep_seeds
        sweep.append({"judge": j, "kappa": (kap.get(j) or {}).get("step_validity_kappa"),
                      "answer_kappa": (kap.get(j) or {}).get("answer_kappa"),
                      "early": paired(results, n, (BASELINE, j), (METHOD, j), "early_rate"),
                      "accuracy": paired(results, n, (BASELINE, j), (METHOD, j), "accuracy")})
    out["sweep"] = sweep
    sigs: dict[str, Any] = {}
    n = c.signature_seeds
    for sig in c.signatures:
        recipe, basel = SIGNATURES[sig]
        a, b = (basel, c.judge), (recipe, c.judge)
        if sig == "armed":
            # ARMed Fig. 3: the raw semantic reward (BERTScore) against its adaptive version, both
            # logged by the ARMed run at every step; per seed their mean and variance over steps
            d = {"accuracy": paired(results, n, a, b, "accuracy")}
            raw_m, ada_m, raw_v, ada_v = [], [], [], []
            for s in range(n):
                ser = (results.get(rl_key(s, *b)) or {}).get("series", {})
                for key, ms, vs in (("armed/bertscore_raw_mean", raw_m, raw_v),
                                    ("armed/bertscore_adaptive_mean", ada_m, ada_v)):
                    vals = [p[1] for p in ser.get(key) or [] if p[1] is not None]
                    ms.append(sum(vals) / len(vals) if vals else None)
                    vs.append(sum((v - ms[-1]) ** 2 for v in vals) / (len(vals) - 1) if len(vals) > 1 else None)
            d["semantic_reward_mean"] = {"a_values": raw_m, "b_values": ada_m, **paired_over_seeds(raw_m, ada_m)}
            d["semantic_reward_variance"] = {"a_values": raw_v, "b_values": ada_v, **paired_over_seeds(raw_v, ada_v)}
            ser0 = (results.get(rl_key(0, *b)) or {}).get("series", {})
            d["curves"] = {"raw semantic (BERTScore), ARMed run": ser0.get("armed/bertscore_raw_mean"),
                           "adaptive semantic, ARMed run": ser0.get("armed/bertscore_adaptive_mean"),
                           "total reward, ARMed": ser0.get("reward"),
                           "total reward, raw-semantic ablation":
                               ((results.get(rl_key(0, *a)) or {}).get("series") or {}).get("reward")}
        elif sig == "capo":  # the corrupted images are evaluated greedily
            d = {"corruption_drop": paired(results, n, a, b, "corruption_drop", "greedy"),
                 **{m: paired(results, n, a, b, m) for m in ("consistency", "accuracy")}}
        elif sig == "stepgrpo":
            d = {m: paired(results, n, a, b, m) for m in ("key_step_coverage", "accuracy")}
        else:
            d = {m: paired(results, n, a, b, m) for m in ("tag_accuracy", "accuracy")}
        d["pair"] = [list(a), list(b)]
        sigs[sig] = d
    out["signatures"] = sigs
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
    # every other training run is watched too: those trained with the exact oracle are clean as
    # well (their reward pays only what is true), those with a noisy or reference judge in between

    def hacking_alerts(r):
        return [a for a in (r.get("monitor") or {}).get("alerts", []) if a.get("kind", "hacking") == "hacking"]

    honest = {k: hacking_alerts(r) for k, r in results.items() if r.get("kind") == "rl" and r.get("judge") == "oracle"}
    noisy = {k: hacking_alerts(r) for k, r in results.items() if r.get("kind") == "rl" and r.get("judge") != "oracle"}
    fp_all = fp + sum(bool(v) for v in honest.values())
    out["hacking"] = {"runs": hacks, "true_positives": tp, "false_positives": fp, "leaky_runs": pos,
                      "hacked_runs": len(hacked), "hacked_alerted": sum(r["alerted"] for r in hacked),
                      "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / pos if pos else None,
                      "recall_ci": proportion_ci(tp, pos) if pos else None,
                      "clean_training_runs": len(honest), "clean_training_alerted": sum(bool(v) for v in honest.values()),
                      "clean_alerts": {k: [f"{a.get('signal')}@{a.get('step')}" for a in v] for k, v in honest.items() if v},
                      "noisy_training_runs": len(noisy), "noisy_training_alerted": sum(bool(v) for v in noisy.values()),
                      "noisy_alerts": {k: [f"{a.get('signal')}@{a.get('step')}" for a in v] for k, v in noisy.items() if v},
                      "precision_all": tp / (tp + fp_all) if tp + fp_all else None}
    return out


def _lab(arm: str) -> str:
    return LABELS.get(arm, arm)


def _plot_arms(path: Path, a: dict, arms: list[str], decodings: tuple[str, ...]) -> Path | None:
    """Per-seed accuracy of every arm (one dot per seed, the mean as a bar), one panel per decoding."""
    if not arms:
        return None
    from medrl.eval.plots import _plt, _save

    plt = _plt()
    fig, axes = plt.subplots(1, len(decodings), figsize=(4.6 * len(decodings), 3.4), squeeze=False)
    for ax, d in zip(axes[0], decodings):
        for i, arm in enumerate(arms):
            vals = [v for v in a["arms"][arm][f"accuracy@{d}"] if v is not None]
            if not vals:
                continue
            ax.bar(i, 100 * sum(vals) / len(vals), color="0.85", width=0.6)
            ax.plot([i] * len(vals), [100 * v for v in vals], "o", color="C0", alpha=0.7, markersize=4)
        ax.set_xticks(range(len(arms)), [_lab(x) for x in arms], fontsize=7, rotation=20)
        ax.set_ylabel("held-out accuracy (%)")
        ax.set_title(f"accuracy, {a['decoding'][d]}", fontsize=9)
    return _save(fig, path)


def _mean(vals) -> float | None:
    v = [x for x in vals or [] if x is not None]
    return sum(v) / len(v) if v else None


def _env_rows(env: dict | None) -> list[list[str]]:
    if not env:
        return []
    return [["CPU", f"{env.get('cpu')} ({env.get('cpu_count')} logical cores)"],
            ["GPU", str(env.get("cuda") or "none")],
            ["torch / transformers / TRL", f"{env.get('torch')} / {env.get('transformers')} / {env.get('trl')}"],
            ["threads per worker", f"torch {env.get('torch_threads')} (inter-op {env.get('torch_interop_threads')}), "
                                   f"OMP_NUM_THREADS={env.get('omp_num_threads')}, MKL_NUM_THREADS={env.get('mkl_num_threads')}"],
            ["cores the workers were pinned to", ", ".join("{" + ", ".join(map(str, a)) + "}"
                                                           for a in env.get("affinities") or [env.get("affinity")] if a)
             or "not pinned"]]


def build_report(config: EffectsConfig, results: dict, out: str | Path, *, seconds: float | None = None,
                 command: str | None = None) -> tuple[Path, Path, dict]:
    """Write the report into ``out``; returns (markdown, html, numbers)."""
    out = Path(out)
    figs = out / "figures"
    a = analyse(config, results)
    c = config
    S, G = a["decoding"]["sampled"], a["decoding"]["greedy"]
    arms = _arms(c)
    rep = Report("medrl effects: what each method changes where the truth is known")
    rep.paragraph(f"Profile {c.profile}: {c.seeds} seed(s) of each arm ({', '.join(_lab(x) for x in arms)}); task "
                  f"phantom ({', '.join(c.question_types)} questions, {c.image_size} px, {c.n_train} train / {c.n_test} "
                  f"held-out records); policy {c.model}"
                  + (f" (tiny Qwen2.5-VL, hidden {c.hidden_size}, {c.num_layers} layers)" if c.model == "tiny" else "")
                  + f"; warm-up SFT {c.sft_steps} steps x {c.sft_batch}; RL {c.rl_steps} steps x {c.rl_prompts} "
                  f"prompts x {c.num_generations} rollouts (<= {c.max_completion_length} tokens, lr {c.rl_lr:g}, "
                  f"beta {c.beta:g}, temperature {c.temperature:g}); training judge {c.judge}. Every output is scored "
                  f"by the exact oracle. Two decodings, named in every table and sentence: **sampled** ({c.eval_samples} outputs per "
                  f"question at the training temperature {c.temperature:g}, seed {c.eval_seed}; the primary measure, since RL trains on samples) and **greedy**.")
    if command:
        rep.code(command)
    runs = read_invocations(out)
    if runs:
        rep.paragraph("Wall time: " + "; ".join(
            f"{r['seconds'] / 60:.1f} min from {r.get('started')}"
            + (f" (load average {r['load_average'][0]:g} at the end)" if r.get("load_average") else "") for r in runs)
            + (" (a resumed run counts only what ran in each invocation)." if len(runs) > 1 else "."))
    elif seconds is not None:
        rep.paragraph(f"Wall time of this invocation: {seconds / 60:.1f} min (resumed runs count only what ran now).")
    env_rows = _env_rows(a.get("env"))
    if env_rows:
        rep.table(["machine and build", ""], env_rows,
                  caption="CPU runs repeat exactly on the same CPU type, library build and thread settings; another "
                          "CPU type gives other numbers (docs/effects.md)")
    # warm-up
    w = a["warmup"]
    rep.heading("Warm-up model")
    ws, we = w.get("warmup") or {}, w.get("eval") or {}
    if ws:
        rep.paragraph(f"Warm-up traces: {ws.get('early_errors')} of {ws.get('n')} "
                      f"({_p(ws.get('early_error_share'))}) open with a wrong first step that carries into a wrong "
                      f"answer (stated share {_p(c.early_error_share)}); by field {ws.get('by_field')}.")
    eg, es = we.get("greedy") or {}, we.get("sampled") or {}
    if eg:
        def acc_cell(e, what):
            x = e.get("accuracy") or {}
            return f"{_p(x.get('p'))} [{_p(x.get('low'))}, {_p(x.get('high'))}] ({what})" if x else "n/a"

        types = sorted(set(eg.get("by_type") or {}) | set(es.get("by_type") or {}))
        rep.table(["metric (warm-up model, held-out phantoms)", "sampled", "greedy"], [
            ["well-formed <think>/<answer>", _p((es.get("format") or {}).get("p")), _p((eg.get("format") or {}).get("p"))],
            ["accuracy [95% CI]", acc_cell(es, "t over questions"), acc_cell(eg, "Wilson")],
            [f"pass@{c.eval_samples}", _p(_pass_at_max(es)), "-"],
            ["early failures per output", _p(es.get("early_rate")), _p(eg.get("early_rate"))],
            ["outputs with a failed step", _p(es.get("failed_rate")), _p(eg.get("failed_rate"))],
            ["early / mid / late FFP share", *[f"{_p(e.get('early_share'))} / {_p(e.get('mid_share'))} / "
                                               f"{_p(e.get('late_share'))}" for e in (es, eg)]],
            *[[f"accuracy: {q}", _p(((es.get("by_type") or {}).get(q) or {}).get("accuracy")),
               _p(((eg.get("by_type") or {}).get(q) or {}).get("accuracy"))] for q in types],
        ], caption=f"{S} ({es.get('n')} outputs); greedy: one output per question ({eg.get('n')})")
        if es.get("n"):
            rep.paragraph(f"The warm-up model is one model evaluated once per decoding: its sampled accuracy is one "
                          f"draw of {es.get('n')} outputs, whose sampling error (standard deviation at most "
                          f"{100 * (0.25 / es['n']) ** 0.5:.1f} pp) is not in the seeds' spread when an arm is "
                          "compared with it.")
    # controls: does RL learn at this budget?
    rep.heading("Does RL learn at this budget? The arms and their controls")
    rep.paragraph("Arms: the warm-up model every run starts from; GRPO and MRPO (medrl's trainer, their recipes' "
                  "rewards); the coin-flip control (GRPO's recipe and budget with a fair coin as its only reward: what "
                  "the optimizer's drift alone does, the noise floor); plain TRL (trl.GRPOTrainer with GRPO's config and "
                  "the oracle's answer verdict as its only reward: the trainer control). An arm learns when it beats "
                  "both the warm-up model and the coin-flip control.")
    rows = []
    for arm in arms:
        v = a["arms"][arm]
        rows.append([_lab(arm), _p(_mean(v["accuracy@sampled"])), _p(_mean(v["pass_at_k@sampled"])),
                     _p(_mean(v["early_rate@sampled"])), _p(_mean(v["accuracy@greedy"])),
                     _p(_mean(v["early_rate@greedy"]))])
    rep.table(["arm", "accuracy (sampled)", f"pass@{c.eval_samples} (sampled)", "early failures per output (sampled)",
               "accuracy (greedy)", "early failures per output (greedy)"], rows,
              caption=f"Mean over {c.seeds} seed(s); {S}")
    rows = []
    for s in range(c.seeds):
        rows.append([s] + [_p(a["arms"][arm]["accuracy@sampled"][s]) + " / " + _p(a["arms"][arm]["accuracy@greedy"][s])
                           for arm in arms])
    rep.table(["seed", *[_lab(x) for x in arms]], rows, caption="Per seed: accuracy sampled / greedy")
    rows = []
    for comp in a["controls"]:
        for m, d in CONTROL_METRICS:
            r = comp[f"{m}@{d}"]
            rows.append([f"{_lab(comp['b'])} - {_lab(comp['a'])}", f"{CLAIMS[m]} ({d})", _d(r.get("diff")), _ci(r),
                         _d(r.get("mde")).lstrip("+"), _pv(r.get("t_p")), _pv(r.get("wilcoxon_p"))])
    rep.table(["comparison", "metric (decoding)", "mean difference", "95% CI (t)", "detectable at 80% power",
               "paired t p", "Wilcoxon p"], rows,
              caption="Paired over seeds; 'detectable at 80% power' is the smallest true difference these seeds would "
                      "show with the paired t-test at alpha 0.05, from the per-seed spread (statsmodels' TTestPower)")
    for i, comp in enumerate(a["controls"]):
        # every metric for the two comparisons that decide whether GRPO learns, sampled accuracy for the rest
        for m, d in (CONTROL_METRICS if i < 2 else CONTROL_METRICS[:1]):
            rep.paragraph(claim_sentence(f"{comp['why']} {_lab(comp['b'])} vs {_lab(comp['a'])}, "
                                         f"{CLAIMS[m]} ({a['decoding'][d]})", comp[f"{m}@{d}"], a=_lab(comp["a"]),
                                         b=_lab(comp["b"]), lower_is_better=METRICS[m][2]))
    f = _plot_arms(figs / "effects_arms.png", a, arms, DECODINGS)
    if f:
        rep.figure(f, "Held-out accuracy of every arm, per seed (dots) and mean (bar), sampled and greedy")
    # learning curves
    cur = a["curves"]
    if any(v["accuracy"] for v in cur.values()):
        from medrl.eval.plots import band_curves

        rep.heading("Learning curves")
        n_sub = min(c.curve_records, c.n_test)
        rep.paragraph(f"Held-out accuracy and early failures per output ({S}) on the first {n_sub} held-out records, "
                      f"every {c.curve_every} steps of each run; step 0 is the warm-up model, the last step the run's "
                      f"final evaluation of those records. Lines: mean over seeds; bands: 95% t-interval of the mean.")
        panels = {f"accuracy ({S})": {_lab(k): v["accuracy"] for k, v in cur.items()},
                  f"early failures per output ({S})": {_lab(k): v["early_rate"] for k, v in cur.items()}}
        f = band_curves(panels, figs / "effects_learning_curves.png", title="Learning curves over seeds")
        rep.figure(f, f"Learning curves ({S}), mean over seeds with 95% bands")
        steps = sorted({st for v in cur.values() for st in v["accuracy"]})
        rows = [[_lab(k)] + [_p(_mean(v["accuracy"].get(st))) + " / " + _p(_mean(v["early_rate"].get(st)))
                             for st in steps] for k, v in cur.items()]
        rep.table(["arm", *[f"step {st}" for st in steps]], rows,
                  caption=f"Mean over seeds: accuracy / early failures per output ({S}, first {n_sub} records)")
    # main claim
    rep.heading("MRPO vs GRPO (MRPO Sec. 5.3): early failures and accuracy")
    m = a["main"]
    cols = [("early_rate@sampled", "early failures per output (sampled)"),
            ("early_share@sampled", "early-FFP share (sampled)"), ("accuracy@sampled", "accuracy (sampled)"),
            ("accuracy@greedy", "accuracy (greedy)"), ("early_rate@greedy", "early failures per output (greedy)")]
    rows = [[s] + [_p(m[k]["a_values"][s]) + " -> " + _p(m[k]["b_values"][s]) for k, _ in cols]
            for s in range(c.seeds)]
    rep.table(["seed", *[f"{t} GRPO -> MRPO" for _, t in cols]], rows,
              caption=f"Per seed (same warm-up model, seed, data order and budget); {S}. The early-FFP share "
                      "counts among outputs with a failed step; early failures per output count over all outputs")
    rep.table(["metric (decoding)", "GRPO mean", "MRPO mean", "MRPO - GRPO", "95% CI (t)", "detectable at 80% power",
               "paired t p", "Wilcoxon p"],
              [[f"{CLAIMS[r['metric']]} ({r['decoding']})", _p(r.get("a_mean")), _p(r.get("b_mean")), _d(r.get("diff")),
                _ci(r), _d(r.get("mde")).lstrip("+"), _pv(r.get("t_p")), _pv(r.get("wilcoxon_p"))] for r in m.values()])
    for r in m.values():
        rep.paragraph(claim_sentence(f"MRPO vs GRPO, {CLAIMS[r['metric']]} ({a['decoding'][r['decoding']]})", r,
                                     a="GRPO", b="MRPO", lower_is_better=METRICS[r["metric"]][2]))
    f = _plot_paired(figs / "effects_mrpo_vs_grpo.png",
                     [m["early_rate@sampled"], m["accuracy@sampled"], m["accuracy@greedy"]], "GRPO vs MRPO per seed")
    if f:
        rep.figure(f, "Per seed, GRPO -> MRPO: early failures per output and accuracy (sampled), accuracy (greedy)")
    rows = []
    for who in (BASELINE, METHOD):
        for s_, d in enumerate(a["dynamics"][who]):
            def e(k, pct=True):
                v = d.get(k)
                return "n/a" if not v else f"{_p(v['first'], pct)} -> {_p(v['last'], pct)}"
            rows.append([LABELS[who], s_, e("monitor/truth_accuracy"), e("reward", False), e("ffp/early"),
                         e("mrpo/reshaped_frac"), e("kl", False)])
    rep.table(["method", "seed", "rollout accuracy (oracle)", "training reward", "early-FFP share of rollouts",
               "MRPO: share of rollouts reshaped", "KL"], rows,
              caption="Training dynamics (the training rollouts, sampled at the training temperature): mean of the "
                      "first 3 -> last 3 steps. 'reshaped' is the share of rollouts whose token advantages MRPO's "
                      "Eq. 7 changed (its credit assignment at work)")
    # per question type
    if a["by_type"]:
        rows = []
        for q, per in a["by_type"].items():
            for arm in arms:
                v = per.get(arm)
                if not v:
                    continue
                rows.append([q, _lab(arm), _p(_mean(v.get("sampled", {}).get("accuracy"))),
                             _p(_mean(v.get("sampled", {}).get("early_rate"))),
                             _p(_mean(v.get("greedy", {}).get("accuracy"))),
                             _p(_mean(v.get("greedy", {}).get("early_rate")))])
        rep.heading("By question type")
        rep.table(["question type", "arm", "accuracy (sampled)", "early failures per output (sampled)",
                   "accuracy (greedy)", "early failures per output (greedy)"], rows,
                  caption=f"Mean over seeds; {S}")
    # time per step
    t = a["timing"]
    if t["by_arm"]:
        rep.heading("Time per training step")

        def cell(v, m):
            x = v.get(m)
            return f"{x['mean']:.2f} ({x['min']:.2f} .. {x['max']:.2f})" if x else "n/a"

        rep.table(["run", "runs", "wall seconds per step, mean (range)", "CPU seconds per step, mean (range)"],
                  [[k, max((v.get(m) or {}).get("n") or 0 for m in v), cell(v, "seconds_per_step"),
                    cell(v, "cpu_seconds_per_step")] for k, v in t["by_arm"].items()],
                  caption="The training loop alone (no model loading, saving or learning-curve evaluation), measured in "
                          "each one-thread worker process. Machine load stretches the wall time; the CPU time is about "
                          "what a step takes on an idle core (results.json has every run's times)")
        if t.get("idle_estimate_seconds"):
            missing = t.get("jobs_without_cpu_time") or []
            rep.paragraph(f"From the jobs' CPU times, this run would take about {t['idle_estimate_seconds'] / 60:.0f} "
                          f"minutes on {t['workers']} idle cores (the first warm-up, then every other job spread over "
                          f"the {t['workers']} workers)"
                          + (f"; {', '.join(missing)} recorded no CPU time and count with their wall time"
                             if missing else "") + ".")
    if c.noise_sweep:  # the judge as a variable (the main judge alone is the MRPO vs GRPO section)
        rep.heading("Judge quality: the MRPO - GRPO difference by judge")
        rep.table(["judge", "step-validity kappa vs oracle", "answer kappa", "seeds",
                   "early failures per output (sampled): MRPO - GRPO [95% CI]", "accuracy (sampled): MRPO - GRPO [95% CI]"],
                  [[r["judge"], _pv(r["kappa"]), _pv(r["answer_kappa"]), r["early"]["n"],
                    f"{_d(r['early'].get('diff'))} {_ci(r['early'])}",
                    f"{_d(r['accuracy'].get('diff'))} {_ci(r['accuracy'])}"]
                   for r in a["sweep"]],
                  caption="kappa: Cohen's kappa against the exact oracle on warm-up-style traces of test records, "
                          f"measured as medrl judge-bench does (step validity = gold alignment or answer contribution); "
                          f"{S}")
        for r in a["sweep"]:
            rep.paragraph(claim_sentence(f"judge {r['judge']}: early failures per output ({S})", r["early"], a="GRPO",
                                         b="MRPO", lower_is_better=True))
        f = _plot_sweep(figs / "effects_noise_sweep.png", a["sweep"])
        if f:
            rep.figure(f, "MRPO - GRPO by training judge, with each judge's kappa")
    if a["signatures"]:
        rep.heading("Each paper's signature effect")
        for sig, d in a["signatures"].items():
            (ra, _), (rb, _) = d["pair"]
            la, lb = LABELS.get(ra, ra), LABELS.get(rb, rb)
            rows = []
            for k, v in d.items():
                if k in ("pair", "curves") or not isinstance(v, dict) or "diff" not in v:
                    continue
                pct = k not in ("reward_mean", "reward_variance", "semantic_reward_mean", "semantic_reward_variance")
                dec = v.get("decoding") or "over training steps"
                rows.append([f"{k} ({dec})", _p(v.get("a_mean"), pct), _p(v.get("b_mean"), pct), _d(v.get("diff"), pct), _ci(v, pct),
                             _pv(v.get("t_p")), _pv(v.get("wilcoxon_p")),
                             ", ".join(f"{_p(x, pct)}->{_p(y, pct)}"
                                       for x, y in zip(v.get("a_values", []), v.get("b_values", [])))])
            rep.table(["metric", la, lb, f"{lb} - {la}", "95% CI", "t p", "Wilcoxon p", "per seed"], rows,
                      caption=f"{sig}: {lb} vs {la}" + ("; semantic_reward_*: raw (left) vs adaptive (right) semantic "
                                                        "reward of the ARMed run, per seed over its training steps"
                                                        if sig == "armed" else ""))
            for k, v in d.items():
                if k in ("pair", "curves") or not isinstance(v, dict) or "diff" not in v:
                    continue
                lower = k in ("early_share", "early_rate", "far")
                claim = {"semantic_reward_mean": "semantic reward, mean over training steps",
                         "semantic_reward_variance": "semantic reward, variance over training steps"}.get(k, CLAIMS.get(k, k))
                names = ("raw", "adaptive") if k.startswith("semantic") else (la, lb)
                if v.get("decoding"):
                    claim += f" ({a['decoding'][v['decoding']]})"
                rep.paragraph(claim_sentence(f"{sig}, {claim}", v, a=names[0], b=names[1], lower_is_better=lower,
                                             percent=not k.startswith("semantic")))
            if d.get("curves"):
                f = _plot_lines(figs / f"effects_{sig}_reward.png", d["curves"],
                                f"{sig}: semantic reward over training (seed 0)", "mean reward")
                if f:
                    rep.figure(f, f"{sig}: reward over training, {lb} vs {la}")
    if c.hacks:
        h = a["hacking"]
        rep.heading("Reward hacking, measured while it happens")
        rows = []
        for name, v in h["runs"].items():
            for r in v["runs"]:
                rows.append([name, "leaky" if v["leaky"] else "clean", r["seed"], _p(r["mean_hack_rate"]),
                             _p(r["last_hack_rate"]), _p(r["accuracy"]),
                             ", ".join(f"{x.get('signal')}@{x.get('step')}" for x in r["alerts"]) or "none"])
        rep.table(["reward", "kind", "seed", "hack rate (mean over steps)", "hack rate (last step)",
                   "held-out accuracy (greedy)", "monitor alerts (signal@step)"], rows,
                  caption="hack rate = share of the training rollouts (sampled at the training temperature) the training "
                          "reward pays that the oracle calls wrong")
        rep.paragraph(f"Monitor on these runs: {h['true_positives']} of {h['leaky_runs']} leaky runs alerted (recall "
                      f"{_p(h['recall'])}), {h['false_positives']} clean run(s) alerted; precision {_p(h['precision'])}. "
                      f"Of the leaky runs whose reward did pay answers the oracle calls wrong (hack rate above 0), "
                      f"{h['hacked_alerted']} of {h['hacked_runs']} alerted.")
        if h.get("clean_training_runs"):
            where = "; ".join(f"{k}: {', '.join(v)}" for k, v in h["clean_alerts"].items())
            rep.paragraph(f"The monitor also watched every other training run. Of the {h['clean_training_runs']} trained "
                          f"with the exact oracle (clean rewards), {h['clean_training_alerted']} alerted"
                          + (f" ({where})" if where else "") + f"; counting them, precision is {_p(h['precision_all'])}. "
                          f"Runs trained with a noisy or the reference judge (neither clean nor built to leak): "
                          f"{h['noisy_training_alerted']} of {h['noisy_training_runs']} alerted"
                          + (" (" + "; ".join(f"{k}: {', '.join(v)}" for k, v in h["noisy_alerts"].items()) + ")"
                             if h["noisy_alerts"] else "") + ".")
        curves = {f"{n} (seed {r['seed']})": r["hack_rate"] for n, v in h["runs"].items() for r in v["runs"]}
        f = _plot_lines(figs / "effects_hack_rate.png", curves, "Hack rate per training step", "hack rate")
        if f:
            rep.figure(f, "Hack rate per step under each reward")
    md, ht = rep.write(out, "report")
    (out / "results.json").write_text(json.dumps(a, indent=1, default=str))
    return md, ht, a


__all__ = ["analyse", "arm_keys", "build_report", "decoding_label", "paired", "paired_runs", "read_results", "value"]
