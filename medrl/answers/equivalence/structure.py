"""A short answer read into a small typed structure: :func:`read` -> :class:`Reading`.

Steps (each a pure function of the text, cached per text):

1. :func:`medrl.answers.equivalence.normalise.normalise`: Unicode, look-alike letters, markup;
   strikethrough and ✗ marks become "no X";
2. negation written in other shapes is rewritten to "no X" (:func:`rewrite_negations`):
   "X: no / absent / negative / false / none", "X-negative", "X is ruled out", "resolved X",
   "history of X", "free of X"; negation words of other languages ("kein", "sin", "sans",
   "nein") are flagged as ``foreign_negation`` (the structure cannot read them: never correct);
3. the side abbreviations "R"/"L"/"Rt"/"Lt" before a word become "right"/"left";
4. quantities are taken out and parsed with pint (:mod:`medrl.answers.equivalence.quantities`);
5. the rest goes through the clinical lexicon (:func:`medrl.answers.clinical.lexicon.content_tokens`:
   synonyms, abbreviations, spellings), and each canonical word is sorted into a *location*
   (side, lobe, segment, part: :data:`LOCATION_GROUPS`), a *qualifier*
   (:mod:`medrl.answers.clinical.qualifiers`), or a *concept* (everything else);
6. polarity per word: the words inside a negation scope (negspacy, only when a cue word appears,
   :func:`medrl.answers.clinical.negation.negated_tokens`), and "non"-prefixed words ("nonenhancing").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from medrl.answers.clinical.lexicon import all_tokens, canonical_text, content_tokens, load_lexicon
from medrl.answers.clinical.mismatch import group_values
from medrl.answers.clinical.negation_terms import alternation, terms
from medrl.answers.clinical.qualifiers import qualifier_kind
from medrl.answers.equivalence.normalise import normalise
from medrl.answers.equivalence.quantities import CARDINAL_WORDS, ORDINAL_WORDS, Quantity, quantities

#: mismatch groups that say *where*: every one the reference names must be in the answer
LOCATION_GROUPS = ("side", "vertical position", "superior/inferior", "anterior/posterior", "medial/lateral",
                   "proximal/distal", "apex/base", "organ part", "colon segment", "brain lobe", "meningeal space",
                   "compartment")
#: words that say the thing is not there, in the positions "X: <word>" / "X <word>"
_TRAILING_NEG = alternation("trailing")
_TRAILING = re.compile(
    r"^(?P<x>[^a-z0-9]*[a-z0-9].*?)\s*(?:[:=(\[,;]\s*|-\s+|\s+-\s*|\s+(?:is|are|was|were|has been|have been|being)\s+|\s+)"
    r"(?P<neg>" + _TRAILING_NEG + r")\s*[)\]]?\s*[.!]*$")
_PRE_NEG = re.compile(r"\b(?:" + alternation("preceding") + r")\s+")
_SUFFIX_NEG = re.compile(r"\b([a-z][a-z0-9]*)(?:[- ]negative|-free)\b")
_WHOLE_SUFFIX_NEG = re.compile(r"^([^a-z0-9]*[a-z0-9].*?)(?:[- ]negative|-free)\s*[.!]*$")
_SUFFIX_POS = re.compile(r"\b([a-z][a-z0-9]*)[- ]positive\b")
_FOREIGN_NEG = re.compile(r"\b(?:" + alternation("foreign") + r")\b")
_NON_WHOLE = re.compile(r"^non[-\s]?(\S.*)$")  # "non-X": the whole answer prefixed
_SIDE_ABBREV = re.compile(r"(?<![\w'-])(r|rt|l|lt)\.?(?=\s+[a-z]{2,})|(?<=[a-z',] )(r|rt|l|lt)\.?(?=\s*(?:[,;]|$))|"
                          r"^(r|rt|l|lt)\.?$", re.IGNORECASE)
_SIDE_PAREN = re.compile(r"\(\s*(r|l)\s*\)", re.IGNORECASE)
# side shorthand: "L-sided", "right sided", "Rt-sided" (the side); "B/L", "b/l", "bilat." (both sides)
_SIDED = re.compile(r"(?<![\w/-])(right|rt|r|left|lt|l)\.?[\s-]*sided(?![\w-])", re.IGNORECASE)
_BOTH_SIDES = re.compile(r"(?<![\w/])(?:b/l|bilat)(?![\w/])\.?", re.IGNORECASE)
# laterality words: "left-hand side", "right-hand", "left hand side" (a side; "left hand" alone is the hand)
_HANDED = re.compile(r"(?<![\w/-])(left|right)(?:-hand(?:ed)?(?:[\s-]+side)?|\s+hand(?:ed)?[\s-]+side)(?![\w-])",
                     re.IGNORECASE)
_ANSWER_LEAD = re.compile(r"(?:the\s+)?(?:final\s+)?answer(?:\s+is)?:?")
_ZERO_TRAILING = re.compile(r"^(?P<x>[^a-z]*[a-z].*?)\s*[:=]\s*0\s*[.!]*$")
#: the endings the whole-answer shapes need (checked on the last _TAIL characters first)
_TAIL = 80
_ENDS_NEGATIVE = re.compile(r"(?:[- ]negative|-free)\s*[.!]*$")
_ENDS_TRAILING = re.compile(r"(?:" + _TRAILING_NEG + r")\s*[)\]]?\s*[.!]*$")
_ENDS_ZERO = re.compile(r"[:=]\s*0\s*[.!]*$")
_ENDS_AFFIRM = re.compile(r"(?:yes|present|positive|true|seen)\s*[)\]]?\s*[.!]*$")
_AFFIRM_TRAILING = re.compile(r"^(?P<x>[^a-z]*[a-z].*?)\s*[:=(\[,;-]\s*(?:yes|present|positive|true|seen)\s*[)\]]?\s*[.!]*$")
_NUMBER_WORD = re.compile(r"(?<![\w-])(" + "|".join(CARDINAL_WORDS + ORDINAL_WORDS[1:]) + r")(?![\w-])(?!\s+of\b)")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
#: organ enlargement words read as organ + "enlargement" ("Liver, enlarged" = "hepatomegaly")
MEGALY = {"hepatomegaly": "liver", "splenomegaly": "spleen", "cardiomegaly": "heart", "nephromegaly": "kidney"}
#: words that make a text negate something (a cue for the negation scopes)
NEGATION_CUES = set(terms("cue"))


@lru_cache(maxsize=1)
def multiword_terms() -> frozenset[str]:
    """Canonical lexicon terms of two or more words ("small bowel", "pleural effusion")."""
    return frozenset(c for _, c, _k in load_lexicon() if " " in c)


@lru_cache(maxsize=1)
def _negation_terms() -> re.Pattern | None:
    terms = sorted((t for t in multiword_terms() if set(t.split()) & NEGATION_CUES), key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(map(re.escape, terms)) + r")\b") if terms else None


def join_negation_terms(canon: str) -> str:
    """Lexicon terms that contain a negation word ("free air") written as one word ("freeair"):
    a name, not a negation."""
    pat = _negation_terms()
    return pat.sub(lambda m: m.group(1).replace(" ", ""), canon) if pat else canon


def rewrite_negations(text: str) -> tuple[str, bool]:
    """Negation shapes rewritten to "no X" (lower-case ``text``); also whether a foreign negation
    word occurs."""
    t = text
    foreign = bool(_FOREIGN_NEG.search(t))
    # the whole-answer shapes end in their negation or affirmation word: looked for in the tail
    # first (a necessary condition), so a long answer is not scanned by each pattern
    whole = _WHOLE_SUFFIX_NEG.match(t) if _ENDS_NEGATIVE.search(t[-_TAIL:]) else None
    t = f"no {whole.group(1)}" if whole else _SUFFIX_NEG.sub(r"no \1", t)
    t = _SUFFIX_POS.sub(r"\1", t)
    m = _TRAILING.match(t) if _ENDS_TRAILING.search(t[-_TAIL:]) else None
    if m and not re.fullmatch(r"\s*(?:no|not)\s*", m.group("x")) and not _ANSWER_LEAD.fullmatch(m.group("x").strip()):
        t = f"no {m.group('x')}"
    m = _ZERO_TRAILING.match(t) if _ENDS_ZERO.search(t[-_TAIL:]) else None
    if m and not _ANSWER_LEAD.fullmatch(m.group("x").strip()):
        t = f"no {m.group('x')}"
    m = _AFFIRM_TRAILING.match(t) if _ENDS_AFFIRM.search(t[-_TAIL:]) else None
    if m:
        t = m.group("x")
    t = _PRE_NEG.sub("no ", t)
    return t, foreign


@lru_cache(maxsize=8192)
def expand_sides(text: str) -> str:
    """"R frontal lobe" -> "right frontal lobe", "frontal lobe (L)" -> "frontal lobe left",
    "L-sided" -> "left", "left-hand side" -> "left", "B/L lungs" -> "bilateral lungs". (Each
    pattern runs only where what it needs is there: substring checks keep a long text cheap.)"""
    low = text.casefold()
    t = _HANDED.sub(lambda m: m.group(1), text) if "hand" in low else text
    if "sided" in low:
        t = _SIDED.sub(lambda m: "right" if m.group(1).lower().startswith("r") else "left", t)
    if "b/l" in low or "bilat" in low:
        t = _BOTH_SIDES.sub("bilateral", t)
    if _SIDE_LETTERS & set(_LETTERS.findall(low)):
        t = _SIDE_ABBREV.sub(lambda m: "right" if (m.group(1) or m.group(2) or m.group(3)).lower().startswith("r")
                             else "left", t)
    return _SIDE_PAREN.sub(lambda m: " right " if m.group(1).lower() == "r" else " left ", t) if "(" in t else t


_SIDE_LETTERS = frozenset({"r", "rt", "l", "lt"})
_LETTERS = re.compile(r"[a-z]+")


def _number_word(m: re.Match) -> str:
    w = m.group(1)
    return str(CARDINAL_WORDS.index(w)) if w in CARDINAL_WORDS else str(ORDINAL_WORDS.index(w))


@dataclass(frozen=True)
class Reading:
    """One answer read into its parts (all words canonical, singular).

    ``text``: the normalised text (markup unwrapped, negations as "no X");
    ``words``: the content words in order; ``concepts``: words that are neither a location nor an
    allowed qualifier; ``locations``: location group -> values; ``qualifiers``: word -> kind;
    ``negated``: words in a negation scope; ``non_prefixed``: X for each word "nonX";
    ``quantities``: numbers with units; ``term_words``: words inside a multi-word lexicon term
    ("small" in "small bowel": a part of a name, never a qualifier); ``modalities``.
    """

    raw: str
    text: str
    canonical: str
    words: tuple[str, ...]
    concepts: frozenset[str]
    locations: dict[str, frozenset[str]] = field(hash=False)
    qualifiers: dict[str, str] = field(hash=False)
    negated: frozenset[str] = frozenset()
    non_prefixed: frozenset[str] = frozenset()
    quantities: tuple[Quantity, ...] = ()
    term_words: frozenset[str] = frozenset()
    modalities: frozenset[str] = frozenset()
    organs: frozenset[str] = frozenset()
    negation_cue: bool = False
    foreign_negation: bool = False
    other_script: bool = False
    folded: bool = False
    non_whole: str | None = None
    marks: tuple[int, int] = (0, 0)

    @property
    def asserted(self) -> frozenset[str]:
        return frozenset(self.words) - self.negated


@lru_cache(maxsize=8192)
def _is_location_word(word: str) -> bool:
    return bool(group_values({word}).keys() & set(LOCATION_GROUPS))


def _split_megaly(words: list[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        if w in MEGALY:
            out.extend([MEGALY[w], "enlargement"])
        else:
            out.append(w)
    return out


def _term_words(canon: str) -> frozenset[str]:
    found: set[str] = set()
    padded = f" {canon} "
    for term in multiword_terms():
        if f" {term} " in padded:
            found.update(content_tokens(term))
    return frozenset(found)


@lru_cache(maxsize=16384)
def read(answer: str | None) -> Reading:
    """The structure of one answer (see the module docstring)."""
    from medrl.answers.guard import strip_answer
    from medrl.answers.clinical.negation import negated_tokens

    norm = normalise(strip_answer(answer))
    low = " ".join(norm.text.lower().split())
    whole = _NON_WHOLE.match(low)
    low, foreign = rewrite_negations(low)
    low = expand_sides(low)
    low = _NUMBER_WORD.sub(_number_word, _ORDINAL.sub(r"\1", canonical_text(low)))
    qs, rest = quantities(low)
    rest = join_negation_terms(canonical_text(rest))
    canon = rest
    words = _split_megaly([w for w in content_tokens(rest) if not w.isdigit()])
    negation_cue = bool(set(all_tokens(rest)) & NEGATION_CUES) or norm.negation_marks > 0
    negated: set[str] = set()
    if negation_cue:
        negated = set(_split_megaly(sorted(negated_tokens(rest))))
        # a bare "no X" / "not X" at the start negates everything after it (negspacy may stop early)
        if re.match(r"^\s*(?:no|not|without|none of)\b", rest):
            negated |= set(words)
    tokens = set(words)
    groups = group_values(tokens)
    locations = {g: frozenset(v) for g, v in groups.items() if g in LOCATION_GROUPS}
    loc_words = {w for w in tokens if _is_location_word(w)}
    if "bilateral" in tokens:
        loc_words.add("bilateral")
    terms = _term_words(canonical_text(rest))
    quals = {w: qualifier_kind(w) for w in tokens if qualifier_kind(w) and w not in terms and w not in loc_words}
    quals = {w: k for w, k in quals.items() if k}
    concepts = frozenset(tokens - loc_words - set(quals))
    non_prefixed = frozenset(w[3:] for w in tokens if w.startswith("non") and len(w) >= 7)
    return Reading(
        raw=answer or "", text=norm.text, canonical=canon, words=tuple(words), concepts=concepts,
        locations=locations, qualifiers=quals, negated=frozenset(negated), non_prefixed=non_prefixed,
        quantities=tuple(qs), term_words=terms, modalities=frozenset(groups.get("modality", ())),
        organs=frozenset(groups.get("organ", ())), negation_cue=negation_cue, foreign_negation=foreign,
        other_script=norm.other_script, marks=(norm.negation_marks, norm.affirmation_marks), folded=norm.folded,
        non_whole=whole.group(1) if whole else None)
