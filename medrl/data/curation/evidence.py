"""Reference evidence for records without gold reasoning.

The step-wise methods need something to check steps against. When a record has no expert
rationale (no MedThink match), what the dataset itself annotates about the image - modality,
organ/location, organs detected in the image (SLAKE) - and the reference answer are the
evidence (:meth:`medrl.data.VQARecord.evidence`). Step judges receive it as ``evidence``;
StepGRPO's key-step reward can use :func:`evidence_key_steps` as its key steps.

A pure, instant transformation (no model or judge calls), so it needs no resume log.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from medrl.data.record import VQARecord


def evidence_key_steps(rec: VQARecord) -> list[str]:
    """Key steps from the record's evidence (a heuristic): the modality name, the organ /
    location, and the answer - the facts a sound reasoning about this record should state."""
    ev = rec.evidence()
    steps: list[str] = []
    for value in (ev.get("modality"), ev.get("organ"), ev.get("answer")):
        if value and str(value).strip() and str(value).strip().lower() not in {s.lower() for s in steps}:
            steps.append(str(value).strip())
    return steps


def add_evidence(records: Sequence[VQARecord], *, key_steps: bool = True, augment: bool = True) -> tuple[list[VQARecord], dict]:
    """Store ``extras["evidence"]`` on every record without gold reasoning and, with
    ``key_steps``, fill missing ``key_steps`` from :func:`evidence_key_steps` (marked
    ``extras["key_steps_source"] = "evidence"``; equivalent forms in ``extras["key_step_forms"]``
    when ``augment``). Records with gold reasoning are returned unchanged."""
    from medrl.answers.clinical.forms import equivalent_forms

    out, n_ev, n_ks = [], 0, 0
    for rec in records:
        if rec.gold_reasoning:
            out.append(rec)
            continue
        extras = {**rec.extras, "evidence": rec.evidence()}
        n_ev += 1
        new = replace(rec, extras=extras)
        if key_steps and not rec.key_steps:
            ks = evidence_key_steps(rec)
            extras.update(key_steps_source="evidence")
            if augment:
                extras["key_step_forms"] = [equivalent_forms(s) for s in ks]
            new = replace(rec, key_steps=ks, extras=extras)
            n_ks += 1
        out.append(new)
    return out, {"records": len(records), "with_gold": len(records) - n_ev, "evidence_added": n_ev, "key_steps_added": n_ks}
