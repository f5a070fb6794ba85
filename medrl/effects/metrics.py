"""Evaluation of one policy on held-out phantoms, scored exactly by the oracle, sampled and greedy.

Per output: the answer's correctness (:func:`medrl.judges.phantom_truth.oracle_answer_correct`),
every reasoning step's oracle verdict (:func:`~medrl.judges.phantom_truth.oracle_step_verdicts`;
valid = gold alignment and answer contribution, MRPO Eq. 3) and from them the first failure point
and failure accumulation rate (:mod:`medrl.eval.analysis`, MRPO Sec. 3 and Eq. 1),
reasoning-answer consistency (:func:`~medrl.judges.phantom_truth.oracle_consistent`, CAPO's R_CDR
criterion), key-step coverage (StepGRPO's k = matched / |v|, :func:`medrl.rewards.stepgrpo.key_step_ratio`,
soft matching) and the modality tag written before ``<think>`` (MediX-R1 Sec. 2.2).

Two decodings (:func:`evaluate_model`): greedy, one output per question; and sampled, k outputs
per question at the training temperature, drawn as TRL's GRPO rollouts are drawn
(:func:`rollout_sampling`: no top-k cut, top-p 1, the image token suppressed) from a fixed seed.
RL trains on samples, so the sampled outputs are where it acts: a model can answer nearly every
question right greedily and only half of its samples.

A summary (:func:`summarize`) holds each share with its Wilson interval, the FFP stage shares
(Early/Mid/Late among outputs with a failure, MRPO Sec. 5.3), early failures and failed outputs
per output (over all outputs), the same per question type, and, with ``corrupted``, the greedy
accuracy on the same questions with diffusion-corrupted images (CAPO's reliance on the image).
:func:`summarize_samples` adds the mean per-sample accuracy with an interval over questions and
the unbiased pass@k (:mod:`medrl.eval.passk`).
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
    """Oracle scores of one completion for one phantom record.

    Beside correctness and the step verdicts: ``valid_wrong`` (every step valid, the answer wrong:
    where failures go when they leave the steps), ``attribute_accuracy`` (the share of the fields
    the question's answer states - modality, plane and organ for a study question - that the answer
    states right), ``counter_correct`` / ``prior_correct`` (correctness on a record whose wording
    suggests a wrong / the right answer; None on the others), ``held_out_correct`` (on a held-out
    answer combination) and ``paraphrased`` (a right answer not in the reference's own words; None
    when wrong)."""
    from medrl.answers.completion import parse_response, split_steps
    from medrl.data.sources.phantom import counter_prior
    from medrl.eval.analysis import failure_accumulation_rate, first_failure_point
    from medrl.judges.phantom_truth import (ANSWER_STATES, claim_correct, oracle_answer_correct, oracle_consistent,
                                            oracle_step_verdicts, parse_step_claims, phantom_params)
    from medrl.rewards.lexical import exact_match
    from medrl.rewards.stepgrpo import key_step_ratio

    p = parse_response(text)
    steps = [s.text for s in split_steps(p.reasoning)] if p.reasoning else []
    valid = [bool(v.valid) for v in oracle_step_verdicts(record, steps)] if steps else []
    correct = bool(oracle_answer_correct(record, p.answer)) if p.answer is not None else False
    forms = record.extras.get("key_step_forms") or record.key_steps or []
    try:
        coverage = key_step_ratio(p.reasoning, forms, mode="soft") if forms else None
    except ValueError:
        coverage = None
    tag = modality_tag_of(text)
    params = phantom_params(record) or {}
    fields = ANSWER_STATES.get(params.get("question_type"))
    if fields and p.answer is not None:
        claims = parse_step_claims(p.answer)
        attr = sum(1 for f in fields if f in claims and claim_correct(f, claims[f], params)) / len(fields)
    else:
        attr = float(correct)
    counter = counter_prior(params) if params else None
    return {
        "id": record.id, "question_type": record.question_type, "answer": p.answer,
        "well_formed": bool(p.well_formed), "correct": correct, "steps": len(steps), "valid": valid,
        "ffp": first_failure_point(valid) if valid else None,
        "far": failure_accumulation_rate(valid) if valid else None,
        "valid_wrong": bool(valid) and all(valid) and not correct,
        "consistent": bool(p.answer is not None and p.reasoning and oracle_consistent(p.reasoning, p.answer)),
        "key_step_coverage": coverage,
        "tag": tag, "tag_correct": tag is not None and tag == (record.modality_tag or "").upper(),
        "attribute_accuracy": attr,
        "counter_correct": correct if counter is True else None,
        "prior_correct": correct if counter is False else None,
        "held_out_correct": correct if params.get("held_out") else None,
        "paraphrased": (not exact_match(p.answer or "", record.answer)) if correct else None,
    }


#: per-output fields whose mean over the outputs that have one a summary reports
#: (summary key -> row key)
MEANS = {"attribute_accuracy": "attribute_accuracy", "counter_prior_accuracy": "counter_correct",
         "prior_accuracy": "prior_correct", "held_out_accuracy": "held_out_correct",
         "paraphrase_kept": "paraphrased", "valid_wrong_rate": "valid_wrong"}


def _per_output(st: dict, n: int, stage: str | None) -> float | None:
    """Outputs whose first failed step falls in ``stage`` (None: any stage) over all ``n`` outputs."""
    if not n:
        return None
    k = st["n_failed"] if stage is None else st["counts"][stage]
    return k / n


def summarize(rows: Sequence[dict]) -> dict:
    """Shares (with Wilson intervals), FFP stage shares, failures per output and means over
    scored outputs, overall and per question type (``by_type``)."""
    from medrl.eval.analysis import stage_shares

    n = len(rows)

    def share(key):
        k = sum(1 for r in rows if r.get(key))
        return proportion_ci(k, n)

    st = stage_shares([r["ffp"] for r in rows if r["steps"]])
    fars = [r["far"] for r in rows if r["far"] is not None]
    cov = [r["key_step_coverage"] for r in rows if r["key_step_coverage"] is not None]
    by_q: dict[str, list[dict]] = {}
    for r in rows:
        by_q.setdefault(r.get("question_type") or "?", []).append(r)
    wrong_ffps = [r["ffp"] for r in rows if r["steps"] and not r["correct"]]
    st_wrong = stage_shares(wrong_ffps)
    by_type = {}
    for q, rs in sorted(by_q.items()):
        sq = stage_shares([r["ffp"] for r in rs if r["steps"]])
        by_type[q] = {"n": len(rs), "accuracy": sum(r["correct"] for r in rs) / len(rs),
                      "early_rate": _per_output(sq, len(rs), "early"), "failed_rate": _per_output(sq, len(rs), None),
                      "early_share": sq["shares"]["early"], "stages": sq}
    return {
        "n": n,
        "accuracy": share("correct"), "format": share("well_formed"), "consistency": share("consistent"),
        "tag_accuracy": share("tag_correct"),
        "early_share": st["shares"]["early"], "mid_share": st["shares"]["mid"], "late_share": st["shares"]["late"],
        # the same failures counted over every output: a share among failed outputs rises when late
        # failures disappear even if early ones stay as they were
        "early_rate": _per_output(st, n, "early"), "failed_rate": _per_output(st, n, None),
        "stages": st, "stages_wrong": st_wrong,
        "far": sum(fars) / len(fars) if fars else None, "far_n": len(fars),
        "key_step_coverage": sum(cov) / len(cov) if cov else None,
        "accuracy_by_type": {q: proportion_ci(sum(r["correct"] for r in v), len(v)) for q, v in sorted(by_q.items())},
        "by_type": by_type,
        **{k: _mean_of(rows, key) for k, key in MEANS.items()},
        **{f"{k}_n": sum(1 for r in rows if r.get(key) is not None) for k, key in MEANS.items()},
    }


def _mean_of(rows: Sequence[dict], key: str) -> float | None:
    vals = [float(r[key]) for r in rows if r.get(key) is not None]
    return sum(vals) / len(vals) if vals else None


def summarize_samples(rows: Sequence[dict], k: int) -> dict:
    """:func:`summarize` of ``k`` sampled outputs per question, plus what only samples give:
    ``accuracy`` is the mean per-sample accuracy with a Student-t 95% interval over questions
    (a question's samples are not independent draws, so no Wilson interval over all samples),
    ``pass_at_k`` the unbiased pass@j for j = 1, 2, 4, ..., k (:mod:`medrl.eval.passk`, Chen et
    al. 2021 Eq. 1), overall and per question type."""
    from medrl.effects.stats import mean_over_seeds
    from medrl.eval.passk import default_ks, pass_at_k_curve

    out = summarize(rows)
    per_q: dict[str, list[dict]] = {}
    for r in rows:
        per_q.setdefault(r["id"], []).append(r)
    means = [sum(x["correct"] for x in v) / len(v) for v in per_q.values()]
    m = mean_over_seeds(means)
    out["accuracy"] = {"k": sum(r["correct"] for r in rows), "n": len(rows), "p": m["mean"], "low": m["ci_low"],
                       "high": m["ci_high"], "method": "t over questions"}
    ks = default_ks(k)
    counts = {q: (len(v), sum(x["correct"] for x in v)) for q, v in per_q.items()}
    out["pass_at_k"] = {str(j): v["pass_at_k"] for j, v in pass_at_k_curve(list(counts.values()), ks).items()}
    types: dict[str, list] = {}
    for q, v in per_q.items():
        types.setdefault(v[0].get("question_type") or "?", []).append(counts[q])
    for t, cs in types.items():
        if t in out["by_type"]:
            out["by_type"][t]["pass_at_k"] = {str(j): v["pass_at_k"] for j, v in pass_at_k_curve(cs, ks).items()}
    out.update(k=k, n_questions=len(per_q))
    return out


#: TRL's GRPO rollouts sample with no top-k cut and never emit the image token (its
#: GRPOTrainer's generation config); sampled evaluation draws the same way
def rollout_sampling(model) -> dict:
    """``model.generate`` settings that make a sampled evaluation draw like the training rollouts."""
    extra: dict[str, Any] = {"top_k": 0}
    tok = getattr(getattr(model, "config", None), "image_token_id", None)
    if tok is not None:
        extra["suppress_tokens"] = [int(tok)]
    return extra


def sample_outputs(model, processor, records: Sequence[Any], *, k: int, temperature: float, seed: int,
                   max_new_tokens: int, batch_size: int, prompt_style: str) -> list[dict]:
    """``k`` samples per record at ``temperature`` (top-p 1, no top-k cut, as the training
    rollouts), scored by the oracle: one row per sample (``sample`` = its index). Seeded: the same
    model, records, ``seed`` and ``batch_size`` give the same samples."""
    from medrl.models import generate

    items = [r for r in records for _ in range(k)]
    texts = generate(model, processor, items, max_new_tokens=max_new_tokens, temperature=temperature,
                     batch_size=batch_size, prompt_style=prompt_style, seed=seed, progress=False,
                     generation_kwargs=rollout_sampling(model))
    return [{**score_output(r, t), "sample": i % k, "text": t} for i, (r, t) in enumerate(zip(items, texts))]


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
                   corrupted: Sequence[Any] | None = None, samples: int = 0, temperature: float = 1.0,
                   seed: int = 0, subset: int = 0, temperatures: Sequence[float] = ()) -> dict:
    """Score a policy on ``records`` with the oracle: ``{"greedy": summary, "sampled": summary,
    "sampled_t<T>": summary, ...}``.

    Greedy: one output per record (and per ``corrupted`` record: ``accuracy_corrupted`` and
    ``corruption_drop`` in the greedy summary). Sampled (``samples`` = k > 0): k outputs per record
    at ``temperature`` (:func:`sample_outputs`, seed ``seed``; :func:`summarize_samples`);
    ``sampled_subset`` is the sampled summary of the first ``subset`` records (the learning
    curves' fixed subset, whose last point this is). Each other temperature ``T`` of
    ``temperatures`` gives ``sampled_t<T>`` (``sampled_t0.7``), the same k samples per record at
    ``T`` with the same seed: a model is compared with another at the same temperature, and with
    the warm-up model at its best one. Writes ``outputs.jsonl`` (greedy), ``samples.jsonl``
    (``samples_t<T>.jsonl``) and ``summary.json`` under ``out_dir``; a finished folder (its
    ``summary.json``) is read back instead of generating again."""
    from medrl.models import generate, load_policy

    out = Path(out_dir)
    done = out / "summary.json"
    if done.is_file():
        return json.loads(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    import torch

    # on a GPU machine the evaluation runs there too (the gpu profile's held-out set is large)
    policy, processor = load_policy(str(model_path), device_map="cuda" if torch.cuda.is_available() else None)
    texts = generate(policy, processor, list(records), max_new_tokens=max_new_tokens, batch_size=batch_size,
                     prompt_style=prompt_style, progress=False)
    rows = [{**score_output(r, t), "text": t} for r, t in zip(records, texts)]
    greedy = summarize(rows)
    greedy["decoding"] = "greedy"
    if corrupted is not None:
        ctexts = generate(policy, processor, list(corrupted), max_new_tokens=max_new_tokens, batch_size=batch_size,
                          prompt_style=prompt_style, progress=False)
        crow = [score_output(r, t) for r, t in zip(corrupted, ctexts)]
        c = summarize(crow)
        greedy["accuracy_corrupted"] = c["accuracy"]
        a, b = greedy["accuracy"]["p"], c["accuracy"]["p"]
        greedy["corruption_drop"] = None if a is None or b is None else a - b
        for r, cr in zip(rows, crow):
            r["correct_corrupted"] = cr["correct"]
    with (out / "outputs.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    summary: dict[str, Any] = {"greedy": greedy}
    if samples > 0:
        srows = sample_outputs(policy, processor, records, k=samples, temperature=temperature, seed=seed,
                               max_new_tokens=max_new_tokens, batch_size=batch_size, prompt_style=prompt_style)
        sampled = summarize_samples(srows, samples)
        sampled.update(decoding="sampled", temperature=temperature, seed=seed)
        summary["sampled"] = sampled
        if subset:
            part = summarize_samples(srows[: subset * samples], samples)
            summary["sampled_subset"] = curve_point(part)
        with (out / "samples.jsonl").open("w") as fh:
            for r in srows:
                fh.write(json.dumps(r) + "\n")
        for t in sorted({float(x) for x in temperatures} - {float(temperature)}):
            trows = sample_outputs(policy, processor, records, k=samples, temperature=t, seed=seed,
                                   max_new_tokens=max_new_tokens, batch_size=batch_size, prompt_style=prompt_style)
            other = summarize_samples(trows, samples)
            other.update(decoding=sampled_key(t, temperature), temperature=t, seed=seed)
            summary[sampled_key(t, temperature)] = other
            with (out / f"samples_t{t:g}.jsonl").open("w") as fh:
                for r in trows:
                    fh.write(json.dumps(r) + "\n")
    done.write_text(json.dumps(summary, indent=2))
    return summary


def sampled_key(t: float, train_temperature: float) -> str:
    """The summary key of the sampled evaluation at temperature ``t``: ``sampled`` at the
    training temperature, ``sampled_t<T>`` at another."""
    return "sampled" if float(t) == float(train_temperature) else f"sampled_t{float(t):g}"


def curve_point(summary: dict) -> dict:
    """What a learning curve keeps of a sampled summary."""
    return {"n_questions": summary.get("n_questions"), "accuracy": summary["accuracy"]["p"],
            "early_rate": summary.get("early_rate"), "failed_rate": summary.get("failed_rate")}


__all__ = ["MEANS", "corrupted_records", "curve_point", "evaluate_model", "sampled_key", "modality_tag_of", "rollout_sampling", "sample_outputs",
           "score_output", "summarize", "summarize_samples"]
