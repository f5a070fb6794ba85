"""What the answer-meaning layer returns: a :class:`Verdict`, a :class:`Reason` and a detail.

Reasons are members of one enum, never free text to be matched by substring: a caller that
wants to count "candidate lists" compares ``decision.reason is Reason.CANDIDATE_LIST``. The
``detail`` string is for people (logs, reports) and may change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Verdict(enum.Enum):
    """Correct, wrong, or undecided (the structure cannot settle it: an LLM judge decides; the
    offline reference judge counts it as not correct)."""

    CORRECT = "correct"
    WRONG = "wrong"
    UNDECIDED = "undecided"


class Reason(enum.Enum):
    """Why a verdict was given. The value is a stable snake-case name."""

    # ---- correct
    EXACT = "exact"                      # the same text after the listed normalisations
    LEXICON = "lexicon"                  # the same terms after the clinical lexicon
    OPTION_LABEL = "option_label"        # a multiple-choice option label of the reference
    YES_NO = "yes_no"                    # the same yes/no polarity
    NONE_FOUND = "none_found"            # both say nothing abnormal / a count of zero
    SAME_LIST = "same_list"              # the same list items, any order
    SAME_STRUCTURE = "same_structure"    # every word accounted for (reference plus allowed qualifiers)
    SAME_COUNT = "same_count"            # the reference's number, with a type word the question uses
    # ---- wrong: the answer's shape (the shared guard, medrl.answers.guard)
    EMPTY = "empty"
    ONE_CHARACTER = "one_character"
    PLACEHOLDER = "placeholder"
    NO_LETTERS = "no_letters"
    HIDDEN_CHARACTERS = "hidden_characters"
    STRAY_TAG = "stray_tag"
    PADDED = "padded"
    INJECTION = "injection"
    YES_NO_TO_OPEN = "yes_no_to_open"
    HEDGE = "hedge"
    CANDIDATE_LIST = "candidate_list"
    WRONG_OPTION = "wrong_option"
    REPEATED = "repeated"                # words that differ as written but are one term after the lexicon, 3 times
    # ---- wrong: the completion, read whole, has no one answer (medrl.answers.completion)
    MULTIPLE_ANSWERS = "multiple_answers"        # two answer blocks, a block inside the block or before the reasoning
    UNCLOSED_ANSWER = "unclosed_answer"          # a second answer block left open
    ANSWER_IN_REASONING = "answer_in_reasoning"  # an answer tag inside the reasoning
    TEXT_AFTER_ANSWER = "text_after_answer"      # text after the answer block that is not the same answer
    # ---- wrong: the answer contradicts the reference (medrl.answers.equivalence.hard_mismatch)
    POLARITY = "polarity"                # the reference's own words negated, yes for no, a finding for none
    ADDED_NEGATION = "added_negation"    # a negation the reference does not make, of words it does not name
    LATERALITY = "laterality"            # another side
    NUMBER = "number"                    # another number or unit, a number left out
    ADDED_NUMBER = "added_number"        # a number the reference (and the question) does not give
    OTHER_ORGAN = "other_organ"          # another organ given as the answer
    OTHER_MODALITY = "other_modality"
    OTHER_SCRIPT = "other_script"
    OPPOSITE = "opposite"                # another value of an exclusive descriptor (T1/T2, axial/coronal, ...)
    DROPPED_LOCATION = "dropped_location"
    MISSING_ITEM = "missing_item"
    OTHER_STRUCTURE = "other_structure"
    SECOND_FINDING = "second_finding"
    # ---- undecided
    UNKNOWN_SYMBOL = "unknown_symbol"    # a character no listed normalisation explains
    UNKNOWN_WORD = "unknown_word"        # the reference plus words the structure does not account for
    MORE_SPECIFIC = "more_specific"      # the reference plus a place or structure ("left kidney, upper pole")
    NUMBER_FORM = "number_form"          # an ordinal for a count ("1st" for "one")
    NOTHING_OF_TYPE = "nothing_of_type"  # the reference is a number/count; the answer gives none
    LANDMARK = "landmark"                # another organ named as a landmark, not as the answer
    RELATION = "relation"                # a relation word on one side only ("under" for "on", "above X")
    CONTRADICTORY = "contradictory"      # parts that say opposite things ("No. Present.")
    LONG_ANSWER = "long_answer"          # far longer than its (long) reference: not read, an LLM judge reads it
    OPEN = "open"                        # a paraphrase the structure cannot settle: the LLM judge's job
    NO_REFERENCE = "no_reference"

    @property
    def category(self) -> str:
        """A coarse group for monitoring dashboards: "list", "hedge", "negation", "padding",
        "injection", "placeholder", "yes_no_open", "hidden", "stray_tag", "one_char",
        "no_alnum", "empty", "unknown", "contradiction", "correct" or "open"."""
        return _CATEGORY.get(self, "contradiction" if self in WRONG_REASONS else "open")


CORRECT_REASONS = frozenset({Reason.EXACT, Reason.LEXICON, Reason.OPTION_LABEL, Reason.YES_NO, Reason.NONE_FOUND,
                             Reason.SAME_LIST, Reason.SAME_STRUCTURE, Reason.SAME_COUNT})
#: correct by identity: no judgement involved (may override an LLM judge)
IDENTITY = frozenset({Reason.EXACT, Reason.LEXICON, Reason.OPTION_LABEL})
#: the completion has no one answer (wrong for evaluation; unscorable for the answer rewards)
NO_ANSWER = frozenset({Reason.MULTIPLE_ANSWERS, Reason.UNCLOSED_ANSWER, Reason.ANSWER_IN_REASONING,
                       Reason.TEXT_AFTER_ANSWER})
SHAPE_REASONS = frozenset({Reason.EMPTY, Reason.ONE_CHARACTER, Reason.PLACEHOLDER, Reason.NO_LETTERS,
                           Reason.HIDDEN_CHARACTERS, Reason.STRAY_TAG, Reason.PADDED, Reason.INJECTION,
                           Reason.YES_NO_TO_OPEN, Reason.HEDGE, Reason.CANDIDATE_LIST, Reason.WRONG_OPTION,
                           Reason.REPEATED}) | NO_ANSWER
#: contradictions of the reference: certainly wrong when the answer is read in full (every
#: character and word known to the structure), so they may refuse before an LLM judge is asked
CONTRADICTIONS = frozenset({Reason.POLARITY, Reason.LATERALITY, Reason.NUMBER, Reason.OTHER_ORGAN})
#: shapes that are certainly wrong however the rest of the answer reads: refused before an LLM
#: judge is asked (docs/judges.md, "Two tiers"); a candidate list is refused there only when
#: the answer is read in full, words that differ only after the lexicon (``REPEATED``) never
CERTAIN_SHAPES = SHAPE_REASONS - {Reason.CANDIDATE_LIST, Reason.REPEATED}
WRONG_REASONS = SHAPE_REASONS | CONTRADICTIONS | frozenset({
    Reason.OTHER_MODALITY, Reason.OTHER_SCRIPT, Reason.OPPOSITE, Reason.DROPPED_LOCATION, Reason.MISSING_ITEM,
    Reason.OTHER_STRUCTURE, Reason.SECOND_FINDING, Reason.ADDED_NEGATION, Reason.ADDED_NUMBER})
#: undecided because the answer holds the reference *plus* something unread: a surface metric
#: (embedding, BERTScore, ROUGE) would pay the overlap, so answer metrics treat these as refused
SUSPECT = frozenset({Reason.UNKNOWN_SYMBOL, Reason.UNKNOWN_WORD, Reason.MORE_SPECIFIC, Reason.NUMBER_FORM,
                     Reason.NOTHING_OF_TYPE, Reason.LANDMARK, Reason.RELATION, Reason.CONTRADICTORY,
                     Reason.LONG_ANSWER})

_CATEGORY = {
    Reason.CANDIDATE_LIST: "list", Reason.HEDGE: "hedge", Reason.POLARITY: "negation", Reason.PADDED: "padding",
    Reason.INJECTION: "injection", Reason.PLACEHOLDER: "placeholder", Reason.YES_NO_TO_OPEN: "yes_no_open",
    Reason.REPEATED: "padding", **{r: "stray_tag" for r in NO_ANSWER},
    Reason.HIDDEN_CHARACTERS: "hidden", Reason.STRAY_TAG: "stray_tag", Reason.ONE_CHARACTER: "one_char",
    Reason.NO_LETTERS: "no_alnum", Reason.EMPTY: "empty", Reason.UNKNOWN_SYMBOL: "unknown",
    Reason.UNKNOWN_WORD: "unknown", **{r: "correct" for r in CORRECT_REASONS},
}


@dataclass(frozen=True)
class Decision:
    """One answer decided against one reference: ``verdict``, ``reason`` (an enum member) and a
    human-readable ``detail``."""

    verdict: Verdict
    reason: Reason
    detail: str = ""

    @property
    def correct(self) -> bool | None:
        """True / False / None (undecided)."""
        return {Verdict.CORRECT: True, Verdict.WRONG: False}.get(self.verdict)

    @property
    def identical(self) -> bool:
        """Correct by identity (exact, lexicon, option label)."""
        return self.verdict is Verdict.CORRECT and self.reason in IDENTITY

    @property
    def refused(self) -> bool:
        """Refused for an answer metric: wrong, or undecided for a :data:`SUSPECT` reason (the
        reference plus something the structure cannot read)."""
        return self.verdict is Verdict.WRONG or (self.verdict is Verdict.UNDECIDED and self.reason in SUSPECT)

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value


def correct(reason: Reason, detail: str = "") -> Decision:
    return Decision(Verdict.CORRECT, reason, detail)


def wrong(reason: Reason, detail: str = "") -> Decision:
    return Decision(Verdict.WRONG, reason, detail)


def undecided(reason: Reason, detail: str = "") -> Decision:
    return Decision(Verdict.UNDECIDED, reason, detail)


# the free-text reasons of medrl.answers.guard / medrl.answers.equivalence, by prefix, in order
_PREFIXES: tuple[tuple[str, Reason], ...] = (
    ("empty", Reason.EMPTY), ("one character", Reason.ONE_CHARACTER), ("placeholder", Reason.PLACEHOLDER),
    ("no letters", Reason.NO_LETTERS), ("hidden", Reason.HIDDEN_CHARACTERS), ("stray", Reason.STRAY_TAG),
    ("padded (repeated term)", Reason.REPEATED), ("padded", Reason.PADDED), ("injection", Reason.INJECTION),
    ("yes/no to an open", Reason.YES_NO_TO_OPEN), ("multiple_answers", Reason.MULTIPLE_ANSWERS),
    ("unclosed_answer", Reason.UNCLOSED_ANSWER), ("answer_in_reasoning", Reason.ANSWER_IN_REASONING),
    ("text_after_answer", Reason.TEXT_AFTER_ANSWER),
    ("polarity: a negation the reference does not make", Reason.ADDED_NEGATION),
    ("hedge", Reason.HEDGE), ("negates the reference", Reason.POLARITY), ("candidate list", Reason.CANDIDATE_LIST),
    ("a candidate list", Reason.CANDIDATE_LIST), ("another script", Reason.OTHER_SCRIPT),
    ("letters of another script", Reason.OTHER_SCRIPT), ("negation in another language", Reason.POLARITY),
    ("polarity", Reason.POLARITY), ("another modality", Reason.OTHER_MODALITY),
    ("names a finding where", Reason.POLARITY), ("denies every finding", Reason.POLARITY),
    ("hard mismatch (side", Reason.LATERALITY), ("hard mismatch (organ", Reason.OTHER_ORGAN),
    ("hard mismatch (modality", Reason.OTHER_MODALITY), ("hard mismatch (presence", Reason.POLARITY),
    ("hard mismatch (normal/abnormal", Reason.POLARITY),
    ("hard mismatch (number", Reason.NUMBER), ("hard mismatch (multiplicity", Reason.NUMBER),
    ("hard mismatch (vertebral level", Reason.NUMBER), ("hard mismatch (rib", Reason.NUMBER),
    ("hard mismatch (ventricle", Reason.NUMBER), ("hard mismatch (grade", Reason.NUMBER),
    ("hard mismatch", Reason.OPPOSITE), ("number form", Reason.NUMBER_FORM), ("number added", Reason.ADDED_NUMBER),
    ("number", Reason.NUMBER), ("drops the side", Reason.DROPPED_LOCATION),
    ("drops the", Reason.DROPPED_LOCATION), ("misses part", Reason.MISSING_ITEM),
    ("another structure", Reason.OTHER_STRUCTURE), ("another organ", Reason.OTHER_ORGAN),
    ("second finding", Reason.SECOND_FINDING),
)


def reason_of(text: str | None) -> Reason | None:
    """The :class:`Reason` of a free-text refusal of the guard or the hard-mismatch check (the
    one place that reads those strings), None for None. An unlisted text is a ValueError, so a
    new refusal cannot go unclassified."""
    if text is None:
        return None
    t = text.casefold()
    for prefix, reason in _PREFIXES:
        if t.startswith(prefix):
            return reason
    raise ValueError(f"answer refusal without a Reason: {text!r} (add its prefix to medrl.answers.verdict)")
