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
}
_SPECIAL = {"hu": "hounsfield unit"}  # no pint unit: compared by value within the same word
_NUM = r"((?:(?<![\w)])[-−+])?(?:\d+(?:\.\d+)?|\.\d+))"
_UNIT = r"(?:\s*(" + "|".join(sorted((re.escape(u) for u in [*UNITS, *_SPECIAL]), key=len, reverse=True)) + r")(?![a-z]))?"
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


def quantities(text: str) -> tuple[list[Quantity], str]:
    """The quantities of a lower-case ``text`` and the text with each replaced by a space."""
    out: list[Quantity] = []

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
        return " "

    rest = QUANTITY.sub(take, text)
    return out, rest


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


def describe(qs: list[Quantity]) -> str:
    return ", ".join(q.text for q in qs) or "none"
