"""``medrl analyze hacking RUN``: the reward-hacking monitor's signals and alerts as a report.

Reads what :mod:`medrl.train.monitor` writes into a run folder - ``monitor_summary.json`` (every
signal per step, the alerts) and ``hacking.jsonl`` (each alert with its example rollouts) - and,
when present, ``judge_cost.json`` (:mod:`medrl.judges.cost`). Writes ``report.md``,
``report.html`` (self-contained) and PNG plots: answer-guard refusals by reason, reward vs
correctness, lengths, text signals (repeated n-grams, restating steps, well-formed share,
zero-variance groups), with each alert's step marked; then every alert with its evidence and its
example rollouts as text. Without a summary (a run still training) the signals are read from
``metrics.jsonl``.

:func:`add_hacking_section` adds the same blocks to any :class:`medrl.eval.report.Report` (the
demo report has one panel).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Sequence

from medrl.eval.report import Report, fmt

# file names written by medrl.train.monitor / medrl.judges.cost (eval does not import train)
HACKING_FILE = "hacking.jsonl"
SUMMARY_FILE = "monitor_summary.json"
COST_FILE = "judge_cost.json"

PANELS = (
    ("Answer guard refusals (share of rollouts)", lambda k: k.startswith("monitor/guard/")),
    ("Reward vs correctness", lambda k: k in ("monitor/reward", "monitor/correct", "monitor/exact_match",
                                              "monitor/disagreement", "monitor/probe_accuracy")),
    ("Lengths", lambda k: k in ("monitor/completion_tokens", "monitor/answer_chars", "monitor/reasoning_answer_ratio")),
    ("Text signals", lambda k: k in ("monitor/repeat_ngram", "monitor/restate", "monitor/format_valid",
                                     "monitor/zero_std_groups", "monitor/unscored")),
)


def load_monitor(run: str | Path) -> dict:
    """``{"series": {signal: [(step, value)]}, "alerts": [...], "summary": {...} | None,
    "cost": {...} | None}`` of a run folder; raises FileNotFoundError naming what is missing."""
    run = Path(run)
    if not run.is_dir():
        raise FileNotFoundError(f"{run}: no such run folder")
    summary = None
    if (run / SUMMARY_FILE).is_file():
        summary = json.loads((run / SUMMARY_FILE).read_text())
        series = {k: [tuple(p) for p in v] for k, v in summary.get("series", {}).items()}
    elif (run / "metrics.jsonl").is_file():
        series = {}
        for line in (run / "metrics.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            for k, v in rec.items():
                if k.startswith("monitor/") and isinstance(v, (int, float)):
                    series.setdefault(k, []).append((rec.get("step", 0), float(v)))
    else:
        raise FileNotFoundError(f"{run}: neither {SUMMARY_FILE} nor metrics.jsonl (was it trained with the monitor on?)")
    alerts = []
    if (run / HACKING_FILE).is_file():
        for i, line in enumerate((run / HACKING_FILE).read_text().splitlines(), 1):
            if line.strip():
                try:
                    alerts.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{run / HACKING_FILE} line {i}: not JSON ({exc})") from None
    cost = json.loads((run / COST_FILE).read_text()) if (run / COST_FILE).is_file() else None
    return {"series": series, "alerts": alerts, "summary": summary, "cost": cost}


def plot_signals(series: dict, alerts: Sequence[dict], path: str | Path) -> Path | None:
    """One panel per signal group, alert steps as dashed lines; None when nothing to plot."""
    from medrl.eval.plots import _plt, _save

    panels = [(title, {k: v for k, v in series.items() if pick(k) and v}) for title, pick in PANELS]
    panels = [(t, s) for t, s in panels if s]
    if not panels:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.6 * len(panels)), squeeze=False)
    for ax, (title, sigs) in zip(axes[:, 0], panels):
        for k, pts in sorted(sigs.items()):
            if k.startswith("monitor/guard/") and max(v for _, v in pts) == 0:
                continue  # a reason never seen
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, label=k.split("/", 1)[1])
        for a in alerts:
            ax.axvline(a["step"], color="red", ls="--", lw=0.8)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    return _save(fig, path)


def _examples_html(examples: Sequence[dict]) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(str(x.get('reward')))}</td><td>{e(str(x.get('answer')))}</td><td>{e(str(x.get('reference')))}</td>"
        f"<td>{e(str(x.get('guard') or ''))}</td><td><pre style='white-space:pre-wrap;margin:0'>{e(x.get('text') or '')}"
        "</pre></td></tr>" for x in examples)
    return ("<table><tr><th>reward</th><th>answer</th><th>reference</th><th>guard</th><th>rollout</th></tr>"
            f"{rows}</table>")


def _examples_md(examples: Sequence[dict]) -> str:
    return "\n".join(f"- reward {x.get('reward')}: answer `{x.get('answer')}` (reference `{x.get('reference')}`, "
                     f"guard {x.get('guard')})" for x in examples)


def add_hacking_section(rep: Report, data: dict, fig_dir: str | Path, *, max_examples: int = 3) -> dict:
    """Signals plot, alert table and each alert's examples; returns a short summary."""
    alerts = data["alerts"]
    fig = plot_signals(data["series"], alerts, Path(fig_dir) / "hacking_signals.png")
    if fig is not None:
        rep.figure(fig, "Monitor signals per step (medrl.train.monitor); red dashed lines: alerts.")
    if not alerts:
        rep.paragraph("No alert: no signal crossed its threshold.")
    else:
        rep.table(["Step", "Signal", "Kind", "Value", "Threshold", "What"],
                  [[a["step"], a["signal"], a.get("kind", "hacking"), fmt(a["value"]), fmt(a["threshold"]), a["message"]]
                   for a in alerts], "Alerts (hacking.jsonl); each signal alerts once.")
        for a in alerts:
            ex = a.get("examples") or []
            if ex:
                rep.paragraph(f"Step {a['step']}, {a['signal']}: example rollouts (highest reward first).")
                rep.html(_examples_html(ex[:max_examples]), _examples_md(ex[:max_examples]))
    cost = data.get("cost")
    if cost:
        r = cost["run"]
        rep.table(["Requests", "Sent", "Cache hits", "Merged", "Tokens in", "Tokens out", "Saved tokens", "Cost (USD)"],
                  [[r["requests"], r["sent"], r["cache_hits"], r["deduplicated"], r["input_tokens"], r["output_tokens"],
                    r["saved_tokens"], "unknown" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}"]],
                  "Judge cost of the run (judge_cost.json; cost unknown without judge.price_*_per_mtok).")
    return {"alerts": [{"step": a["step"], "signal": a["signal"]} for a in alerts],
            "signals": sorted(data["series"]), "figure": None if fig is None else str(fig)}


def hacking_report(run: str | Path, out: str | Path | None = None) -> dict:
    """Write ``out/report.md``, ``out/report.html`` and ``out/figures/hacking_signals.png`` for
    the run folder ``run`` (default ``out``: ``RUN/hacking``); returns the summary."""
    run = Path(run)
    out = Path(out) if out is not None else run / "hacking"
    data = load_monitor(run)
    rep = Report("Reward-hacking monitor")
    rep.paragraph(
        f"Run {run}. Signals the monitor computed from every training batch (no extra model or judge call): "
        "answer-guard refusals by reason and whether the reward pays them, correctness decision vs an offline "
        "exact-match verdict, reward vs correctness trend, lengths, repeated n-grams, restating steps, format, "
        "groups with zero reward variance. Thresholds are this project's heuristics (docs/training.md).")
    summary = add_hacking_section(rep, data, out / "figures")
    rep.write(out)
    (out / "hacking_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


__all__ = ["add_hacking_section", "hacking_report", "load_monitor", "plot_signals"]
