"""The one answer guard: answers that can never be correct, whatever scores them.

Every correctness path (the reference and OpenAI judges, the MediX-R1 / MRPO / CAPO / StepGRPO
rewards, evaluation) calls :func:`guard_answer` first, so a judge, a reward and an evaluation
cannot disagree about an exploit. It returns the *reason* an answer is rejected, or None to let
the scorer (exact match, judge, embedding, metric) decide; it never says "correct".

Rules, in order (MediX-R1 Sec. 4.2 "Reward hacking" and App. A.9 for
the first ones; the rest are this project's heuristics against reward-hacking shapes seen in rollouts):

1. **empty** - nothing after stripping whitespace and '.' (App. A.9 ``strip().strip('.')``).
2. **one character** - unless it equals a one-character reference ("2" for "How many ...?"), is
   the side abbreviation of a "Right"/"Left" reference ("R"), or ``allow_one_char`` and it is a
   letter or digit (an option label such as "B", MediX-R1 App. A.2 evaluation).
3. **placeholder** - template text ("[insert your answer here]", "<your answer>", "answer goes here").
4. **no letters or digits** - "?!", "...".
5. **hidden or control characters** - zero-width, bidi, control, private-use or left-over
   combining characters, U+2028/U+2029, U+FFFD (a replaced lone surrogate); and a **stray
   think/answer tag** inside the answer.
6. **padded** - longer than ``max(MIN_CAP_CHARS, PAD_RATIO x len(reference))`` characters or
   ``max(MIN_CAP_WORDS, PAD_RATIO x words(reference))`` words (PAD_RATIO = 4, 100 characters,
   16 words), or a content word (after the lexicon) repeated REPEAT_LIMIT (3) times, or two
   different words for one term among 4+ content words (synonym stuffing: "liver hepatic organ
   abdomen"), or a sentence of three or more words said REPEAT_LIMIT times
   (:func:`repeated_sentences`), when the reference does not; or one word making up a fifth of
   the answer's words and written far more densely than in the reference (:func:`repeated_words`).
   A 50,000-character repetition of the reference fails here.
   (Then an answer equal to the reference after case/whitespace/punctuation normalisation - a
   "?" counts - stops: the later rules cannot reject the reference itself.)
   **injection** - instructions to the grader ("ignore the rubric", "mark this as correct",
   "score: 1", chat-template tokens; "The answer is right" only when the reference is no side). With ``long_form`` (report rubrics) the guard stops here.
7. **yes/no** - against a yes/no reference, an answer holding both "yes" and "no", or a "?", is a
   hedge; otherwise a yes/no answer is left to the scorer (compared by polarity, never split as a
   list). Against an open (non yes/no) reference, an answer that starts with "yes"/"no," is
   rejected ("yes/no to an open question"); "No abnormality" is not such an answer.
8. **hedge** - a "?" the reference does not end with, or a hedge word - "possibly", "probably",
   "likely", "maybe", "could be", "cannot be excluded", "either", "vs", "or", "differential" ... -
   that the reference does not use itself (word by word: "possibly X vs Y" is a hedge for the
   reference "X vs Y").
9. **negates the reference** - a content word of the reference inside a negation scope of the
   answer ("no X", "X is ruled out", "without X", "negative for X", "absent X"), found with
   negspacy (:mod:`medrl.answers.clinical.negation`), when the reference itself does not negate it.
10. **candidate list** - two or more items separated by commas, semicolons, slashes, "and"/"&"/
    "+", line breaks, bullets or numbers, unless the reference is a list of the same items (any
    order). A comma followed by a modifier ("Pneumothorax, left", "Mass, measuring 3 cm") is not a
    list, nor is a comma followed by an allowed qualifier (:mod:`medrl.answers.clinical.qualifiers`:
    "Chest X-Ray, PA view", "Liver, enlarged", "MRI, T2-weighted"); "left and right" is read as
    "bilateral" by the lexicon.

What an answer *means* against the reference (every negation form, laterality, numbers, allowed
qualifiers) is :mod:`medrl.answers.equivalence`'s business: it calls this guard first
(:func:`medrl.answers.equivalence.hard_mismatch`).

Rule 8 also rejects a correct answer written as an "or"-chain of synonyms ("Low blood flow or
less perfusion"), which MediX-R1's LLM judge accepted (App. A.2 example); a policy can always
answer with one of them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from medrl.common.text import clean_text

PAD_RATIO = 4.0
MIN_CAP_CHARS = 100
MIN_CAP_WORDS = 16
REPEAT_LIMIT = 3

_PLACEHOLDER = re.compile(
    r"""\[[^\]]*\b(?:insert|your|answer\s+here|placeholder|fill\s+in)\b[^\]]*\]   # [insert ...]
      | <\s*(?:your|insert)[^>]*>                                                # <your answer>
      | \{\s*(?:your|insert|answer)[^}]*\}                                       # {answer}
      | \binsert\s+(?:your|the|an?)\s+(?:final\s+)?answer\b
      | \byour\s+(?:final\s+)?answer\s+(?:goes\s+)?here\b
      | \banswer\s+goes\s+here\b
      | ^\s*(?:n/?a|tbd|todo|xxx+|\.\.\.|answer|final\s+answer|placeholder|none\s+provided)\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
_INJECTION = re.compile(
    r"""\bignore\s+(?:all\s+|any\s+|the\s+|your\s+|previous\s+|prior\s+|above\s+)*(?:instructions?|rules?|rubric|prompt|guidelines|criteria)
      | \b(?:mark|grade|score|rate|judge|treat|consider|label)\s+(?:this|it|the\s+(?:answer|response|prediction))\s+(?:as\s+)?(?:correct|right|true|1|yes|valid)
      | \b(?:score|grade|verdict|rating|correct)\s*[:=]\s*(?:1|true|yes|correct)\b
      | \b(?:the\s+)?(?:answer|prediction|response)\s+is\s+(?:always\s+)?(?:correct|right)\b
      | \byou\s+(?:must|should|will)\s+(?:answer|output|say|reply|return|respond)
      | \b(?:as\s+(?:the|a)\s+)?(?:judge|grader|evaluator)\s*[,:]\s
      | \bsystem\s+(?:prompt|message|override)\b
      | \b(?:answer|respond|reply|output)\s+(?:with\s+)?["']?(?:yes|true|1|correct)["']?\s+(?:to|for)\s+(?:this|every|all)
      | <\|[a-z_]+\|> | \[/?INST\] | </?(?:system|assistant|user)>
      | \bnew\s+instructions?\b | \boverride\b | \bjailbreak\b""",
    re.IGNORECASE | re.VERBOSE,
)
_HEDGE = re.compile(
    r"""\b(?:possibl[ey]|probabl[ey]|likely|unlikely|maybe|perhaps|presumabl[ey]|presumed|suspect(?:ed)?
      | can(?:not|'t|\s+not)\s+(?:be\s+)?(?:excluded|ruled\s+out|rule\s+out|exclude)
      | not\s+(?:be\s+)?(?:excluded|ruled\s+out)|either|neither|vs\.?|versus|or|and/or|differential|questionabl[ey]
      | suspicious\s+for|suggestive\s+of|concerning\s+for|concern\s+for|not\s+sure|unsure|uncertain|unclear
      | equivocal|indeterminate|borderline|rule\s+out|r/o|i\s+think|i\s+guess|i\s+believe|guess
      | one\s+of|any\s+of|some\s+kind\s+of|something\s+like|etc|appears?\s+to\s+be|looks?\s+like)\b
      | (?<![\w-])(?:may|might|could|would|should|seems?|seemingly|apparently)(?![\w-]) | \?""",
    re.IGNORECASE | re.VERBOSE,
)
#: a word every injection pattern holds (lower case): a text without any is no injection
_INJECTION_WORDS = ("ignore", "mark", "grade", "score", "rate", "judge", "treat", "consider", "label", "verdict",
                    "rating", "correct", "answer", "prediction", "response", "you", "evaluator", "system", "respond",
                    "reply", "output", "<|", "inst]", "assistant", "user", "instruction", "override", "jailbreak")


def _may_inject(text: str) -> bool:
    """A necessary condition of :data:`_INJECTION` (substring checks: a long answer is not run
    through the whole pattern when it holds none of its words)."""
    low = text.casefold()
    return any(w in low for w in _INJECTION_WORDS)


_BULLET = re.compile(r"^\s*(?:[-*\u2022\u25cf]|\d{1,2}[.)]|[a-h][.)])\s+", re.MULTILINE)
_LIST_SPLIT = re.compile(r"\s*([;,\n|&+]|/(?!\d)|\band\b|\bas\s+well\s+as\b|\balong\s+with\b|\bplus\b)\s*",
                         re.IGNORECASE)
_INLINE_NUMBER = re.compile(r"(?:^|\s)(?:\(?\d{1,2}[.)]|\(?[a-h]\))\s+")
_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # ASCII control characters but tab and newline
_LINE_SEPARATORS = re.compile("[\u2028\u2029\u0085\r\v\f]")
_STRAY_TAG = re.compile(r"<\s*/?\s*(?:think|answer)\s*>", re.IGNORECASE)
# "Yes", "Nope, ..."; "No" / "True" / "False" only alone or before punctuation ("True ribs", "No mass" are answers)
_OPEN_YES_NO = re.compile(r"^\s*(?:(?:yes|yeah|yep|nope)\b|(?:no|true|false)\s*(?:[,.;:!-]|$))", re.IGNORECASE)
_MODIFIER_START = re.compile(
    r"^(?:with|without|not|no|but|rather|below|above|beneath|behind|under|underneath|over|within|inside|"
    r"outside|along|across|adjacent|next|between|beside|toward|towards|into|through|surrounding|affecting|"
    r"associated|resulting|in|on|at|of|near|involving|measuring|extending|located|seen|noted|which|that|who|"
    r"likely|consistent|compatible|suggesting|causing|due|secondary|most|mainly|predominantly|especially|"
    r"particularly|more|less|left|right|bilateral|bilaterally|upper|lower|middle|mid|anterior|posterior|"
    r"medial|lateral|proximal|distal|superior|inferior|small|large|mild|moderate|severe|acute|chronic|"
    r"subacute|partial|complete|displaced|nondisplaced|focal|diffuse|multiple|single|solitary|"
    r"approximately|about|around|measuring|size|sized|status|post|s/p|grade|stage|type|side|lobe|"
    r"segment|aspect|portion|region|level|view|plane|image|series|phase|sequence|weighted|contrast|"
    r"\d)\b", re.IGNORECASE)
_RIGHT_SIDE = re.compile(r"(?:the\s+)?(?:answer|prediction|response)\s+is\s+right", re.IGNORECASE)
_NEGATED_PART = re.compile(r"^(?:not|no|without|but|rather)\b", re.IGNORECASE)
_YES_NO = {"yes": "yes", "no": "no", "yeah": "yes", "yep": "yes", "yup": "yes", "nope": "no", "true": "yes",
           "false": "no", "affirmative": "yes"}
_YN_LETTER = {"y": "yes", "n": "no"}  # "Y" / "N" for a yes/no reference (a one-character answer)
_WORD = re.compile(r"[a-z0-9]+")
_NONE = ("none", "zero", "nil", "nothing")


def strip_answer(text: str | None) -> str:
    """Whitespace and full stops stripped from both ends (MediX-R1 App. A.9 ``strip().strip('.')``);
    lone surrogates replaced (:func:`medrl.common.text.clean_text`)."""
    return clean_text(text or "").strip().strip(".").strip()



def is_placeholder(text: str | None) -> bool:
    """Heuristic: does the answer contain template/placeholder text instead of an answer?"""
    return bool(_PLACEHOLDER.search(text or ""))


def match_key(text: str | None) -> str:
    """Case, surrounding punctuation and whitespace runs removed: the exact-match key."""
    core = strip_answer(text).casefold()
    return " ".join(_WORD.findall(core)) + (" ?" if "?" in core else "")


def yes_no(text: str | None) -> str | None:
    """"yes"/"no" when ``text`` starts with a yes/no word ("Yes, there is ...") or is the letter
    "Y" / "N" alone, else None."""
    words = _WORD.findall(strip_answer(text).casefold())
    if len(words) == 1 and words[0] in _YN_LETTER and len(strip_answer(text)) == 1:
        return _YN_LETTER[words[0]]
    return _YES_NO.get(words[0]) if words else None


def is_yes_no(text: str | None) -> bool:
    """True for a bare yes/no answer ("Yes", "no.")."""
    words = _WORD.findall(strip_answer(text).casefold())
    return len(words) == 1 and words[0] in _YES_NO


def list_items(text: str | None) -> list[str]:
    """The candidate items of an answer (1 item when it is not a list); see rule 10."""
    t = _LINE_SEPARATORS.sub("\n", strip_answer(text))
    if not t:
        return []
    if len(_BULLET.findall(t)) >= 2:
        pieces = [(p, "\n") for p in re.split(r"\n+", _BULLET.sub("", t))]
    elif len(_INLINE_NUMBER.findall(t)) >= 2:
        pieces = [(p, ";") for p in _INLINE_NUMBER.split(t)]
    else:
        parts = _LIST_SPLIT.split(t)  # [item, separator, item, separator, ...]
        pieces = [(parts[i], parts[i - 1].strip() if i else "") for i in range(0, len(parts), 2)]
    items: list[str] = []
    for p, sep in pieces:
        p = (p or "").strip().strip(".").strip()
        if not p:
            continue
        modifier = sep == "," and (_MODIFIER_START.match(p) or _is_qualifier(p)) and (
            _NEGATED_PART.match(p) or not _is_same_kind(items[-1] if items else "", p))
        # no candidate without a word of its own ("X, as shown in this image"), nor a denial ("X; no other
        # abnormality"): both say something about the item before them
        modifier = modifier or (sep in (",", ";") and (_NEGATED_PART.match(p) or not _has_content(p)))
        if items and modifier:
            items[-1] = f"{items[-1]} {p}"  # a modifier of the previous item ("Pneumothorax, left")
        else:
            items.append(p)
    return items


def _has_content(part: str) -> bool:
    """``part`` holds a content word (or a number) after the lexicon, not only stop words."""
    from medrl.answers.clinical.lexicon import content_tokens

    return bool(content_tokens(part))


def _is_qualifier(part: str) -> bool:
    """An allowed qualifier ("PA view", "enlarged", "T2-weighted"): it qualifies the item before it."""
    from medrl.answers.clinical.qualifiers import is_qualifier_phrase

    return is_qualifier_phrase(part)


def _is_same_kind(prev: str, part: str) -> bool:
    """Two values of one exclusive group ("left, right"; "upper, lower") are candidates, not a modifier."""
    from medrl.answers.clinical.lexicon import all_tokens
    from medrl.answers.clinical.mismatch import group_values

    shared = set(group_values(set(all_tokens(prev)))) & set(group_values(set(all_tokens(part))))
    return bool(shared - {"organ", "modality"})


def _item_keys(items: list[str]) -> list[str]:
    from medrl.answers.clinical.lexicon import content_tokens

    return [" ".join(sorted(set(content_tokens(i)))) or match_key(i) for i in items]


#: variation selectors: after a symbol they only pick its emoji or text presentation ("✔️")
VARIATION_SELECTORS = frozenset(chr(c) for c in [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
#: directional marks (left-to-right, right-to-left, Arabic letter mark) and directional isolates:
#: outside a word they only set the direction a line is shown in, never its letters or their order
DIRECTION_MARKS = "\u200e\u200f\u061c\u2066\u2067\u2068\u2069"
_OUTSIDE_MARK = re.compile(f"^\\s*\ufeff|(?<![^\\W_])[{DIRECTION_MARKS}]+|[{DIRECTION_MARKS}]+(?![^\\W_])")


def drop_format_marks(text: str) -> str:
    """``text`` without the directional marks and isolates (:data:`DIRECTION_MARKS`) that stand
    outside a word (at either end, or beside a space or a punctuation mark: "\\u200eAbdomen",
    "left\\u200f lung") and without a byte-order mark at its start. A mark between two letters or
    digits ("Liv\\u200eer"), a zero-width space, a joiner and a direction *override* (U+202D,
    U+202E: the letters are shown in another order than they are stored) stay: they are hidden
    characters (rule 5)."""
    if text.isascii():
        return text
    return _OUTSIDE_MARK.sub("", text)


def _hidden_chars(text: str) -> bool:
    """Invisible, control, private-use, bidi or left-over combining characters (after NFC), line/paragraph
    separators other than a newline, and U+FFFD (a replaced lone surrogate). A variation selector
    right after a symbol ("✔️", U+2714 U+FE0F as models write it) is its presentation, not hidden;
    nor is a directional mark outside a word (:func:`drop_format_marks`)."""
    import unicodedata

    if text.isascii():
        return bool(_ASCII_CONTROL.search(text))
    prev = ""
    for ch in unicodedata.normalize("NFC", drop_format_marks(text)):
        cat = unicodedata.category(ch)
        if ch in VARIATION_SELECTORS and prev and unicodedata.category(prev).startswith("S"):
            continue
        if ch == "\ufffd" or cat in ("Cf", "Co", "Cs", "Mn", "Zl", "Zp") or (cat == "Cc" and ch not in "\n\t"):
            return True
        prev = ch
    return False


def _same_items(items: list[str], ref_items: list[str]) -> bool:
    """Each answer item is closest to one reference item (content words after the lexicon, Jaccard),
    and every reference item is named once (any order)."""
    from medrl.answers.clinical.lexicon import content_tokens

    if sorted(_item_keys(items)) == sorted(_item_keys(ref_items)):
        return True
    refs = [set(content_tokens(r)) for r in ref_items]
    hit: set[int] = set()
    for item in items:
        toks = set(content_tokens(item))
        scores = [len(r & toks) / len(r | toks) if r | toks else 0.0 for r in refs]
        best = max(scores)
        if best == 0.0 or scores.count(best) > 1:
            return False
        hit.add(scores.index(best))
    return hit == set(range(len(refs))) and len(items) == len(refs)


@lru_cache(maxsize=8192)
def _hedge_words(text: str) -> frozenset[str]:
    """The hedge words and marks of ``text`` (rule 8), case-folded, spaces collapsed."""
    return frozenset(" ".join(m.group(0).casefold().split()) for m in _HEDGE.finditer(text or ""))


def _repeats(text: str) -> str | None:
    """"repetition" when one word is written over and over ("None None None", a content word
    REPEAT_LIMIT times); "repeated term" when the lexicon maps REPEAT_LIMIT content words to one
    term, or two different words to one term among 4+ content words (synonym stuffing: "liver
    hepatic organ abdomen") - words that differ as written, so a paraphrase may do it ("CECT
    with IV contrast"); else None."""
    from collections import Counter

    from medrl.answers.clinical.lexicon import STOPWORDS, content_tokens

    words = _WORD.findall(strip_answer(text).casefold())
    if len(words) >= REPEAT_LIMIT and len(set(words)) == 1:
        return "repetition"  # one word over and over, content word or not ("None None None")
    written = Counter(w for w in words if w not in STOPWORDS)
    if written and max(written.values()) >= REPEAT_LIMIT:
        return "repetition"
    toks = content_tokens(text)
    counts = Counter(toks)
    if not counts:
        return None
    if max(counts.values()) >= REPEAT_LIMIT:
        return "repeated term"
    # synonym stuffing among 4+ content words: two different words the lexicon maps to one term
    # ("liver hepatic organ abdomen"); the same word twice ("left lung, upper lung zone") is not
    if len(toks) < 4:
        return None
    sources: dict[str, set[str]] = {}
    for word in set(words):
        for tok in content_tokens(word):
            sources.setdefault(tok, set()).add(word)
    return "repeated term" if any(len(ws) >= 2 for ws in sources.values()) else None


_SENTENCE_SPLIT = re.compile(r"[;!?\n]+|\.(?!\d)")


def repeated_words(answer: str | None, reference: str | None) -> bool:
    """One word making up a fifth or more of the answer's words and written more than
    ``max(MIN_CAP_WORDS, PAD_RATIO x`` the times the reference writes it ``)``, scaled by how much
    longer the answer is than the reference ("no no no ...", "2 x 2 x ...", "1 1 1 ..."): padding at
    the word level (linear: one count). No word of a written text comes near a fifth of it (the
    commonest English word is about one in sixteen); a short reference's answers meet the length
    cap first, so this is the cap of a long one."""
    said = _word_counts(answer or "")
    if not said:
        return False
    total = sum(said.values())
    ref = _word_counts(reference or "")
    longer = max(1.0, len(answer or "") / max(len(reference or ""), 1))
    return any(n >= REPEATED_SHARE * total and n > max(MIN_CAP_WORDS, PAD_RATIO * ref.get(w, 0)) * longer
               for w, n in said.items())


#: the share of an answer's words one word must make up to be padding by repetition (repeated_words)
REPEATED_SHARE = 0.2


@lru_cache(maxsize=4096)
def _word_counts(text: str) -> dict[str, int]:
    """How often each word is written (NFKC, lower case: fullwidth "ａ" is "a")."""
    import unicodedata
    from collections import Counter

    return dict(Counter(_WORD.findall(unicodedata.normalize("NFKC", text).casefold())))


def repeated_sentences(answer: str | None, reference: str | None) -> bool:
    """A sentence of three or more words said REPEAT_LIMIT (3) times or more, more often than the
    reference says it ("the liver is enlarged. the liver is enlarged. ..."): padding at the
    sentence level (linear: one split and a count)."""
    said = _sentence_counts(answer or "")
    if not said or max(said.values()) < REPEAT_LIMIT:
        return False
    ref = _sentence_counts(reference or "")
    return any(n >= REPEAT_LIMIT and n > ref.get(k, 0) for k, n in said.items())


@lru_cache(maxsize=4096)
def _sentence_counts(text: str) -> dict[str, int]:
    """How often each sentence of three or more words is said (by its words, lower case)."""
    from collections import Counter

    keys = (" ".join(_WORD.findall(s.casefold())) for s in _SENTENCE_SPLIT.split(text))
    return dict(Counter(k for k in keys if k.count(" ") >= 2))


def padded(answer: str | None, reference: str | None) -> bool:
    """Rule 6's length test alone (no parsing: linear in the answer): longer than
    ``max(MIN_CAP_CHARS, PAD_RATIO x len(reference))`` characters or
    ``max(MIN_CAP_WORDS, PAD_RATIO x words(reference))`` words."""
    core, ref = strip_answer(answer), strip_answer(reference)
    if len(core) > max(MIN_CAP_CHARS, PAD_RATIO * len(ref)):
        return True
    return len(core.split()) > max(MIN_CAP_WORDS, PAD_RATIO * len(ref.split()))


def guard_answer(answer: str | None, reference: str | None, *, question: str | None = None,
                 allow_one_char: bool = False, long_form: bool = False,
                 negation: tuple[frozenset[str], frozenset[str]] | None = None) -> str | None:
    """Why ``answer`` can never be a correct answer to ``reference``, or None (let the scorer decide).

    ``reference`` may be None (no reference: only the reference-free rules 1-5 and a hedge
    between yes and no apply). ``question`` is accepted for callers that have it; the rules read
    it only to tell a yes/no question from an open one. ``long_form`` (a generated report graded
    on a rubric) applies rules 1-5 only: a report is long and lists findings by nature.
    ``negation``: the negated words of the answer and of the reference when the caller has read
    them already (:func:`medrl.answers.equivalence.structure.read`), so a long answer goes through
    NegEx once. See the module docstring for the rules.
    """
    core = strip_answer(answer)
    ref = strip_answer(reference)
    if not core:
        return "empty"
    if len(core) == 1:
        if core.casefold() == ref.casefold() or (allow_one_char and core.isalnum()):
            return None
        if core.casefold() in ("r", "l") and ref.casefold() in ("right", "left") and ref[0].casefold() == core.casefold():
            return None  # "R" for "Right": the side abbreviation
        if core.casefold() in _YN_LETTER and _YES_NO.get(match_key(ref)):
            return None  # "Y" / "N" for a yes/no reference: compared by polarity
        if core.isdigit() and ref and len(ref) <= 12:
            from medrl.answers.clinical.lexicon import canonical_text

            if canonical_text(ref) == core or (core == "0" and ref.casefold() in _NONE):
                return None  # "2" for "Two"; "0" for "None" (a count of zero: the decision reads the question)
        return "one character"
    if is_placeholder(core):
        return "placeholder"
    if not any(ch.isalnum() for ch in core):
        return "no letters or digits"
    if _hidden_chars(core) and not _hidden_chars(ref):
        return "hidden or control characters"
    if _STRAY_TAG.search(core):
        return "stray think/answer tag"
    if not long_form and padded(core, ref):
        return "padded"
    if ref and match_key(core) == match_key(ref):
        return None
    injection = _INJECTION.search(core) if _may_inject(core) else None
    if injection and not (_RIGHT_SIDE.fullmatch(injection.group(0)) and "right" in _WORD.findall(ref.casefold())):
        return "injection"  # ("The answer is right" is a side when the reference names one)
    if long_form:
        return None
    repeated = _repeats(core)
    if repeated and not (ref and _repeats(ref)):
        return f"padded ({repeated})"
    if repeated_sentences(core, ref) or repeated_words(core, ref):
        return "padded (repetition)"
    word_list = _WORD.findall(core.casefold())
    if len(word_list) >= 2 and all(w in _YES_NO for w in word_list):
        return "padded (repetition)" if len(set(word_list)) == 1 else "hedge (yes and no)"
    words = set(word_list)
    ref_pol = _YES_NO.get(match_key(ref)) if ref else None
    pol = yes_no(core)
    if ref_pol or (not ref and pol):
        if {"yes", "no"} <= words or ("yes" in words and "not" in words and pol == "yes"):
            return "hedge (yes and no)"
        if "?" in core and "?" not in ref:
            return "hedge"
        if pol and _hedge_words(core) - _hedge_words(ref):
            return "hedge"  # "Yes, possibly", "No, it may not be"
        if pol:
            return None
    elif ref and _OPEN_YES_NO.match(core):
        return "yes/no to an open question"
    if not ref:
        return None
    if "?" in core and "?" not in ref:
        return "hedge"
    if _hedge_words(core) - _hedge_words(ref):
        return "hedge"  # a hedge word the reference does not use itself
    from medrl.answers.clinical.lexicon import canonical_text, content_tokens
    from medrl.answers.clinical.negation import negated_tokens

    ref_content = set(content_tokens(ref)) - {"normal", "abnormal", "present", "absent"}
    said, ref_said = negation if negation is not None else (negated_tokens(core), negated_tokens(ref))
    negated = (set(said) & ref_content) - set(ref_said)
    if negated:
        return "negates the reference"
    if canonical_text(core) == canonical_text(ref):
        return None
    items = list_items(core)
    if len(items) >= 2:
        ref_items = list_items(ref)
        if len(ref_items) >= 2 and _same_items(items, ref_items):
            return None
        if set(content_tokens(core)) == set(content_tokens(ref)) and ref_content:
            return None  # "bilateral kidneys" vs "kidneys, both sides": the same words
        return "candidate list"
    return None
