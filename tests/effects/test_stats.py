"""The effects harness's statistics against numbers worked by hand (medrl.effects.stats)."""

from __future__ import annotations

import math

import pytest

from medrl.effects.stats import (claim_sentence, mean_over_seeds, min_detectable_difference, paired_over_seeds,
                                 proportion_ci, significant)


def test_paired_over_seeds_by_hand():
    a = [0.50, 0.40, 0.60, 0.55, 0.45]
    b = [0.60, 0.45, 0.70, 0.60, 0.50]
    r = paired_over_seeds(a, b)
    # d = [0.10, 0.05, 0.10, 0.05, 0.05]: mean 0.07, sd = sqrt(sum((d - 0.07)^2) / 4)
    #   = sqrt((0.0009 * 2 + 0.0004 * 3) / 4) = sqrt(0.00075) = 0.027386
    assert r["n"] == 5 and r["diff"] == pytest.approx(0.07)
    assert r["sd"] == pytest.approx(math.sqrt(0.00075))
    # t_{0.975, 4} = 2.776445; half width = 2.776445 * 0.027386 / sqrt(5) = 0.034004
    assert r["ci_low"] == pytest.approx(0.07 - 0.034004, abs=1e-5)
    assert r["ci_high"] == pytest.approx(0.07 + 0.034004, abs=1e-5)
    # t = 0.07 / (0.027386 / sqrt(5)) = 5.7155, two-sided p with 4 df = 0.00463
    assert r["t_p"] == pytest.approx(0.00463, abs=2e-4)
    # Wilcoxon: all 5 differences positive -> W- = 0, exact two-sided p = 2 / 2^5 = 0.0625
    assert r["wilcoxon_p"] == pytest.approx(0.0625)
    assert significant(r) is False  # five seeds all one way: Wilcoxon p = 0.0625, not below 0.05
    assert "no significant difference" in claim_sentence("accuracy", r, a="GRPO", b="MRPO")


def test_paired_edge_cases():
    one = paired_over_seeds([0.5], [0.6])
    assert one["diff"] == pytest.approx(0.1) and one["ci_low"] is None and one["t_p"] is None
    assert "one seed" in claim_sentence("accuracy", one, a="A", b="B")
    same = paired_over_seeds([0.5, 0.6], [0.5, 0.6])
    assert same["diff"] == 0 and same["t_p"] is None and significant(same) is False
    assert same["ci_low"] is None and same["ci_high"] is None  # no spread over seeds: no [0, 0] interval
    gap = paired_over_seeds([0.5, None, 0.4], [0.6, 0.7, None])
    assert gap["n"] == 1 and gap["dropped"] == 2
    with pytest.raises(ValueError, match="baseline"):
        paired_over_seeds([0.1], [0.1, 0.2])


def test_significant_claim_sentence_and_direction():
    a = [0.40, 0.42, 0.38, 0.41, 0.39, 0.40, 0.43, 0.37]
    b = [0.30, 0.31, 0.29, 0.30, 0.28, 0.31, 0.32, 0.27]
    r = paired_over_seeds(a, b)  # every seed lower by 0.09-0.11: Wilcoxon exact p = 2/256
    assert r["wilcoxon_p"] == pytest.approx(2 / 256) and significant(r)
    s = claim_sentence("early-failure share", r, a="GRPO", b="MRPO", lower_is_better=True)
    assert "supports the claim" in s
    s = claim_sentence("accuracy", r, a="GRPO", b="MRPO")
    assert "against the claim" in s


def test_mean_over_seeds_and_proportions_by_hand():
    m = mean_over_seeds([1.0, 2.0, 3.0])
    # mean 2, sd 1, t_{0.975, 2} = 4.302653 -> half width 4.302653 / sqrt(3) = 2.484138
    assert m["mean"] == 2.0 and m["sd"] == 1.0
    assert m["ci_high"] == pytest.approx(2 + 2.484138, abs=1e-5)
    # Wilson, k = 8, n = 10, z = 1.959964: centre (0.8 + z^2 / 20) / (1 + z^2 / 10) = 0.992073 / 1.384146 = 0.71674,
    # half width z / (1 + z^2/10) * sqrt(0.8 * 0.2 / 10 + z^2 / 400) = 1.959964 * 0.160011 / 1.384146 = 0.22658
    w = proportion_ci(8, 10)
    assert w["low"] == pytest.approx(0.71674 - 0.22658, abs=1e-4)
    assert w["high"] == pytest.approx(0.71674 + 0.22658, abs=1e-4)
    # Clopper-Pearson for 0 of 10: [0, 1 - 0.025^(1/10)] = [0, 0.30850]
    e = proportion_ci(0, 10, method="exact")
    assert e["low"] == 0.0 and e["high"] == pytest.approx(0.30850, abs=1e-4)
    assert proportion_ci(0, 0)["p"] is None
    with pytest.raises(ValueError):
        proportion_ci(3, 2)


def test_minimum_detectable_difference_has_80_percent_power():
    """The difference statsmodels finds is the one the paired t-test detects 80% of the time:
    checked against the power computed directly from the noncentral t distribution (two-sided,
    alpha 0.05, noncentrality d * sqrt(n) / sd, n - 1 degrees of freedom)."""
    from scipy import stats

    sd, n = math.sqrt(0.00075), 5  # the spread of test_paired_over_seeds_by_hand
    mde = min_detectable_difference(sd, n)
    crit = stats.t.ppf(0.975, n - 1)
    nc = mde / sd * math.sqrt(n)
    power = stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)
    assert power == pytest.approx(0.8, abs=1e-4)
    assert mde == pytest.approx(1.682 * sd, rel=1e-3)  # d = 1.682 for n = 5 (tables of the one-sample t power)
    r = paired_over_seeds([0.50, 0.40, 0.60, 0.55, 0.45], [0.60, 0.45, 0.70, 0.60, 0.50])
    assert r["mde"] == pytest.approx(mde)
    assert "minimum detectable difference at 80% power 4.6 pp" in claim_sentence("accuracy", r, a="A", b="B")
    # more seeds, smaller detectable difference; none without spread or with one seed
    assert min_detectable_difference(sd, 8) < mde
    assert min_detectable_difference(0.0, 8) is None and min_detectable_difference(sd, 1) is None
    assert paired_over_seeds([0.5], [0.6])["mde"] is None
