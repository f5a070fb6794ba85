"""ARMed VQA refinement through a judge (ARMed, arXiv 2508.12957, App. "VQA Refinement").

An auditor sees only the question and the answer and returns {status: consistent | needs_fix |
drop, new_q, new_a, notes} (the judge's ``audit_vqa``). ``consistent`` keeps the record,
``needs_fix`` replaces the question by ``new_q`` (the answer is kept: the paper rewrites
questions "while preserving" the answer; ``allow_answer_change=True`` also takes ``new_a``),
``drop`` removes it. Every verdict goes to an audit log (JSONL, one row per record with the
original and new text, the judge's notes and raw reply), which also makes the run resumable.

Unscored verdicts (judge failure) and malformed ones (unknown status, ``needs_fix`` without a
new question) are counted and never treated as "consistent": by default the record is kept
unchanged and marked ``extras["refine_status"] = "unscored"``; ``on_unscored="drop"`` drops it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Sequence

from medrl.data.curation._judged import run_judged
from medrl.data.curation.resume import ResultLog
from medrl.data.record import VQARecord, is_open_ended_answer
from medrl.types import Verdict

STATUSES = ("consistent", "needs_fix", "drop")


def _row(rec: VQARecord, v: Verdict) -> dict:
    row = {"id": rec.id, "question": rec.question, "answer": rec.answer, "answer_type": rec.answer_type,
           "status": "unscored", "new_q": None, "new_a": None, "notes": "", "raw": v.raw, "error": v.error}
    if not v.scored:
        return row
    val = v.value if isinstance(v.value, dict) else {}
    status = str(val.get("status", "")).strip().lower()
    new_q = (val.get("new_q") or "").strip() or None
    if status not in STATUSES:
        row["error"] = f"malformed audit verdict: status {val.get('status')!r}"
        return row
    if status == "needs_fix" and not new_q:
        row["error"] = "malformed audit verdict: needs_fix without new_q"
        return row
    row.update(status=status, new_q=new_q, new_a=(str(val.get("new_a") or "").strip() or None),
               notes=str(val.get("notes") or ""))
    return row


def refine_vqa(
    records: Sequence[VQARecord],
    judge,
    *,
    audit_log: str | os.PathLike | None = None,
    allow_answer_change: bool = False,
    on_unscored: str = "keep",
    concurrency: int = 16,
    show_progress: bool = True,
) -> tuple[list[VQARecord], dict]:
    """Audit every record; returns (refined records, counts per status plus ``resumed``)."""
    if on_unscored not in ("keep", "drop"):
        raise ValueError("on_unscored must be 'keep' or 'drop'")
    log = ResultLog(audit_log)
    resumed = run_judged(
        records, lambda r: judge.audit_vqa(r.question, r.answer, answer_type=r.answer_type), _row, log,
        desc="vqa refinement", concurrency=concurrency, show_progress=show_progress,
    )
    out: list[VQARecord] = []
    counts = {s: 0 for s in (*STATUSES, "unscored")}
    for rec in records:
        row = log.done[rec.id]
        status = row["status"]
        counts[status] += 1
        if status == "drop" or (status == "unscored" and on_unscored == "drop"):
            continue
        extras = {**rec.extras, "refine_status": status}
        if status == "needs_fix":
            extras["original_question"] = rec.question
            new = replace(rec, question=row["new_q"], extras=extras)
            if allow_answer_change and row.get("new_a"):
                new = replace(new, answer=row["new_a"], open_ended=is_open_ended_answer(row["new_a"]),
                              extras={**extras, "original_answer": rec.answer})
            out.append(new)
        else:
            out.append(replace(rec, extras=extras))
    counts["resumed"] = resumed
    counts["kept"] = len(out)
    return out, counts
