"""The yes or no an answer gives to a yes/no question, read from the whole answer.

An answer to "Is there a nodule?" may say yes or no without the word: "Present", "Positive",
"Not absent", "Seen" say yes; "Absent", "Negative", "None seen", "Zero seen", "Not identified"
say no. :func:`yes_no_polarity` reads the answer clause by clause (split at sentence marks,
semicolons, commas, colons and dashes):

- a clause that is a yes/no word ("Yes", "Nope", "Affirmative") or "Positive" / "Negative" alone
  says yes / no to the question as asked;
- any other clause is read for presence: it says the thing is there unless it holds an odd number
  of negating words ("no", "not", "none", "nothing", "zero", "without", "absent", "missing",
  "negative", "lacking", ...): "None seen" (one) says it is not, "Not absent" (two) says it is.
  Such a clause speaks only when its other words are the question's, fillers, or allowed
  qualifiers ("There is a small effusion" to "Is there an effusion?"); a clause about something
  else ("it is malignant" to "Is the mass benign?") says neither;
- presence answers the question as asked, absence its opposite - turned round for a question
  about absence ("Is the nodule absent?", "Is any rib missing?": "Present" says no).

The clauses agree -> "yes" or "no"; none speaks -> None; they disagree ("No. Present.") ->
:data:`BOTH`: a contradiction, which the decision leaves undecided (never paid, never refused as
certain before an LLM judge).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: the polarity of an answer whose clauses contradict each other
BOTH = "both"

_YES = frozenset({"yes", "yeah", "yep", "yup", "true", "affirmative", "positive", "y"})
_NO = frozenset({"no", "nope", "false", "negative", "n", "nah"})
#: words that turn a presence clause round
_NEGATING = frozenset({"no", "not", "none", "nothing", "zero", "nil", "never", "without", "absent", "absence",
                       "missing", "lacking", "lack", "negative", "neither", "nor", "0", "cannot", "n't", "nowhere"})
#: words that say the thing is there, and light words a presence clause may hold
_PRESENCE = frozenset({"present", "presence", "seen", "visible", "identified", "noted", "detected", "found", "evident",
                       "demonstrated", "shown", "positive", "exists", "exist", "there", "is", "are", "it", "this",
                       "has", "have", "shows", "show", "a", "an", "the", "of", "yes", "appreciated", "observed",
                       "see", "can", "be", "any", "in", "on", "at", "image", "picture", "scan", "identifiable"})
_ABSENCE_QUESTION = re.compile(r"\b(?:absent|missing|lacking|free\s+of|no|none)\b|(?<!\bor )\bnot\b", re.I)
_CLAUSES = re.compile(r"(?<!\d)[.;!]+(?!\d)|[,:]|\s[-\u2013\u2014]+\s|\n+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@lru_cache(maxsize=4096)
def _question_words(question: str | None) -> frozenset[str]:
    """The question's content words and their stems."""
    from medrl.answers.clinical.lexicon import content_tokens, stem

    words = set(content_tokens(question))
    return frozenset(words | {stem(w) for w in words})


def _clause_polarity(clause: str, asked: frozenset[str]) -> str | None:
    """"yes", "no" or None for one clause, before the question's sense is applied ("yes" here means
    the thing is there)."""
    from medrl.answers.clinical.lexicon import all_tokens, content_tokens, stem
    from medrl.answers.clinical.qualifiers import qualifier_kind

    words = _WORD.findall(clause.casefold().replace("n't", " n't"))
    if not words:
        return None
    if len(words) == 1 and words[0] in _YES | _NO:
        return "yes" if words[0] in _YES else "no"
    negating = sum(1 for w in words if w in _NEGATING or w == "n't")
    other = [t for t in content_tokens(clause) if t not in _PRESENCE and t not in _NEGATING and t not in asked
             and stem(t) not in asked and qualifier_kind(t) is None]
    if other:  # a clause about something else: only a leading yes/no word speaks ("No enlargement")
        return ("yes" if words[0] in _YES else "no") if words[0] in _YES | _NO and words[0] not in ("y", "n") else None
    if not negating and not (set(words) & _PRESENCE) and not (set(all_tokens(clause)) & asked):
        return None
    return "no" if negating % 2 else "yes"


def yes_no_polarity(answer: str | None, question: str | None = None) -> str | None:
    """"yes", "no", :data:`BOTH` (the clauses contradict each other) or None (no clause says
    either) for ``answer`` to the yes/no ``question`` (see the module docstring)."""
    from medrl.answers.equivalence.normalise import normalise

    text = normalise(answer or "").text
    asked = _question_words(question)
    turned = bool(_ABSENCE_QUESTION.search(question or ""))
    seen = set()
    for clause in _CLAUSES.split(text):
        clause = clause.strip()
        if not clause:
            continue
        words = _WORD.findall(clause.casefold())
        literal = len(words) == 1 and words[0] in _YES | _NO
        pol = _clause_polarity(clause, asked)
        if pol is None:
            continue
        if turned and not literal:  # presence answers a question about absence the other way round
            pol = "no" if pol == "yes" else "yes"
        seen.add(pol)
    if len(seen) > 1:
        return BOTH
    return seen.pop() if seen else None


__all__ = ["BOTH", "yes_no_polarity"]
