"""Shared vocabulary of the reference judge: stop words, negation words, opposite pairs, modality
words, body regions and the organs inside them, and the small word-matching helpers every rule uses.

The clinical lexicon itself (abbreviations, synonyms, spellings) lives in
:mod:`medrl.answers.clinical.lexicon` (``lexicon.tsv``); this module only adds the judge's own word lists.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Sequence

from medrl.answers.clinical.lexicon import all_tokens, stem, typo_equal

_STOP = set(
    """a an the of in on at to for from by with and or but is are was were be been being this that
    these those there here it its as into onto over under than then so such can could may might
    would should will shall do does did has have had having which what where when who whom whose
    how why i we you he she they me us our your their his her them my image picture scan shown
    shows show showing seen see visible appears appear appearing noted note present demonstrates
    demonstrate demonstrated evident likely also very some any each both all area region
    finding findings patient study view side part""".split()
)
from medrl.answers.clinical.negation_terms import terms as _negation_terms  # noqa: E402 (medrl/answers/clinical/negation.tsv)

_NEG = set(_negation_terms("step"))
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
    """Lower-case canonical tokens from the one clinical lexicon (:func:`medrl.answers.clinical.lexicon.all_tokens`:
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



def _same_word(a: str, b: str) -> bool:
    return a == b or stem(a) == stem(b) or typo_equal(a, b)


def _aligned(r: set[str], p: set[str]) -> tuple[set[str], set[str], str]:
    """Reference and prediction words matched to each other (equal, same stem, or a typo), and
    a "confusable" substitution: an unmatched reference word spelled like an unmatched prediction
    word without being it ("ureteral"/"urethral", "pneumothorax"/"hemothorax")."""
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



def _regions_of(tokens: set[str]) -> set[str]:
    return {reg for reg, organs in _REGIONS.items() if tokens & organs}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text or "") if s and s.strip()]

