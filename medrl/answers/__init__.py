"""A completion's answer: read whole, then decided once, the same way on every path.

One package for everything about an answer (layer: below the judges, the rewards, data and
evaluation; above the small shared modules). Its modules, from the top:

- :mod:`~medrl.answers.completion`: a completion read whole - the rollout format, the one answer
  (or why there is none), the reasoning steps and their token spans;
- :mod:`~medrl.answers.decide`: the one answer decision, :func:`decide`, and its LLM-judge tier
  :func:`override`; :mod:`~medrl.answers.verdict`: :class:`Decision`, :class:`Verdict` and the
  :class:`Reason` enum (callers compare members, never reason strings);
- :mod:`~medrl.answers.compose`: an answer read as claims - a contrast ("not W but X"), a check
  list ("[x] X [ ] W"), a translation beside the answer ("abdomen (腹部)");
- :mod:`~medrl.answers.equivalence`: answers compared by meaning (normalisation, quantities, the
  word structure, the hard mismatch);
- :mod:`~medrl.answers.guard`: answer shapes that can never be correct (empty, padding, lists,
  hedges, injections, ...);
- :mod:`~medrl.answers.clinical`: the lexicon, qualifier and negation data files, negation scopes
  and category mismatches;
- :mod:`~medrl.answers.variants` and :mod:`~medrl.answers.attacks`: listed and generated
  meaning-preserving / meaning-flipping answers that test the decision.

Public API: :func:`decide`, :func:`override`, :func:`grading_refusal` (the graders' refusal),
:func:`metric_text` (the text an answer metric scores: the answer as the decision reads it),
:class:`Decision`, :class:`Verdict`, :class:`Reason`.
"""

from __future__ import annotations

from medrl.answers.decide import decide, grading_refusal, metric_text, option_label_match, override
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

__all__ = ["decide", "override", "grading_refusal", "metric_text", "option_label_match", "Decision", "Verdict", "Reason", "reason_of", "IDENTITY",
           "CONTRADICTIONS", "SHAPE_REASONS", "SUSPECT", "CORRECT_REASONS", "WRONG_REASONS"]
