"""ARMed rewards (001_46ab1c0cc2c66f17.txt Eq. 3-14): formulas and the adaptive threshold.

Model-free: the callables that need BERTScore/embeddings are in test_rewards_semantic.py.
"""

import json
import math

import pytest

from medrl.rewards.armed import (
    AdaptiveThreshold,
    adapt_map,
    semantic_reward,
    textual_reward,
    total_reward,
)


def test_textual_reward_eq3():
    # 0.5 * BLEU-1 0.6 + 0.5 * ROUGE-1 0.8 = 0.3 + 0.4 = 0.7
    assert textual_reward(0.6, 0.8) == pytest.approx(0.7)
    # lambda1 = 0.25: 0.25 * 0.6 + 0.75 * 0.8 = 0.15 + 0.6 = 0.75
    assert textual_reward(0.6, 0.8, lambda1=0.25) == pytest.approx(0.75)


def test_semantic_reward_eq4():
    # 0.2 * BERTScore 0.9 + 0.8 * Cos 0.5 = 0.18 + 0.40 = 0.58
    assert semantic_reward(0.9, 0.5) == pytest.approx(0.58)


def test_total_reward_eq14():
    # (0.4 * 0.7 + 0.4 * 0.58 + 0.2 * 1) / (0.4 + 0.4 + 0.2) = (0.28 + 0.232 + 0.2) / 1 = 0.712
    assert total_reward(0.7, 0.58, 1.0) == pytest.approx(0.712)
    # gammas (1, 1, 2): (0.7 + 0.58 + 2 * 1) / 4 = 3.28 / 4 = 0.82
    assert total_reward(0.7, 0.58, 1.0, gammas=(1, 1, 2)) == pytest.approx(0.82)
    with pytest.raises(ValueError):
        total_reward(0.7, 0.58, 1.0, gammas=(0, 0, 0))


def test_adapt_map_eq10_12():
    # T = 0.5, so 1 - T = 0.5
    # r = 0.75: r_hat = 0.25 / 0.5 = 0.5 >= 0 -> 0.5 * (1 + tanh(5 * 0.5)) = 0.5 * 1.986614 = 0.993307
    assert adapt_map(0.75, 0.5) == pytest.approx(0.993307, abs=1e-6)
    # r = 0.25: r_hat = -0.5 -> 0.5 * (1 + tanh(2 * -0.5)) = 0.5 * (1 - 0.761594) = 0.119203
    assert adapt_map(0.25, 0.5) == pytest.approx(0.119203, abs=1e-6)
    # r = T: r_hat = 0 -> 0.5 exactly
    assert adapt_map(0.5, 0.5) == pytest.approx(0.5)
    # r = 0: r_hat = -1 -> 0.5 * (1 - tanh 2) = 0.5 * (1 - 0.964028) = 0.017986
    assert adapt_map(0.0, 0.5) == pytest.approx(0.017986, abs=1e-6)
    # r = -3 (a cosine can be negative): r_hat clipped to -1, same as r = 0
    assert adapt_map(-3.0, 0.5) == pytest.approx(adapt_map(0.0, 0.5))
    # r = 1: r_hat = 1 -> 0.5 * (1 + tanh 5) = 0.999955
    assert adapt_map(1.0, 0.5) == pytest.approx(0.999955, abs=1e-6)


def test_adaptive_threshold_three_steps_by_hand():
    a = AdaptiveThreshold(max_history=4, initial_threshold=0.5)  # rho 0.8, p 50, delta 0.01
    # Step 1, T_0 = 0.5. Filter r > max(0, 0.8 * 0.5) = 0.4 -> {0.9, 0.8}; H = [0.9, 0.8];
    # T* = median = 0.85; dT = clip(0.35, +-0.01) = 0.01; T_1 = 0.51 (the batch uses T_1).
    out = a([0.9, 0.3, 0.8])
    assert a.threshold == pytest.approx(0.51)
    assert list(a.history) == [0.9, 0.8]
    # 0.9: r_hat = 0.39 / 0.49 = 0.795918 -> 0.5 * (1 + tanh(3.979592)) = 0.999651
    # 0.3: r_hat = -0.21 / 0.49 = -0.428571 -> 0.5 * (1 + tanh(-0.857143)) = 0.152609
    # 0.8: r_hat = 0.29 / 0.49 = 0.591837 -> 0.5 * (1 + tanh(2.959184)) = 0.997318
    assert out == pytest.approx([0.999651, 0.152609, 0.997318], abs=1e-5)

    # Step 2, T_1 = 0.51. Filter r > 0.408 -> {0.7, 0.6, 0.95}; H = [0.9, 0.8, 0.7, 0.6, 0.95]
    # truncated to the newest 4: [0.8, 0.7, 0.6, 0.95]; median = (0.7 + 0.8) / 2 = 0.75;
    # dT = clip(0.24) = 0.01; T_2 = 0.52.
    out = a([0.2, 0.7, 0.6, 0.95])
    assert a.threshold == pytest.approx(0.52)
    assert list(a.history) == [0.8, 0.7, 0.6, 0.95]
    # 0.2: r_hat = -0.32 / 0.48 = -0.666667 -> 0.5 * (1 + tanh(-1.333333)) = 0.064969
    # 0.7: r_hat = 0.18 / 0.48 = 0.375 -> 0.5 * (1 + tanh(1.875)) = 0.977023
    # 0.6: r_hat = 0.08 / 0.48 = 0.166667 -> 0.5 * (1 + tanh(0.833333)) = 0.841131
    # 0.95: r_hat = 0.43 / 0.48 = 0.895833 -> 0.5 * (1 + tanh(4.479167)) = 0.999871
    assert out == pytest.approx([0.064969, 0.977023, 0.841131, 0.999871], abs=1e-5)

    # Step 3, T_2 = 0.52. Filter r > 0.416 -> {0.45, 0.42}; H -> newest 4 of
    # [0.8, 0.7, 0.6, 0.95, 0.45, 0.42] = [0.6, 0.95, 0.45, 0.42]; sorted [0.42, 0.45, 0.6, 0.95],
    # median = (0.45 + 0.6) / 2 = 0.525; dT = 0.005 (inside +-0.01); T_3 = 0.525.
    out = a([0.45, 0.42, 0.1])
    assert a.threshold == pytest.approx(0.525)
    # 0.45: r_hat = -0.075 / 0.475 = -0.157895 -> 0.5 * (1 + tanh(-0.315789)) = 0.347153
    # 0.42: r_hat = -0.105 / 0.475 = -0.221053 -> 0.5 * (1 + tanh(-0.442105)) = 0.292306
    # 0.1:  r_hat = -0.425 / 0.475 = -0.894737 -> 0.5 * (1 + tanh(-1.789474)) = 0.027148
    assert out == pytest.approx([0.347153, 0.292306, 0.027148], abs=1e-5)
    assert a.steps == 3

    # Frozen (evaluation): maps with T_3 and changes nothing.
    a.frozen = True
    before = a.state_dict()
    assert a([0.525]) == pytest.approx([0.5])
    assert a.state_dict() == before


def test_adaptive_threshold_bounds_and_empty_filter():
    # T_0 = 0.99, all rewards 1.0: T* = 1.0, dT = 0.01, 0.99 + 0.01 = 1.0 clipped to T_max 0.995
    a = AdaptiveThreshold(initial_threshold=0.99)
    a([1.0, 1.0])
    assert a.threshold == pytest.approx(0.995)
    # nothing passes the filter and the history is empty: T stays
    b = AdaptiveThreshold(initial_threshold=0.5)
    b([0.1, 0.2])  # cut 0.4
    assert b.threshold == pytest.approx(0.5) and not b.history
    # Eq. 5 is strict (r > max(0, rho * T_t)): with T_0 = 0.5 the cut is 0.8 * 0.5 = 0.4, so a
    # reward of exactly 0.4 is left out of the history; 0.9 enters; T* = 0.9 -> T_1 = 0.51
    c = AdaptiveThreshold(initial_threshold=0.5)
    c([0.4, 0.9])
    assert list(c.history) == [0.9] and c.threshold == pytest.approx(0.51)
    # with T_t = 0 the cut is max(0, 0) = 0: a zero reward is not valid, any positive one is
    d = AdaptiveThreshold(initial_threshold=0.0)
    d([0.0, 0.3])
    assert list(d.history) == [0.3] and d.threshold == pytest.approx(0.01)


def test_adaptive_threshold_warm_start():
    # T_0 = median of the positive rewards {0.9, 0.8, 0.7} = 0.8; filter r > 0.64 keeps them;
    # T* = 0.8, dT = 0, T_1 = 0.8
    a = AdaptiveThreshold()
    out = a([0.9, 0.8, 0.0, 0.7])
    assert a.threshold == pytest.approx(0.8)
    # the reward at the threshold maps to 0.5
    assert out[1] == pytest.approx(0.5)
    # a first batch with no positive reward starts at T_min = 0
    b = AdaptiveThreshold()
    b([0.0, -0.2])
    assert b.threshold == 0.0


def test_adaptive_threshold_none_rows():
    a = AdaptiveThreshold(initial_threshold=0.5)
    out = a([None, 0.75, None])
    assert out[0] is None and out[2] is None
    # one valid value 0.75 -> T* = 0.75 -> T_1 = 0.51; r_hat = 0.24 / 0.49
    assert out[1] == pytest.approx(0.5 * (1 + math.tanh(5 * 0.24 / 0.49)), abs=1e-6)
    assert a([None, None]) == [None, None]
    assert a.steps == 1  # an all-None batch is not a step


def test_adaptive_threshold_state_round_trip():
    a = AdaptiveThreshold(max_history=4, initial_threshold=0.5)
    a([0.9, 0.3, 0.8])
    a([0.2, 0.7, 0.6, 0.95])
    state = json.loads(json.dumps(a.state_dict()))  # survives a JSON checkpoint
    b = AdaptiveThreshold(max_history=4, initial_threshold=0.1)
    b.load_state_dict(state)
    assert b.threshold == a.threshold and list(b.history) == list(a.history) and b.steps == 2
    batch = [0.45, 0.42, 0.1]
    assert b(batch) == a(batch)
    assert b.state_dict() == a.state_dict()
    with pytest.raises(KeyError):
        b.load_state_dict({"threshold": 0.5})


def test_adaptive_threshold_bad_options():
    with pytest.raises(ValueError):
        AdaptiveThreshold(percentile=150)
    with pytest.raises(ValueError):
        AdaptiveThreshold(t_max=1.0)
