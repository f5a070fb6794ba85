"""The reference-based offline judge: deterministic, free, and a *heuristic*.

It stands in for an LLM judge when none is available (tests, the offline demo, CI). It reads
only the reference information a record carries - the reference answer, the gold reasoning when
there is one, otherwise the record's evidence (modality, organ/location, answer) - and applies
documented rules. It cannot see the image and does not understand medicine; treat its verdicts
as a consistent, cheap proxy, not as a substitute for a strong judge in real runs.

Rules, task by task (every rule is the project's heuristic, after the papers' criteria):

- answer correctness (MediX-R1 003_d5d6a0d73a50ab79.txt Sec. 2.3; MRPO 000 App. H.1): trivial
  answers (empty, one character, placeholder; :mod:`medrl.judges.guards`) fail; normalised exact
  match passes; yes/no references need the same polarity; contradictions fail (other side,
  opposite qualifier such as small/large or T1/T2, negation mismatch, hedging with "or");
  otherwise pass when the canonical content tokens (abbreviations and synonyms mapped, e.g. CT =
  computed tomography, renal = kidney) cover the reference within a short answer, or their F1 is
  at least ``f1_threshold``, or the MiniLM cosine is at least ``embed_threshold``.
- step verification (MRPO Eq. 3, App. H.2): meta-commentary, empty and repeated steps get 0/0;
  a step contradicting the reference (wrong modality, wrong laterality, an organ outside the
  reference's body region) gets 0/0; evasions get 0/0. Gold alignment = at least half of the
  step's content tokens occur in the gold reasoning, or - without gold reasoning - the step names
  the record's modality, organ/region, laterality or answer. Answer contribution = the step
  names at least half of the reference answer's content tokens; for a yes/no reference, the step
  is about the question's subject with the answer's polarity (negated for "no").
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

from medrl.judges.base import JUDGES, JudgeStats
from medrl.judges.guards import trivial_answer
from medrl.modality import modality_to_tag
from medrl.types import StepVerdict, Verdict

# ---------------------------------------------------------------------------------- lexicon
_PHRASES = [  # multi-word synonyms -> one canonical token (applied before tokenising)
    (r"computed tomography|cat scan|ct scan|ct", "ct"),
    (r"magnetic resonance imaging|magnetic resonance|mri scan|mr imaging|mri", "mri"),
    (r"x[\s-]?rays?|radiographs?|radiography|plain films?|cxr", "xray"),
    (r"ultrasound|ultrasonography|sonography|sonogram", "ultrasound"),
    (r"positron emission tomography|pet scan", "pet"),
    (r"small intestines?|small bowel", "smallbowel"),
    (r"large intestines?|large bowel", "colon"),
    (r"axial|transverse plane|transverse|horizontal plane", "axial"),
    (r"coronal plane|coronal", "coronal"),
    (r"sagittal plane|sagittal", "sagittal"),
    (r"gall bladder", "gallbladder"),
    (r"left[\s-]sided", "left"),
    (r"right[\s-]sided", "right"),
]
_PHRASE_RE = [(re.compile(rf"\b(?:{p})\b"), c) for p, c in _PHRASES]
_TOKEN_SYN = {
    "renal": "kidney", "nephric": "kidney", "hepatic": "liver", "pulmonary": "lung", "lungs": "lung",
    "cardiac": "heart", "cerebral": "brain", "cerebrum": "brain", "splenic": "spleen",
    "gastric": "stomach", "abdominal": "abdomen", "abd": "abdomen", "thoracic": "chest", "thorax": "chest",
    "vertebral": "spine", "spinal": "spine", "vertebra": "spine", "vertebrae": "spine", "pelvic": "pelvis",
    "intestine": "bowel", "intestinal": "bowel", "lt": "left", "rt": "right",
    "haemorrhage": "hemorrhage", "bleed": "hemorrhage", "bleeding": "hemorrhage", "tumour": "tumor",
    "enlarged": "enlargement", "dilated": "dilation", "dilatation": "dilation",
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "single": "1",
    "hyperdense": "hyperdensity", "hypodense": "hypodensity", "hyperintense": "hyperintensity",
    "hypointense": "hypointensity", "radiolucent": "lucency", "radiopaque": "opacity",
}
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
                "peritoneum", "mesentery", "spine"},
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


def _singular(tok: str) -> str:
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith(("ss", "us", "is", "ous")):
        return tok[:-1]
    return tok


def canon_tokens(text: str | None, keep_stop: bool = False) -> list[str]:
    """Lower-case canonical tokens: phrase synonyms merged, plurals singular, abbreviations mapped."""
    s = (text or "").lower().replace("_", " ")
    for rx, c in _PHRASE_RE:
        s = rx.sub(f" {c} ", s)
    toks = []
    for t in re.findall(r"[a-z0-9]+(?:'[a-z]+)?", s):
        t = t.replace("'", "")
        t = _TOKEN_SYN.get(t, t)
        t = _TOKEN_SYN.get(_singular(t), _singular(t))
        if keep_stop or t not in _STOP:
            toks.append(t)
    return toks


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

    def __init__(self, *, use_embeddings: bool = True, embed_threshold: float = 0.8,
                 f1_threshold: float = 0.67, embedding_model: str | None = None, **_ignored: Any):
        self.use_embeddings = use_embeddings
        self.embed_threshold = embed_threshold
        self.f1_threshold = f1_threshold
        self.embedding_model = embedding_model
        self.stats = JudgeStats()

    def __repr__(self) -> str:
        return f"ReferenceJudge(use_embeddings={self.use_embeddings})"

    def _count(self) -> None:
        self.stats.calls += 1

    # ---------------------------------------------------------------- answer correctness
    def _correct(self, question: str, reference: str, prediction: str) -> tuple[bool, str]:
        why = trivial_answer(prediction, reference)
        if why:
            return False, why
        if not (reference or "").strip():
            raise ValueError("reference answer is empty")
        if normalise(prediction) == normalise(reference):
            return True, "exact match after normalisation"
        ref_pol = polarity(reference) if normalise(reference) in ("yes", "no") else None
        if ref_pol:
            pol = polarity(prediction)
            return pol == ref_pol, f"yes/no: expected {ref_pol}, got {pol or 'no clear yes/no'}"
        r_all, p_all = canon_tokens(reference, True), canon_tokens(prediction, True)
        r, p = canon_tokens(reference), canon_tokens(prediction)
        opp = _opposed(set(r_all), set(p_all))
        if opp:
            return False, f"contradiction ({opp})"
        if _negated(p_all) != _negated(r_all):
            return False, "negation mismatch"
        if "or" in p_all and "or" not in r_all:
            return False, "hedges between options"
        if not r:
            return False, "reference has no content words and no exact match"
        if set(r) <= set(p) and len(set(p)) <= 2 * len(set(r)) + 3:
            return True, "prediction contains the reference"
        f1 = _f1(p, r)
        if f1 >= self.f1_threshold:
            return True, f"token F1 {f1:.2f}"
        if self.use_embeddings:
            from medrl.embeddings import cosine_pairs

            cos = cosine_pairs([" ".join(p)], [" ".join(r)], self.embedding_model)[0]
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
        ctx = _StepContext(question, reference, gold_reasoning, evidence)
        out: list[StepVerdict] = []
        seen: list[set[str]] = []
        for step in steps:
            v = ctx.rate(str(step), seen)
            out.append(v)
            seen.append(set(canon_tokens(step)))
        return Verdict.ok(out, raw=json.dumps([[v.gold_alignment, v.answer_contribution, v.reason] for v in out]))

    # ---------------------------------------------------------------- consistency
    async def consistency(self, question: str, reasoning: str, answer: str) -> Verdict:
        self._count()
        ok, why = _consistent(question, reasoning, answer)
        return Verdict.ok(ok, raw=why)

    # ---------------------------------------------------------------- grading
    async def grade(self, question: str, reference: str, prediction: str, *, rubric: str = "binary") -> Verdict:
        self._count()
        if rubric == "binary":
            why = trivial_answer(prediction, reference, allow_one_char=True)
            if why:
                return Verdict.ok(0.0, raw=why)
            if len((prediction or "").strip().strip(".")) == 1:  # option label: exact letter only
                return Verdict.ok(float(normalise(prediction) == normalise(reference)), raw="option label")
            ok, why = self._correct(question, reference, prediction)
            return Verdict.ok(1.0 if ok else 0.0, raw=why)
        if rubric == "report":
            why = trivial_answer(prediction, reference)
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
        if not q or not a or trivial_answer(a, allow_one_char=True) in ("empty", "placeholder"):
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
        self._count()
        if not (reasoning or "").strip():
            return Verdict.unscored("no reasoning to extract key steps from")
        ans = set(canon_tokens(answer))
        phrases: list[str] = []
        for sent in _sentences(reasoning):
            if _META.search(sent):
                continue
            toks = [t for t in canon_tokens(sent) if t not in _KEY_FILLER]
            medical = set(toks) & (_ORGANS | set(_MODALITY_WORDS) | {"left", "right"} | ans)
            if not medical or len(toks) < 1:
                continue
            phrase = " ".join(toks[:4])
            if phrase and phrase not in phrases:
                phrases.append(phrase)
            if len(phrases) == 6:
                break
        if not phrases:
            return Verdict.unscored("heuristic: no sentence names a medical term or the answer")
        return Verdict.ok(phrases)


class _StepContext:
    """What the record says, pre-tokenised once per rollout, and the per-step rules."""

    def __init__(self, question: str, reference: str, gold: str | None, evidence: dict | None):
        ev = dict(evidence or {})
        self.ref = canon_tokens(reference)
        self.ref_all = set(canon_tokens(reference, True))
        self.ref_polarity = normalise(reference) if normalise(reference) in ("yes", "no") else None
        self.question = set(canon_tokens(question)) - {"yes", "no"}
        self.gold = set(canon_tokens(gold)) if gold else None
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

    def rate(self, step: str, seen: list[set[str]]) -> StepVerdict:
        toks_all = set(canon_tokens(step, True))
        toks = set(canon_tokens(step))
        if _META.search(step):
            return StepVerdict(0, 0, "meta-commentary")
        if len(toks) < 2 and not (toks & (set(self.ref) | _ORGANS | set(_MODALITY_WORDS) | {"left", "right"})):
            return StepVerdict(0, 0, "empty or meaningless")
        for prev in seen:
            if prev and len(toks & prev) / len(toks | prev) >= 0.8:
                return StepVerdict(0, 0, "repeats an earlier step")
        if _EVASION.search(step):
            return StepVerdict(0, 0, "evasion")
        mods = {_MODALITY_WORDS[t] for t in toks_all if t in _MODALITY_WORDS}
        if mods and self.modalities and not (mods & self.modalities):
            return StepVerdict(0, 0, f"wrong modality ({', '.join(sorted(mods))} vs {', '.join(sorted(self.modalities))})")
        sides = toks_all & {"left", "right"}
        if sides and self.sides and not (sides & self.sides):
            return StepVerdict(0, 0, f"wrong laterality ({', '.join(sorted(sides))})")
        step_regions = _regions_of(toks_all)
        if step_regions and self.regions and not (step_regions & self.regions):
            return StepVerdict(0, 0, f"organ outside the reference region ({', '.join(sorted(step_regions))})")
        contrib = self._contribution(toks, toks_all)
        if self.gold is not None:
            overlap = len(toks & self.gold) / max(1, len(toks))
            align = int(overlap >= 0.5)
            why = f"gold overlap {overlap:.2f}"
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

    def _contribution(self, toks: set[str], toks_all: set[str]) -> int:
        if self.ref_polarity:
            about = bool(toks & self.question)
            says_no = _negated(toks_all)
            return int(about and (says_no == (self.ref_polarity == "no")))
        ref = set(self.ref)
        if not ref:
            return 0
        if _opposed(self.ref_all, toks_all):
            return 0
        return int(len(ref & toks) / len(ref) >= 0.5)


def _consistent(question: str, reasoning: str, answer: str) -> tuple[bool, str]:
    if not (reasoning or "").strip():
        return False, "empty reasoning"
    why = trivial_answer(answer, allow_one_char=True)
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
