"""Figures for eval and analysis reports (matplotlib, Agg backend, PNG files).

Each function takes plain numbers (the outputs of :mod:`medrl.eval.analysis`,
:mod:`medrl.eval.scoring` or :mod:`medrl.eval.diagnostics`), writes one PNG and returns its
path. The figures mirror the papers': MRPO Fig. 1A/1B (incorrect rate and FAR per FFP bin),
Fig. 3 (stage shares), Fig. 4 (FAR per 0.2 bin, several runs), App. G (training curves); ARMed
Fig. 3 (raw vs adaptive semantic reward histograms).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def _nan(v):
    return float("nan") if v is None else float(v)


def accuracy_bars(names: Sequence[str], means: Sequence[float | None], lows: Sequence[float | None],
                  highs: Sequence[float | None], path: str | Path, ylabel: str = "Judged accuracy (%)",
                  title: str = "Judged accuracy per dataset (95% Wilson score CI)") -> Path:
    """Bar chart of a metric per dataset with CI error bars (values in [0, 1], shown in %); the
    title names how the intervals were made (:func:`medrl.eval.report.interval_name`)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4.5, 1.2 * len(names) + 2), 3.6))
    m = [100 * _nan(v) for v in means]
    err_lo = [max(0.0, 100 * (_nan(a) - _nan(lo))) if lo is not None else 0 for a, lo in zip(means, lows)]
    err_hi = [max(0.0, 100 * (_nan(hi) - _nan(a))) if hi is not None else 0 for a, hi in zip(means, highs)]
    ax.bar(range(len(names)), m, yerr=[err_lo, err_hi], capsize=4, color="#4C72B0")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    for i, v in enumerate(m):
        if v == v:
            ax.text(i, v + 1.5, f"{v:.1f}", ha="center", fontsize=8)
    return _save(fig, path)


def grouped_bars(groups: Sequence[str], series: Mapping[str, Sequence[float | None]], path: str | Path, *,
                 ylabel: str, title: str, xlabel: str | None = None, value_fmt: str | None = "{:.0f}",
                 rotate: int = 20, figsize: tuple[float, float] | None = None, ymax: float = 108) -> Path:
    """One bar group per ``groups`` label, one bar per series (values in [0, 1], drawn in %;
    None/NaN leaves a gap). ``value_fmt`` prints each value above its bar (None: no labels)."""
    plt = _plt()
    names = list(series)
    fig, ax = plt.subplots(figsize=figsize or (max(5.0, 0.9 * len(groups) * max(1, len(names)) + 2), 3.6))
    w = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        xs = [i + j * w - 0.4 + w / 2 for i in range(len(groups))]
        vals = [100 * _nan(v) for v in series[name]]
        ax.bar(xs, vals, width=w, label=name)
        if value_fmt:
            for x, v in zip(xs, vals):
                if v == v:
                    ax.text(x, v + 1.5, value_fmt.format(v), ha="center", fontsize=7)
    ax.set_xticks(range(len(groups)))
    if rotate:
        ax.set_xticklabels(groups, rotation=rotate, ha="right", fontsize=8)
    else:
        ax.set_xticklabels(groups)
    ax.set_ylim(0, ymax)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if len(names) > 1:
        ax.legend(fontsize=8)
    return _save(fig, path)


def _bars_per_ffp_bin(rows_by_run: Mapping[str, Sequence[dict]], key: str, path: str | Path, *,
                      ylabel: str, title: str, figsize: tuple[float, float], rotate: bool) -> Path:
    """One bar group per FFP bin, one bar per run: ``100 * row[key]`` (NaN for missing)."""
    labels = [r["bin"] for r in next(iter(rows_by_run.values()))]
    series = {run: [r[key] for r in rows] for run, rows in rows_by_run.items()}
    return grouped_bars(labels, series, path, ylabel=ylabel, title=title, xlabel="First Failure Point (FFP) bin",
                        value_fmt=None, rotate=30 if rotate else 0, figsize=figsize, ymax=105)


def incorrect_rate_by_bin(rows_by_run: Mapping[str, Sequence[dict]], path: str | Path) -> Path:
    """MRPO Fig. 1A: incorrect rate (%) per FFP bin of width 0.1, one bar group per run."""
    return _bars_per_ffp_bin(rows_by_run, "rate", path, ylabel="Incorrect rate (%)",
                             title="Incorrect rate across FFP bins (MRPO Fig. 1A)", figsize=(7.5, 3.6), rotate=True)


def far_correct_incorrect(rows: Sequence[dict], path: str | Path, title: str = "") -> Path:
    """MRPO Fig. 1B: mean FAR (%) per FFP bin for correct and incorrect outputs."""
    plt = _plt()
    labels = [r["bin"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], [100 * _nan(r.get("far_correct")) for r in rows], width=0.4,
           label="correct", color="#55A868")
    ax.bar([i + 0.2 for i in x], [100 * _nan(r.get("far_incorrect")) for r in rows], width=0.4,
           label="incorrect", color="#C44E52")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 105)
    ax.set_xlabel("First Failure Point (FFP) bin")
    ax.set_ylabel("FAR (%)")
    ax.set_title(title or "Failure accumulation rate across FFP bins (MRPO Fig. 1B)", fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def far_by_bin_runs(rows_by_run: Mapping[str, Sequence[dict]], path: str | Path) -> Path:
    """MRPO Fig. 4: mean FAR (%) per FFP bin of width 0.2, one bar group per run."""
    return _bars_per_ffp_bin(rows_by_run, "far", path, ylabel="FAR (%)",
                             title="Failure accumulation rate across FFP bins (MRPO Fig. 4)",
                             figsize=(6.5, 3.6), rotate=False)


def stage_shares_bars(shares_by_run: Mapping[str, Mapping[str, float | None]], path: str | Path) -> Path:
    """MRPO Fig. 3: share (%) of failed outputs in the early/mid/late FFP stage, per run."""
    series = {run: [shares.get(s) for s in ("early", "mid", "late")] for run, shares in shares_by_run.items()}
    return grouped_bars(["Early (0.0-0.4)", "Mid (0.4-0.7)", "Late (0.7-1.0)"], series, path,
                        ylabel="Share of failed outputs (%)", title="Outputs per First Failure Point stage (MRPO Fig. 3)",
                        value_fmt="{:.1f}", rotate=0, figsize=(6.0, 3.6), ymax=105)


def transition_heatmap(matrix: dict, path: str | Path, title: str, row_name: str, col_name: str) -> Path:
    """An FFP stage transition matrix (MRPO Tables 12-13) as an annotated heatmap."""
    plt = _plt()
    from medrl.eval.analysis import STAGE_LABELS

    labels = [STAGE_LABELS[s] for s in matrix["labels"]]
    counts = matrix["counts"]
    fig, ax = plt.subplots(figsize=(4.8, 4.0))
    ax.imshow(counts, cmap="Blues")
    top = max((v for row in counts for v in row), default=0)
    for i, row in enumerate(counts):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center", fontsize=9,
                    color="white" if top and v > top / 2 else "black")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.set_xlabel(f"{col_name} FFP stage")
    ax.set_ylabel(f"{row_name} FFP stage")
    ax.set_title(title, fontsize=9)
    return _save(fig, path)


def reward_histograms(series: Mapping[str, Sequence[float]], path: str | Path,
                      title: str = "Semantic reward distribution (ARMed Fig. 3)") -> Path:
    """ARMed Fig. 3: overlaid histograms of raw and adaptive reward values in [0, 1]."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for name, vals in series.items():
        vals = [float(v) for v in vals if v is not None]
        if vals:
            ax.hist(vals, bins=20, range=(0, 1), alpha=0.55, label=f"{name} (n={len(vals)})")
    ax.set_xlabel("Reward value")
    ax.set_ylabel("Count")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


#: Fewer points than this are drawn as markers, not as a line.
MIN_LINE_POINTS = 5


def training_curves(curves: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]], path: str | Path,
                    title: str = "Training dynamics (MRPO App. G)") -> Path:
    """MRPO App. G: one panel per quantity (answer reward, process reward, KL, completion
    length), one line per run. ``curves[panel][run] = [(step, value), ...]``.

    A run with fewer than :data:`MIN_LINE_POINTS` points is drawn as markers only: a line
    through 2 steps reads as a trend that 2 steps cannot show."""
    plt = _plt()
    panels = list(curves)
    ncol = 2 if len(panels) > 1 else 1
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.0 * nrow), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        for run, pts in curves[panel].items():
            if pts:
                xs, ys = zip(*pts)
                if len(pts) < MIN_LINE_POINTS:
                    ax.plot(xs, ys, label=f"{run} ({len(pts)} point{'s' if len(pts) > 1 else ''})", linestyle="none",
                            marker="o", markersize=5)
                else:
                    ax.plot(xs, ys, label=run, linewidth=1.4)
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel("step")
        if len(curves[panel]) > 1:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    return _save(fig, path)


def band_curves(panels: Mapping[str, Mapping[str, Mapping[float, Sequence[float]]]], path: str | Path, *,
                title: str = "", xlabel: str = "training step", percent: bool = True) -> Path:
    """Curves over repeated runs: one panel per quantity, one line per arm at the mean over runs,
    with a band of the 95% Student-t interval of that mean (none where one run has the point).
    ``panels[panel][arm] = {x: [value of each run at x]}``."""
    import math

    from scipy import stats

    plt = _plt()
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(5.0 * max(len(panels), 1), 3.4), squeeze=False)
    scale = 100.0 if percent else 1.0
    for ax, (panel, arms) in zip(axes[0], panels.items()):
        for arm, points in arms.items():
            xs = sorted(x for x, v in points.items() if v)
            if not xs:
                continue
            mean, low, high = [], [], []
            for x in xs:
                v = [float(y) for y in points[x]]
                m = sum(v) / len(v)
                half = 0.0
                if len(v) > 1:
                    sd = math.sqrt(sum((y - m) ** 2 for y in v) / (len(v) - 1))
                    half = float(stats.t.ppf(0.975, len(v) - 1)) * sd / math.sqrt(len(v))
                mean.append(scale * m)
                low.append(scale * (m - half))
                high.append(scale * (m + half))
            line, = ax.plot(xs, mean, "-o", markersize=3, lw=1.4, label=arm)
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.18, lw=0)
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel(xlabel)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=11)
    return _save(fig, path)
