"""The judge protocol: the six tasks every method asks of a judge, each returning a Verdict.

Papers: MRPO (Sec. 4.1 and App. C.3) judges every step of a rollout in
one call; CAPO (Eq. 1) asks whether the reasoning leads to the answer;
MediX-R1 (Sec. 2.3 and 3) asks a strict YES/NO for answer correctness
and grades evaluations (binary JSON, 0-5 rubric); ARMed (App.) audits
VQA pairs; StepGRPO (Sec. 3.2) extracts key steps.

Every method is ``async`` and returns a :class:`medrl.types.Verdict`; when the judge cannot give a
trustworthy verdict it returns ``Verdict.unscored(...)`` - never a pass by default. Any object
with these methods is a judge (structural typing); :class:`JudgeStats` is the accounting every
judge keeps. Use :func:`run_sync` to call a judge from synchronous code.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import threading
from pathlib import Path
from dataclasses import asdict, dataclass
from typing import Any, Awaitable, Iterable, Protocol, Sequence, TypeVar, runtime_checkable

from medrl.common.registry import Registry
from medrl.types import Verdict

T = TypeVar("T")

#: Judge backends by name: ``JUDGES.get("reference")(...)``.
JUDGES = Registry("judge", modules=["medrl.judges.reference", "medrl.judges.openai_judge"])

RUBRICS = ("binary", "report")


class JudgeAuthError(RuntimeError):
    """HTTP 401/403 from a judge endpoint: the run stops at once (every later request would fail
    the same way). The message names the key's environment variable, never the key."""


def source_version(module: Any) -> str:
    """A short digest of ``module``'s source file: changes whenever its prompts or rules change
    (stored as the judge's ``prompt_version`` in eval folders)."""
    try:
        data = Path(module.__file__).read_bytes()
    except (OSError, AttributeError, TypeError):
        return "unknown"
    return hashlib.sha256(data).hexdigest()[:12]


def judge_identity(judge: Any) -> dict | None:
    """What decides a judge's verdicts (spec, endpoint, model, prompt version, image setting),
    as stored in an eval folder's ``config.json``; ``None`` for no judge."""
    if judge is None:
        return None
    ident = getattr(judge, "identity", None)
    if callable(ident):
        return dict(ident())
    return {"spec": getattr(judge, "name", type(judge).__name__), "endpoint": None, "model": None,
            "prompt_version": source_version(sys.modules.get(type(judge).__module__)),
            "images": bool(getattr(judge, "images", False))}


def require_image_support(judge: Any, *, probe: bool = True) -> None:
    """Fail at start, not per call, when a run asks for judge images the judge cannot take.

    Raises ``ValueError`` when ``judge`` does not send images (the reference judge reads text
    only, by design; an OpenAI judge built without ``images=True``); with ``probe`` an OpenAI
    judge sends one tiny image request and a refusal by the endpoint is raised here.
    """
    if not getattr(judge, "supports_images", False):
        raise ValueError(
            f"judge {getattr(judge, 'name', judge)!r} cannot take images (it reads text only); "
            "judge images need an 'openai:<model>' judge on a vision-language endpoint, or turn them off")
    if not getattr(judge, "images", False):
        raise ValueError(f"judge {getattr(judge, 'name', judge)!r} was built without images=True but the run "
                         "asks for judge images; build it with images=True")
    if probe and hasattr(judge, "check_images"):
        judge.check_images()


@dataclass
class JudgeStats:
    """Accounting kept by every judge; logged by the trainer and the evaluator."""

    calls: int = 0  # requests actually sent to the backend (cache misses, retries not counted)
    cache_hits: int = 0
    deduplicated: int = 0  # identical requests in flight merged into one
    retries: int = 0
    failures: int = 0  # requests that ended unscored
    input_tokens: int = 0  # tokens the endpoint reported (``usage``), retries included
    output_tokens: int = 0
    saved_input_tokens: int = 0  # what cache hits and merged in-flight duplicates would have cost
    saved_output_tokens: int = 0
    replayed: int = 0  # cache hits of replies this run paid for before a crash (their tokens count as spent)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@runtime_checkable
class Judge(Protocol):
    """What medrl asks of a judge. Implementations: reference (offline heuristic), openai."""

    name: str
    stats: JudgeStats
    #: whether this judge sends item images with answer, grade and step requests
    images: bool

    async def answer_correct(
        self, question: str, reference: str, prediction: str, *, image: Any = None, check: str = "strict"
    ) -> Verdict:
        """Is ``prediction`` a correct answer to ``question`` given the reference? value: bool.

        ``check`` (:data:`medrl.judges.prompts.ANSWER_CHECKS`): ``"strict"`` (this project's
        check), ``"paper"`` (MRPO App. H.1: a match or a good enough answer; the ``mrpo`` eval
        protocol asks it for every answer, without the answer guard in front) or ``"medix"``
        (MediX-R1's compact YES/NO on the two answers, no question; ``medix_llm``'s default).

        ``image`` (also on :meth:`verify_steps` and :meth:`grade`) is this item's image: a PIL
        image, a path, bytes, an HF image dict, a data:/http(s) URL, or a list of those. A judge
        with ``images`` on sends it (downscaled JPEG, MRPO App. H.1-H.2); otherwise it is ignored.
        """

    async def verify_steps(
        self,
        question: str,
        reference: str,
        steps: Sequence[str],
        *,
        gold_reasoning: str | None = None,
        evidence: dict | None = None,
        image: Any = None,
        step_prompt: str = "hardened",
    ) -> Verdict:
        """Rate every step at once (MRPO Eq. 3). value: list[StepVerdict], len == len(steps).

        ``step_prompt`` (:data:`medrl.judges.prompts.STEP_PROMPTS`): ``"paper"`` applies MRPO
        App. H.2's rules as stated, ``"hardened"`` adds this project's anti-gaming rules.

        ``gold_reasoning`` is the expert rationale when the record has one; otherwise
        ``evidence`` carries what the record does know (modality, organ/location, answer).
        """

    async def consistency(self, question: str, reasoning: str, answer: str, *, check: str = "paper") -> Verdict:
        """Does the reasoning lead to the answer, and does the answer match its conclusion? value: bool.
        ``check`` (:data:`medrl.judges.prompts.CONSISTENCY_CHECKS`): CAPO Table 9 as stated
        (``"paper"``) or with two added criteria (``"strict"``); callers pass it only when not
        ``"paper"``."""

    async def grade(
        self, question: str, reference: str, prediction: str, *, rubric: str = "binary", image: Any = None,
        rounds: int = 1, check: str = "paper",
    ) -> Verdict:
        """Evaluation score (MediX-R1 Sec. 3). value: 0.0/1.0 for "binary", 0-5 for "report".
        ``check`` (:data:`medrl.judges.prompts.GRADE_CHECKS`): the binary template, MediX-R1's
        released one (``"paper"``) or with a hedge/placeholder rule (``"strict"``); callers pass
        it only when not ``"paper"``.

        The judge sees only the final answer, never the reasoning. ``rounds`` > 1 asks again in
        the same conversation, each time asking it to re-evaluate, and combines the rounds
        (:func:`combine_rounds`); any unscored round leaves the item unscored.
        """

    async def audit_vqa(self, question: str, answer: str, *, answer_type: str | None = None) -> Verdict:
        """ARMed VQA refinement audit. value: {"status": consistent|needs_fix|drop, "new_q", "new_a", "notes"}."""

    async def extract_key_steps(self, question: str, answer: str, reasoning: str, *, style: str = "medrl") -> Verdict:
        """StepGRPO key steps: short core phrases from the reasoning. value: list[str]. ``style``
        (:data:`medrl.judges.prompts.KEY_STEP_STYLES`): medrl's spans or R1-VL's per-section
        phrases of at most three words."""


def combine_rounds(values: Sequence[float], rubric: str = "binary") -> float:
    """One grade from several evaluation rounds (MediX-R1's released ``eval/utils.py``: three
    rounds, each asking the judge to re-evaluate): the majority for a binary grade (1 when more
    than half of the rounds say 1; 2 of 3), the mean for the 0-5 report rubric."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("combine_rounds: no rounds")
    if rubric == "binary":
        return 1.0 if sum(v == 1.0 for v in vals) * 2 > len(vals) else 0.0
    if rubric == "report":
        return sum(vals) / len(vals)
    raise ValueError(f"rubric must be 'binary' or 'report', got {rubric!r}")


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
        try:
            async with sem:
                return await aw
        except asyncio.CancelledError:  # another awaitable failed: don't leave this one un-awaited
            if asyncio.iscoroutine(aw):
                aw.close()
            raise

    return await asyncio.gather(*(one(a) for a in awaitables))
