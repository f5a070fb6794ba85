"""Confidence intervals and paired tests for eval metrics (SciPy and statsmodels).

- :func:`proportion_ci`: Wilson score (default) or exact Clopper-Pearson interval of a
  proportion; :func:`score_ci` and :func:`pooled_mean_ci` use Wilson's for 0/1 scores
  (accuracy), whose bootstrap collapses to [0, 0] at 0 of n and to a point at small n;
  :func:`honest_interval` puts it into an existing summary of a proportion (reports).
- :func:`mean_ci`: a percentile bootstrap (Efron and Tibshirani 1993) of a mean, computed with
  :func:`scipy.stats.bootstrap` (``method="percentile"``): resample the per-output scores with
  replacement ``n_boot`` times and take the ``alpha/2`` and ``1 - alpha/2`` quantiles.
- :func:`macro_mean_ci`: the same for a macro average over datasets (the mean of the dataset
  means); the resampling is stratified (SciPy resamples every sample on its own when
  ``paired=False``), so every replicate keeps the datasets' sizes. ARMed (arXiv 2508.12957)
  Table 1 "Avg." and MediX-R1 (arXiv 2602.23363) Table 2 "AVG" are macro averages.
- :func:`pooled_mean_ci`: the sample-weighted (pooled) average over datasets, i.e. the mean over
  every scored output of every dataset, with the same stratified bootstrap. MRPO (arXiv
  2606.31825) Table 2 "AVG" is pooled: from its per-dataset accuracies and test sizes the pooled
  value reproduces the paper's 26.79 for Qwen2.5-VL-7B MRPO, the macro one gives 29.54
  (:func:`pooled_average`, :func:`macro_average`). The intervals are this project's addition.
- :func:`paired_comparison`: two runs scored correct/wrong on the *same* inputs. McNemar's exact
  test (McNemar 1947; :func:`statsmodels.stats.contingency_tables.mcnemar` with ``exact=True``:
  a two-sided binomial test on the discordant pairs) and a paired percentile bootstrap interval
  of the accuracy difference (inputs resampled jointly, ``paired=True``).
- :func:`paired_mean_diff`: the same for a continuous score such as HSS (ARMed
  arXiv 2508.12957 Eq. 15): paired bootstrap interval of the mean difference and the
  Wilcoxon signed-rank p-value (:func:`scipy.stats.wilcoxon`).

Two runs' independent intervals can overlap while the paired difference is clearly non-zero
(and the reverse); only the paired statistics say whether "B beats A" on one test set.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np


def _percentile_ci(data: tuple, statistic, n_boot: int, alpha: float, seed: int, paired: bool) -> tuple[float, float]:
    from scipy.stats import bootstrap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate data (all equal) gives a zero-width interval: fine
        size = max(len(np.asarray(d)) for d in data) * len(data)
        res = bootstrap(data, statistic, n_resamples=int(n_boot), method="percentile", paired=paired,
                        vectorized=True, confidence_level=1 - alpha, rng=np.random.default_rng(seed),
                        batch=max(1, int(4_000_000 // max(1, size))))  # bounded memory on large test sets
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def _mean_stat(x, axis=-1):
    return np.mean(x, axis=axis)


def proportion_ci(k: int, n: int, alpha: float = 0.05, method: str = "wilson") -> dict:
    """``{"mean", "low", "high", "n", "k", "method"}`` for ``k`` successes in ``n`` trials.

    Wilson's score interval (Wilson 1927; ``method="wilson"``, the default) or the exact
    Clopper-Pearson interval (Clopper and Pearson 1934; ``"beta"``), both from
    :func:`statsmodels.stats.proportion.proportion_confint`. Unlike a bootstrap of 0/1 scores,
    neither collapses at 0 or n: 0 of 10 gives [0.0, 0.278] (Wilson) or [0.0, 0.308] (exact), not
    [0, 0] - a 0/10 result is no certainty of 0%.
    """
    from statsmodels.stats.proportion import proportion_confint

    k, n = int(k), int(n)
    if n <= 0:
        return {"mean": None, "low": None, "high": None, "n": 0, "k": 0, "method": method}
    if not 0 <= k <= n:
        raise ValueError(f"proportion_ci: k={k} successes must be between 0 and n={n}")
    lo, hi = proportion_confint(k, n, alpha=alpha, method=method)
    return {"mean": k / n, "low": max(0.0, float(lo)), "high": min(1.0, float(hi)), "n": n, "k": k, "method": method}


def _binary(x: np.ndarray) -> bool:
    return x.size > 0 and bool(np.all((x == 0) | (x == 1)))


#: How each interval was made, as reports name it (``method`` of a summary).
METHOD_NAMES = {"wilson": "Wilson score", "bootstrap": "percentile bootstrap",
                "stratified bootstrap": "stratified percentile bootstrap"}


def score_ci(values: Sequence[float], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
             proportion: bool | None = None) -> dict:
    """The interval a report shows for a mean score, ``{"mean", "low", "high", "n", "method"}``.

    ``proportion=True`` (a correct/wrong verdict per output: accuracy, exact match): Wilson's
    interval (:func:`proportion_ci`; a bootstrap of 0 of 10 would say [0, 0]). ``False`` (a
    continuous score: ROUGE, BLEU, BERTScore, cosine, HSS, a rubric): the percentile bootstrap
    (:func:`mean_ci`), even when every value happens to be 0 or 1 - a proportion's interval
    would claim "ROUGE-1 0.000 [0.000, 0.324]" for a score that is 0 on every output. ``None``:
    Wilson's when every value is 0 or 1, else the bootstrap (for callers that do not know). A
    "proportion" holding other values (a tie of judge rounds, 0.5) is no count: the bootstrap."""
    x = np.asarray(list(values), dtype=float)
    if proportion is None or proportion:
        proportion = _binary(x)
    if proportion:
        out = proportion_ci(int(x.sum()), int(x.size), alpha=alpha)
        return {"mean": out["mean"], "low": out["low"], "high": out["high"], "n": out["n"], "method": "wilson"}
    return {**mean_ci(x, n_boot=n_boot, alpha=alpha, seed=seed), "method": "bootstrap"}


def honest_interval(summary: Mapping[str, Any] | None, alpha: float = 0.05) -> Mapping[str, Any] | None:
    """A ``{"mean", "low", "high", "n"}`` summary of a *proportion* with Wilson's interval in
    place of a bootstrap one. A summary made before :func:`score_ci` existed (no ``method``: a
    bootstrap of 0/1 scores, collapsed at 0 of n) is recomputed from its mean and n; a summary
    that names its method, and others (no n, a mean that is no k/n), are returned as they are."""
    if not summary or summary.get("method") or summary.get("mean") is None:
        return summary
    n = summary.get("n")
    if not isinstance(n, int) or n <= 0:
        return summary
    k = summary["mean"] * n
    if abs(k - round(k)) > 1e-6 or not 0 <= round(k) <= n:
        return summary
    out = proportion_ci(int(round(k)), n, alpha=alpha)
    return {**summary, "low": out["low"], "high": out["high"], "method": "wilson"}


def mean_ci(values: Sequence[float], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> dict:
    """``{"mean", "low", "high", "n"}`` for the mean of ``values`` (None entries must be removed
    by the caller): the percentile bootstrap. With fewer than two values the interval collapses to
    the mean (or None). For 0/1 scores use :func:`score_ci` (Wilson's interval)."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    m = float(x.mean())
    if x.size < 2 or n_boot <= 0:
        return {"mean": m, "low": m, "high": m, "n": int(x.size)}
    lo, hi = _percentile_ci((x,), _mean_stat, n_boot, alpha, seed, paired=False)
    return {"mean": m, "low": lo, "high": hi, "n": int(x.size)}


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
        return {"mean": m, "low": m, "high": m, "n_groups": len(arrays), "n": n, "method": "stratified bootstrap"}

    # a one-element group cannot be resampled by SciPy; it is constant in every replicate anyway
    fixed = sum(float(a[0]) for a in arrays if a.size < 2)
    varying = tuple(a for a in arrays if a.size >= 2)
    k = len(arrays)

    def macro(*samples, axis=-1):
        return (np.sum([np.mean(s, axis=axis) for s in samples], axis=0) + fixed) / k

    lo, hi = _percentile_ci(varying, macro, n_boot, alpha, seed, paired=False)
    return {"mean": m, "low": lo, "high": hi, "n_groups": len(arrays), "n": n, "method": "stratified bootstrap"}


def macro_average(means: Sequence[float]) -> float:
    """Mean of per-dataset means (ARMed Table 1 "Avg.", MediX-R1 Table 2 "AVG")."""
    vals = [float(m) for m in means]
    if not vals:
        raise ValueError("macro_average: no dataset means")
    return sum(vals) / len(vals)


def pooled_average(means: Sequence[float], sizes: Sequence[int]) -> float:
    """Sample-weighted average sum(n_d * m_d) / sum(n_d) of per-dataset means ``m_d`` over ``n_d``
    scored outputs: the mean over all outputs pooled (MRPO Table 2 "AVG")."""
    if len(means) != len(sizes):
        raise ValueError(f"pooled_average: {len(means)} means but {len(sizes)} sizes")
    total = sum(int(n) for n in sizes)
    if total <= 0 or any(int(n) < 0 for n in sizes):
        raise ValueError(f"pooled_average: sizes must be >= 0 with a positive total, got {list(sizes)}")
    return sum(float(m) * int(n) for m, n in zip(means, sizes)) / total


def pooled_mean_ci(
    groups: Mapping[str, Sequence[float]], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
    proportion: bool | None = None,
) -> dict:
    """Pooled (sample-weighted) average over datasets with a stratified percentile bootstrap CI
    (each replicate resamples every dataset within itself, so dataset sizes are kept); for a
    proportion (``proportion=True``, or None and every value 0 or 1) Wilson's interval of the
    pooled count, as :func:`score_ci`.

    Returns ``{"mean", "low", "high", "n_groups", "n", "method"}`` like :func:`macro_mean_ci`."""
    arrays = [np.asarray(list(v), dtype=float) for v in groups.values()]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return {"mean": None, "low": None, "high": None, "n_groups": 0, "n": 0}
    n = int(sum(a.size for a in arrays))
    m = float(sum(a.sum() for a in arrays) / n)
    if proportion is None:
        proportion = all(_binary(a) for a in arrays)
    if proportion and all(_binary(a) for a in arrays):  # pooled accuracy: one proportion over every output
        out = proportion_ci(int(sum(a.sum() for a in arrays)), n, alpha=alpha)
        return {"mean": m, "low": out["low"], "high": out["high"], "n_groups": len(arrays), "n": n,
                "method": "wilson"}
    if n_boot <= 0 or all(a.size < 2 for a in arrays):
        return {"mean": m, "low": m, "high": m, "n_groups": len(arrays), "n": n, "method": "stratified bootstrap"}
    fixed = sum(float(a[0]) for a in arrays if a.size < 2)
    varying = tuple(a for a in arrays if a.size >= 2)

    def pooled(*samples, axis=-1):
        return (np.sum([np.sum(s, axis=axis) for s in samples], axis=0) + fixed) / n

    lo, hi = _percentile_ci(varying, pooled, n_boot, alpha, seed, paired=False)
    return {"mean": m, "low": lo, "high": hi, "n_groups": len(arrays), "n": n, "method": "stratified bootstrap"}


# --------------------------------------------------------------------------- paired statistics
def _pairs(a: Sequence[Any], b: Sequence[Any], what: str) -> tuple[np.ndarray, np.ndarray, int]:
    if len(a) != len(b):
        raise ValueError(f"{what}: the two runs have {len(a)} and {len(b)} scores; pair them by input first")
    keep = [(x, y) for x, y in zip(a, b) if not _missing(x) and not _missing(y)]
    xa = np.asarray([float(x) for x, _ in keep], dtype=float)
    xb = np.asarray([float(y) for _, y in keep], dtype=float)
    return xa, xb, len(a) - len(keep)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _diff_stat(a, b, axis=-1):
    return np.mean(b, axis=axis) - np.mean(a, axis=axis)


def paired_comparison(a: Sequence[Any], b: Sequence[Any], *, n_boot: int = 2000, alpha: float = 0.05,
                      seed: int = 0) -> dict:
    """Paired comparison of two runs' correct/wrong verdicts on the same inputs (same order).

    ``a``, ``b``: bools or 0/1 per input; a pair with ``None`` in either run (unscored) is left
    out and counted in ``dropped``. Returns::

        {"n", "dropped", "a_acc", "b_acc", "diff" (= b_acc - a_acc), "ci_low", "ci_high",
         "mcnemar_p", "both", "a_only", "b_only", "neither", "alpha"}

    ``mcnemar_p``: McNemar's exact test on the 2x2 table [[both, a_only], [b_only, neither]]
    (statsmodels, ``exact=True``: binomial test of ``b_only`` among the ``a_only + b_only``
    discordant pairs, p = 1 when there are none). ``ci_low``/``ci_high``: paired percentile
    bootstrap interval of ``diff`` (inputs resampled jointly; :func:`scipy.stats.bootstrap`).
    With no pairs every statistic is None.
    """
    xa, xb, dropped = _pairs(a, b, "paired_comparison")
    bad = [v for v in np.concatenate([xa, xb]) if v not in (0.0, 1.0)]
    if bad:
        raise ValueError(f"paired_comparison: verdicts must be correct/wrong (0/1 or bool), got {bad[0]!r}")
    n = int(xa.size)
    out: dict[str, Any] = {"n": n, "dropped": dropped, "alpha": alpha}
    if n == 0:
        return {**out, "a_acc": None, "b_acc": None, "diff": None, "ci_low": None, "ci_high": None,
                "mcnemar_p": None, "both": 0, "a_only": 0, "b_only": 0, "neither": 0}
    from statsmodels.stats.contingency_tables import mcnemar

    both = int(np.sum((xa == 1) & (xb == 1)))
    a_only = int(np.sum((xa == 1) & (xb == 0)))
    b_only = int(np.sum((xa == 0) & (xb == 1)))
    neither = n - both - a_only - b_only
    p = float(mcnemar([[both, a_only], [b_only, neither]], exact=True).pvalue)
    diff = float(xb.mean() - xa.mean())
    if n < 2 or n_boot <= 0:
        lo = hi = diff
    else:
        lo, hi = _percentile_ci((xa, xb), _diff_stat, n_boot, alpha, seed, paired=True)
    return {**out, "a_acc": float(xa.mean()), "b_acc": float(xb.mean()), "diff": diff, "ci_low": lo,
            "ci_high": hi, "mcnemar_p": min(1.0, p), "both": both, "a_only": a_only, "b_only": b_only,
            "neither": neither}


def paired_mean_diff(a: Sequence[Any], b: Sequence[Any], *, n_boot: int = 2000, alpha: float = 0.05,
                     seed: int = 0) -> dict:
    """Paired difference of a continuous per-input score (e.g. HSS) between two runs.

    Returns ``{"n", "dropped", "a_mean", "b_mean", "diff" (= b - a), "ci_low", "ci_high",
    "wilcoxon_p", "alpha"}``: a paired percentile bootstrap interval of the mean difference
    and the two-sided Wilcoxon signed-rank p-value (None when every difference is 0 or n < 2).
    """
    xa, xb, dropped = _pairs(a, b, "paired_mean_diff")
    n = int(xa.size)
    out: dict[str, Any] = {"n": n, "dropped": dropped, "alpha": alpha}
    if n == 0:
        return {**out, "a_mean": None, "b_mean": None, "diff": None, "ci_low": None, "ci_high": None,
                "wilcoxon_p": None}
    diff = float(xb.mean() - xa.mean())
    if n < 2 or n_boot <= 0:
        lo = hi = diff
    else:
        lo, hi = _percentile_ci((xa, xb), _diff_stat, n_boot, alpha, seed, paired=True)
    p = None
    if n >= 2 and np.any(xb - xa != 0):
        from scipy.stats import wilcoxon

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = float(wilcoxon(xb, xa).pvalue)
        p = None if math.isnan(p) else p
    return {**out, "a_mean": float(xa.mean()), "b_mean": float(xb.mean()), "diff": diff, "ci_low": lo,
            "ci_high": hi, "wilcoxon_p": p}
