"""Bootstrap confidence intervals for eval metrics (numpy only).

Percentile bootstrap (Efron and Tibshirani 1993): resample the per-output scores with
replacement ``n_boot`` times and take the ``alpha/2`` and ``1 - alpha/2`` quantiles of the
resampled means. For a macro average over datasets the resampling is stratified: each dataset
is resampled on its own and the dataset means are averaged, so every replicate keeps the
datasets' sizes (the papers report plain per-benchmark means and their average, e.g. MRPO
Table 2 "AVG"; the intervals are this project's addition).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def mean_ci(values: Sequence[float], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> dict:
    """``{"mean", "low", "high", "n"}`` for the mean of ``values`` (None entries must be removed
    by the caller). With fewer than two values the interval collapses to the mean (or None)."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    m = float(x.mean())
    if x.size < 2 or n_boot <= 0:
        return {"mean": m, "low": m, "high": m, "n": int(x.size)}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    boots = x[idx].mean(axis=1)
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return {"mean": m, "low": float(lo), "high": float(hi), "n": int(x.size)}


def macro_mean_ci(
    groups: Mapping[str, Sequence[float]], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> dict:
    """Macro average (mean of the group means) with a stratified percentile bootstrap CI.

    Empty groups are skipped. Returns ``{"mean", "low", "high", "n_groups", "n"}``.
    """
    arrays = [np.asarray(list(v), dtype=float) for v in groups.values()]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return {"mean": None, "low": None, "high": None, "n_groups": 0, "n": 0}
    m = float(np.mean([a.mean() for a in arrays]))
    n = int(sum(a.size for a in arrays))
    if n_boot <= 0 or all(a.size < 2 for a in arrays):
        return {"mean": m, "low": m, "high": m, "n_groups": len(arrays), "n": n}
    rng = np.random.default_rng(seed)
    boots = np.zeros(n_boot)
    for a in arrays:
        idx = rng.integers(0, a.size, size=(n_boot, a.size))
        boots += a[idx].mean(axis=1)
    boots /= len(arrays)
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return {"mean": m, "low": float(lo), "high": float(hi), "n_groups": len(arrays), "n": n}
