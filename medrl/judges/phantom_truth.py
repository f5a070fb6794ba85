"""The phantom world's vocabulary and truth: from generator parameters to the answer and the gold
steps, from a step's text to the claims it makes, and from claims to exact verdicts.

The oracle judge (:mod:`medrl.judges.oracle`) decides with these functions alone; the phantom
data source (:mod:`medrl.data.sources.phantom`) draws images and writes records from the same
vocabulary. Living in the judges layer, they need nothing from the data layer: a record is read
through its ``extras`` and an image through its ``medrl_phantom`` text chunk.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, Sequence


class PhantomTruthError(ValueError):
    """An item the oracle cannot judge (no parameters, an unknown question type)."""


MODALITIES = ("CT", "MRI", "X-ray", "ultrasound")
#: Planes are named in each modality's own vocabulary (a wrong modality gives a wrong plane).
PLANES = {"CT": ("axial", "coronal"), "MRI": ("axial", "sagittal"), "X-ray": ("frontal", "lateral"),
          "ultrasound": ("transverse", "longitudinal")}
#: How a lesion looks in each modality: darker (CT, ultrasound) or brighter (MRI, X-ray) than the
#: organ around it; the finding answer uses it, so the finding depends on the modality.
DESCRIPTORS = {"CT": "hypodense", "MRI": "hyperintense", "X-ray": "radiopaque", "ultrasound": "hypoechoic"}
ORGANS = ("brain", "heart", "liver", "kidneys")
SIDES = ("left", "right")
LOCATIONS = ("upper", "lower")
COUNT_WORDS = ("none", "one", "two", "three")
FIELDS = ("modality", "plane", "organ", "presence", "side", "location", "size", "count", "descriptor")

QUESTION_TYPES = ("modality", "finding", "organ", "side", "count", "size", "plane", "study")

#: Other words for a right answer (a clinician's wording; the oracle accepts both, an exact-match
#: reward only the canonical one): modality and organ values -> a paraphrase of each.
PARAPHRASES = {"CT": "computed tomography", "MRI": "magnetic resonance imaging", "X-ray": "plain radiograph",
               "ultrasound": "sonography", "brain": "cerebrum", "heart": "cardiac silhouette",
               "liver": "hepatic parenchyma", "kidneys": "renal parenchyma"}


def phantom_params(item: Any) -> dict | None:
    """The generator parameters of a phantom item, or None: from a :class:`VQARecord` (its
    ``extras["phantom"]``), a dict of extras / evidence (key ``phantom``, a dict or JSON text), the
    parameters themselves, an image file path, a PIL image (its ``medrl_phantom`` text chunk), an
    HF image dict (``{"path", "bytes"}``) or a list of those (the first that has them)."""
    if item is None:
        return None
    if isinstance(getattr(item, "extras", None), dict):  # a record
        return phantom_params(item.extras)
    if isinstance(item, dict):
        if "question_type" in item and "modality" in item and "count" in item:
            return item
        if "phantom" in item:
            return phantom_params(_loads(item["phantom"]))
        if item.get("bytes") or item.get("path"):
            return _params_from_image(item)
        return None
    if isinstance(item, (list, tuple)):
        for x in item:
            p = phantom_params(x)
            if p is not None:
                return p
        return None
    return _params_from_image(item)


def _loads(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return v


def _params_from_image(img: Any) -> dict | None:
    info = getattr(img, "info", None)
    if isinstance(info, dict) and "medrl_phantom" in info:
        return _loads(info["medrl_phantom"])
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover
        return None
    src: Any = None
    if isinstance(img, (str, Path)):
        src = str(img)
    elif isinstance(img, dict):
        if img.get("bytes"):
            import io

            src = io.BytesIO(img["bytes"])
        else:
            src = img.get("path")
    elif isinstance(img, bytes):
        import io

        src = io.BytesIO(img)
    elif getattr(img, "filename", None):
        src = img.filename
    if not src:
        return None
    try:
        with Image.open(src) as im:  # reads the header and text chunks, not the pixels
            text = im.info.get("medrl_phantom")
    except (OSError, ValueError):
        return None
    return _loads(text) if text else None


# ============================================================================ texts


def _a(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" or word in ("MRI", "X-ray") else "a"


def size_text(size_mm: float, unit: str = "mm") -> str:
    """``18 mm`` / ``1.8 cm``."""
    if unit == "cm":
        return f"{size_mm / 10:g} cm"
    return f"{size_mm:g} mm"


def answer_of(p: dict) -> str:
    """The reference answer the parameters give for their question type."""
    q, n = p["question_type"], p["count"]
    if q == "modality":
        return p["modality"]
    if q == "finding":
        return f"{DESCRIPTORS[p['modality']]} lesion" if n else "no lesion"
    if q == "organ":
        return p["organ"]
    if q == "side":
        return p["side"] if n else "no lesion"
    if q == "count":
        return COUNT_WORDS[n]
    if q == "size":
        return size_text(p["size_mm"], p.get("size_unit", "mm")) if n else "no lesion"
    if q == "plane":
        return p["plane"]
    if q == "study":
        return f"{p['plane']} {p['modality']} of the {p['organ']}"
    raise PhantomTruthError(f"phantom: unknown question type {q!r}")


def answer_fields(p: dict) -> tuple[str, ...]:
    """The fields the answer depends on (a step stating one of them correctly contributes)."""
    q, n = p["question_type"], p["count"]
    if q == "modality":
        return ("modality",)
    if q == "finding":
        return ("presence", "modality", "descriptor") if n else ("presence",)
    if q == "organ":
        return ("organ",)
    if q == "side":
        return ("presence", "side")
    if q == "count":
        return ("presence", "count")
    if q == "size":
        return ("presence", "size")
    if q == "plane":  # a plane is named in the modality's vocabulary: the modality decides which words are right
        return ("modality", "plane")
    if q == "study":
        return ("modality", "plane", "organ")
    raise PhantomTruthError(f"phantom: unknown question type {q!r}")


#: Every field a question type's answer states (the oracle needs each of them in a right answer).
ANSWER_STATES = {"modality": ("modality",), "organ": ("organ",), "side": ("side",), "count": ("count",),
                 "size": ("size",), "plane": ("plane",), "study": ("modality", "plane", "organ")}


def lead_field(p: dict) -> str:
    """The field the first gold step states (the one a warm-up error changes): the plane and
    study chains open with the modality, whose vocabulary names the plane."""
    return {"modality": "modality", "organ": "organ", "plane": "modality", "study": "modality"}.get(
        p["question_type"], "presence")


def gold_steps(p: dict) -> list[str]:
    """The gold reasoning, one sentence per step, in dependency order (see the module docstring)."""
    q, n, mod, organ = p["question_type"], p["count"], p["modality"], p["organ"]
    modality_step = f"This is {_a(mod)} {mod} image."
    if q == "plane":
        return [f"The image has the look of {_a(mod)} {mod} scan.", f"It shows the {organ}.",
                f"It is {_a(p['plane'])} {p['plane']} view.", f"So the plane is {p['plane']}."]
    if q == "study":
        return [f"The image has the look of {_a(mod)} {mod} scan.", f"It is {_a(p['plane'])} {p['plane']} view.",
                f"It shows the {organ}.", f"So this is {_a(p['plane'])} {answer_of(p)}."]
    if q == "modality":
        return [f"The image has the look of {_a(mod)} {mod} scan.", f"It is {_a(p['plane'])} {p['plane']} view.",
                f"It shows the {organ}.", f"So the modality is {mod}."]
    if q == "organ":
        return [f"The outline is that of the {organ}.", modality_step, f"It is {_a(p['plane'])} {p['plane']} view.",
                f"So the organ is the {organ}."]
    if not n:
        ending = {"finding": "So there is no lesion.", "count": "So there are no lesions.",
                  "side": "So there is no lesion to place.", "size": "So there is no lesion to measure."}[q]
        looks = "look" if organ.endswith("s") else "looks"
        return ["No focal lesion is seen.", modality_step, f"The {organ} {looks} normal.", ending]
    desc = DESCRIPTORS[mod]
    if q == "finding":
        return ["A focal lesion is present.", modality_step, f"On {mod} the lesion looks {desc}.",
                f"It lies in the {organ}.", f"So the finding is {_a(desc)} {desc} lesion."]
    if q == "side":
        return ["A focal lesion is present.", f"It lies on the patient's {p['side']} side.", f"It is in the {organ}.",
                f"So the lesion is on the {p['side']}."]
    if q == "count":
        what = "one lesion" if n == 1 else f"{COUNT_WORDS[n]} lesions"
        verb = "is" if n == 1 else "are"
        return ["A focal lesion is present.", f"There {verb} {what}.", f"They lie in the {organ}." if n > 1
                else f"It lies in the {organ}.", f"So there {verb} {what}."]
    if q == "size":
        s = size_text(p["size_mm"], p.get("size_unit", "mm"))
        return ["A focal lesion is present.", f"It measures {s}.", f"It lies in the {organ}.",
                f"So the lesion measures {s}."]
    raise PhantomTruthError(f"phantom: unknown question type {q!r}")


def key_steps_of(p: dict) -> list[list[str]]:
    """StepGRPO key steps: the canonical values the gold chain states, each with its equivalent
    wordings (first form = the canonical one)."""
    q, n = p["question_type"], p["count"]
    mod = p["modality"]
    mod_forms = {"CT": ["CT", "computed tomography"], "MRI": ["MRI", "magnetic resonance"],
                 "X-ray": ["X-ray", "radiograph"], "ultrasound": ["ultrasound", "sonography"]}[mod]
    organ = [p["organ"]]
    if q in ("modality", "plane", "study"):
        return [mod_forms, [p["plane"]], organ]
    if q == "organ":
        return [organ, mod_forms, [p["plane"]]]
    if not n:
        return [["no focal lesion", "no lesion"], mod_forms, organ]
    if q == "finding":
        return [["focal lesion", "lesion is present"], mod_forms, [DESCRIPTORS[mod]], organ]
    if q == "side":
        return [["focal lesion"], [f"{p['side']} side", p["side"]], organ]
    if q == "count":
        return [["focal lesion"], [f"{COUNT_WORDS[n]} lesion" + ("s" if n > 1 else "")], organ]
    s = p["size_mm"]
    return [["focal lesion"], [size_text(s, "mm"), size_text(s, "cm")], organ]


# ============================================================================ step claims

_RX = {
    "modality": [
        ("CT", re.compile(r"\bct\b|computed tomograph\w*|\bcat scan", re.I)),
        ("MRI", re.compile(r"\bmri\b|\bmr\b|magnetic resonance", re.I)),
        ("X-ray", re.compile(r"\bx[- ]?rays?\b|\bradiograph\w*", re.I)),
        ("ultrasound", re.compile(r"\bultrasound\b|\bsonogra\w*|\bultrasonograph\w*", re.I)),
    ],
    "plane": [(pl, re.compile(rf"\b{pl}\b", re.I)) for pl in
              ("axial", "coronal", "sagittal", "frontal", "lateral", "transverse", "longitudinal")],
    "organ": [("brain", re.compile(r"\bbrain\b|\bcerebr(?:um|al)\b", re.I)), ("heart", re.compile(r"\bheart\b|\bcardiac\b", re.I)),
              ("liver", re.compile(r"\bliver\b|\bhepatic\b", re.I)),
              ("kidneys", re.compile(r"\bkidneys?\b|\brenal\b", re.I))],
    "descriptor": [("hypodense", re.compile(r"\bhypodens\w*|\bhypo-dens\w*|\blow[- ]density\b", re.I)),
                   ("hyperintense", re.compile(r"\bhyperintens\w*|\bhigh[- ]signal\b", re.I)),
                   ("radiopaque", re.compile(r"\bradio-?opaque\b|\bradiopaque\b|\bopacity\b|\bopaque\b", re.I)),
                   ("hypoechoic", re.compile(r"\bhypoechoic\b|\bhypo-echoic\b", re.I))],
    "side": [("left", re.compile(r"\bleft\b", re.I)), ("right", re.compile(r"\bright\b", re.I))],
    "location": [("upper", re.compile(r"\bupper\b|\bsuperior\b", re.I)),
                 ("lower", re.compile(r"\blower\b|\binferior\b", re.I))],
}
_NUM_WORDS = {"none": 0, "zero": 0, "no": 0, "one": 1, "single": 1, "solitary": 1, "two": 2, "three": 3,
              "four": 4, "five": 5}
_COUNT_RX = re.compile(
    r"\b(no|zero|one|single|solitary|two|three|four|five|\d+)\s+(?:focal\s+)?(?:lesion|mass|nodule)s?\b", re.I)
_BARE_COUNT_RX = re.compile(r"^\s*(none|zero|one|two|three|four|five|[0-9])\s*[.!]?\s*$", re.I)
_ABSENT_RX = re.compile(
    r"\bno\s+(?:focal\s+|visible\s+|obvious\s+)?(?:lesion|mass|nodule|abnormalit)\w*|\bwithout\s+(?:a\s+|any\s+)?"
    r"(?:focal\s+)?(?:lesion|mass)|\b(?:lesion|mass)\w*\s+(?:is\s+|are\s+)?(?:absent|not\s+seen|not\s+present)"
    r"|\blooks?\s+normal\b|\bis\s+normal\b|\bappears?\s+normal\b|\bunremarkable\b|\bnone\b", re.I)
_PRESENT_RX = re.compile(r"\b(?:lesion|mass|nodule)s?\b", re.I)
_SIZE_RX = re.compile(r"(\d+(?:\.\d+)?)\s*(mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b", re.I)
_NEGATED_RX = r"\b(?:not|no|never|isn't|is not)\s+(?:an?\s+)?(?:\w+\s+)?$"


def _size_mm(value: float, unit: str) -> float:
    """A size in millimetres, converted with ``pint`` (units as written: mm, cm, millimetres...)."""
    ureg = _ureg()
    unit = unit.lower().replace("metre", "meter")
    return round(float((value * ureg(unit)).to(ureg.millimeter).magnitude), 6)


_UREG: Any = None


def _ureg():
    global _UREG
    if _UREG is None:
        import pint

        _UREG = pint.UnitRegistry()
    return _UREG


def parse_step_claims(step_text: str) -> dict[str, str]:
    """The parameter fields a step (or an answer) states, as canonical values.

    Fields: ``modality`` (CT/MRI/X-ray/ultrasound), ``plane``, ``organ``, ``presence``
    (yes/no), ``side`` (left/right), ``location`` (upper/lower), ``size`` ("18 mm", converted to
    millimetres with ``pint``), ``count`` ("0", "1", ...) and ``descriptor`` (how a lesion looks:
    hypodense/hyperintense/radiopaque/hypoechoic; stating one also states presence = yes).
    A field named with two different values ("CT or MRI") gets them joined by ``|`` - it matches
    no parameter. A value right after a negation ("not CT") is not claimed. Text naming none of
    them gives ``{}`` (meta-commentary).
    """
    return dict(_claims(step_text or ""))


@functools.lru_cache(maxsize=65536)
def _claims(text: str) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for fld, pats in _RX.items():
        vals = []
        for value, rx in pats:
            for m in rx.finditer(text):
                if re.search(_NEGATED_RX, text[: m.start()], re.I) and fld in ("modality", "organ", "descriptor"):
                    continue
                vals.append(value)
                break
        vals = sorted(set(vals))
        if vals:
            out[fld] = "|".join(vals)
    sizes = sorted({f"{_size_mm(float(v), u):g} mm" for v, u in _SIZE_RX.findall(text)})
    if sizes:
        out["size"] = "|".join(sizes)
    counts = sorted({str(_NUM_WORDS.get(w.lower(), None) if not w.isdigit() else int(w)) for w in
                     _COUNT_RX.findall(text)})
    bare = _BARE_COUNT_RX.match(text)
    if bare:
        w = bare.group(1).lower()
        counts = [str(_NUM_WORDS[w] if w in _NUM_WORDS else int(w))]
    if counts:
        out["count"] = "|".join(counts)
    absent = bool(_ABSENT_RX.search(text)) or out.get("count") == "0"
    present = "descriptor" in out or (bool(_PRESENT_RX.search(_ABSENT_RX.sub(" ", text))) and not absent) \
        or (out.get("count") not in (None, "0") and "|" not in out.get("count", ""))
    if absent and present:
        out["presence"] = "no|yes"
    elif absent:
        out["presence"] = "no"
    elif present:
        out["presence"] = "yes"
    return tuple(out.items())


def claim_correct(fld: str, value: str, p: dict) -> bool:
    """Whether one claimed field value agrees with the parameters ``p``."""
    if "|" in value:
        return False
    n = p["count"]
    if fld == "modality":
        return value == p["modality"]
    if fld == "plane":
        return value == p["plane"]
    if fld == "organ":
        return value == p["organ"]
    if fld == "presence":
        return value == ("yes" if n else "no")
    if fld == "count":
        return value == str(n)
    if not n:
        return False  # side, location, size or look of a lesion that is not there
    if fld == "side":
        return value == p["side"]
    if fld == "location":
        return value == p["location"]
    if fld == "size":
        return abs(float(value.split()[0]) - float(p["size_mm"])) <= 0.5
    if fld == "descriptor":
        return value == DESCRIPTORS[p["modality"]]
    raise ValueError(f"unknown field {fld!r}")


# ============================================================================ oracle verdicts


def params_or_error(record: Any) -> dict:
    """The phantom parameters of ``record``; :class:`PhantomTruthError` naming the record when it has none."""
    p = phantom_params(record)
    if p is None:
        rid = getattr(record, "id", None)
        raise PhantomTruthError(f"record {rid!r}: no phantom parameters (extras['phantom']); the oracle judges phantom "
                        "records only")
    return p


def oracle_answer_correct(record: Any, answer_text: str | None) -> bool | None:
    """Whether ``answer_text`` answers the phantom question correctly, from the parameters.

    Correct when the answer states every field the question asks (:func:`answer_fields`) with the
    right value and nothing it states is wrong (a wrong organ in "hypodense lesion in the brain"
    makes it wrong; a hedge "CT or MRI" is wrong). A finding answer needs the lesion's look (which
    carries the modality) when a lesion is there, and the lesion's absence when none is. ``None``
    when ``record`` carries no phantom parameters (not applicable).
    """
    p = phantom_params(record)
    if p is None:
        return None
    claims = parse_step_claims(answer_text or "")
    if not claims:
        return False
    if not all(claim_correct(f, v, p) for f, v in claims.items()):
        return False
    q, n = p["question_type"], p["count"]
    need = ANSWER_STATES.get(q)
    if q == "finding":
        need = ("descriptor",) if n else ("presence",)
    elif q in ("side", "size") and not n:
        need = ("presence",)
    elif q == "count" and not n and "presence" in claims:
        need = ("presence",)
    return all(f in claims for f in need)


def _norm_step(s: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", re.sub(r"\s+", " ", (s or "").lower())).strip()


def oracle_step_verdicts(record: Any, steps: Sequence[str]) -> list:
    """Exact step verdicts (MRPO Eq. 3 criteria) from the phantom parameters.

    For each step: ``gold_alignment`` = 1 when it states at least one field and every field it
    states agrees with the parameters; ``answer_contribution`` = 1 when it states at least one
    field the answer depends on (:func:`answer_fields`) and all of those correctly, or states the
    right answer. Meta-commentary (no field stated), empty steps and repeats (the same text, or
    the same claims as an earlier step) score 0/0, after MRPO App. H.2's rules ("pure repetition
    of previous steps without new content"); one step that restates claims of an earlier step as
    the (correct) answer is the conclusion, not a repeat. Returns
    :class:`medrl.types.StepVerdict` objects, one per step.
    """
    from medrl.types import StepVerdict

    p = params_or_error(record)
    deps = set(answer_fields(p))
    out = []
    seen_text: set[str] = set()
    seen_claims: list[dict] = []
    concluded = False
    for s in steps:
        norm = _norm_step(s)
        claims = parse_step_claims(s)
        if not norm:
            out.append(StepVerdict(0, 0, "empty step"))
            continue
        concludes = False
        if claims and claims in seen_claims and not concluded and oracle_answer_correct(p, s):
            concludes = concluded = True  # the conclusion restating the answer is new content: the answer
        if norm in seen_text or (claims and claims in seen_claims and not concludes):
            out.append(StepVerdict(0, 0, "repeats an earlier step"))
            continue
        seen_text.add(norm)
        if not claims:
            out.append(StepVerdict(0, 0, "states no finding (meta-commentary)"))
            continue
        seen_claims.append(claims)
        wrong = sorted(f for f, v in claims.items() if not claim_correct(f, v, p))
        align = int(not wrong)
        relevant = {f: v for f, v in claims.items() if f in deps}
        contrib = int((bool(relevant) and all(claim_correct(f, v, p) for f, v in relevant.items()))
                      or bool(oracle_answer_correct(p, s)))
        why = ("agrees with the parameters" if align else "wrong: " + ", ".join(
            f"{f}={claims[f]}" for f in wrong)) + ("; states what the answer needs" if contrib else "")
        out.append(StepVerdict(align, contrib, why))
    return out


def oracle_consistent(reasoning: str, answer: str) -> bool:
    """Whether the answer follows from the reasoning (CAPO Eq. 1 criterion, from the texts alone):
    the answer states at least one field, and for each field it states, the last step of the
    reasoning that states that field gives the same value."""
    from medrl.answers.completion import split_steps

    a = parse_step_claims(answer or "")
    if not a or not (reasoning or "").strip():
        return False
    last: dict[str, str] = {}
    for st in split_steps(reasoning):
        last.update(parse_step_claims(st.text))
    return all(last.get(f) == v for f, v in a.items())
