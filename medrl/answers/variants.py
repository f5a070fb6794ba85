"""Meaning-preserving and meaning-flipping variants of a reference answer (metamorphic testing).

A judge or reward is attacked before it is trusted: from one reference answer, :func:`variants`
writes answers that say the *same* thing in other words (``preserves=True``: they must stay
correct) and answers that say something *else* while keeping most of the reference's words
(``preserves=False``: they must lose). It is written from the meaning classes below, not from
any judge's rules, so the judge is measured against an independent oracle. The tests
(``tests/answers/test_variants.py``) and ``medrl audit-rewards`` use it.

Meaning-preserving kinds (``preserves=True``):

- ``case_*``: upper, lower, title case; ``space``/``period``: surrounding whitespace, a final
  full stop; ``markup_*``: ``**X**``, ``<b>X</b>``, ``\\boxed{X}``, backticks, an HTML comment;
- ``qualifier_*``: an allowed qualifier that contradicts nothing: "X, PA view" for a chest
  radiograph, "X, T2-weighted" / "X, axial" for an MRI/CT answer without sequence or plane,
  "X, enlarged" for an organ that can enlarge, "mild X" / "small X" for a finding (never when
  the reference or question already speaks of size, severity, view, sequence or plane);
- ``lexicon``: a synonym, abbreviation, lay term or spelling from the shared clinical lexicon
  (``medrl/answers/clinical/lexicon.tsv``; only replacements that leave the lexicon's canonical text
  unchanged); ``spelling``: British/American spelling ("haemorrhage", "grey", "centre");
- ``reorder``: the items of a list reference in another order ("liver and spleen" ->
  "spleen and liver"; not for shared-head phrases like "lateral and third ventricles");
- ``side_abbrev``: "R"/"L" for "right"/"left"; ``number_word``: "2" <-> "two";
  ``unit_converted``: "3.4 cm" -> "34 mm" (the same length);
- ``sentence_*``: a short affirming sentence ("It is X.", "The answer is X");
- ``homoglyph``/``fullwidth``: some Latin letters written with look-alike Cyrillic/Greek letters
  or fullwidth forms. Decision: these are PRESERVING, because the text reads the same and folds
  to the reference under Unicode NFKC plus TR39 confusable folding (what a reader sees is the
  reference). A whole word transliterated or translated into another script is not (below).

Meaning-flipping kinds (``preserves=False``):

- ``negation_*``: "no X", "not X", "X: no", "X - absent", "X: negative", "X: false", "non-X",
  "X-negative", "without X", "resolved X", "ruled out X", "negative for X", "X is absent",
  "X not seen", "~~X~~", "X ✗", "X ❌";
- ``side_flip`` (right <-> left, "both"/"bilateral" -> one side), ``side_drop`` ("temporal lobe"
  for "right temporal lobe");
- ``number_*``: a decimal point dropped (3.4 -> 34), a range (3.4 -> 3-4), another value
  (2 -> 3), another unit without conversion (cm -> inches, cm -> mm), another ordinal;
- ``opposite``: an exclusive descriptor swapped (T1/T2, axial/coronal, hyper/hypodense,
  black/white, upper/lower, anterior/posterior, male/female, normal/abnormal, ...);
- ``organ_broader`` ("brain" for "right temporal lobe", "chest" for "lung"), ``organ_other``
  (spleen for liver); ``modality_other`` (MRI for CT); ``modality_prefix`` ("CT X" where neither
  reference nor question is about CT);
- ``second_finding`` ("X and pneumothorax"); ``list_*`` candidate lists ("X, Y or Z", "X/Y",
  "Y; X"); ``hedge_*`` ("possibly X", "X?", "X cannot be excluded", "probably X");
- ``script_*``: a translation into Chinese or Russian for words of a small table, else a
  Cyrillic transliteration (another language is unknown, hence not correct);
- ``yes_no_flip`` for a yes/no reference.

Every kind is applied where it makes sense for the reference (a negation of "None" or of a bare
number is skipped; a laterality flip needs exactly one side named). :func:`variants` is
deterministic given ``rng_seed`` and the reference; :func:`variant_strategy` is a Hypothesis
strategy over the same variants.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass
from functools import lru_cache

from medrl.answers.clinical.negation_terms import alternation

__all__ = ["Variant", "variants", "variant_strategy", "preserving", "flipping"]


@dataclass(frozen=True)
class Variant:
    """One rewritten answer: ``kind`` names the transformation, ``preserves`` whether the
    meaning of the reference is kept (True: must stay correct; False: must lose)."""

    text: str
    kind: str
    preserves: bool


# ----------------------------------------------------------------------------- word tables

_SIDE = {"right": "left", "left": "right", "r": "l", "l": "r", "rt": "lt", "lt": "rt", "dextra": "sinistra",
         "sinistra": "dextra"}
_SIDE_WORD = re.compile(r"(?<![\w-])(right|left|rt|lt)(?![\w-])", re.I)
_SIDE_LETTER = re.compile(r"(?<![\w'.-])([RL])(?![\w'-])")
_BOTH = re.compile(r"(?<![\w-])(bilateral(?:ly)?|both)(?![\w-])", re.I)
_NEGATIVE_REF = re.compile(r"(?<![\w-])(" + alternation("negative_reference") + r")(?![\w-])|^\s*0\s*$", re.I)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\d])")
_UNIT_AFTER = re.compile(r"^\s*(mm|cm|m|inches|inch|in)\b", re.I)
_ORDINAL = re.compile(r"(?<!\w)(\d+)(st|nd|rd|th)\b", re.I)
_NUM_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_NUM_WORD = re.compile(r"(?<![\w-])(" + "|".join(_NUM_WORDS) + r")(?![\w-])", re.I)

#: exclusive descriptors: swapping one for the other changes the answer
_OPPOSITES = [("t1", "t2"), ("axial", "coronal"), ("sagittal", "axial"), ("transverse", "sagittal"),
              ("hyperdense", "hypodense"), ("hypodense", "hyperdense"), ("hyperintense", "hypointense"),
              ("hypointense", "hyperintense"), ("black", "white"), ("white", "black"), ("gray", "white"),
              ("upper", "lower"), ("lower", "upper"), ("top", "bottom"), ("bottom", "top"),
              ("superior", "inferior"), ("inferior", "superior"), ("anterior", "posterior"),
              ("posterior", "anterior"), ("male", "female"), ("female", "male"), ("normal", "abnormal"),
              ("abnormal", "normal"), ("benign", "malignant"), ("malignant", "benign"), ("acute", "chronic"),
              ("chronic", "acute"), ("enlarged", "shrunken"), ("smaller", "larger"), ("larger", "smaller"),
              ("increased", "decreased"), ("decreased", "increased"), ("cystic", "solid"), ("solid", "cystic"),
              ("ascending", "descending"), ("descending", "ascending"), ("supine", "prone"),
              ("frontal", "occipital"), ("occipital", "frontal"), ("temporal", "parietal"),
              ("parietal", "temporal"), ("proximal", "distal"), ("distal", "proximal"), ("medial", "lateral"),
              ("irregular", "regular"), ("circular", "triangular"), ("oval", "triangular"),
              ("center", "periphery"), ("much", "little"), ("breathe", "digest"), ("contrast", "no contrast")]

#: organ -> a broader structure that contains it (answering it is less specific, hence wrong)
_BROADER = {"temporal lobe": "brain", "frontal lobe": "brain", "parietal lobe": "brain",
            "occipital lobe": "brain", "cerebellum": "brain", "thalamus": "brain", "basal ganglia": "brain",
            "lateral ventricles": "brain", "ventricle": "brain", "hemisphere": "brain",
            "upper lobe": "lung", "lower lobe": "lung", "middle lobe": "lung", "lung": "chest", "lungs": "chest",
            "heart": "chest", "liver": "abdomen", "spleen": "abdomen", "kidney": "abdomen",
            "stomach": "abdomen", "pancreas": "abdomen", "pancreatic head": "pancreas",
            "head of the pancreas": "pancreas", "small bowel": "abdomen", "large bowel": "abdomen",
            "colon": "abdomen", "gallbladder": "abdomen", "bladder": "pelvis", "ascending colon": "colon",
            "cecum": "colon", "appendix": "abdomen", "femoral head": "femur", "mandible": "head",
            "maxillary sinuses": "head", "spinal cord": "spine", "bronchus": "lung", "diaphragm": "chest",
            "mediastinum": "chest", "ribs": "chest", "psoas muscle": "abdomen", "brain": "head"}
#: organ -> a different organ of the same region
_OTHER_ORGAN = {"liver": "spleen", "spleen": "liver", "kidney": "liver", "lung": "heart", "lungs": "heart",
                "heart": "lung", "brain": "spinal cord", "pancreas": "liver", "stomach": "colon",
                "colon": "small bowel", "small bowel": "colon", "large bowel": "small bowel",
                "bladder": "uterus", "gallbladder": "pancreas", "chest": "abdomen", "abdomen": "chest",
                "head": "neck", "neck": "head", "pelvic cavity": "chest", "spinal cord": "brain",
                "diaphragm": "pericardium", "intestines": "kidneys", "stomach wall": "bladder wall",
                "cecum": "sigmoid colon", "appendix": "gallbladder", "thalamus": "pons", "aorta": "vena cava",
                "ivc": "aorta", "eyes": "ears", "tooth": "tongue", "mandible": "maxilla",
                "femoral head": "humeral head", "rectum": "bladder", "ribs": "clavicles",
                "basilar artery": "vertebral artery", "trachea": "esophagus", "esophagus": "trachea",
                "maxillary sinuses": "frontal sinuses", "bronchus": "esophagus", "psoas muscle": "iliacus muscle",
                "cerebellum": "pons", "mediastinum": "pleura", "sacroiliac joint": "hip joint"}
_MODALITY = {"ct": "MRI", "mri": "CT", "mr": "CT", "x-ray": "CT", "xray": "CT", "xr": "MRI",
             "plain film": "CT", "radiograph": "MRI", "ultrasound": "CT", "dwi": "CT", "flair": "CT"}
_MODALITY_WORD = re.compile(r"(?<![\w-])(ct|mri|mr|x-ray|xray|xr|plain film|radiograph|ultrasound)(?![\w-])", re.I)
_CT_WORDS = re.compile(r"(?<![\w-])(ct|cat|computed|tomograph\w*)(?![\w-])", re.I)
_ORGAN_WORD = re.compile(r"(?<![\w-])(" + "|".join(sorted({*_BROADER, *_OTHER_ORGAN}, key=len, reverse=True))
                         + r")(?![\w-])", re.I)

#: organ -> qualifier that describes it without contradicting the reference
_ENLARGEABLE = {"liver", "spleen", "heart", "kidney", "thyroid", "prostate", "gallbladder", "lymph node",
                "lymph nodes", "ventricles", "lateral ventricles", "pancreas", "uterus", "aorta"}
_SIZE_FINDINGS = {"nodule", "nodules", "mass", "lesion", "lesions", "cyst", "effusion", "opacity", "opacities",
                  "opacification", "calcification", "stone", "stones", "gallstones", "tumor", "tumour",
                  "pleural effusion", "kidney cyst", "hypodense lesion", "bullous lesion", "infarct"}
_MILD_FINDINGS = {"edema", "oedema", "hydrocephalus", "atelectasis", "cardiomegaly", "hemorrhage", "haemorrhage",
                  "pneumonia", "effusion", "hyperinflation", "diverticulitis", "appendicitis", "hyperemia",
                  "mucosal hyperemia", "atherosclerosis", "emphysema", "scoliosis", "pneumothorax",
                  "encephalomalacia", "lymphadenopathy", "splenomegaly", "hepatomegaly", "inflammation"}
_SIZE_OR_SEVERITY = re.compile(r"(?<![\w-])(small|smaller|large|larger|big|tiny|huge|mild|mildly|moderate|severe|"
                               r"marked|massive|minimal|slight|enlarged|enlargement|megaly|\w+megaly|size|sized|"
                               r"bigger|grade|stage|little|much)(?![\w-])", re.I)
_VIEW_SEQ_PLANE = re.compile(r"(?<![\w-])(view|views|projection|pa|ap|lateral|posteroanterior|anteroposterior|"
                             r"posterior-anterior|t1|t2|flair|dwi|weighted|sequence|axial|coronal|sagittal|"
                             r"transverse|plane|planes|contrast|window)(?![\w-])", re.I)
_CHEST_XRAY = re.compile(r"^(chest\s*)?(x-?\s?ray|xray|xr|cxr|radiograph|plain film)(\s*chest)?$|^(cxr|chest x-?ray|"
                         r"chest radiograph|chest film|plain film x-?ray)$", re.I)
_MR_OR_CT = re.compile(r"^(mri|mr|ct|ct scan|mri scan|ct with contrast|magnetic resonance imaging)$", re.I)

_SPELLING = [("hemorrhage", "haemorrhage"), ("hematoma", "haematoma"), ("edema", "oedema"), ("tumor", "tumour"),
             ("esophagus", "oesophagus"), ("anemia", "anaemia"), ("ischemia", "ischaemia"),
             ("hyperemia", "hyperaemia"), ("feces", "faeces"), ("center", "centre"), ("gray", "grey"),
             ("color", "colour"), ("localized", "localised"), ("leukemia", "leukaemia"), ("cecum", "caecum"),
             ("fetus", "foetus"), ("pediatric", "paediatric"), ("orthopedic", "orthopaedic"),
             ("hemothorax", "haemothorax"), ("celiac", "coeliac")]

_FINDINGS_POOL = ["pneumothorax", "pleural effusion", "pulmonary edema", "fracture", "mass", "cardiomegaly",
                  "atelectasis", "hemorrhage", "nodule", "consolidation"]
_ORGAN_POOL = ["liver", "spleen", "kidney", "heart", "lung", "pancreas", "brain", "bladder", "stomach", "colon"]
_LOC_POOL = ["left upper lobe", "right lower lobe", "left kidney", "right frontal lobe", "mediastinum"]

_ZH = {"liver": "肝脏", "lung": "肺", "lungs": "肺", "heart": "心脏", "brain": "大脑", "kidney": "肾脏",
       "chest": "胸部", "abdomen": "腹部", "head": "头部", "left": "左", "right": "右", "spleen": "脾脏",
       "yes": "是", "no": "否", "neck": "颈部", "bladder": "膀胱", "colon": "结肠", "ct": "CT", "mri": "核磁共振",
       "hydrocephalus": "脑积水", "pneumonia": "肺炎", "atelectasis": "肺不张", "cardiomegaly": "心脏肥大",
       "edema": "水肿", "axial": "轴位", "coronal": "冠状位", "transverse": "横断", "plane": "面",
       "lobe": "叶", "temporal": "颞", "frontal": "额", "upper": "上", "lower": "下", "small": "小",
       "bowel": "肠", "black": "黑色", "white": "白色", "gray": "灰色", "x-ray": "X光", "mass": "肿块",
       "nodule": "结节", "nodules": "结节", "effusion": "积液", "pleural": "胸腔"}
_RU = {"liver": "печень", "lung": "лёгкое", "lungs": "лёгкие", "heart": "сердце", "brain": "мозг",
       "kidney": "почка", "chest": "грудь", "abdomen": "живот", "head": "голова", "left": "левый",
       "right": "правый", "yes": "да", "no": "нет", "hydrocephalus": "гидроцефалия", "pneumonia": "пневмония",
       "axial": "аксиальная", "coronal": "корональная", "lobe": "доля", "temporal": "височная",
       "black": "чёрный", "white": "белый", "spleen": "селезёнка", "mass": "образование"}
# phonetic Latin -> Cyrillic (a transliteration, not a look-alike: "liver" -> "ливер")
_TRANSLIT = {"a": "а", "b": "б", "c": "к", "d": "д", "e": "е", "f": "ф", "g": "г", "h": "х", "i": "и",
             "j": "дж", "k": "к", "l": "л", "m": "м", "n": "н", "o": "о", "p": "п", "q": "к", "r": "р",
             "s": "с", "t": "т", "u": "у", "v": "в", "w": "в", "x": "кс", "y": "й", "z": "з"}
# Latin letter -> a Cyrillic/Greek letter that looks the same (TR39 confusables)
_HOMOGLYPH = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і", "A": "Α",
              "B": "Β", "E": "Ε", "H": "Η", "K": "Κ", "M": "Μ", "O": "Ο", "T": "Τ", "X": "Χ", "C": "С", "P": "Р"}


# ----------------------------------------------------------------------------- helpers


def _sub_word(text: str, word: str, new: str, count: int = 0) -> str:
    """``text`` with the whole word/phrase ``word`` (case-insensitive) replaced by ``new``,
    keeping a capital first letter."""
    def rep(m: re.Match) -> str:
        old = m.group(0)
        if old[:1].isupper() and new[:1].islower():
            return new[:1].upper() + new[1:]
        return new

    return re.sub(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", rep, text, count=count, flags=re.I)


def _has_word(text: str, word: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text, re.I) is not None


@lru_cache(maxsize=4096)
def _phrase(phrase: str) -> re.Pattern:
    """A lexicon phrase as a whole-word pattern where a space also matches a hyphen (the lexicon
    stores "x-ray" as "x ray")."""
    return re.compile(r"(?<![\w-])" + r"[\s-]+".join(map(re.escape, phrase.split())) + r"(?![\w-])", re.I)


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("-", " ").split())


def _is_yes_no(ref: str) -> bool:
    return _norm(ref).strip(" .!") in ("yes", "no")


def _items(ref: str) -> list[str] | None:
    """The items of a list reference ("A, B, C", "A and B"), or None when it is not a list of
    separate things (a shared-head phrase like "Lateral and third ventricular hydrocephalus")."""
    if "," in ref:
        parts = [p.strip() for p in ref.split(",")]
        if len(parts) >= 2 and all(p and len(p.split()) <= 6 for p in parts):
            return parts
        return None
    m = re.split(r"\s+and\s+", ref.strip(), flags=re.I)
    if len(m) == 2 and all(m):
        a, b = m
        if len(a.split()) == 1 and len(b.split()) > 1:
            return None  # "lateral and third ventricles": both adjectives share the head noun
        if len(a.split()) > 1 and len(b.split()) == 1 and _SIDE_WORD.search(a.split()[0]):
            return None  # "left thalamus and ganglia": the side may govern both
        if _SIDE_WORD.match(a) and len(a.split()) > 1:
            return None
        return [a, b]
    return None


def _sides(ref: str) -> set[str]:
    out = {m.group(1).lower() for m in _SIDE_WORD.finditer(ref)}
    out |= {m.group(1).lower() for m in _SIDE_LETTER.finditer(ref)}
    return {{"rt": "right", "r": "right", "lt": "left", "l": "left"}.get(s, s) for s in out}


def _fmt(x: float) -> str:
    s = f"{x:.6f}".rstrip("0").rstrip(".")
    return s or "0"


@lru_cache(maxsize=1)
def _lexicon_groups() -> tuple[dict[str, str], dict[str, list[str]]]:
    """variant -> canonical, canonical -> [variants] for the kinds that are true synonyms."""
    from medrl.answers.clinical.lexicon import load_lexicon

    to_canon: dict[str, str] = {}
    by_canon: dict[str, list[str]] = {}
    for variant, canon, kind in load_lexicon():
        if kind not in ("abbrev", "synonym", "spelling", "lay"):
            continue
        to_canon[variant] = canon
        by_canon.setdefault(canon, [])
        if variant not in by_canon[canon]:
            by_canon[canon].append(variant)
    for canon in list(by_canon):
        if canon not in by_canon[canon]:
            by_canon[canon].insert(0, canon)
    return to_canon, by_canon


def _lexicon_variants(ref: str, rng: random.Random, k: int = 2) -> list[str]:
    """Up to ``k`` rewrites of ``ref`` with one lexicon phrase replaced by another of the same
    canonical term; only those whose canonical text equals the reference's."""
    from medrl.answers.clinical.lexicon import canonical_text

    to_canon, by_canon = _lexicon_groups()
    target = canonical_text(ref)
    low = ref.lower()
    found: list[tuple[str, str]] = []
    for phrase in sorted(to_canon, key=len, reverse=True):
        if len(phrase) < 2 or phrase.split()[0] not in low or not _phrase(phrase).search(low):
            continue
        if any(phrase in f for f, _ in found):
            continue
        found.append((phrase, to_canon[phrase]))
    out: list[str] = []
    rng.shuffle(found)
    for phrase, canon in found:
        alts = [a for a in by_canon.get(canon, []) if a != phrase and len(a) > 1]
        rng.shuffle(alts)
        for alt in alts:
            new = alt.upper() if alt in {"ct", "mri", "cxr", "ivc", "svc", "csf", "xr"} else alt
            cand = _phrase(phrase).sub(lambda m: _keep_cap(m.group(0), new), ref, count=1)
            if cand.lower() != low and canonical_text(cand) == target:
                out.append(cand)
                break
        if len(out) >= k:
            break
    return out


# ----------------------------------------------------------------------------- preserving


def _preserving(ref: str, question: str, rng: random.Random) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    add = lambda kind, text: out.append((kind, text))  # noqa: E731
    r = ref.strip()
    low = r.lower()
    q = question or ""
    add("case_upper", r.upper())
    add("case_lower", r.lower())
    add("case_title", r.title() if not re.search(r"\d", r) else r.swapcase())
    add("space", f"  {r} \n")
    add("period", r + ".")
    add("markup_bold", f"**{r}**")
    add("markup_html", f"<b>{r}</b>")
    add("markup_boxed", f"\\boxed{{{r}}}")
    add("markup_code", f"`{r}`")
    add("markup_comment", f"{r}<!-- final -->")
    if _is_yes_no(r):
        yn = _norm(r).strip(" .!")
        add("sentence_yes_no", f"{yn.capitalize()}, {'it is' if yn == 'yes' else 'it is not'}.")
        add("sentence_answer", f"The answer is {yn}.")
        return out
    add("sentence_it_is", f"It is {r}.")
    add("sentence_answer", rng.choice([f"The answer is {r}", f"The answer is: {r}.", f"Answer: {r}"]))
    # allowed qualifiers
    stripped = re.sub(r"^(the|a|an)\s+", "", low).strip(" .")
    no_view_words = not _VIEW_SEQ_PLANE.search(r) and not _VIEW_SEQ_PLANE.search(q)
    if _CHEST_XRAY.match(stripped) and no_view_words:
        add("qualifier_view", f"{r}, PA view")
    if _MR_OR_CT.match(stripped) and no_view_words:
        if stripped.startswith("m"):
            add("qualifier_sequence", f"{r}, {rng.choice(['T2-weighted', 'axial'])}")
        else:
            add("qualifier_plane", f"{r}, axial")
    no_size = not _SIZE_OR_SEVERITY.search(r) and not _SIZE_OR_SEVERITY.search(q) and _items(r) is None
    head = re.sub(r"^(right|left|bilateral)\s+", "", stripped)
    if no_size and head in _ENLARGEABLE:
        add("qualifier_enlarged", f"{r}, enlarged")
    elif no_size and len(stripped.split()) <= 4:
        last = stripped.split()[-1] if stripped.split() else ""
        if last in _SIZE_FINDINGS or stripped in _SIZE_FINDINGS:
            add("qualifier_size", f"small {r}")
        elif last in _MILD_FINDINGS or stripped in _MILD_FINDINGS:
            add("qualifier_severity", f"mild {r}")
    for alt in _lexicon_variants(r, rng):
        add("lexicon", alt)
    for us, uk in _SPELLING:
        if _has_word(r, us):
            add("spelling", _sub_word(r, us, uk))
            break
        if _has_word(r, uk):
            add("spelling", _sub_word(r, uk, us))
            break
    items = _items(r)
    if items and len({i.lower() for i in items}) == len(items):
        order = items[1:] + items[:1]
        joiner = ", " if "," in r else " and "
        add("reorder", joiner.join(order))
    sides = _sides(r)
    if sides and _SIDE_WORD.search(r):
        add("side_abbrev", _SIDE_WORD.sub(lambda m: "R" if m.group(1).lower().startswith("r") else "L", r))
    # numbers
    m = _NUMBER.search(r)
    if m and re.fullmatch(r"\d", m.group(1)) and not _NUMBER.search(r[m.end():]) and not _ORDINAL.search(r) \
            and not re.search(r"[a-z]\d|\d[a-z]", low) and not _VIEW_SEQ_PLANE.search(r):
        add("number_word", r[:m.start()] + _NUM_WORDS[int(m.group(1))] + r[m.end():])
    wm = _NUM_WORD.search(r)
    if wm and not _NUMBER.search(r):
        add("number_word", r[:wm.start()] + str(_NUM_WORDS.index(wm.group(1).lower())) + r[wm.end():])
    um = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(cm|mm)\s*", r, re.I)
    if um:
        v = float(um.group(1))
        add("unit_converted", f"{_fmt(v * 10)} mm" if um.group(2).lower() == "cm" else f"{_fmt(v / 10)} cm")
    # look-alike letters (read the same; see the module docstring)
    letters = [i for i, ch in enumerate(r) if ch in _HOMOGLYPH]
    if letters:
        chosen = set(rng.sample(letters, max(1, len(letters) // 3)))
        add("homoglyph", "".join(_HOMOGLYPH[ch] if i in chosen else ch for i, ch in enumerate(r)))
        add("fullwidth", "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in r))
    return out


# ----------------------------------------------------------------------------- flipping


_NEGATIONS = [("negation_no", "no {x}"), ("negation_not", "not {x}"), ("negation_colon_no", "{x}: no"),
              ("negation_absent", "{x} - absent"), ("negation_colon_negative", "{x}: negative"),
              ("negation_colon_false", "{x}: false"), ("negation_non", "non-{x}"),
              ("negation_suffix", "{x}-negative"), ("negation_without", "without {x}"),
              ("negation_resolved", "resolved {x}"), ("negation_ruled_out", "ruled out {x}"),
              ("negation_negative_for", "negative for {x}"), ("negation_is_absent", "{x} is absent"),
              ("negation_not_seen", "{x} not seen"), ("negation_strike", "~~{x}~~"),
              ("negation_cross", "{x} \u2717"), ("negation_cross_mark", "{x} \u274c")]
_HEDGES = [("hedge_possibly", "possibly {x}"), ("hedge_question", "{x}?"), ("hedge_probably", "probably {x}"),
           ("hedge_cannot_exclude", "{x} cannot be excluded"), ("hedge_maybe", "maybe {x}"),
           ("hedge_suspected", "suspected {x}")]


def _distractors(ref: str, rng: random.Random, k: int = 2) -> list[str]:
    low = _norm(ref)
    if _ORGAN_WORD.search(ref):
        pool = _ORGAN_POOL
    elif _sides(ref) or re.search(r"lobe|upper|lower|side", low):
        pool = _LOC_POOL
    else:
        pool = _FINDINGS_POOL
    from medrl.answers.clinical.lexicon import content_tokens

    words = set(low.split()) | set(content_tokens(ref))
    unrelated = lambda p: not ((set(p.split()) | set(content_tokens(p))) & words)  # noqa: E731
    cands = [p for p in pool if unrelated(p)]
    if len(cands) < k:
        cands = [p for p in _FINDINGS_POOL + _ORGAN_POOL if unrelated(p)]
    return rng.sample(cands, k)


def _flipping(ref: str, question: str, rng: random.Random) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    add = lambda kind, text: out.append((kind, text))  # noqa: E731
    r = ref.strip().rstrip(".")
    low = r.lower()
    q = question or ""
    if _is_yes_no(r):
        yn = _norm(r).strip(" .!")
        other = "no" if yn == "yes" else "yes"
        add("yes_no_flip", other)
        add("yes_no_flip_sentence", other.capitalize() + ".")
        add("list_yes_no", "yes or no")
        add("hedge_possibly", f"possibly {yn}")
        add("script_zh", _ZH[yn])
        add("script_ru", _RU[yn])
        return out
    numeric_only = re.fullmatch(r"[\d.\s]+", r) is not None
    negative_ref = _NEGATIVE_REF.search(r) is not None
    if not numeric_only and not negative_ref:
        for kind, tpl in _NEGATIONS:
            add(kind, tpl.format(x=r))
    # laterality
    sides = _sides(r)
    if len(sides) == 1:
        flipped = _SIDE_WORD.sub(lambda m: _swap_case(m.group(1), _SIDE[m.group(1).lower()]), r)
        flipped = _SIDE_LETTER.sub(lambda m: _SIDE[m.group(1).lower()].upper(), flipped)
        add("side_flip", flipped)
        dropped = " ".join(_SIDE_LETTER.sub("", _SIDE_WORD.sub("", r)).split()).strip(" ,")
        dropped = re.sub(r"^(the|of|on|to)\s+", "", dropped, flags=re.I)
        if dropped and re.search(r"[a-z]{3}", dropped.lower()) and _norm(dropped) not in ("side", "sided", "on the"):
            add("side_drop", dropped)
    elif _BOTH.search(r) and not sides:
        add("side_flip", _BOTH.sub(lambda m: "left" if m.group(1)[:1].islower() else "Left", r, count=1))
    # numbers
    _number_flips(r, add, rng)
    # exclusive descriptors
    for a, b in _OPPOSITES:
        if _has_word(r, a) and not _has_word(r, b):
            add("opposite", _sub_word(r, a, b))
            break
    # organs
    om = _ORGAN_WORD.search(r)
    if om:
        organ = om.group(1).lower()
        sub_start, sub_end = om.span()
        if organ in _BROADER:
            add("organ_broader", _BROADER[organ] if len(r.split()) <= 4 else r[:sub_start] + _BROADER[organ] + r[sub_end:])
        if organ in _OTHER_ORGAN:
            add("organ_other", r[:sub_start] + _keep_cap(om.group(1), _OTHER_ORGAN[organ]) + r[sub_end:])
    # modality
    mm = _MODALITY_WORD.search(r)
    if mm:
        other = _MODALITY[mm.group(1).lower()]
        add("modality_other", r[:mm.start()] + other + r[mm.end():])
    if not _CT_WORDS.search(r) and not _CT_WORDS.search(q) and not mm and not negative_ref:
        add("modality_prefix", f"CT {r}")  # ("CT None" reads as "no CT": not a clear flip)
    # a second finding, candidate lists, hedges
    d1, d2 = _distractors(r, rng)
    extra = next(f for f in ("pneumothorax", "pleural effusion", "fracture") if f not in low)
    add("second_finding", f"{r} and {extra}")
    add("list_or", f"{r}, {d1} or {d2}")
    add("list_slash", f"{r}/{d1}")
    add("list_semicolon", f"{d1}; {r}")
    add("list_vs", f"{d1} vs {r}")
    for kind, tpl in _HEDGES:
        if not (kind == "hedge_question" and r.endswith("?")):  # "coronal plane?" is the reference's own mark
            add(kind, tpl.format(x=r))
    # other scripts
    words = re.findall(r"[A-Za-z][A-Za-z-]*", low)
    if words and all(w in _ZH for w in words):
        add("script_zh", "".join(_ZH[w] for w in words))
    if words and all(w in _RU for w in words):
        add("script_ru", " ".join(_RU[w] for w in words))
    if re.search(r"[a-z]{3}", low):
        add("script_translit", re.sub(r"[a-z]", lambda m: _TRANSLIT[m.group(0)], low))
    return out


def _swap_case(old: str, new: str) -> str:
    if old.isupper() and len(old) > 1:
        return new.upper()
    return new.capitalize() if old[:1].isupper() else new


def _keep_cap(old: str, new: str) -> str:
    return new.capitalize() if old[:1].isupper() else new


def _number_flips(r: str, add, rng: random.Random) -> None:
    m = _ORDINAL.search(r)
    if m:
        n = int(m.group(1))
        new = n - 1 if n > 1 else n + 1
        suf = {1: "st", 2: "nd", 3: "rd"}.get(new if new < 20 else new % 10, "th")
        add("number_ordinal", r[:m.start()] + f"{new}{suf}" + r[m.end():])
        return
    m = _NUMBER.search(r)
    if m:
        num = m.group(1)
        pre, post = r[:m.start()], r[m.end():]
        if "." in num:
            add("number_point_dropped", pre + num.replace(".", "") + post)
            a, b = num.split(".")
            add("number_range", pre + f"{a}-{b}" + post)
        else:
            n = int(num)
            add("number_changed", pre + str(n + 1) + post)
            if n:
                add("number_scaled", pre + str(n * 10) + post)
        um = _UNIT_AFTER.match(post)
        if um:
            unit = um.group(1).lower()
            rest = post[um.end():]
            other = {"cm": "mm", "mm": "cm", "m": "cm", "inches": "cm", "inch": "cm", "in": "cm"}[unit]
            add("number_unit_unconverted", pre + num + (" " if post[:1] == " " else "") + other + rest)
            if unit in ("cm", "mm"):
                add("number_unit_inches", pre + num + " inches" + rest)
        return
    wm = _NUM_WORD.search(r)
    if wm:
        n = _NUM_WORDS.index(wm.group(1).lower())
        new = _NUM_WORDS[n + 1] if n + 1 < len(_NUM_WORDS) else _NUM_WORDS[n - 1]
        add("number_changed", r[:wm.start()] + _keep_cap(wm.group(1), new) + r[wm.end():])


# ----------------------------------------------------------------------------- API


def variants(reference: str, *, question: str | None = None, rng_seed: int = 0) -> list[Variant]:
    """Meaning-preserving and meaning-flipping rewrites of ``reference`` (see the module
    docstring for the kinds). Deterministic given ``rng_seed`` and the reference; the question,
    when given, switches off qualifiers it makes relevant ("what plane?": no "axial" added) and
    the "CT X" prefix where it is about CT. A variant equal to the reference (case and spaces
    aside) is never a flipping one; duplicates are dropped (the first kind wins)."""
    ref = str(reference or "").strip()
    if not ref:
        return []
    rng = random.Random(zlib.crc32(f"{rng_seed}\x00{ref}\x00{question or ''}".encode("utf-8")))
    seen: set[str] = {ref}
    out: list[Variant] = []
    base = _norm(ref).strip(" .")
    for preserves, items in ((True, _preserving(ref, question or "", rng)), (False, _flipping(ref, question or "", rng))):
        for kind, text in items:
            if not text or not text.strip() or text in seen:
                continue
            if not preserves and _norm(text).strip(" .") == base:
                continue
            seen.add(text)
            out.append(Variant(text, kind, preserves))
    return out


def preserving(reference: str, **kw) -> list[Variant]:
    """The meaning-preserving variants of :func:`variants`."""
    return [v for v in variants(reference, **kw) if v.preserves]


def flipping(reference: str, **kw) -> list[Variant]:
    """The meaning-flipping variants of :func:`variants`."""
    return [v for v in variants(reference, **kw) if not v.preserves]


def variant_strategy(reference: str, *, question: str | None = None, preserves: bool | None = None):
    """A Hypothesis strategy drawing one :class:`Variant` of ``reference`` (any seed; only
    preserving or only flipping ones with ``preserves``). Needs the ``hypothesis`` package."""
    from hypothesis import strategies as st

    def pick(seed: int):
        vs = [v for v in variants(reference, question=question, rng_seed=seed)
              if preserves is None or v.preserves == preserves]
        return st.sampled_from(vs) if vs else st.nothing()

    return st.integers(min_value=0, max_value=2**16).flatmap(pick)
