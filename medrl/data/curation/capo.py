"""CAPO mixed-difficulty filter (CAPO, Sec. 3.1 "Med-Zero-17K").

"Sampling 10 responses from the base model with a temperature of 0.9, then excluding QA pairs
answered entirely correct or entirely incorrect": a question is kept when 0 < correct < n.

Here ``sample(record, n, temperature) -> list[str]`` draws the responses (e.g. a wrapper around
:func:`medrl.models.generate`) and ``check`` decides correctness: a judge, or a callable
``check(record, response) -> bool | None``. With a judge, correctness is the very decision
training uses (:func:`medrl.rewards.correctness.correctness_column` with ``correctness`` =
``algorithm.correctness``, default ``"auto"``): the parsed ``<answer>`` only (a response
without one is wrong, as it earns nothing in training), the shared answer guard, a normalised
exact match, then exact match for closed questions and the judge (with the record's image) for
open ones - so a question kept as "mixed" is mixed in training too. Unscored checks (judge
outage, None) are counted and never count as correct or wrong; a question is kept only when at
least one response is known correct and at least one known wrong.

Difficulty: CAPO's own levels 1-3 are clinical-complexity categories (perception / feature
assessment / clinical reasoning) assigned separately. We record the empirical ``pass_rate`` and
a heuristic level from it: pass rate >= 2/3 -> 1 (easy), >= 1/3 -> 2, else 3 (hard).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Sequence

from medrl.data.curation.resume import ResultLog, progress
from medrl.data.record import VQARecord
from medrl.types import Verdict

Sampler = Callable[[VQARecord, int, float], Sequence[str]]


def difficulty_level(pass_rate: float) -> int:
    """Heuristic level from the pass rate: 1 easy (>= 2/3), 2 medium (>= 1/3), 3 hard."""
    return 1 if pass_rate >= 2 / 3 else 2 if pass_rate >= 1 / 3 else 3


def _check_all(record: VQARecord, responses: Sequence[str], check, concurrency: int,
               correctness: str = "auto") -> list[bool | None]:
    if hasattr(check, "answer_correct"):
        from medrl.judges.base import run_sync
        from medrl.answers.completion import parse_response
        from medrl.rewards.correctness import correctness_column_async, is_closed_question

        n = len(responses)

        async def decide():  # the judge bounds its own concurrency; chunks keep memory flat
            out: list[bool | None] = []
            for start in range(0, n, max(1, concurrency)):
                chunk = responses[start:start + max(1, concurrency)]
                out += await correctness_column_async(
                    [parse_response(r).answer for r in chunk], [record.answer] * len(chunk),
                    questions=[record.question] * len(chunk), closed=[is_closed_question(record)] * len(chunk),
                    images=[record.image] * len(chunk), mode=correctness, judge=check)
            return out

        return run_sync(decide())
    out = []
    for r in responses:
        v = check(record, r)
        if isinstance(v, Verdict):
            v = bool(v.value) if v.scored else None
        out.append(None if v is None else bool(v))
    return out


def score_record(record: VQARecord, sample: Sampler, check, n: int = 10, temperature: float = 0.9,
                 concurrency: int = 16, correctness: str = "auto") -> dict:
    """One result row: counts of correct / wrong / unscored among ``n`` samples, keep, difficulty."""
    responses = list(sample(record, n, temperature))
    if len(responses) != n:
        raise ValueError(f"sampler returned {len(responses)} responses for record {record.id!r}, expected {n}")
    results = _check_all(record, responses, check, concurrency, correctness)
    correct = sum(1 for v in results if v is True)
    wrong = sum(1 for v in results if v is False)
    unscored = sum(1 for v in results if v is None)
    scored = correct + wrong
    pass_rate = correct / scored if scored else None
    return {
        "id": record.id, "n": n, "temperature": temperature, "correct": correct, "wrong": wrong,
        "unscored": unscored, "pass_rate": pass_rate, "keep": correct > 0 and wrong > 0,
        "difficulty": difficulty_level(pass_rate) if pass_rate is not None else None,
    }


def mixed_difficulty_filter(
    records: Sequence[VQARecord],
    sample: Sampler,
    check,
    *,
    n: int = 10,
    temperature: float = 0.9,
    results_path: str | os.PathLike | None = None,
    concurrency: int = 16,
    show_progress: bool = True,
    correctness: str = "auto",
) -> tuple[list[VQARecord], dict]:
    """Run the filter; returns (kept records with ``extras["capo"]`` = their row, summary).

    ``results_path``: JSONL log of one row per record; records already there are not sampled
    again (resume). ``correctness``: the training run's ``algorithm.correctness`` (auto | exact |
    judge | embedding) when ``check`` is a judge. The summary counts total, kept, all_correct, all_wrong, unscored_samples and
    undecided (records whose scored samples are all one way but some samples are unscored).
    """
    log = ResultLog(results_path)
    todo = [r for r in records if r.id not in log]
    with progress(len(records), len(records) - len(todo), "capo filter", show_progress) as bar:
        for rec in todo:
            log.append(score_record(rec, sample, check, n, temperature, concurrency, correctness))
            bar.update(1)
    kept, summary = [], {"total": len(records), "kept": 0, "all_correct": 0, "all_wrong": 0,
                         "undecided": 0, "unscored_samples": 0, "resumed": len(records) - len(todo)}
    for rec in records:
        row = log.done[rec.id]
        summary["unscored_samples"] += row["unscored"]
        if row["keep"]:
            kept.append(replace(rec, extras={**rec.extras, "capo": row}))
        elif row["unscored"]:
            summary["undecided"] += 1
        elif row["correct"] == row["n"]:
            summary["all_correct"] += 1
        else:
            summary["all_wrong"] += 1
    summary["kept"] = len(kept)
    return kept, summary
