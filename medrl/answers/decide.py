"""The one answer decision: :func:`decide` (and :func:`override`, its LLM-judge tier).

Every path that asks "is this answer correct?" calls :func:`decide` - the rewards (through
:func:`medrl.rewards.base.answer_rejection` and :mod:`medrl.rewards.correctness`), the judges
(the OpenAI judge calls :func:`override` before any request; the reference judge's verdict is
this decision), evaluation scoring, the monitor and the reward audit. Order:

1. no reference: only the reference-free shape rules of the guard apply (else undecided);
2. an answer that holds think/answer tags: a completion with no one answer
   (:func:`medrl.answers.completion.answer_problem`: two answer blocks, an answer inside the
   reasoning, text after the answer) -> wrong with that reason, else a stray tag;
3. before anything parses the answer (linear in the answer): padding by length, a sentence or a
   word said over and over (:func:`medrl.answers.guard.repeated_sentences`,
   :func:`~medrl.answers.guard.repeated_words`) -> wrong; an answer more than ``READ_FACTOR`` x
   its reference + ``READ_SLACK`` characters (only a report-length reference lets one past the
   padding rules) -> the reference-free shapes refuse it, else ``LONG_ANSWER`` (undecided, for an
   LLM judge: the structure does not read it); directional marks outside words are dropped;
4. a multiple-choice record: a one-character answer is an option label, right or wrong;
5. the listed rewrites of the answer, and only these (:mod:`medrl.answers.rewrites`: sentence
   frames, emphasis and certainty, reported speech, a double negation, count words around a
   count, a type word after it, "w/"); then the answer read as claims
   (:mod:`medrl.answers.compose`, answers up to ``COMPOSED_CHARS``): a check list ("[x] X [ ] W")
   or, against a reference that states something, a contrast ("not W but X", "X rather than
   W", "W ruled out; X", "Is it W? No, X") -> denying the reference is wrong, the stated part is
   decided as the answer, and it is correct only when every denied part is another answer
   (:func:`_decide_claims`); the answer with its translation beside it ("abdomen (腹部)") -> the
   answer decides, the translation (the gloss table) must say the same, else undecided; and a
   parenthesis restating the answer ("IVC (inferior vena cava)", "2 (two)");
6. the hard mismatch (:func:`medrl.answers.equivalence.hard_mismatch`: the guard's shapes, then
   contradictions) -> wrong; another organ named as a landmark ("the large organ under the right
   hemidiaphragm") is not a contradiction -> undecided;
7. default-deny normalisation: a character no listed normalisation explains
   (:func:`medrl.answers.equivalence.normalise.unknown_characters`) -> undecided; a number
   written as an ordinal on one side and a count on the other ("4 ventricles" for "4th
   ventricle", "1st" for "one") -> undecided, before any identity;
8. a yes/no reference: the answer's polarity is read from the whole answer
   (:mod:`medrl.answers.equivalence.polarity`: "None seen" says no, "Not absent" yes); parts
   that say both ("No. Present.") -> ``CONTRADICTORY`` (undecided);
   a reference that is a number or count is compared by its number: the same number, with at most
   a type word the question uses ("2 kidneys" for "How many kidneys?") -> correct; "None" for
   "0" (after the guard and the hard mismatch, like every answer) -> correct; an answer that
   gives no number ("See image", "Present") -> undecided;
9. :func:`medrl.answers.equivalence.equivalent` (exact, lexicon, polarity, none-found, list,
   structure) -> correct, except an image qualifier (view, plane, sequence, contrast) on a
   reference that names no image, which is ``MORE_SPECIFIC``; what it cannot settle is
   undecided: the whole reference plus unread words (``UNKNOWN_WORD``: "X-like", "consider X",
   "formerly X", "X WNL"), plus a landmark preposition (``LANDMARK``: "above X"), plus a place or
   structure that is not one lexicon term with the reference (``MORE_SPECIFIC``: "left lung,
   upper zone"; "pleural effusion" for "effusion" stays ``OPEN``), or an open paraphrase
   (``OPEN``);
10. a correct answer that is not the reference by identity must account for every word the
    structure does not read (:func:`medrl.answers.words.unaccounted`): a tense or modal word
    ("X was present", "had X") is ``UNKNOWN_WORD``, a relation word on one side only ("under"
    for "on") is ``RELATION``, both undecided.

Undecided is not correct for the offline reference judge, and a question for an LLM judge.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from medrl.answers.verdict import (
    CERTAIN_SHAPES,
    CONTRADICTIONS,
    IDENTITY,
    SUSPECT,
    Decision,
    Reason,
    Verdict,
    correct,
    reason_of,
    undecided,
    wrong,
)

_RESTATED = re.compile(r"^(?P<x>[^()]*\S)\s*\((?P<y>[^()]+)\)$")
_TAG = re.compile(r"<\s*/?\s*(?:think(?:ing)?|answer)\s*>", re.I)
_DECIMAL_COMMA = re.compile(r"\d,\d")
_LANDMARK = re.compile(r"\b(?:under|below|above|beneath|underneath|near|next to|adjacent to|behind|in front of|"
                       r"beside|between|along|within|inside|posterior to|anterior to|lateral to|medial to|"
                       r"superior to|inferior to|over|around|abutting|surrounding)\b", re.I)
# an option label in a multiple-choice reference: "(B) ...", "B) ...", "B. ...", "B: ...", "Option B ..."
_OPTION = re.compile(r"^(?:\(\s*([A-Za-z0-9])\s*\)|option\s+([A-Za-z0-9])\b|([A-Za-z0-9])\s*[).:](?:\s|$))", re.I)


def option_label_match(label: str, reference: str) -> bool:
    """A one-character answer against a reference: the same character, the reference's option
    label ("B" for "B", "Option B", "(B) Pneumonia", "B. Pneumonia"; never the first letter of a
    word: "R" is no label of "R frontal lobe"), or what the decision pays a one-character answer
    without options ("R" for "Right", "2" for "two"), so evaluation grades letters as training
    decides them."""
    from medrl.answers.guard import strip_answer
    from medrl.answers.clinical.lexicon import canonical_text

    ref = strip_answer(reference)
    if label.casefold() == ref.casefold() or canonical_text(label) == canonical_text(ref):
        return True
    m = _OPTION.match(ref)
    if m and next(g for g in m.groups() if g).casefold() == label.casefold():
        return True
    return _decide(label, reference, None, False).verdict is Verdict.CORRECT  # "R" for "Right", "2" for "two"


def nfkc_letters_digits(text: str) -> str:
    """NFKC on letters and digits only (math-bold "𝟐" -> "2", fullwidth "Ｌ" -> "L"): a character
    whose NFKC form is not one ASCII letter or digit is kept as written, and so is a superscript,
    subscript, circled or fraction character ("3²" is not "32"; :data:`UNSAFE_COMPAT
    <medrl.answers.equivalence.normalise.UNSAFE_COMPAT>`)."""
    from medrl.answers.equivalence.normalise import UNSAFE_COMPAT

    if text.isascii():
        return text
    out = []
    for ch in text:
        if not ch.isascii() and ch.isalnum() and not unicodedata.decomposition(ch).startswith(UNSAFE_COMPAT):
            n = unicodedata.normalize("NFKC", ch)
            out.append(n if len(n) == 1 and n.isascii() and n.isalnum() else ch)
        else:
            out.append(ch)
    return "".join(out)


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


_HOW_MANY = re.compile(r"\bhow\s+many\b", re.I)


def _zero_number(text: str) -> bool:
    """The answer's numbers are all 0 ("0", "Zero", "0 masses")."""
    from medrl.answers.equivalence.structure import read

    qs = read(text).quantities
    return bool(qs) and all(q.low == 0 == q.high for q in qs)


def _says_none(reference: str) -> bool:
    """A reference that says nothing is there ("None", "No masses")."""
    from medrl.answers.equivalence.compare import _is_null
    from medrl.answers.equivalence.structure import read

    return _is_null(read(reference))


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


def _zero_count(reference: str) -> bool:
    """A count reference of 0 ("0", "zero")."""
    from medrl.answers.equivalence.structure import read

    r = read(reference)
    return _count_reference(reference) and all(q.low == 0 == q.high for q in r.quantities)


def _zero_for_zero(reference: str, answer: str, question: str | None) -> bool:
    """"None" / "No masses" for the count 0 (called after the guard and the hard mismatch, so
    "Maybe none", "None?", "None" with a hidden character or an injection never get here). What
    it denies must be what the question counts ("Pneumothorax: 0" for "How many masses?" names
    something else). A bare polarity word ("No", "Nope") is a yes/no answer, not a count: the
    guard refuses it (a yes/no answer to an open question)."""
    from medrl.answers.equivalence.compare import _is_null
    from medrl.answers.equivalence.structure import read
    from medrl.answers.guard import strip_answer, yes_no

    bare = strip_answer(answer).strip(" .!").casefold()
    if yes_no(bare) is not None and len(bare.split()) == 1:
        return False
    a = read(answer)
    if a.quantities or not _is_null(a):
        return False
    q_words = set(read(question or "").words)
    named = [w for w in a.words if a.qualifiers.get(w) is None and w not in q_words and w not in _null_words()]
    return not named


@lru_cache(maxsize=1)
def _null_words() -> frozenset[str]:
    from medrl.answers.clinical.negation_terms import terms

    return frozenset(terms("null"))


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
    d = _decide_steps(answer, reference, question, multiple_choice)
    if isinstance(d, _Composed):  # its parts were decided (and their words accounted for) one by one
        return d.decision
    if d.verdict is Verdict.CORRECT and d.reason not in IDENTITY:
        return _every_word(d, answer, reference, question)
    return d


@dataclass(frozen=True)
class _Composed:
    """A decision made from an answer's parts (:func:`_composed`)."""

    decision: Decision


def _every_word(d: Decision, answer: str, reference: str, question: str | None) -> Decision:
    """Step 10: a correct answer (not by identity) accounts for every word the structure does not read."""
    from medrl.answers.words import unaccounted

    why = unaccounted(reference, rewrite(answer, reference, question), question)
    if why is None:
        return d
    kind, words = why
    if kind == "relation":
        return undecided(Reason.RELATION, f"a relation word on one side only: {', '.join(words)} ({d})")
    return undecided(Reason.UNKNOWN_WORD, f"words the structure does not read: {', '.join(words)} ({d})")


@lru_cache(maxsize=16384)
def rewrite(answer: str, reference: str, question: str | None = None) -> str:
    """``answer`` after the listed rewrites (:mod:`medrl.answers.rewrites`: slash shorthand, a
    double negation, sentence frames, emphasis and certainty, reported speech, type words, count
    words around a count, the question restated), as step 5 of :func:`decide` reads it."""
    from medrl.answers.rewrites import double_negation, shorthand, strip_frames

    return strip_frames(double_negation(shorthand(answer), reference), reference, question=question)


def _decide_steps(answer: str, reference: str | None, question: str | None,
                  multiple_choice: bool) -> Decision | _Composed:
    from medrl.answers.equivalence import equivalent, hard_mismatch
    from medrl.answers.equivalence.normalise import normalise, unknown_characters
    from medrl.answers.equivalence.quantities import number_form_clash
    from medrl.answers.guard import (drop_format_marks, guard_answer, repeated_sentences, repeated_words,
                                     strip_answer)

    if reference is None or not reference.strip():
        why = guard_answer(answer, None, question=question, allow_one_char=multiple_choice)
        return wrong(reason_of(why), why) if why else undecided(Reason.NO_REFERENCE, "no reference answer")
    if _TAG.search(answer) and not _TAG.search(reference):
        from medrl.answers.completion import answer_problem

        problem = answer_problem(answer)
        if problem:
            return wrong(reason_of(problem), problem)
        return wrong(Reason.STRAY_TAG, "a think/answer tag inside the answer")
    if _far_too_long(answer, reference):  # before anything parses it: linear in the answer
        return wrong(Reason.PADDED, f"padded ({len(answer)} characters for a {len(reference)}-character reference)")
    if repeated_sentences(answer, reference) or repeated_words(answer, reference):  # before anything parses it
        return wrong(Reason.PADDED, "padded (repetition): a sentence or a word said over and over")
    if len(answer) > READ_FACTOR * len(reference) + READ_SLACK:  # far longer than a long reference: not read
        why = guard_answer(answer, reference, question=question, long_form=True)
        if why:
            return wrong(reason_of(why), why)
        return undecided(Reason.LONG_ANSWER, f"{len(answer)} characters for a {len(reference)}-character reference: "
                                             f"read by an LLM judge, not by the structure")
    answer = nfkc_letters_digits(drop_format_marks(answer))
    core = strip_answer(answer)
    if multiple_choice and len(core) == 1 and core.isalnum():
        if option_label_match(core, reference):
            return correct(Reason.OPTION_LABEL, "the reference's option label")
        return wrong(Reason.WRONG_OPTION, "another option label")
    if core:
        composed = _composed(rewrite(answer, reference, question), reference, question)
        if composed is not None:
            return _Composed(composed)
    text = _restatement(rewrite(answer, reference, question), reference, question) if core else answer
    rewritten = strip_answer(text) != core
    if _DECIMAL_COMMA.search(text) and not _DECIMAL_COMMA.search(reference):
        return undecided(Reason.NUMBER_FORM, "a comma between digits: a decimal comma or two numbers")
    zero = _zero_count(reference)
    why = hard_mismatch(reference, text, question=question)
    if why and _count_reference(reference) and reason_of(why) in _TYPE_WORD_REASONS and _only_question_words(
            text, question):
        why = None  # "2 kidneys" for "How many kidneys?": a type word agreeing with the question
    if why:
        reason = reason_of(why)
        if reason in (Reason.OTHER_ORGAN, Reason.OTHER_STRUCTURE) and _LANDMARK.search(text):
            return undecided(Reason.LANDMARK, f"an organ named as a landmark ({why})")
        if reason in SUSPECT:  # the same number in another form: no contradiction, not identity either
            return undecided(reason, why)
        return wrong(reason, why)
    unknown = unknown_characters(text, reference)
    if unknown:
        return undecided(Reason.UNKNOWN_SYMBOL, f"characters no listed normalisation explains: {unknown!r}")
    foreign = _foreign_letters(reference, text)
    if foreign:
        return undecided(Reason.UNKNOWN_SYMBOL, f"letters the reference does not have: {foreign!r}")
    clash = number_form_clash(normalise(reference).text.lower(), normalise(text).text.lower())
    if clash:
        return undecided(Reason.NUMBER_FORM, f"{'/'.join(map(str, clash))} as an ordinal on one side and a count "
                                             f"on the other")
    if zero and _zero_for_zero(reference, text, question):
        return correct(Reason.NONE_FOUND, "none for a count of zero")
    if _HOW_MANY.search(question or "") and _says_none(reference) and _zero_number(text) and _only_question_words(
            text, question):
        return correct(Reason.NONE_FOUND, "a count of zero for none")
    eq = equivalent(reference, text, question=question)
    if eq.verdict is None and _contradicts_itself(reference, text, question):
        return undecided(Reason.CONTRADICTORY, f"says both yes and no ({eq.reason})")
    if eq.verdict is True and _BASIS[eq.basis] in IDENTITY and not rewritten:
        return correct(_BASIS[eq.basis], eq.reason)
    if _count_reference(reference):
        return _count_decision(reference, text, question)
    if eq.verdict is True and eq.basis == "null":
        from medrl.answers.clinical.negation_terms import terms

        unread = [w for w in _unread_words(reference, text) if w not in terms("null")]
        if unread:  # "asimen None": an unreadable word, not a null answer
            return undecided(Reason.UNKNOWN_WORD, f"words the structure cannot read: {', '.join(unread)}")
        from medrl.answers.equivalence.structure import read

        asked = set(read(question or "").words) if _HOW_MANY.search(question or "") else set()
        named = [w for w in _difference(reference, text)[1] if w not in terms("null") and w not in asked]
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


#: a denied part that is one of these contradictions of the reference is another answer ("Right
#: upper lobe, not left upper lobe": the left one is denied)
_OTHER_ANSWER = frozenset({Reason.LATERALITY, Reason.NUMBER, Reason.OTHER_ORGAN, Reason.OTHER_MODALITY,
                           Reason.OPPOSITE, Reason.OTHER_STRUCTURE})


def _contradicts_itself(reference: str, text: str, question: str | None) -> bool:
    """A yes/no reference, and an answer whose parts say opposite things ("No. Present.")."""
    from medrl.answers.equivalence.polarity import BOTH, yes_no_polarity
    from medrl.answers.guard import is_yes_no

    return is_yes_no(reference) and yes_no_polarity(text, question) == BOTH


def _plain_reference(reference: str) -> bool:
    """A reference that states something (not a yes/no, not a denial such as "None" or "No
    mass"): only its answers are read as a contrast of a stated and a denied part."""
    from medrl.answers.equivalence.compare import _is_null
    from medrl.answers.equivalence.structure import read
    from medrl.answers.guard import is_yes_no

    r = read(reference)
    return not is_yes_no(reference) and not r.negation_cue and not _is_null(r)


#: the longest answer read as claims (a contrast, a check list, a translation beside the answer)
COMPOSED_CHARS = 1_000
#: an answer longer than READ_FACTOR x its reference + READ_SLACK characters is not read by the
#: structure (only a report-length reference lets one through the padding rules): undecided, for an
#: LLM judge; this bounds the time of one decision (benchmarks/answer_decision.py)
READ_FACTOR, READ_SLACK = 2, 2_000


def _composed(text: str, reference: str, question: str | None) -> Decision | None:
    """The decision of an answer read as claims (:mod:`medrl.answers.compose`): a check list or a
    contrast (against a reference that states something), or the answer with its translation;
    None when it is neither, or when it is longer than :data:`COMPOSED_CHARS` (a short answer's
    shapes; a report-length text is read as one)."""
    from medrl.answers.compose import claims, gloss
    from medrl.answers.guard import guard_answer, padded

    if len(text) > COMPOSED_CHARS:
        return None  # a report-length answer is read as one text (an LLM judge reads it)
    if padded(text, reference) or guard_answer(text, reference, question=question, long_form=True):
        return None  # padding, an injection, hidden characters: the whole answer is refused as such
    cl = claims(text, contrast=_plain_reference(reference))  # a check list against any reference
    if cl is not None:
        return _decide_claims(cl, reference, question)
    g = gloss(text)
    if g is not None:
        return _decide_gloss(g[0], g[1], reference, question)
    return None


def _decide_claims(cl, reference: str, question: str | None) -> Decision:
    """A contrast or a check list: denying the reference is wrong; the stated part is decided as
    the answer; correct only when every denied part is another answer (a contradiction of the
    reference, or a part read in full that shares no word with the reference or the question)."""
    if cl.unread:
        return undecided(Reason.UNKNOWN_SYMBOL, cl.unread)
    denied = [(d, _decide(d, reference, question, False)) for d in cl.denied]
    for d, dd in denied:
        if dd.verdict is Verdict.CORRECT:
            return wrong(Reason.POLARITY, f"denies the reference ({d!r}: {dd})")
    if not cl.asserted:
        return undecided(Reason.OPEN, f"states nothing; denies {', '.join(map(repr, cl.denied))}")
    stated = cl.asserted[0] if len(cl.asserted) == 1 else ", ".join(cl.asserted)
    a = _decide(stated, reference, question, False)
    if a.verdict is not Verdict.CORRECT:
        return Decision(a.verdict, a.reason, f"{cl.how}: states {stated!r}: {a.detail}")
    unclear = [d for d, dd in denied if not _other_answer(d, dd, reference, question)]
    if unclear:
        return undecided(Reason.OPEN, f"{cl.how}: states the reference, denies what may be it: "
                                      f"{', '.join(map(repr, unclear))}")
    return correct(Reason.SAME_STRUCTURE, f"{cl.how}: states {stated!r} ({a.reason.value}), denies another answer: "
                                          f"{', '.join(map(repr, cl.denied))}")


def _other_answer(part: str, d: Decision, reference: str, question: str | None) -> bool:
    """A denied part is another answer: it contradicts the reference (another side, number,
    organ, modality, descriptor or structure), or it is read in full and shares no word with the
    reference or the question."""
    from medrl.answers.clinical.lexicon import content_tokens, stem

    from medrl.answers.guard import is_yes_no

    if d.verdict is Verdict.WRONG and (d.reason in _OTHER_ANSWER or (d.reason is Reason.POLARITY and is_yes_no(reference)
                                                                      and is_yes_no(part))):
        return True  # another side, organ, number ...; "No" beside a "Yes" reference
    words = {stem(w) for w in content_tokens(part)}
    known = {stem(w) for w in content_tokens(reference)} | {stem(w) for w in content_tokens(question)}
    return bool(words) and not (words & known) and read_in_full(part, reference, question)


def _decide_gloss(text: str, translation: str, reference: str, question: str | None) -> Decision:
    """The answer with its translation beside it: the answer decides, and the translation (read
    with the gloss table) must say the same; one the table cannot read, or one that says something
    else, leaves a right answer undecided."""
    from medrl.answers.clinical.gloss import read_gloss

    d = _decide(text, reference, question, False)
    english = read_gloss(translation)
    if english is None:
        why = f"a translation the gloss table cannot read ({translation!r})"
    elif _decide(english, text, None, False).verdict is not Verdict.CORRECT:
        why = f"a translation that says something else ({translation!r}: {english!r})"
    else:
        if d.verdict is Verdict.CORRECT:
            return correct(Reason.SAME_STRUCTURE, f"with its translation ({translation!r}: {english!r}; {d.reason.value})")
        return d
    return d if d.verdict is Verdict.WRONG else undecided(Reason.UNKNOWN_WORD, why)


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
    """What :func:`decide` settles before an LLM judge is asked (docs/judges.md, "Two tiers"):
    only what is certain.

    Correct only by identity (exact text after the listed normalisations, the lexicon's identity,
    an option label). Wrong only when certainly wrong: a shape that no wording can make correct
    (:data:`~medrl.answers.verdict.CERTAIN_SHAPES`: empty, placeholder, hidden characters, an
    injection, a hedge, a yes/no to an open question, a completion with no one answer, padding
    far beyond any answer), or - when every character and word of the answer is read
    (:func:`read_in_full`) - a candidate list or an unambiguous contradiction (polarity, a
    laterality flip, a number or unit, another organ given as the answer). Everything else is
    undecided (``Reason.OPEN`` unless :func:`decide` was more specific): the LLM judge's call.
    """
    d = decide(answer, reference, question=question, multiple_choice=multiple_choice)
    if d.verdict is Verdict.CORRECT and d.reason in IDENTITY:
        return d
    if d.verdict is Verdict.UNDECIDED:
        return d
    if d.verdict is Verdict.WRONG:
        if d.reason is Reason.PADDED and not _far_too_long(str(answer or ""), str(reference)):
            pass  # longer than the guard allows, but a judge can read it
        elif d.reason is Reason.YES_NO_TO_OPEN and not _bare_yes_no(str(answer or "")):
            pass  # "Yes, pneumothorax": the offline rules refuse the yes, a judge reads the rest
        elif d.reason in CERTAIN_SHAPES:
            return d
        elif (d.reason in CONTRADICTIONS or d.reason is Reason.CANDIDATE_LIST) and read_in_full(
                str(answer or ""), str(reference), question):
            return d
    return undecided(Reason.OPEN, f"for the LLM judge ({d})")


def _bare_yes_no(answer: str) -> bool:
    """The answer is a yes/no word and nothing else ("No.", "Nope", "Yes!")."""
    from medrl.answers.guard import is_yes_no

    return is_yes_no(rewrite(answer, ""))


def _far_too_long(answer: str, reference: str) -> bool:
    """Longer than any answer to ``reference``: ``PADDING_FACTOR`` x its length + ``PADDING_SLACK``
    characters (:mod:`medrl.answers.equivalence.compare`)."""
    from medrl.answers.equivalence.compare import PADDING_FACTOR, PADDING_SLACK

    return len(answer.strip()) > PADDING_FACTOR * len(reference.strip()) + PADDING_SLACK


@lru_cache(maxsize=1)
def _read_vocabulary() -> frozenset[str]:
    """Every word the answer structure reads, as :func:`~medrl.answers.clinical.lexicon.all_tokens`
    writes it: the lexicon, qualifiers, mismatch groups and anatomy (:func:`_known_vocabulary`),
    stop, negation, filler, relation and emphasis words, units, number and ordinal words, and
    the common findings."""
    from medrl.answers.clinical.lexicon import STOPWORDS, all_tokens, load_lexicon
    from medrl.answers.clinical.negation_terms import ROLES, terms
    from medrl.answers.equivalence.compare import FINDINGS, anatomy_words
    from medrl.answers.equivalence.quantities import CARDINAL_WORDS, ORDINAL_WORDS, UNITS
    from medrl.answers.rewrites import EMPHASIS
    from medrl.answers.words import FILLER, LIGHT_RELATIONS, RELATIONS

    words = set(_known_vocabulary()) | anatomy_words() | STOPWORDS | FILLER | LIGHT_RELATIONS | RELATIONS
    words |= set(FINDINGS) | set(EMPHASIS) | set(UNITS) | set(CARDINAL_WORDS) | set(ORDINAL_WORDS)
    words |= {w for role in ROLES for term in terms(role) for w in term.lower().split() if w.isalpha()}
    phrases = {v for v, _c, _k in load_lexicon()} | {c for _v, c, _k in load_lexicon()}
    words |= {w for ph in phrases for w in all_tokens(ph)}
    return frozenset(all_tokens(" ".join(sorted(words)))) | frozenset(words)


def read_in_full(answer: str, reference: str, question: str | None = None) -> bool:
    """Whether the structure reads every character and word of ``answer`` (after the listed
    rewrites): no unknown symbol or foreign letter, and every word known to the lexicon, the
    qualifiers, the anatomy, the closed word lists, or written in the reference or the question.
    A contradiction found in an answer read only in part ("3.4 cmm", a misspelt organ) may be a
    misreading, so it is not certain enough to refuse before an LLM judge."""
    from medrl.answers.clinical.lexicon import all_tokens
    from medrl.answers.equivalence.normalise import unknown_characters

    text = rewrite(nfkc_letters_digits(answer), reference, question)
    if unknown_characters(text, reference) or _foreign_letters(reference, text):
        return False
    known = _read_vocabulary() | set(all_tokens(reference)) | set(all_tokens(question))
    return all(w in known or any(ch.isdigit() for ch in w) for w in all_tokens(text))


def metric_text(answer: str | None, reference: str, *, question: str | None = None) -> str:
    """The text an answer metric (an embedding cosine, BERTScore, ROUGE, BLEU) scores, read as
    :func:`decide` reads it: the reference itself when the answer is the reference by identity
    (a correct answer keeps its full reward), else the answer after the listed normalisations and
    rewrites - directional marks outside words dropped, markup unwrapped, HTML comments removed,
    look-alike letters folded, strikethrough read as "no", frames and emphasis stripped. Text the
    decision does not read is never scored as content: "<!-- X --> W" is scored as "W" (and a
    styled or hidden tag is an unknown symbol, which the metrics' guard refuses)."""
    from medrl.answers.equivalence.normalise import normalise
    from medrl.answers.guard import drop_format_marks

    if not answer:
        return ""
    if decide(answer, reference, question=question).identical:
        return reference
    text = rewrite(nfkc_letters_digits(drop_format_marks(str(answer))), reference, question)
    return " ".join(normalise(text).text.split())


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
