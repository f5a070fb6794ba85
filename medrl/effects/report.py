"""The effects report: per-seed tables, paired results with a plain sentence per claim, plots.

Writes ``report.md``, ``report.html`` (figures embedded) and ``results.json`` (every number the
report shows) into the run folder, figures into ``figures/effects_*.png``. Every claim is
stated in words by :func:`medrl.effects.stats.claim_sentence`, which says "no significant
difference" when the seeds do not show one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from medrl.effects.config import SIGNATURES, EffectsConfig
from medrl.effects.runner import BASELINE, METHOD, rl_key
from medrl.effects.stats import claim_sentence, mean_over_seeds, paired_over_seeds, proportion_ci
from medrl.eval.report import Report

LABELS = {"grpo": "GRPO", "mrpo": "MRPO", "armed": "ARMed (adaptive)", "armed_ablation_raw": "ARMed (raw semantic)",
          "capo": "CAPO", "capo_grpo": "GRPO (CAPO's baseline)", "stepgrpo": "StepGRPO", "medix_r1": "MediX-R1"}

#: metric name -> (getter on a run's eval summary, is a share in [0, 1], lower is better)
METRICS: dict[str, tuple[Callable[[dict], Any], bool, bool]] = {
    "accuracy": (lambda e: (e.get("accuracy") or {}).get("p"), True, False),
    "early_share": (lambda e: e.get("early_share"), True, True),
    "far": (lambda e: e.get("far"), True, True),
    # the same failures counted over every held-out output: a share among failed outputs rises
    # when late failures disappear even if early ones stay as they were
    "early_rate": (lambda e: _per_output(e, "early"), True, True),
    "failed_rate": (lambda e: _per_output(e, None), True, True),
    "consistency": (lambda e: (e.get("consistency") or {}).get("p"), True, False),
    "corruption_drop": (lambda e: e.get("corruption_drop"), True, False),
    "key_step_coverage": (lambda e: e.get("key_step_coverage"), True, False),
    "tag_accuracy": (lambda e: (e.get("tag_accuracy") or {}).get("p"), True, False),
    "format": (lambda e: (e.get("format") or {}).get("p"), True, False),
}
CLAIMS = {"accuracy": "accuracy", "early_share": "early-failure share (FFP < 0.4 among outputs with a failed step)",
          "early_rate": "early failures per held-out output (FFP < 0.4, over all outputs)",
          "failed_rate": "held-out outputs with a failed step",
          "far": "failure accumulation rate", "consistency": "reasoning-answer consistency",
          "corruption_drop": "accuracy drop on corrupted images (reliance on the image)",
          "key_step_coverage": "key-step coverage", "tag_accuracy": "modality-tag accuracy"}


def _per_output(e: dict, stage: str | None) -> float | None:
    """Outputs whose first failed step falls in ``stage`` (None: any stage) over all outputs."""
    st, n = e.get("stages") or {}, e.get("n")
    if not n or not st:
        return None
    k = st.get("n_failed") if stage is None else (st.get("counts") or {}).get(stage)
    return None if k is None else k / n


def _get(results: dict, key: str, metric: str):
    r = results.get(key)
    if not r or "eval" not in r:
        return None
    return METRICS[metric][0](r["eval"])


def paired(results: dict, seeds: int, a: tuple[str, str], b: tuple[str, str], metric: str) -> dict:
    """Paired over seeds: ``b`` (recipe, judge) minus ``a`` on ``metric``, with per-seed values."""
    va = [_get(results, rl_key(s, *a), metric) for s in range(seeds)]
    vb = [_get(results, rl_key(s, *b), metric) for s in range(seeds)]
    return {"metric": metric, "a": list(a), "b": list(b), "a_values": va, "b_values": vb,
            **paired_over_seeds(va, vb)}


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
    for off, key, lab in ((-0.1, "early", "early-failure share"), (0.1, "accuracy", "accuracy")):
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


def analyse(config: EffectsConfig, results: dict) -> dict:
    """Every number of the report (also written as ``results.json``)."""
    c = config
    out: dict[str, Any] = {"config": c.to_dict()}
    warm = results.get("warmup") or results.get("s0/warmup") or {}
    out["warmup"] = {"warmup": warm.get("warmup"), "eval": warm.get("eval"), "sft_seconds": warm.get("sft_seconds")}
    base, meth = (BASELINE, c.judge), (METHOD, c.judge)
    out["main"] = {m: paired(results, c.seeds, base, meth, m)
                   for m in ("early_share", "early_rate", "failed_rate", "accuracy", "far")}
    dyn = {}
    for who in (BASELINE, METHOD):
        rows = []
        for s in range(c.seeds):
            ser = (results.get(rl_key(s, who, c.judge)) or {}).get("series") or {}
            rows.append({k: _ends(ser.get(k)) for k in ("monitor/truth_accuracy", "reward", "mrpo/reshaped_frac",
                                                        "ffp/early", "ffp/no_ffp", "kl")})
        dyn[who] = rows
    out["dynamics"] = dyn
    out["training_curves"] = {f"{LABELS[who]} s{s}": ((results.get(rl_key(s, who, c.judge)) or {}).get("series") or {})
                              .get("monitor/truth_accuracy") for who in (BASELINE, METHOD) for s in range(c.seeds)}
    kap = (results.get("kappa") or {}).get("judges", {})
    out["kappa"] = kap
    sweep = []
    for j in [c.judge, *c.noise_sweep]:
        n = c.seeds if j == c.judge else c.sweep_seeds
        sweep.append({"judge": j, "kappa": (kap.get(j) or {}).get("step_validity_kappa"),
                      "answer_kappa": (kap.get(j) or {}).get("answer_kappa"),
                      "early": paired(results, n, (BASELINE, j), (METHOD, j), "early_share"),
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
        elif sig == "capo":
            d = {m: paired(results, n, a, b, m) for m in ("corruption_drop", "consistency", "accuracy")}
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
                        "alerted": bool(alerts), "accuracy": _get(results, f"s{s}/hack-{h}", "accuracy")})
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


def build_report(config: EffectsConfig, results: dict, out: str | Path, *, seconds: float | None = None,
                 command: str | None = None) -> tuple[Path, Path, dict]:
    """Write the report into ``out``; returns (markdown, html, numbers)."""
    out = Path(out)
    figs = out / "figures"
    a = analyse(config, results)
    c = config
    rep = Report("medrl effects: what each method changes where the truth is known")
    rep.paragraph(f"Profile {c.profile}: {c.seeds} seed(s) for GRPO vs MRPO; task phantom "
                  f"({', '.join(c.question_types)} questions, {c.image_size} px, {c.n_train} train / {c.n_test} "
                  f"held-out records); policy {c.model}"
                  + (f" (tiny Qwen2.5-VL, hidden {c.hidden_size}, {c.num_layers} layers)" if c.model == "tiny" else "")
                  + f"; warm-up SFT {c.sft_steps} steps x {c.sft_batch}; RL {c.rl_steps} steps x {c.rl_prompts} "
                  f"prompts x {c.num_generations} rollouts (<= {c.max_completion_length} tokens, lr {c.rl_lr:g}, "
                  f"beta {c.beta:g}); training judge {c.judge}; evaluation greedy, scored by the exact oracle.")
    if command:
        rep.code(command)
    if seconds is not None:
        rep.paragraph(f"Wall time of this invocation: {seconds / 60:.1f} min (resumed runs count only what ran now).")
    # warm-up
    w = a["warmup"]
    rep.heading("Warm-up model")
    ws, we = w.get("warmup") or {}, w.get("eval") or {}
    if ws:
        rep.paragraph(f"Warm-up traces: {ws.get('early_errors')} of {ws.get('n')} "
                      f"({_p(ws.get('early_error_share'))}) open with a wrong first step that carries into a wrong "
                      f"answer (stated share {_p(c.early_error_share)}); by field {ws.get('by_field')}.")
    if we:
        acc = we.get("accuracy") or {}
        rep.table(["metric", "warm-up model on held-out phantoms"], [
            ["well-formed <think>/<answer>", _p((we.get("format") or {}).get("p"))],
            ["accuracy (Wilson 95%)",
             f"{_p(acc.get('p'))} [{_p(acc.get('low'))}, {_p(acc.get('high'))}] (n={acc.get('n')})"],
            ["early / mid / late FFP share",
             f"{_p(we.get('early_share'))} / {_p(we.get('mid_share'))} / {_p(we.get('late_share'))}"],
            ["outputs with a failed step", str((we.get("stages") or {}).get("n_failed"))],
            *[[f"accuracy: {q}", f"{_p(v.get('p'))} (n={v.get('n')})"]
              for q, v in (we.get("accuracy_by_type") or {}).items()],
        ])
    # main claim
    rep.heading("MRPO vs GRPO (MRPO Sec. 5.3): early failures and accuracy")
    rows = []
    m = a["main"]
    for s in range(c.seeds):
        rows.append([s] + [_p(m[k]["a_values"][s], True) + " -> " + _p(m[k]["b_values"][s], True)
                           for k in ("early_share", "early_rate", "failed_rate", "accuracy", "far")])
    rep.table(["seed", "early-FFP share GRPO -> MRPO", "early failures per output", "outputs with a failed step",
               "accuracy GRPO -> MRPO", "FAR GRPO -> MRPO"], rows,
              caption="Per seed (same warm-up model, seed, data order and budget). The early-FFP share counts "
                      "among outputs with a failed step; the next two columns count over all held-out outputs")
    rep.table(["metric", "GRPO mean", "MRPO mean", "MRPO - GRPO", "95% CI (t)", "paired t p", "Wilcoxon p"],
              [[k, _p(m[k].get("a_mean")), _p(m[k].get("b_mean")), _d(m[k].get("diff")), _ci(m[k]),
                _pv(m[k].get("t_p")), _pv(m[k].get("wilcoxon_p"))] for k in m])
    for k, lower in (("early_share", True), ("early_rate", True), ("failed_rate", True), ("accuracy", False),
                     ("far", True)):
        rep.paragraph(claim_sentence(f"MRPO vs GRPO, {CLAIMS[k]}", m[k], a="GRPO", b="MRPO", lower_is_better=lower))
    f = _plot_paired(figs / "effects_mrpo_vs_grpo.png", [m["early_share"], m["accuracy"]], "GRPO vs MRPO per seed")
    if f:
        rep.figure(f, "Per-seed early-failure share and accuracy, GRPO -> MRPO")
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
              caption="Training dynamics: mean of the first 3 -> last 3 steps. Rollout accuracy is the oracle's verdict "
                      "on the training rollouts; 'reshaped' is the share of rollouts whose token advantages MRPO's "
                      "Eq. 7 changed (its credit assignment at work)")
    f = _plot_lines(figs / "effects_training_accuracy.png", a["training_curves"], "Oracle accuracy of training rollouts",
                    "accuracy")
    if f:
        rep.figure(f, "Oracle accuracy of the training rollouts per step, GRPO and MRPO, every seed")
    # sweep
    rep.heading("Judge quality: the MRPO - GRPO difference by judge")
    rep.table(["judge", "step-validity kappa vs oracle", "answer kappa", "seeds", "early share: MRPO - GRPO [95% CI]",
               "accuracy: MRPO - GRPO [95% CI]"],
              [[r["judge"], _pv(r["kappa"]), _pv(r["answer_kappa"]), r["early"]["n"],
                f"{_d(r['early'].get('diff'))} {_ci(r['early'])}",
                f"{_d(r['accuracy'].get('diff'))} {_ci(r['accuracy'])}"]
               for r in a["sweep"]],
              caption="kappa: Cohen's kappa against the exact oracle on warm-up-style traces of test records, "
                      "measured as medrl judge-bench does (step validity = gold alignment or answer contribution)")
    for r in a["sweep"]:
        rep.paragraph(claim_sentence(f"judge {r['judge']}: early-failure share", r["early"], a="GRPO", b="MRPO",
                                     lower_is_better=True))
    f = _plot_sweep(figs / "effects_noise_sweep.png", a["sweep"])
    if f:
        rep.figure(f, "MRPO - GRPO by training judge, with each judge's kappa")
    # signatures
    rep.heading("Each paper's signature effect")
    for sig, d in a["signatures"].items():
        (ra, _), (rb, _) = d["pair"]
        la, lb = LABELS.get(ra, ra), LABELS.get(rb, rb)
        rows = []
        for k, v in d.items():
            if k in ("pair", "curves") or not isinstance(v, dict) or "diff" not in v:
                continue
            pct = k not in ("reward_mean", "reward_variance", "semantic_reward_mean", "semantic_reward_variance")
            rows.append([k, _p(v.get("a_mean"), pct), _p(v.get("b_mean"), pct), _d(v.get("diff"), pct), _ci(v, pct),
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
            lower = k in ("early_share", "far")
            claim = {"semantic_reward_mean": "semantic reward, mean over training steps",
                     "semantic_reward_variance": "semantic reward, variance over training steps"}.get(k, CLAIMS.get(k, k))
            names = ("raw", "adaptive") if k.startswith("semantic") else (la, lb)
            rep.paragraph(claim_sentence(f"{sig}, {claim}", v, a=names[0], b=names[1], lower_is_better=lower,
                                         percent=not k.startswith("semantic")))
        if d.get("curves"):
            f = _plot_lines(figs / f"effects_{sig}_reward.png", d["curves"],
                            f"{sig}: semantic reward over training (seed 0)", "mean reward")
            if f:
                rep.figure(f, f"{sig}: reward over training, {lb} vs {la}")
    # hacking
    h = a["hacking"]
    rep.heading("Reward hacking, measured while it happens")
    rows = []
    for name, v in h["runs"].items():
        for r in v["runs"]:
            rows.append([name, "leaky" if v["leaky"] else "clean", r["seed"], _p(r["mean_hack_rate"]),
                         _p(r["last_hack_rate"]), _p(r["accuracy"]),
                         ", ".join(f"{x.get('signal')}@{x.get('step')}" for x in r["alerts"]) or "none"])
    rep.table(["reward", "kind", "seed", "hack rate (mean over steps)", "hack rate (last step)",
               "held-out accuracy", "monitor alerts (signal@step)"], rows,
              caption="hack rate = share of rollouts the training reward pays that the oracle calls wrong")
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


__all__ = ["analyse", "build_report", "paired"]
