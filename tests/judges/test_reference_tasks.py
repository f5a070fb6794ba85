"""medrl.judges.reference.tasks: the reference judge's consistency (CAPO Eq. 1), report grade
(MediX-R1 Sec. 3), VQA audit (ARMed) and key steps (StepGRPO Sec. 3.2.2), as pure functions."""

from __future__ import annotations

import pytest

from medrl.judges.reference.tasks import audit_vqa, consistent, key_steps, report_grade

Q = "Is there a pleural effusion?"


@pytest.mark.parametrize("reasoning, answer, ok, why", [
    ("The lungs are clear. There is a pleural effusion on the left.", "yes", True,
     "reasoning concludes yes, answer yes"),
    ("The lungs are clear. No pleural effusion is seen.", "yes", False, "reasoning concludes no, answer yes"),
    ("The lungs are clear. No pleural effusion is seen.", "no", True, "reasoning concludes no, answer no"),
    ("", "yes", False, "empty reasoning"),
])
def test_yes_no_consistency(reasoning, answer, ok, why):
    assert consistent(Q, reasoning, answer) == (ok, why)


def test_open_answer_must_follow_the_last_sentences():
    q = "Which side is the mass?"
    r = "A mass is seen. It lies in the left lung."
    assert consistent(q, r, "left lung") == (True, "answer follows the final reasoning (coverage 1.00)")
    assert consistent(q, r, "right lung") == (False, "answer contradicts the conclusion (left/right)")
    # "no evidence of X" while answering X
    ok, why = consistent("What organ?", "The image shows the abdomen. There is no evidence of splenomegaly.",
                         "splenomegaly")
    assert (ok, why) == (False, "the reasoning negates the answer")
    ok, why = consistent(q, "A mass is seen. It is round.", "kidney")
    assert not ok and why.startswith("answer not in the final reasoning (coverage 0.00")


def test_report_grade_is_five_times_token_f1_rounded():
    assert report_grade("large left pleural effusion", "large left pleural effusion") == (5.0, "token F1 1.00")
    # 3 of 4 reference words, no extra: P=1, R=3/4, F1=6/7=0.857 -> round(4.29) = 4
    assert report_grade("large left pleural effusion", "left pleural effusion") == (4.0, "token F1 0.86")
    assert report_grade("large left pleural effusion", "") == (0.0, "empty")


@pytest.mark.parametrize("question, answer, status", [
    ("What organ is shown?", "yes", "drop"),          # wh-question answered yes/no
    ("Is the liver enlarged?", "hepatomegaly", "needs_fix"),
    ("Is the liver enlarged?", "yes", "consistent"),
    ("Is it the left or the right kidney?", "left", "consistent"),  # "or" question: open answer fits
    ("", "yes", "drop"),
])
def test_audit_vqa(question, answer, status):
    out = audit_vqa(question, answer)
    assert out["status"] == status
    assert out["new_q"] == question and out["new_a"] == answer  # never rewritten by the reference judge
    assert out["notes"].startswith("heuristic:")


def test_key_steps_are_verbatim_spans_skipping_meta_talk_and_keeping_negation():
    reasoning = ("I will look at the chest. The CT of the chest shows a left pleural effusion. "
                 "There is no pneumothorax in the right lung.")
    steps = key_steps("Which side is the effusion?", "left", reasoning)
    assert steps == ["chest shows a left pleural effusion", "no pneumothorax in the right lung"]
    assert all(s in reasoning for s in steps)
    assert all(len(s.split()) <= 6 for s in steps)


def test_key_steps_at_most_six():
    reasoning = " ".join(f"The liver lesion number {i} is seen." for i in range(10))
    assert len(key_steps("Where is the lesion?", "liver", reasoning)) <= 6
