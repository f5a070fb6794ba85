"""An answer read as claims: what it states as the answer, and what it says the answer is not.

A clinician often answers by setting the answer against another one: "not W but X", "X rather
than W", "X instead of W", "X, not W", "X (not W)", "W ruled out; X", "Is it W? No, X", or a
check list, "[x] X  [ ] W". Word by word such an answer holds the reference *and* a negation, two
findings, or a question mark; read as claims it states one answer (X) and denies others (W).
:func:`claims` splits an answer into those parts, or returns None when it has none of these
shapes (the answer is then read as one claim, as before). :func:`medrl.answers.decide` decides the
stated part as the answer and checks that what is denied is another answer: denying the
reference itself is wrong, denying something that may be the reference leaves the answer
undecided.

A shape that cannot be read - a crossed box ("☒ X", "[✗] X": checked, or struck out?), an empty
part - is :attr:`Claims.unread`: the answer is undecided, never read as if the mark were absent.

:func:`gloss` finds the answer with its translation beside it ("abdomen (腹部)", "Liver /
печень", "腹部 (abdomen)"); the translation is read with the gloss table
(:mod:`medrl.answers.clinical.gloss`).

Every pattern here is anchored or a single scan: linear in the answer.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Claims", "claims", "gloss"]


@dataclass(frozen=True)
class Claims:
    """``asserted``: the parts stated as the answer; ``denied``: the parts the answer says it is
    not; ``how``: "contrast" or "checklist"; ``unread``: why the shape cannot be read (the answer
    is then undecided), else None."""

    asserted: tuple[str, ...]
    denied: tuple[str, ...]
    how: str
    unread: str | None = None


# ----------------------------------------------------------------------------- check lists
_CHECKED = frozenset("xX\u2713\u2714")          # [x] [X] [✓] [✔]
_CROSSED = frozenset("\u2717\u2718")           # [✗] [✘]: checked, or struck out
#: a box: "[ ]", "[x]", "[✓]", "( )", "(•)", "☐", "☑", "☒"
_BOX = re.compile(r"\[\s*([xX\u2713\u2714\u2717\u2718]?)\s*\]|\(\s*([\u2022\u25cf]?)\s*\)|([\u2610\u2611\u2612])")
_BOX_FIRST = re.compile(r"^\s*(?:[-*\u2022]\s*)?(?=\[\s*[xX\u2713\u2714\u2717\u2718]?\s*\]|\(\s*[\u2022\u25cf]?\s*\)|"
                        r"[\u2610\u2611\u2612])")
_ITEM_ENDS = " \t\r\n,;.-*\u2022"


def _box_kind(m: re.Match) -> str:
    """"checked", "unchecked" or "crossed" for one box."""
    inner = m.group(1) if m.group(1) is not None else m.group(2) if m.group(2) is not None else None
    sym = m.group(3)
    if sym:
        return {"\u2610": "unchecked", "\u2611": "checked", "\u2612": "crossed"}[sym]
    if inner in _CROSSED:
        return "crossed"
    return "checked" if inner else "unchecked"


def _checklist(text: str) -> Claims | None:
    boxes = list(_BOX.finditer(text))
    if not boxes:
        return None
    items: list[tuple[str, str]] = []
    if _BOX_FIRST.match(text):  # "[x] X  [ ] W", "- [ ] X", "☑ X ☐ W": each box before its item
        for i, m in enumerate(boxes):
            end = boxes[i + 1].start() if i + 1 < len(boxes) else len(text)
            items.append((_box_kind(m), text[m.end():end].strip(_ITEM_ENDS)))
    elif len(boxes) == 1 and not text[boxes[0].end():].strip(_ITEM_ENDS):  # "X [x]": one box after its item
        items.append((_box_kind(boxes[0]), text[:boxes[0].start()].strip(_ITEM_ENDS)))
    else:
        return None  # a bracket inside the text ("X (Y)"), no check list
    if any(kind == "crossed" for kind, _ in items):
        return Claims((), (), "checklist", "a crossed box (checked, or struck out?)")
    if any(not item for _, item in items):
        return Claims((), (), "checklist", "a box with nothing beside it")
    return Claims(tuple(i for k, i in items if k == "checked"), tuple(i for k, i in items if k == "unchecked"),
                  "checklist")


# ----------------------------------------------------------------------------- contrast and correction
_CUE = re.compile(r"\b(?:not|no|rather\s+than|instead\s+of|ruled\s+out|excluded)\b|\?", re.I)
_NOT_CONTRAST = re.compile(r"\bnot\s+only\b|\bnot\s+(?:be\s+)?(?:excluded|ruled\s+out)\b|\bcannot\b|\bcan't\b", re.I)
_RATHER_FIRST = re.compile(r"^(?:rather\s+than|instead\s+of)\s+(?P<w>[^,;]+?)\s*,\s*(?P<x>\S.*)$", re.I | re.S)
_RATHER = re.compile(r"^(?P<x>.+?)\s*,?\s+(?:rather\s+than|instead\s+of)\s+(?P<w>\S.*)$", re.I | re.S)
_ASKED = re.compile(r"^(?:(?:is|was|could|would)\s+(?:it|this|that)\s+(?:be\s+)?)?(?P<w>[^?]+?)\s*\?+\s*"
                    r"(?:no|nope)\s*(?:[,:;.!-]+|\u2013|\u2014)\s*(?P<x>\S.*)$", re.I | re.S)
# a denial set off inside a sentence: "X (not W)", "X, not W", "X and not W", "X but not W", "X - not W", "X, but W"
_PAREN_NOT = re.compile(r"\s*\(\s*((?:not|no)\s+[^()]+?)\s*\)", re.I)
_BEFORE_NOT = re.compile(r"\s*(?:,\s*(?:(?:but|and)\s+)?|\s+(?:but|and)\s+|\s*(?:-+|\u2013|\u2014)\s*)(?=(?:not|no)\s)",
                         re.I)
_BUT = re.compile(r"\s*,?\s+but\s+", re.I)
_SENTENCE = re.compile(r"[;!]+|\.+(?!\d)|\n+")  # a full stop before a digit is a decimal point
_DENIED_LEAD = re.compile(r"^(?:not|no)\s+(?P<w>\S.*)$", re.I | re.S)
_DENIED_TAIL = re.compile(r"^(?P<w>.+?)\s+(?:(?:is|are|was|were|has\s+been|have\s+been)\s+)?(?:ruled\s+out|excluded)$",
                          re.I | re.S)
#: "no doubt X", "no question": certainty, not a denial (read by the listed rewrites)
_NOT_A_DENIAL = re.compile(r"^(?:no|not)\s+(?:doubt|question)\b", re.I)
#: a denied part that only says "there" or "sure" denies the stated part itself ("X, not present",
#: "X (not confirmed)"): no contrast of two answers
_PRESENCE_ONLY = re.compile(r"^(?:(?:is|are|was|were|been|be|yet|fully|definitely|clearly|well|entirely|really)\s+)*"
                            r"(?:present|seen|visible|identified|confirmed|certain|definite|noted|detected|found|"
                            r"evident|demonstrated|shown|appreciated|observed|there|sure|clear|known|proven|"
                            r"established|excluded|ruled\s+out|likely|so)$", re.I)
_ENDS = " \t\r\n.,;:!-\u2013\u2014"


def _segment(text: str) -> tuple[list[str], list[str]] | None:
    """(asserted, denied) segments of a contrast written with sentence marks, commas, "but" and
    parentheses; None when a segment cannot be placed."""
    t = _PAREN_NOT.sub(lambda m: f"; {m.group(1)}; ", text)
    t = _BEFORE_NOT.sub("; ", t)
    t = _BUT.sub("; ", t)
    asserted, denied = [], []
    for seg in _SENTENCE.split(t):
        seg = seg.strip(_ENDS)
        if not seg:
            continue
        m = _DENIED_LEAD.match(seg) if not _NOT_A_DENIAL.match(seg) else None
        m = m or _DENIED_TAIL.match(seg)
        if m:
            denied.append(m.group("w").strip(_ENDS))
        else:
            asserted.append(seg)
    return asserted, denied


def _contrast(text: str) -> Claims | None:
    if not _CUE.search(text) or _NOT_CONTRAST.search(text):
        return None
    for pat in (_RATHER_FIRST, _RATHER, _ASKED):
        m = pat.match(text)
        if m:
            x, w = m.group("x").strip(_ENDS), m.group("w").strip(_ENDS)
            return Claims((x,), (w,), "contrast") if x and w and not _PRESENCE_ONLY.match(w) else None
    asserted, denied = _segment(text)
    if len(asserted) != 1 or not denied or not all(denied) or any(_PRESENCE_ONLY.match(d) for d in denied):
        return None  # a plain denial ("No pneumothorax", "X, not seen"), or several statements: one answer
    return Claims((asserted[0],), tuple(denied), "contrast")


def claims(text: str, *, contrast: bool = True) -> Claims | None:
    """The claims of an answer: a check list ("[x] X [ ] W"), or (with ``contrast``) a contrast
    ("not W but X", "X rather than W", "X, not W", "W ruled out; X", "Is it W? No, X"); None when
    it is neither."""
    t = (text or "").strip()
    if not t:
        return None
    return _checklist(t) or (_contrast(t) if contrast else None)


# ----------------------------------------------------------------------------- glosses
_GLOSS_PAREN = re.compile(r"^(?P<a>[^()\[\]\uff08\uff09]+?)\s*[(\[\uff08]\s*(?P<b>[^()\[\]\uff08\uff09]+?)\s*[)\]\uff09]$")
_GLOSS_SPLIT = re.compile(r"^(?P<a>[^/|]+?)\s*(?:/|\||\s[-\u2013\u2014]\s)\s*(?P<b>[^/|]+)$")


def _foreign(part: str) -> bool:
    """A part that holds letters of another script than Latin ("腹部", "X光"), or whose words are
    all the gloss table's terms of another language ("izquierdo")."""
    from medrl.answers.clinical.gloss import is_gloss

    letters = [c for c in part if c.isalpha()]
    if any(not unicodedata.name(c, "").startswith("LATIN") for c in letters):
        return True
    return bool(letters) and is_gloss(part)


def gloss(text: str) -> tuple[str, str] | None:
    """(answer, translation) when ``text`` is an answer with its translation beside it, in
    brackets or after a slash or dash, on either side ("abdomen (腹部)", "腹部 (abdomen)", "Liver /
    печень"); None otherwise."""
    t = (text or "").strip()
    for pat in (_GLOSS_PAREN, _GLOSS_SPLIT):
        m = pat.match(t)
        if not m:
            continue
        a, b = m.group("a").strip(), m.group("b").strip()
        if not a or not b:
            return None
        fa, fb = _foreign(a), _foreign(b)
        if fb and not fa:
            return a, b
        if fa and not fb:
            return b, a
        return None
    return None
