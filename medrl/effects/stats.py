"""Statistics over seeds for the effects harness: per-seed values in, claims out.

- :func:`paired_over_seeds`: two methods run with the same seeds (same warm-up model, data
  order and budget per seed). The per-seed differences d_s = b_s - a_s; their mean with a
  Student-t 95% interval (mean +- t_{0.975, n-1} * sd / sqrt(n), sd with n - 1), the paired
  t-test (:func:`scipy.stats.ttest_rel`) and the Wilcoxon signed-rank test
  (:func:`scipy.stats.wilcoxon`, two-sided; exact for small n). With one seed there is no
  interval and no test (None).
- :func:`proportion_ci`: Wilson score interval of a proportion (Wilson 1927;
  :func:`statsmodels.stats.proportion.proportion_confint` with ``method="wilson"``), or the
  Clopper-Pearson exact interval (``method="beta"``).
- :func:`min_detectable_difference`: the smallest true mean difference the paired t-test would
  detect with 80% power at alpha 0.05, from the per-seed differences' standard deviation
  (:class:`statsmodels.stats.power.TTestPower` solves for the standardized effect d, and the
  difference is d * sd): a "no significant difference" next to it says how large a difference
  the seeds could have shown.
- :func:`claim_sentence`: one plain sentence that says what the numbers show, "no significant
  difference" included.

Per-record paired tests (McNemar) live in :mod:`medrl.eval.stats`; over seeds the unit of
replication is the training run, so the tests here take one value per seed.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

ALPHA = 0.05


def _clean(values: Sequence[Any]) -> list[float | None]:
    out = []
    for v in values:
        out.append(None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
    return out


def paired_over_seeds(a: Sequence[float | None], b: Sequence[float | None], *, alpha: float = ALPHA) -> dict:
    """Paired comparison of per-seed values ``a`` (baseline) and ``b`` (method), same seed order.

    Seeds missing a value in either list are left out (``dropped``). Returns ``{"n", "dropped",
    "a_mean", "b_mean", "diff" (mean of b - a), "sd", "ci_low", "ci_high", "t_p", "wilcoxon_p",
    "diffs", "alpha", "mde"}``; the interval and tests are None with fewer than two seeds, the
    interval is None when every seed gives the same difference (no spread to size it), and the
    tests are None when every difference is 0. ``mde``: :func:`min_detectable_difference` of the
    differences' spread (None below two seeds or without spread).
    """
    xa, xb = _clean(a), _clean(b)
    if len(xa) != len(xb):
        raise ValueError(f"paired_over_seeds: {len(xa)} baseline values but {len(xb)} method values")
    pairs = [(x, y) for x, y in zip(xa, xb) if x is not None and y is not None]
    n = len(pairs)
    out: dict[str, Any] = {"n": n, "dropped": len(xa) - n, "alpha": alpha, "diffs": [y - x for x, y in pairs]}
    if n == 0:
        return {**out, "a_mean": None, "b_mean": None, "diff": None, "sd": None, "ci_low": None, "ci_high": None,
                "t_p": None, "wilcoxon_p": None, "mde": None}
    import numpy as np

    d = np.array(out["diffs"], dtype=float)
    out.update(a_mean=float(np.mean([x for x, _ in pairs])), b_mean=float(np.mean([y for _, y in pairs])),
               diff=float(d.mean()))
    if n < 2:
        return {**out, "sd": None, "ci_low": None, "ci_high": None, "t_p": None, "wilcoxon_p": None, "mde": None}
    from scipy import stats

    sd = float(d.std(ddof=1))
    out["mde"] = min_detectable_difference(sd, n, alpha=alpha)
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * sd / math.sqrt(n)
    t_p = w_p = None
    if np.any(d != 0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_p = float(stats.ttest_rel([y for _, y in pairs], [x for x, _ in pairs]).pvalue)
            w_p = float(stats.wilcoxon(d).pvalue)
        t_p = None if math.isnan(t_p) else t_p
        w_p = None if math.isnan(w_p) else w_p
    if sd == 0:  # every seed gave the same difference: a t interval would read [d, d], certainty it is not
        return {**out, "sd": sd, "ci_low": None, "ci_high": None, "t_p": t_p, "wilcoxon_p": w_p}
    return {**out, "sd": sd, "ci_low": out["diff"] - half, "ci_high": out["diff"] + half, "t_p": t_p,
            "wilcoxon_p": w_p}


def min_detectable_difference(sd: float | None, n: int, *, alpha: float = ALPHA, power: float = 0.8) -> float | None:
    """The smallest mean paired difference a two-sided paired t-test over ``n`` seeds detects
    with probability ``power`` at level ``alpha`` when the per-seed differences have standard
    deviation ``sd``: ``d * sd`` with ``d`` the standardized effect
    :meth:`statsmodels.stats.power.TTestPower.solve_power` finds (the noncentral t distribution,
    noncentrality ``d * sqrt(n)``). None with fewer than two seeds or no spread."""
    if sd is None or n < 2 or not sd > 0:
        return None
    from statsmodels.stats.power import TTestPower

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided")
    return float(d) * float(sd)


def mean_over_seeds(values: Sequence[float | None], *, alpha: float = ALPHA) -> dict:
    """``{"n", "mean", "sd", "ci_low", "ci_high"}``: the mean of per-seed values with a Student-t
    interval (None with fewer than two seeds)."""
    x = [v for v in _clean(values) if v is not None]
    n = len(x)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    import numpy as np

    m = float(np.mean(x))
    if n < 2:
        return {"n": 1, "mean": m, "sd": None, "ci_low": None, "ci_high": None}
    from scipy import stats

    sd = float(np.std(x, ddof=1))
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * sd / math.sqrt(n)
    return {"n": n, "mean": m, "sd": sd, "ci_low": m - half, "ci_high": m + half}


def proportion_ci(k: int, n: int, *, alpha: float = ALPHA, method: str = "wilson") -> dict:
    """``{"k", "n", "p", "low", "high", "method"}``: a proportion with its Wilson score interval
    (``method="wilson"``) or Clopper-Pearson exact interval (``method="exact"``); None for n = 0.
    The interval is :func:`medrl.eval.stats.proportion_ci`'s (one implementation), under the
    harness's key names."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"proportion_ci: need 0 <= k <= n, got k={k}, n={n}")
    sm = {"wilson": "wilson", "exact": "beta"}.get(method)
    if sm is None:
        raise ValueError(f"proportion_ci: method must be 'wilson' or 'exact', got {method!r}")
    from medrl.eval.stats import proportion_ci as interval

    r = interval(int(k), int(n), alpha=alpha, method=sm)
    return {"k": r["k"], "n": r["n"], "p": r["mean"], "low": r["low"], "high": r["high"], "method": method}


def significant(result: dict, alpha: float | None = None) -> bool | None:
    """Whether a :func:`paired_over_seeds` result is significant: both tests below ``alpha`` when
    both exist, else the one that exists; None when neither does (one seed, or no difference)."""
    alpha = result.get("alpha", ALPHA) if alpha is None else alpha
    ps = [p for p in (result.get("t_p"), result.get("wilcoxon_p")) if p is not None]
    if not ps:
        return None if result.get("n", 0) < 2 or result.get("diff") is None or result.get("diff") != 0 else False
    return all(p < alpha for p in ps)


def _fmt(v: float | None, pct: bool) -> str:
    if v is None:
        return "n/a"
    return f"{100 * v:+.1f} pp" if pct else f"{v:+.3f}"


def claim_sentence(claim: str, result: dict, *, a: str, b: str, lower_is_better: bool = False,
                   percent: bool = True) -> str:
    """One plain sentence for a paired result: what was compared, the mean difference ``b - a``
    with its interval, the minimum detectable difference and p-values, and whether the data support ``claim`` (the expected
    direction), show the opposite, or show no significant difference."""
    n, diff = result.get("n", 0), result.get("diff")
    if not n or diff is None:
        return f"{claim}: no seed produced both values; nothing can be said."
    head = f"{claim}: {b} - {a} = {_fmt(diff, percent)} over {n} seed{'s' if n != 1 else ''}"
    if n < 2:
        return head + " (one seed: no interval or test; a direction, not evidence)."
    ci = (f"95% CI [{_fmt(result['ci_low'], percent)}, {_fmt(result['ci_high'], percent)}]"
          if result.get("ci_low") is not None else "the same difference on every seed (no interval)")
    tp, wp = result.get("t_p"), result.get("wilcoxon_p")
    ps = ", ".join(x for x in (f"paired t p = {tp:.3g}" if tp is not None else "",
                               f"Wilcoxon p = {wp:.3g}" if wp is not None else "") if x)
    mde = result.get("mde")
    if mde is not None:  # how large a difference these seeds could have shown
        ci += f", minimum detectable difference at 80% power {_fmt(mde, percent).lstrip('+')}"
    sig = significant(result)
    if not sig:
        return f"{head}, {ci}{', ' + ps if ps else ''}: no significant difference."
    better = (diff < 0) if lower_is_better else (diff > 0)
    verdict = "supports the claim" if better else "goes against the claim (significantly)"
    return f"{head}, {ci}, {ps}: the difference is significant and {verdict}."


__all__ = ["ALPHA", "claim_sentence", "mean_over_seeds", "min_detectable_difference", "paired_over_seeds",
           "proportion_ci", "significant"]
