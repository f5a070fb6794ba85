"""An answer's text made comparable: Unicode, look-alike letters, markup and marks.

:func:`normalise` returns a :class:`Normalised` text in which

- directional marks outside a word are dropped (:func:`medrl.answers.guard.drop_format_marks`);
- Unicode is NFKC-normalised and look-alike letters of other scripts are folded to Latin
  (Cyrillic "о" and Greek "ο" are the Latin "o": a homoglyph spelling reads as the word it shows);
- markup is unwrapped (``**X**``, ``__X__``, ``*X*``, ``<b>X</b>`` and other inline HTML tags,
  ``\\boxed{X}``, ``\\text{X}``, ``$X$``, backticks) and HTML comments are dropped;
- strikethrough (``~~X~~``, ``<s>X</s>``, ``<del>X</del>``, ``<strike>X</strike>``), the marks
  ✗ ❌ ✘ ✖ and the signs "(-)", "(neg)", "-ve", a minus glued to a word ("-X") or left dangling
  at the end ("X -") are read as a
  *negation* of X ("no X"); ✓ ✔ ☑ and "(+)", "+ve" as an affirmation (dropped; a tick alone is "yes",
  a cross alone "no");
- letters that remain in another script are reported (``other_script``): the structure cannot
  read their meaning, so such an answer is never judged correct.

Invisible characters are kept, so the shared guard (:func:`medrl.answers.guard.guard_answer`)
still sees them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Look-alike letters (Cyrillic, Greek, a few Latin variants) -> the Latin letter they show.
_CONFUSABLES = str.maketrans({
    # Cyrillic lower / upper
    "а": "a", "в": "b", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j", "к": "k", "м": "m", "н": "h",
    "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "һ": "h", "ӏ": "l", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "І": "I", "Ї": "I", "Ј": "J", "К": "K", "М": "M", "Н": "H",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
    "Һ": "H", "Ӏ": "I",
    # Greek lower / upper
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "τ": "t", "υ": "u", "ι": "i", "κ": "k", "χ": "x", "ϲ": "c",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # dotless i, long s, and dashes/quotes made ASCII
    "ı": "i", "ſ": "s", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
    "\u2212": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
})
_NEG_MARKS = "\u2717\u2718\u274c\u2716\u274e\u2a2f\u2612"   # ✗ ✘ ❌ ✖ ❎ ⨯ ☒
_POS_MARKS = "\u2713\u2714\u2611\u2705"                    # ✓ ✔ ☑ ✅
# "(-)" / "(neg)" / a minus sign glued to a word ("-Hydrocephalus"): negative; "(+)" positive
# also a minus left dangling at the end ("X -") and the shorthand "-ve" / "+ve"
_SIGN_NEG = re.compile(r"\(\s*[-−]\s*\)|^\s*[-−](?=[^\W\d_])|\(\s*neg\.?\s*\)|(?<=\s)[-−]\s*$|(?<![\w+-])[-−]\s?ve\b",
                       re.IGNORECASE)
_SIGN_POS = re.compile(r"\(\s*\+\s*\)|\(\s*pos\.?\s*\)|(?<![\w+-])\+\s?ve\b", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
# the struck text holds no tag of its own kind, so each opening tag looks only as far as the next
# one ("<s>a <s>a <s>a ..." without a closing tag stays linear)
_STRIKE = re.compile(r"~~((?:(?!~~).)+?)~~|<(s|del|strike)\b[^>]*>((?:(?!</?(?:s|del|strike)\b).)*?)</\2\s*>"
                     r"|<([a-z]+)\b[^<>]*line-through[^<>]*>((?:(?!</?\4\b).)*?)</\4\s*>", re.IGNORECASE | re.DOTALL)
_LATEX = re.compile(r"\\(?:boxed|text|textbf|textit|mathrm|mathbf|emph|underline)\s*\{([^{}]*)\}")
_DOLLAR = re.compile(r"\$\$?([^$]*)\$\$?")
# the listed wrappers, without attributes: a tag with a style or class is not a listed change
# (default-deny: it stays in the text, and its "<" is an unknown character)
_TAG = re.compile(r"</?\s*(?:b|i|u|em|strong|mark|span|font|sup|sub|code|p|div|small|big|tt|ins|br|hr)\s*/?>",
                  re.IGNORECASE)
#: punctuation an answer may carry without the reference (everything else must be in the reference)
CLOSED_PUNCTUATION = frozenset(".,;:'\"()[]-/?%\u00b0")
# emphasis wrappers: the content holds no character of its delimiter, so each match is found in
# one pass (a lazy ".+?" here made "*a *a *a ..." quadratic)
_EMPHASIS = re.compile(r"\*\*(?=\S)([^*]+?)(?<=\S)\*\*|__(?=\S)([^_]+?)(?<=\S)__|\*(?=\S)([^*]+?)(?<=\S)\*"
                       r"|(?<![A-Za-z0-9])_(?=\S)([^_]+?)(?<=\S)_(?![A-Za-z0-9])")
_DOTTED_UNIT = re.compile(r"(?<=\d)(\s*)(c|m)\.m\.?(?!\w)", re.IGNORECASE)
_TIMES = re.compile(r"(?<=\d)\s*\u00d7\s*(?=\d)")
_BACKTICKS = re.compile(r"(`+)([^`]+)\1")  # a code span `X` (a lone backtick is no wrapper)


@dataclass(frozen=True)
class Normalised:
    """``text``: the readable answer ("no X" for a struck-out X); ``negation_marks``: how many
    strikethroughs / ✗ marks were read as negations; ``affirmation_marks``: ✓ marks dropped;
    ``other_script``: letters of another script remain (meaning unreadable here)."""

    text: str
    negation_marks: int = 0
    affirmation_marks: int = 0
    other_script: bool = False
    folded: bool = False


#: characters whose Unicode normal form would change what they say: the Greek question mark
#: (U+037E) is a question mark, although NFC and NFKC turn it into a semicolon
_MEANING = str.maketrans({"\u037e": "?", "\u3002": "."})  # (and the ideographic full stop is a full stop)
#: compatibility decompositions that change a character's meaning, not only its look: a
#: superscript or subscript digit ("3²" is not "32"), a circled number, a vulgar fraction
#: ("½" is not "1/2" written with a fraction slash). NFKC leaves these characters as they are,
#: so they stay unknown symbols (``unknown_characters``); font, width, ligature, square-unit
#: ("㎝") and small/vertical forms keep their meaning and are normalised.
UNSAFE_COMPAT = ("<super>", "<sub>", "<circle>", "<fraction>")
_VARIATION = re.compile(r"(?<=[^\w\s])[\ufe00-\ufe0f]")


def _nfkc(text: str) -> str:
    """NFKC, except the characters of :data:`UNSAFE_COMPAT` (kept as written) and the Greek
    question mark (a "?")."""
    text = text.translate(_MEANING)
    if text.isascii():
        return text
    out, start = [], 0
    for i, ch in enumerate(text):
        if not ch.isascii() and unicodedata.decomposition(ch).startswith(UNSAFE_COMPAT):
            out.append(unicodedata.normalize("NFKC", text[start:i]))
            out.append(ch)
            start = i + 1
    out.append(unicodedata.normalize("NFKC", text[start:]))
    return "".join(out)


def fold_confusables(text: str) -> str:
    """NFKC (:func:`_nfkc`: not the characters whose meaning it would change), variation
    selectors after a symbol dropped ("✔️" is "✔"), then look-alike letters of other scripts as
    the Latin letters they show."""
    return _VARIATION.sub("", _nfkc(text)).translate(_CONFUSABLES)


def has_other_script(text: str) -> bool:
    """True when a letter of ``text`` is not a Latin letter (after :func:`fold_confusables`)."""
    if text.isascii():
        return False
    for ch in text:
        if ch.isalpha() and not unicodedata.name(ch, "").startswith("LATIN"):
            return True
    return False


def unwrap_markup(text: str) -> str:
    """Markup removed, its content kept (strikethrough is handled by :func:`normalise`)."""
    t = _COMMENT.sub(" ", text) if "<!--" in text else text
    if not any(c in t for c in "\\$<*_`"):
        return t  # no markup character: nothing to unwrap
    for _ in range(3):  # nested markup: **\\boxed{X}**
        t = _LATEX.sub(r"\1", t)
        t = _DOLLAR.sub(r"\1", t)
        t = _TAG.sub(" ", t)
        t = _EMPHASIS.sub(lambda m: next(g for g in m.groups() if g is not None), t)
    return _BACKTICKS.sub(r"\2", t)


@lru_cache(maxsize=16384)
def normalise(text: str | None) -> Normalised:
    """The comparable form of an answer (see the module docstring)."""
    from medrl.answers.guard import drop_format_marks

    t = fold_confusables(drop_format_marks(text or ""))
    t = _COMMENT.sub(" ", t) if "<!--" in t else t
    struck = 0

    def _strike(m: re.Match) -> str:
        nonlocal struck
        struck += 1
        inner = next(g for g in (m.group(1), m.group(3), m.group(5)) if g is not None)
        return f" no {inner} "

    if "~~" in t or "<" in t:
        t = _STRIKE.sub(_strike, t)
    t, sign_neg = _SIGN_NEG.subn(" ", t)
    t, sign_pos = _SIGN_POS.subn(" ", t)
    neg_marks = sum(t.count(c) for c in _NEG_MARKS) + sign_neg
    pos_marks = sum(t.count(c) for c in _POS_MARKS) + sign_pos
    if neg_marks:
        t = "no " + re.sub(f"[{_NEG_MARKS}]", " ", t).strip()
    if pos_marks:
        t = re.sub(f"[{_POS_MARKS}]", " ", t)
        if not neg_marks and not any(ch.isalnum() for ch in t):
            t = "yes"  # a tick alone says yes
    t = unwrap_markup(t)
    t = _TIMES.sub(" x ", t)  # "2.5 × 1.7 cm": the multiplication sign of a dimension
    t = _DOTTED_UNIT.sub(lambda m: f"{m.group(1)}{m.group(2)}m", t)  # "3.4 c.m." is "3.4 cm"
    t = re.sub(r"[ \t]+", " ", t).strip()
    folded = (text or "") != "" and _nfkc(text or "") != fold_confusables(text or "") and \
        has_other_script(_nfkc(text or ""))
    return Normalised(t, struck + neg_marks, pos_marks, has_other_script(t), folded)


def _known_char(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum() or ch.isspace() or ch in CLOSED_PUNCTUATION
    if ch.isalpha():  # an accented Latin letter ("é"): its base letter is ASCII
        base = unicodedata.normalize("NFKD", ch)[0]
        return base.isascii() and base.isalpha()
    return False


@lru_cache(maxsize=32768)
def unknown_characters(answer: str | None, reference: str | None = None) -> str:
    """Characters of ``answer`` that no listed normalisation explains (default-deny), in order,
    each once: after :func:`normalise` (NFKC, look-alike letters, markup wrappers, strikethrough
    and ✗/✓ marks), anything but ASCII letters and digits, accented Latin letters, whitespace and
    :data:`CLOSED_PUNCTUATION` - unless the reference holds the same character ("HER2+" for
    "HER2+"). A sign ("Ø", "∅", "🚫", "☓"), a small capital ("ɴᴏ"), another script's
    punctuation ("؟", "¿") or a styled HTML tag is never dropped silently: it makes the answer
    undecided (:func:`medrl.answers.decide`)."""
    ref = set(normalise(reference or "").text) | set(reference or "")
    seen: dict[str, None] = {}
    for ch in normalise(answer or "").text:
        if ch not in ref and not _known_char(ch):
            seen[ch] = None
    return "".join(seen)
