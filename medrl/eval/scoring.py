"""Score saved outputs: judged accuracy, MediX-R1 rubric, step verification, HSS and overlap metrics.

Protocol (MediX-R1, arXiv 2602.23363, Sec. 3 and App. A.2-A.3; MRPO, arXiv 2606.31825, Sec. 5.1
and App. B.2):

- The judge sees only the final answer, never the reasoning: the ``<answer>`` block when there
  is one, otherwise the text after the last ``</think>``, otherwise the whole output
  (:func:`prediction_text`).
- Per-row scores: ``judge_binary`` = the judge's binary grade (``grade(..., rubric="binary")``,
  0/1; MediX-R1 App. A.2); ``judge_report`` = the 0-5 rubric (MediX-R1 App. A.3);
  ``judge_answer`` = the shared (strict) answer-correctness decision with the judge;
  ``judge_answer_h1`` = MRPO App. H.1's lenient check (:func:`answer_h1`); ``exact`` = closed
  questions decided without a judge. Which
  rows get which score is set by the eval protocols (:mod:`medrl.eval.protocols`), which also
  turn them into the reported numbers.
- An output with no answer text (empty, or a single character after stripping '.') is scored
  0 without a judge call, the MediX-R1 R_llm guard (Sec. 2.3): it failed to answer, it is not
  unscorable.
- A judge verdict that is not scored (outage, unparseable reply) leaves that score ``None``: the
  output is excluded from that metric and counted, never taken as 0 or 1.
- Step verification (MRPO Eq. 3, Sec. 3) rates every reasoning step of an output in one call;
  its verdicts feed :mod:`medrl.eval.analysis` (FFP/FAR). Under an MRPO protocol the judge gets
  App. H.2's prompt (``step_prompt="paper"``), else the hardened one
  (:func:`medrl.eval.protocols.step_prompt_for`); the row records which (``judge.step_prompt``).
- Evaluation rounds (MediX-R1's released ``eval/utils.py``): ``judge_rounds`` > 1 asks the
  grading judge that many times in one conversation, each time to re-evaluate; the binary grade
  is the majority, the report rubric the mean (:func:`medrl.judges.base.combine_rounds`).
- Text metrics: ROUGE-1, BLEU-1, BERTScore F1, embedding cosine and HSS (ARMed, arXiv
  2508.12957, Eq. 15) via :func:`medrl.rewards.hss.hss_batch`.
- Truncation: an output cut off at the generation limit (no closing answer tag,
  :func:`is_truncated`) keeps its scores and is counted per dataset (``truncated``).

Because the scores depend only on the saved rows, a run can be re-scored with another judge
without regenerating (cross-judge evaluation, MRPO App. B.2).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from medrl.answers import grading_refusal
from medrl.judges.base import gather_bounded, run_sync
from medrl.answers.completion import completion_steps, parse_response, prediction_text  # noqa: F401 (re-exported)

RUBRICS = ("binary", "report")
TEXT_METRICS = ("rouge1", "bleu1", "bertscore", "cosine", "hss")
#: Every score key a scored row may carry, in report order.
SCORE_KEYS = ("judge_binary", "judge_report", "judge_answer", "judge_answer_h1", "exact") + TEXT_METRICS
#: Scores that are a correct/wrong verdict per output (a proportion: Wilson's interval); the
#: others are continuous (the bootstrap), even when every value happens to be 0 or 1.
PROPORTION_KEYS = ("judge_binary", "judge_answer", "judge_answer_h1", "exact")



def is_empty_answer(prediction: str) -> bool:
    """MediX-R1 R_llm guard (arXiv 2602.23363, Sec. 2.3): after stripping '.' and spaces,
    an empty or one-character answer is wrong without asking the judge."""
    return len(prediction.replace(".", "").strip()) <= 1


_CLOSE_ANSWER = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)


def is_truncated(output: str, *, n_tokens: int | None = None, max_new_tokens: int | None = None,
                 finish_reason: str | None = None) -> bool | None:
    """Was an output cut off by the generation limit? True when it has no closing ``</answer>``
    tag and generation stopped at the limit: the backend says so (vLLM ``finish_reason ==
    "length"``), or its token count is within one token of ``max_new_tokens`` (the count of the
    decoded text re-tokenised can differ from the generated ids by a merge). None when nothing
    is known about how generation stopped (plain-string outputs). Such outputs are scored as
    they are (usually wrong) and counted in their own column."""
    if _CLOSE_ANSWER.search(output or ""):
        return False
    if finish_reason is not None:
        return finish_reason == "length"
    if n_tokens is None or not max_new_tokens:
        return None
    return int(n_tokens) >= int(max_new_tokens) - 1


def judged_answer(row: dict) -> str:
    """The answer text a judge sees for a scored row: ``row["prediction"]``, with an option label
    ("B", "(B)", "Option B") of a multiple-choice row replaced by that option's text, so a letter
    answer is neither zeroed by the one-character guard nor judged without its meaning."""
    pred = row.get("prediction") or ""
    if row.get("choices"):
        from medrl.eval.protocols import option_text

        pred = option_text(pred, row["choices"])
    return pred


def base_row(record: Any, dataset: str, domain: str, output: str) -> dict:
    """Everything a later scoring or analysis needs about one output, without the data files."""
    rid = str(record.id)
    evidence = record.evidence() if hasattr(record, "evidence") else None
    extras = getattr(record, "extras", None) or {}
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
        # what the eval protocols group and split by (medrl.eval.protocols)
        "open_ended": getattr(record, "open_ended", None),
        "modality": getattr(record, "modality", None),
        "organ": getattr(record, "organ", None),
        "choices": list(extras["choices"]) if extras.get("choices_in_prompt") and extras.get("choices") else None,
        "task": extras.get("task"),
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
    bertscore_model: str | None = None,
    concurrency: int = 16,
    protocols: Sequence[str] = (),
    judge_rounds: int = 1,
) -> list[dict]:
    """Score base rows (see :func:`base_row`); returns new dicts with ``answer``,
    ``prediction``, ``well_formed``, ``scores``, ``judge``, ``steps`` and ``step_verdicts``.

    ``rubrics`` are graded on every row; ``protocols`` (:mod:`medrl.eval.protocols`) add what
    each of them needs per row: ``scores["exact"]`` for closed questions (no judge),
    ``scores["judge_answer"]`` (the shared answer-correctness decision), a rubric grade, the
    text metrics. ``judge`` may be None when no judge task is wanted; judge tasks run
    concurrently (at most ``concurrency`` at once). ``judge_rounds``: evaluation rounds of every
    rubric grade (MediX-R1; module docstring).
    """
    from medrl.eval.protocols import get_protocol, parse_protocols, row_tasks, step_prompt_for

    for r in rubrics:
        if r not in RUBRICS:
            raise ValueError(f"unknown rubric {r!r}; choose from {RUBRICS}")
    protocols = parse_protocols(list(protocols)) if protocols else []
    needs = [row_tasks(r, protocols) for r in rows]
    if any(get_protocol(p).needs_text_metrics for p in protocols):
        text_metrics = True  # ARMed's HSS
    judged = any(t & {"judge_answer", "judge_answer_h1", "grade_binary", "grade_report"} for t in needs)
    if int(judge_rounds) < 1:
        raise ValueError(f"judge_rounds must be at least 1, got {judge_rounds}")
    step_prompt = step_prompt_for(protocols)
    if judge is None and (rubrics or verify_steps or judged):
        raise ValueError("a judge is needed for rubric scores, judged accuracy and step verification")
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
            "judge": {"name": getattr(judge, "name", None), "step_prompt": step_prompt,
                      **({"rounds": int(judge_rounds)} if judge_rounds > 1 else {})} if judge is not None else {},
            "steps": [{"text": s.text, "start": s.start, "end": s.end} for s in steps],
            "step_verdicts": None,
        })
    for r, need in zip(out, needs):
        if "exact" in need:
            from medrl.eval.protocols import exact_correct

            e = exact_correct(r)
            r["scores"]["exact"] = None if e is None else float(e)
    if judge is not None:
        run_sync(_judge_all(out, judge, list(rubrics), verify_steps, concurrency, needs, step_prompt,
                            int(judge_rounds)))
    if text_metrics:
        from medrl.rewards.hss import hss_batch

        preds = [r["prediction"] for r in out]
        refs = [r["reference"] for r in out]
        metrics = hss_batch(preds, refs, model=embedding_model, bertscore_model=bertscore_model) if preds else []
        for r, m in zip(out, metrics):
            for k in TEXT_METRICS:
                v = m.get(k)
                r["scores"][k] = None if v is None else float(v)
    return out


async def _judge_all(rows: list[dict], judge: Any, rubrics: list[str], verify: bool, limit: int,
                     needs: Sequence[set] | None = None, step_prompt: str = "hardened", rounds: int = 1) -> None:
    tasks = []
    for i, r in enumerate(rows):
        need = needs[i] if needs is not None else set()
        wanted = list(rubrics) + [x for x in RUBRICS if f"grade_{x}" in need and x not in rubrics]
        for rubric in wanted:
            tasks.append(_grade(r, judge, rubric, rounds))
        if "judge_answer" in need:
            tasks.append(_answer(r, judge))
        if "judge_answer_h1" in need:
            tasks.append(_answer_h1(r, judge))
        if verify:
            tasks.append(_verify(r, judge, step_prompt))
    await gather_bounded(tasks, limit)


async def answer_h1(prediction: str, reference: str, question: str, judge: Any, image: Any = None) -> bool | None:
    """MRPO App. H.1's answer check: an empty answer is wrong and a normalised exact match right
    without a call (H.1 accepts a match); every other answer is the judge's O/X verdict under
    H.1's own rule (``check="paper"``: a match or a good enough answer), with no answer guard in
    front. None when the judge gives no verdict."""
    from medrl.rewards.correctness import exact_match

    if not (prediction or "").strip():
        return False
    if exact_match(prediction, reference):
        return True
    kw = {"image": image} if image is not None else {}
    v = await judge.answer_correct(question, reference, prediction, check="paper", **kw)
    return bool(v.value) if v.scored else None


async def _answer_h1(row: dict, judge: Any) -> None:
    """``scores["judge_answer_h1"]`` (:func:`answer_h1`); unscored (None) when the judge gives none."""
    try:
        v = await answer_h1(judged_answer(row), row["reference"], row["question"], judge,
                            _image_kw(row, judge).get("image"))
    except Exception as exc:  # noqa: BLE001 - one bad row is unscored, never a failed batch
        _row_failed(row, judge, exc)
        v = None
        row["judge"]["answer_h1_error"] = f"{type(exc).__name__}: {exc}"
    row["scores"]["judge_answer_h1"] = None if v is None else float(v)
    if v is None and "answer_h1_error" not in row["judge"]:
        row["judge"]["answer_h1_error"] = "unscored"


async def _answer(row: dict, judge: Any) -> None:
    """``scores["judge_answer"]``: the shared answer-correctness decision with the judge
    (:func:`medrl.rewards.correctness.decide_correct_async`, ``mode="judge"``: guard, exact
    match, then ``judge.answer_correct``; the record's image goes with it when the judge takes
    images). Unscored (None) when the judge gives no verdict."""
    from medrl.rewards.correctness import decide_correct_async

    key = "judge_answer"
    pred = judged_answer(row)  # empty / placeholder answers: the shared guard says wrong, no judge call
    try:
        v = await decide_correct_async(pred, row["reference"], question=row["question"], mode="judge",
                                       closed=False, judge=judge, image=_image_kw(row, judge).get("image"))
    except Exception as exc:  # noqa: BLE001 - one bad row is unscored, never a failed batch
        _row_failed(row, judge, exc)
        v = None
        row["judge"]["answer_error"] = f"{type(exc).__name__}: {exc}"
    row["scores"][key] = None if v is None else float(bool(v))
    if v is None and "answer_error" not in row["judge"]:
        row["judge"]["answer_error"] = "unscored"


async def _grade(row: dict, judge: Any, rubric: str, rounds: int = 1) -> None:
    key = f"judge_{rubric}"
    pred = judged_answer(row)
    # the graders' guard (medrl.answers.grading_refusal): shapes, then an unambiguous contradiction of
    # the reference; option labels count only for multiple-choice rows (as in training)
    why = grading_refusal(row["reference"], pred, question=row["question"], long_form=rubric != "binary",
                          multiple_choice=bool(row.get("choices")))
    if why:
        row["scores"][key] = 0.0
        row["judge"][f"{rubric}_raw"] = ""
        row["judge"][f"{rubric}_note"] = f"guard ({why}): scored 0 without a judge call"
        return
    try:
        v = await judge.grade(row["question"], row["reference"], pred, rubric=rubric,
                              **_image_kw(row, judge), **({"rounds": rounds} if rounds > 1 else {}))
    except Exception as exc:  # noqa: BLE001 - one bad row is unscored, never a failed batch
        v = _row_failed(row, judge, exc)
    row["judge"][f"{rubric}_raw"] = v.raw
    if v.scored:
        row["scores"][key] = float(v.value)
    else:
        row["scores"][key] = None
        row["judge"][f"{rubric}_error"] = v.error or "unscored"


async def _verify(row: dict, judge: Any, step_prompt: str = "hardened") -> None:
    steps = [s["text"] for s in row["steps"]]
    if not steps:
        row["step_verdicts"] = []  # no reasoning steps: nothing to verify (counted as "no steps")
        return
    try:  # another rule set is asked for by name; a judge keeps its default otherwise
        v = await judge.verify_steps(
            row["question"], row["reference"], steps,
            gold_reasoning=row.get("gold_reasoning"), evidence=row.get("evidence"), **_image_kw(row, judge),
            **({"step_prompt": step_prompt} if step_prompt != "hardened" else {}),
        )
    except Exception as exc:  # noqa: BLE001 - one bad row is unscored, never a failed batch
        v = _row_failed(row, judge, exc)
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


def _image_kw(row: dict, judge: Any) -> dict:
    """``image=`` for a judge that sends images (the record's image files), else nothing."""
    return {"image": row.get("images") or None} if getattr(judge, "images", False) else {}


def _row_failed(row: dict, judge: Any, exc: Exception):
    """A judge call that raised for one row: unscored, naming the record. Authentication errors
    (and other run-level failures) still stop the run."""
    from medrl.judges.base import JudgeAuthError
    from medrl.types import Verdict

    if isinstance(exc, JudgeAuthError):
        raise exc
    import logging

    msg = f"record {row.get('key')}: {type(exc).__name__}: {exc}"
    logging.getLogger(__name__).warning("unscored: %s", msg)
    return Verdict.unscored(msg)


def step_valid_flags(row: dict) -> list[bool] | None:
    """Per-step validity of a scored row (MRPO Eq. 3: valid if either criterion is 1), or None
    when the steps were not verified (or the verdict was unscored)."""
    sv = row.get("step_verdicts")
    if sv is None:
        return None
    return [bool(v["gold_alignment"] or v["answer_contribution"]) for v in sv]


def summarize_scores(rows: Sequence[dict], *, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
                     protocols: Sequence[str] = ()) -> dict:
    """Per-dataset means with 95% intervals (Wilson's for the proportions of
    :data:`PROPORTION_KEYS`, the bootstrap for continuous scores; ``method`` names it), and macro
    averages (in-domain, out-of-domain, all; stratified bootstrap).

    MediX-R1 Sec. 3 "Scoring": dataset-level means and macro averages across benchmarks; MRPO
    Table 2 reports per-benchmark accuracy and their average (AVG). Unscored values (None) are
    left out of a metric and counted under ``unscored``. Returns::

        {"datasets": {name: {"n", "domain", "well_formed", "truncated", "truncation_known",
                      "metrics": {key: {mean, low, high, n, unscored}}, "steps": {...}}},
         "macro": {"in": {key: {...}}, "out": {...}, "all": {...}},
         "protocols": {name: medrl.eval.protocols.summarize_protocol(...)}}   # when protocols given
    """
    from medrl.eval.stats import macro_mean_ci, score_ci

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
            ci = score_ci(vals, n_boot=n_boot, alpha=alpha, seed=seed, proportion=key in PROPORTION_KEYS)
            ci["unscored"] = len(present) - len(vals)
            metrics[key] = ci
        verified = [r for r in rs if r.get("step_verdicts") is not None]
        n_steps = [len(r.get("steps") or []) for r in rs]
        valid = [v for r in verified for v in (step_valid_flags(r) or [])]
        datasets[name] = {
            "n": len(rs),
            "domain": rs[0].get("domain", "in"),
            "well_formed": sum(1 for r in rs if r.get("well_formed")) / len(rs),
            "truncated": sum(1 for r in rs if r.get("truncated") is True),
            "truncation_known": sum(1 for r in rs if r.get("truncated") is not None),
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
    out = {"datasets": datasets, "macro": macro}
    if protocols:
        from medrl.eval.protocols import summarize_protocols

        out["protocols"] = summarize_protocols(rows, protocols, n_boot=n_boot, alpha=alpha, seed=seed)
    return out


def missing_scores(row: dict, protocols: Sequence[str]) -> bool:
    """Whether a scored row lacks a score one of ``protocols`` needs for it (a judge verdict
    left unscored, or a score the protocol asks for that was never computed)."""
    from medrl.eval.protocols import row_tasks

    scores = row.get("scores") or {}
    for task in row_tasks(row, protocols):
        if task == "exact" and "exact" not in scores:
            return True
        if task in ("judge_answer", "judge_answer_h1") and scores.get(task) is None:
            return True
        if task.startswith("grade_") and scores.get("judge_" + task[len("grade_"):]) is None:
            return True
        if task == "text" and "hss" not in scores:
            return True
    return False


def output_correct(row: dict, protocol: str | None = None) -> bool | None:
    """One correct/wrong verdict per scored output (None = unscored or not scored).

    With ``protocol``: its main accuracy (:func:`medrl.eval.protocols.row_correct`). Without:
    the judge's binary grade when the row has one, else the shared judged decision
    (``judge_answer``), else the ``standard`` protocol's verdict (exact match for closed
    questions). FFP/FAR tables and paired comparisons use this, so both see the same verdicts.
    """
    from medrl.eval.protocols import row_correct

    if protocol:
        return row_correct(row, protocol)
    scores = row.get("scores") or {}
    for key in ("judge_binary", "judge_answer", "judge_answer_h1"):
        if key in scores:
            v = scores[key]
            return None if v is None else bool(round(float(v)))
    return row_correct(row, "standard")


def stored_protocols(run_dir) -> list[str]:
    """The eval protocols an eval folder was scored under (``config.json["protocols"]``; ``[]``
    for a folder written before protocols were stored, or without a config)."""
    import json
    from pathlib import Path

    path = Path(run_dir) / "config.json"
    if not path.is_file():
        return []
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable eval config ({exc})") from None
    return [str(p) for p in (cfg.get("protocols") or [])]


def load_run(run_dir) -> list[dict]:
    """The scored rows of an eval folder (``outputs.jsonl``), with a clear error otherwise.
    (Here, below the runner, so analyses read eval folders without importing the runner.)"""
    from pathlib import Path

    from medrl.common.jsonl import read_jsonl

    path = Path(run_dir) / "outputs.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a finished `medrl eval` folder?")
    rows: dict = {}
    for r in read_jsonl(path):  # a re-scored row is appended: the last row of a key wins
        rows[r.get("key", len(rows))] = r
    return list(rows.values())
