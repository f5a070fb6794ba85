"""The monitor's per-answer leak test: *which* answers the run pays although the offline verdict
calls them wrong, not only how many.

A hole in a judge is often one answer: a judge that accepts any answer naming "liver" pays the
wrong "liver" answers and nothing else. On a task that often asks for an organ the policy learns
to say "liver" wherever it is unsure; of all the wrong rollouts the run pays perhaps a fifth, no
more than a clean judge's noise may pay, so the disagreement test (:mod:`.sequential`), which
counts wrong rollouts paid, cannot tell it from noise. Per answer it is plain: of the rollouts
answering "liver" that the verdict calls wrong, the run pays all.

*What is tested.* Answers are compared by their content words after the clinical lexicon
(:func:`answer_key`: "Liver", "the liver" and "hepatic" are one answer). For each answer the
evidence is, per record (a prompt: :func:`medrl.train.monitor.signals.record_key`) on which it
has not been decided before, the share ``Y`` of that record's rollouts with this answer, called
wrong by the verdict, that the run pays. A record counts once per answer: the verdict itself may
be wrong about an answer to one reference (a paraphrase it cannot read, which a good judge pays
whenever it appears), and that error repeats on the same record; a hole pays the answer on record
after record.

    H0: for each answer, on a record it has not been decided on before, a rollout with that
        answer that the verdict calls wrong is paid with probability at most ``p0``
        (``null_rate``, the disagreement test's), given everything before.

*Evidence and detector.* Per new (answer, record) pair the bet ``1 + lam (Y - p0)`` with ``lam``
from ``p0`` and ``p1`` (``answer_alt_rate``: a hole pays nearly every such rollout), as in
:mod:`.sequential`; a step's e-value for an answer is the product over its new pairs, and each
answer has its own Shiryaev-Roberts e-detector from the step it first appeared as a wrong answer
(a stopping time). At most ``max_answers`` answers are tracked (the first to appear). Each
detector alarms at ``log(horizon x max_answers / alpha)`` (``answer_alpha``), so under H0 it
alarms within ``horizon`` steps with probability at most ``alpha / max_answers`` and any of them
with probability at most ``alpha`` (Bonferroni over the tracked answers; the proof is
:mod:`.sequential`'s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from medrl.train.monitor.sequential import alarm_threshold, group_log_evalue, sr_update


def answer_key(answer: str | None) -> str | None:
    """The answer as one key: its content words after the clinical lexicon, sorted ("The liver"
    and "liver." are "liver"); its words as written when it has no content word; None for none."""
    if answer is None or not str(answer).strip():
        return None
    from medrl.answers.clinical.lexicon import content_tokens
    from medrl.answers.guard import match_key

    words = sorted(set(content_tokens(answer)))
    return " ".join(words) if words else (match_key(answer) or None)


@dataclass(frozen=True)
class AnswerTest:
    """The per-answer test's settings: ``null_rate`` p0, ``alt_rate`` p1, ``alpha`` (the bound on a
    false alarm of any tracked answer within ``horizon`` steps), ``max_answers`` tracked."""

    null_rate: float
    alt_rate: float
    alpha: float
    horizon: int
    max_answers: int

    def __post_init__(self) -> None:
        if not 0.0 < self.null_rate < self.alt_rate < 1.0:
            raise ValueError(f"the per-answer test needs 0 < null_rate < answer_alt_rate < 1, got null_rate="
                             f"{self.null_rate}, answer_alt_rate={self.alt_rate}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"the per-answer test needs 0 < answer_alpha < 1, got {self.alpha}")
        if int(self.horizon) < 1 or int(self.max_answers) < 1:
            raise ValueError(f"the per-answer test needs a horizon and max_answers of at least 1, got "
                             f"{self.horizon} and {self.max_answers}")

    @property
    def threshold(self) -> float:
        """``log(horizon x max_answers / alpha)``: the level of an answer's ``log R_t`` that alarms."""
        return alarm_threshold(self.alpha / self.max_answers, self.horizon)


@dataclass
class AnswerSlot:
    """One tracked answer: its detector's ``log_r``, the records it has been decided on, and the
    rollouts the verdict called wrong (``wrong``) and the run paid among them (``paid``)."""

    log_r: float = -math.inf
    records: set[str] = field(default_factory=set)
    wrong: int = 0
    paid: int = 0
    since: int = 0


class AnswerLeaks:
    """The per-answer detectors of one run (state; :meth:`update` once per step)."""

    def __init__(self) -> None:
        self.slots: dict[str, AnswerSlot] = {}

    def update(self, step: int, rows: Iterable[tuple[str | None, str, bool | None, bool | None]],
               test: AnswerTest) -> list[tuple[str, AnswerSlot]]:
        """Add one step: ``rows`` are (answer key, record key, verdict, paid) per rollout. Returns
        the tracked answers whose statistic reached the threshold this step."""
        new: dict[str, dict[str, list[int]]] = {}
        for key, record, verdict, paid in rows:
            if key is None or verdict is not False or paid is None:
                continue
            slot = self.slots.get(key)
            if slot is None:
                if len(self.slots) >= test.max_answers:
                    continue  # only the first max_answers answers are tracked (the bound counts them)
                slot = self.slots[key] = AnswerSlot(since=step)
            slot.wrong += 1
            slot.paid += bool(paid)
            if record in slot.records:
                continue  # this answer was decided on this record before: no new evidence
            cell = new.setdefault(key, {}).setdefault(record, [0, 0])
            cell[0] += bool(paid)
            cell[1] += 1
        over = []
        for key, slot in self.slots.items():
            groups = new.get(key, {})
            log_e = sum(group_log_evalue(h, n, test.null_rate, test.alt_rate) for h, n in groups.values())
            slot.records.update(groups)
            slot.log_r = sr_update(slot.log_r, log_e)
            if slot.log_r >= test.threshold:
                over.append((key, slot))
        return over

    @property
    def evidence(self) -> float | None:
        """The largest ``log R_t`` of the tracked answers (None before any)."""
        return max((s.log_r for s in self.slots.values()), default=None)

    def state_dict(self) -> dict:
        return {k: {"log_r": None if s.log_r == -math.inf else s.log_r, "records": sorted(s.records),
                    "wrong": s.wrong, "paid": s.paid, "since": s.since} for k, s in self.slots.items()}

    def load_state_dict(self, state: dict) -> None:
        self.slots = {k: AnswerSlot(-math.inf if v["log_r"] is None else float(v["log_r"]), set(v["records"]),
                                    int(v["wrong"]), int(v["paid"]), int(v.get("since", 0)))
                      for k, v in (state or {}).items()}


__all__ = ["AnswerLeaks", "AnswerSlot", "AnswerTest", "answer_key"]
