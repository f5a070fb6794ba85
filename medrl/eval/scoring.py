"""Score saved outputs: judged accuracy, MediX-R1 rubric, step verification, HSS and overlap metrics.

Protocol (MediX-R1 003_d5d6a0d73a50ab79.txt, Sec. 3 and App. A.2-A.3; MRPO
000_20b05565d28598f4.txt, Sec. 5.1 and App. B.2):

- The judge sees only the final answer, never the reasoning: the ``<answer>`` block when there
  is one, otherwise the text after the last ``</think>``, otherwise the whole output
  (:func:`prediction_text`).
- Judged accuracy is the judge's binary score (``grade(..., rubric="binary")``, 0/1; MediX-R1
  App. A.2, MRPO App. H.1); long-form outputs can also get the 0-5 rubric score
  (``rubric="report"``, MediX-R1 App. A.3).
- An output with no answer text (empty, or a single character after stripping '.') is scored
  0 without a judge call, the MediX-R1 R_llm guard (Sec. 2.3): it failed to answer, it is not
  unscorable.
- A judge verdict that is not scored (outage, unparseable reply) leaves that score ``None``: the
  output is excluded from that metric and counted, never taken as 0 or 1.
- Step verification (MRPO Eq. 3, Sec. 3) rates every reasoning step of an output in one call;
  its verdicts feed :mod:`medrl.eval.analysis` (FFP/FAR).
- Text metrics: ROUGE-1, BLEU-1, BERTScore F1, embedding cosine and HSS (ARMed
  001_46ab1c0cc2c66f17.txt Eq. 15) via :func:`medrl.rewards.hss.hss_batch`.

Because the scores depend only on the saved rows, a run can be re-scored with another judge
without regenerating (cross-judge evaluation, MRPO App. B.2).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from medrl.judges.base import gather_bounded, run_sync
from medrl.parsing import completion_steps, parse_response

RUBRICS = ("binary", "report")
TEXT_METRICS = ("rouge1", "bleu1", "bertscore", "cosine", "hss")
#: Every score key a scored row may carry, in report order.
SCORE_KEYS = ("judge_binary", "judge_report") + TEXT_METRICS

_CLOSE_THINK = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)


def prediction_text(output: str) -> str:
    """The part of an output the judge may see (MediX-R1 Sec. 3: chains of thought stripped).

    The ``<answer>`` block if present; else the text after the last ``</think>``; else the
    whole output. Always stripped.
    """
    parsed = parse_response(output or "")
    if parsed.answer is not None:
        return parsed.answer.strip()
    tail = _CLOSE_THINK.split(output or "")
    return tail[-1].strip()


def is_empty_answer(prediction: str) -> bool:
    """MediX-R1 R_llm guard (003_d5d6a0d73a50ab79.txt, Sec. 2.3): after stripping '.' and spaces,
    an empty or one-character answer is wrong without asking the judge."""
    return len(prediction.replace(".", "").strip()) <= 1


def base_row(record: Any, dataset: str, domain: str, output: str) -> dict:
    """Everything a later scoring or analysis needs about one output, without the data files."""
    rid = str(record.id)
    evidence = record.evidence() if hasattr(record, "evidence") else None
    return {
        "key": f"{dataset}:{rid}",
        "dataset": dataset,
        "domain": domain,
        "record_id": rid,
        "question": record.question,
        "reference": record.answer,
        "answer_type": getattr(record, "answer_type", None),
        "images": list(getattr(record, "images", []) or []),
        "gold_reasoning": getattr(record, "gold_reasoning", None),
        "evidence": evidence,
        "output": output,
    }


def score_rows(
    rows: Sequence[dict],
    judge: Any,
    *,
    rubrics: Sequence[str] = ("binary",),
    verify_steps: bool = True,
    text_metrics: bool = True,
    embedding_model: str | None = None,
    concurrency: int = 16,
) -> list[dict]:
    """Score base rows (see :func:`base_row`); returns new dicts with ``answer``,
    ``prediction``, ``well_formed``, ``scores``, ``judge``, ``steps`` and ``step_verdicts``.

    ``judge`` may be None when no judge task is wanted (``rubrics=()`` and no step
    verification); judge tasks run concurrently (at most ``concurrency`` at once).
    """
    for r in rubrics:
        if r not in RUBRICS:
            raise ValueError(f"unknown rubric {r!r}; choose from {RUBRICS}")
    if judge is None and (rubrics or verify_steps):
        raise ValueError("a judge is needed for rubric scores and step verification")
    out = []
    for row in rows:
        parsed = parse_response(row["output"] or "")
        pred = prediction_text(row["output"])
        steps = completion_steps(row["output"] or "") if verify_steps else []
        out.append({
            **row,
            "answer": parsed.answer,
            "prediction": pred,
            "well_formed": parsed.well_formed,
            "scores": {},
            "judge": {"name": getattr(judge, "name", None)} if judge is not None else {},
            "steps": [{"text": s.text, "start": s.start, "end": s.end} for s in steps],
            "step_verdicts": None,
        })
    if judge is not None:
        run_sync(_judge_all(out, judge, list(rubrics), verify_steps, concurrency))
    if text_metrics:
        from medrl.rewards.hss import hss_batch

        preds = [r["prediction"] for r in out]
        refs = [r["reference"] for r in out]
        metrics = hss_batch(preds, refs, model=embedding_model) if preds else []
        for r, m in zip(out, metrics):
            for k in TEXT_METRICS:
                v = m.get(k)
                r["scores"][k] = None if v is None else float(v)
    return out


async def _judge_all(rows: list[dict], judge: Any, rubrics: list[str], verify: bool, limit: int) -> None:
    tasks = []
    for r in rows:
        for rubric in rubrics:
            tasks.append(_grade(r, judge, rubric))
        if verify:
            tasks.append(_verify(r, judge))
    await gather_bounded(tasks, limit)


async def _grade(row: dict, judge: Any, rubric: str) -> None:
    key = f"judge_{rubric}"
    if is_empty_answer(row["prediction"]):
        row["scores"][key] = 0.0
        row["judge"][f"{rubric}_raw"] = ""
        row["judge"][f"{rubric}_note"] = "empty answer: scored 0 without a judge call"
        return
    v = await judge.grade(row["question"], row["reference"], row["prediction"], rubric=rubric)
    row["judge"][f"{rubric}_raw"] = v.raw
    if v.scored:
        row["scores"][key] = float(v.value)
    else:
        row["scores"][key] = None
        row["judge"][f"{rubric}_error"] = v.error or "unscored"


async def _verify(row: dict, judge: Any) -> None:
    steps = [s["text"] for s in row["steps"]]
    if not steps:
        row["step_verdicts"] = []  # no reasoning steps: nothing to verify (counted as "no steps")
        return
    v = await judge.verify_steps(
        row["question"], row["reference"], steps,
        gold_reasoning=row.get("gold_reasoning"), evidence=row.get("evidence"),
    )
    row["judge"]["steps_raw"] = v.raw
    if v.scored and isinstance(v.value, list) and len(v.value) == len(steps):
        row["step_verdicts"] = [
            {"gold_alignment": int(sv.gold_alignment), "answer_contribution": int(sv.answer_contribution),
             "reason": getattr(sv, "reason", "")}
            for sv in v.value
        ]
    else:
        row["step_verdicts"] = None
        row["judge"]["steps_error"] = v.error or f"expected {len(steps)} step verdicts"


def step_valid_flags(row: dict) -> list[bool] | None:
    """Per-step validity of a scored row (MRPO Eq. 3: valid if either criterion is 1), or None
    when the steps were not verified (or the verdict was unscored)."""
    sv = row.get("step_verdicts")
    if sv is None:
        return None
    return [bool(v["gold_alignment"] or v["answer_contribution"]) for v in sv]


def summarize_scores(rows: Sequence[dict], *, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> dict:
    """Per-dataset means with bootstrap CIs, and macro averages (in-domain, out-of-domain, all).

    MediX-R1 Sec. 3 "Scoring": dataset-level means and macro averages across benchmarks; MRPO
    Table 2 reports per-benchmark accuracy and their average (AVG). Unscored values (None) are
    left out of a metric and counted under ``unscored``. Returns::

        {"datasets": {name: {"n", "domain", "well_formed", "metrics": {key: {mean, low, high, n,
                      unscored}}, "steps": {...}}},
         "macro": {"in": {key: {...}}, "out": {...}, "all": {...}}}
    """
    from medrl.eval.stats import macro_mean_ci, mean_ci

    by_ds: dict[str, list[dict]] = {}
    for r in rows:
        by_ds.setdefault(r["dataset"], []).append(r)
    datasets: dict[str, dict] = {}
    for name, rs in by_ds.items():
        metrics = {}
        for key in SCORE_KEYS:
            present = [r for r in rs if key in r.get("scores", {})]
            if not present:
                continue
            vals = [r["scores"][key] for r in present if r["scores"][key] is not None]
            ci = mean_ci(vals, n_boot=n_boot, alpha=alpha, seed=seed)
            ci["unscored"] = len(present) - len(vals)
            metrics[key] = ci
        verified = [r for r in rs if r.get("step_verdicts") is not None]
        n_steps = [len(r.get("steps") or []) for r in rs]
        valid = [v for r in verified for v in (step_valid_flags(r) or [])]
        datasets[name] = {
            "n": len(rs),
            "domain": rs[0].get("domain", "in"),
            "well_formed": sum(1 for r in rs if r.get("well_formed")) / len(rs),
            "metrics": metrics,
            "steps": {
                "mean_steps": sum(n_steps) / len(rs),
                "verified": len(verified),
                "unverified": sum(1 for r in rs if r.get("step_verdicts") is None),
                "valid_step_share": (sum(valid) / len(valid)) if valid else None,
            },
        }
    macro: dict[str, dict] = {}
    for scope in ("in", "out", "all"):
        names = [n for n, d in datasets.items() if scope == "all" or d["domain"] == scope]
        if not names:
            continue
        macro[scope] = {}
        for key in SCORE_KEYS:
            groups = {
                n: [r["scores"][key] for r in by_ds[n] if r.get("scores", {}).get(key) is not None]
                for n in names if key in datasets[n]["metrics"]
            }
            if groups:
                m = macro_mean_ci(groups, n_boot=n_boot, alpha=alpha, seed=seed)
                m["datasets"] = sorted(groups)
                macro[scope][key] = m
    return {"datasets": datasets, "macro": macro}
