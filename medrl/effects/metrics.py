"""Evaluation of one policy on held-out phantoms, scored exactly by the oracle.

Per output (greedy generation): the answer's correctness
(:func:`medrl.data.sources.phantom.oracle_answer_correct`), every reasoning step's oracle
verdict (:func:`~medrl.data.sources.phantom.oracle_step_verdicts`; valid = gold alignment and
answer contribution, MRPO Eq. 3) and from them the first failure point and failure accumulation
rate (:mod:`medrl.eval.analysis`, MRPO Sec. 3 and Eq. 1), reasoning-answer consistency
(:func:`~medrl.data.sources.phantom.oracle_consistent`, CAPO's R_CDR criterion), key-step coverage
(StepGRPO's k = matched / |v|, :func:`medrl.rewards.stepgrpo.key_step_ratio`, soft matching) and
the modality tag written before ``<think>`` (MediX-R1 Sec. 2.2).

The summary holds each share with its Wilson interval, the FFP stage shares (Early/Mid/Late
among outputs with a failure, MRPO Sec. 5.3) and, with ``corrupted=True``, the accuracy on the
same questions with diffusion-corrupted images (CAPO's reliance on the image).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from medrl.effects.stats import proportion_ci


def modality_tag_of(text: str) -> str | None:
    """The tag a ``modality_think_answer`` completion writes before ``<think>`` (None if none)."""
    head = (text or "").split("<think>", 1)[0].strip()
    return head.split()[0].strip().upper() if head else None


def score_output(record: Any, text: str) -> dict:
    """Oracle scores of one completion for one phantom record."""
    from medrl.data.sources.phantom import oracle_answer_correct, oracle_consistent, oracle_step_verdicts
    from medrl.eval.analysis import failure_accumulation_rate, first_failure_point
    from medrl.answers.completion import parse_response, split_steps
    from medrl.rewards.stepgrpo import key_step_ratio

    p = parse_response(text)
    steps = [s.text for s in split_steps(p.reasoning)] if p.reasoning else []
    valid = [bool(v.valid) for v in oracle_step_verdicts(record, steps)] if steps else []
    correct = oracle_answer_correct(record, p.answer) if p.answer is not None else False
    forms = record.extras.get("key_step_forms") or record.key_steps or []
    try:
        coverage = key_step_ratio(p.reasoning, forms, mode="soft") if forms else None
    except ValueError:
        coverage = None
    tag = modality_tag_of(text)
    return {
        "id": record.id, "question_type": record.question_type, "answer": p.answer,
        "well_formed": bool(p.well_formed), "correct": bool(correct), "steps": len(steps), "valid": valid,
        "ffp": first_failure_point(valid) if valid else None,
        "far": failure_accumulation_rate(valid) if valid else None,
        "consistent": bool(p.answer is not None and p.reasoning and oracle_consistent(p.reasoning, p.answer)),
        "key_step_coverage": coverage,
        "tag": tag, "tag_correct": tag is not None and tag == (record.modality_tag or "").upper(),
    }


def summarize(rows: Sequence[dict]) -> dict:
    """Shares (with Wilson intervals), FFP stage shares and means over scored outputs."""
    from medrl.eval.analysis import stage_shares

    n = len(rows)

    def share(key):
        k = sum(1 for r in rows if r.get(key))
        return proportion_ci(k, n)

    st = stage_shares([r["ffp"] for r in rows if r["steps"]])
    fars = [r["far"] for r in rows if r["far"] is not None]
    cov = [r["key_step_coverage"] for r in rows if r["key_step_coverage"] is not None]
    by_q: dict[str, list[bool]] = {}
    for r in rows:
        by_q.setdefault(r.get("question_type") or "?", []).append(r["correct"])
    wrong_ffps = [r["ffp"] for r in rows if r["steps"] and not r["correct"]]
    st_wrong = stage_shares(wrong_ffps)
    return {
        "n": n,
        "accuracy": share("correct"), "format": share("well_formed"), "consistency": share("consistent"),
        "tag_accuracy": share("tag_correct"),
        "early_share": st["shares"]["early"], "mid_share": st["shares"]["mid"], "late_share": st["shares"]["late"],
        "stages": st, "stages_wrong": st_wrong,
        "far": sum(fars) / len(fars) if fars else None, "far_n": len(fars),
        "key_step_coverage": sum(cov) / len(cov) if cov else None,
        "accuracy_by_type": {q: proportion_ci(sum(v), len(v)) for q, v in sorted(by_q.items())},
    }


def corrupted_records(records: Sequence[Any], folder: Path, *, t: int = 500, seed: int = 0) -> list:
    """Copies of ``records`` whose image is diffusion-corrupted (DDPM step ``t``,
    :func:`medrl.data.corruption.corrupt_image`, CAPO's perturbation), written once to ``folder``."""
    import dataclasses

    from PIL import Image

    from medrl.data.corruption import corrupt_image

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, r in enumerate(records):
        path = folder / f"{r.id}-t{t}.png"
        if not path.is_file():
            with Image.open(r.images[0]) as img:
                corrupt_image(img.convert("L"), "diffusion", t=t, seed=seed + i).save(path)
        out.append(dataclasses.replace(r, images=[str(path)]))
    return out


def evaluate_model(model_path: str | Path, records: Sequence[Any], out_dir: str | Path, *,
                   max_new_tokens: int = 64, batch_size: int = 32, prompt_style: str = "think_answer",
                   corrupted: Sequence[Any] | None = None) -> dict:
    """Generate greedily on ``records`` (and ``corrupted``), score with the oracle; writes
    ``outputs.jsonl`` and ``summary.json`` under ``out_dir`` and returns the summary. A finished
    folder (its ``summary.json``) is read back instead of generating again."""
    from medrl.models import generate, load_policy

    out = Path(out_dir)
    done = out / "summary.json"
    if done.is_file():
        return json.loads(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    import torch

    # on a GPU machine the greedy evaluation runs there too (the gpu profile's held-out set is large)
    policy, processor = load_policy(str(model_path), device_map="cuda" if torch.cuda.is_available() else None)
    texts = generate(policy, processor, list(records), max_new_tokens=max_new_tokens, batch_size=batch_size,
                     prompt_style=prompt_style, progress=False)
    rows = [{**score_output(r, t), "text": t} for r, t in zip(records, texts)]
    summary = summarize(rows)
    if corrupted is not None:
        ctexts = generate(policy, processor, list(corrupted), max_new_tokens=max_new_tokens, batch_size=batch_size,
                          prompt_style=prompt_style, progress=False)
        crow = [score_output(r, t) for r, t in zip(corrupted, ctexts)]
        c = summarize(crow)
        summary["accuracy_corrupted"] = c["accuracy"]
        a, b = summary["accuracy"]["p"], c["accuracy"]["p"]
        summary["corruption_drop"] = None if a is None or b is None else a - b
        for r, cr in zip(rows, crow):
            r["correct_corrupted"] = cr["correct"]
    with (out / "outputs.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    done.write_text(json.dumps(summary, indent=2))
    return summary


__all__ = ["corrupted_records", "evaluate_model", "modality_tag_of", "score_output", "summarize"]
