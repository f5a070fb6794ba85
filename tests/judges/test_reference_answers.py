"""medrl.judges.reference.answers: the reference judge's answer correctness is the one shared
decision (default-deny: what the structure cannot settle is not correct), plus the token-set F1
the report rubric uses."""

from __future__ import annotations

import pytest

from medrl.judges.reference.answers import _f1, answer_correct


def test_token_set_f1_hand_worked():
    # {a,b,c} vs {b,c,d,e}: 2 common, P = 2/3, R = 2/4 -> F1 = 2 * (1/3) / (7/6) = 4/7
    assert _f1(["a", "b", "c"], ["b", "c", "d", "e"]) == pytest.approx(4 / 7)
    assert _f1([], ["a"]) == 0.0
    assert _f1(["a", "a"], ["a"]) == 1.0  # sets: repeats do not count twice


@pytest.mark.parametrize("question, reference, prediction, kw, correct", [
    ("What organ is shown?", "Liver", "the liver", {}, True),
    ("Which side is the mass?", "left kidney", "right kidney", {}, False),   # laterality flip
    ("What is the diagnosis?", "Pneumonia", "pneumonia, edema, mass", {}, False),  # a candidate list
])
def test_decisions(question, reference, prediction, kw, correct):
    ok, why = answer_correct(question, reference, prediction, **kw)
    assert ok is correct and why


def test_retired_keywords_are_refused():
    # the former f1_threshold / embed_threshold / cosine options decide nothing: naming one is an error
    with pytest.raises(TypeError, match="f1_threshold"):
        answer_correct("What organ is shown?", "Liver", "liver", f1_threshold=0.5)
    from medrl.judges import build_judge

    with pytest.raises(TypeError, match="embed_threshold"):
        build_judge("reference", embed_threshold=0.8)


def test_unsettled_answer_is_not_correct_with_the_reason():
    ok, why = answer_correct("What is seen?", "x y z", "qqq")
    assert ok is False and why.endswith("counted as not correct")


def test_one_character_answer_as_an_option_label():
    # with allow_one_char, "B" is read as an option label: not the reference's text -> not correct
    assert answer_correct("Which option?", "spleen", "B", allow_one_char=True)[0] is False


def test_empty_reference_is_an_error():
    with pytest.raises(ValueError, match="reference answer is empty"):
        answer_correct("q", "  ", "x")
