"""The medical abbreviation / synonym lexicon (data file ``lexicon.tsv``) and canonical tokens.

``lexicon.tsv`` (shipped as package data) maps a *variant* ("collapsed lung", "renal", "CXR",
"haemorrhage") to a *canonical* term ("pneumothorax", "kidney", "chest xray", "hemorrhage");
its header names the kinds of sources. :func:`canonical_text` rewrites a text with every
variant replaced by its canonical term (whole words, case-insensitive, longest variant first),
so "Fluid in the pleural space" and "pleural effusion" become the same words.
:func:`content_tokens` then drops function words and plural endings.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources

LEXICON_FILE = "lexicon.tsv"

STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being this that
    these those there here it its as into onto over under than then so such can could may might
    would should will shall do does did has have had having which what where when who whom whose
    how why i we you he she they me us our your their his her them my image images picture scan
    shown shows show showing see appears appear appearing noted note demonstrates
    demonstrate demonstrated demonstrating evident also very some any each all area region regions
    finding findings patient study view part located location seems seem consistent
    evidence sign signs there's it's answer final field fields appearance structure structures""".split()
)
from medrl.answers.clinical.negation_terms import terms as _negation_terms  # noqa: E402

NEGATION_WORDS = frozenset(_negation_terms("word"))


def data_rows(name: str, header: list[str]):
    """(line number, fields, line) of each data row of the shipped TSV file ``name``: blank and
    ``#`` lines skipped, the first other line checked against ``header`` (its leading fields);
    a wrong header raises naming the file and line."""
    text = resources.files("medrl.answers.clinical").joinpath(name).read_text(encoding="utf-8")
    seen_header = False
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if not seen_header:
            if parts[:len(header)] != header:
                raise ValueError(f"{name}:{n}: expected the header {'<TAB>'.join(header)!r}")
            seen_header = True
            continue
        yield n, parts, line


@lru_cache(maxsize=1)
def load_lexicon() -> tuple[tuple[str, str, str], ...]:
    """(variant, canonical, kind) rows of the shipped lexicon; a bad line raises naming it."""
    rows: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for n, parts, line in data_rows(LEXICON_FILE, ["variant", "canonical"]):
        if len(parts) != 3 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(f"{LEXICON_FILE}:{n}: expected 3 TAB-separated fields, got {line!r}")
        variant = basic_normalise(parts[0])
        if variant in seen:
            continue  # first entry wins
        seen.add(variant)
        rows.append((variant, basic_normalise(parts[1]), parts[2].strip()))
    return tuple(rows)


@lru_cache(maxsize=1)
def _pattern() -> tuple[re.Pattern, dict[str, str]]:
    table = {v: c for v, c, _ in load_lexicon()}
    for canon in set(table.values()):  # a canonical term maps to itself (so it is never re-split)
        table.setdefault(canon, canon)
    alts = sorted(table, key=len, reverse=True)
    pat = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(a) for a in alts) + r")(?![\w-])")
    return pat, table


_LETTER_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_NON_PREFIX = re.compile(r"\bnon\s+(?=[a-z])")


def basic_normalise(text: str | None) -> str:
    """NFKC, lower case, curly quotes and dashes made ASCII, whitespace collapsed."""
    t = unicodedata.normalize("NFKC", text or "").lower()
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("\u2013", "-").replace("\u2014", "-")
    t = _LETTER_HYPHEN.sub(" ", t)  # "fluid-attenuated" = "fluid attenuated"; "L4-L5" keeps its hyphen
    t = _NON_PREFIX.sub("non", t)  # "non-displaced" = "nondisplaced": a prefix, not a negation of what follows
    return " ".join(t.split())


@lru_cache(maxsize=1)
def _by_first_word() -> dict[str, tuple[str, ...]]:
    """Every lexicon phrase (variants and canonical terms) under its first word, longest first."""
    _pat, table = _pattern()
    out: dict[str, list[str]] = {}
    for phrase in sorted(table, key=len, reverse=True):
        out.setdefault(_FIRST_WORD.match(phrase).group(0), []).append(phrase)
    return {k: tuple(v) for k, v in out.items()}


_FIRST_WORD = re.compile(r"\w+")
_WORD_START = re.compile(r"(?<![\w-])\w+")
_WORD_OR_HYPHEN = re.compile(r"[\w-]")


def _replace_terms(t: str) -> str:
    """Every lexicon phrase of ``t`` replaced by its canonical term: the longest phrase that starts
    at a word (not after a letter, digit or hyphen) and ends before one, scanning left to right -
    what one regular expression of every phrase, longest first, would replace, found by a
    dictionary of first words (linear in the text; the alternation of ~1,300 phrases cost about
    2 microseconds a character)."""
    _pat, table = _pattern()
    by_first = _by_first_word()
    out, pos = [], 0
    for m in _WORD_START.finditer(t):
        i = m.start()
        if i < pos:
            continue  # inside a phrase already replaced
        for phrase in by_first.get(m.group(0), ()):
            end = i + len(phrase)
            if t.startswith(phrase, i) and not _WORD_OR_HYPHEN.match(t, end):
                out.append(t[pos:i])
                out.append(table[phrase])
                pos = end
                break
    out.append(t[pos:])
    return "".join(out)


#: where a long text is cut into pieces that are read one by one (no lexicon phrase holds punctuation)
_PIECE = re.compile(r"(?<=[.;,!?])\s+")


@lru_cache(maxsize=8192)
def canonical_text(text: str | None) -> str:
    """``text`` lower-cased with every lexicon variant replaced by its canonical term. A long text
    is read piece by piece (cut after punctuation; every piece cached), which gives the same text:
    no lexicon phrase or number pattern reaches across a punctuation mark."""
    t = basic_normalise(text)
    if len(t) <= 256:
        return _canonical(t)
    return " ".join(_canonical(piece) for piece in _PIECE.split(t))


@lru_cache(maxsize=65536)
def _canonical(t: str) -> str:
    # (each pattern runs only where the word it needs is there: substring checks are cheap)
    if any(w in t for w in _SPINE):
        t = _SPINE_WORDS.sub(_spine_level, t)  # "fifth cervical vertebra" = c5
    if "enlarged" in t:
        t = _ORGAN_ENLARGED.sub(r"enlarged \1", t)  # "the heart is enlarged" = "enlarged heart" (= cardiomegaly)
    once = _replace_terms(t)
    # a second pass reads a term a spelling variant hid ("lung tumour" -> "lung tumor" -> its term)
    t = _replace_terms(once) if once != t else once
    if _DIGIT.search(t):
        t = _ORDINAL_DIGITS.sub(r"\1", t)  # ordinals as numbers: "5th rib" = "5 rib"
    if "ventricle" in t:
        t = _ROMAN_AFTER.sub(lambda m: f"{_ROMAN[m.group(2)]} {m.group(1)}", t)  # "ventricle iv" = "4 ventricle"
    return _RIB_NUMBER.sub(lambda m: f"{int(m.group(1))} rib", t) if "rib" in t else t  # "rib 5" = "5 rib"


_ORDINAL_DIGITS = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
_DIGIT = re.compile(r"\d")


_SPINE = {"cervical": "c", "thoracic": "t", "dorsal": "t", "lumbar": "l", "sacral": "s"}
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
             "eleventh", "twelfth"]
_SPINE_WORDS = re.compile(r"\b(\d{1,2}(?:st|nd|rd|th)|" + "|".join(_ORDINALS) + r")\s+(cervical|thoracic|dorsal|lumbar|sacral)"
                          r"(?:\s+(?:vertebra|spine|vertebral level|level|nerve root|spinous process))?\b")
def _spine_level(m: re.Match) -> str:
    n = m.group(1)
    num = _ORDINALS.index(n) + 1 if n in _ORDINALS else int(re.sub(r"\D", "", n))
    return f"{_SPINE[m.group(2)]}{num}"


_ORGAN_ENLARGED = re.compile(
    r"\b(heart|liver|spleen|kidneys?|thyroid(?: gland)?|prostate(?: gland)?|lymph nodes?|ventricles|cardiac silhouette)"
    r"\s+(?:is|are|appears?|looks?|seems?)?\s*(?:mildly|markedly|moderately|severely|slightly|diffusely)?\s*enlarged\b")
_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4}
_ROMAN_AFTER = re.compile(r"\b(ventricle)\s+(iv|iii|ii|i)\b")
_RIB_NUMBER = re.compile(r"\bribs?\s+(\d{1,2})\b(?!\s*(?:-|and|to)\s*\d)")
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@lru_cache(maxsize=65536)
def singular(tok: str) -> str:
    """A crude English singular ("nodules" -> "nodule", "ribs" -> "rib"); short words kept; a
    possessive "'s" dropped ("patient's" -> "patient")."""
    if tok.endswith("'s") and len(tok) > 3:
        return tok[:-2]
    if len(tok) > 4 and tok.endswith("ies"):
        return tok[:-3] + "y"
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith(("ss", "us", "is", "ous", "as")):
        return tok[:-1]
    return tok


def all_tokens(text: str | None) -> list[str]:
    """Every canonical word of ``text`` (stop words kept), singularised."""
    return [singular(t) for t in _TOKEN.findall(canonical_text(text))]


def content_tokens(text: str | None) -> list[str]:
    """Canonical content words: :func:`all_tokens` without stop and negation words."""
    return [t for t in all_tokens(text) if t not in STOPWORDS and t not in NEGATION_WORDS]


_STEM_SUFFIXES = ("ations", "ation", "ements", "ement", "ments", "ment", "ings", "ing", "ates", "ated", "ate",
                  "ions", "ion", "ives", "ive", "ed", "es", "al", "ic", "ous", "ly", "e", "s")


@lru_cache(maxsize=65536)
def stem(tok: str) -> str:
    """A light suffix stripper for matching ("infiltration" ~ "infiltrate", "shaped" ~ "shape");
    pathology suffixes (-itis, -osis, -oma) are kept, so they still differ."""
    for suf in _STEM_SUFFIXES:
        if tok.endswith(suf) and len(tok) - len(suf) >= 4:
            return tok[: -len(suf)]
    return tok


def typo_equal(a: str, b: str) -> bool:
    """Same word up to one adjacent transposition ("barin"/"brain"), or one edit in a long word
    ("scolliosis"/"scoliosis", 8+ letters)."""
    if a == b:
        return True
    if len(a) == len(b) and len(a) >= 4 and sorted(a) == sorted(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 2 and diff[1] == diff[0] + 1:
            return True
    if min(len(a), len(b)) >= 8 and abs(len(a) - len(b)) <= 1:
        from difflib import SequenceMatcher

        return SequenceMatcher(None, a, b).ratio() >= 0.92
    return False


class WordIndex:
    """A set of words indexed for :func:`same_word` look-ups: exact, by stem, by letters (a
    transposition) and by one-letter deletions (one edit in a long word), so that finding a word
    in a pool of m words costs a few dictionary look-ups instead of m comparisons. The answer is
    the same as comparing with every word (:meth:`find` returns a word ``same_word`` accepts, or
    None)."""

    def __init__(self, words) -> None:
        self.words = frozenset(words)
        self.stems = {stem(w): w for w in self.words}
        self.letters: dict[tuple[int, str], list[str]] = {}
        self.deletions: dict[str, list[str]] = {}
        self.long = [w for w in self.words if len(w) >= _LONG]
        for w in self.words:
            if len(w) >= 4:
                self.letters.setdefault((len(w), "".join(sorted(w))), []).append(w)
            if len(w) >= 8:
                for d in _one_deletions(w):
                    self.deletions.setdefault(d, []).append(w)

    def find(self, word: str) -> str | None:
        if word in self.words:
            return word
        hit = self.stems.get(stem(word))
        if hit is not None:
            return hit
        cands: list[str] = []
        if len(word) >= 4:
            cands += self.letters.get((len(word), "".join(sorted(word))), ())
        if len(word) >= 7:
            for d in _one_deletions(word):
                cands += self.deletions.get(d, ())
        if len(word) >= _LONG - 1:
            cands += self.long
        return next((c for c in cands if typo_equal(word, c)), None)


#: words this long can be one SequenceMatcher "typo" apart with more than one edit: compared one by one
_LONG = 17


def _one_deletions(word: str) -> set[str]:
    """The word and every string one letter shorter (two words one edit apart share one)."""
    return {word} | {word[:i] + word[i + 1:] for i in range(len(word))}


def same_word(a: str, b: str) -> bool:
    """The same word, by spelling, stem or a typo (:func:`stem`, :func:`typo_equal`)."""
    return a == b or stem(a) == stem(b) or typo_equal(a, b)
