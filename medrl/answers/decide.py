"""The one answer decision: :func:`decide` (and :func:`override`, its LLM-judge tier).

Every path that asks "is this answer correct?" calls :func:`decide` - the rewards (through
:func:`medrl.rewards.base.answer_rejection` and :mod:`medrl.rewards.correctness`), the judges
(the OpenAI judge calls :func:`override` before any request; the reference judge's verdict is
this decision), evaluation scoring, the monitor and the reward audit. Order:

1. no reference: only the reference-free shape rules of the guard apply (else undecided);
2. a multiple-choice record: a one-character answer is an option label, right or wrong;
3. the listed rewrites of the answer, and only these: a sentence frame around the answer
   ("Impression: X", "The organ is X.", "Answer: X"), a type word after it ("Black in color",
   "Axial slice"), a parenthesis restating it ("IVC (inferior vena cava)", "2 (two)");
4. the hard mismatch (:func:`medrl.answers.equivalence.hard_mismatch`: the guard's shapes, then
   contradictions) -> wrong; another organ named as a landmark ("the large organ under the right
   hemidiaphragm") is not a contradiction -> undecided;
5. default-deny normalisation: a character no listed normalisation explains
   (:func:`medrl.answers.equivalence.normalise.unknown_characters`) -> undecided; an ordinal for a count
   or the other way round ("1st" for "one") -> undecided;
6. a reference that is a number or count is compared by its number: the same number, with at most
   a type word the question uses ("2 kidneys" for "How many kidneys?") -> correct; "None" for
   "0" -> correct; an answer that gives no number ("See image", "Present") -> undecided;
7. :func:`medrl.answers.equivalence.equivalent` (exact, lexicon, polarity, none-found, list, structure)
   -> correct, except an image qualifier (view, plane, sequence, contrast) on a reference that
   names no image, which is ``MORE_SPECIFIC``; what it cannot settle is undecided: the whole
   reference plus unread words (``UNKNOWN_WORD``: "X-like", "consider X", "formerly X",
   "X WNL"), plus a landmark preposition (``LANDMARK``: "above X"), plus a place or structure that
   is not one lexicon term with the reference (``MORE_SPECIFIC``: "left lung, upper zone"; "pleural
   effusion" for "effusion" stays ``OPEN``), or an open paraphrase (``OPEN``).

Undecided is not correct for the offline reference judge, and a question for an LLM judge.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from medrl.answers.verdict import (
    CONTRADICTIONS,
    IDENTITY,
    SHAPE_REASONS,
    Decision,
    Reason,
    Verdict,
    correct,
    reason_of,
    undecided,
    wrong,
)

_FRAMES = (
    re.compile(r"^(?:impression|findings?|answer|final answer|diagnosis|dx|conclusion)\s*:\s*(?P<x>\S.*)$", re.I),
    re.compile(r"^(?:the\s+)?(?:organ|structure|finding|abnormality|modality|imaging modality|plane|image plane|"
               r"answer|final answer|diagnosis|location|lesion|color|colour|shape|size|number|count|side|level|"
               r"view|sequence|part|region|organ shown|organ system|body part)\s+(?:shown\s+|seen\s+)?"
               r"(?:is|are|was|were)\s*:?\s+(?P<x>\S.*)$", re.I),
    re.compile(r"^(?:it|this|that)\s+(?:is|was)\s+(?P<x>\S.*)$", re.I),
)
#: a type word after the answer that agrees with a colour / shape / plane reference
_TYPE_SUFFIX = re.compile(r"^(?P<x>.*?\S)\s*,?\s+(?:in\s+colou?r|colou?red|in\s+shape|shaped|in\s+appearance|"
                          r"slice|section|cut|image)$", re.I)
_RESTATED = re.compile(r"^(?P<x>[^()]*\S)\s*\((?P<y>[^()]+)\)$")
_ORDINAL = re.compile(r"(?<![\w])(?:\d+\s*(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|"
                      r"ninth|tenth|eleventh|twelfth)(?![\w])", re.I)
_LANDMARK = re.compile(r"\b(?:under|below|above|beneath|underneath|near|next to|adjacent to|behind|in front of|"
                       r"beside|between|along|within|inside|posterior to|anterior to|lateral to|medial to|"
                       r"superior to|inferior to|over|around|abutting|surrounding)\b", re.I)
_WITHOUT = re.compile(r"(?<![\w/])w/o(?![\w/])\s*", re.I)
_WITH = re.compile(r"(?<![\w/])w/(?![\w/])\s*", re.I)
_OPTION = re.compile(r"^\(?\s*(?:option\s+)?([A-Za-z0-9])\s*[).:]?(?:\s|$)", re.I)


def option_label_match(label: str, reference: str) -> bool:
    """A one-character answer against a multiple-choice reference: the same character, or the
    reference's option label ("B" for "B", "Option B", "(B) Pneumonia", "B. Pneumonia")."""
    from medrl.answers.guard import strip_answer
    from medrl.answers.clinical.lexicon import canonical_text

    ref = strip_answer(reference)
    if label.casefold() == ref.casefold() or canonical_text(label) == canonical_text(ref):
        return True
    m = _OPTION.match(ref)
    return bool(m) and m.group(1).casefold() == label.casefold()


def nfkc_letters_digits(text: str) -> str:
    """NFKC on letters and digits only (math-bold "𝟐" -> "2", fullwidth "Ｌ" -> "L"): a character
    whose NFKC form is not one ASCII letter or digit is kept as written."""
    out = []
    for ch in text:
        if not ch.isascii() and ch.isalnum():
            n = unicodedata.normalize("NFKC", ch)
            out.append(n if len(n) == 1 and n.isascii() and n.isalnum() else ch)
        else:
            out.append(ch)
    return "".join(out)


def _shorthand(text: str) -> str:
    """Radiologists' slash shorthand: "w/" -> "with", "w/o" -> "without" (never a list separator)."""
    return _WITHOUT.sub("without ", _WITH.sub("with ", text))


def _frames(answer: str, reference: str) -> str:
    """The answer without the listed frames (never a frame the reference itself is written in)."""
    from medrl.answers.guard import strip_answer

    text = strip_answer(answer)
    for _ in range(2):
        before = text
        for pat in _FRAMES:
            m = pat.match(text)
            if m and not pat.match(strip_answer(reference)):
                text = strip_answer(m.group("x"))
        m = _TYPE_SUFFIX.match(text)
        if m and not _TYPE_SUFFIX.match(strip_answer(reference)):
            text = strip_answer(m.group("x"))
        if text == before:
            break
    return text


def _restatement(answer: str, reference: str, question: str | None) -> str:
    """"X (Y)" -> "X" when Y says the same as X by identity ("IVC (inferior vena cava)", "2 (two)")."""
    from medrl.answers.equivalence import equivalent
    from medrl.answers.equivalence.structure import read

    m = _RESTATED.match(answer)
    if not m:
        return answer
    x, y = m.group("x").strip(), m.group("y").strip()
    if not x or not y:
        return answer
    rx, ry = read(x), read(y)
    same_number = bool(rx.quantities) and not rx.words and not ry.words and \
        [q.low for q in rx.quantities] == [q.low for q in ry.quantities]
    if same_number or equivalent(x, y, question=question).identical:
        return x
    return answer


def _count_reference(reference: str) -> bool:
    """A number or count reference ("2", "one", "3.4 cm") with no concept word."""
    from medrl.answers.equivalence.structure import read

    r = read(reference)
    return bool(r.quantities) and not [w for w in r.words if r.qualifiers.get(w) != "filler"]


_TYPE_WORD_REASONS = (Reason.SECOND_FINDING, Reason.OTHER_ORGAN, Reason.OTHER_STRUCTURE)


def _only_question_words(answer: str, question: str | None) -> bool:
    """Every word of the answer is a number, a filler or a word of the question."""
    from medrl.answers.equivalence.structure import read

    if not question:
        return False
    a, q = read(answer), set(read(question).words)
    return bool(a.quantities) and all(w in q or a.qualifiers.get(w) == "filler" for w in a.words)


_IMAGE_KINDS = frozenset({"view", "plane", "sequence", "contrast"})


def _image_qualifier_on_a_finding(reference: str, answer: str) -> bool:
    """The answer adds a view, plane, sequence or contrast word to a reference that names no
    modality and no such word ("Diverticulitis, Posterior-Anterior, Axial plane"): those
    qualifiers describe an image, not a finding."""
    from medrl.answers.equivalence.structure import read

    r, a = read(reference), read(answer)
    if r.modalities or set(r.qualifiers.values()) & _IMAGE_KINDS:
        return False
    return any(k in _IMAGE_KINDS and w not in r.words for w, k in a.qualifiers.items())


def _zero_for_zero(reference: str, answer: str) -> bool:
    """"None" / "Zero" / "No masses" for the count 0. A bare polarity word ("No", "Nope") is a
    yes/no answer, not a count: it would pay an answer of "no" to every "how many" question whose
    count is zero, so it is left to the guard (a yes/no answer to an open question)."""
    from medrl.answers.guard import strip_answer, yes_no
    from medrl.answers.equivalence.compare import _is_null
    from medrl.answers.equivalence.structure import read

    bare = strip_answer(answer).strip(" .!").casefold()
    if yes_no(bare) is not None and len(bare.split()) == 1:
        return False
    r, a = read(reference), read(answer)
    return all(q.low == 0 == q.high for q in r.quantities) and not a.quantities and _is_null(a)


def _count_decision(reference: str, answer: str, question: str | None) -> Decision:
    from medrl.answers.equivalence.quantities import same_quantities
    from medrl.answers.equivalence.structure import read

    r, a = read(reference), read(answer)
    if not a.quantities:
        return undecided(Reason.NOTHING_OF_TYPE, "the reference is a number; the answer gives none")
    if not same_quantities(list(r.quantities), list(a.quantities)):
        return wrong(Reason.NUMBER, "another number")
    q_words = set(read(question or "").words)
    extra = [w for w in a.words if a.qualifiers.get(w) is None and w not in q_words]
    if extra:
        return undecided(Reason.UNKNOWN_WORD, f"words the reference does not account for: {', '.join(extra)}")
    return correct(Reason.SAME_COUNT, "the same number")


_BASIS = {"exact": Reason.EXACT, "lexicon": Reason.LEXICON, "polarity": Reason.YES_NO, "null": Reason.NONE_FOUND,
          "list": Reason.SAME_LIST, "structure": Reason.SAME_STRUCTURE}


@lru_cache(maxsize=65536)
def _decide(answer: str, reference: str | None, question: str | None, multiple_choice: bool) -> Decision:
    from medrl.answers.guard import guard_answer, strip_answer
    from medrl.answers.equivalence import equivalent, hard_mismatch
    from medrl.answers.equivalence.normalise import unknown_characters

    if reference is None or not reference.strip():
        why = guard_answer(answer, None, question=question, allow_one_char=multiple_choice)
        return wrong(reason_of(why), why) if why else undecided(Reason.NO_REFERENCE, "no reference answer")
    answer = nfkc_letters_digits(answer)
    core = strip_answer(answer)
    if multiple_choice and len(core) == 1 and core.isalnum():
        if option_label_match(core, reference):
            return correct(Reason.OPTION_LABEL, "the reference's option label")
        return wrong(Reason.WRONG_OPTION, "another option label")
    text = _restatement(_frames(_shorthand(answer), reference), reference, question) if core else answer
    rewritten = strip_answer(text) != core
    if _count_reference(reference) and _zero_for_zero(reference, text):
        return correct(Reason.NONE_FOUND, "none for a count of zero")
    why = hard_mismatch(reference, text, question=question)
    if why and _count_reference(reference) and reason_of(why) in _TYPE_WORD_REASONS and _only_question_words(
            text, question):
        why = None  # "2 kidneys" for "How many kidneys?": a type word agreeing with the question
    if why:
        reason = reason_of(why)
        if reason in (Reason.OTHER_ORGAN, Reason.OTHER_STRUCTURE) and _LANDMARK.search(text):
            return undecided(Reason.LANDMARK, f"an organ named as a landmark ({why})")
        return wrong(reason, why)
    unknown = unknown_characters(text, reference)
    if unknown:
        return undecided(Reason.UNKNOWN_SYMBOL, f"characters no listed normalisation explains: {unknown!r}")
    foreign = _foreign_letters(reference, text)
    if foreign:
        return undecided(Reason.UNKNOWN_SYMBOL, f"letters the reference does not have: {foreign!r}")
    if _count_reference(reference) and bool(_ORDINAL.search(text)) != bool(_ORDINAL.search(reference)):
        return undecided(Reason.NUMBER_FORM, "an ordinal for a count, or a count for an ordinal")
    eq = equivalent(reference, text, question=question)
    if eq.verdict is True and _BASIS[eq.basis] in IDENTITY and not rewritten:
        return correct(_BASIS[eq.basis], eq.reason)
    if _count_reference(reference):
        return _count_decision(reference, text, question)
    if eq.verdict is True and eq.basis == "null":
        from medrl.answers.clinical.negation_terms import terms

        unread = [w for w in _unread_words(reference, text) if w not in terms("null")]
        if unread:  # "asimen None": an unreadable word, not a null answer
            return undecided(Reason.UNKNOWN_WORD, f"words the structure cannot read: {', '.join(unread)}")
        named = [w for w in _difference(reference, text)[1] if w not in terms("null")]
        if named:  # "No pneumothorax" for "None": one finding denied is not "nothing abnormal"
            return undecided(Reason.MORE_SPECIFIC, f"names what the reference does not: {', '.join(named)}")
    if eq.verdict is True and eq.basis == "structure" and _image_qualifier_on_a_finding(reference, text):
        return undecided(Reason.MORE_SPECIFIC, f"an image qualifier (view, plane, sequence, contrast) on an answer "
                                               f"that names no image ({eq.reason})")
    if eq.verdict is True:
        reason = _BASIS[eq.basis]
        if rewritten and reason in IDENTITY:  # a frame or restatement was read: the same meaning, not identity
            return correct(Reason.SAME_STRUCTURE, f"{eq.reason} (after a listed frame or restatement)")
        return correct(reason, eq.reason)
    if eq.verdict is False:  # not reached: the hard mismatch ran first
        return wrong(reason_of(eq.reason), eq.reason)
    missing, extra = _difference(reference, text)
    if not missing and extra and _LANDMARK.search(text) and not _LANDMARK.search(reference):
        return undecided(Reason.LANDMARK, f"the reference named as a landmark ({eq.reason})")
    if not missing and (extra or eq.reason.startswith("numbers the reference does not give")):
        # the whole reference, plus something: unread words, or a more specific place or structure
        unread = _unread_words(reference, text)
        if unread or not extra:
            return undecided(Reason.UNKNOWN_WORD, eq.reason)
        if not set(extra) <= _refining_words(reference, text):  # not a named term with the reference's words
            return undecided(Reason.MORE_SPECIFIC, eq.reason)
    return undecided(Reason.OPEN, eq.reason)


def _foreign_letters(reference: str, text: str) -> str:
    """Non-ASCII letters of the answer that the reference does not hold. NFKC composes an
    inserted combining mark into its letter ("o" + U+0300 -> "ò"), so the character check sees a
    letter, and the word reader splits a word at it ("còntrast" -> "c", "ntrast"): the letter
    would vanish from the structure and a surface metric would pay the likeness. Look-alike
    letters of other scripts are folded first (a listed normalisation)."""
    from medrl.answers.equivalence.normalise import normalise

    ref = set(normalise(reference or "").text.lower()) | set(unicodedata.normalize("NFKC", reference or "").lower())
    seen = dict.fromkeys(c for c in normalise(text or "").text.lower()  # look-alike letters folded first
                         if not c.isascii() and c.isalpha() and c not in ref)
    return "".join(seen)


def _refining_words(reference: str, answer: str) -> set[str]:
    """Words of the answer inside a multi-word lexicon term that holds a word of the reference
    ("pleural" in "pleural effusion" for "effusion"): the lexicon names the pair as one finding.
    Any other added word - a place ("left lung, upper zone"), a structure, a side - is a more
    specific claim that a surface metric cannot check."""
    from medrl.answers.clinical.lexicon import content_tokens
    from medrl.answers.equivalence.structure import multiword_terms, read

    r, a = read(reference), read(answer)
    padded, ref_words = f" {a.canonical} ", set(r.concepts)  # a concept, not a place ("lower lung" for "Bottom")
    return {w for term in multiword_terms() if f" {term} " in padded and set(content_tokens(term)) & ref_words
            for w in content_tokens(term)}


def _difference(reference: str, answer: str) -> tuple[list[str], list[str]]:
    """Reference words the answer leaves out, and answer words (not allowed qualifiers) the
    reference does not have."""
    from medrl.answers.equivalence.compare import _find
    from medrl.answers.equivalence.structure import read

    r, a = read(reference), read(answer)
    r_pool, a_pool = set(r.words), set(a.words)
    missing = [w for w in r.words if not _find(w, a_pool) and r.qualifiers.get(w) != "filler"]
    extra = [w for w in a.words if not _find(w, r_pool) and a.qualifiers.get(w) is None]
    extra += [q.text for q in a.quantities if not any(q.same(x) for x in r.quantities)]  # a number added
    return missing, extra


@lru_cache(maxsize=1)
def _known_vocabulary() -> frozenset[str]:
    """Every word of the clinical lexicon (variants and canonical terms), the qualifiers and the
    mismatch groups: the words the structure can read."""
    from medrl.answers.clinical.lexicon import load_lexicon
    from medrl.answers.clinical.mismatch import _GROUPS
    from medrl.answers.clinical.qualifiers import load_qualifiers

    words = {w for v, c, _k in load_lexicon() for w in f"{v} {c}".split()}
    words |= set(load_qualifiers()) | {w for _m, table in _GROUPS.values() for t in table for w in t.split()}
    return frozenset(words)


def _unread_words(reference: str, answer: str) -> list[str]:
    """Words the answer adds to the reference that the structure cannot read: words outside the
    lexicon, the qualifiers and the anatomy ("like", "consider", "formerly"), and words that
    say nothing is abnormal ("WNL" = "normal") next to a finding."""
    from medrl.answers.clinical.negation_terms import terms
    from medrl.answers.equivalence.compare import _find, anatomy_words
    from medrl.answers.equivalence.structure import read

    r, a = read(reference), read(answer)
    pool, known, null = set(r.words), _known_vocabulary() | anatomy_words(), set(terms("null"))
    return [w for w in a.words if not _find(w, pool) and a.qualifiers.get(w) is None
            and (w not in known or w in null)]


def decide(answer: str | None, reference: str | None, *, question: str | None = None,
           multiple_choice: bool = False) -> Decision:
    """Is ``answer`` the ``reference`` answer to ``question``? The one decision (module docstring).

    ``multiple_choice``: the record shows options, so a one-character answer is an option label
    (only then). Returns a :class:`medrl.answers.Decision`: ``verdict`` (correct / wrong /
    undecided), ``reason`` (a :class:`medrl.answers.Reason`) and ``detail``.
    """
    ref = None if reference is None else str(reference)
    return _decide("" if answer is None else str(answer), ref, question, bool(multiple_choice))


def override(answer: str | None, reference: str | None, *, question: str | None = None,
             multiple_choice: bool = False) -> Decision:
    """The part of :func:`decide` that may override an LLM judge (docs/judges.md, "Two tiers").

    Correct only by identity (exact text after the listed normalisations, the lexicon's identity,
    an option label); wrong only for the answer's shape (the shared guard: empty, placeholder,
    padding, injection, hedge, candidate list, ...) or an unambiguous contradiction (polarity, a
    laterality flip, a number or unit, another organ given as the answer). Everything else is
    undecided (``Reason.OPEN`` unless :func:`decide` was more specific): the LLM judge's call.
    """
    d = decide(answer, reference, question=question, multiple_choice=multiple_choice)
    if d.verdict is Verdict.CORRECT and d.reason in IDENTITY:
        return d
    if d.verdict is Verdict.WRONG and (d.reason in SHAPE_REASONS or d.reason in CONTRADICTIONS):
        return d
    if d.verdict is Verdict.UNDECIDED:
        return d
    return undecided(Reason.OPEN, f"for the LLM judge ({d})")


def grading_refusal(reference: str | None, prediction: str | None, *, question: str | None = None,
                    long_form: bool = False, multiple_choice: bool = False) -> str | None:
    """Why a graded prediction scores 0 without a judge call, or None. A short answer with a
    reference: :func:`override` says wrong (the guard's shapes or an unambiguous contradiction);
    a report (``long_form``) or no reference: the shared guard's reference-free rules. Used by every
    grader (the OpenAI judge's ``grade`` and evaluation scoring), so training and evaluation
    refuse the same answers; option labels count only for ``multiple_choice`` records."""
    from medrl.answers.guard import guard_answer

    if long_form or reference is None or not str(reference).strip():
        return guard_answer(prediction, reference, question=question, allow_one_char=True, long_form=long_form)
    d = override(prediction, reference, question=question, multiple_choice=multiple_choice)
    return str(d) if d.verdict is Verdict.WRONG else None
