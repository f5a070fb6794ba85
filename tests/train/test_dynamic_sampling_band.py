"""MediX-R1's mean-reward band for dynamic sampling (medrl.train.dynamic_sampling ``mean_band``;
EasyR1 online filter 0.01 < mean < 0.99), decided by hand."""

from __future__ import annotations

import pytest

from medrl.train.dynamic_sampling import DynamicSamplingConfig, flat_groups

NAN = float("nan")


def test_band_keeps_groups_whose_mean_is_strictly_inside():
    w = [0.1, 0.9]
    # G = 2. group 0: totals 1.0, 1.0 -> mean 1.0 (dropped); group 1: 0.1, 0.0 -> 0.05 (kept);
    # group 2: 0.0, 0.0 -> 0 (dropped); group 3: 0.5, 0.5 (all equal, mean 0.5: kept, as EasyR1)
    m = [[1, 1], [1, 1], [1, 0], [0, 0], [0, 0], [0, 0], [0.5, 0.5], [0.5, 0.5]]
    assert flat_groups(m, w, 2, mean_band=(0.01, 0.99)) == [True, False, True, False]
    assert flat_groups(m, w, 2) == [True, False, True, True]  # DAPO's criterion: all equal
    # the band is open: a mean of exactly 0.99 is outside; 0.985 inside (totals 0.99 and 0.98)
    assert flat_groups([[0.99, 0.99], [0.99, 0.99]], [0.5, 0.5], 2, mean_band=(0.01, 0.99)) == [True]
    assert flat_groups([[0.99, 0.99], [0.98, 0.98]], [0.5, 0.5], 2, mean_band=(0.01, 0.99)) == [False]
    # rows no reward scored are left out; fewer than two scored rows: dropped
    assert flat_groups([[NAN, NAN], [0.5, 0.5]], [1, 1], 2, mean_band=(0.01, 0.99)) == [True]


def test_band_config():
    cfg = DynamicSamplingConfig.from_value({"mean_band": [0.01, 0.99]})
    assert cfg.enabled and cfg.mean_band == (0.01, 0.99) and cfg.max_rounds == 4
    assert DynamicSamplingConfig.from_value(True).mean_band is None
    for bad in ([0.5], [0.9, 0.1], "0.1,0.9", [0.1, float("nan")], ["a", "b"]):
        with pytest.raises(ValueError, match="mean_band"):
            DynamicSamplingConfig.from_value({"mean_band": bad})


def test_dapo_recipe_sets_medix_band():
    from medrl.train.recipes import load_recipe

    alg = load_recipe("dapo").algorithm
    # dynamic sampling on (DAPO), with the band MediX-R1's config turns on (its EasyR1 filter)
    assert alg["dynamic_sampling"] is True and tuple(alg["medix_r1"]["mean_band"]) == (0.01, 0.99)
