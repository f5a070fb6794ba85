"""The effects report: the claims table, the controls, sampled and greedy results at every
evaluation temperature, learning curves, each signature task, paired results with a plain
sentence per claim, plots.

Writes ``report.md``, ``report.html`` (figures embedded) and ``results.json`` (every number the
report shows, :func:`medrl.effects.analysis.analyse`) into the run folder, figures into
``figures/effects_*.png``. Every claim is stated in words by
:func:`medrl.effects.stats.claim_sentence` (with the minimum detectable difference at 80% power),
which says "no significant difference" when the seeds do not show one, and every sentence and
table names the decoding it uses. :func:`claims_report` gathers the claims rows of several
folders (one per signature, the main comparison, the judge-noise row) into one table.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from medrl.effects.analysis import (CLAIMS, LOWER_IS_BETTER, METRICS, MRPO_CLAIM, _arms, analyse, arm_keys,
                                    decoding_label, decodings, label, paired, paired_runs, read_results,
                                    short_decoding, value)
from medrl.effects.config import SIGNATURES, EffectsConfig
from medrl.effects.runner import BASELINE, METHOD, read_invocations
from medrl.effects.stats import claim_sentence, mean_over_seeds
from medrl.eval.report import Report

_lab = label


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


def _mean(vals) -> float | None:
    v = [x for x in vals or [] if x is not None]
    return sum(v) / len(v) if v else None


def duration(seconds: float | None) -> str:
    """``42 s``, ``3.5 min``, ``1 h 12 min``: a duration in words."""
    if seconds is None:
        return "n/a"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{int(seconds // 3600)} h {round(seconds % 3600 / 60):.0f} min"


def _cores(n: int) -> str:
    return f"{n} idle core" + ("" if n == 1 else "s")


def _integer_steps(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _plot_paired(path: Path, comps: list[tuple[dict, str, str, str]], title: str) -> Path | None:
    """One panel per comparison (result, label a, label b, panel title): per-seed values of both
    runs joined by a line."""
    if not comps:
        return None
    from medrl.eval.plots import _plt, _save

    plt = _plt()
    fig, axes = plt.subplots(1, len(comps), figsize=(3.4 * len(comps), 3.6), squeeze=False)
    for ax, (c, la, lb, panel) in zip(axes[0], comps):
        for x, y in zip(c["a_values"], c["b_values"]):
            if x is not None and y is not None:
                ax.plot([0, 1], [100 * x, 100 * y], "-o", color="C0", alpha=0.7)
        ax.set_xticks([0, 1], [textwrap.fill(la, 20), textwrap.fill(lb, 20)], fontsize=7)  # long arm names
        ax.set_ylabel("%")
        ax.set_title(textwrap.fill(panel, 42), fontsize=8)
        ax.set_xlim(-0.4, 1.4)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def _plot_lines(path: Path, series: dict[str, list], title: str, ylabel: str) -> Path | None:
    series = {k: v for k, v in series.items() if v}
    from medrl.eval.plots import _plt, _save

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.4))
    if not series:  # an empty frame says why it is empty
        ax.text(0.5, 0.5, "no data logged", ha="center", va="center", transform=ax.transAxes, color="0.4")
    for name, pts in series.items():
        xs = [p[0] if p[0] is not None else i + 1 for i, p in enumerate(pts)]
        ax.plot(xs, [p[1] for p in pts], "-", label=name, lw=1.4)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    _integer_steps(ax)
    if series:
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
    for off, key, lab in ((-0.1, "early", "early failures per output (sampled)"),
                          (0.1, "accuracy", "accuracy (sampled)")):
        ys = [100 * r[key]["diff"] for r in rows]
        lo = [100 * (r[key]["diff"] - r[key]["ci_low"]) if r[key].get("ci_low") is not None else 0 for r in rows]
        hi = [100 * (r[key]["ci_high"] - r[key]["diff"]) if r[key].get("ci_high") is not None else 0 for r in rows]
        ax.errorbar([x + off for x in xs], ys, yerr=[lo, hi], fmt="o", capsize=3, label=f"MRPO - GRPO: {lab}")
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set_xticks(xs, [f"{r['judge']}\nkappa {_pv(r['kappa'])}" for r in rows], fontsize=7)
    ax.set_ylabel("pp")
    ax.set_title("MRPO - GRPO by judge (95% CI over seeds)", fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_arms(path: Path, table: dict, arms: list[str], decs: list[str], names: dict[str, str],
               heads: dict[str, str], metric: str = "accuracy") -> Path | None:
    """Per-seed ``metric`` of every arm (one dot per seed, the mean as a bar), one panel per decoding."""
    if not arms:
        return None
    from medrl.eval.plots import _plt, _save

    plt = _plt()
    fig, axes = plt.subplots(1, len(decs), figsize=(4.4 * len(decs), 3.4), squeeze=False)
    for ax, d in zip(axes[0], decs):
        for i, arm in enumerate(arms):
            vals = [v for v in table[arm].get(f"{metric}@{d}", []) if v is not None]
            if not vals:
                continue
            ax.bar(i, 100 * sum(vals) / len(vals), color="0.85", width=0.6)
            ax.plot([i] * len(vals), [100 * v for v in vals], "o", color="C0", alpha=0.7, markersize=4)
        ax.set_xticks(range(len(arms)), [names.get(x, x) for x in arms], fontsize=6, rotation=25, ha="right")
        ax.set_ylabel(f"{CLAIMS.get(metric, metric)} (%)", fontsize=7)
        ax.set_title(heads[d], fontsize=9)
    return _save(fig, path)


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


# ----------------------------------------------------------------------------- the claims table

CLAIMS_HEADER = ["paper", "claim", "task", "planted failure", "metric (decoding)", "difference over seeds [95% CI]",
                 "minimum detectable difference", "verdict", "paper's own gain (detectable by these seeds?)"]


def claims_table_rows(rows: list[dict]) -> list[list[str]]:
    """The claims table's cells, one row per claim."""
    out = []
    for r in rows:
        seeds = f"{r['n']} seed{'s' if r['n'] != 1 else ''}"
        gain = "n/a"
        if r.get("paper_gain") is not None:
            det = {True: "yes", False: "no", None: "n/a"}[r.get("could_detect_paper_gain")]
            gain = f"{_d(r['paper_gain'])}: {r.get('paper_gain_note')} ({det})"
        diff = f"{_d(r.get('diff'))} {_ci(r)}, {seeds}" if r.get("diff") is not None else f"n/a, {seeds}"
        metric = f"{r['metric_label']} ({r['decoding']})"
        if r.get("judge") and r["judge"] != "oracle":
            metric += f"; training judge {r['judge']}"
        out.append([r["paper"], r["claim"], r["task"], f"{r['failure']}: {r['planted']}", metric, diff,
                    _d(r.get("mde")).lstrip("+"), r["verdict"], gain])
    return out


def add_claims_table(rep: Report, rows: list[dict]) -> None:
    rep.heading("Each paper's claim and its verdict")
    rep.table(CLAIMS_HEADER, claims_table_rows(rows),
              caption="One row per claim: the method minus the paper's baseline, paired over seeds (each seed its own "
                      "records, warm-up model and sampling seed). Verdict: significant when the paired t-test and "
                      "the Wilcoxon test are both below 0.05; 'detectable' is the smallest true difference these "
                      "seeds would show with 80% power. The paper's own gain is on its own benchmark and metric")


def claims_report(folders: list[str | Path], out: str | Path) -> tuple[Path, Path, list[dict]]:
    """One claims table from several effects folders' ``results.json`` (their ``claims`` rows), in
    ``out/claims.md`` and ``out/claims.html``; returns (markdown, html, rows)."""
    rows = []
    sources = []
    for f in folders:
        res = Path(f) / "results.json"
        if not res.is_file():
            raise FileNotFoundError(f"{res}: no results.json (run medrl bench effects --report-only --out {f})")
        data = json.loads(res.read_text())
        for r in data.get("claims", []):
            rows.append({**r, "folder": str(f)})
        sources.append(f"{f} (profile {data.get('config', {}).get('profile')})")
    rep = Report("medrl effects: each paper's claim where its mechanism can act")
    rep.paragraph("Gathered from the effects folders " + "; ".join(sources) + ".")
    add_claims_table(rep, rows)
    md, ht = rep.write(out, "claims")
    (Path(out) / "claims.json").write_text(json.dumps(rows, indent=1, default=str))
    return md, ht, rows


# ----------------------------------------------------------------------------- sections


#: the metrics the warm-up table shows for the main task (a signature shows its own)
MAIN_WARMUP_METRICS = ("format", "accuracy", "early_rate", "failed_rate", "valid_wrong_rate", "attribute_accuracy",
                       "held_out_accuracy")


def _warmup_section(rep: Report, c: EffectsConfig, results: dict, keys: list[str], task: str, a: dict,
                    planted_text: str) -> None:
    w = a["warmup"]
    shares = ", ".join(f"{k} {_p(v)}" for k, v in w["planted"].items()) or "none"
    rep.paragraph(f"Warm-up traces ({w['n_models']} warm-up model{'s' if w['n_models'] != 1 else ''}, one per seed): "
                  f"{planted_text}. Realised shares of the traces, mean over seeds: {shares}.")
    decs = decodings(c, task)
    rows = []
    sig = SIGNATURES.get(task)
    shown = MAIN_WARMUP_METRICS if sig is None else tuple(dict.fromkeys(
        ("format", "accuracy", sig.metric, *sig.secondary, "early_rate")))
    for m in shown:
        if m == "corruption_drop":
            continue
        vals = [[value(results.get(k), m, d) for k in keys] for d in decs]
        if all(v is None for vs in vals for v in vs):
            continue
        cells = []
        for vs in vals:
            ms = mean_over_seeds(vs)
            cells.append(_p(ms["mean"]) + (f" [{_p(ms['ci_low'])}, {_p(ms['ci_high'])}]"
                                           if ms.get("ci_low") is not None else ""))
        rows.append([CLAIMS.get(m, m)] + cells)
    best = a.get("warmup_best_decoding")
    rep.table(["metric (warm-up models, held-out phantoms)", *[short_decoding(c, d, task) for d in decs]], rows,
              caption="Mean over seeds [95% t-interval over seeds]; each seed's warm-up model on its own held-out "
                      "records and sampling seed, so the interval holds the warm-up's sampling error"
                      + (f". Best sampled temperature (highest mean accuracy): {short_decoding(c, best, task)}"
                         if best else ""))


def _main_sections(rep: Report, c: EffectsConfig, results: dict, a: dict, figs: Path) -> None:
    S = decoding_label(c, "sampled")
    arms = _arms(c)
    decs = decodings(c)
    heads = {d: short_decoding(c, d) for d in decs}
    rep.heading("MRPO's task: the warm-up models")
    _warmup_section(rep, c, results, arm_keys(c, "warmup", c.seeds), "main", a,
                    f"{_p(c.early_error_share)} open with a wrong first step that carries into a wrong answer "
                    "(the failure cascade MRPO claims to cut)")
    rep.heading("Does RL learn at this budget? The arms and their controls")
    rep.paragraph("Arms: the warm-up model each seed starts from; GRPO and MRPO (medrl's trainer, their recipes' "
                  "rewards); the coin-flip control (GRPO's recipe and budget with a fair coin as its only reward: what "
                  "the optimizer's drift alone does, the noise floor); plain TRL (trl.GRPOTrainer with GRPO's config and "
                  "the oracle's answer verdict as its only reward: the trainer control). An arm learns when it beats "
                  "the warm-up model - at the same temperature and at the warm-up's best one - and the coin-flip "
                  "control.")
    rows = []
    for arm in arms:
        v = a["arms"][arm]
        rows.append([_lab(arm)] + [_p(_mean(v[f"accuracy@{d}"])) for d in decs]
                    + [_p(_mean(v["early_rate@sampled"])), _p(_mean(v["valid_wrong_rate@sampled"]))])
    rep.table(["arm", *[f"accuracy ({heads[d]})" for d in decs], f"early failures per output ({heads['sampled']})",
               f"valid steps, wrong answer ({heads['sampled']})"], rows,
              caption=f"Mean over {c.seeds} seed(s); sampled: {c.eval_samples} outputs per question")
    rows = [[s] + [" / ".join(_p(a["arms"][arm][f"accuracy@{d}"][s]) for d in decs) for arm in arms]
            for s in range(c.seeds)]
    rep.table(["seed", *[_lab(x) for x in arms]], rows,
              caption="Per seed: accuracy " + " / ".join(heads[d] for d in decs))
    rows = []
    for comp in a["controls"]:
        for key, r in comp.items():
            if not isinstance(r, dict) or "diff" not in r:
                continue
            m, d = key.split("@")
            dec = heads[d] + (f" vs warm-up at {short_decoding(c, r['decoding_a'])}" if r.get("decoding_a") else "")
            rows.append([f"{_lab(comp['b'])} - {_lab(comp['a'])}", f"{CLAIMS[m]} ({dec})", _d(r.get("diff")), _ci(r),
                         _d(r.get("mde")).lstrip("+"), _pv(r.get("t_p")), _pv(r.get("wilcoxon_p"))])
    rep.table(["comparison", "metric (decoding)", "mean difference", "95% CI (t)", "detectable at 80% power",
               "paired t p", "Wilcoxon p"], rows,
              caption="Paired over seeds; 'detectable at 80% power' is the smallest true difference these seeds would "
                      "show with the paired t-test at alpha 0.05, from the per-seed spread (statsmodels' TTestPower)")
    for comp in a["controls"]:
        r = comp.get("accuracy@sampled")
        if r:
            dec = S + (f", against the warm-up at {short_decoding(c, r['decoding_a'])}" if r.get("decoding_a") else "")
            rep.paragraph(claim_sentence(f"{comp['why']} {_lab(comp['b'])} vs {_lab(comp['a'])}, accuracy ({dec})", r,
                                         a=_lab(comp["a"]), b=_lab(comp["b"])))
    f = _plot_arms(figs / "effects_arms.png", a["arms"], arms, decs, {x: _lab(x) for x in arms}, heads)
    if f:
        rep.figure(f, "Held-out accuracy of every arm, per seed (dots) and mean (bar), at every decoding")
    cur = a["curves"]
    if any(v["accuracy"] for v in cur.values()):
        from medrl.eval.plots import band_curves

        rep.heading("Learning curves")
        n_sub = min(c.curve_records, c.n_test)
        rep.paragraph(f"Held-out accuracy and early failures per output ({S}) on the first {n_sub} held-out records "
                      f"of each seed, every {c.curve_every} steps of each run; step 0 is the seed's warm-up model, the "
                      "last step the run's final evaluation of those records. Lines: mean over seeds; bands: 95% "
                      "t-interval of the mean.")
        panels = {f"accuracy ({heads['sampled']})": {_lab(k): v["accuracy"] for k, v in cur.items()},
                  f"early failures per output ({heads['sampled']})": {_lab(k): v["early_rate"] for k, v in cur.items()}}
        f = band_curves(panels, figs / "effects_learning_curves.png", title="Learning curves over seeds")
        rep.figure(f, f"Learning curves ({S}), mean over seeds with 95% bands")
        steps = sorted({st for v in cur.values() for st in v["accuracy"]})
        rows = [[_lab(k)] + [_p(_mean(v["accuracy"].get(st))) + " / " + _p(_mean(v["early_rate"].get(st)))
                             for st in steps] for k, v in cur.items()]
        rep.table(["arm", *[f"step {st}" for st in steps]], rows,
                  caption=f"Mean over seeds: accuracy / early failures per output ({S}, first {n_sub} records)")
    rep.heading("MRPO vs GRPO (MRPO Sec. 5.3): early failures, where failures go, accuracy")
    m = a["main"]
    cols = [("early_rate@sampled", f"early failures per output ({heads['sampled']})"),
            ("early_share@sampled", f"early-FFP share ({heads['sampled']})"),
            ("valid_wrong_rate@sampled", f"valid steps, wrong answer ({heads['sampled']})"),
            ("accuracy@sampled", f"accuracy ({heads['sampled']})"), ("accuracy@greedy", "accuracy (greedy)")]
    rows = [[s] + [_p(m[k]["a_values"][s]) + " -> " + _p(m[k]["b_values"][s]) for k, _ in cols]
            for s in range(c.seeds)]
    rep.table(["seed", *[f"{t} GRPO -> MRPO" for _, t in cols]], rows,
              caption="Per seed (same warm-up model, records, seed, data order and budget). The early-FFP share "
                      "counts among outputs with a failed step; early failures per output and 'valid steps, wrong "
                      "answer' count over all outputs: a cut in early failures that reappears as wrong answers after "
                      "valid steps shows in the second")
    rep.table(["metric (decoding)", "GRPO mean", "MRPO mean", "MRPO - GRPO", "95% CI (t)", "detectable at 80% power",
               "paired t p", "Wilcoxon p"],
              [[f"{CLAIMS[r['metric']]} ({heads[r['decoding']]})", _p(r.get("a_mean")), _p(r.get("b_mean")),
                _d(r.get("diff")), _ci(r), _d(r.get("mde")).lstrip("+"), _pv(r.get("t_p")), _pv(r.get("wilcoxon_p"))]
               for r in m.values()])
    for r in m.values():
        rep.paragraph(claim_sentence(f"MRPO vs GRPO, {CLAIMS[r['metric']]} ({decoding_label(c, r['decoding'])})", r,
                                     a="GRPO", b="MRPO", lower_is_better=r["metric"] in LOWER_IS_BETTER))
    f = _plot_paired(figs / "effects_mrpo_vs_grpo.png",
                     [(m["early_rate@sampled"], "GRPO", "MRPO", f"early failures per output ({heads['sampled']})"),
                      (m["valid_wrong_rate@sampled"], "GRPO", "MRPO", f"valid steps, wrong answer ({heads['sampled']})"),
                      (m["accuracy@sampled"], "GRPO", "MRPO", f"accuracy ({heads['sampled']})"),
                      (m["accuracy@greedy"], "GRPO", "MRPO", "accuracy (greedy)")], "GRPO vs MRPO per seed")
    if f:
        rep.figure(f, "Per seed, GRPO -> MRPO: early failures per output, valid steps with a wrong answer and "
                      "accuracy (sampled), accuracy (greedy)")
    rows = []
    for who in (BASELINE, METHOD):
        for s_, d in enumerate(a["dynamics"][who]):
            def e(k, pct=True):
                v = d.get(k)
                return "n/a" if not v else f"{_p(v['first'], pct)} -> {_p(v['last'], pct)}"
            rows.append([_lab(who), s_, e("monitor/truth_accuracy"), e("reward", False), e("ffp/early"),
                         e("mrpo/reshaped_frac"), e("kl", False)])
    rep.table(["method", "seed", "rollout accuracy (oracle)", "training reward", "early-FFP share of rollouts",
               "MRPO: share of rollouts reshaped", "KL"], rows,
              caption="Training dynamics (the training rollouts, sampled at the training temperature): mean of the "
                      "first 3 -> last 3 steps. 'reshaped' is the share of rollouts whose token advantages MRPO's "
                      "Eq. 7 changed (its credit assignment at work)")
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
        rep.table(["question type", "arm", f"accuracy ({heads['sampled']})",
                   f"early failures per output ({heads['sampled']})", "accuracy (greedy)",
                   "early failures per output (greedy)"], rows, caption="Mean over seeds")


def _signature_section(rep: Report, c: EffectsConfig, results: dict, name: str, s: dict, figs: Path) -> None:
    sig = SIGNATURES[name]
    n = c.signature_seeds
    decs = decodings(c, name)
    heads = {d: short_decoding(c, d, name) for d in decs}
    rep.heading(f"{sig.paper.split(' (')[0]}'s signature: {sig.failure}")
    rep.paragraph(f"Claim: {sig.claim}. Task: {sig.task}. Arms: " + "; ".join(
        f"{a.label} (recipe {a.recipe})" for a in sig.arms) + f", trained at the paper's temperature "
        f"{sig.temperature if sig.temperature is not None else c.temperature:g}; the coin-flip control trains "
        f"the baseline's recipe with a fair coin as its only reward.")
    _warmup_section(rep, c, results, arm_keys(c, "warmup", n, name), name, s, sig.planted)
    arms = s["arms_order"]
    metrics = [m for m in dict.fromkeys(("accuracy", sig.metric, *sig.secondary)) if m != "corruption_drop"]
    rows = []
    for arm in arms:
        v = s["arms"][arm]
        rows.append([s["labels"][arm]] + [_p(_mean(v.get(f"{m}@{d}"))) for m in metrics for d in decs
                                          if d != "greedy" or m == "accuracy"])
    hdr = [f"{CLAIMS[m]} ({heads[d]})" for m in metrics for d in decs if d != "greedy" or m == "accuracy"]
    rep.table(["arm", *hdr], rows, caption=f"Mean over {n} seed(s)")
    rows = []
    for comp in s["controls"]:
        r = comp["result"]
        dec = heads["sampled"] + (f" vs warm-up at {heads.get(r['decoding_a'], r['decoding_a'])}"
                                  if r.get("decoding_a") else "")
        rows.append([f"{s['labels'].get(comp['b'], comp['b'])} - {_lab(comp['a'], name)}", f"accuracy ({dec})",
                     _d(r.get("diff")), _ci(r), _d(r.get("mde")).lstrip("+"), _pv(r.get("t_p")),
                     _pv(r.get("wilcoxon_p"))])
    rep.table(["comparison", "metric (decoding)", "mean difference", "95% CI (t)", "detectable at 80% power",
               "paired t p", "Wilcoxon p"], rows, caption="Controls: does the baseline learn on this task?")
    for comp in s["controls"]:
        rep.paragraph(claim_sentence(f"{comp['why']} {s['labels'].get(comp['b'], comp['b'])} vs "
                                     f"{_lab(comp['a'], name)}, accuracy ({decoding_label(c, 'sampled', name)})",
                                     comp["result"], a=_lab(comp["a"], name), b=s["labels"].get(comp["b"], comp["b"])))
    la, lb = sig.baseline.label, sig.method.label
    rows = []
    for key, r in s["method_vs_baseline"].items():
        m, d = key.split("@")
        rows.append([f"{CLAIMS[m]} ({heads[d]})", _p(r.get("a_mean")), _p(r.get("b_mean")), _d(r.get("diff")), _ci(r),
                     _d(r.get("mde")).lstrip("+"), _pv(r.get("t_p")), _pv(r.get("wilcoxon_p")),
                     ", ".join(f"{_p(x)}->{_p(y)}" for x, y in zip(r.get("a_values", []), r.get("b_values", [])))])
    rep.table(["metric (decoding)", la, lb, f"{lb} - {la}", "95% CI (t)", "detectable at 80% power", "paired t p",
               "Wilcoxon p", "per seed"], rows, caption=f"{lb} vs {la}, paired over {n} seed(s)")
    claim = s.get("claim")
    if claim:
        dec = "greedy" if sig.metric == "corruption_drop" else "sampled"
        rep.paragraph(claim_sentence(f"{sig.paper.split(' (')[0]}: {lb} vs {la}, {sig.metric_label} "
                                     f"({decoding_label(c, dec, name)})", claim, a=la, b=lb,
                                     lower_is_better=sig.metric in LOWER_IS_BETTER))
    for other, r in s.get("others", {}).items():
        rep.paragraph(claim_sentence(f"{lb} vs {_lab(other, name)}, {sig.metric_label} "
                                     f"({decoding_label(c, 'sampled', name)})", r, a=_lab(other, name), b=lb,
                                     lower_is_better=sig.metric in LOWER_IS_BETTER))
    std = s.get("within_group_reward_std") or {}
    if std:
        rep.paragraph("Within-group spread of the training reward (TRL's reward_std, mean over steps): " + "; ".join(
            f"{_lab(k, name)} {_p(r.get('b_mean'), False)} against {la} {_p(r.get('a_mean'), False)}"
            for k, r in std.items()) + ".")
    if s.get("semantic_reward"):
        sem, paper = s["semantic_reward"], s["semantic_paper"]
        rows = [[f"{metric} ({kind})", _p(v["mean"]["mean"], False), _p(v["var"]["mean"], False),
                 *(( _p(paper[f"{metric}_raw"]["mean"], False), _p(paper[f"{metric}_raw"]["var"], False))
                   if kind == "raw" and f"{metric}_raw" in paper else ("-", "-"))]
                for key, v in sem.items() for metric, kind in [key.split("_")]]
        rep.table(["semantic reward over the ARMed run's rollouts", "mean (over steps and seeds)",
                   "variance within a step", "paper: mean", "paper: variance"], rows,
                  caption="ARMed Fig. 3: the raw reward's mean and variance next to the paper's; the adaptive "
                          "reward rescales the same rollouts (Eq. 5-13)")
    if s.get("steps_to_reach"):
        st = s["steps_to_reach"]
        rep.paragraph(f"Steps to reach the seed's warm-up accuracy plus {100 * st['reach']:.0f} points on the "
                      f"learning curve ({heads['sampled']}, every {c.curve_every} steps; '-' when not within "
                      f"{c.rl_steps} steps): " + "; ".join(
                          f"{_lab(k, name)}: " + ", ".join("-" if x is None else str(x) for x in v)
                          for k, v in st["per_arm"].items()) + ".")
    cur = s.get("curves") or {}
    if any(v["accuracy"] for v in cur.values()):
        from medrl.eval.plots import band_curves

        f = band_curves({f"accuracy ({heads['sampled']})": {_lab(k, name): v["accuracy"] for k, v in cur.items()}},
                        figs / f"effects_{name}_curves.png", title=f"{name}: learning curves over seeds")
        rep.figure(f, f"{name}: held-out accuracy during training ({heads['sampled']}), mean over seeds with 95% bands")
    comps = [(s["method_vs_baseline"][f"{m}@sampled"], la, lb, f"{CLAIMS[m]} ({heads['sampled']})")
             for m in (sig.metric, *sig.secondary) if f"{m}@sampled" in s["method_vs_baseline"]][:4]
    f = _plot_paired(figs / f"effects_{name}_paired.png", comps, f"{name}: {la} vs {lb} per seed")
    if f:
        rep.figure(f, f"{name}: per seed, {la} -> {lb}")


def _sweep_section(rep: Report, c: EffectsConfig, a: dict, figs: Path) -> None:
    S = decoding_label(c, "sampled")
    rep.heading("Judge quality: the MRPO - GRPO difference by training judge")
    rep.table(["judge", "step-validity kappa vs oracle", "answer kappa", "seeds",
               "early-FFP share: MRPO - GRPO [95% CI]", "early failures per output: MRPO - GRPO [95% CI]",
               "accuracy: MRPO - GRPO [95% CI]"],
              [[r["judge"], _pv(r["kappa"]), _pv(r["answer_kappa"]), r["early"]["n"],
                f"{_d(r['early_share'].get('diff'))} {_ci(r['early_share'])}",
                f"{_d(r['early'].get('diff'))} {_ci(r['early'])}",
                f"{_d(r['accuracy'].get('diff'))} {_ci(r['accuracy'])}"] for r in a["sweep"]],
              caption="kappa: Cohen's kappa against the exact oracle on warm-up-style traces of test records, "
                      f"measured as medrl judge-bench does (step validity = gold alignment or answer contribution); {S}")
    for r in a["sweep"]:
        rep.paragraph(claim_sentence(f"judge {r['judge']}: early-failure share ({S})", r["early_share"], a="GRPO",
                                     b="MRPO", lower_is_better=True))
    f = _plot_sweep(figs / "effects_noise_sweep.png", a["sweep"])
    if f:
        rep.figure(f, "MRPO - GRPO by training judge, with each judge's kappa")


def _hacking_section(rep: Report, h: dict, figs: Path) -> None:
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


def _timing_section(rep: Report, t: dict) -> None:
    if not t["by_arm"]:
        return
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
        rep.paragraph(f"From the jobs' CPU times, this run would take about {duration(t['idle_estimate_seconds'])} "
                      f"on {_cores(t['workers'])} (the first warm-up, then every other job spread over the "
                      f"{t['workers']} worker{'s' if t['workers'] != 1 else ''})"
                      + (f"; {', '.join(missing)} recorded no CPU time and count with their wall time"
                         if missing else "") + ".")


def build_report(config: EffectsConfig, results: dict, out: str | Path, *, seconds: float | None = None,
                 command: str | None = None) -> tuple[Path, Path, dict]:
    """Write the report into ``out``; returns (markdown, html, numbers)."""
    out = Path(out)
    figs = out / "figures"
    a = analyse(config, results)
    c = config
    rep = Report("medrl effects: what each method changes where the truth is known")
    parts = []
    if c.main:
        parts.append(f"MRPO's task: {c.seeds} seed(s) of each arm ({', '.join(_lab(x) for x in _arms(c))}) on phantom "
                     f"{', '.join(c.question_types)} questions")
    if c.signatures:
        parts.append(f"signature tasks {', '.join(c.signatures)} ({c.signature_seeds} seed(s) each)")
    if c.noise_sweep:
        parts.append(f"judge-noise runs {', '.join(c.noise_sweep)} ({c.sweep_seeds} seed(s))")
    rep.paragraph(f"Profile {c.profile}: " + "; ".join(parts) + f". {c.image_size} px images, {c.n_train} train / "
                  f"{c.n_test} held-out records per seed; policy {c.model}"
                  + (f" (tiny Qwen2.5-VL, hidden {c.hidden_size}, {c.num_layers} layers)" if c.model == "tiny" else "")
                  + f"; warm-up SFT {c.sft_steps} steps x {c.sft_batch}, one warm-up model per seed; RL {c.rl_steps} "
                  f"steps x {c.rl_prompts} prompts x {c.num_generations} rollouts (<= {c.max_completion_length} tokens, "
                  f"lr {c.rl_lr:g}, beta {c.beta:g}); training judge {c.judge}. Every output is scored by the exact "
                  f"oracle. Decodings, named in every table and sentence: sampled ({c.eval_samples} outputs per question "
                  f"at the training temperature - the primary measure, since RL trains on samples - and at each of "
                  f"the temperatures {', '.join(f'{t:g}' for t in c.eval_temperatures)}; seed N samples with seed "
                  f"{c.eval_seed} + N) and greedy.")
    runs = read_invocations(out)
    command = command or next((r.get("command") for r in runs if r.get("command")), None)
    if command:
        rep.code(command)
    if runs:
        rep.paragraph("Wall time: " + "; ".join(
            f"{duration(r['seconds'])} from {r.get('started')}"
            + (f" (load average {r['load_average'][0]:g} at the end)" if r.get("load_average") else "") for r in runs)
            + (" (a resumed run counts only what ran in each invocation)." if len(runs) > 1 else "."))
    elif seconds is not None:
        rep.paragraph(f"Wall time of this invocation: {duration(seconds)} (resumed runs count only what ran now).")
    env_rows = _env_rows(a.get("env"))
    if env_rows:
        rep.table(["machine and build", ""], env_rows,
                  caption="CPU runs repeat exactly on the same CPU type, library build and thread settings; another "
                          "CPU type gives other numbers (docs/effects.md)")
    if a["claims"]:
        add_claims_table(rep, a["claims"])
    if c.main:
        _main_sections(rep, c, results, a, figs)
    if c.noise_sweep:
        _sweep_section(rep, c, a, figs)
    for name, s in a["signatures"].items():
        _signature_section(rep, c, results, name, s, figs)
    if c.hacks:
        _hacking_section(rep, a["hacking"], figs)
    _timing_section(rep, a["timing"])
    md, ht = rep.write(out, "report")
    (out / "results.json").write_text(json.dumps(a, indent=1, default=str))
    return md, ht, a


__all__ = ["CLAIMS", "METRICS", "MRPO_CLAIM", "analyse", "arm_keys", "build_report", "claims_report",
           "claims_table_rows", "decoding_label", "duration", "paired", "paired_runs", "read_results", "value"]
