"""Judge-backed rewards: MediX-R1 R_llm, MRPO R_proc and CAPO R_CDR, as async TRL reward functions.

Each factory returns a :class:`JudgedReward`: an object whose ``__call__`` is a coroutine
function with TRL's signature ``(prompts, completions, **columns) -> list[float | None]``.
TRL 1.16 (``trl.trainer.utils.is_async_callable`` checks ``__call__``) runs such rewards on its
background event loop, all rows at once; the judge bounds concurrency, caches and de-duplicates.
From plain code use ``fn.sync(prompts, completions, **columns)``.

``None`` means "unscored" (the judge failed or its reply did not parse; no reference answer):
TRL turns it into NaN and leaves the row out, so a judge outage never becomes a silent 0 or 1.

The judge is ``judge="reference"`` (offline heuristic, default), ``"openai:<model>"`` with
``judge_options`` such as ``{"base_url": "http://127.0.0.1:8000/v1", "concurrency": 32}``, or a
judge object. Judges built from a spec are shared per (spec, options) within a process.
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from medrl.judges import run_sync, shared_judge
from medrl.parsing import completion_steps, parse_response
from medrl.rewards import REWARDS
from medrl.rewards.base import column, reference_text, texts_of
from medrl.rewards.medix import answer_guard, clean_answer
from medrl.types import Step, StepVerdict


class JudgedReward:
    """Base of the judged rewards: async ``__call__`` for TRL, ``sync`` for plain code."""

    def __init__(self, name: str, judge: Any = "reference", judge_options: dict | None = None):
        self.__name__ = name
        self.__qualname__ = name
        self.judge = shared_judge(judge, **(judge_options or {}))

    @property
    def stats(self):
        return self.judge.stats

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__name__!r}, judge={self.judge!r})"

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        texts = texts_of(completions)
        before = self.judge.stats.failures
        rows = await asyncio.gather(*(self.score(i, t, kwargs, len(texts)) for i, t in enumerate(texts)))
        self._finish(rows)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and texts:
            log_metric(f"judge/{self.__name__}/unscored_frac", sum(r is None for r in rows) / len(rows))
            log_metric(f"judge/{self.__name__}/failures", float(self.judge.stats.failures - before))
        return list(rows)

    def sync(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        return run_sync(self(prompts, completions, **kwargs))

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> float | None:
        raise TypeError(f"{type(self).__name__} must define score()")

    def _finish(self, rows: list) -> None:
        """Hook after a batch (MRPO keeps its step verdicts)."""

    def _col(self, kwargs: dict, name: str, n: int) -> list:
        return column(kwargs, name, n, reward=self.__name__)


class MedixLLMReward(JudgedReward):
    """MediX-R1 R_llm (003_d5d6a0d73a50ab79.txt Sec. 2.3.1 and App. A.9).

    Parse ``<answer>``; the shared guards :func:`medrl.rewards.medix.answer_guard` decide empty,
    one-character, placeholder (0) and exact-match (1) answers; otherwise the judge's strict
    YES/NO gives 1/0. No ``<answer>`` block -> 0; no reference -> None; judge unscored -> None.
    """

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> float | None:
        ref = reference_text(self._col(kwargs, "answer", n)[i])
        if ref is None:
            return None
        pred = parse_response(text).answer
        decided = answer_guard(pred, ref)
        if decided is not None:
            return float(decided)
        question = self._col(kwargs, "question", n)[i] or ""
        image = self._col(kwargs, "image", n)[i]
        v = await self.judge.answer_correct(question, ref, clean_answer(pred), image=image)
        return (1.0 if v.value else 0.0) if v.scored else None


class MRPOProcessReward(JudgedReward):
    """MRPO process reward: mean over steps of R_proc(r_k) (000_20b05565d28598f4.txt Eq. 3, 5).

    R_proc(r_k) = 1 when the judge marks step k as gold-aligned or answer-contributing; one judge
    call rates all steps of a rollout (App. C.3). Steps are the sentences of ``<think>``
    (:func:`medrl.parsing.completion_steps`). The judge compares against ``gold_reasoning`` when
    the record has it, else against ``evidence`` (modality, organ/location, answer).

    Project choices: a rollout with no steps (no ``<think>`` block, or an empty one) gets 0 -
    it has no valid step, and MRPO's length reward (Eq. 4) penalises K < K_min separately; no
    reference answer or an unscored judge verdict -> None.

    After each call, ``fn.last_steps[i]`` holds rollout i's steps (character spans into the
    completion text) and ``fn.last_step_verdicts[i]`` the judge's verdicts (``[]`` for no
    steps, None when unscored), so the trainer shapes token advantages (Eq. 7) without a second
    judge call.
    """

    def __init__(self, name: str, judge: Any = "reference", judge_options: dict | None = None):
        super().__init__(name, judge, judge_options)
        self.last_steps: list[list[Step] | None] = []
        self.last_step_verdicts: list[list[StepVerdict] | None] = []

    async def __call__(self, prompts, completions, **kwargs):
        self._pending: dict[int, tuple[list[Step] | None, list[StepVerdict] | None]] = {}
        return await super().__call__(prompts, completions, **kwargs)

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> float | None:
        steps = completion_steps(text)
        ref = reference_text(self._col(kwargs, "answer", n)[i])
        if ref is None:
            self._pending[i] = (steps, None)
            return None
        if not steps:
            self._pending[i] = (steps, [])
            return 0.0
        gold = self._col(kwargs, "gold_reasoning", n)[i]
        evidence = self._col(kwargs, "evidence", n)[i]
        if not evidence:
            evidence = {"answer": ref}
            for key in ("modality", "organ"):
                value = self._col(kwargs, key, n)[i]
                if value:
                    evidence[key] = value
        v = await self.judge.verify_steps(
            self._col(kwargs, "question", n)[i] or "", ref, [s.text for s in steps],
            gold_reasoning=gold if isinstance(gold, str) and gold.strip() else None,
            evidence=evidence, image=self._col(kwargs, "image", n)[i],
        )
        if not v.scored:
            self._pending[i] = (steps, None)
            return None
        verdicts = list(v.value)
        self._pending[i] = (steps, verdicts)
        return sum(sv.valid for sv in verdicts) / len(verdicts)

    def _finish(self, rows: list) -> None:
        n = len(rows)
        self.last_steps = [self._pending.get(i, (None, None))[0] for i in range(n)]
        self.last_step_verdicts = [self._pending.get(i, (None, None))[1] for i in range(n)]


class CAPOConsistencyReward(JudgedReward):
    """CAPO R_CDR (002_37d042df30c2f660.txt Eq. 1): r_cdr (0.1) when the judge says the reasoning
    leads to the answer and the answer matches its conclusion, else 0.

    No ``<think>`` or ``<answer>`` block (or an empty one) -> 0 without a call (nothing to be
    consistent); judge unscored -> None. The reference answer is not needed.
    """

    def __init__(self, name: str, judge: Any = "reference", judge_options: dict | None = None, r_cdr: float = 0.1):
        super().__init__(name, judge, judge_options)
        self.r_cdr = float(r_cdr)

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> float | None:
        parsed = parse_response(text)
        if not (parsed.reasoning or "").strip() or not clean_answer(parsed.answer):
            return 0.0
        question = self._col(kwargs, "question", n)[i] or ""
        v = await self.judge.consistency(question, parsed.reasoning, parsed.answer)
        return (self.r_cdr if v.value else 0.0) if v.scored else None


@REWARDS.register("medix_llm")
def make_medix_llm(*, judge: Any = "reference", judge_options: dict | None = None) -> MedixLLMReward:
    """MediX-R1 R_llm with ``judge`` (see :class:`MedixLLMReward`)."""
    return MedixLLMReward("medix_llm", judge, judge_options)


@REWARDS.register("mrpo_process")
def make_mrpo_process(*, judge: Any = "reference", judge_options: dict | None = None) -> MRPOProcessReward:
    """MRPO mean step reward with ``judge`` (see :class:`MRPOProcessReward`)."""
    return MRPOProcessReward("mrpo_process", judge, judge_options)


@REWARDS.register("capo_consistency")
def make_capo_consistency(*, judge: Any = "reference", judge_options: dict | None = None,
                          r_cdr: float = 0.1) -> CAPOConsistencyReward:
    """CAPO R_CDR with ``judge`` (see :class:`CAPOConsistencyReward`)."""
    return CAPOConsistencyReward("capo_consistency", judge, judge_options, r_cdr)
