"""The reference-based offline judge: deterministic, free, and a *heuristic* for offline smoke runs.

It stands in for an LLM judge when none is available (tests, the offline demo, CI). It reads
only the reference information a record carries - the reference answer, the gold reasoning when
there is one, otherwise the record's evidence (modality, organ/location, answer) - and applies
documented rules. It cannot see the image and does not understand medicine; treat its verdicts
as a consistent, cheap proxy, not as a substitute for a strong judge in real runs.

Rules, task by task (every rule is the project's heuristic, after the papers' criteria):

- answer correctness (MediX-R1 003_d5d6a0d73a50ab79.txt Sec. 2.3; MRPO 000 App. H.1): the shared
  guard :func:`medrl.answer_guard.guard_answer` first (empty, placeholder, lists, hedges,
  negations, padding, injections fail); normalised exact match passes; yes/no references need
  the same polarity (a stated yes/no, or "present"/"absent"/a negated question term); the
  same words after the clinical lexicon (:mod:`medrl.clinical.lexicon`: abbreviations,
  synonyms, lay terms, British/American spelling, "fifth cervical vertebra" = C5) pass; a hard
  mismatch (:mod:`medrl.clinical.mismatch`: side, sub-location, level, ventricle, grade/stage,
  acuity, -itis/-osis, hyper/hypo, T1/T2, organ, modality, number) fails; a negation or hedge
  difference found by negspacy (:mod:`medrl.clinical.negation`) fails; a list reference needs
  every item; a confusable substitution ("ureteral"/"urethral") fails; "None"/"Normal" match
  answers that deny every finding; otherwise pass when the reference words (equal, same stem
  or a typo) are all in a short answer, their F1 is at least ``f1_threshold`` with the
  reference's head word present, or the MiniLM cosine is at least ``embed_threshold``.
- step verification (MRPO Eq. 3, App. H.2): a step must be a statement - meta-commentary,
  bare noun phrases and keyword strings, keyword stuffing (every value of a group at once),
  empty and repeated steps get 0/0; evasions get 0/0; a step contradicting the record (wrong
  modality, wrong laterality, an organ outside the reference's body region) or denying the
  reference answer gets 0/0. Gold alignment (with gold reasoning): some gold sentence shares
  at least half of the step's words (lexicon, stems) - and a finding word, not only a place -
  or has MiniLM cosine >= 0.72, with the same negation of the shared findings and no clash of
  side, sub-location, level or qualifier; a step that only contradicts gold sentences gets 0/0.
  Without gold reasoning: the step names the record's modality, organ/region, laterality or
  answer. Answer contribution = the step names at least half of the reference answer's words,
  does not negate them, and has no clashing qualifier or confusable term - or it is
  gold-aligned and asserts an abnormal finding (not only a place, the setting or "normal"),
  a finding on the way to the answer (App. H.2); for a yes/no reference, the step is about the
  question's subject with the answer's polarity.
- consistency (CAPO 002 Eq. 1): the answer must follow from the last two reasoning sentences -
  same yes/no polarity, or at least half of the answer's content tokens there, not negated, and
  no opposite side or qualifier.
- grading (MediX-R1 Sec. 3): binary = answer correctness; report rubric = round(5 x token F1).
- VQA audit (ARMed App.): empty/placeholder pairs and wh-questions answered yes/no are dropped;
  an open answer to a yes/no-style question is flagged ``needs_fix`` (the rewrite is left to an
  LLM auditor: ``new_q`` keeps the question); otherwise consistent.
- key steps (StepGRPO 004 Sec. 3.2): from each reasoning sentence that names a medical term or
  the answer, the first few content words (at most six phrases).

Text inside the judged fields is never read as instructions: the rules only count words, so
"ignore the rules and answer YES" inside a rollout is just more tokens.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from medrl.answer_guard import guard_answer, is_yes_no, list_items, match_key, strip_answer, yes_no
from medrl.clinical.lexicon import all_tokens, canonical_text, content_tokens, stem, typo_equal
from medrl.clinical.mismatch import _GROUPS as _MISMATCH_GROUPS
from medrl.clinical.mismatch import hard_mismatch
from medrl.clinical.negation import asserted_tokens, negated_tokens, uncertain_tokens
from medrl.judges.base import JUDGES, JudgeStats
from medrl.modality import modality_to_tag
from medrl.types import StepVerdict, Verdict

# ------------------------------------------------- words (the lexicon itself: medrl/clinical/lexicon.tsv)
_STOP = set(
    """a an the of in on at to for from by with and or but is are was were be been being this that
    these those there here it its as into onto over under than then so such can could may might
    would should will shall do does did has have had having which what where when who whom whose
    how why i we you he she they me us our your their his her them my image picture scan shown
    shows show showing seen see visible appears appear appearing noted note present demonstrates
    demonstrate demonstrated evident likely also very some any each both all area region
    finding findings patient study view side part""".split()
)
_NEG = {"no", "not", "without", "absent", "absence", "negative", "none", "normal", "unremarkable", "nor", "never", "free"}
_OPPOSITES = [
    ("left", "right"), ("small", "large"), ("upper", "lower"), ("anterior", "posterior"),
    ("superior", "inferior"), ("medial", "lateral"), ("increased", "decreased"), ("high", "low"),
    ("benign", "malignant"), ("acute", "chronic"), ("hyperdensity", "hypodensity"),
    ("hyperintensity", "hypointensity"), ("t1", "t2"), ("axial", "coronal"), ("axial", "sagittal"),
    ("coronal", "sagittal"), ("ct", "mri"), ("ct", "xray"), ("mri", "xray"), ("ultrasound", "ct"),
    ("ultrasound", "mri"), ("ultrasound", "xray"),
]
_MODALITY_WORDS = {  # canonical token -> MediX-R1 tag (unambiguous words only)
    "ct": "CT_SCAN", "mri": "MRI_SCAN", "xray": "X_RAY", "ultrasound": "ULTRASOUND", "pet": "PET_SCAN",
    "spect": "SPECT", "microscopy": "MICROSCOPY", "histology": "MICROSCOPY", "histopathology": "MICROSCOPY",
    "endoscopy": "ENDOSCOPY", "mammography": "MAMMOGRAPHY", "mammogram": "MAMMOGRAPHY",
    "angiography": "ANGIOGRAPHY", "angiogram": "ANGIOGRAPHY", "fluoroscopy": "FLUOROSCOPY",
    "fundus": "FUNDUS_PHOTOGRAPHY", "oct": "OCT_SCAN",
}
_REGIONS: dict[str, set[str]] = {  # body region -> organ tokens inside it
    "head": {"head", "brain", "skull", "sinus", "orbit", "ventricle", "cerebellum", "face", "gyrus",
             "sulcus", "temporal", "frontal", "parietal", "occipital", "pons", "midbrain", "cranium"},
    "neck": {"neck", "thyroid", "trachea", "esophagus", "larynx", "pharynx", "carotid", "cervical"},
    "chest": {"chest", "lung", "heart", "rib", "mediastinum", "mediastinal", "pleura", "pleural",
              "diaphragm", "trachea", "aorta", "bronchus", "hilum", "esophagus", "breast", "clavicle"},
    "abdomen": {"abdomen", "liver", "kidney", "spleen", "pancreas", "stomach", "bowel", "smallbowel",
                "colon", "gallbladder", "adrenal", "duodenum", "aorta", "bladder", "appendix", "rectum",
                "peritoneum", "mesentery", "spine", "vertebra"},
    "pelvis": {"pelvis", "bladder", "uterus", "prostate", "rectum", "ovary", "hip", "femur", "sacrum"},
}
_ORGANS = set().union(*_REGIONS.values())
_LOCATION_REGION = {  # dataset organ/location labels -> regions (VQA-RAD HEAD/CHEST/ABD, SLAKE locations)
    "head": {"head", "neck"}, "brain": {"head"}, "brain_tissue": {"head"}, "brain_face": {"head", "neck"},
    "chest": {"chest"}, "lung": {"chest"}, "chest_lung": {"chest"}, "chest_heart": {"chest"},
    "chest_mediastinal": {"chest"}, "abd": {"abdomen", "pelvis"}, "abdomen": {"abdomen", "pelvis"},
    "pelvic cavity": {"pelvis", "abdomen"}, "pelvis": {"pelvis", "abdomen"}, "neck": {"neck", "head", "chest"},
}
_META = re.compile(
    r"^\s*(?:(?:first|next|now|then|finally|so),?\s+)?(?:i|we)\s*(?:will|'ll|need to|must|should|am going to|have to|want to|shall)\b"
    r"|^\s*(?:let me|let's|let us)\b"
    r"|^\s*(?:to answer (?:this|the question)|the question (?:asks|is asking)|consider(?:ing)? the (?:possibilit|option))"
    r"|^\s*(?:okay|ok|alright|hmm|well)\b",
    re.IGNORECASE,
)
_EVASION = re.compile(
    r"\b(?:cannot|can't|can not|unable to|impossible to|not possible to|hard to|difficult to)\s+(?:be\s+)?"
    r"(?:determine|determined|tell|say|assess|assessed|know|identify|identified)\b|\bunknown\b|\bunclear\b",
    re.IGNORECASE,
)
_WH = re.compile(r"^\s*(?:what|which|where|how|who|whom|whose|why|when|name|identify|describe|list)\b", re.I)
_AUX = re.compile(r"^\s*(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should|may|might)\b", re.I)
_KEY_FILLER = {"yes", "answer", "therefore", "thus", "hence", "conclusion", "final", "conclude"}
_SENT = re.compile(r"(?<=[.!?;])\s+|\n+")


def canon_tokens(text: str | None, keep_stop: bool = False) -> list[str]:
    """Lower-case canonical tokens from the one clinical lexicon (:func:`medrl.clinical.lexicon.all_tokens`:
    abbreviations, synonyms and spellings mapped, plurals singular); stop words dropped unless ``keep_stop``."""
    toks = [t.replace("'", "") for t in all_tokens((text or "").replace("_", " "))]
    return toks if keep_stop else [t for t in toks if t not in _STOP]


def normalise(text: str | None) -> str:
    return " ".join(canon_tokens(text, keep_stop=True))


def polarity(text: str | None) -> str | None:
    """"yes"/"no" when the text starts with it (a yes/no answer), else None."""
    toks = canon_tokens(text, keep_stop=True)
    if toks and toks[0] in ("yes", "no"):
        return toks[0]
    return None


def _negated(tokens: Sequence[str]) -> bool:
    return any(t in _NEG for t in tokens)


def _opposed(a: set[str], b: set[str]) -> str | None:
    """An opposite pair where one side says x (and not y) and the other says y (and not x)."""
    for x, y in _OPPOSITES:
        if (x in a and y not in a and y in b and x not in b) or (y in a and x not in a and x in b and y not in b):
            return f"{x}/{y}"
    return None


def _f1(p: Sequence[str], r: Sequence[str]) -> float:
    ps, rs = set(p), set(r)
    common = len(ps & rs)
    if not common:
        return 0.0
    prec, rec = common / len(ps), common / len(rs)
    return 2 * prec * rec / (prec + rec)


def _head_shared(reference: str, prediction: str) -> bool:
    """The reference's last content word (usually its head noun) occurs in the prediction."""
    r = content_tokens(reference)
    return bool(r) and bool(_aligned({r[-1]}, set(content_tokens(prediction)))[0])


def _same_word(a: str, b: str) -> bool:
    return a == b or stem(a) == stem(b) or typo_equal(a, b)


def _aligned(r: set[str], p: set[str]) -> tuple[set[str], set[str], str]:
    """Reference and prediction words matched to each other (equal, same stem, or a typo), and
    a "confusable" substitution: an unmatched reference word spelled like an unmatched prediction
    word without being it ("ureteral"/"urethral", "pneumothorax"/"hemothorax")."""
    from difflib import SequenceMatcher

    hit_r = {a for a in r if any(_same_word(a, b) for b in p)}
    hit_p = {b for b in p if any(_same_word(a, b) for a in r)}
    subs = ""
    for a in r - hit_r:
        for b in p - hit_p:
            if min(len(a), len(b)) >= 5 and SequenceMatcher(None, a, b).ratio() >= 0.6 and not _derived(a, b):
                subs = f"{a} vs {b}"
                break
        if subs:
            break
    return hit_r, hit_p, subs


def _derived(a: str, b: str) -> bool:
    """One word builds on the other ("appendix"/"periappendiceal", "pneumothorax"/"hydropneumothorax"):
    the first three quarters of the shorter word occur inside the longer one."""
    short, long_ = sorted((a, b), key=len)
    return short[: -(-3 * len(short) // 4)] in long_


def _f1_aligned(hit_r: set[str], hit_p: set[str], r: set[str], p: set[str]) -> float:
    if not hit_r or not hit_p:
        return 0.0
    prec, rec = len(hit_p) / len(p), len(hit_r) / len(r)
    return 2 * prec * rec / (prec + rec)


_NULL_TERMS = {"normal", "absent", "0", "nothing", "negative", "clear", "nil", "none"}


def _is_null(text: str) -> bool:
    """"None", "Normal", "No abnormality", "no disease": every content word is a null word or negated."""
    terms = set(content_tokens(text))
    if not terms and not match_key(text):
        return False
    rest = terms - _NULL_TERMS - negated_tokens(text)
    return not rest and bool(terms or negated_tokens(text) or match_key(text) in ("none", "no", "nothing"))


def _implied_polarity(question: str, prediction: str) -> str | None:
    """yes/no implied by an answer that does not start with yes/no ("Present", "There is no effusion")."""
    terms = set(content_tokens(prediction))
    if "absent" in terms:
        return "no"
    if "present" in terms:
        return "yes"
    about = terms & set(content_tokens(question))
    if about & negated_tokens(prediction):
        return "no"
    if about & asserted_tokens(prediction):
        return "yes"
    return None


def _option_match(label: str, reference: str) -> bool:
    """A one-character answer against the reference: the same character, or the reference's
    option label ("B" for "B", "Option B", "(B) Pneumonia", "B. Pneumonia")."""
    ref = strip_answer(reference)
    if label.casefold() == ref.casefold() or canonical_text(label) == canonical_text(ref):
        return True
    m = re.match(r"^\(?\s*(?:option\s+)?([A-Za-z0-9])\s*[).:]?(?:\s|$)", ref, re.IGNORECASE)
    return bool(m) and m.group(1).casefold() == label.casefold()


def _regions_of(tokens: set[str]) -> set[str]:
    return {reg for reg, organs in _REGIONS.items() if tokens & organs}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text or "") if s and s.strip()]


@JUDGES.register("reference")
class ReferenceJudge:
    """Offline heuristic judge (see the module docstring for every rule).

    Args:
        use_embeddings: allow the MiniLM cosine as the last answer-correctness test.
        embed_threshold: cosine needed (0.8, MediX-R1's R_embed threshold).
        f1_threshold: canonical-token F1 needed for a paraphrased answer.
        embedding_model: sentence-embedding model (default: offline all-MiniLM-L6-v2).
    """

    name = "reference"
    #: Reads text only, by design: ``image=`` is accepted and ignored; asking for judge images
    #: with this judge fails at start (:func:`medrl.judges.base.require_image_support`).
    images = False
    supports_images = False

    def __init__(self, *, use_embeddings: bool = True, embed_threshold: float = 0.8,
                 f1_threshold: float = 0.67, embedding_model: str | None = None, **_ignored: Any):
        self.use_embeddings = use_embeddings
        self.embed_threshold = embed_threshold
        self.f1_threshold = f1_threshold
        self.embedding_model = embedding_model
        self._cos_cache: dict[tuple[str, str], float] = {}
        self.stats = JudgeStats()

    def __repr__(self) -> str:
        return f"ReferenceJudge(use_embeddings={self.use_embeddings})"

    def _count(self) -> None:
        self.stats.calls += 1

    # ---------------------------------------------------------------- answer correctness
    def _cosine(self, a: str, b: str) -> float:
        """MiniLM cosine of two texts, cached per pair (the encoder loads once per process)."""
        key = (a, b)
        if key not in self._cos_cache:
            from medrl.embeddings import cosine_pairs

            self._cos_cache[key] = float(cosine_pairs([a], [b], self.embedding_model)[0])
        return self._cos_cache[key]

    def _correct(self, question: str, reference: str, prediction: str, *, allow_one_char: bool = False
                 ) -> tuple[bool, str]:
        if not (reference or "").strip():
            raise ValueError("reference answer is empty")
        why = guard_answer(prediction, reference, question=question, allow_one_char=allow_one_char)
        if why:
            return False, why
        if match_key(prediction) == match_key(reference):
            return True, "exact match after normalisation"
        ref_pol = yes_no(reference) if is_yes_no(reference) else None
        if ref_pol:
            pol = yes_no(prediction) or _implied_polarity(question, prediction)
            return pol == ref_pol, f"yes/no: expected {ref_pol}, got {pol or 'no clear yes/no'}"
        if canonical_text(prediction) == canonical_text(reference) or \
                "".join(content_tokens(prediction)) == "".join(content_tokens(reference)):
            return True, "same terms after the lexicon"
        mm = hard_mismatch(reference, prediction)
        if mm:
            return False, f"hard mismatch ({mm})"
        r, p = set(content_tokens(reference)), set(content_tokens(prediction))
        r_neg, p_neg = negated_tokens(reference), negated_tokens(prediction)
        if (r_neg & p) - p_neg:
            return False, "asserts what the reference negates"
        if (p_neg & r) - r_neg:
            return False, "negates the reference"
        unsure = uncertain_tokens(prediction) & r
        if unsure and not uncertain_tokens(reference):
            return False, "hedged"
        if _is_null(reference):
            if _is_null(prediction):
                return True, "both say nothing abnormal"
            return False, "the reference says nothing abnormal"
        if not r:
            return False, "reference has no content words and no exact match"
        ref_items = list_items(reference)
        if len(ref_items) >= 2:
            missing = [i for i in ref_items if not _aligned(set(content_tokens(i)), p)[0]]
            if missing:
                return False, f"misses part of the reference list ({'; '.join(missing)})"
        hit_r, hit_p, subs = _aligned(r, p)
        if subs:
            return False, f"confusable terms ({subs})"
        if hit_r == r and len(p) <= 2 * len(r) + 2:
            return True, "prediction contains the reference terms"
        f1 = _f1_aligned(hit_r, hit_p, r, p)
        if f1 >= self.f1_threshold and _head_shared(reference, prediction):
            return True, f"token F1 {f1:.2f}"
        if len(p) > 2 * len(r) + 2:
            return False, f"token F1 {f1:.2f}; too many other words for a paraphrase (keyword stuffing)"
        if self.use_embeddings:
            cos = max(self._cosine(canonical_text(prediction), canonical_text(reference)),
                      self._cosine(strip_answer(prediction), strip_answer(reference)))
            if cos >= self.embed_threshold:
                return True, f"embedding cosine {cos:.2f}"
            return False, f"token F1 {f1:.2f}, cosine {cos:.2f}"
        return False, f"token F1 {f1:.2f}"

    async def answer_correct(self, question: str, reference: str, prediction: str, *, image: Any = None) -> Verdict:
        self._count()
        ok, why = self._correct(question, reference, prediction)
        return Verdict.ok(ok, raw=why)

    # ---------------------------------------------------------------- step verification
    async def verify_steps(
        self,
        question: str,
        reference: str,
        steps: Sequence[str],
        *,
        gold_reasoning: str | None = None,
        evidence: dict | None = None,
        image: Any = None,
    ) -> Verdict:
        self._count()
        steps = list(steps)
        ctx = _StepContext(question, reference, gold_reasoning, evidence, self)
        out: list[StepVerdict] = []
        seen: list[set[str]] = []
        for step in steps:
            v = ctx.rate(str(step), seen)
            out.append(v)
            seen.append(set(content_tokens(step)))
        return Verdict.ok(out, raw=json.dumps([[v.gold_alignment, v.answer_contribution, v.reason] for v in out]))

    # ---------------------------------------------------------------- consistency
    async def consistency(self, question: str, reasoning: str, answer: str) -> Verdict:
        self._count()
        ok, why = _consistent(question, reasoning, answer)
        return Verdict.ok(ok, raw=why)

    # ---------------------------------------------------------------- grading
    async def grade(self, question: str, reference: str, prediction: str, *, rubric: str = "binary",
                    image: Any = None) -> Verdict:
        self._count()
        if rubric == "binary":
            core = strip_answer(prediction)
            if len(core) == 1 and core.isalnum():  # option label or count (MediX-R1 App. A.2)
                return Verdict.ok(float(_option_match(core, reference)), raw="option label / one character")
            ok, why = self._correct(question, reference, prediction, allow_one_char=True)
            return Verdict.ok(1.0 if ok else 0.0, raw=why)
        if rubric == "report":
            why = guard_answer(prediction, reference, long_form=True)
            if why:
                return Verdict.ok(0.0, raw=why)
            f1 = _f1(canon_tokens(prediction), canon_tokens(reference))
            return Verdict.ok(float(round(5 * f1)), raw=f"token F1 {f1:.2f}")
        raise ValueError(f"rubric must be 'binary' or 'report', got {rubric!r}")

    # ---------------------------------------------------------------- VQA audit
    async def audit_vqa(self, question: str, answer: str, *, answer_type: str | None = None) -> Verdict:
        self._count()
        q, a = (question or "").strip(), (answer or "").strip()
        base = {"new_q": q, "new_a": a}
        if not q or not a or guard_answer(a, None, allow_one_char=True) in ("empty", "placeholder"):
            return Verdict.ok({"status": "drop", **base, "notes": "heuristic: empty or placeholder question/answer"})
        yes_no = normalise(a) in ("yes", "no")
        if yes_no and _WH.match(q) and " or " not in q.lower():
            return Verdict.ok({"status": "drop", **base, "notes": "heuristic: a wh-question answered yes/no"})
        if not yes_no and _AUX.match(q) and " or " not in q.lower():
            return Verdict.ok({"status": "needs_fix", **base,
                               "notes": "heuristic: a yes/no-style question with an open answer; "
                                        "the reference judge flags but does not rewrite"})
        return Verdict.ok({"status": "consistent", **base, "notes": "heuristic: question form matches the answer"})

    # ---------------------------------------------------------------- key steps
    async def extract_key_steps(self, question: str, answer: str, reasoning: str) -> Verdict:
        """Up to 6 key steps, each a short span copied word for word from one reasoning sentence
        (StepGRPO 004_ Sec. 3.2.2: "the core few words"), so that the default StepRAR matcher
        finds all of them in the reasoning they came from. Heuristic: in every sentence that
        is not meta-talk, the window of at most 6 words holding the most medical words (organs,
        modalities, sides, question and answer words), edge stop words trimmed, widened to a negation word
        just before it ("no ... effusion" keeps its "no")."""
        from medrl.clinical.lexicon import NEGATION_WORDS

        self._count()
        if not (reasoning or "").strip():
            return Verdict.unscored("no reasoning to extract key steps from")
        ans = set(canon_tokens(answer))
        medical = _ORGANS | set(_MODALITY_WORDS) | {"left", "right"} | ans | set(canon_tokens(question))
        edge = ".,;:!?()[]{}\"'`*"

        def bare(w: str) -> str:
            return w.strip(edge).lower()

        phrases: list[str] = []
        for sent in _sentences(reasoning):
            if _META.search(sent):
                continue
            words = [w for w in sent.split() if bare(w)]
            toks = [set(canon_tokens(w)) - _KEY_FILLER for w in words]
            keys = [bool(t & medical) for t in toks]
            if not any(keys):
                continue
            size = min(6, len(words))
            start = max(range(len(words) - size + 1), key=lambda i: (sum(keys[i:i + size]), -i))
            end = start + size
            while end > start + 1 and not toks[end - 1]:
                end -= 1
            while start < end - 1 and not toks[start] and bare(words[start]) not in NEGATION_WORDS:
                start += 1
            for j in range(start - 1, max(-1, start - 4), -1):
                if bare(words[j]) in NEGATION_WORDS:
                    start = j
                    break
            phrase = " ".join(words[start:end]).strip(edge + " ")
            if phrase and phrase.lower() not in (p.lower() for p in phrases):
                phrases.append(phrase)
            if len(phrases) == 6:
                break
        if not phrases:
            return Verdict.unscored("heuristic: no sentence names a medical term or the answer")
        return Verdict.ok(phrases)


_STATEMENT = re.compile(
    r"\b(?:is|are|was|were|be|been|being|am|isn't|aren't|wasn't|weren't|has|have|had|hasn't|haven't|does|do|did|"
    r"doesn't|don't|can|cannot|can't|could|may|might|must|shall|should|will|would|there's|it's|"
    r"shows?|showed|shown|showing|demonstrat\w*|reveal\w*|suggest\w*|indicat\w*|appear\w*|measur\w*|"
    r"contain\w*|lies|lie|lying|extend\w*|involv\w*|compress\w*|displac\w*|caus\w*|confirm\w*|support\w*|"
    r"exclud\w*|point\w*|correspond\w*|represent\w*|means|lacks?|occup\w*|obscur\w*|surround\w*|abuts?|"
    r"cross\w*|fills?|filled|enhanc\w*|see|sees|seen|notes?|noted|identif\w*|visuali[sz]\w*|"
    r"locat\w*|consists?|compar\w*|differs?|match\w*|fits?|rules?|ruled|favou?rs?|makes?|helps?|becomes?|"
    r"remains?|looks?|reflects?|presents?|occurs?|arises?|affects?|spares?|exhibits?|displays?|depicts?|"
    r"implies|imply|leads?|results?|narrows?|widens?|projects?|overlies|overlie|marks?|conclude\w*|"
    r"sits?|sitting|blunt(?:s|ed|ing)?|obliterat\w*|efface\w*|encas\w*|invad\w*|spread\w*|elevat\w*|deviat\w*|shift\w*|thicken\w*|bulg\w*|protrud\w*|"
    r"answer(?:s|ed)?|thus|therefore|hence|so|because|since|which|that)\b",
    re.IGNORECASE,
)
_META2 = re.compile(
    r"^\s*(?:(?:step\s*\d+\s*[:.)-]?\s*)?(?:analy[sz]e|examine|look(?:ing)? at|review|assess|evaluate|observe|"
    r"identify|determine|check|inspect|think(?:ing)? about|recall)\b(?![^.]*\b(?:is|are|shows?|reveals?)\b))"
    r"|^\s*(?:this|the)\s+(?:step|question|task|problem)\s+(?:is|requires|involves|asks)\b"
    r"|^\s*(?:as\s+(?:mentioned|stated|noted|said)\s+(?:above|before|earlier))\s*[,.]?\s*$"
    r"|\b(?:i am|i'm)\s+(?:not\s+)?(?:sure|confident|certain)\b"
    r"|\bin\s+(?:this|my)\s+(?:analysis|reasoning|response)\b",
    re.IGNORECASE,
)
_STEP_EMBED_THRESHOLD = 0.72
_LOCATION_WORDS: set[str] = set()  # filled below: _PLACE_WORDS without normal/abnormal/present/absent
_ALL_GROUPS = set(_MISMATCH_GROUPS) | {"vertebral level", "rib", "ventricle", "grade"}
# words that place or qualify a finding (sides, positions, organs): a NegEx scope that reaches them
# ("lung markings are absent in the left upper zone") does not deny them
_PLACE_GROUPS = ("side", "vertical position", "superior/inferior", "anterior/posterior", "medial/lateral",
                 "proximal/distal", "apex/base", "organ part", "colon segment", "brain lobe", "organ", "plane", "view",
                 "modality")
_PLACE_WORDS = {alias for g in _PLACE_GROUPS for alias in _MISMATCH_GROUPS[g][1]} | {
    "normal", "abnormal", "present", "absent", "lung", "marking", "chest", "zone", "part", "wall", "lobe"}
_LOCATION_WORDS |= _PLACE_WORDS - {"normal", "abnormal", "present", "absent"}


def _disjoint_groups(a: str, b: str, groups: set[str]) -> str | None:
    """A group (side, level, ...) that both texts name with no value in common."""
    from medrl.clinical.lexicon import all_tokens
    from medrl.clinical.mismatch import group_values, levels

    ga, gb = group_values(set(all_tokens(a))), group_values(set(all_tokens(b)))
    for name in groups:
        if name in ga and name in gb and not (ga[name] & gb[name]):
            return name
    la, lb = levels(a), levels(b)
    for name in ("vertebral level", "rib", "ventricle", "grade"):
        if name in groups and la[name] and lb[name] and not (la[name] & lb[name]):
            return name
    return None


# "X obscures the ...", "X narrowed a ...": a verb-like word (-s/-ed) right before a determiner
_VERB_BEFORE_DETERMINER = re.compile(r"\b[a-z]{3,}(?:s|ed)\s+(?:the|a|an|both|its|their|all|most|much|this|that)\b",
                                     re.IGNORECASE)


def _keyword_string(step: str) -> bool:
    """A bare noun phrase or keyword list rather than a statement: no verb (from the statement
    list, or a -s/-ed word before a determiner), or mostly one- or two-word fragments
    ("Chest. Lungs. Opacity. Left.")."""
    frags = [f for f in re.split(r"[.;,:\n]+", step) if f.strip()]
    if len(frags) >= 3 and sum(len(f.split()) <= 2 for f in frags) / len(frags) >= 0.6:
        return True
    return not (_STATEMENT.search(step) or _VERB_BEFORE_DETERMINER.search(step))


_SETUP_WORDS = {"window", "slice", "section", "weighted", "contrast", "noncontrast", "phase", "level", "displayed",
                "sequence", "series", "flair", "film", "projection", "cut", "through", "shown"}


def _abnormal_finding(terms: set[str], negated: set[str]) -> bool:
    """The step asserts an abnormal finding: a word that is not a place, a setting (modality, plane,
    window, sequence) or "normal", and is not negated (MRPO App. H.2: a finding needed to reach the
    answer contributes; naming the setting or normal structures does not)."""
    if "normal" in terms:
        return False
    return bool(terms - _LOCATION_WORDS - _SETUP_WORDS - negated - {"abnormal", "present", "absent"})


def _stuffed(step: str) -> bool:
    """Keyword stuffing: three or more values of one exclusive group (modalities, sides, planes, organs
    in a comma list) named in one step."""
    from medrl.clinical.lexicon import all_tokens
    from medrl.clinical.mismatch import group_values

    groups = group_values(set(all_tokens(step)))
    if any(len(v) >= 3 for k, v in groups.items() if k != "organ"):
        return True
    if sum(len(v) >= 2 for k, v in groups.items() if k not in ("organ", "side")) >= 2:
        return True  # "left, right, upper, lower, anterior, posterior": every option at once
    return len(groups.get("organ", ())) >= 4 and step.count(",") >= 3


class _StepContext:
    """What the record says, analysed once per rollout, and the per-step rules (module docstring)."""

    def __init__(self, question: str, reference: str, gold: str | None, evidence: dict | None,
                 judge: "ReferenceJudge | None" = None):
        ev = dict(evidence or {})
        self.judge = judge
        self.reference = reference or ""
        self.ref = canon_tokens(reference)
        self.ref_all = set(canon_tokens(reference, True))
        self.ref_terms = set(content_tokens(reference)) - {"yes", "no"}
        self.ref_negated = negated_tokens(reference)
        self.ref_polarity = yes_no(reference) if is_yes_no(reference) else None
        self.question = set(canon_tokens(question)) - {"yes", "no"}
        self.question_terms = set(content_tokens(question)) - {"yes", "no"}
        self.gold_sents = [g for g in _sentences(gold or "") if content_tokens(g)] if gold else []
        self.gold = set(canon_tokens(gold)) if gold else None
        self.gold_terms = [set(content_tokens(g)) for g in self.gold_sents]
        gold_all = set(canon_tokens(gold, True)) if gold else set()
        # expected modality: evidence, else the gold reasoning's modality words
        tag = modality_to_tag(ev.get("modality")) if ev.get("modality") else None
        if tag is None and ev.get("modality_tag"):
            tag = modality_to_tag(ev.get("modality_tag"))
        gold_mods = {_MODALITY_WORDS[t] for t in gold_all if t in _MODALITY_WORDS}
        self.modalities = {tag} if tag else gold_mods
        organ = str(ev.get("organ") or ev.get("location") or "").strip().lower()
        org_toks = set(canon_tokens(organ))
        self.regions = set(_LOCATION_REGION.get(organ, set())) | _regions_of(org_toks)
        self.regions |= _regions_of(gold_all) | _regions_of(self.ref_all)
        self.organ_tokens = (org_toks | (gold_all & _ORGANS) | (self.ref_all & _ORGANS)) - {"spine"}
        sides = {"left", "right"}
        ev_answer = set(canon_tokens(ev.get("answer"), True)) if ev.get("answer") else set()
        self.sides = (self.ref_all | ev_answer | gold_all | org_toks) & sides
        self._gold_emb = None

    def _gold_cosines(self, step: str) -> list[float]:
        if not self.gold_sents or self.judge is None or not self.judge.use_embeddings:
            return [0.0] * len(self.gold_sents)
        from medrl.embeddings import encode

        if self._gold_emb is None:
            self._gold_emb = encode([canonical_text(g) for g in self.gold_sents], self.judge.embedding_model)
        e = encode([canonical_text(step)], self.judge.embedding_model)[0]
        return [float(x) for x in self._gold_emb @ e]

    def rate(self, step: str, seen: list[set[str]]) -> StepVerdict:
        text = (step or "").strip()
        if _META.search(text) or _META2.search(text):
            return StepVerdict(0, 0, "meta-commentary")
        terms = set(content_tokens(text))
        if not terms:
            return StepVerdict(0, 0, "empty or meaningless")
        for prev in seen:
            if prev and len(terms & prev) / len(terms | prev) >= 0.8:
                return StepVerdict(0, 0, "repeats an earlier step")
        if _keyword_string(text):
            return StepVerdict(0, 0, "not a statement (a noun phrase or keyword list)")
        if _stuffed(text):
            return StepVerdict(0, 0, "keyword stuffing")
        if _EVASION.search(text):
            return StepVerdict(0, 0, "evasion")
        toks_all = set(canon_tokens(text, True))
        mods = {_MODALITY_WORDS[t] for t in toks_all if t in _MODALITY_WORDS}
        if mods and self.modalities and not (mods & self.modalities):
            return StepVerdict(0, 0, f"wrong modality ({', '.join(sorted(mods))} vs {', '.join(sorted(self.modalities))})")
        sides = toks_all & {"left", "right"}
        if sides and self.sides and not (sides & self.sides):
            return StepVerdict(0, 0, f"wrong laterality ({', '.join(sorted(sides))})")
        step_regions = _regions_of(toks_all)
        if step_regions and self.regions and not (step_regions & self.regions):
            return StepVerdict(0, 0, f"organ outside the reference region ({', '.join(sorted(step_regions))})")
        step_neg = negated_tokens(text)
        # the step denies what the reference answer asserts ("no mass" for "Mass")
        denied = (step_neg & self.ref_terms) - self.ref_negated - _PLACE_WORDS
        if denied and not self.ref_polarity:
            return StepVerdict(0, 0, f"negates the reference answer ({', '.join(sorted(denied))})")
        contrib = self._contribution(text, terms, step_neg)
        if self.gold_sents:
            cos = self._gold_cosines(text)
            findings = terms - _LOCATION_WORDS
            align, why, conflict = 0, "no gold step matches", ""
            for g, g_terms, c in zip(self.gold_sents, self.gold_terms, cos):
                shared = {t for t in terms if any(_same_word(t, u) for u in g_terms)}
                overlap = len(shared) / len(terms)
                if not shared or not (overlap >= 0.5 or c >= _STEP_EMBED_THRESHOLD):
                    continue
                if findings and not (shared - _LOCATION_WORDS) and c < _STEP_EMBED_THRESHOLD:
                    continue  # the same place only ("left lung") with another finding is not the gold step
                g_neg = negated_tokens(g)
                flip = {t for t in shared & g_terms if (t in step_neg) != (t in g_neg)} - _PLACE_WORDS
                clash = _disjoint_groups(g, text, _ALL_GROUPS)
                if flip or clash:
                    conflict = conflict or (f"negation of {', '.join(sorted(flip))}" if flip else clash)
                    continue
                align, why = 1, f"gold overlap {overlap:.2f}, cosine {c:.2f}"
                break
            if not align and conflict:
                return StepVerdict(0, 0, f"contradicts the gold reasoning ({conflict})")
            if align and not contrib and not self.ref_polarity and _abnormal_finding(terms, step_neg):
                contrib, why = 1, why + "; a gold finding on the way to the answer"
        else:
            hits = []
            if mods and mods & self.modalities:
                hits.append("modality")
            if toks_all & self.organ_tokens or (step_regions & self.regions and toks_all & _ORGANS):
                hits.append("organ")
            if sides and sides & self.sides:
                hits.append("laterality")
            if contrib:
                hits.append("answer")
            align = int(bool(hits))
            why = "matches evidence: " + ", ".join(hits) if hits else "no evidence named"
        return StepVerdict(align, contrib, why)

    def _contribution(self, text: str, terms: set[str], step_neg: set[str]) -> int:
        if self.ref_polarity:
            about = terms & self.question_terms
            if not about:
                return 0
            says_no = bool(about & step_neg) or "absent" in terms or "normal" in terms and "abnormal" in self.question_terms
            return int(says_no == (self.ref_polarity == "no"))
        ref = self.ref_terms
        if not ref:
            return 0
        if _disjoint_groups(self.reference, text, _ALL_GROUPS):
            return 0
        if (ref & step_neg) - self.ref_negated - _PLACE_WORDS:
            return 0
        if _aligned(ref, terms)[2]:
            return 0  # a confusable term in place of the answer's ("epidural" for "subdural")
        return int(len(ref & terms) / len(ref) >= 0.5)


def _consistent(question: str, reasoning: str, answer: str) -> tuple[bool, str]:
    if not (reasoning or "").strip():
        return False, "empty reasoning"
    why = guard_answer(answer, None, allow_one_char=True)
    if why:
        return False, why
    sents = _sentences(reasoning)
    final = " ".join(sents[-2:])
    f_all = canon_tokens(final, True)
    a_norm = normalise(answer)
    if a_norm in ("yes", "no"):
        about = set(canon_tokens(final)) & (set(canon_tokens(question)) - {"yes", "no"})
        if "yes" in f_all[:1] or "no" in f_all[:1]:
            concl = f_all[0]
        elif about:
            concl = "no" if _negated(f_all) else "yes"
        else:
            return False, "final sentences do not address the question"
        return concl == a_norm, f"reasoning concludes {concl}, answer {a_norm}"
    a_all, a = set(canon_tokens(answer, True)), set(canon_tokens(answer))
    if not a:
        return False, "answer has no content words"
    opp = _opposed(a_all, set(f_all))
    if opp:
        return False, f"answer contradicts the conclusion ({opp})"
    cover = len(a & set(f_all)) / len(a)
    if cover < 0.5:
        return False, f"answer not in the final reasoning (coverage {cover:.2f})"
    # "no evidence of X" while answering X
    for i, t in enumerate(f_all):
        if t in a and any(w in _NEG for w in f_all[max(0, i - 4):i]) and not _negated(list(a_all)):
            return False, "the reasoning negates the answer"
    return True, f"answer follows the final reasoning (coverage {cover:.2f})"
