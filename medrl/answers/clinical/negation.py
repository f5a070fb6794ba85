"""Negation and uncertainty of the words of a clinical text, with negspacy (NegEx).

One spaCy pipeline per process (``spacy.blank("en")`` + ``sentencizer`` + ``entity_ruler`` +
two ``negex`` components; no downloaded model): the entity ruler marks every content word
as a term, the first NegEx component (negspacy's ``en_clinical`` termset plus a few radiology
phrases such as "is ruled out", "not seen", "absent") sets ``span._.negex``, the second (a
termset of hedge cues: "possible", "cannot be excluded", "either", "versus", "?") sets
``span._.uncertain``. Texts are canonicalised with the lexicon first (so "no abnormality
detected" is the word "normal", not a negation) and results are cached per text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from medrl.answers.clinical.lexicon import STOPWORDS, canonical_text, singular
from medrl.answers.clinical.negation_terms import alternation, terms

_EXTRA_NEG = {
    "preceding_negations": list(terms("negex_preceding")),
    "following_negations": list(terms("negex_following")),
    "pseudo_negations": list(terms("negex_pseudo")),
    "termination": list(terms("negex_termination")),
}
_UNCERTAIN = {
    "preceding_negations": ["possible", "possibly", "probable", "probably", "likely", "maybe", "perhaps",
                            "could be", "may be", "might be", "may represent", "could represent",
                            "suspicious for", "suspected", "suspect", "suggestive of", "suggests",
                            "questionable", "query", "?", "cannot exclude", "cannot rule out", "can't rule out",
                            "differential", "differential diagnosis", "either", "versus", "vs", "or",
                            "rule out", "r/o", "concern for", "concerning for", "equivocal", "presumed",
                            "not sure", "uncertain", "unclear", "indeterminate", "borderline", "favor",
                            "favour", "favoring", "consider", "considering", "cannot be excluded"],
    "following_negations": ["cannot be excluded", "cannot be ruled out", "not excluded", "not ruled out",
                            "can't be excluded", "is possible", "is likely", "is suspected", "is questionable",
                            "?", "or not", "is uncertain", "is unclear", "is not excluded", "is probable"],
    "pseudo_negations": ["no change"],
    "termination": ["but", "however", "although", "though", "except", "whereas", "while"],
}


@lru_cache(maxsize=1)
def nlp():
    """The shared spaCy pipeline (built once per process)."""
    import spacy
    from negspacy.negation import Negex  # noqa: F401  (registers the "negex" factory)
    from negspacy.termsets import termset

    pipe = spacy.blank("en")
    pipe.add_pipe("sentencizer")
    ruler = pipe.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "TERM", "pattern": [{"IS_ALPHA": True, "IS_STOP": False}]},
                        {"label": "TERM", "pattern": [{"TEXT": {"REGEX": r"^[a-z]*\d+[a-z]*$"}}]}])
    ts = termset("en_clinical")
    for key, extra in _EXTRA_NEG.items():
        ts.add_patterns({key: extra})
    pipe.add_pipe("negex", name="negex", config={"neg_termset": ts.get_patterns()})
    unc = {k: list(v) for k, v in _UNCERTAIN.items()}
    pipe.add_pipe("negex", name="uncertain", config={"neg_termset": unc, "extension_name": "uncertain"})
    return pipe


@dataclass(frozen=True)
class TermStatus:
    """A canonical content word of a text and whether NegEx puts it in a negation/hedge scope."""

    token: str
    negated: bool
    uncertain: bool


@lru_cache(maxsize=16384)
def analyse(text: str | None) -> tuple[TermStatus, ...]:
    """Every content word of the canonicalised ``text`` with its negation / uncertainty flags."""
    canon = canonical_text(text)
    if not canon.strip():
        return ()
    doc = nlp()(canon)
    out = []
    for ent in doc.ents:
        tok = singular(ent.text.lower())
        if tok in STOPWORDS:
            continue
        out.append(TermStatus(tok, bool(ent._.negex), bool(ent._.uncertain)))
    return tuple(out)


_NEG_CUE = re.compile(r"\b(?:" + "|".join(t for t in alternation("scope_cue").split("|") if t != "n't")
                      + r")\b|n't\b")
_UNC_CUE = re.compile(
    r"\b(?:possibl[ey]|probabl[ey]|likely|maybe|perhaps|could|may|might|suspicious|suspected|suspect|suggest\w*|"
    r"questionabl[ey]|query|cannot|can't|differential|either|versus|vs|or|rule|r/o|concern\w*|equivocal|presumed|"
    r"sure|uncertain|unclear|indeterminate|borderline|favou?r\w*|consider\w*|excluded|ruled|is)\b|\?")


def negated_tokens(text: str | None) -> set[str]:
    """Canonical content words of ``text`` that NegEx finds negated (no spaCy call without a cue word)."""
    if not _NEG_CUE.search(canonical_text(text)):
        return set()
    return {t.token for t in analyse(text) if t.negated}


def asserted_tokens(text: str | None) -> set[str]:
    """Canonical content words of ``text`` that are neither negated nor hedged."""
    return {t.token for t in analyse(text) if not t.negated and not t.uncertain}


def uncertain_tokens(text: str | None) -> set[str]:
    """Canonical content words of ``text`` inside a hedge scope ("possible X", "X cannot be excluded")."""
    if not _UNC_CUE.search(canonical_text(text)):
        return set()
    return {t.token for t in analyse(text) if t.uncertain}
