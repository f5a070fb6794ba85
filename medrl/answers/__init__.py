"""What an answer means against its reference: the one decision every path calls.

Layer: above :mod:`medrl.clinical` and :mod:`medrl.equivalence`, below the judges, the rewards
and evaluation. Public API: :func:`decide` (the decision), :func:`override` (the part that may
override an LLM judge), :class:`Decision`, :class:`Verdict`, :class:`Reason` (an enum: callers
compare members, never reason strings).
"""

from __future__ import annotations

from medrl.answers.decide import decide, grading_refusal, option_label_match, override
from medrl.answers.verdict import (
    CONTRADICTIONS,
    CORRECT_REASONS,
    IDENTITY,
    SHAPE_REASONS,
    SUSPECT,
    WRONG_REASONS,
    Decision,
    Reason,
    Verdict,
    reason_of,
)

__all__ = ["decide", "override", "grading_refusal", "option_label_match", "Decision", "Verdict", "Reason", "reason_of", "IDENTITY",
           "CONTRADICTIONS", "SHAPE_REASONS", "SUSPECT", "CORRECT_REASONS", "WRONG_REASONS"]
