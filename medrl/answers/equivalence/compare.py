"""Is an answer the reference, by meaning? Default-deny: correct only when the structure says so.

Guard order (every answer metric and judge uses it):

1. the shared guard :func:`medrl.answers.guard.guard_answer` on the normalised texts (shape:
   empty, placeholder, hidden characters, padding, injection, candidate list, hedge, yes/no to an
   open question, negation found by negspacy);
2. :func:`hard_mismatch`: the answer contradicts the reference - another script, polarity (each
   negation form, a foreign negation word, yes against no, a finding where the reference says
   none), a location or laterality that differs or is dropped, another organ, numbers that differ
   after unit conversion, a list that misses items, a second finding;
3. :func:`equivalent`: exact match (punctuation that carries meaning kept), the lexicon's
   identity, yes/no polarity, "None"/"Normal" against answers that deny every finding, list items
   in any order, then the structure (:mod:`medrl.answers.equivalence.structure`): every concept and
   location of the reference in the answer, and every other word of the answer an allowed
   qualifier (:mod:`medrl.answers.clinical.qualifiers`) that contradicts nothing;
4. what is left (``verdict=None``) is for an LLM judge; the reference judge counts it as not
   correct.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

from medrl.answers.clinical.lexicon import STOPWORDS, WordIndex, all_tokens, same_word
from medrl.answers.clinical.negation_terms import terms as negation_terms
from medrl.answers.clinical.qualifiers import qualifier_kind
from medrl.answers.equivalence.polarity import BOTH
from medrl.answers.equivalence.quantities import describe, same_quantities, same_values_other_units
from medrl.answers.equivalence.structure import LOCATION_GROUPS, NEGATION_CUES, Reading, expand_sides, read, rewrite_negations

#: ``Equivalence.basis`` values that mean "the same answer by identity" (no judgement involved)
IDENTITY = ("exact", "lexicon")


@dataclass(frozen=True)
class Equivalence:
    """``verdict``: True (same meaning), False (contradicts the reference), None (the structure
    cannot settle it: an LLM judge decides; the reference judge counts it as not correct).
    ``reason``: why, in words. ``basis``: "exact", "lexicon", "polarity", "null", "list",
    "structure" (True), "guard"/"mismatch" (False) or "open" (None)."""

    verdict: bool | None
    reason: str
    basis: str = "open"

    @property
    def identical(self) -> bool:
        """True by exact or lexicon identity (no heuristic rule was needed)."""
        return self.verdict is True and self.basis in IDENTITY


# ------------------------------------------------------------------ helpers
_WORD_KEY = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?(?:\s*[-–]\s*\d+(?:\.\d+)?)?|\+/-|±|[a-z0-9]+(?:[+-](?![\w]))?")
_ARTICLES = {"a", "an", "the"}
_NULL_WORDS = set(negation_terms("null"))
_FINDING_SUFFIXES = ("itis", "osis", "oma", "emia", "pathy", "plasia", "megaly", "ectasis", "ectasia", "rrhage",
                     "lithiasis", "trophy", "sclerosis", "cele", "ocele", "thorax", "ism")
#: common findings: an extra one in the answer is a second finding, not a qualifier
FINDINGS = frozenset("""mass nodule lesion cyst tumor tumour effusion fracture hemorrhage bleeding bleed edema infarct
    infarction abscess pneumonia atelectasis consolidation opacity calcification stone calculus aneurysm stenosis
    thrombus thrombosis embolism obstruction hernia metastasis cancer carcinoma collapse atrophy dissection
    occlusion ischemia stroke hematoma cyst polyp ulcer perforation fluid air pneumoperitoneum ascites
    lymphadenopathy nodularity thickening infiltrate infiltration scarring fibrosis emphysema bulla contusion
    laceration dislocation shift herniation malformation anomaly mucocele diverticulum diverticula""".split())


def exact_key(text: str | None) -> str:
    """Case, articles, markup-free punctuation removed - but the punctuation that carries meaning
    kept: decimal points ("3.4"), ranges ("3-4"), signs ("+/-", "HER2-", "-5")."""
    from medrl.answers.equivalence.normalise import normalise

    t = normalise(text or "").text.lower()
    return " ".join(w.replace(" ", "").replace("–", "-") for w in _WORD_KEY.findall(t) if w not in _ARTICLES)


def _same_word(a: str, b: str) -> bool:
    return same_word(a, b)


#: pools looked up often (an answer's words, once per word of the other side): indexed once
_INDEXES: dict[int, tuple[object, int, WordIndex]] = {}


def _find(word: str, pool) -> str | None:
    """A word of ``pool`` that is ``word`` by spelling, stem or a typo, or None. A large pool is
    indexed once (:class:`medrl.answers.clinical.lexicon.WordIndex`), so reading a long answer
    against a long reference stays linear."""
    if len(pool) < 32:
        return next((w for w in pool if same_word(word, w)), None)
    key = id(pool)
    held = _INDEXES.get(key)
    if held is None or held[0] is not pool or held[1] != len(pool):
        if len(_INDEXES) >= 16:
            _INDEXES.clear()
        held = _INDEXES[key] = (pool, len(pool), WordIndex(pool))
    return held[2].find(word)


def _is_null(r: Reading) -> bool:
    """"None", "Normal", "No abnormality", "It is none": every content word a null word or negated."""
    rest = {w for w in set(r.words) - _NULL_WORDS - r.negated if r.qualifiers.get(w) not in ("filler", "affirmation")}
    bare = [w for w in all_tokens(r.canonical)
            if w not in STOPWORDS and qualifier_kind(w) not in ("filler", "affirmation")]
    named = bool(set(r.words) & _NULL_WORDS) or bool(r.negated) or bool(bare and set(bare) <= {"none", "no", "nothing", "nil"})
    return not rest and not r.quantities and named


def _zero_count(r: Reading) -> bool:
    """A count of zero ("0", "zero") with no word but fillers."""
    return bool(r.quantities) and all(q.low == 0 == q.high for q in r.quantities) and \
        not [w for w in r.words if r.qualifiers.get(w) != "filler"]


def _is_finding(word: str) -> bool:
    return word in FINDINGS or (len(word) > 5 and word.endswith(_FINDING_SUFFIXES))


def _yes_no_ref(reference: str) -> str | None:
    from medrl.answers.guard import is_yes_no, yes_no

    return yes_no(reference) if is_yes_no(reference) else None


def _answer_polarity(question: str | None, answer: str, a: Reading) -> str | None:
    """yes/no stated or implied, read from the whole answer ("Present", "None seen", "Not
    absent", "There is no effusion" to "Is there an effusion?"):
    :func:`medrl.answers.equivalence.polarity.yes_no_polarity`; ``BOTH`` for a contradiction."""
    from medrl.answers.equivalence.polarity import yes_no_polarity
    from medrl.answers.guard import yes_no

    if len(a.text.strip()) == 1:
        return yes_no(a.text)  # "Y" / "N"
    return yes_no_polarity(answer, question)


# ------------------------------------------------------------------ hard mismatch
#: an answer longer than PADDING_FACTOR x the reference + PADDING_SLACK characters is padding
PADDING_FACTOR, PADDING_SLACK = 4, 400
_SEGMENT = re.compile(r"\s*[,;/|]\s*|\s+or\s+", re.IGNORECASE)


@lru_cache(maxsize=32768)
def _hard(reference: str, answer: str, question: str | None) -> str | None:
    from medrl.answers.guard import guard_answer, list_items
    from medrl.answers.clinical.mismatch import category_mismatch

    if len(answer) > PADDING_FACTOR * len(reference) + PADDING_SLACK:
        # far longer than any answer to this reference: padding, refused before the answer is parsed
        # (reading a 50,000-character answer clause by clause would cost seconds per rollout)
        return f"padded ({len(answer)} characters for a {len(reference)}-character reference)"
    r, a = read(reference), read(answer)
    why = guard_answer(expand_sides(a.text) if a.text.strip() else answer, expand_sides(r.text), question=question,
                       negation=(a.negated, r.negated))  # NegEx read each text once, in read()
    if why is None and a.text != answer:
        # invisible characters, stray tags and padding are judged on what was sent
        raw_why = guard_answer(answer, reference, question=question, long_form=True)
        # (what normalisation reads - "✓" is "yes" - decides emptiness and letters, not the raw text)
        why = raw_why if raw_why not in (None, "padded", "empty", "one character", "no letters or digits") else None
    if why:
        return why
    if a.other_script and not r.other_script:
        return "another script (meaning not readable)"
    if a.folded and not r.folded and {w for w in a.words if not _find(w, set(r.words)) and w not in a.qualifiers}:
        return "letters of another script that do not spell the reference"
    if a.foreign_negation and not r.foreign_negation:
        return "negation in another language"
    if a.marks[0] and a.marks[1]:
        return "hedge (both a tick and a cross)"
    ref_pol = _yes_no_ref(reference)
    if ref_pol:
        pol = _answer_polarity(question, answer, a)
        if pol and pol != ref_pol and pol != BOTH:  # a contradiction ("No. Present.") is left undecided
            return f"polarity: expected {ref_pol}, got {pol}"
        return None
    added = a.modalities - r.modalities
    if added and (r.modalities or not (added & read(question or "").modalities)):
        # "CT Hydrocephalus": a modality neither the reference nor the question names
        return f"another modality ({'/'.join(sorted(added))})"
    # polarity of the reference's words
    r_words, a_words = set(r.words), set(a.words)
    if _is_null(r):
        r_bare = {w for w in exact_key(r.text).split() if w not in STOPWORDS}
        a_bare = set(exact_key(a.text).split())
        own_negation = (a_bare & NEGATION_CUES) - r_bare or a.marks[0]
        rewritten = rewrite_negations(exact_key(a.text))[0]
        if rewritten != exact_key(a.text) and rewritten.startswith("no ") and r_bare <= set(rewritten[3:].split()):
            own_negation = True  # "None is ruled out", "None: no": the reference's own word negated
        if own_negation and r_bare and r_bare <= a_bare:
            return "polarity: negates the reference's own word"  # "not normal", "no nothing"
        zero = bool(a.quantities) and all(q.low == 0 == q.high for q in a.quantities)  # "0 masses": none of them
        if not _is_null(a) and not zero and (a.asserted - _NULL_WORDS - set(a.qualifiers) or "abnormal" in a.asserted):
            return "names a finding where the reference says none"
        return None
    if _zero_count(r) and _is_null(a):
        return None  # "None", "No masses" for a count of 0: the count rule decides (medrl.answers.decide)
    if _is_null(a) and not _is_null(r) and a.negation_cue:
        return "denies every finding"
    flipped = {w for w in r_words if (w in a.negated) != (w in r.negated) and _find(w, a_words)}
    flipped |= {w for w in r_words - r.negated if _find(w, a.non_prefixed) and not _find(w, r.non_prefixed)}
    flipped |= {w for w in a_words - a.negated if _find(w, r.non_prefixed) and not _find(w, a.non_prefixed)}
    if flipped:
        return f"polarity: {'/'.join(sorted(flipped))} negated on one side only"
    for x, y in ((a, r), (r, a)):
        if x.non_whole and not y.non_whole and _covers(read(x.non_whole), y):
            return "polarity: 'non-' before the reference"
    other_words = {w for w in a_words - _matched(a_words, r_words) if w not in a.qualifiers}
    if a.negation_cue and not r.negation_cue and not (a.negated and a.negated <= other_words):
        # a negation the reference does not make, unless it is about words the reference does not use
        # ("Pneumothorax with no mediastinal shift"): then the extra words decide
        return "polarity: a negation the reference does not make"
    mm = category_mismatch(r.canonical, a.canonical, categories=_clinical_categories())
    if mm:
        return f"hard mismatch ({mm})"
    # numbers, after unit conversion
    if r.quantities and a.quantities and not same_quantities(list(r.quantities), list(a.quantities)):
        if same_values_other_units(list(r.quantities), list(a.quantities)):
            # "3.4" for "3.4 cm", "1.34 inches" for "3.4 cm": the same number, a unit left out or rounded
            return f"number form: {describe(list(r.quantities))} vs {describe(list(a.quantities))}"
        return f"number: {describe(list(r.quantities))} vs {describe(list(a.quantities))}"
    if r.quantities and not a.quantities and any(q.dimension != "number" for q in r.quantities):
        return f"number: {describe(list(r.quantities))} left out"
    if a.quantities and not r.quantities and not read(question or "").quantities:
        return f"number added: the reference gives none ({describe(list(a.quantities))})"
    # every location of the reference, in the answer
    for g in LOCATION_GROUPS:
        if g in r.locations and g not in a.locations:
            return f"drops the {g} ({'/'.join(sorted(r.locations[g]))})"
    # a list reference needs every item
    r_items, a_items = list_items(expand_sides(r.text)), list_items(expand_sides(a.text))
    if len(r_items) >= 2 and len(a_items) < len(r_items):
        missing = [i for i in r_items if not set(read(i).words) <= _matched(set(read(i).words), a_words)]
        if missing:
            return f"misses part of the reference list ({'; '.join(missing)})"
    # a candidate list: a comma/slash/semicolon/"or" item holding words that are neither the
    # reference's nor allowed qualifiers ("Gray, T2, Lower Right Lung" for "Lower Right Lung"),
    # while "Chest X-Ray, PA view" (a view) and "Liver, enlarged" (a descriptor) stay open
    segments = [seg for seg in _SEGMENT.split(expand_sides(a.text)) if seg.strip()]
    if len(segments) >= 2 and len(r_items) < 2:
        for seg in segments:
            part = read(seg)  # a sub-location ("upper pole") qualifies; the judge decides those
            if part.negation_cue:
                continue  # a denial ("; no other abnormality") is no candidate
            unexplained = {w for w in part.words if not _find(w, r_words) and w not in a.qualifiers
                           and qualifier_kind(w) != "affirmation"}  # "X, present": says X is there
            if unexplained and not (set(part.words) - unexplained) and not part.locations:
                return f"a candidate list (an item the reference does not account for: {'/'.join(sorted(unexplained))})"
    # another structure in place of the reference's ("Iliacus muscle" for "Psoas muscle")
    left_out = {w for w in r_words if not _find(w, a_words) and w not in r.qualifiers}
    put_in = {w for w in a_words if not _find(w, r_words) and w not in a.qualifiers}
    known = anatomy_words() | set(a.locations.get("brain lobe", ())) | {w for w in put_in if w in r.locations}
    if left_out & anatomy_words() and put_in & known:
        return f"another structure ({'/'.join(sorted(put_in))} for {'/'.join(sorted(left_out))})"
    # another organ, a second finding
    if r.organs and a.organs - r.organs:
        return f"another organ ({'/'.join(sorted(a.organs - r.organs))})"
    asked = set(read(question or "").words)  # "Mass in the left kidney" to "Which organ has the mass?"
    extra = {w for w in a.asserted if not _find(w, r_words) and _is_finding(w) and w not in a.qualifiers
             and w not in asked}
    if extra and not left_out and not (len(r_items) >= 2):  # the reference's answer plus another finding
        return f"second finding ({'/'.join(sorted(extra))})"
    return None


@lru_cache(maxsize=1)
def _clinical_categories() -> frozenset[str]:
    """Every category of :mod:`medrl.answers.clinical.mismatch` except its bare "number" (numbers are
    compared here after unit conversion)."""
    from medrl.answers.clinical.mismatch import _GROUPS

    return frozenset(_GROUPS) | {"vertebral level", "rib", "ventricle", "grade", "word pair"}


def _covers(x: Reading, y: Reading) -> bool:
    """``x`` names every word of ``y`` and nothing else but qualifiers ("non-hypodense lesion" vs
    "hypodense lesion"; not "non-Hodgkin lymphoma" vs "lymphoma")."""
    xw, yw = set(x.words), set(y.words)
    if not xw and not yw:
        return bool(y.quantities) and same_quantities(list(x.quantities), list(y.quantities))
    return bool(yw) and all(_find(w, xw) for w in yw) and all(_find(w, yw) or w in x.qualifiers for w in xw)


@lru_cache(maxsize=1)
def anatomy_words() -> frozenset[str]:
    """Words that name a body structure: the lexicon's anatomy terms and the organ table."""
    from medrl.answers.clinical.lexicon import content_tokens, load_lexicon
    from medrl.answers.clinical.mismatch import _GROUPS

    words = {t for v, c, k in load_lexicon() if k == "anatomy" for t in content_tokens(c)}
    words |= set(_GROUPS["organ"][1])
    return frozenset(words)


def _matched(words: set[str], pool: set[str]) -> set[str]:
    return {w for w in words if _find(w, pool)}


def hard_mismatch(reference: str | None, answer: str | None, *, question: str | None = None) -> str | None:
    """Why ``answer`` contradicts ``reference``, or None - the one guard every answer metric calls
    before its own formula (embedding cosine, MRPO answer score, ARMed, CAPO accuracy, StepRAR).

    Fires on the shared guard's shapes (candidate list, hedge, padding, injection, ...), on another
    script, on polarity (every negation form, yes vs no), on a location/laterality that differs or
    is dropped, another organ, numbers that differ after unit conversion ("34 cm" vs "3.4 cm",
    "3-4 cm" vs "3.4 cm"), a list answer missing items, and a second finding. None when
    ``reference`` is empty (nothing to compare with). See the module docstring for the order.
    """
    if reference is None or not str(reference).strip():
        return None
    return _hard(str(reference), "" if answer is None else str(answer), question)


# ------------------------------------------------------------------ equivalence
def _compare(r: Reading, a: Reading) -> tuple[bool | None, str]:
    """Structure comparison of two single-item answers (no hard mismatch between them)."""
    a_pool = set(a.words)
    missing = [w for w in r.words if not _find(w, a_pool) and r.qualifiers.get(w) != "filler"]
    if missing:
        return None, f"leaves out {', '.join(missing)}"
    r_pool = set(r.words)
    extras = [w for w in a.words if not _find(w, r_pool)]
    bad = []
    for w in extras:
        kind = a.qualifiers.get(w)
        if kind is None or (kind == "modality" and w not in r.modalities):
            bad.append(w)
    if bad:
        return None, f"words the reference does not account for: {', '.join(sorted(set(bad)))}"
    if a.quantities and not r.quantities and any(q.dimension not in ("[length]",) for q in a.quantities):
        return None, f"numbers the reference does not give: {describe(list(a.quantities))}"
    if r.negated != frozenset(w for w in r.words if _find(w, a.negated)):
        return None, "negation differs"
    added = sorted({a.qualifiers[w] for w in extras})
    return True, "same concepts" + (f"; allowed qualifiers: {', '.join(added)}" if added else "")


#: lists longer than this (in characters) are matched item by item only by their exact keys: a
#: report-length list read pair by pair would cost items x items full decisions
LIST_MATCH_CHARS = 1_000


def _items_match(ref_items: list[str], ans_items: list[str]) -> bool:
    if len(ref_items) != len(ans_items) or len(ref_items) > 7:
        return False
    if sum(map(len, ans_items)) > LIST_MATCH_CHARS or sum(map(len, ref_items)) > LIST_MATCH_CHARS:
        return sorted(map(exact_key, ref_items)) == sorted(map(exact_key, ans_items))
    ok = [[_single(ri, ai)[0] is True for ai in ans_items] for ri in ref_items]
    return any(all(ok[i][p[i]] for i in range(len(p))) for p in itertools.permutations(range(len(ans_items))))


def _single(reference: str, answer: str) -> tuple[bool | None, str]:
    if exact_key(answer) == exact_key(reference):
        return True, "exact"
    if hard_mismatch(reference, answer) is not None:
        return False, "mismatch"
    return _compare(read(reference), read(answer))


@lru_cache(maxsize=32768)
def _equivalent(reference: str, prediction: str, question: str | None) -> Equivalence:
    from medrl.answers.guard import list_items

    why = hard_mismatch(reference, prediction, question=question)
    if why:
        return Equivalence(False, why, "mismatch")
    if exact_key(prediction) == exact_key(reference):
        return Equivalence(True, "exact match after normalisation", "exact")
    r, a = read(reference), read(prediction)
    if (r.canonical.split() == a.canonical.split() and same_quantities(list(r.quantities), list(a.quantities))
            and r.negated == a.negated and r.non_prefixed == a.non_prefixed):
        return Equivalence(True, "same terms after the lexicon", "lexicon")
    ref_pol = _yes_no_ref(reference)
    if ref_pol:
        pol = _answer_polarity(question, prediction, a)
        if pol == ref_pol:
            return Equivalence(True, f"yes/no: {pol}", "polarity")
        got = "both yes and no" if pol == BOTH else pol or "no clear yes/no"
        return Equivalence(None, f"yes/no: expected {ref_pol}, got {got}")
    if _is_null(r):
        if _is_null(a):
            return Equivalence(True, "both say nothing abnormal", "null")
        return Equivalence(None, "the reference says nothing abnormal")
    r_items, a_items = list_items(expand_sides(r.text)), list_items(expand_sides(a.text))
    if len(r_items) >= 2 or len(a_items) >= 2:
        if _items_match(r_items, a_items):
            return Equivalence(True, "the same list items", "list")
        if (sorted(r.words) == sorted(a.words) and r.negated == a.negated
                and same_quantities(list(r.quantities), list(a.quantities))):
            return Equivalence(True, "the same words", "list")
        return Equivalence(None, "list items differ")
    ok, why = _compare(r, a)
    return Equivalence(True, why, "structure") if ok else Equivalence(None, why)


def equivalent(reference: str | None, prediction: str | None, *, question: str | None = None) -> Equivalence:
    """Is ``prediction`` the ``reference`` answer, by meaning? See the module docstring.

    True only when the structure accounts for every word; False when :func:`hard_mismatch` fires;
    None when the structure cannot settle it (an LLM judge decides; the reference judge counts it
    as not correct). An empty reference is a ValueError.
    """
    if reference is None or not str(reference).strip():
        raise ValueError("equivalent: the reference answer is empty")
    return _equivalent(str(reference), "" if prediction is None else str(prediction), question)
