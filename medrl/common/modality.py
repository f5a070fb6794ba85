"""MediX-R1 modality tags and the mapping from datasets' modality names to them.

MediX-R1 (Sec. 2.3 "Modality recognition reward") asks the policy to
prefix its response with one of 16 image-modality tags; the reward is 1 when the tag equals the
record's. Datasets name modalities their own way ("CT", "MRI", "X-Ray", "x-ray", ...): this module
maps those names onto the tags. The mapping table is the project's (the paper gives only tags).
"""

from __future__ import annotations

import re

MODALITY_TAGS: tuple[str, ...] = (
    "X_RAY", "MICROSCOPY", "CLINICAL_PHOTOGRAPHY", "CT_SCAN", "GRAPHICS", "ANGIOGRAPHY",
    "PET_SCAN", "ULTRASOUND", "MRI_SCAN", "FUNDUS_PHOTOGRAPHY", "OCT_SCAN", "ENDOSCOPY",
    "MAMMOGRAPHY", "FLUOROSCOPY", "OTHER", "SPECT",
)

# normalised dataset name -> tag; keys are lower-case with non-alphanumerics removed
_ALIASES: dict[str, str] = {
    "xray": "X_RAY", "cxr": "X_RAY", "radiograph": "X_RAY", "radiography": "X_RAY",
    "chestxray": "X_RAY", "plainfilm": "X_RAY", "dx": "X_RAY", "cr": "X_RAY",
    "ct": "CT_SCAN", "ctscan": "CT_SCAN", "computedtomography": "CT_SCAN", "cta": "CT_SCAN",
    "mri": "MRI_SCAN", "mr": "MRI_SCAN", "mriscan": "MRI_SCAN", "magneticresonanceimaging": "MRI_SCAN",
    "mrit1": "MRI_SCAN", "mrit2": "MRI_SCAN", "mriflair": "MRI_SCAN", "mridwi": "MRI_SCAN",
    "ultrasound": "ULTRASOUND", "us": "ULTRASOUND", "sonography": "ULTRASOUND", "echo": "ULTRASOUND",
    "pet": "PET_SCAN", "petscan": "PET_SCAN", "petct": "PET_SCAN",
    "spect": "SPECT",
    "microscopy": "MICROSCOPY", "histology": "MICROSCOPY", "histopathology": "MICROSCOPY",
    "pathology": "MICROSCOPY", "cytology": "MICROSCOPY",
    "clinicalphotography": "CLINICAL_PHOTOGRAPHY", "photograph": "CLINICAL_PHOTOGRAPHY",
    "dermoscopy": "CLINICAL_PHOTOGRAPHY", "photo": "CLINICAL_PHOTOGRAPHY",
    "angiography": "ANGIOGRAPHY", "angiogram": "ANGIOGRAPHY", "dsa": "ANGIOGRAPHY",
    "fundus": "FUNDUS_PHOTOGRAPHY", "fundusphotography": "FUNDUS_PHOTOGRAPHY",
    "oct": "OCT_SCAN", "octscan": "OCT_SCAN", "opticalcoherencetomography": "OCT_SCAN",
    "endoscopy": "ENDOSCOPY", "colonoscopy": "ENDOSCOPY",
    "mammography": "MAMMOGRAPHY", "mammogram": "MAMMOGRAPHY", "mg": "MAMMOGRAPHY",
    "fluoroscopy": "FLUOROSCOPY",
    "graphics": "GRAPHICS", "chart": "GRAPHICS", "diagram": "GRAPHICS",
    "other": "OTHER",
}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def modality_to_tag(name: str | None) -> str | None:
    """Map a dataset's modality name to a MediX-R1 tag; None when unknown or missing.

    Accepts the tags themselves in any case (``"ct_scan"``), common names (``"CT"``, ``"MRI"``,
    ``"X-Ray"``) and MRI sequence names (``"MRI-T2"``). Unknown names give None rather than a
    guess: callers decide whether to use ``"OTHER"``.
    """
    if not name or not isinstance(name, str):
        return None
    key = _norm(name)
    if not key:
        return None
    for tag in MODALITY_TAGS:
        if key == _norm(tag):
            return tag
    return _ALIASES.get(key)


# --------------------------------------------------------------------------------------------
# Keyword heuristic for records without a tag (e.g. PMC-VQA, whose CSVs carry none)

#: Keyword rule, in priority order: the first tag whose pattern matches wins, so specific
#: modalities come before the generic ones they co-occur with ("PET/CT" -> PET_SCAN, "CT
#: angiography" -> ANGIOGRAPHY, "fundus photograph" -> FUNDUS_PHOTOGRAPHY). The project's
#: heuristic - MediX-R1 tags its data but does not say how.
#: Ambiguous short words are left out ("us", "mr", "echo").
MODALITY_KEYWORDS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (tag, re.compile(pattern, re.IGNORECASE)) for tag, pattern in (
        ("PET_SCAN", r"\bpet\b|positron[- ]emission|\bfdg\b|\bpet[/-]?ct\b"),
        ("SPECT", r"\bspect\b|single[- ]photon"),
        ("OCT_SCAN", r"\boct\b|optical coherence"),
        ("FUNDUS_PHOTOGRAPHY", r"\bfundus\b|fundoscop\w*|funduscop\w*|retinal photograph\w*"),
        ("MAMMOGRAPHY", r"mammogra\w*|\bmammo\b|tomosynthesis"),
        ("ANGIOGRAPHY", r"angiogra\w*|arteriogra\w*|venogra\w*|\bdsa\b"),
        ("FLUOROSCOPY", r"fluorosc\w*|barium (?:swallow|enema|meal)|esophagogra\w*"),
        ("ENDOSCOPY", r"endoscop\w*|colonoscop\w*|gastroscop\w*|bronchoscop\w*|laparoscop\w*"
                      r"|cystoscop\w*|arthroscop\w*|duodenoscop\w*"),
        ("ULTRASOUND", r"ultraso\w*|sonogra\w*|doppler|echocardiogra\w*|\bhypoechoic|\bhyperechoic"
                       r"|\banechoic|\bechogenic\w*"),
        ("MRI_SCAN", r"\bmri\b|magnetic resonance|\bmr (?:image|imaging|scan|sequence)s?\b"
                     r"|\bt[12][- ]?weighted|\bflair\b|\bdwi\b|diffusion[- ]weighted"),
        ("CT_SCAN", r"\bct\b|\bcat scan|computed tomogra\w*|hounsfield|\bhrct\b|\bcect\b|\bncct\b"),
        ("X_RAY", r"\bx[- ]?rays?\b|\bradiograph(?:s|y)?\b|\bcxr\b|plain film|\bkub\b"),
        ("MICROSCOPY", r"microscop\w*|histolog\w*|histopatholog\w*|\bh\s?&\s?e\b|hematoxylin|haematoxylin"
                       r"|immunohistochem\w*|\bihc\b|cytolog\w*|magnification|\bstain(?:ed|ing)?\b"),
        ("CLINICAL_PHOTOGRAPHY", r"clinical photo\w*|dermoscop\w*|photograph\w*"),
        ("GRAPHICS", r"\bchart\b|\bgraph\b|\bdiagram\b|\bflow ?chart\b|\bschematic\b|\billustration\b"
                     r"|\bplot\b|kaplan"),
    )
)


def keyword_modality_tag(text: str | None) -> str | None:
    """The first tag of :data:`MODALITY_KEYWORDS` whose keywords occur in ``text``, or None."""
    if not text or not isinstance(text, str):
        return None
    for tag, rx in MODALITY_KEYWORDS:
        if rx.search(text):
            return tag
    return None


# A question that asks for the modality names it without stating it: "Is this a CT?", "Was this
# image taken via MRI?", "Which modality is shown, MRI, CT or X-ray?".
ASKS_MODALITY = re.compile(
    r"""^\s*(?:is|was|are|were|could|can)\s+(?:this|that|these|the|it)\b
        (?:\s+(?:image|images|scan|picture|film|study|photo|photograph))?
        \s+(?:an?\b|taken|obtained|acquired|done|performed|made|from|via|with|using|of\s+an?\b)
      |\b(?:which|what)\s+(?:type\s+of\s+|kind\s+of\s+|sort\s+of\s+)?(?:imaging\s+)?
        (?:modality|modalities|imaging|scan\s+type|technique)\b
      |\bhow\s+(?:was|is|were)\s+(?:this|the)\s+(?:image|scan|picture)\s+(?:taken|obtained|acquired)""",
    re.IGNORECASE | re.VERBOSE,
)


def question_modality_tag(question: str | None) -> str | None:
    """The modality a question *states* (:func:`keyword_modality_tag`), or None when it asks
    for the modality (:data:`ASKS_MODALITY`) or names several (it lists options)."""
    if not question or not isinstance(question, str) or ASKS_MODALITY.search(question):
        return None
    tags = {tag for tag, rx in MODALITY_KEYWORDS if rx.search(question)}
    return next(iter(tags)) if len(tags) == 1 else None


def _file_text(images) -> str:
    names = [images] if isinstance(images, str) else list(images or [])
    return " ".join(re.sub(r"[_\-.]+", " ", str(n).replace("\\", "/").rsplit("/", 1)[-1]) for n in names)


def infer_modality_tag(question: str | None = None, caption: str | None = None,
                       files=None) -> tuple[str | None, str | None]:
    """Keyword heuristic (:data:`MODALITY_KEYWORDS`) over the question (unless it asks for the
    modality or lists several, :func:`question_modality_tag`), then the caption, then the image
    file names: ``(tag, "heuristic:question" | "heuristic:caption" |
    "heuristic:file")``, or ``(None, None)`` when none names a modality."""
    for source, tag in (("question", question_modality_tag(question)), ("caption", keyword_modality_tag(caption)),
                        ("file", keyword_modality_tag(_file_text(files)))):
        if tag:
            return tag, f"heuristic:{source}"
    return None, None


def record_modality_tag(record) -> tuple[str | None, str]:
    """A record's MediX-R1 tag and where it came from, in this order: the explicit
    ``modality_tag`` (the loader's ``extras["modality_tag_source"]``, else ``"dataset"`` when
    it is the dataset's ``modality`` name mapped, else ``"column"``), the dataset's ``modality``
    name (``"dataset"``), the keyword heuristic
    (:func:`infer_modality_tag` over question, ``extras["caption"]``, image paths), else
    ``(None, "untagged")``."""
    tag = modality_to_tag(record.modality_tag)
    if tag:
        source = record.extras.get("modality_tag_source")
        return tag, source or ("dataset" if modality_to_tag(record.modality) == tag else "column")
    tag = modality_to_tag(record.modality)
    if tag:
        return tag, "dataset"
    tag, source = infer_modality_tag(record.question, record.extras.get("caption"), record.images)
    return (tag, source) if tag else (None, "untagged")
