"""Translations beside an answer (data file ``gloss.tsv``): "abdomen (腹部)", "Liver / печень".

A clinician writing for readers of two languages may put the term's translation beside it. The
gloss table (term, language, English words) reads such a translation into the words the clinical
lexicon knows, so the decision can check that it says what the answer says
(:func:`medrl.answers.compose.gloss` finds it, :func:`medrl.answers.decide` compares). A
translation the table cannot read in full is None: the answer stays undecided, never read as if
the translation were not there.

Chinese and Japanese are written without spaces: the translation is read by the longest table
term at each position; other scripts word by word (the longest run of words that is a term).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

GLOSS_FILE = "gloss.tsv"


@lru_cache(maxsize=1)
def load_gloss() -> dict[str, str]:
    """term (lower case, NFC) -> English words; a bad line raises naming the file and line."""
    from medrl.answers.clinical.lexicon import data_rows

    out: dict[str, str] = {}
    for n, parts, line in data_rows(GLOSS_FILE, ["term", "language", "english"]):
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise ValueError(f"{GLOSS_FILE}:{n}: expected 'term<TAB>language<TAB>english', got {line!r}")
        out.setdefault(_key(parts[0]), parts[2].strip())
    return out


def _key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


@lru_cache(maxsize=1)
def _longest() -> int:
    return max((len(t) for t in load_gloss()), default=1)


def _unspaced(ch: str) -> bool:
    """A character of a script written without spaces (CJK ideographs, kana)."""
    name = unicodedata.name(ch, "")
    return name.startswith(("CJK", "HIRAGANA", "KATAKANA"))


def read_gloss(text: str | None) -> str | None:
    """The English words of a translation, or None when the table cannot read every part of it."""
    table = _key(text or "")
    if not table:
        return None
    terms = load_gloss()
    out: list[str] = []
    i, t = 0, table
    while i < len(t):
        if t[i].isspace() or t[i] in ",;-":
            i += 1
            continue
        if _unspaced(t[i]):
            hit = next((t[i:j] for j in range(min(len(t), i + _longest()), i, -1) if t[i:j] in terms), None)
        else:
            words = t[i:].split()
            hit = None
            for k in range(min(len(words), 3), 0, -1):
                cand = " ".join(words[:k]).strip(",;")
                if cand in terms and t.startswith(cand, i):
                    hit = cand
                    break
        if hit is None:
            return None
        out.append(terms[hit])
        i += len(hit)
    return " ".join(out) or None


def is_gloss(text: str | None) -> bool:
    """Every word of ``text`` is a term of the table (a translation, not English)."""
    return read_gloss(text) is not None
