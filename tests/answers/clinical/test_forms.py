"""medrl.answers.clinical.forms: StepGRPO's "equivalent formats" of a key step, built from the one lexicon."""

from __future__ import annotations

from medrl.answers.clinical.forms import MAX_FORMS, NUMBER_WORDS, equivalent_forms


def test_step_itself_comes_first_unchanged():
    forms = equivalent_forms("  CT of the chest ")
    assert forms[0] == "CT of the chest"


def test_abbreviation_expands_and_full_name_contracts_through_the_lexicon():
    short = equivalent_forms("CT of the chest")
    assert "computed tomography of the chest" in short
    long_ = equivalent_forms("Computed tomography of the chest")
    # the canonical wording is the abbreviation, and the other lexicon variants follow from it
    assert long_[1] == "ct of the chest"
    assert "cat scan of the chest" in long_


def test_hyphen_spellings_and_numbers_as_words():
    forms = equivalent_forms("X-ray shows 2 nodules")
    assert forms[1:3] == ["x ray shows 2 nodules", "xray shows 2 nodules"]
    assert "x ray shows two nodules" in forms
    # and back: a number word becomes digits
    assert "3 cysts" in equivalent_forms("three cysts")


def test_number_words_cover_zero_to_twelve_only():
    assert NUMBER_WORDS[0] == "zero" and NUMBER_WORDS[12] == "twelve" and len(NUMBER_WORDS) == 13
    forms = equivalent_forms("13 nodules")
    assert not any("thirteen" in f for f in forms)


def test_forms_are_unique_and_capped():
    for step in ("CT of the chest", "X-ray shows 2 nodules", "MRI of the brain shows a left lesion"):
        forms = equivalent_forms(step)
        assert len(forms) <= MAX_FORMS
        assert len({f.lower() for f in forms}) == len(forms), forms


def test_lower_cased_punctuation_free_copy_is_not_repeated_when_equal_to_the_step():
    # "kidney enlarged" lower-cased is the step itself (seen), so only new wordings follow it
    forms = equivalent_forms("kidney enlarged")
    assert forms[0] == "kidney enlarged"
    assert forms.count("kidney enlarged") == 1
