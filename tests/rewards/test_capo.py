"""CAPO rewards (002_37d042df30c2f660.txt Eq. 2-4) and the shared correctness heuristic."""

import pytest

from medrl.rewards import REWARDS
from medrl.rewards.capo import decision_accuracy_reward, perception_consistency_reward, total_reward
from medrl.rewards.correctness import decide_exact, normalize_answer


def resp(answer):
    return f"<think>The image shows the chest.</think><answer>{answer}</answer>"


def test_normalize_answer():
    assert normalize_answer("  The Left-Lung. ") == "left lung"
    assert normalize_answer(None) == ""


def test_decide_exact():
    assert decide_exact("The left lung.", "left lung")
    assert not decide_exact("right lung", "left lung")
    # yes/no references: first word decides
    assert decide_exact("Yes, there is a mass", "yes")
    assert not decide_exact("no", "Yes")
    assert not decide_exact("", "yes") and not decide_exact(None, "yes")
    # rouge1 rule: pred {left, lower, lobe} vs ref {lower, lobe, of, the, left, lung}: overlap 3,
    # P = 1, R = 3/6 = 0.5, F = 2 * 0.5 / 1.5 = 0.667 >= 0.5
    assert decide_exact("left lower lobe", "lower lobe of the left lung", rule="rouge1")
    assert not decide_exact("left lower lobe", "lower lobe of the left lung")
    assert not decide_exact("left lower lobe", "lower lobe of the left lung", rule="rouge1", threshold=0.7)
    with pytest.raises(ValueError):
        decide_exact("a", "b", rule="magic")


def test_decision_accuracy_eq2():
    assert decision_accuracy_reward(True) == 0.8
    assert decision_accuracy_reward(False) == 0.0


@pytest.mark.parametrize("ok, ok_corrupted, expected", [
    (True, False, 0.1),   # 0.8 - 0 = 0.8 > 0.3
    (True, True, 0.0),    # 0.8 - 0.8 = 0
    (False, True, 0.0),   # 0 - 0.8 = -0.8
    (False, False, 0.0),  # 0
])
def test_perception_consistency_eq3(ok, ok_corrupted, expected):
    assert perception_consistency_reward(ok, ok_corrupted) == expected


def test_perception_consistency_threshold():
    # r_dar 0.2: gap 0.2 - 0 = 0.2 is not > tau 0.3
    assert perception_consistency_reward(True, False, r_dar=0.2) == 0.0
    # tau 0.1: gap 0.2 > 0.1
    assert perception_consistency_reward(True, False, r_dar=0.2, tau=0.1) == 0.1
    # Eq. 3 is strict (002_37d042df30c2f660.txt line 81, "> tau_pcr"): r_dar 0.3 gives a gap of
    # exactly 0.3 - 0 = 0.3, which is not > 0.3 -> 0
    assert perception_consistency_reward(True, False, r_dar=0.3) == 0.0


def test_total_eq4():
    # 0.1 + 0.1 + 0.8 = 1.0
    assert total_reward(0.1, 0.1, 0.8) == pytest.approx(1.0)


def test_capo_accuracy_callable():
    fn = REWARDS.get("capo_accuracy")()
    comps = [resp("left lung"), resp("right lung"), resp("left lung"), "no answer"]
    answers = ["Left lung", "left lung", None, "left lung"]
    assert fn(["p"] * 4, comps, answer=answers) == [0.8, 0.0, None, 0.0]
    # judge verdicts in a `correct` column win, except over the guard: "right lung" for "left lung"
    # (side flipped) and a missing answer can never be correct, whatever the column says; a row the
    # column leaves unscorable (None: a judge outage, a completion with two answers) stays unscorable
    assert fn(["p"] * 4, comps, answer=answers, correct=[False, True, True, True]) == [0.0, 0.0, 0.8, 0.0]
    assert fn(["p"] * 4, comps, answer=answers, correct=[False, True, True, None]) == [0.0, 0.0, 0.8, None]
    # None in it = undecided = unscorable
    assert fn(["p"], [resp("the left lung")], answer=["left lung"], correct=[None]) == [None]
    # ...unless told to ignore it
    fn2 = REWARDS.get("capo_accuracy")(use_correct_column=False)
    assert fn2(["p"] * 4, comps, answer=answers, correct=[False, True, True, None]) == [0.8, 0.0, None, 0.0]
    with pytest.raises(ValueError, match="correct"):
        fn(["p"], comps[:1], answer=answers[:1], correct=["yes"])


def test_capo_perception_callable_pairs_ith_rollouts():
    fn = REWARDS.get("capo_perception")()
    comps = [resp("left lung"), resp("left lung"), resp("right lung"), resp("left lung")]
    corrupted = [resp("heart"), resp("left lung"), resp("heart"), None]
    out = fn(["p"] * 4, comps, answer=["left lung"] * 4, corrupted_completions=corrupted)
    # row 0: right vs wrong -> 0.1; row 1: both right -> 0; row 2: both wrong -> 0; row 3: no pair
    assert out == [0.1, 0.0, 0.0, None]
    with pytest.raises(ValueError, match="corrupted_completions"):
        fn(["p"], comps[:1], answer=["left lung"])
    # verdict columns for both rollouts
    out = fn(["p"] * 2, comps[:2], answer=["x", "x"], corrupted_completions=corrupted[:2],
             correct=[True, True], corrupted_correct=[False, None])
    assert out == [0.1, None]
