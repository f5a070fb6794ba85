"""Small shared value types: parsed responses, steps, and judge verdicts.

Every module of medrl speaks in these types so that rewards, judges, the trainer and the
analysis agree on what a step or a verdict is. They are plain frozen dataclasses with no
heavy imports, so ``import medrl.types`` is instant.

The VQA record type lives in :mod:`medrl.data.record` (it carries I/O helpers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParsedResponse:
    """A rollout ``[<TAG>] <think> reasoning </think> <answer> answer </answer>`` taken apart.

    ``modality``  text before the first ``<think>`` (stripped), or None when there is none.
    ``reasoning`` text inside ``<think>...</think>``, or None when the block is absent.
    ``answer``    text inside ``<answer>...</answer>``, or None when the block is absent.
    ``well_formed`` the strict format check of the papers (see :func:`medrl.parsing.is_well_formed`).
    ``reasoning_span`` / ``answer_span``: ``(start, end)`` character offsets of the stripped
    reasoning / answer inside the original text, so steps can be mapped back to tokens.
    """

    modality: str | None
    reasoning: str | None
    answer: str | None
    well_formed: bool
    reasoning_span: tuple[int, int] | None = None
    answer_span: tuple[int, int] | None = None


@dataclass(frozen=True)
class Step:
    """One sentence-level reasoning step r_k; ``start``/``end`` index the text it was split from."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class StepVerdict:
    """Judge verdict for one step (MRPO Eq. 3, 000_20b05565d28598f4.txt).

    ``gold_alignment`` and ``answer_contribution`` are 0/1; the step is valid
    (R_proc(r_k) = 1) when either is 1.
    """

    gold_alignment: int
    answer_contribution: int
    reason: str = ""

    @property
    def valid(self) -> bool:
        return bool(self.gold_alignment or self.answer_contribution)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one judge task.

    ``scored`` is False when the judge could not produce a trustworthy verdict (outage,
    malformed reply, empty input): callers must then *exclude* the item (TRL reward ``None``),
    never treat it as a pass or a fail. ``value`` holds the typed result when scored:

    - answer correctness / consistency: ``bool``
    - step verification: ``list[StepVerdict]`` (one per step, same order)
    - evaluation grading: ``float`` (binary 0/1 or the 0-5 rubric score)
    - VQA refinement audit: ``dict`` with ``status``, ``new_q``, ``new_a``, ``notes``
    - key-step extraction: ``list[str]``
    ``raw`` keeps the judge's raw text (for audit logs); ``error`` says why it is unscored.
    """

    scored: bool
    value: Any = None
    raw: str = ""
    error: str = ""
    meta: dict = field(default_factory=dict)

    @classmethod
    def unscored(cls, error: str, raw: str = "", **meta: Any) -> "Verdict":
        return cls(scored=False, value=None, raw=raw, error=error, meta=dict(meta))

    @classmethod
    def ok(cls, value: Any, raw: str = "", **meta: Any) -> "Verdict":
        return cls(scored=True, value=value, raw=raw, meta=dict(meta))
