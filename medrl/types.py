"""Small shared value types: parsed responses, steps, and judge verdicts.

Every module of medrl speaks in these types so that rewards, judges, the trainer and the
analysis agree on what a step or a verdict is. They are plain frozen dataclasses with no
heavy imports, so ``import medrl.types`` is instant.

The VQA record type lives in :mod:`medrl.data.record` (it carries I/O helpers).
"""

from __future__ import annotations

import abc

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParsedResponse:
    """A rollout ``[<TAG>] <think> reasoning </think> <answer> answer </answer>`` taken apart.

    ``modality``  text before the first ``<think>`` (stripped), or None when there is none.
    ``reasoning`` text inside ``<think>...</think>``, or None when the block is absent.
    ``answer``    text inside ``<answer>...</answer>``, or None when the block is absent.
    ``well_formed`` the strict format check of the papers (see :func:`medrl.answers.completion.is_well_formed`).
    ``reasoning_span`` / ``answer_span``: ``(start, end)`` character offsets of the stripped
    reasoning / answer inside the original text, so steps can be mapped back to tokens.
    ``answer_problem``: why a completion that writes an answer has none (more than one answer
    block, an answer inside the reasoning, text after the answer that states another: the
    completion is read whole, :func:`medrl.answers.completion.parse_response`), as
    ``"<reason>: <detail>"``; ``answer`` is then None. None when the answer (or its absence) is plain.
    """

    modality: str | None
    reasoning: str | None
    answer: str | None
    well_formed: bool
    reasoning_span: tuple[int, int] | None = None
    answer_span: tuple[int, int] | None = None
    answer_problem: str | None = None


@dataclass(frozen=True)
class Step:
    """One sentence-level reasoning step r_k; ``start``/``end`` index the text it was split from."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class StepVerdict:
    """Judge verdict for one step (MRPO Eq. 3, MRPO).

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


# ------------------------------------------------------------------ reward values: None vs UNSCORABLE


class Unscorable:
    """Type of :data:`UNSCORABLE` (one instance; pickles back to the same object).

    Two different things can stop a reward from giving a rollout a number:

    - ``None`` - **not applicable** (TRL's meaning): the reward does not apply to this sample
      (mixed-task data). TRL turns it into NaN and leaves it out of the weighted sum; the
      rollout still trains on the other rewards.
    - ``UNSCORABLE`` - **could not be scored**: the reward applies, but its score is unknown
      (judge outage, malformed verdict, missing reference). Scoring it 0 or 1 would be a
      silent guess, so :class:`medrl.train.trainer.MedGRPOTrainer` excludes the rollout
      (``algorithm.unscorable: exclude``, the default) or scores it like ``None``
      (``per_reward``).

    TRL only understands numbers and ``None``; a reward returns a :class:`RewardResult` (a list
    TRL takes, with the unscorable rows beside the values) built from values that may hold
    ``UNSCORABLE``.
    """

    _instance: "Unscorable | None" = None

    def __new__(cls) -> "Unscorable":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSCORABLE"

    def __reduce__(self) -> str:
        return "UNSCORABLE"  # pickle by reference to the module attribute: stays a singleton


#: A reward value meaning "this rollout could not be scored" (see :class:`Unscorable`).
UNSCORABLE = Unscorable()


def split_unscorable(values: Any) -> tuple[list, list[int]]:
    """``(values with every UNSCORABLE replaced by None, indices of those rows)``."""
    out, rows = [], []
    for i, v in enumerate(values):
        if v is UNSCORABLE:
            rows.append(i)
            v = None
        out.append(v)
    return out, rows


class RewardResult(list):
    """What a reward returns for one batch: the values, one per rollout, as TRL takes them (a
    number, or ``None``), and what medrl reads beside them - typed, on the result, never on the
    reward function:

    - ``unscorable``: the rows the reward could not score (:data:`UNSCORABLE` in ``values``,
      ``None`` in the list); the trainer excludes those rollouts (``algorithm.unscorable``);
    - ``outputs``: step outputs, ``{batch field: one entry per rollout}`` - a process reward's
      ``steps`` (character spans) and ``step_verdicts`` (:class:`medrl.methods.MedBatch` fields
      of the same names; a method reads them there).

    It is a list, so TRL, ``sum()``, equality with a list and pickling work as for the plain
    list of TRL's reward signature; a reward that returns a plain list (TRL's callable) has a
    result with neither extra (:meth:`of`).
    """

    def __init__(self, values: Any = (), *, unscorable: Any = (), outputs: dict[str, list] | None = None):
        out, rows = split_unscorable(values)
        super().__init__(out)
        self.unscorable: tuple[int, ...] = tuple(sorted({*rows, *(int(i) for i in unscorable)}))
        self.outputs: dict[str, list] = dict(outputs or {})

    @classmethod
    def of(cls, values: Any) -> "RewardResult":
        """``values`` as a result: itself when it is one, else a result of the list."""
        return values if isinstance(values, RewardResult) else cls(values)

    def __repr__(self) -> str:
        extra = (f", unscorable={list(self.unscorable)}" if self.unscorable else "") + (
            f", outputs={sorted(self.outputs)}" if self.outputs else "")
        return f"RewardResult({list(self)!r}{extra})"


def record_unscorable(reward: Any, values: Any) -> RewardResult:
    """``values`` (numbers, ``None`` and :data:`UNSCORABLE`) as a :class:`RewardResult`: TRL takes
    it as its list, the trainer reads the unscorable rows from it. ``reward`` is not used (kept so
    rewards written against the earlier form still work)."""
    return RewardResult(values)


def is_stateful_reward(reward: Any) -> bool:
    """Whether ``reward`` opted in to checkpointing (see :class:`StatefulReward`)."""
    return getattr(reward, "checkpoint_state", False) is True


class StatefulReward(abc.ABC):
    """The opt-in protocol of a reward that keeps state across training steps (ARMed's adaptive
    thresholds): set the class attribute ``checkpoint_state = True`` and implement
    ``state_dict() -> dict`` (JSON-serialisable) and ``load_state_dict(dict)``; optionally a
    ``frozen`` flag (set during evaluation so it does not move the state).

    Only an explicit ``checkpoint_state = True`` makes a reward stateful: having
    ``state_dict`` is not enough (every ``torch.nn.Module`` reward model has one, and its
    weights are not reward state). Subclassing this class is optional; it documents the
    protocol and gives the flag.
    """

    checkpoint_state = True

    @abc.abstractmethod
    def state_dict(self) -> dict:
        """The reward's state, JSON-serialisable (written into every checkpoint)."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (on resume)."""
