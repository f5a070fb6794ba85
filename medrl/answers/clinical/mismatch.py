"""Hard mismatches between two short clinical texts (a reference and an answer, or two steps).

A hard mismatch is a difference that makes an answer wrong however close its words are:
"descending colon" for "ascending colon", "C6" for "C5", "Grade 3" for "Grade 2", "nephrosis"
for "nephritis", "hypodense" for "hyperdense". Both texts are canonicalised with the lexicon
(:mod:`medrl.answers.clinical.lexicon`) first, so "renal" and "kidney", "5th" and "fifth" agree.

A category counts only when *both* texts name a value of it ("Kidney" against "Left kidney" is
incomplete, not a mismatch; the scorer decides). Rules:

- exclusive groups (side, sub-location, colon segment, brain lobe, plane, sequence, acuity,
  density/intensity/echogenicity, benign/malignant, increased/decreased, size, severity,
  normal/abnormal, present/absent, sex, contrast, artery/vein, ...): the value sets differ;
- modality and organ: the sets share nothing;
- levels: vertebral (C5, T12, L4-L5, "fifth cervical vertebra"), rib ("fifth rib", "rib 5"),
  ventricle ("third ventricle"), grade, stage and type numbers (Arabic or Roman): the sets differ;
  other numbers (counts, sizes): the sets differ;
- word pairs: same stem with another pathology suffix (-itis/-osis/-oma/-emia/-pathy/-plasia ...),
  same root with an opposite prefix (hyper/hypo/iso, intra/extra, supra/infra, pre/post, endo/exo,
  ir-/un-/non-/dis- against none: "irregular"/"regular"),
  and a short list of opposite findings (hypertrophy/atrophy, dilation/stenosis).
"""

from __future__ import annotations

import re

from medrl.answers.clinical.lexicon import all_tokens, canonical_text

# category -> (mode, {token: value}); mode "differ": value sets must be equal; "disjoint": must overlap
_GROUPS: dict[str, tuple[str, dict[str, str]]] = {}


def _group(name: str, mode: str, values: dict[str, list[str]]) -> None:
    _GROUPS[name] = (mode, {alias: value for value, aliases in values.items() for alias in [value, *aliases]})


_group("side", "differ", {"left": ["sinistra"], "right": ["dextra"], "unilateral": []})
_group("vertical position", "differ", {"upper": ["top", "cranial"], "middle": ["mid"], "lower": ["bottom", "caudal"]})
_group("superior/inferior", "differ", {"superior": [], "inferior": []})
_group("anterior/posterior", "differ", {"anterior": ["ventral", "front"], "posterior": ["dorsal", "back"]})
_group("medial/lateral", "differ", {"medial": [], "lateral": []})
_group("proximal/distal", "differ", {"proximal": [], "distal": []})
_group("apex/base", "differ", {"apical": ["apex"], "basal": ["base"]})
_group("organ part", "differ", {"head": [], "body": [], "tail": [], "neck": [], "uncinate": [], "fundus": [],
                                "shaft": ["diaphysis"], "metaphysis": [], "epiphysis": [], "condyle": [],
                                "antrum": [], "pylorus": [], "cardia": []})
_group("colon segment", "differ", {"ascending": [], "descending": [], "transverse": [], "sigmoid": [],
                                   "cecum": [], "rectum": []})
_group("brain lobe", "differ", {"frontal": [], "parietal": [], "temporal": [], "occipital": [], "insular": []})
_group("plane", "differ", {"axial": [], "coronal": [], "sagittal": [], "oblique": []})
_group("view", "differ", {"posteroanterior": [], "anteroposterior": []})
_group("sequence", "differ", {"t1": [], "t2": []})
_group("acuity", "differ", {"acute": ["hyperacute"], "subacute": [], "chronic": []})
_group("density", "differ", {"hyperdensity": [], "hypodensity": [], "isodensity": []})
_group("intensity", "differ", {"hyperintensity": [], "hypointensity": [], "isointensity": []})
_group("echogenicity", "differ", {"hyperechoic": [], "hypoechoic": [], "anechoic": [], "isoechoic": []})
_group("benign/malignant", "differ", {"benign": [], "malignant": ["malignancy"]})
_group("direction", "differ", {"increased": ["increase", "elevated", "raised"],
                               "decreased": ["decrease", "reduced", "diminished"]})
_group("size", "differ", {"small": ["tiny", "smaller"], "large": ["big", "huge", "larger", "massive"]})
_group("severity", "differ", {"mild": ["minimal", "slight"], "moderate": [], "severe": ["marked"]})
_group("normal/abnormal", "differ", {"normal": [], "abnormal": []})
_group("presence", "differ", {"present": [], "absent": []})
_group("sex", "differ", {"male": [], "female": []})
_group("shade", "differ", {"black": ["dark"], "white": ["bright"], "gray": []})
_group("contrast", "differ", {"contrast": [], "noncontrast": []})
_group("patient position", "differ", {"supine": [], "prone": [], "erect": ["upright", "standing"], "decubitus": []})
_group("central/peripheral", "differ", {"central": ["center", "centre"], "peripheral": ["periphery"]})
_group("vessel kind", "differ", {"artery": [], "vein": []})
_group("composition", "differ", {"solid": [], "cystic": []})
_group("extent", "differ", {"focal": ["localized", "localised"], "diffuse": ["generalized", "generalised"]})
_group("completeness", "differ", {"complete": ["total"], "partial": ["incomplete"]})
_group("displacement", "differ", {"displaced": [], "nondisplaced": ["undisplaced"]})
_group("multiplicity", "differ", {"single": ["1"], "multiple": ["several", "numerous", "many", "multifocal",
                                                                 "innumerable", "multiple"]})
_group("meningeal space", "differ", {"epidural": [], "subdural": [], "subarachnoid": []})
_group("compartment", "differ", {"intraaxial": [], "extraaxial": [], "supratentorial": [], "infratentorial": []})
_group("modality", "disjoint", {"ct": [], "mri": ["mr"], "xray": [], "ultrasound": ["echocardiography"], "pet": [],
                                "spect": [], "mammography": [], "fluoroscopy": [], "endoscopy": [],
                                "angiography": [], "microscopy": ["histology", "histopathology"]})
_group("organ", "disjoint", {
    "brain": ["cerebellum", "brainstem"], "skull": [], "lung": ["pulmonary", "lingula"], "heart": ["cardiac"],
    "liver": ["hepatic"], "kidney": ["renal"], "spleen": [], "pancreas": [], "stomach": [],
    "gallbladder": [], "bladder": [], "colon": [], "bowel": [], "duodenum": [], "esophagus": [],
    "trachea": [], "aorta": [], "adrenal": [], "thyroid": [], "uterus": [], "ovary": [], "prostate": [],
    "breast": [], "spine": [], "rib": [], "femur": [], "humerus": [], "pelvis": [], "chest": [],
    "abdomen": [], "orbit": [], "eye": [], "sinus": [], "mediastinum": [], "diaphragm": [],
    "appendix": [], "testis": [], "clavicle": [], "scapula": [], "sternum": [], "mandible": [],
    "tibia": [], "fibula": [], "radius": [], "ulna": [], "patella": [], "larynx": [], "pharynx": [],
    "ureter": [], "urethra": [], "pleura": [], "pericardium": [], "peritoneum": [], "ileum": [], "jejunum": [],
    "cecum": [], "rectum": [], "spinal cord": [], "pituitary": [], "parotid": [], "tongue": [], "skin": []})

_SUFFIXES = ("itis", "osis", "oma", "emia", "pathy", "plasia", "algia", "ectasis", "ectasia", "megaly",
             "trophy", "ectomy", "otomy", "ostomy", "sclerosis", "lithiasis", "ism")
_PREFIX_PAIRS = [("hyper", "hypo"), ("hyper", "iso"), ("hypo", "iso"), ("intra", "extra"), ("supra", "infra"),
                 ("pre", "post"), ("endo", "exo"), ("hyper", "a"), ("hyper", "an"), ("hypo", "an"),
                 ("ir", ""), ("un", ""), ("non", ""), ("dis", "")]
_OPPOSITE_WORDS = [("hypertrophy", "atrophy"), ("dilation", "stenosis"), ("enlargement", "atrophy"),
                   ("hyperdensity", "lucency"), ("opacity", "lucency"), ("inflow", "outflow"),
                   ("flexion", "extension"), ("abduction", "adduction"), ("inspiration", "expiration"),
                   ("systole", "diastole"), ("systolic", "diastolic"), ("arterial", "venous"),
                   ("benign", "malignancy"), ("sclerotic", "lytic")]

_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10}
_SPINE = {"cervical": "c", "thoracic": "t", "dorsal": "t", "lumbar": "l", "sacral": "s"}
_LEVEL = re.compile(r"\b([ctls])\s?-?(\d{1,2})(?:\s*[-/]\s*([ctls])?\s?(\d{1,2}))?\b")
_LEVEL_WORD = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(cervical|thoracic|dorsal|lumbar|sacral)\b")
_RIB = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:\w+\s+)?ribs?\b|\bribs?\s+(\d{1,2})\b")
_VENT = re.compile(r"\b(\d)(?:st|nd|rd|th)?\s+ventricle|\b(lateral)\s+ventricle")
_GRADE = re.compile(r"\b(grade|stage|type|class|gleason|bi-?rads|tirads|lirads|pirads)\s*[:-]?\s*"
                    r"(\d{1,2}|iv|v?i{1,3}|ix|x|vi{0,3})([abc])?\b")
_NUMBER = re.compile(r"(?<![a-z])(\d+(?:\.\d+)?)")
_SEQUENCE_CONTEXT = re.compile(r"\b(?:weighted|sequence|mri|signal|intensity|image)\b")


def _num(text: str) -> int | None:
    return int(text) if text.isdigit() else _ROMAN.get(text)


def levels(text: str | None) -> dict[str, set[str]]:
    """Numbered anatomy and scales in ``text``: vertebra, rib, ventricle, grade/stage/type, number."""
    t = canonical_text(text)
    out: dict[str, set[str]] = {"vertebral level": set(), "rib": set(), "ventricle": set(), "grade": set(),
                                "number": set()}
    sequence_like = bool(_SEQUENCE_CONTEXT.search(t))
    for m in _LEVEL.finditer(t):
        a, n1, b, n2 = m.group(1), int(m.group(2)), m.group(3) or m.group(1), m.group(4)
        if a == "t" and n1 in (1, 2) and not n2 and sequence_like:
            continue  # T1/T2 MRI sequence, handled by the "sequence" group
        out["vertebral level"].add(f"{a}{n1}")
        if n2:
            out["vertebral level"].add(f"{b}{int(n2)}")
    for m in _LEVEL_WORD.finditer(t):
        out["vertebral level"].add(f"{_SPINE[m.group(2)]}{int(m.group(1))}")
    for m in _RIB.finditer(t):
        out["rib"].add(m.group(1) or m.group(2))
    for m in _VENT.finditer(t):
        out["ventricle"].add(m.group(1) or m.group(2))
    for m in _GRADE.finditer(t):
        n = _num(m.group(2))
        if n is not None:
            kind = m.group(1).replace("-", "")
            out["grade"].add(f"{kind} {n}{m.group(3) or ''}")
    stripped = _LEVEL.sub(" ", t) if out["vertebral level"] else t
    out["number"] = {str(float(x)).rstrip("0").rstrip(".") for x in _NUMBER.findall(stripped)}
    return out


def group_values(tokens: set[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, (_, table) in _GROUPS.items():
        vals = {table[t] for t in tokens if t in table}
        if name == "side" and "bilateral" in tokens:
            vals |= {"left", "right"}
        if vals:
            out[name] = vals
    return out


def _word_pair(ref: set[str], ans: set[str]) -> str | None:
    only_r, only_a = ref - ans, ans - ref
    for a in only_r:
        for b in only_a:
            for x, y in _OPPOSITE_WORDS:
                if {a, b} == {x, y}:
                    return f"{a} vs {b}"
            for s1 in _SUFFIXES:
                if a.endswith(s1) and len(a) - len(s1) >= 3:
                    stem = a[: -len(s1)]
                    for s2 in _SUFFIXES:
                        if s2 != s1 and b == stem + s2:
                            return f"{a} vs {b}"
            for p1, p2 in _PREFIX_PAIRS:
                for x, y in ((p1, p2), (p2, p1)):
                    if a.startswith(x) and b.startswith(y) and a[len(x):] == b[len(y):] and len(a) - len(x) >= 4:
                        return f"{a} vs {b}"
    return None


def category_mismatch(reference: str | None, answer: str | None, *, categories: set[str] | None = None) -> str | None:
    """The first category mismatch (one ingredient of :func:`medrl.answers.decide`'s hard
    mismatch, :func:`medrl.answers.equivalence.hard_mismatch`) between ``reference`` and ``answer`` as "category: a vs b", or None.

    ``categories`` restricts the check (names of the groups above, "vertebral level", "rib",
    "ventricle", "grade", "number", "word pair").
    """
    r_toks, a_toks = set(all_tokens(reference)), set(all_tokens(answer))
    want = (lambda c: True) if categories is None else (lambda c: c in categories)
    rv, av = group_values(r_toks), group_values(a_toks)
    for name, (mode, _) in _GROUPS.items():
        if not want(name) or name not in rv or name not in av:
            continue
        r, a = rv[name], av[name]
        if (mode == "differ" and r != a) or (mode == "disjoint" and not (r & a)):
            return f"{name}: {'/'.join(sorted(r))} vs {'/'.join(sorted(a))}"
    rl, al = levels(reference), levels(answer)
    for name in ("vertebral level", "rib", "ventricle", "grade", "number"):
        if want(name) and rl[name] and al[name] and rl[name] != al[name]:
            if name == "number" and (rl["vertebral level"] or al["vertebral level"]):
                continue
            return f"{name}: {'/'.join(sorted(rl[name]))} vs {'/'.join(sorted(al[name]))}"
    if want("word pair"):
        pair = _word_pair(r_toks, a_toks)
        if pair:
            return f"word pair: {pair}"
    return None
