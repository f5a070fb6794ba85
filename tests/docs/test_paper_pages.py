"""docs/papers/<paper>.md names every table and figure of its paper: the numbers are read from
the papers' captions in ../shared/seeds (skipped where the papers are not present), and each
must appear on the page as "Table N" / "Fig. N", alone or inside a range ("Figs. 7-12")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"
PAGES = {"mrpo": "000_", "armed": "001_", "capo": "002_", "medix_r1": "003_", "stepgrpo": "004_"}
CAPTION = re.compile(r"^\**(Table|Figure|Fig\.)\s+(\d+)\s*[:.]", re.M)
MENTION = re.compile(r"\b(Tables?|Figs?\.)\s+(\d+)(?:\s*(?:-|–|to)\s*(\d+))?")


def numbers_in_paper(text: str) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {"Table": set(), "Fig": set()}
    for kind, n in CAPTION.findall(text):
        out["Table" if kind == "Table" else "Fig"].add(int(n))
    return out


def numbers_on_page(text: str) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {"Table": set(), "Fig": set()}
    for kind, a, b in MENTION.findall(text):
        key = "Table" if kind.startswith("Table") else "Fig"
        out[key].update(range(int(a), int(b or a) + 1))
    return out


def test_mentions_parse_ranges():
    got = numbers_on_page("| Figs. 7-12 (App. F) | ... | Table 3 | Tables 5-8 | Fig. 1 (A) |")
    assert got == {"Table": {3, 5, 6, 7, 8}, "Fig": {1, 7, 8, 9, 10, 11, 12}}


@pytest.mark.parametrize("page, seed", sorted(PAGES.items()))
def test_page_covers_every_table_and_figure(page, seed):
    files = sorted(SEEDS.glob(f"{seed}*.txt")) if SEEDS.is_dir() else []
    if not files:
        pytest.skip("the papers' text (../shared/seeds) is not present")
    want = numbers_in_paper(files[0].read_text(encoding="utf-8"))
    assert want["Table"] and want["Fig"]
    have = numbers_on_page((REPO / "docs" / "papers" / f"{page}.md").read_text(encoding="utf-8"))
    for kind in ("Table", "Fig"):
        missing = sorted(want[kind] - have[kind])
        assert not missing, f"docs/papers/{page}.md does not mention {kind} {missing}"
