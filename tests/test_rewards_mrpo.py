"""MRPO rewards (000_20b05565d28598f4.txt Eq. 2, 4, 5); R_ans with BERTScore is in
test_rewards_semantic.py."""

import pytest

from medrl.rewards import REWARDS
from medrl.rewards.mrpo import answer_reward, length_reward, process_reward, total_reward


def test_answer_reward_eq2():
    # 0.25 * (ROUGE-1 0.8 + BLEU-1 0.6) + 0.5 * BERTScore 0.9 = 0.35 + 0.45 = 0.8
    assert answer_reward(0.8, 0.6, 0.9) == pytest.approx(0.8)
    # all perfect: 0.25 * 2 + 0.5 = 1.0
    assert answer_reward(1.0, 1.0, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize("k, expected", [
    (0, -1.0),    # -(4 - 0) / 4
    (2, -0.5),    # -(4 - 2) / 4
    (3, -0.25),   # -(4 - 3) / 4
    (4, 0.0), (7, 0.0), (10, 0.0),
    (11, -0.1),   # -(11 - 10) / 10
    (13, -0.3),   # -(13 - 10) / 10
])
def test_length_reward_eq4(k, expected):
    assert length_reward(k) == pytest.approx(expected)


def test_length_reward_bad_bounds():
    with pytest.raises(ValueError):
        length_reward(3, k_min=5, k_max=4)


def test_total_reward_eq5():
    # R_ans 0.8 + mean(1, 0, 1, 1) = 0.75 + R_len 0 -> 1.55
    assert total_reward(0.8, [True, False, True, True], 0.0) == pytest.approx(1.55)
    # K = 0: process term 0; 0.5 + 0 - 1 = -0.5
    assert total_reward(0.5, [], -1.0) == pytest.approx(-0.5)
    assert process_reward([False, False]) == 0.0


def test_mrpo_length_callable_counts_sentence_steps():
    fn = REWARDS.get("mrpo_length")()
    three = "<think>The image is a CT. The liver is enlarged. No focal lesion is seen.</think><answer>liver</answer>"
    five = ("<think>1. Axial CT of the abdomen.\n2. The liver is enlarged.\n3. Margins are smooth.\n"
            "4. No focal lesion.\n5. Hence hepatomegaly.</think><answer>hepatomegaly</answer>")
    # K = 3 -> -(4 - 3) / 4 = -0.25; K = 5 -> 0; no <think> -> K = 0 -> -1
    assert fn(["p"] * 3, [three, five, "<answer>liver</answer>"]) == [-0.25, 0.0, -1.0]
    # K_min = 2, K_max = 2: K = 3 -> -(3 - 2) / 2 = -0.5
    assert REWARDS.get("mrpo_length")(k_min=2, k_max=2)(["p"], [three]) == [-0.5]
    with pytest.raises(ValueError):
        REWARDS.get("mrpo_length")(k_min=0)
