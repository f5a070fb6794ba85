"""Answer equivalence by meaning, default-deny (see :mod:`medrl.equivalence.decide`).

Public API (stable): :func:`equivalent` (is an answer the reference, by meaning?),
:func:`hard_mismatch` (the one guard every answer metric calls before its formula) and the
:class:`Equivalence` result; :func:`grading_refusal` (the same guard for graders, which let
option labels through to the judge).
"""

from __future__ import annotations

from medrl.equivalence.decide import Equivalence, equivalent, grading_refusal, hard_mismatch

__all__ = ["Equivalence", "equivalent", "grading_refusal", "hard_mismatch"]
