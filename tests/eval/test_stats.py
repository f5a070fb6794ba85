"""Paired statistics of two runs (McNemar's exact test, paired bootstrap of the accuracy and HSS
differences) checked against statsmodels/SciPy and hand-worked numbers; SciPy-backed bootstrap
intervals; ``medrl analyze --compare`` printing them."""

import math

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.contingency_tables import mcnemar

from medrl.cli import main
from medrl.eval.stats import macro_mean_ci, mean_ci, paired_comparison, paired_mean_diff


def _table_runs(both, a_only, b_only, neither):
    """Correct/wrong lists of two runs with the given 2x2 table (A rows, B columns)."""
    a = [1] * both + [1] * a_only + [0] * b_only + [0] * neither
    b = [1] * both + [0] * a_only + [1] * b_only + [0] * neither
    return a, b


def test_mcnemar_exact_hand_worked_and_statsmodels():
    # 30 both right, A alone right 2, B alone right 9, 9 both wrong: n = 50
    a, b = _table_runs(30, 2, 9, 9)
    r = paired_comparison(a, b, n_boot=500, seed=3)
    assert (r["n"], r["both"], r["a_only"], r["b_only"], r["neither"]) == (50, 30, 2, 9, 9)
    assert r["a_acc"] == pytest.approx(32 / 50) and r["b_acc"] == pytest.approx(39 / 50)
    assert r["diff"] == pytest.approx(0.14)
    # exact two-sided binomial test on the 11 discordant pairs: 2 * P(X <= 2 | 11, 1/2)
    hand = 2 * (1 + 11 + 55) / 2 ** 11
    assert r["mcnemar_p"] == pytest.approx(hand) == pytest.approx(0.0654296875)
    assert r["mcnemar_p"] == pytest.approx(mcnemar([[30, 2], [9, 9]], exact=True).pvalue)
    assert r["mcnemar_p"] == pytest.approx(st.binomtest(2, 11, 0.5).pvalue)


def test_paired_bootstrap_matches_scipy_and_brackets_the_difference():
    a, b = _table_runs(30, 2, 9, 9)
    r = paired_comparison(a, b, n_boot=999, seed=7, alpha=0.1)
    ref = st.bootstrap((np.array(a, float), np.array(b, float)), lambda x, y, axis=-1: y.mean(axis) - x.mean(axis),
                       paired=True, vectorized=True, n_resamples=999, method="percentile", confidence_level=0.9,
                       rng=np.random.default_rng(7))
    assert r["ci_low"] == pytest.approx(ref.confidence_interval.low)
    assert r["ci_high"] == pytest.approx(ref.confidence_interval.high)
    assert r["ci_low"] <= r["diff"] <= r["ci_high"]
    # the paired interval is narrower than independent intervals would suggest: concordant
    # pairs add no variance to the difference; here it stays within [-2/50, 18/50]
    assert -0.04 <= r["ci_low"] and r["ci_high"] <= 0.36


def test_paired_comparison_edges():
    # no discordant pair: p = 1, difference 0 with a zero-width interval
    r = paired_comparison([1, 0, 1], [1, 0, 1])
    assert r["mcnemar_p"] == 1.0 and r["diff"] == 0.0 and r["ci_low"] == r["ci_high"] == 0.0
    # unscored pairs (None in either run) are dropped and counted, never taken as wrong
    r = paired_comparison([True, None, False, True], [True, True, None, False])
    assert r["n"] == 2 and r["dropped"] == 2 and (r["a_only"], r["b_only"]) == (1, 0)
    empty = paired_comparison([None], [1])
    assert empty["n"] == 0 and empty["mcnemar_p"] is None and empty["diff"] is None
    with pytest.raises(ValueError, match="pair them"):
        paired_comparison([1, 0], [1])
    with pytest.raises(ValueError, match="correct/wrong"):
        paired_comparison([0.5, 1], [1, 1])


def test_paired_mean_diff_hss():
    a = [0.20, 0.40, 0.50, 0.70, 0.10, 0.30]
    b = [0.30, 0.45, 0.70, 0.65, 0.30, 0.50]
    r = paired_mean_diff(a, b, n_boot=999, seed=1)
    assert r["diff"] == pytest.approx(np.mean(b) - np.mean(a)) == pytest.approx(0.7 / 6)
    assert r["wilcoxon_p"] == pytest.approx(st.wilcoxon(b, a).pvalue)
    assert r["ci_low"] <= r["diff"] <= r["ci_high"]
    same = paired_mean_diff([0.5, 0.6], [0.5, 0.6])
    assert same["diff"] == 0 and same["wilcoxon_p"] is None  # every difference 0: no test


def test_mean_ci_is_scipy_percentile_bootstrap():
    x = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
    ci = mean_ci(x, n_boot=2000, seed=1)
    ref = st.bootstrap((np.array(x, float),), np.mean, n_resamples=2000, method="percentile",
                       rng=np.random.default_rng(1))
    assert ci["low"] == pytest.approx(ref.confidence_interval.low)
    assert ci["high"] == pytest.approx(ref.confidence_interval.high)
    # stratified macro bootstrap: a one-value group stays fixed, the mean is the mean of the means
    m = macro_mean_ci({"a": [1.0], "b": [0, 0, 1, 1]}, n_boot=300)
    assert m["mean"] == 0.75 and 0.5 <= m["low"] <= 0.75 <= m["high"] <= 1.0


def test_cohen_kappa_uses_sklearn_and_keeps_hand_values():
    from medrl.eval.agreement import cohen_kappa

    # p_o = 0.8, p_e = 0.52 -> (0.8 - 0.52) / 0.48
    a = [1, 1, 1, 0, 0, 1, 0, 1, 1, 0]
    b = [1, 1, 0, 0, 0, 1, 1, 1, 1, 0]
    assert math.isclose(cohen_kappa(a, b), 0.28 / 0.48)
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0


def test_analyze_compare_prints_mcnemar_and_paired_interval(tmp_path, capsys):
    from test_workflows import _two_runs

    a, b = _two_runs(tmp_path)
    assert main(["analyze", "--compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--bootstrap", "300"]) == 0
    out = capsys.readouterr().out
    # 9 scored pairs, one discordant (B alone right): McNemar exact p = 1, diff = +1/9
    assert "McNemar exact p = 1" in out and "B - A = +11.11 pp" in out and "95% paired bootstrap CI" in out
    import json

    res = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    acc = res["paired_stats"]["accuracy"]["all"]
    assert (acc["n"], acc["a_only"], acc["b_only"]) == (9, 0, 1) and acc["mcnemar_p"] == 1.0
    assert "Paired statistics" in (tmp_path / "cmp" / "report.md").read_text()
