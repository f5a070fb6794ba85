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


#: where one sentence ends: NegEx scopes stop there (a full stop before a digit is a decimal point)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?!\d)|\n+")


def _sentences(canon: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(canon) if s.strip()]


@lru_cache(maxsize=65536)
def _analyse_sentence(sentence: str) -> tuple[TermStatus, ...]:
    """The content words of one canonical sentence with their negation / uncertainty flags."""
    doc = nlp()(sentence)
    out = []
    for ent in doc.ents:
        tok = singular(ent.text.lower())
        if tok in STOPWORDS:
            continue
        out.append(TermStatus(tok, bool(ent._.negex), bool(ent._.uncertain)))
    return tuple(out)


@lru_cache(maxsize=16384)
def analyse(text: str | None) -> tuple[TermStatus, ...]:
    """Every content word of the canonicalised ``text`` with its negation / uncertainty flags.

    Each sentence is read on its own, as NegEx reads a report (a negation or hedge cue does not
    reach into the next sentence), and cached: a long answer stays linear (negspacy looks the
    document's entities up once per scope, so one document of many sentences costs their
    product), and a sentence said again costs nothing."""
    canon = canonical_text(text)
    return tuple(t for s in _sentences(canon) for t in _analyse_sentence(s))


_NEG_CUE = re.compile(r"\b(?:" + "|".join(t for t in alternation("scope_cue").split("|") if t != "n't")
                      + r")\b|n't\b")
_UNC_CUE = re.compile(
    r"\b(?:possibl[ey]|probabl[ey]|likely|maybe|perhaps|could|may|might|suspicious|suspected|suspect|suggest\w*|"
    r"questionabl[ey]|query|cannot|can't|differential|either|versus|vs|or|rule|r/o|concern\w*|equivocal|presumed|"
    r"sure|uncertain|unclear|indeterminate|borderline|favou?r\w*|consider\w*|excluded|ruled|is)\b|\?")


def negated_tokens(text: str | None) -> set[str]:
    """Canonical content words of ``text`` that NegEx finds negated (only the sentences that hold a
    cue word go through spaCy)."""
    canon = canonical_text(text)
    if not _NEG_CUE.search(canon):
        return set()
    cued = [s for s in _sentences(canon) if _NEG_CUE.search(s)]
    todo = list(dict.fromkeys(s for s in cued if s not in _NEGATED))
    if len(_NEGATED) + len(todo) > 65536:
        _NEGATED.clear()
    slow = []
    for s in todo:
        fast = _leading_negation(s)
        if fast is None:
            slow.append(s)
        else:
            _NEGATED[s] = fast
    # the other sentences not read before, in one batch (spaCy's pipe: less overhead per sentence)
    for s, doc in zip(slow, nlp().pipe(slow, disable=["uncertain"])):
        _NEGATED[s] = frozenset(tok for ent in doc.ents
                                if ent._.negex and (tok := singular(ent.text.lower())) not in STOPWORDS)
    return {t for s in cued for t in _NEGATED[s]}


_TERM_NUMBER = re.compile(r"^[a-z]*\d+[a-z]*$")  # the entity ruler's second pattern


def _leading_negation(sentence: str) -> frozenset[str] | None:
    """The negated words of a sentence whose only NegEx phrase is a negation at its start ("no
    the liver shows a lesion"), without running the pipeline: NegEx then negates every entity
    after it (one scope, no termination, one sentence). None for any other sentence, which
    the pipeline reads. The tokens, the phrase matches and the entities are the pipeline's own
    (its tokenizer, its NegEx matcher, its entity patterns), so the words are the same."""
    pipe = nlp()
    doc = pipe.make_doc(sentence)
    negex = pipe.get_pipe("negex")
    matches = negex.matcher(doc)
    if len(matches) != 1 or matches[0][1] != 0 or pipe.vocab.strings[matches[0][0]] != "Preceding":
        return None
    punct = pipe.get_pipe("sentencizer").punct_chars
    if any(t.text in punct for t in doc[:-1]):
        return None  # a second sentence inside: the pipeline would end the scope there
    return frozenset(tok for t in doc[matches[0][2]:] if (t.is_alpha and not t.is_stop) or _TERM_NUMBER.match(t.text)
                     if (tok := singular(t.text.lower())) not in STOPWORDS)


#: canonical sentence -> its negated content words (the pipeline without its hedge component:
#: the same negation flags as :func:`_analyse_sentence`)
_NEGATED: dict[str, frozenset[str]] = {}


def asserted_tokens(text: str | None) -> set[str]:
    """Canonical content words of ``text`` that are neither negated nor hedged."""
    return {t.token for t in analyse(text) if not t.negated and not t.uncertain}


def uncertain_tokens(text: str | None) -> set[str]:
    """Canonical content words of ``text`` inside a hedge scope ("possible X", "X cannot be excluded")."""
    canon = canonical_text(text)
    if not _UNC_CUE.search(canon):
        return set()
    return {t.token for s in _sentences(canon) if _UNC_CUE.search(s) for t in _analyse_sentence(s) if t.uncertain}
