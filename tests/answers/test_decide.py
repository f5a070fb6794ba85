"""The one answer decision (medrl.answers.decide / override): default-deny normalisation, typed
references, listed frames and abbreviations, and the two tiers (cases written for this file)."""

from __future__ import annotations

import pytest

from medrl.answers import Reason, Verdict, decide, grading_refusal, override, reason_of

HOW_MANY = "How many kidneys are seen?"


@pytest.mark.parametrize("answer", ["Ø Liver", "∅ Liver", "ɴᴏ Liver", "🚫 Liver", "⛔ Liver", "Liver ☓", "Liver ✕",
                                    "Liver؟", "¿Liver", "Liver ＊", "<span class='x'>Liver</span>"])
def test_unknown_signs_are_undecided_never_dropped(answer):
    d = decide(answer, "Liver")
    assert d.verdict is Verdict.UNDECIDED and d.reason is Reason.UNKNOWN_SYMBOL, d
    assert d.refused  # an answer metric pays it what a wrong answer earns


def test_css_line_through_is_a_negation():
    d = decide('<span style="text-decoration: line-through">Liver</span>', "Liver")
    assert d.verdict is Verdict.WRONG and d.reason is Reason.POLARITY


@pytest.mark.parametrize("answer,ref", [("T2*-MRI", "T2-MRI"), ("one+", "one"), ("1st", "one"), ("2nd", "2")])
def test_marks_and_ordinals_on_counts_are_not_correct(answer, ref):
    assert decide(answer, ref, question="How many lesions?").verdict is not Verdict.CORRECT


@pytest.mark.parametrize("answer", ["No", "no.", "Nope", "Yes"])
def test_a_bare_polarity_word_is_no_count_of_zero(answer):
    """"No" to "How many lungs?" is a yes/no answer to an open question, not "none": paying it would
    pay "no" to every question whose count is zero."""
    d = decide(answer, "0", question="How many lungs are shown in this image?")
    assert d.verdict is Verdict.WRONG and d.reason is Reason.YES_NO_TO_OPEN
    assert decide("None", "0", question="How many lungs are shown in this image?").verdict is Verdict.CORRECT
    assert decide("No lungs", "0", question="How many lungs are shown in this image?").verdict is Verdict.CORRECT


@pytest.mark.parametrize("answer", ["See image", "It is.", "Answer: A", "Present", "Large"])
def test_a_count_reference_does_not_fail_open(answer):
    assert decide(answer, "one", question="How many masses are there?").verdict is not Verdict.CORRECT


@pytest.mark.parametrize("answer,ref,question", [
    ("2 kidneys", "2", HOW_MANY), ("2 (two)", "2", HOW_MANY), ("Two.", "2", HOW_MANY), ("None", "0", "How many masses?"),
    ("CXR", "Chest x-ray", "What modality?"), ("CT w/ contrast", "CT with contrast", None),
    ("Impression: Liver", "Liver", None), ("The organ is Liver.", "Liver", "Which organ is shown?"),
    ("Black in color", "Black", "What color is the lesion?"), ("Round", "Circular", "What shape?"),
    ("Axial slice", "Axial", "Which plane?"), ("2.5 cm x 1.7 cm x 1.6 cm", "2.5 cm x 1.7 cm x 1.6 cm", None),
    ("IVC (inferior vena cava)", "IVC", None), ("RUL", "Right upper lobe", None), ("LLL", "Left lower lobe", None),
    ("SI joint", "Sacroiliac joint", None), ("US", "Ultrasound", None), ("T2WI", "T2", None), ("𝟐", "2", HOW_MANY),
])
def test_preserving_shapes_are_correct(answer, ref, question):
    d = decide(answer, ref, question=question)
    assert d.verdict is Verdict.CORRECT, d
    assert override(answer, ref, question=question).verdict is not Verdict.WRONG


def test_a_landmark_organ_is_not_a_contradiction():
    a = "The large organ under the right hemidiaphragm"
    assert decide(a, "Liver", question="What organ is this?").reason is Reason.LANDMARK
    assert override(a, "Liver", question="What organ is this?").verdict is Verdict.UNDECIDED
    assert override("Spleen", "Liver").reason is Reason.OTHER_ORGAN  # another organ as the answer


@pytest.mark.parametrize("answer", ["Liver-like", "consider Liver", "formerly Liver", "Liver WNL"])
def test_undecided_shapes_are_refused_for_answer_metrics(answer):
    d = decide(answer, "Liver")
    assert d.verdict is Verdict.UNDECIDED and d.refused, d


def test_override_tier_only_identity_and_contradictions():
    assert override("liver", "Liver").identical
    assert override("Impression: Liver", "Liver").verdict is Verdict.UNDECIDED  # correct, not identity
    assert decide("Impression: Liver", "Liver").reason is Reason.SAME_STRUCTURE
    for answer, reason in [("no liver", Reason.POLARITY), ("left kidney", Reason.LATERALITY),
                           ("3.4 mm", Reason.NUMBER), ("Spleen", Reason.OTHER_ORGAN)]:
        ref = {"left kidney": "Right kidney", "3.4 mm": "3.4 cm"}.get(answer, "Liver")
        o = override(answer, ref)
        assert o.verdict is Verdict.WRONG and o.reason is reason, (answer, o)
    # a dropped location is the LLM judge's call, not an override
    assert decide("kidney", "Right kidney").verdict is Verdict.WRONG
    assert override("kidney", "Right kidney").verdict is Verdict.UNDECIDED


def test_option_letters_only_for_multiple_choice():
    assert decide("A", "A lesion").reason is Reason.ONE_CHARACTER
    assert decide("B", "(B) Pneumonia", multiple_choice=True).reason is Reason.OPTION_LABEL
    assert decide("C", "(B) Pneumonia", multiple_choice=True).reason is Reason.WRONG_OPTION
    assert grading_refusal("A lesion", "A") is not None
    assert grading_refusal("(B) Pneumonia", "B", multiple_choice=True) is None


def test_reasons_are_an_enum_and_every_refusal_text_maps():
    assert reason_of("candidate list") is Reason.CANDIDATE_LIST
    assert reason_of("hard mismatch (side: left vs right)") is Reason.LATERALITY
    assert Reason.CANDIDATE_LIST.category == "list" and Reason.POLARITY.category == "negation"
    with pytest.raises(ValueError):
        reason_of("something new")
    assert str(decide("", "Liver")).startswith("empty")
