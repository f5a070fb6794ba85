"""The judge protocol: the six tasks every method asks of a judge, each returning a Verdict.

Papers: MRPO (000_20b05565d28598f4.txt, Sec. 4.1 and App. C.3) judges every step of a rollout in
one call; CAPO (002_37d042df30c2f660.txt, Eq. 1) asks whether the reasoning leads to the answer;
MediX-R1 (003_d5d6a0d73a50ab79.txt, Sec. 2.3 and 3) asks a strict YES/NO for answer correctness
and grades evaluations (binary JSON, 0-5 rubric); ARMed (001_46ab1c0cc2c66f17.txt, App.) audits
VQA pairs; StepGRPO (004_e0b907c1e61319f8.txt, Sec. 3.2) extracts key steps.

Every method is ``async`` and returns a :class:`medrl.types.Verdict`; when the judge cannot give a
trustworthy verdict it returns ``Verdict.unscored(...)`` - never a pass by default. Any object
with these methods is a judge (structural typing); :class:`JudgeStats` is the accounting every
judge keeps. Use :func:`run_sync` to call a judge from synchronous code.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import asdict, dataclass
from typing import Any, Awaitable, Iterable, Protocol, Sequence, TypeVar, runtime_checkable

from medrl.registry import Registry
from medrl.types import Verdict

T = TypeVar("T")

#: Judge backends by name: ``JUDGES.get("reference")(...)``.
JUDGES = Registry("judge", modules=["medrl.judges.reference", "medrl.judges.openai_judge"])

RUBRICS = ("binary", "report")


@dataclass
class JudgeStats:
    """Accounting kept by every judge; logged by the trainer and the evaluator."""

    calls: int = 0  # requests actually sent to the backend (cache misses, retries not counted)
    cache_hits: int = 0
    deduplicated: int = 0  # identical requests in flight merged into one
    retries: int = 0
    failures: int = 0  # requests that ended unscored
    input_tokens: int = 0
    output_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@runtime_checkable
class Judge(Protocol):
    """What medrl asks of a judge. Implementations: reference (offline heuristic), openai."""

    name: str
    stats: JudgeStats

    async def answer_correct(
        self, question: str, reference: str, prediction: str, *, image: Any = None
    ) -> Verdict:
        """Is ``prediction`` a correct answer to ``question`` given the reference? value: bool."""

    async def verify_steps(
        self,
        question: str,
        reference: str,
        steps: Sequence[str],
        *,
        gold_reasoning: str | None = None,
        evidence: dict | None = None,
        image: Any = None,
    ) -> Verdict:
        """Rate every step at once (MRPO Eq. 3). value: list[StepVerdict], len == len(steps).

        ``gold_reasoning`` is the expert rationale when the record has one; otherwise
        ``evidence`` carries what the record does know (modality, organ/location, answer).
        """

    async def consistency(self, question: str, reasoning: str, answer: str) -> Verdict:
        """Does the reasoning lead to the answer, and does the answer match its conclusion? value: bool."""

    async def grade(
        self, question: str, reference: str, prediction: str, *, rubric: str = "binary"
    ) -> Verdict:
        """Evaluation score (MediX-R1 Sec. 3). value: 0.0/1.0 for "binary", 0-5 for "report".

        The judge sees only the final answer, never the reasoning.
        """

    async def audit_vqa(self, question: str, answer: str, *, answer_type: str | None = None) -> Verdict:
        """ARMed VQA refinement audit. value: {"status": consistent|needs_fix|drop, "new_q", "new_a", "notes"}."""

    async def extract_key_steps(self, question: str, answer: str, reasoning: str) -> Verdict:
        """StepGRPO key steps: short core phrases from the reasoning. value: list[str]."""


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run a coroutine from synchronous code, also when an event loop is already running
    (then it runs on a fresh loop in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaitable)  # type: ignore[arg-type]
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(awaitable)  # type: ignore[arg-type]
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def gather_bounded(awaitables: Iterable[Awaitable[T]], limit: int) -> list[T]:
    """``asyncio.gather`` with at most ``limit`` awaitables running at once, order kept."""
    sem = asyncio.Semaphore(max(1, limit))

    async def one(aw: Awaitable[T]) -> T:
        async with sem:
            return await aw

    return await asyncio.gather(*(one(a) for a in awaitables))
