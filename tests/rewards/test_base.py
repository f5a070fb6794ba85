"""medrl.rewards.base: a completion whose answer cannot be read (two answer blocks, text after the
answer) is UNSCORABLE for every answer reward, never scored by its first block."""

from __future__ import annotations

from medrl.rewards import REWARDS
from medrl.rewards.base import answer_rows, unreadable_rows

T = "<think>The lesion sits in the left kidney.</think>"
COMPLETIONS = [f"{T}<answer>Left kidney</answer><answer>Right kidney</answer>",
               f"{T}<answer>Left kidney</answer> Actually, it is the right kidney.",
               f"{T}<answer>Left kidney</answer>", f"{T}<answer>Right kidney</answer>"]


def test_unreadable_rows_are_left_out_of_the_scored_rows():
    cols = {"answer": ["Left kidney"] * 4}
    parsed, refs, idx = answer_rows(COMPLETIONS, cols, reward="t")
    assert unreadable_rows(parsed, refs) == [0, 1] and idx == [2, 3]
    assert parsed[0].answer is None and parsed[0].answer_problem.startswith("multiple_answers")


def test_an_answer_metric_marks_them_unscorable():
    r = REWARDS.get("rouge1")()
    out = r(["q"] * 4, COMPLETIONS, answer=["Left kidney"] * 4, question=["Where?"] * 4)
    assert out[:2] == [None, None] and r.last_unscorable == [0, 1]
    assert out[2] == 1.0 and out[3] == 0.0  # the other side: a contradiction, the metric's minimum
