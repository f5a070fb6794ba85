"""medrl.common.text: lone surrogates become U+FFFD at the boundary; everything else is left alone."""

from __future__ import annotations

from medrl.common.text import clean_obj, clean_text


def test_valid_text_is_returned_as_is():
    s = "Chest X-ray, 3.4 cm \u2028 lesion \u00e9 \U0001f600"
    assert clean_text(s) is s


def test_lone_surrogates_become_replacement_character_and_encode():
    out = clean_text("ab\ud800cd\udfffe")
    assert out == "ab\ufffdcd\ufffde"
    out.encode("utf-8")  # no UnicodeEncodeError any more


def test_split_surrogate_pair_is_joined():
    assert clean_text("x\ud83d\ude00y") == "x\U0001f600y"


def test_non_strings_pass_through():
    assert clean_text(4) == 4 and clean_text(None) is None


def test_clean_obj_walks_dicts_lists_and_keys():
    obj = {"k\ud800": ["a\udc00", ("b", 3)], "n": None}
    assert clean_obj(obj) == {"k\ufffd": ["a\ufffd", ["b", 3]], "n": None}
