"""A clinician's wording of the right answer, read as the decision reads it: contrast and
correction, check lists, translations beside the answer (medrl.answers.compose), double negation,
certainty, reported speech, counts in words, laterality words (the listed rewrites), directional
marks outside words, and yes/no polarity read from the whole answer
(medrl.answers.equivalence.polarity). Each wording both ways: the right answer is accepted (or
left to an LLM judge, never refused before it), the turned one never paid. The generated classes
(medrl.answers.generators, WORDING_CLASSES) run the same through Hypothesis in test_generators.py;
the rates on real references are in docs/judges.md."""

from __future__ import annotations

import pytest

from medrl.answers import Reason, Verdict, decide, override
from medrl.answers.compose import claims, gloss
from medrl.answers.equivalence.polarity import BOTH, yes_no_polarity

Q = "What is the abnormality?"


def accepted(answer, ref, question=Q):
    d, o = decide(answer, ref, question=question), override(answer, ref, question=question)
    return d.verdict is Verdict.CORRECT and o.verdict is not Verdict.WRONG


def never_paid(answer, ref, question=Q):
    d, o = decide(answer, ref, question=question), override(answer, ref, question=question)
    return d.verdict is not Verdict.CORRECT and o.verdict is not Verdict.CORRECT


@pytest.mark.parametrize("right,turned", [
    ("not pneumonia but pneumothorax", "not pneumothorax but pneumonia"),
    ("Pneumothorax rather than pneumonia", "Pneumonia rather than pneumothorax"),
    ("Pneumothorax instead of pneumonia", "Pneumonia instead of pneumothorax"),
    ("Pneumothorax, not pneumonia", "Pneumonia, not pneumothorax"),
    ("Pneumonia ruled out; pneumothorax", "Pneumothorax ruled out; pneumonia"),
    ("Is it pneumonia? No, pneumothorax", "Is it pneumothorax? No, pneumonia"),
    ("Pneumothorax (not pneumonia)", "Pneumonia (not pneumothorax)"),
    ("It is pneumothorax, not pneumonia.", "It is pneumonia, not pneumothorax."),
])
def test_contrast_and_correction(right, turned):
    assert accepted(right, "Pneumothorax"), decide(right, "Pneumothorax", question=Q)
    assert never_paid(turned, "Pneumothorax")
    d = decide(turned, "Pneumothorax", question=Q)
    assert d.verdict is Verdict.WRONG and d.reason is Reason.POLARITY  # the reference itself is denied


def test_a_denied_part_that_may_be_the_answer_leaves_it_undecided():
    d = decide("Pneumothorax, not tension pneumothorax", "Pneumothorax", question=Q)
    assert d.verdict is Verdict.UNDECIDED  # is the denied part another answer? an LLM judge reads it
    d = decide("Liver, not enlarged", "Liver", question="Which organ is enlarged?")
    assert d.verdict is Verdict.UNDECIDED  # it denies what the question asks
    assert decide("Right upper lobe, not left upper lobe", "Right upper lobe", question="Where?").correct
    assert decide("2, not 3", "2", question="How many kidneys?").correct


def test_claims_are_read_only_where_the_shape_is_one():
    assert claims("No pneumothorax") is None  # a plain denial is one claim
    assert claims("Pneumothorax, not seen") is None  # denies the stated part itself
    assert claims("Pneumothorax (not confirmed)") is None
    assert claims("Not only pneumothorax but also effusion") is None
    assert claims("Effusion cannot be excluded") is None
    c = claims("not W but X")
    assert c.asserted == ("X",) and c.denied == ("W",) and c.how == "contrast"
    c = claims("[x] Liver\n[ ] Spleen")
    assert c.asserted == ("Liver",) and c.denied == ("Spleen",) and c.how == "checklist"
    assert claims("\u2612 Liver").unread  # a crossed box: checked, or struck out?
    assert claims("Mass (3 cm)") is None


@pytest.mark.parametrize("right,turned", [
    ("[x] Liver", "[ ] Liver"), ("\u2611 Liver", "\u2610 Liver"), ("- [x] Liver", "- [ ] Liver"),
    ("[x] Liver\n[ ] Spleen", "[ ] Liver\n[x] Spleen"), ("Liver [x]", "Liver [ ]"), ("[X] Liver", "( ) Liver"),
])
def test_check_boxes(right, turned):
    q = "Which organ is enlarged?"
    assert accepted(right, "Liver", q) and never_paid(turned, "Liver", q)
    assert never_paid("\u2612 Liver", "Liver", q) and decide("\u2612 Liver", "Liver", question=q).refused


@pytest.mark.parametrize("right", ["Pulmonary nodules: not absent", "Pulmonary nodules not absent",
                                   "no absence of pulmonary nodules", "Pulmonary nodules are not missing"])
def test_double_negation(right):
    ref = "Pulmonary nodules"
    assert accepted(right, ref)
    for turned in ("Pulmonary nodules: absent", "Pulmonary nodules not present", "Pulmonary nodules not ruled out"):
        assert never_paid(turned, ref), turned


@pytest.mark.parametrize("right", ["definite pneumothorax", "Pneumothorax (confirmed)", "no doubt pneumothorax",
                                   "Pneumothorax, no question", "As the report states, pneumothorax.",
                                   "According to the radiologist, pneumothorax", "Per the report: pneumothorax"])
def test_certainty_and_reported_speech(right):
    assert accepted(right, "Pneumothorax")


@pytest.mark.parametrize("turned", ["Pneumothorax (unconfirmed)", "no definite pneumothorax", "doubtful pneumothorax",
                                    "The report does not mention pneumothorax.", "The radiologist suspected pneumothorax",
                                    "The report says pneumothorax, but the image shows pneumonia."])
def test_doubt_and_other_sources_are_never_paid(turned):
    assert never_paid(turned, "Pneumothorax")


@pytest.mark.parametrize("right", ["exactly 1", "only one", "a total of 1", "just one", "1 in total", "a single one"])
def test_counts_in_words(right):
    q = "How many nodules are seen?"
    assert accepted(right, "1", q)
    for turned in ("at least 1", "more than one", "about 1", "1 or more", "exactly 2"):
        assert never_paid(turned, "1", q), turned


def test_laterality_words():
    assert accepted("Left-hand side", "Left", "Which side?") and accepted("upper lobe on the right", "Right upper lobe")
    assert never_paid("Right-hand side", "Left", "Which side?")
    assert decide("Left hand", "Left", question="Which side?").verdict is not Verdict.CORRECT  # the hand


def test_glosses():
    q = "Which part of the body is shown?"
    assert gloss("abdomen (腹部)") == ("abdomen", "腹部") and gloss("腹部 (abdomen)") == ("abdomen", "腹部")
    for right in ("abdomen (腹部)", "Abdomen / 腹部", "腹部 (abdomen)", "Liver / печень"):
        ref = "Liver" if "Liver" in right else "Abdomen"
        assert accepted(right, ref, q), right
    assert never_paid("Abdomen (胸部)", "Abdomen", q)  # the translation says chest
    assert never_paid("Chest (腹部)", "Abdomen", q)
    d = decide("Abdomen (ꙮꙮ)", "Abdomen", question=q)  # a translation the table cannot read
    assert d.verdict is Verdict.UNDECIDED and override("Abdomen (ꙮꙮ)", "Abdomen", question=q).verdict is not Verdict.WRONG


def test_directional_marks_outside_words():
    for right in ("\u200eAbdomen", "Abdomen\u200f", "\u061cAbdomen", "\u2066Abdomen\u2069", "\ufeffAbdomen"):
        assert decide(right, "Abdomen").identical, right
    assert decide("Left\u200f lung", "Left lung").correct
    for unread in ("Abd\u200eomen", "Abd\u200bomen", "\u202enemodbA", "Abdomen\ufeff"):
        assert never_paid(unread, "Abdomen"), unread


@pytest.mark.parametrize("answer,yes_no", [
    ("None seen", "no"), ("None visible", "no"), ("None identified", "no"), ("Zero seen", "no"), ("Absent", "no"),
    ("Negative", "no"), ("Not present", "no"), ("No. Absent.", "no"), ("Not absent", "yes"), ("Not missing", "yes"),
    ("Present", "yes"), ("Positive", "yes"), ("Yes. Present.", "yes"), ("Seen", "yes"), ("No. Present.", BOTH),
    ("Yes, none seen", BOTH), ("No, it is not", "no"), ("Yes, it is", "yes"),
])
def test_yes_no_polarity_from_the_whole_answer(answer, yes_no):
    q = "Is there a nodule?"
    assert yes_no_polarity(answer, q) == yes_no
    if yes_no == BOTH:
        for ref in ("Yes", "No"):
            d = decide(answer, ref, question=q)
            assert d.verdict is Verdict.UNDECIDED and d.reason is Reason.CONTRADICTORY and d.refused
    else:
        right, other = ("Yes", "No") if yes_no == "yes" else ("No", "Yes")
        assert accepted(answer, right, q) and never_paid(answer, other, q)


def test_polarity_follows_a_question_about_absence():
    q = "Is the nodule absent?"
    assert yes_no_polarity("Present", q) == "no" and yes_no_polarity("None seen", q) == "yes"
    assert yes_no_polarity("No", q) == "no" and yes_no_polarity("Negative", q) == "no"  # a yes/no word as asked
    assert accepted("No. Present.", "No", q)
    assert yes_no_polarity("Present", "Is the mass present or not?") == "yes"
    assert yes_no_polarity("It is malignant", "Is the mass benign?") is None  # about something else
