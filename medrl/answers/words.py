"""Every word of an answer accounted for: the closed list of words that carry no claim.

The structure of an answer (:mod:`medrl.answers.equivalence.structure`) reads its *content*
words - lexicon terms, places, qualifiers, numbers, negation. The small words it leaves out are
not all empty: "may have X" is a hedge, "X was present" and "had X" speak of another time,
"under the right shoulder" is not "on the right shoulder". So a decision that an answer is
correct by structure holds only when every one of those small words is accounted for
(:func:`unaccounted`):

- a word of :data:`FILLER`, the closed list of words that carry no claim of their own (articles,
  the present copula, "there", "it", picture words such as "image" or "shown"); the list is
  reviewed word by word in ``tests/answers/test_words.py``;
- a negation word (the structure reads polarity) or a word of the reference or the question
  ("Yes, it was" to "Was there ...?");
- a light relation (:data:`LIGHT_RELATIONS`: "in", "of", "on", "at", "with") that only places the
  answer where its own words say ("mass in the liver"), unless the reference holds a relation
  word the answer leaves out.

Every other word - a modal or tense auxiliary ("can", "will", "was", "were", "been", "had"), a
relation word the reference does not have ("under", "above", "behind", "to", "from"), a
pronoun, "but", "than", "very", "also", "all" - makes the answer undecided (an LLM judge reads
it; the offline judge counts it as not correct). Hedging modals ("may", "might", "could",
"would", "should", "seems", "it seems") are refused earlier by the guard
(:mod:`medrl.answers.guard`).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: words that carry no claim of their own: the only words an answer may add or leave out
FILLER = frozenset("""
    a an the and is are it its it's this there there's here has have
    image images picture scan study shown shows show showing see noted note demonstrates demonstrate
    demonstrated demonstrating evident evidence located location area region regions finding findings
    view part patient answer final field fields appearance structure structures
""".split())
#: prepositions that only place the answer where its own words already say
LIGHT_RELATIONS = frozenset({"in", "of", "on", "at", "with", "within", "inside"})
#: relation words that say where or how one thing stands to another: the answer must hold
#: exactly the reference's
RELATIONS = frozenset({"under", "over", "above", "below", "beneath", "underneath", "behind", "beside", "between",
                       "near", "into", "onto", "to", "from", "by", "than", "around", "along", "across", "against",
                       "toward", "towards", "through", "for", "as", "after", "before", "during", "via", "per"})


#: a side or direction followed by "of" places something beside what follows ("left of the kidney")
_POSITIONED = re.compile(r"\b(?:left|right|lateral|medial|anterior|posterior|superior|inferior|front|back|top|"
                         r"bottom|outside|ahead|east|west)\s+of\b")


@lru_cache(maxsize=1)
def _negation_words() -> frozenset[str]:
    from medrl.answers.clinical.lexicon import NEGATION_WORDS

    return NEGATION_WORDS


def function_words(text: str | None) -> list[str]:
    """The words of ``text`` (after the lexicon) that its structure does not read: stop words and
    negation words, in order."""
    from medrl.answers.clinical.lexicon import all_tokens, content_tokens

    content = set(content_tokens(text))
    return [w for w in all_tokens(text) if w not in content]


def relations(text: str | None) -> set[str]:
    """The relation words of ``text`` (:data:`RELATIONS`, plus the light ones)."""
    from medrl.answers.clinical.lexicon import all_tokens

    return {w for w in all_tokens(text) if w in RELATIONS or w in LIGHT_RELATIONS}


def unaccounted(reference: str, answer: str, question: str | None = None) -> tuple[str, list[str]] | None:
    """Why the small words of ``answer`` keep it from being ``reference`` - ``("relation", words)``
    for a relation word on one side only, ``("word", words)`` for any other word outside
    :data:`FILLER` - or None when every word is accounted for (see the module docstring)."""
    from medrl.answers.clinical.lexicon import all_tokens

    ref_words = set(all_tokens(reference))
    known = ref_words | set(all_tokens(question)) | FILLER | _negation_words()
    a_rel, r_rel = relations(answer), relations(reference)
    a_pos, r_pos = _POSITIONED.findall(answer.lower()), _POSITIONED.findall(reference.lower())
    if sorted(a_pos) != sorted(r_pos):  # "left of the kidney" is a place beside it, not "left kidney"
        return "relation", sorted(set(a_pos) ^ set(r_pos)) or a_pos + r_pos
    dropped = sorted((r_rel - LIGHT_RELATIONS) - a_rel)
    added = sorted(w for w in a_rel - r_rel if w not in LIGHT_RELATIONS)
    if dropped or added:
        return "relation", dropped + added
    other = list(dict.fromkeys(w for w in function_words(answer)
                               if w not in known and w not in LIGHT_RELATIONS and w not in RELATIONS))
    return ("word", other) if other else None
