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
    assert out[:2] == [None, None] and out.unscorable == (0, 1)
    assert out[2] == 1.0 and out[3] == 0.0  # the other side: a contradiction, the metric's minimum


# every reward that reads the answer, with the columns it needs: a completion with no one answer
# is unscorable for each (whether or not a trainer's `correct` column is there), and the same
# completion with its one answer stays scored
_ANSWER_REWARDS = ["rouge1", "mrpo_answer", "capo_accuracy", "capo_perception", "steprar", "capo_consistency",
                   "medix_llm"]


def _score(name, completions, ref, question):
    import inspect

    from medrl.judges.base import run_sync

    n = len(completions)
    cols = dict(answer=[ref] * n, question=[question] * n, key_steps=[[ref]] * n, key_step_forms=[[]] * n,
                corrupted_completions=[f"{T}<answer>{ref}</answer>"] * n)
    out = REWARDS.get(name)()(["q"] * n, completions, **cols)
    return run_sync(out) if inspect.isawaitable(out) else out


def test_every_answer_reward_leaves_generated_unreadable_completions_unscored():
    import random

    from medrl.answers.generators import completion_variants

    rng = random.Random(7)
    for ref, question in [("Left kidney", "Where is the lesion?"), ("liver", "Which organ is shown?"),
                          ("MRI", "What modality is this?")]:
        variants = completion_variants(ref, question, rng)
        flips = [v.text for v in variants if v.expect == "flip"]
        assert flips
        for name in _ANSWER_REWARDS:
            scores = _score(name, flips, ref, question)
            paid = [(t, s) for t, s in zip(flips, scores) if s is not None]
            assert not paid, (name, paid)
            plain = _score(name, [f"{T}<answer>{ref}</answer>"], ref, question)
            assert plain[0] is not None, name  # the meaning-keeping side: one answer stays scored
