"""StepGRPO key-step extraction (StepGRPO, Sec. 3.2 "StepRAR").

Key steps are "the essential variables and equations that directly contribute to the final
solution", extracted from the gold reasoning by an LLM and cut down to "the core few words";
each is then "augment[ed] into multiple equivalent formats" so soft matching does not miss a
step written differently. Here the judge's ``extract_key_steps`` does the extraction and
:func:`medrl.answers.clinical.forms.equivalent_forms` (a rule-based heuristic on the shared lexicon)
the augmentation.

Records without gold reasoning get key steps from their reference evidence instead
(:func:`medrl.data.curation.evidence.evidence_key_steps`, no judge call) unless
``evidence_fallback=False``. Results are logged per record (resumable). Unscored extractions
(judge failure, empty list) are counted and leave ``key_steps`` unset - never a fake list.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Sequence

from medrl.data.curation._judged import run_judged
from medrl.data.curation.evidence import evidence_key_steps
from medrl.data.curation.resume import ResultLog
from medrl.answers.clinical.forms import equivalent_forms  # noqa: F401  (re-exported; shared with StepRAR)
from medrl.data.record import VQARecord
from medrl.rewards.stepgrpo import key_step_ratio
from medrl.types import Verdict

logger = logging.getLogger(__name__)


def _clean_steps(value) -> list[str] | None:
    if not isinstance(value, list):
        return None
    steps = []
    for s in value:
        s = str(s).strip()
        if s and s.lower() not in {x.lower() for x in steps}:
            steps.append(s)
    return steps or None


def _row(rec: VQARecord, v: Verdict) -> dict:
    steps = _clean_steps(v.value) if v.scored else None
    return {"id": rec.id, "source": "judge", "key_steps": steps, "scored": steps is not None,
            "raw": v.raw, "error": v.error if not v.scored else ("" if steps else "empty key-step list")}


def extract_key_steps(
    records: Sequence[VQARecord],
    judge,
    *,
    results_path: str | os.PathLike | None = None,
    augment: bool = True,
    evidence_fallback: bool = True,
    concurrency: int = 16,
    show_progress: bool = True,
    style: str = "medrl",
) -> tuple[list[VQARecord], dict]:
    """Fill ``key_steps`` (and ``extras["key_step_forms"]`` when ``augment``); ``style`` "r1vl"
    asks the judge for R1-VL's per-section phrases of at most three words
    (:func:`medrl.judges.prompts.extract_key_steps`; stage option ``style: r1vl``). Returns
    (records, counts: judged, from_evidence, unscored, skipped (no gold, no fallback), resumed,
    steps_not_in_reasoning: judge steps the default StepRAR matcher does not find in the gold
    reasoning they were extracted from - logged and listed per record)."""
    log = ResultLog(results_path)
    with_gold = [r for r in records if r.gold_reasoning]
    resumed = run_judged(
        with_gold, lambda r: judge.extract_key_steps(r.question, r.answer, r.gold_reasoning,
                                                     **({"style": style} if style != "medrl" else {})), _row, log,
        desc="key steps", concurrency=concurrency, show_progress=show_progress,
    )
    counts = {"judged": 0, "from_evidence": 0, "unscored": 0, "skipped": 0, "resumed": resumed,
              "steps_not_in_reasoning": 0}
    out = []
    for rec in records:
        if rec.gold_reasoning:
            row = log.done[rec.id]
            if not row["scored"]:
                counts["unscored"] += 1
                out.append(replace(rec, extras={**rec.extras, "key_steps_source": "unscored"}))
                continue
            steps, source = row["key_steps"], "judge"
            counts["judged"] += 1
        elif evidence_fallback:
            steps, source = evidence_key_steps(rec), "evidence"
            counts["from_evidence"] += 1
        else:
            counts["skipped"] += 1
            out.append(rec)
            continue
        extras = {**rec.extras, "key_steps_source": source}
        forms = [equivalent_forms(s) for s in steps]
        if augment:
            extras["key_step_forms"] = forms
        if source == "judge":  # a step StepRAR's default matcher cannot find in its own source
            missing = [s for s, f in zip(steps, forms) if key_step_ratio(rec.gold_reasoning, [f]) == 0.0]
            counts["steps_not_in_reasoning"] += len(missing)
            if missing:
                extras["key_steps_not_in_reasoning"] = missing
        out.append(replace(rec, key_steps=steps, extras=extras))
    if counts["steps_not_in_reasoning"]:
        logger.warning("key steps: %d judge-extracted step(s) are not found (soft matching) in the reasoning they "
                    "came from; StepRAR cannot reach k = 1 on those records (extras['key_steps_not_in_reasoning'])",
                    counts["steps_not_in_reasoning"])
    return out, counts
