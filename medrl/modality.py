"""MediX-R1 modality tags and the mapping from datasets' modality names to them.

MediX-R1 (003_d5d6a0d73a50ab79.txt, Sec. 2.3 "Modality recognition reward") asks the policy to
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
