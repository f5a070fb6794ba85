"""Judge-backed rewards: MediX-R1 R_llm, MRPO R_proc and CAPO R_CDR, as async TRL reward functions.

Each factory returns a :class:`JudgedReward`: an object whose ``__call__`` is a coroutine
function with TRL's signature ``(prompts, completions, **columns) -> list[float | None]``.
TRL 1.16 (``trl.trainer.utils.is_async_callable`` checks ``__call__``) runs such rewards on its
background event loop, all rows at once; the judge bounds concurrency, caches and de-duplicates.
From plain code use ``fn.sync(prompts, completions, **columns)``.

A row the reward cannot score (the judge failed or its reply did not parse; no reference
answer; the row's own data made scoring fail, logged as a warning) is
:data:`medrl.types.UNSCORABLE`, never a silent 0 or 1: ``__call__`` returns a
:class:`medrl.types.RewardResult` - ``None`` for that row in the list TRL takes, the row in its
``unscorable`` - and the trainer excludes those rollouts (``algorithm.unscorable``). A plain
``None`` from a reward means "not applicable" (TRL), which the judged rewards never return. ``fn.sync`` returns ``None`` for unscorable rows. A
misaligned column and a rejected API key (:class:`medrl.judges.base.JudgeAuthError`) still raise.

The judge is ``judge="reference"`` (offline heuristic, default), ``"openai:<model>"`` with
``judge_options`` such as ``{"base_url": "http://127.0.0.1:8000/v1", "concurrency": 32}``, or a
judge object. Judges built from a spec are shared per (spec, options) within a process.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Sequence

from medrl.judges import run_sync, shared_judge
from medrl.judges.base import JudgeAuthError
from medrl.answers.completion import completion_steps, parse_response
from medrl.rewards import REWARDS
from medrl.rewards.base import column, document_options, reference_text, texts_of
from medrl.rewards.correctness import decide_correct_async, exact_match, is_closed_question, normalize_answer
from medrl.rewards.medix import clean_answer
from medrl.types import UNSCORABLE, RewardResult, Step, StepVerdict

log = logging.getLogger(__name__)


#: help of the ``judge_options`` option every judged reward takes
JUDGE_OPTIONS_HELP = ("options of the judge this reward builds when used without the run's judge (base_url, "
                      "concurrency, timeout, ...; medrl.judges.build_judge)")


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

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> RewardResult:
        texts = texts_of(completions)
        before = self.judge.stats.failures
        for name in ("answer", "question", "correct"):  # a misaligned column is a bug: raise, never per row
            self._col(kwargs, name, len(texts))
        rows = await asyncio.gather(*(self._score_row(i, t, kwargs, len(texts)) for i, t in enumerate(texts)))
        outputs = self._outputs(len(rows))
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and texts:
            log_metric(f"judge/{self.__name__}/unscored_frac", sum(r is UNSCORABLE for r in rows) / len(rows))
            log_metric(f"judge/{self.__name__}/failures", float(self.judge.stats.failures - before))
        return RewardResult(rows, outputs=outputs)

    async def _score_row(self, i: int, text: str, kwargs: dict, n: int) -> Any:
        """:meth:`score`, with one row's failure (odd data, an unreadable image) making that row
        UNSCORABLE (logged) instead of failing the batch; a rejected API key still stops."""
        try:
            return await self.score(i, text, kwargs, n)
        except JudgeAuthError:
            raise
        except Exception as exc:  # noqa: BLE001 - the row is excluded and the reason logged
            log.warning("reward %s: row %d unscored (%s: %s)", self.__name__, i, type(exc).__name__, exc)
            return UNSCORABLE

    def sync(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        return run_sync(self(prompts, completions, **kwargs))

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> Any:
        """Row ``i``'s reward: a float, or :data:`~medrl.types.UNSCORABLE` when it cannot be scored."""
        raise TypeError(f"{type(self).__name__} must define score()")

    def _outputs(self, n: int) -> dict[str, list]:
        """The step outputs of the batch just scored, for its result (none here; MRPO's process
        reward gives its steps and step verdicts)."""
        return {}

    def _col(self, kwargs: dict, name: str, n: int) -> list:
        return column(kwargs, name, n, reward=self.__name__)


class MedixLLMReward(JudgedReward):
    """MediX-R1 R_llm (MediX-R1 Sec. 2.3.1 and App. A.9): 1 if the answer is
    correct, else 0.

    ``check`` picks the judge's prompt. ``"medix"`` (default): MediX-R1's compact YES/NO
    (Sec. 2.3.1; the released ``medical.py``: the predicted and the ground-truth answer, no
    question); the reward then decides itself with
    :func:`~medrl.rewards.correctness.decide_correct_async` in ``"auto"`` mode with this reward's
    judge - the shared answer guard (empty, placeholder, list, hedge, negation, padding -> 0), a
    normalised exact match (-> 1), exact match for closed questions, the judge for open ones -
    and does not read the trainer's ``correct`` column, which the strict prompt decides.
    ``"strict"``: medrl's strict prompt, with the question; the reward reads the trainer's
    ``correct`` column (decided once, shared with the other rewards, under
    ``algorithm.correctness``) and decides as above without it.
    No ``<answer>`` block -> 0; no reference or judge unscored -> UNSCORABLE.
    """

    def __init__(self, name: str, judge: Any = "reference", judge_options: dict | None = None,
                 check: str = "medix"):
        if check not in ("medix", "strict"):
            raise ValueError(f"{name}: check must be 'medix' (MediX-R1's prompt) or 'strict', got {check!r}")
        super().__init__(name, judge, judge_options)
        self.check = check

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> float | None:
        ref = reference_text(self._col(kwargs, "answer", n)[i])
        if ref is None or parse_response(text).answer_problem is not None:
            return UNSCORABLE  # no reference, or no one answer (two answer blocks, text after it)
        if self.check == "strict" and kwargs.get("correct") is not None:
            ok = self._col(kwargs, "correct", n)[i]
            return UNSCORABLE if ok is None else float(bool(ok))
        image = self._col(kwargs, "images", n)[i] if kwargs.get("images") is not None else self._col(kwargs, "image", n)[i]
        ok = await decide_correct_async(
            parse_response(text).answer, ref, question=self._col(kwargs, "question", n)[i], mode="auto",
            closed=is_closed_question(answer=ref, answer_type=self._col(kwargs, "answer_type", n)[i],
                                      open_ended=self._col(kwargs, "open_ended", n)[i]),
            judge=self.judge, image=image, check=self.check)
        return UNSCORABLE if ok is None else float(ok)


class MedixLLMStrictReward(MedixLLMReward):
    """R_llm with medrl's strict prompt: it reads the trainer's ``correct`` column (it names it, so
    the trainer fills it: the strict prompt's decision, made once and shared with the other
    rewards); without the column it decides as :class:`MedixLLMReward` does."""

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], *, correct: Any = None,
                       **kwargs: Any) -> RewardResult:
        return await super().__call__(prompts, completions, correct=correct, **kwargs)


class MRPOProcessReward(JudgedReward):
    """MRPO process reward: mean over steps of R_proc(r_k) (MRPO Eq. 3, 5).

    R_proc(r_k) = 1 when the judge marks step k as gold-aligned or answer-contributing; one judge
    call rates all steps of a rollout (App. C.3). Steps are the sentences of ``<think>``
    (:func:`medrl.answers.completion.completion_steps`; ``splitter="released"``: MRPO's released
    splitter, :func:`medrl.answers.completion.released_split_steps`). The judge compares against ``gold_reasoning`` when
    the record has it, else against ``evidence`` (modality, organ/location, answer).

    ``step_prompt`` picks the judge's rules (:data:`medrl.judges.prompts.STEP_PROMPTS`): ``"paper"``
    (default) states MRPO App. H.2's rules and nothing more, as the paper's judge got them (a step
    naming the answer contributes); ``"hardened"`` adds this project's rules against gaming (a
    step only restating the answer, a run-on step or a bare noun phrase gets 0/0).

    Project choices: a rollout with no steps (no ``<think>`` block, or an empty one) gets 0 -
    it has no valid step, and MRPO's length reward (Eq. 4) penalises K < K_min separately; no
    reference answer or an unscored judge verdict -> UNSCORABLE.

    Its result's step outputs (:class:`medrl.types.RewardResult` ``outputs``): ``steps[i]``,
    rollout i's steps (character spans into the completion text), and ``step_verdicts[i]``, the
    judge's verdicts (``[]`` for no steps, None when unscored). The trainer puts them into the
    batch fields of the same names (``MedBatch.steps`` / ``step_verdicts``), where MRPO's
    token-advantage hook (Eq. 7) reads them - no second judge call. For plain code the last
    batch's stay on the object too (``last_steps``, ``last_step_verdicts``); the trainer never
    reads them there.
    """

    def __init__(self, name: str, judge: Any = "reference", judge_options: dict | None = None,
                 step_prompt: str = "paper", splitter: str = "medrl"):
        from medrl.answers.completion import SPLITTERS
        from medrl.judges.prompts import STEP_PROMPTS

        if step_prompt not in STEP_PROMPTS:
            raise ValueError(f"{name}: step_prompt must be one of {', '.join(STEP_PROMPTS)}, got {step_prompt!r}")
        if splitter not in SPLITTERS:
            raise ValueError(f"{name}: splitter must be one of {', '.join(SPLITTERS)}, got {splitter!r}")
        super().__init__(name, judge, judge_options)
        self.step_prompt = step_prompt
        self.splitter = splitter
        self.last_steps: list[list[Step] | None] = []
        self.last_step_verdicts: list[list[StepVerdict] | None] = []

    async def __call__(self, prompts, completions, **kwargs) -> RewardResult:
        self._pending: dict[int, tuple[list[Step] | None, list[StepVerdict] | None]] = {}
        return await super().__call__(prompts, completions, **kwargs)

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> float | None:
        steps = completion_steps(text, self.splitter)
        ref = reference_text(self._col(kwargs, "answer", n)[i])
        if ref is None:
            self._pending[i] = (steps, None)
            return UNSCORABLE
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
            evidence=evidence, image=self._col(kwargs, "image", n)[i], step_prompt=self.step_prompt,
        )
        if not v.scored:
            self._pending[i] = (steps, None)
            return UNSCORABLE
        verdicts = list(v.value)
        self._pending[i] = (steps, verdicts)
        return sum(sv.valid for sv in verdicts) / len(verdicts)

    def _outputs(self, n: int) -> dict[str, list]:
        """This batch's ``steps`` and ``step_verdicts``, one entry per rollout."""
        self.last_steps = [self._pending.get(i, (None, None))[0] for i in range(n)]
        self.last_step_verdicts = [self._pending.get(i, (None, None))[1] for i in range(n)]
        return {"steps": self.last_steps, "step_verdicts": self.last_step_verdicts}


class CAPOConsistencyReward(JudgedReward):
    """CAPO R_CDR (CAPO Eq. 1): r_cdr (0.1) when the judge says the reasoning
    leads to the answer and the answer matches its conclusion, else 0.

    No ``<think>`` or ``<answer>`` block (or an empty one) -> 0 without a call (nothing to be
    consistent); judge unscored -> UNSCORABLE. The judge never sees the reference (Eq. 1).

    Guards (project additions, run before Eq. 1): when the record's reference answer
    is given and is open-ended (not yes/no), an answer that is a bare yes/no (:func:`bare_yes_no`)
    and not the reference itself gets 0 without a call - it cannot answer the question, however
    consistent its reasoning.

    ``check``: the judge's review (:data:`medrl.judges.prompts.CONSISTENCY_CHECKS`): ``"paper"``
    (default) CAPO Table 9 as stated; ``"strict"`` adds that a reasoning reaching no conclusion is
    inconsistent and that medical correctness is not judged.
    """

    def __init__(self, name: str, judge: Any = "reference", judge_options: dict | None = None, r_cdr: float = 0.1,
                 check: str = "paper"):
        from medrl.judges.prompts import CONSISTENCY_CHECKS

        if check not in CONSISTENCY_CHECKS:
            raise ValueError(f"{name}: check must be one of {', '.join(CONSISTENCY_CHECKS)}, got {check!r}")
        super().__init__(name, judge, judge_options)
        self.r_cdr = float(r_cdr)
        self.check = check

    async def score(self, i: int, text: str, kwargs: dict, n: int) -> float | None:
        parsed = parse_response(text)
        if parsed.answer_problem is not None:
            return UNSCORABLE  # no one answer to check the reasoning against (two answer blocks, text after it)
        if not (parsed.reasoning or "").strip() or not clean_answer(parsed.answer):
            return 0.0
        ref = reference_text(self._col(kwargs, "answer", n)[i])
        if (ref is not None and not is_closed_question(answer=ref) and bare_yes_no(parsed.answer)
                and not exact_match(parsed.answer, ref)):
            return 0.0
        question = self._col(kwargs, "question", n)[i] or ""
        kw = {"check": self.check} if self.check != "paper" else {}
        v = await self.judge.consistency(question, parsed.reasoning, parsed.answer, **kw)
        return (self.r_cdr if v.value else 0.0) if v.scored else UNSCORABLE


_YES_NO_WORDS = {"yes", "no", "yeah", "yep", "nope", "true", "false", "correct", "incorrect", "affirmative",
                 "negative", "y", "n"}


def bare_yes_no(answer: str | None) -> bool:
    """Is the answer only a yes/no word (any case, punctuation, repeats: "Yes.", "NO!", "yes, yes")?"""
    words = normalize_answer(answer).split()
    return bool(words) and all(w in _YES_NO_WORDS for w in words)


@REWARDS.register("medix_llm")
def make_medix_llm(*, judge: Any = "reference", judge_options: dict | None = None,
                   check: str = "medix") -> MedixLLMReward:
    """MediX-R1 R_llm with ``judge``; ``check`` "medix" (MediX-R1's compact YES/NO prompt, the
    default) or "strict" (medrl's strict prompt with the question; see :class:`MedixLLMReward`)."""
    cls = MedixLLMStrictReward if check == "strict" else MedixLLMReward
    return cls("medix_llm", judge, judge_options, check=check)


document_options(make_medix_llm, judge_options=JUDGE_OPTIONS_HELP,
                 check="the judge's prompt: medix (MediX-R1's compact YES/NO prompt, the paper's) or strict (medrl's "
                       "strict prompt with the question; only then does the trainer's correct column use it)")


make_medix_llm.uses_correctness = True


@REWARDS.register("mrpo_process")
def make_mrpo_process(*, judge: Any = "reference", judge_options: dict | None = None,
                      step_prompt: str = "paper", splitter: str = "medrl") -> MRPOProcessReward:
    """MRPO mean step reward with ``judge``; ``step_prompt`` "paper" (MRPO App. H.2, default) or
    "hardened"; ``splitter`` "medrl" (default) or "released" (MRPO's released step splitter;
    see :class:`MRPOProcessReward`)."""
    return MRPOProcessReward("mrpo_process", judge, judge_options, step_prompt, splitter=splitter)


document_options(make_mrpo_process, judge_options=JUDGE_OPTIONS_HELP,
                 splitter="how a completion is cut into steps: medrl (medrl's splitter) or released (the step "
                          "splitter of MRPO's released code)",
                 step_prompt="the judge's rules for rating steps: paper (MRPO App. H.2's rules only) or hardened "
                             "(adds rules against gaming; medrl.judges.prompts.STEP_PROMPTS)")


# What the training-cost estimate (medrl.train.cost_estimate) and the data checks read from the
# registry: the judge task a reward asks once per rollout, and whether its judge reads the
# record's gold reasoning.
make_mrpo_process.judge_task = "verify_steps"
make_mrpo_process.reads_gold_reasoning = True


@REWARDS.register("capo_consistency")
def make_capo_consistency(*, judge: Any = "reference", judge_options: dict | None = None,
                          r_cdr: float = 0.1, check: str = "paper") -> CAPOConsistencyReward:
    """CAPO R_CDR with ``judge``; ``check`` "paper" (CAPO Table 9's review, the default) or "strict"
    (two added criteria; see :class:`CAPOConsistencyReward`)."""
    return CAPOConsistencyReward("capo_consistency", judge, judge_options, r_cdr, check=check)


document_options(make_capo_consistency, judge_options=JUDGE_OPTIONS_HELP,
                 r_cdr="CAPO Eq. 1: R_CDR when the judge finds the reasoning leads to the answer",
                 check="the judge's review: paper (CAPO Table 9's consistency review, as stated) or strict (adds that a "
                       "reasoning reaching no conclusion is inconsistent and that medical correctness is not judged)")


make_capo_consistency.judge_task = "consistency"
