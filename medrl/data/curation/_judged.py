"""Shared loop of the judge-driven curation tools: chunks of records, concurrent judge calls,
one log row per record appended as soon as its chunk finishes."""

from __future__ import annotations

from typing import Awaitable, Callable, Sequence

from medrl.data.curation.resume import ResultLog, progress
from medrl.data.record import VQARecord
from medrl.types import Verdict


def run_judged(
    records: Sequence[VQARecord],
    call: Callable[[VQARecord], Awaitable[Verdict]],
    to_row: Callable[[VQARecord, Verdict], dict],
    log: ResultLog,
    *,
    desc: str,
    concurrency: int = 16,
    show_progress: bool = True,
) -> int:
    """Call the judge for records not yet in ``log``; returns how many were already done."""
    from medrl.judges.base import gather_bounded, run_sync

    todo = [r for r in records if r.id not in log]
    done_before = len(records) - len(todo)
    step = max(1, concurrency)
    with progress(len(records), done_before, desc, show_progress) as bar:
        for start in range(0, len(todo), step):
            chunk = todo[start:start + step]
            verdicts = run_sync(gather_bounded([call(r) for r in chunk], concurrency))
            for rec, v in zip(chunk, verdicts):
                log.append(to_row(rec, v))
            bar.update(len(chunk))
    return done_before
