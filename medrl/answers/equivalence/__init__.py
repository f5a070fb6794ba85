"""Answer equivalence by meaning, default-deny (see :mod:`medrl.answers.equivalence.compare`).

Public API (stable): :func:`equivalent` (is an answer the reference, by meaning?),
:func:`hard_mismatch` (the one guard every answer metric calls before its formula) and the
:class:`Equivalence` result. The one answer decision built on them, which every path calls,
is :func:`medrl.answers.decide` (graders: :func:`medrl.answers.grading_refusal`).
"""

from __future__ import annotations

from medrl.answers.equivalence.compare import Equivalence, equivalent, hard_mismatch

__all__ = ["Equivalence", "equivalent", "hard_mismatch"]
