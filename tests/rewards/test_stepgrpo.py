"""StepGRPO rewards (004_e0b907c1e61319f8.txt Eq. 2-3); embedding matching is in
test_rewards_semantic.py."""

import pytest

from medrl.rewards import REWARDS
from medrl.rewards.stepgrpo import accuracy_reward, key_step_ratio, validity_parts, validity_reward

REASONING = "The CT shows a mass in the left kidney. It enhances after contrast."


def resp(answer, think=REASONING):
    return f"<think>{think}</think><answer>{answer}</answer>"


def test_accuracy_reward_eq2():
    # correct: 1 + 0.1 * 0.5 = 1.05; wrong: 0.1 * 0.5 = 0.05; no answer: 0
    assert accuracy_reward(True, True, 0.5) == pytest.approx(1.05)
    assert accuracy_reward(True, False, 0.5) == pytest.approx(0.05)
    assert accuracy_reward(False, False, 1.0) == 0.0
    assert accuracy_reward(True, True, 1.0, alpha=0.2) == pytest.approx(1.2)


def test_key_step_ratio_substring():
    # "left kidney" found; second step matches through its equivalent form "mass";
    # "hydronephrosis" missing -> k = 2/3
    keys = ["left kidney", ["renal mass", "mass"], "hydronephrosis"]
    assert key_step_ratio(REASONING, keys) == pytest.approx(2 / 3)
    # whole words only: "mass" does not match "massive"
    assert key_step_ratio("A massive lesion.", ["mass"]) == 0.0
    assert key_step_ratio(None, ["mass"]) == 0.0
    with pytest.raises(ValueError):
        key_step_ratio(REASONING, [])
    with pytest.raises(ValueError):
        key_step_ratio(REASONING, ["mass"], mode="psychic")


def test_key_step_ratio_fuzzy():
    # "left kidny" (10 chars) vs the window "left kidney" (11): 10 matching characters,
    # ratio = 2 * 10 / 21 = 0.952 >= 0.85 -> match; substring mode misses it
    assert key_step_ratio(REASONING, ["left kidny"], mode="substring") == 0.0
    assert key_step_ratio(REASONING, ["left kidny"], mode="fuzzy") == 1.0
    assert key_step_ratio(REASONING, ["left kidny"], mode="fuzzy", threshold=0.99) == 0.0
    assert key_step_ratio(REASONING, ["pulmonary embolism"], mode="fuzzy") == 0.0


GOOD = ("The chest X-ray shows an opacity in the right lower lobe. "
        "Opacity with fever suggests infection. Consolidation is typical for pneumonia.")


def test_validity_reward_eq3_heuristic():
    assert validity_reward(resp("pneumonia", GOOD)) == 1.0
    # no background/description step
    no_bg = "Fever suggests infection. Consolidation is typical for pneumonia. Therefore pneumonia."
    assert validity_parts(resp("pneumonia", no_bg))["background"] is None
    assert validity_reward(resp("pneumonia", no_bg)) == 0.0
    # description only at the end: complete but not logical
    late = no_bg + " The X-ray shows an opacity."
    parts = validity_parts(resp("pneumonia", late))
    assert parts["complete"] and not parts["logical"]
    assert validity_reward(resp("pneumonia", late)) == 0.0
    # too few steps after the background
    assert validity_reward(resp("pneumonia", "The X-ray shows an opacity. So pneumonia.")) == 0.0
    # no final answer, or the answer before the reasoning
    assert validity_reward(resp("", GOOD)) == 0.0
    assert validity_reward(f"<answer>pneumonia</answer><think>{GOOD}</think>") == 0.0


def test_steprar_callable():
    fn = REWARDS.get("steprar")()
    keys = [["left kidney", "mass", "hydronephrosis"]] * 4
    comps = [resp("renal mass"), resp("cyst"), "<think>x</think>", resp("renal mass")]
    answers = ["Renal mass", "renal mass", "renal mass", None]
    # k = 2/3: correct -> 1 + 0.1 * 2/3 = 1.066667; wrong -> 0.066667; no answer -> 0; no ref -> None
    out = fn(["p"] * 4, comps, answer=answers, key_steps=keys)
    assert out == [pytest.approx(1 + 0.2 / 3), pytest.approx(0.2 / 3), 0.0, None]
    # key steps missing -> unscorable by default, k = 0 with missing_key_steps="zero"
    assert fn(["p"], comps[:1], answer=answers[:1], key_steps=[None]) == [None]
    fn0 = REWARDS.get("steprar")(missing_key_steps="zero")
    assert fn0(["p"], comps[:1], answer=answers[:1], key_steps=[[]]) == [1.0]
    # a judge verdict column decides correctness: wrong -> 0.1 * 2/3
    assert fn(["p"], comps[:1], answer=answers[:1], key_steps=keys[:1], correct=[False]) == [
        pytest.approx(0.2 / 3)]
    with pytest.raises(ValueError):
        REWARDS.get("steprar")(match="nope")


def test_steprvr_callable():
    fn = REWARDS.get("steprvr")()
    assert fn(["p", "p"], [resp("pneumonia", GOOD), "junk"]) == [1.0, 0.0]
