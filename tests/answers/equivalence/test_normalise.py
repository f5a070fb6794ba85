"""Default-deny normalisation (medrl.answers.equivalence.normalise.unknown_characters) and the one
negation data file (medrl.answers.clinical.negation_terms)."""

from __future__ import annotations

import pytest

from medrl.answers.equivalence.normalise import normalise, unknown_characters


@pytest.mark.parametrize("answer,unknown", [
    ("Ø Liver", "Ø"), ("∅ Liver", "∅"), ("ɴᴏ Liver", "ɴᴏ"), ("🚫 Liver", "🚫"), ("Liver ☓", "☓"), ("Liver؟", "؟"),
    ("¿Liver", "¿"), ("T2*-MRI", "*"), ("one+", "+"), ("A bul\u1fefllous lesion", "`"),
    ("<span class='x'>Liver</span>", "<=>"),
])
def test_signs_and_foreign_punctuation_are_reported(answer, unknown):
    assert set(unknown) <= set(unknown_characters(answer, "Liver")), unknown_characters(answer, "Liver")


@pytest.mark.parametrize("answer", ["**Liver**", "<b>Liver</b>", "`Liver`", "Ｌｉｖｅｒ", "Ménétrier", "L\u0456ver",
                                    "Liver.", " liver ", "\\boxed{Liver}", "Liver \u2713", "2.5 cm, 40%"])
def test_listed_changes_leave_nothing_unknown(answer):
    assert unknown_characters(answer, "Liver") == ""


def test_a_character_of_the_reference_is_known():
    assert unknown_characters("HER2+", "HER2+") == "" and unknown_characters("HER2+", "HER2") == "+"


def test_css_line_through_is_strikethrough():
    n = normalise('<span style="text-decoration: line-through">Liver</span>')
    assert n.text.startswith("no ") and n.negation_marks == 1


def test_negation_words_come_from_one_data_file():
    from medrl.answers.clinical.lexicon import NEGATION_WORDS
    from medrl.answers.clinical.negation_terms import PATH, ROLES, terms
    from medrl.answers.equivalence.structure import NEGATION_CUES

    assert PATH.name == "negation.tsv"
    assert set(terms("word")) == NEGATION_WORDS and set(terms("cue")) == NEGATION_CUES
    assert all(terms(role) for role in ROLES)
    with pytest.raises(ValueError):
        terms("nonsense")


def test_hard_mismatch_is_defined_once():
    import medrl.answers.clinical.mismatch as clinical
    import medrl.answers.equivalence as equivalence

    assert not hasattr(clinical, "hard_mismatch") and callable(clinical.category_mismatch)
    assert equivalence.hard_mismatch("Right kidney", "left kidney").startswith("hard mismatch (side")
