"""medrl.judges.reference.words: the reference judge's word lists and matching helpers."""

from __future__ import annotations

from medrl.judges.reference import words as W


def test_canon_tokens_map_through_the_lexicon_and_drop_stop_words():
    assert W.canon_tokens("The CT scans of the kidneys") == ["ct", "kidney"]
    assert W.canon_tokens("The CT scans", keep_stop=True) == ["the", "ct", "scan"]
    assert W.canon_tokens(None) == []
    assert W.normalise("Chest X-Ray") == "chest xray"


def test_polarity_reads_a_leading_yes_or_no():
    assert W.polarity("Yes, it is") == "yes"
    assert W.polarity("No.") == "no"
    assert W.polarity("maybe yes") is None


def test_opposed_needs_each_side_to_say_only_one_of_the_pair():
    assert W._opposed({"left"}, {"right"}) == "left/right"
    assert W._opposed({"t2"}, {"t1"}) == "t1/t2"
    assert W._opposed({"left", "right"}, {"right"}) is None  # bilateral vs right: not a flip
    assert W._opposed({"liver"}, {"spleen"}) is None


def test_negation_and_sentences():
    assert W._negated(["no", "mass"]) and W._negated(["unremarkable"]) and not W._negated(["mass"])
    assert W._sentences("A. B!  C?\nD; E") == ["A.", "B!", "C?", "D;", "E"]
    assert W._sentences("") == []


def test_alignment_finds_confusable_substitutions_but_not_derived_words():
    hit_r, hit_p, subs = W._aligned({"ureteral"}, {"urethral"})
    assert (hit_r, hit_p, subs) == (set(), set(), "ureteral vs urethral")
    assert W._derived("appendix", "periappendiceal") and W._derived("pneumothorax", "hydropneumothorax")
    hit_r, hit_p, subs = W._aligned({"kidney", "cyst"}, {"kidneys", "cyst"})
    assert hit_r == {"kidney", "cyst"} and subs == ""


def test_regions_of_organs():
    assert W._regions_of({"liver", "lung"}) == {"abdomen", "chest"}
    assert W._regions_of({"femur"}) == {"pelvis"}
    assert W._ORGANS >= {"liver", "brain", "prostate"}


def test_question_form_and_meta_talk_patterns():
    assert W._WH.match("Which organ?") and not W._WH.match("Is it?")
    assert W._AUX.match("Is it?") and W._META.match("Let me look") and W._META.match("First, I will check")
