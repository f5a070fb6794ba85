"""medrl.answers.clinical.qualifiers: the allowed-qualifier table (qualifiers.tsv) and its lookups."""

from __future__ import annotations

import pytest

from medrl.answers.clinical import qualifiers as Q
from medrl.answers.clinical import lexicon as L


def test_table_kinds_are_the_declared_ones():
    table = Q.load_qualifiers()
    assert table, "qualifiers.tsv gave no entries"
    assert set(table.values()) <= set(Q.KINDS)


@pytest.mark.parametrize("token, kind", [
    ("plane", "filler"), ("view", "filler"), ("t2", "sequence"), ("axial", "plane"),
    ("posteroanterior", "view"),  # "PA" is the lexicon's abbreviation of it
    ("ct", "modality"), ("liver", None),
])
def test_qualifier_kind(token, kind):
    assert Q.qualifier_kind(token) == kind


def test_is_filler_only_for_fillers():
    assert Q.is_filler("view") and Q.is_filler("plane")
    assert not Q.is_filler("t2") and not Q.is_filler("liver")


@pytest.mark.parametrize("text, expected", [
    ("PA view", True),          # view + filler
    ("T2-weighted", True),      # sequence + filler
    ("enlarged", True),         # descriptor
    ("with contrast", True),
    ("CT", False),              # a modality alone is not a free qualifier
    ("liver", False),           # names something: not a qualifier
    ("the", False),             # no content word
    ("", False),
    (None, False),
])
def test_is_qualifier_phrase(text, expected):
    assert Q.is_qualifier_phrase(text) is expected


def test_bad_line_names_file_and_line(monkeypatch):
    """A malformed table is refused naming the file and the line number."""

    class FakeFile:
        def __init__(self, text):
            self.text = text

        def joinpath(self, name):
            return self

        def read_text(self, encoding="utf-8"):
            return self.text

    for text, match in [
        ("# comment\nword\tkind\nplane\tbogus\n", r"qualifiers\.tsv:3: expected 'word<TAB>kind' with a kind of"),
        ("plane\tfiller\n", r"qualifiers\.tsv:1: expected the header"),
    ]:
        monkeypatch.setattr(L.resources, "files", lambda pkg, t=text: FakeFile(t))
        Q.load_qualifiers.cache_clear()
        try:
            with pytest.raises(ValueError, match=match):
                Q.load_qualifiers()
        finally:
            Q.load_qualifiers.cache_clear()
    monkeypatch.undo()
    assert Q.qualifier_kind("plane") == "filler"  # the real table loads again
