"""Generated attacks on the answer decision: random variants of a reference, labelled by meaning.

Where :mod:`medrl.answers.variants` lists variant kinds, this module *generates* them from a random
source, so a new shape is met by chance rather than by a list:

- ``symbol``: a character of a random Unicode general category (symbols, punctuation, marks,
  letters of other scripts, ...) inserted at a random place - meaning unknown, must not be paid;
- ``word``: a random word from the clinical lexicon, the allowed qualifiers or an English word
  list (the ``english-words`` package when installed, else spaCy's English stop words) added
  before or after the reference - meaning unknown unless the structure reads it, must not be
  paid unless it is an allowed qualifier;
- ``frame``: a sentence template that keeps the meaning ("Impression: X", "The organ is X.",
  "Answer: X", "It is X.") - must stay correct; ``consistent``: "X, consistent with <word>" - an
  added claim, must not be paid;
- ``number``: number and count formats of a count reference ("2", "two", "2 kidneys" for "How
  many kidneys?", "2 (two)", "None" for "0") - must stay correct; a changed count, an ordinal
  ("1st"), "one+" - must not be paid;
- ``abbreviation``: a radiologists' abbreviation from the lexicon in place of its term - must
  stay correct.

Each :class:`Attack` says ``expect``: "preserve" (must be correct), "flip" (a contradiction or
changed meaning, must not be paid) or "unknown" (unread content, must not be paid). The
Hypothesis strategies (:func:`attack_strategy`, :func:`unicode_insertion`) draw the same
attacks for property tests; :func:`generate` draws them from a seeded :class:`random.Random` for
the audit's large runs.
"""

from __future__ import annotations

import random
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

#: every Unicode general category an attack inserts from (all but unassigned/surrogate)
CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
              "Po", "Sm", "Sc", "Sk", "So", "Zs", "Cc", "Cf", "Co")
FRAMES = ("Impression: {x}", "The organ is {x}.", "Answer: {x}", "It is {x}.", "Findings: {x}", "Final answer: {x}",
          "The answer is {x}", "Diagnosis: {x}")
_NUM_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_ORDINALS = ("0th", "1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th", "10th")


@dataclass(frozen=True)
class Attack:
    """One generated answer: ``text``, ``family`` (symbol, word, frame, consistent, number,
    abbreviation), ``expect`` ("preserve", "flip", "unknown") and what was done (``how``)."""

    text: str
    family: str
    expect: str
    how: str = ""


@lru_cache(maxsize=None)
def _category_chars(cat: str) -> tuple[str, ...]:
    out = []
    for cp in range(0x20, 0x30000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if unicodedata.category(ch) == cat:
            out.append(ch)
        if len(out) >= 4000:
            break
    return tuple(out)


def _ascii_safe(ch: str) -> bool:
    """A character whose insertion could keep the meaning (an ASCII letter/digit/space or a
    listed punctuation mark, or a look-alike that folds to one): not an 'unknown symbol' attack."""
    from medrl.answers.equivalence.normalise import CLOSED_PUNCTUATION, fold_confusables

    from medrl.answers.equivalence.normalise import _NEG_MARKS, _POS_MARKS

    from medrl.answers.guard import DIRECTION_MARKS

    if ch.isspace() or ch in _POS_MARKS or ch in _NEG_MARKS or ch in DIRECTION_MARKS:
        # whitespace and a directional mark outside a word are listed changes; ✓ / ✗ marks are read
        return True
    f = fold_confusables(ch)
    return all(c.isascii() and (c.isalnum() or c.isspace() or c in CLOSED_PUNCTUATION) for c in f) or \
        (ch.isalpha() and unicodedata.normalize("NFKD", ch)[0].isascii())


@lru_cache(maxsize=1)
def lexicon_words() -> tuple[str, ...]:
    from medrl.answers.clinical.lexicon import load_lexicon

    return tuple(sorted({v for v, _c, _k in load_lexicon() if " " not in v and v.isalpha()}))


@lru_cache(maxsize=1)
def qualifier_words() -> tuple[str, ...]:
    from medrl.answers.clinical.qualifiers import load_qualifiers

    return tuple(sorted(load_qualifiers()))


@lru_cache(maxsize=1)
def english_words() -> tuple[str, ...]:
    """An English word list: the ``english-words`` package (web2, lower case) when installed,
    else spaCy's English stop words."""
    try:
        from english_words import get_english_words_set

        words = get_english_words_set(["web2"], lower=True, alpha=True)
    except ImportError:
        from spacy.lang.en.stop_words import STOP_WORDS as words
    return tuple(sorted(w for w in words if 3 <= len(w) <= 12))


@lru_cache(maxsize=1)
def abbreviations() -> dict[str, list[str]]:
    """canonical term -> its abbreviations in the lexicon ("right upper lobe" -> ["rul"])."""
    from medrl.answers.clinical.lexicon import load_lexicon

    out: dict[str, list[str]] = {}
    for v, c, k in load_lexicon():
        if k == "abbrev" and v != c:
            out.setdefault(c, []).append(v)
    return out


def _insert(text: str, ch: str, rng: random.Random) -> str:
    where = rng.choice(("start", "end", "inside"))
    if where == "start":
        return f"{ch} {text}" if rng.random() < 0.5 else ch + text
    if where == "end":
        return f"{text} {ch}" if rng.random() < 0.5 else text + ch
    i = rng.randrange(0, len(text) + 1)
    return text[:i] + ch + text[i:]


def symbol_attack(ref: str, rng: random.Random) -> Attack:
    cat = rng.choice(CATEGORIES)
    pool = _category_chars(cat)
    for _ in range(20):
        ch = rng.choice(pool)
        if not _ascii_safe(ch) and ch not in ref:
            return Attack(_insert(ref, ch, rng), "symbol", "unknown", f"{cat} U+{ord(ch):04X}")
    return Attack(_insert(ref, "\u2205", rng), "symbol", "unknown", "Sm U+2205")


def word_attack(ref: str, rng: random.Random) -> Attack | None:
    from medrl.answers.clinical.lexicon import content_tokens
    from medrl.answers.clinical.qualifiers import qualifier_kind

    from medrl.answers.rewrites import CERTAIN, EMPHASIS

    listed = set(EMPHASIS) | set(CERTAIN)  # "definite X": a listed rewrite, not an unknown word
    source = rng.choice(("lexicon", "english", "english"))
    words = lexicon_words() if source == "lexicon" else english_words()
    ref_tokens = set(content_tokens(ref)) | set(ref.lower().split())
    for _ in range(20):
        w = rng.choice(words)
        toks = set(content_tokens(w))
        if w in ref_tokens or not toks or toks & ref_tokens or any(qualifier_kind(t) for t in toks) or w in listed:
            continue  # a word the reference has, an allowed qualifier, a listed rewrite or no content (a stop word)
        # never "<word> None": "X none" is the listed negation shape "X: none" (no X), not an added word
        before = rng.random() < 0.5 and not _NULL_REF.match(ref)
        text = f"{w} {ref}" if before else f"{ref} {w}"
        return Attack(text, "word", "unknown", f"{source}:{w}")
    return None


def frame_attack(ref: str, rng: random.Random) -> Attack:
    tpl = rng.choice(FRAMES)
    return Attack(tpl.format(x=ref), "frame", "preserve", tpl)


def consistent_attack(ref: str, rng: random.Random) -> Attack | None:
    from medrl.answers.clinical.lexicon import content_tokens

    from medrl.answers.equivalence.compare import FINDINGS

    ref_tokens = set(content_tokens(ref))
    pool = sorted(FINDINGS - ref_tokens)
    w = rng.choice(pool)
    return Attack(f"{ref}, consistent with {w}", "consistent", "flip", w)


def _count_value(ref: str) -> int | None:
    t = ref.strip().strip(".").lower()
    if t.isdigit():
        return int(t)
    return _NUM_WORDS.index(t) if t in _NUM_WORDS else None


def number_attacks(ref: str, question: str | None, rng: random.Random) -> list[Attack]:
    """Count formats of a count reference (preserving), and changed counts / ordinals / "N+"."""
    n = _count_value(ref)
    if n is None:
        return []
    noun = _count_noun(question)
    word = _NUM_WORDS[n] if n < len(_NUM_WORDS) else str(n)
    keep = [str(n), word, f"{n} ({word})", f"{word.capitalize()}."]
    if noun:
        keep.append(f"{n} {noun}")
    if n == 0:  # a bare "No" is a yes/no answer, not a count (medrl.answers.decide)
        keep += ["None", "Zero"] + ([f"No {noun}"] if noun else [])
    other = n + rng.choice((1, 2)) if n < 8 else n - 1
    flips = [str(other), _NUM_WORDS[other] if other < len(_NUM_WORDS) else str(other), f"{word}+", f"{n}+",
             _ORDINALS[n] if n < len(_ORDINALS) else f"{n}th", f"at least {word}", f"more than {word}"]
    out = [Attack(t, "number", "preserve", "count format") for t in keep]
    out += [Attack(t, "number", "flip", "changed count") for t in flips]
    return out


_NULL_REF = re.compile(r"^\s*(?:none|no|nil|nothing|normal|absent|negative)\W*$", re.I)
_HOW_MANY = re.compile(r"how many\s+([a-z]+(?:\s+[a-z]+)?)", re.I)


def _count_noun(question: str | None) -> str | None:
    m = _HOW_MANY.search(question or "")
    if not m:
        return None
    words = m.group(1).split()
    stop = {"are", "is", "can", "do", "does", "were", "was", "of", "in"}
    return words[0] if words[0] not in stop else None


def abbreviation_attack(ref: str, rng: random.Random) -> Attack | None:
    low = " ".join(ref.lower().split())
    hits = [(term, abbr) for term, abbrs in abbreviations().items() for abbr in abbrs
            if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", low)]
    if not hits:
        return None
    term, abbr = rng.choice(sorted(hits))
    text = re.sub(rf"(?<![\w-]){re.escape(term)}(?![\w-])", abbr.upper() if len(abbr) <= 4 else abbr, low, count=1)
    return Attack(text, "abbreviation", "preserve", f"{term} -> {abbr}")


def generate(reference: str, *, question: str | None = None, n: int = 12, seed: int = 0) -> list[Attack]:
    """``n`` generated attacks on one reference (plus its count formats when it is a count),
    deterministic in ``seed`` and the reference."""
    import zlib

    rng = random.Random(zlib.crc32(f"{seed}:{reference}".encode()))
    out: list[Attack] = list(number_attacks(reference, question, rng))
    makers = (symbol_attack, symbol_attack, symbol_attack, word_attack, word_attack, frame_attack, frame_attack,
              consistent_attack, abbreviation_attack)
    tries = 0
    while len(out) < n + len(number_attacks(reference, question, random.Random(0))) and tries < 4 * n:
        tries += 1
        a = rng.choice(makers)(reference, rng)
        if a is not None and a.text.strip() and a.text != reference:
            out.append(a)
    return out


# ----------------------------------------------------------------------------- Hypothesis


def unicode_insertion(reference: str):
    """A Hypothesis strategy: ``reference`` with one character of any general category (except
    the ones that could keep the meaning) inserted anywhere."""
    from hypothesis import strategies as st

    chars = st.sampled_from(CATEGORIES).flatmap(
        lambda cat: st.characters(categories=[cat])).filter(lambda ch: not _ascii_safe(ch) and ch not in reference)
    return st.tuples(chars, st.integers(0, len(reference)), st.booleans()).map(
        lambda t: reference[:t[1]] + (f" {t[0]} " if t[2] else t[0]) + reference[t[1]:])


def attack_strategy(reference: str, *, question: str | None = None):
    """A Hypothesis strategy over :func:`generate`'s attacks of ``reference`` (seeded draws)."""
    from hypothesis import strategies as st

    return st.integers(0, 2 ** 16).flatmap(lambda seed: st.sampled_from(
        generate(reference, question=question, n=12, seed=seed)))


def _main(argv: list[str] | None = None) -> int:  # pragma: no cover - a manual preview
    ref = (argv or sys.argv[1:] or ["Left kidney"])[0]
    for a in generate(ref, n=20):
        print(f"{a.expect:9} {a.family:13} {a.text!r}")
    return 0
