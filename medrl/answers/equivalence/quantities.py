"""Numbers and measurements in a short answer, compared after unit conversion (``pint``).

"3.4 cm" = "34 mm" = "0.034 m"; "3-4 cm" and "3 to 4 cm" are a *range* (3 cm to 4 cm), never 3.4;
"3.4 inches" is not "3.4 cm"; "34 cm" is not "3.4 cm"; "2.5cm x 1.7cm x 1.6cm" is three lengths.
A number without a unit is a count or a level and is compared as a plain number. Vertebral
levels ("L4-L5", "C5"), MRI weightings ("T2") and ordinals are not quantities here (the letter
before the digit keeps them out; :mod:`medrl.answers.clinical.mismatch` compares levels).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

# unit words accepted after a number -> pint unit (a whitelist: "in" is a preposition, "hu" a mass in pint)
UNITS: dict[str, str] = {
    "mm": "millimeter", "millimeter": "millimeter", "millimeters": "millimeter", "millimetre": "millimeter",
    "millimetres": "millimeter", "cm": "centimeter", "centimeter": "centimeter", "centimeters": "centimeter",
    "centimetre": "centimeter", "centimetres": "centimeter", "m": "meter", "meter": "meter", "meters": "meter",
    "metre": "meter", "metres": "meter", "inch": "inch", "inches": "inch", '"': "inch", "ft": "foot",
    "feet": "foot", "foot": "foot", "ml": "milliliter", "cc": "milliliter", "l": "liter", "liter": "liter",
    "litre": "liter", "mg": "milligram", "g": "gram", "kg": "kilogram", "%": "percent", "percent": "percent",
    "degrees": "degree", "degree": "degree", "deg": "degree", "°": "degree", "ms": "millisecond",
    "s": "second", "sec": "second", "seconds": "second", "min": "minute", "minutes": "minute",
    "mmhg": "mmHg", "years": "year", "year": "year", "yo": "year", "months": "month", "month": "month",
    "weeks": "week", "week": "week", "days": "day", "day": "day",
    # plurals of the abbreviations, as clinicians write them ("3.4 cms")
    "cms": "centimeter", "mms": "millimeter", "mls": "milliliter", "ccs": "milliliter", "mgs": "milligram",
    "kgs": "kilogram", "secs": "second", "mins": "minute", "yrs": "year", "yr": "year",
}
_SPECIAL = {"hu": "hounsfield unit"}  # no pint unit: compared by value within the same word
_NUM = r"((?:(?<![\w)])[-−+])?(?:\d+(?:\.\d+)?|\.\d+))"
_UNIT = r"(?:\s*-?\s*(" + "|".join(sorted((re.escape(u) for u in [*UNITS, *_SPECIAL]), key=len, reverse=True)) + r")(?![a-z]))?"
_RANGE_SEP = r"\s*(?:-|to|–)\s*"
QUANTITY = re.compile(r"(?<![a-z\d.])(?<![a-z\d]-)" + _NUM + _UNIT + r"(?:" + _RANGE_SEP + _NUM + _UNIT + r")?(?![\d])",
                      re.IGNORECASE)


@dataclass(frozen=True)
class Quantity:
    """``low``..``high`` (equal for a single value) in base units of ``dimension``; ``text``: as written."""

    low: float
    high: float
    dimension: str
    text: str

    @property
    def is_range(self) -> bool:
        return self.low != self.high

    def same(self, other: "Quantity") -> bool:
        return (self.dimension == other.dimension and math.isclose(self.low, other.low, rel_tol=1e-6, abs_tol=1e-12)
                and math.isclose(self.high, other.high, rel_tol=1e-6, abs_tol=1e-12))


def _float(text: str) -> float:
    return float(text.replace("\u2212", "-"))


@lru_cache(maxsize=1)
def _registry():
    import pint

    return pint.UnitRegistry()


@lru_cache(maxsize=4096)
def _to_base(value: float, unit: str | None) -> tuple[float, str]:
    if not unit:
        return value, "number"
    unit = unit.lower()
    if unit in _SPECIAL:
        return value, _SPECIAL[unit]
    q = _registry().Quantity(value, UNITS[unit]).to_base_units()
    return float(q.magnitude), str(q.dimensionality)


_DIM_UNIT = r"(?:\s*(?:" + "|".join(sorted((re.escape(u) for u in UNITS if u[0].isalpha()), key=len, reverse=True)) + \
    r")(?![a-z]))?"
_DIM_NUM = r"(?<![\w.])\d+(?:\.\d+)?"
#: a dimension group "2.5 x 1.7 x 1.6 cm", "2 by 3 mm": the unit written once, after the last size
DIMENSIONS = re.compile(r"(?P<dims>" + _DIM_NUM + _DIM_UNIT + r"(?:\s*(?:x|\*|by)\s*" + _DIM_NUM + _DIM_UNIT + r"){1,3})"
                        r"(?![\w.])", re.IGNORECASE)
_TIMES = re.compile(r"(?<=\d)\s*[x*]\s*(?=\.?\d)|(?<=\d[a-z])\s*[x*]\s*(?=\.?\d)|(?<=\d[a-z]{2})\s*[x*]\s*(?=\.?\d)",
                    re.IGNORECASE)  # "2.5x1.7", "2.5cmx1.7cm": a dimension sign between sizes
_BETWEEN = re.compile(r"\x00(?:\s*x\s*\x00)+")
_DIM_PART = re.compile(r"(" + _DIM_NUM + r")(" + _DIM_UNIT + r")", re.IGNORECASE)


def _spread_unit(m: re.Match) -> str:
    """"2.5 x 1.7 x 1.6 cm" -> "2.5 cm x 1.7 cm x 1.6 cm": a size without a unit takes the unit
    written after the last size (only when no size names another unit)."""
    parts = [(n, u.strip()) for n, u in _DIM_PART.findall(m.group("dims"))]
    units = {u.lower() for _n, u in parts if u}
    if len(units) != 1 or not parts[-1][1]:
        return m.group(0)
    unit = parts[-1][1]
    return " x ".join(f"{n} {u or unit}" for n, u in parts)


def quantities(text: str) -> tuple[list[Quantity], str]:
    """The quantities of a lower-case ``text`` and the text with each replaced by a space; the
    sizes of a dimension group share the unit written after the last one (:data:`DIMENSIONS`)."""
    out: list[Quantity] = []
    text = DIMENSIONS.sub(_spread_unit, _TIMES.sub(" x ", text))

    def take(m: re.Match) -> str:
        a, ua, b, ub = m.group(1), m.group(2), m.group(3), m.group(4)
        unit = ub or ua
        if b is not None and ua and ub and ua.lower() != ub.lower():
            lo, dim = _to_base(_float(a), ua)
            hi, dim2 = _to_base(_float(b), ub)
            dim = dim if dim == dim2 else f"{dim}|{dim2}"
        else:
            lo, dim = _to_base(_float(a), unit)
            hi = _to_base(_float(b), unit)[0] if b is not None else lo
        out.append(Quantity(min(lo, hi), max(lo, hi), dim, m.group(0).strip()))
        return "\x00"

    rest = QUANTITY.sub(take, text)
    # the sign between the sizes of a dimension group goes with them ("2 x 3 cm"); a lone "x" stays a word
    return out, _BETWEEN.sub(" ", rest).replace("\x00", " ")


def same_quantities(a: list[Quantity], b: list[Quantity]) -> bool:
    """The same quantities, in any order (a multiset match)."""
    if len(a) != len(b):
        return False
    left = list(b)
    for q in a:
        hit = next((i for i, r in enumerate(left) if q.same(r)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def _close_when_rounded(q: Quantity, ref: Quantity) -> bool:
    """``q`` is ``ref`` written with fewer digits: within half a unit of the last digit ``q`` writes
    (in ``q``'s unit), so "1.34 inches" is 3.4 cm rounded."""
    m = re.search(r"(\d+)(?:\.(\d+))?", q.text)
    if not m or q.dimension != ref.dimension or q.is_range or ref.is_range:
        return False
    decimals = len(m.group(2) or "")
    value = float(m.group(0))
    scale = q.low / value if value else 1.0  # base units per written unit
    return abs(q.low - ref.low) <= 0.5 * 10 ** -decimals * abs(scale) + 1e-12


def same_values_other_units(a: list[Quantity], b: list[Quantity]) -> bool:
    """The same numbers in another form: one side leaves the unit out ("3.4" for "3.4 cm"), or
    writes another unit rounded ("1.34 inches" for "3.4 cm"). Not the same answer by identity,
    not a contradiction either: the decision leaves it undecided."""
    if len(a) != len(b) or not a:
        return False
    left = list(b)
    for q in a:
        hit = next((i for i, r in enumerate(left) if
                    (q.dimension == "number") != (r.dimension == "number") and
                    re.search(r"[\d.]+", q.text).group(0).rstrip(".") == re.search(r"[\d.]+", r.text).group(0).rstrip(".")
                    or (q.dimension == r.dimension and (_close_when_rounded(q, r) or _close_when_rounded(r, q)))), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def describe(qs: list[Quantity]) -> str:
    return ", ".join(q.text for q in qs) or "none"


# ---------------------------------------------------------------- ordinals are not counts
#: number words and ordinal words, zero to twelve (the one copy the answer package reads)
CARDINAL_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                   "twelve")
ORDINAL_WORDS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                  "tenth", "eleventh", "twelfth")
_ROMAN_VALUES = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10}
_SPINE_ORDINAL = re.compile(r"\b(?:\d{1,2}(?:st|nd|rd|th)|" + "|".join(ORDINAL_WORDS[1:]) + r")\s+"
                            r"(?:cervical|thoracic|dorsal|lumbar|sacral)\b")
_ORDINAL_DIGITS = re.compile(r"(?<![\w.])(\d{1,3})\s?(?:st|nd|rd|th)(?![a-z])")
_ORDINAL_WORD = re.compile(r"\b(" + "|".join(ORDINAL_WORDS) + r")\b")
# a position named by the number after its structure: "rib 5", "ventricle IV", "ribs 3 and 4"
_POSITION_NUMBER = r"(?:\d{1,2}|" + "|".join(sorted(_ROMAN_VALUES, key=len, reverse=True)) + r")\b"
_NAMED_POSITION = re.compile(r"\b(?:ribs?|ventricles?)\s+(" + _POSITION_NUMBER + r"(?:\s*(?:,|and|&|-|to)\s*"
                             + _POSITION_NUMBER + r")*)")
_POSITION_PART = re.compile(_POSITION_NUMBER)
# labels, neither counts nor ordinals: "grade 2", "stage IV", "type 1", "C5", "T2", "L4-L5"
_LABEL = re.compile(r"\b(?:grade|stage|type|class|level|gleason|bi-?rads|tirads|lirads|pirads|score)\s*[:-]?\s*"
                    r"(?:\d{1,2}|[ivx]{1,4})\b|\b[a-z]+\d+[a-z\d]*\b")
_DECIMAL = re.compile(r"(?<![\w.])\d*\.\d+")
_CARDINAL_DIGITS = re.compile(r"(?<![\w.])(\d+)(?!\d)(?!\.\d)")  # "5", "5mm"
_CARDINAL_WORD = re.compile(r"\b(" + "|".join(CARDINAL_WORDS) + r")\b")


def number_forms(text: str | None) -> dict[int, frozenset[str]]:
    """Whole numbers of a lower-case ``text``, each with the forms it is written in: "ordinal"
    ("4th", "fourth", "rib 5", "ventricle IV") or "cardinal" ("4", "four"). Spine levels ("fifth
    cervical"), labels ("grade 2", "C5", "T2") and decimals are neither. "4 ventricles" is a
    count, "4th ventricle" a position, "5mm" a size: the same number in another form is another answer."""
    t = f" {text or ''} "
    forms: dict[int, set[str]] = {}

    def take(pattern: re.Pattern, kind: str, value) -> None:
        nonlocal t
        for m in pattern.finditer(t):
            v = value(m)
            if v is not None:
                forms.setdefault(v, set()).add(kind)
        t = pattern.sub(" ", t)

    take(_DECIMAL, "", lambda m: None)
    take(_SPINE_ORDINAL, "", lambda m: None)
    take(_ORDINAL_DIGITS, "ordinal", lambda m: int(m.group(1)))
    take(_ORDINAL_WORD, "ordinal", lambda m: ORDINAL_WORDS.index(m.group(1)))
    for m in _NAMED_POSITION.finditer(t):
        for part in _POSITION_PART.findall(m.group(1)):
            forms.setdefault(int(part) if part.isdigit() else _ROMAN_VALUES[part], set()).add("ordinal")
    t = _NAMED_POSITION.sub(" ", t)
    take(_LABEL, "", lambda m: None)
    take(_CARDINAL_DIGITS, "cardinal", lambda m: int(m.group(1)))
    take(_CARDINAL_WORD, "cardinal", lambda m: CARDINAL_WORDS.index(m.group(1)))
    return {v: frozenset(k) for v, k in forms.items()}


def number_form_clash(reference: str | None, answer: str | None) -> list[int]:
    """Numbers written as an ordinal on one side and a count on the other ("4 ventricles" for
    "4th ventricle", "1st" for "one"), from lower-case texts; [] when none."""
    r, a = number_forms(reference), number_forms(answer)
    return sorted(v for v in set(r) & set(a) if r[v] != a[v])
