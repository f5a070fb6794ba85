"""medrl.data.filters: open-ended modes (MRPO App. C.1), language and deduplication."""

from __future__ import annotations

import pytest

from medrl.data.filters import OPEN_MODES, dedup_key, deduplicate, filter_language, filter_open, is_open
from medrl.data.record import VQARecord


def rec(i, answer, answer_type=None, *, choices=False, lang="en", question="What organ?", images=("a.png",)):
    extras = {"lang": lang} if lang else {}
    if choices:
        extras["choices_in_prompt"] = True
    return VQARecord(id=str(i), images=list(images), question=question, answer=answer, answer_type=answer_type,
                     extras=extras)


# the three kinds the modes disagree on (VQA-RAD: 179 OPEN + 21 CLOSED "A or B?" with free text = 200)
OPEN = rec(1, "liver", "OPEN")
CLOSED_FREE_TEXT = rec(2, "left", "CLOSED", question="Is the mass on the left or right?")
YES_NO = rec(3, "Yes.", "CLOSED")
CHOICE = rec(4, "B", "OPEN", choices=True)
NO_FIELD = rec(5, "kidney")


@pytest.mark.parametrize("mode, kept", [
    ("papers", {"1", "2", "5"}),       # drop yes/no and multiple choice
    ("answer_type", {"1", "4", "5"}),  # the dataset's OPEN field (no field: from the answer)
    ("strict", {"1", "5"}),            # both
])
def test_open_modes(mode, kept):
    records = [OPEN, CLOSED_FREE_TEXT, YES_NO, CHOICE, NO_FIELD]
    assert {r.id for r in filter_open(records, mode)} == kept
    assert mode in OPEN_MODES


def test_true_means_papers_and_unknown_mode_is_refused():
    assert filter_open([OPEN, YES_NO], True) == [OPEN]
    with pytest.raises(ValueError, match=r"unknown open-ended mode 'closed'; use one of"):
        is_open(OPEN, "closed")


def test_language_filter():
    en, zh, none = rec(1, "a"), rec(2, "b", lang="zh"), rec(3, "c", lang=None)
    assert filter_language([en, zh, none]) == [en]
    assert filter_language([en, zh, none], ["en", "zh"]) == [en, zh]
    assert filter_language([en, zh, none], None) == [en, zh, none]


def test_dedup_keys_fold_case_and_space():
    a = rec(1, "Liver", question="What  organ?")
    b = rec(2, "liver ", question="what organ?")
    assert dedup_key(a) == dedup_key(b) == (("a.png",), "what organ?", "liver")
    assert dedup_key(a, "image_question") == (("a.png",), "what organ?")
    assert dedup_key(a, "question_answer") == ("what organ?", "liver")
    assert dedup_key(a, "id") == ("1",)
    with pytest.raises(ValueError, match="unknown dedup key 'image'"):
        dedup_key(a, "image")


def test_deduplicate_keeps_the_first_and_counts_the_rest():
    a, b, c = rec(1, "Liver"), rec(2, "liver"), rec(3, "spleen")
    other_image = rec(4, "liver", images=("b.png",))
    report = {"duplicates": 1}
    out = deduplicate([a, b, c, other_image], report=report)
    assert [r.id for r in out] == ["1", "3", "4"]
    assert report == {"duplicates": 2}  # added to what the report held
    assert [r.id for r in deduplicate([a, b, c, other_image], by="question_answer")] == ["1", "3"]
