"""Evaluation protocols: which question is scored how, and which numbers are reported.

One registry, :data:`PROTOCOLS`; ``medrl eval --protocol NAME[,NAME...]``. A protocol is pure
bookkeeping over scored rows (see :mod:`medrl.eval.scoring`): it says which judge tasks a row
needs (:meth:`Protocol.tasks`), reads each row's per-metric value (:meth:`Protocol.row_metrics`)
and summarizes per dataset, per group (closed/open, modality, organ) and macro in/out-of-domain,
with bootstrap intervals (:func:`summarize_protocol`). The same saved outputs rescored under
several protocols give one metric set per protocol in one report.

Per-row scores the protocols read (computed once, shared by every protocol that needs them):

- ``exact``: closed questions (yes/no, a choice among options) decided without a judge by the
  shared correctness rule :func:`medrl.rewards.correctness.decide_exact` (the guard, then a
  normalised exact match; a yes/no reference compares the first word). A multiple-choice
  answer given as an option label ("B", "(B)", "Option B", "B: text") is mapped to that option's
  text first.
- ``judge_answer``: the shared answer-correctness decision
  :func:`medrl.rewards.correctness.decide_correct_async` with ``mode="judge"`` (the guard, an
  exact match, then ``judge.answer_correct``; with the record's image when the judge was built
  to take images) - the same strict decision training uses.
- ``judge_answer_h1``: MRPO App. H.1's lenient check (:func:`medrl.eval.scoring.answer_h1`):
  an empty answer is wrong and an exact match right without a call; every other answer goes to
  ``judge.answer_correct(..., check="paper")`` - the judge alone decides whether it matches or is
  a good enough answer, O/X, with no answer guard in front.
- ``judge_binary`` / ``judge_report``: MediX-R1's evaluation grades (``judge.grade``).
- ``hss`` and the text metrics; ``step_verdicts`` (MRPO Eq. 3).

Protocols:

``standard`` (default) - the field's convention (VQA-RAD card, LLaVA-Med, MedEvalKit,
HuatuoGPT-Vision tables): every question; closed questions by exact yes/no or option match,
open questions by the judge; closed accuracy, open accuracy and overall, per dataset and per
modality, organ and subject (MMMU's Health & Medicine subjects, CAPO Table 3) where the
dataset has them. Closed/open is the dataset's own
``answer_type`` label when it has one (VQA-RAD test: 272 closed, 179 open, the split the
VQA-RAD card and LLaVA-Med report), else
:func:`medrl.rewards.correctness.is_closed_question`; a multiple-choice record is closed.
Averages over datasets: macro (mean of the dataset means).

``mrpo`` - MRPO (arXiv 2606.31825, Sec. 5.1, App. C.1, H.1, H.2): open-ended questions only
(papers' sense: not yes/no, not multiple choice); accuracy = the judge's O/X verdict with App.
H.1's check alone (``judge_answer_h1``: the answer matches the reference or is a good enough
answer to the question; prompt :func:`medrl.judges.prompts.answer_correct` with
``check="paper"``; the image is attached whenever the judge takes images), plus step
verification with App. H.2's prompt (:func:`medrl.judges.prompts.verify_steps`,
``step_prompt="paper"``): the share of valid steps per output (a step is valid when
gold_alignment or answer_contribution is 1, Eq. 3). ``mrpo_strict`` is the same protocol with
this project's strict answer decision (``judge_answer``, the one training uses) in place of
H.1's. Table 2's "AVG" is the pooled
(sample-weighted) accuracy over all benchmarks (:func:`medrl.eval.stats.pooled_average`: it
reproduces the paper's 26.79 for Qwen2.5-VL-7B MRPO from the per-dataset accuracies and test
sizes; the macro average gives 29.54), so ``average="pooled"``. Beside it, ``accuracy_answered`` is the
denominator of MRPO's own evaluation script (``Eval_code/Answer_Evaluation.py``: O / (O + X),
outputs without an ``<answer>`` left out; SLAKE's 65.89% fits 601-689 items, not all 706);
``accuracy`` counts such outputs as wrong.

``medix`` - MediX-R1 (arXiv 2602.23363, Sec. 3, App. A.2-A.3, Table 2): every question; the
judge sees only the final answer (reasoning stripped); short-form QA/MCQ get the binary JSON
score (A.2, :func:`medrl.judges.prompts.grade` ``rubric="binary"`` with the released template,
``eval/utils.py``'s BASE_PROMPT: the right answer in full or by its option label; ``check="strict"``
- also 0 for hedging between options or a placeholder - is the judge API's option, not this
protocol's), long-form report items
(``task == "report"`` or a reference of 30+ words) the 0-5 rubric (A.3, ``rubric="report"``).
``score`` is the binary grade or the rubric divided by 5 (the paper's "optionally normalizing
for comparability": Table 2 lists MIMIC-CXR report scores in [0, 1] beside accuracies); the
paper's "AVG" is the macro mean of ``score`` over all benchmarks (0.610 for MediX-R1 from its 17
columns), and Table 4 splits it into text-only and image+text benchmarks (scopes ``text`` and
``vlm``: a dataset is text-only when none of its records has an image).

``armed`` - ARMed (arXiv 2508.12957, Sec. 4.1 "Evaluation Metric", Eq. 15, Table 1):
multiple-choice questions get accuracy (exact option match); every other question - closed
yes/no ones included, as the paper's closed questions are yes/no or short categorical - gets the
Hybrid Semantic Score (HSS = 0.25 BLEU-1 + 0.25 ROUGE-1 + 0.10 BERTScore + 0.40 cosine).
``score`` is the row's ARMed metric (HSS or accuracy); a dataset's score is its mean, and
Table 1's "Avg." is the macro mean of the dataset scores, HSS and accuracy mixed (e.g. ARMed-R
out-of-domain: (57.77 + 48.75 + 22.30) / 3 = 42.94), in-domain and out-of-domain. The judged
accuracy of open questions is reported beside it (not in the paper).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from medrl.common.registry import Registry

#: Eval protocols by name: ``PROTOCOLS.get("standard")``.
PROTOCOLS = Registry("eval protocol", modules=["medrl.eval.protocols"])
DEFAULT_PROTOCOL = "standard"

#: Judge/score tasks a protocol can ask for one row.
TASKS = ("exact", "judge_answer", "judge_answer_h1", "grade_binary", "grade_report", "steps", "text")

REPORT_MIN_WORDS = 30


# --------------------------------------------------------------------------- row facts
def reference(row: dict) -> str:
    return str(row.get("reference") or "")


def choices_of(row: dict) -> list[str] | None:
    """The options shown to the model (multiple-choice rows), else None."""
    ch = row.get("choices")
    return list(ch) if ch else None


def is_open_papers(row: dict) -> bool:
    """Open-ended in the papers' sense (MRPO App. C.1): a free-text answer, neither yes/no nor a
    choice among options shown. Uses the row's ``open_ended`` flag when the eval saved it."""
    if isinstance(row.get("open_ended"), bool):
        return row["open_ended"]
    from medrl.data.record import is_open_ended_answer

    return is_open_ended_answer(reference(row), multiple_choice=bool(choices_of(row)))


def question_kind(row: dict) -> str:
    """"closed" or "open" for the ``standard`` protocol: a multiple-choice row is closed; else the
    dataset's own OPEN/CLOSED label when it has one (the convention of the VQA-RAD card and
    the tables that report closed and open accuracy); else the shared rule
    :func:`medrl.rewards.correctness.is_closed_question`."""
    if choices_of(row):
        return "closed"
    at = str(row.get("answer_type") or "").strip().upper()
    if at in ("OPEN", "CLOSED"):
        return at.lower()
    from medrl.rewards.correctness import is_closed_question

    return "closed" if is_closed_question(answer=reference(row), open_ended=row.get("open_ended")) else "open"


def is_report(row: dict) -> bool:
    """A long-form report/summary item (MediX-R1 App. A.3 rubric): ``task == "report"`` or a
    reference of at least :data:`REPORT_MIN_WORDS` words."""
    return row.get("task") == "report" or len(reference(row).split()) >= REPORT_MIN_WORDS


_OPTION = re.compile(r"^\s*(?:\(?\s*(?:option|answer|choice)\s*[:\-]?\s*)?\(?([A-Za-z])\s*(?:[).:\]]|$)",
                     re.IGNORECASE)


def option_text(prediction: str, choices: Sequence[str]) -> str:
    """An answer given as an option label ("B", "(b)", "Option B", "B: Computed tomography",
    "B. CT") becomes that option's text; anything else is returned unchanged."""
    m = _OPTION.match(prediction or "")
    if m:
        k = ord(m.group(1).upper()) - 65
        if 0 <= k < len(choices):
            rest = (prediction or "")[m.end():].strip()
            # "B: text" that names another option's text is not option B
            if rest and _norm(rest) != _norm(choices[k]) and any(_norm(rest) == _norm(c) for c in choices):
                return rest
            return choices[k]
    return prediction


def _norm(s: str) -> str:
    from medrl.rewards.correctness import normalize_answer

    return normalize_answer(s)


def exact_correct(row: dict) -> bool | None:
    """The closed-question decision of one scored row (None when there is no reference).

    Shared rule :func:`medrl.rewards.correctness.decide_exact` on the judged answer
    (``row["prediction"]``), after mapping an option label to its text for multiple choice."""
    from medrl.rewards.correctness import decide_exact

    pred = row.get("prediction")
    if pred is None:
        from medrl.answers.completion import prediction_text

        pred = prediction_text(row.get("output") or "")
    ch = choices_of(row)
    if ch:
        pred = option_text(pred, ch)
    return decide_exact(pred, reference(row), question=row.get("question"))


def _score(row: dict, key: str) -> Any:
    """``row["scores"][key]``: a float, None (unscored) or the sentinel :data:`MISSING`."""
    scores = row.get("scores") or {}
    return scores[key] if key in scores else MISSING


MISSING = object()


def _step_share(row: dict) -> Any:
    if not row.get("steps"):
        return MISSING  # no reasoning steps: nothing to verify
    sv = row.get("step_verdicts")
    if sv is None:
        return None if "step_verdicts" in row else MISSING
    if not sv:
        return MISSING
    return sum(bool(v["gold_alignment"] or v["answer_contribution"]) for v in sv) / len(sv)


# --------------------------------------------------------------------------- protocols
@dataclass(frozen=True)
class Metric:
    """A protocol's metric: ``pct`` shows it x100; ``proportion`` says each output's value is a
    correct/wrong verdict (Wilson's interval) rather than a continuous score (the bootstrap)."""

    key: str
    label: str
    pct: bool = True
    proportion: bool = True


@dataclass(frozen=True)
class Protocol:
    """One evaluation protocol (see the module docstring)."""

    name: str
    paper: str
    description: str
    prompt: str
    metrics: tuple[Metric, ...]
    main: str
    tasks_fn: Callable[[dict], set[str]]
    values_fn: Callable[[dict], dict[str, Any]]
    groups: tuple[str, ...] = ()
    needs_text_metrics: bool = False
    open_only: bool = False
    #: how the paper averages over datasets: "macro" (mean of dataset means) or "pooled"
    #: (sample-weighted: the mean over every output of every dataset)
    average: str = "macro"
    #: the groups of datasets averaged: "in"/"out" (domain), "text"/"vlm" (images), "all"
    scopes: tuple[str, ...] = ("in", "out", "all")

    def tasks(self, row: dict) -> set[str]:
        """Judge/score tasks this row needs under the protocol (subset of :data:`TASKS`)."""
        return self.tasks_fn(row)

    def row_metrics(self, row: dict) -> dict[str, float | None]:
        """``{metric: value}`` for the metrics that apply to this row; None = unscored."""
        out = {}
        for k, v in self.values_fn(row).items():
            if v is MISSING:
                continue
            out[k] = None if v is None else float(v)
        return out


def _register(p: Protocol) -> Protocol:
    PROTOCOLS.register(p.name)(p)
    return p


def _exact_value(row: dict) -> Any:
    v = _score(row, "exact")
    if v is MISSING:  # rows scored before the protocols existed: decide now (no judge needed)
        e = exact_correct(row)
        return None if e is None else float(e)
    return v


def _standard_tasks(row: dict) -> set[str]:
    return {"exact"} if question_kind(row) == "closed" else {"judge_answer"}


def _standard_values(row: dict) -> dict:
    if question_kind(row) == "closed":
        v = _exact_value(row)
        return {"closed": v, "overall": v}
    v = _score(row, "judge_answer")
    return {"open": v, "overall": v}


def _mrpo_tasks(row: dict) -> set[str]:
    return {"judge_answer_h1", "steps"} if is_open_papers(row) else set()


def _mrpo_strict_tasks(row: dict) -> set[str]:
    return {"judge_answer", "steps"} if is_open_papers(row) else set()


def _has_answer(row: dict) -> bool:
    """The output holds a non-empty ``<answer>`` block (the parsed ``answer`` of a scored row)."""
    if "answer" in row:
        ans = row["answer"]
    else:
        from medrl.answers.completion import parse_response

        ans = parse_response(row.get("output") or "").answer
    return bool(str(ans or "").strip())


def _mrpo_values(row: dict, key: str = "judge_answer_h1") -> dict:
    """``accuracy`` counts an output without an ``<answer>`` as wrong; ``accuracy_answered`` is
    MRPO's own evaluation script (dmis-lab/MRPO ``Eval_code/Answer_Evaluation.py``: accuracy =
    O / (O + X), outputs without an answer are left out of the denominator). ``key``: the
    answer decision read (H.1's, or the strict one for ``mrpo_strict``)."""
    if not is_open_papers(row):
        return {}
    acc = _score(row, key)
    return {"accuracy": acc, "accuracy_answered": acc if _has_answer(row) else MISSING,
            "valid_steps": _step_share(row)}


def _mrpo_strict_values(row: dict) -> dict:
    return _mrpo_values(row, "judge_answer")


def _medix_tasks(row: dict) -> set[str]:
    return {"grade_report"} if is_report(row) else {"grade_binary"}


def _medix_values(row: dict) -> dict:
    """MediX-R1 Sec. 3 "Scoring": the binary grade, or the 0-5 rubric; ``score`` puts both on
    [0, 1] (rubric / 5) for the macro average over benchmarks (Table 2 "AVG")."""
    if is_report(row):
        v = _score(row, "judge_report")
        return {"rubric": v, "score": v if v is MISSING or v is None else float(v) / 5.0}
    v = _score(row, "judge_binary")
    return {"accuracy": v, "score": v}


def _armed_tasks(row: dict) -> set[str]:
    if choices_of(row):
        return {"exact"}
    return {"text", "judge_answer"} if is_open_papers(row) else {"text"}


def _armed_values(row: dict) -> dict:
    """ARMed Sec. 4.1: accuracy for multiple choice, HSS (Eq. 15) for every other question;
    ``score`` is whichever applies (Table 1 averages them together)."""
    if choices_of(row):
        v = _exact_value(row)
        return {"accuracy": v, "score": v}
    hss = _score(row, "hss")
    out = {"hss": hss, "score": hss}
    if is_open_papers(row):
        out["judged_accuracy"] = _score(row, "judge_answer")
    return out


STANDARD = _register(Protocol(
    name="standard",
    paper="field convention: VQA-RAD card, LLaVA-Med, MedEvalKit, HuatuoGPT-Vision tables",
    description="closed questions by exact yes/no or option match, open questions by the judge; "
                "closed, open and overall accuracy per dataset and per modality/organ",
    prompt="closed: no judge (medrl.rewards.correctness.decide_exact); open: judge.answer_correct "
           "(medrl.judges.prompts.answer_correct)",
    metrics=(Metric("closed", "Closed acc. (%)"), Metric("open", "Open acc. (%)"), Metric("overall", "Overall (%)")),
    main="overall", tasks_fn=_standard_tasks, values_fn=_standard_values, groups=("modality", "organ", "subject"),
))

MRPO = _register(Protocol(
    name="mrpo",
    paper="MRPO (Jung et al. 2026, arXiv 2606.31825) Sec. 5.1, App. C.1, H.1 (O/X answer check), "
          "H.2 (step verification), Table 2 (pooled AVG)",
    description="open-ended questions only; judged O/X accuracy with App. H.1's check alone, accepting an "
                "answer that matches the reference or answers the question well enough (with the image when "
                "the judge takes images), and the share of valid reasoning steps under App. H.2's prompt "
                "(Eq. 3); AVG pooled over all outputs",
    prompt="medrl.judges.prompts.answer_correct(check='paper') and medrl.judges.prompts.verify_steps(step_prompt='paper')",
    metrics=(Metric("accuracy", "Accuracy (%)"),
             Metric("accuracy_answered", "Accuracy, answered only (%) (MRPO script's denominator)"),
             Metric("valid_steps", "Valid steps (%)", proportion=False)),
    main="accuracy", tasks_fn=_mrpo_tasks, values_fn=_mrpo_values, open_only=True, average="pooled",
))

MRPO_STRICT = _register(Protocol(
    name="mrpo_strict",
    paper="MRPO (Jung et al. 2026, arXiv 2606.31825) Sec. 5.1, App. C.1, H.2, Table 2, with this project's "
          "strict answer check in place of App. H.1's",
    description="as mrpo, but accuracy is the strict answer decision training uses (answer guard, exact "
                "match, then the judge's strict check): hedges, lists and near misses are wrong",
    prompt="medrl.judges.prompts.answer_correct (strict) and medrl.judges.prompts.verify_steps(step_prompt='paper')",
    metrics=MRPO.metrics, main="accuracy", tasks_fn=_mrpo_strict_tasks, values_fn=_mrpo_strict_values,
    open_only=True, average="pooled",
))

#: protocols that follow MRPO's evaluation: judged O/X answers and App. H.2 step verification
MRPO_PROTOCOLS = ("mrpo", "mrpo_strict")


def step_prompt_for(protocols: Sequence[str]) -> str:
    """The step-verification prompt of an eval scored under ``protocols``: MRPO App. H.2's
    (``"paper"``) when one of them is an MRPO protocol, else ``"hardened"``."""
    return "paper" if any(p in MRPO_PROTOCOLS for p in protocols) else "hardened"


def answer_key(protocol: str | None) -> str:
    """The per-row answer decision a protocol reads (``judge_answer_h1`` for ``mrpo``)."""
    return "judge_answer_h1" if protocol == "mrpo" else "judge_answer"


MEDIX = _register(Protocol(
    name="medix",
    paper="MediX-R1 (Mullappilly et al. 2026, arXiv 2602.23363) Sec. 3, App. A.2 (binary JSON), A.3 "
          "(0-5 report rubric), Tables 2 and 4 (macro AVG; text-only and image+text)",
    description="binary JSON score for QA/MCQ, 0-5 rubric for reports (score = rubric / 5); the judge "
                "sees the final answer only (reasoning stripped); macro AVG over benchmarks",
    prompt="medrl.judges.prompts.grade(rubric='binary'|'report'); binary: MediX-R1's released template (check='paper')",
    metrics=(Metric("score", "Score (x100)"), Metric("accuracy", "Accuracy (%)"),
             Metric("rubric", "Report rubric (0-5)", pct=False, proportion=False)),
    main="score", tasks_fn=_medix_tasks, values_fn=_medix_values, scopes=("text", "vlm", "all"),
))

ARMED = _register(Protocol(
    name="armed",
    paper="ARMed (Liu et al. 2025, arXiv 2508.12957) Sec. 4.1, Eq. 15 (HSS), Table 1 (in-/out-of-domain Avg.)",
    description="every question that is not multiple choice (closed yes/no included): HSS; multiple "
                "choice: accuracy by exact option match; score = whichever applies, macro-averaged "
                "in-domain / out-of-domain (HSS and accuracy mixed, as Table 1); judged accuracy of "
                "open questions beside it",
    prompt="HSS: no judge (medrl.rewards.hss); judged accuracy: medrl.judges.prompts.answer_correct",
    metrics=(Metric("score", "ARMed score (x100)", proportion=False), Metric("hss", "HSS (x100)", proportion=False),
             Metric("accuracy", "Acc. MCQ (%)"), Metric("judged_accuracy", "Judged acc. open (%)")),
    main="score", tasks_fn=_armed_tasks, values_fn=_armed_values, needs_text_metrics=True,
))


def get_protocol(name: str) -> Protocol:
    return PROTOCOLS.get(name)


def parse_protocols(spec: str | Sequence[str] | None) -> list[str]:
    """``"mrpo,medix"`` or ``["mrpo", "medix"]`` -> validated, de-duplicated names (order kept);
    None/empty -> ``[DEFAULT_PROTOCOL]``."""
    if spec is None:
        return [DEFAULT_PROTOCOL]
    parts = [spec] if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for p in parts:
        for n in str(p).split(","):
            n = n.strip().lower()
            if not n:
                continue
            if n not in PROTOCOLS:
                raise ValueError(f"unknown eval protocol {n!r}; choose from {', '.join(PROTOCOLS.names())}")
            if n not in names:
                names.append(n)
    return names or [DEFAULT_PROTOCOL]


def row_tasks(row: dict, protocols: Sequence[str]) -> set[str]:
    """Union of the tasks every named protocol needs for ``row``."""
    out: set[str] = set()
    for n in protocols:
        out |= get_protocol(n).tasks(row)
    return out


# --------------------------------------------------------------------------- summaries
def _group_value(row: dict, group: str) -> str | None:
    v = row.get(group)
    if v in (None, "") and isinstance(row.get("evidence"), dict):
        v = row["evidence"].get(group)
    return str(v).strip() if v not in (None, "") else None


def _ci(values: list, proportion: bool = True, **boot) -> dict:
    """Mean and interval of the scored values: Wilson's interval for a proportion (a bootstrap of
    0 of n collapses to [0, 0]), the bootstrap for a continuous score (:func:`medrl.eval.stats.score_ci`)."""
    from medrl.eval.stats import score_ci

    vals = [v for v in values if v is not None]
    ci = score_ci(vals, proportion=proportion, **boot)
    ci["unscored"] = len(values) - len(vals)
    return ci


def dataset_kind(rows: Sequence[dict]) -> str:
    """"vlm" when any row of a dataset has an image, else "text" (MediX-R1 Table 4 splits its
    benchmarks into text-only and image+text)."""
    return "vlm" if any(r.get("images") for r in rows) else "text"


def _in_scope(scope: str, d: dict) -> bool:
    if scope == "all":
        return True
    if scope in ("in", "out"):
        return d["domain"] == scope
    return d["kind"] == scope


def summarize_protocol(rows: Sequence[dict], name: str, *, n_boot: int = 1000, alpha: float = 0.05,
                       seed: int = 0) -> dict:
    """Metrics of one protocol over scored rows::

        {"protocol", "paper", "description", "prompt", "metrics": [{key, label, pct}], "main",
         "average": "macro" | "pooled",
         "datasets": {ds: {"n", "counted", "truncated", "domain", "kind", "metrics": {key: {mean, low,
                           high, n, unscored}}, "groups": {"modality": {value: {key: {...}}}, ...}}},
         "macro":  {scope: {key: {mean, low, high, n_groups, n, datasets}}},
         "pooled": {scope: {key: {...}}},
         "headline": {scope: {key: {...}}}}     # = macro or pooled, as the paper averages

    Scopes are the protocol's (``in``/``out``/``all``, or ``text``/``vlm``/``all`` for
    ``medix``). ``counted``: rows the protocol scores (e.g. open-ended only under ``mrpo``);
    ``truncated``: counted rows whose output was cut off at the generation limit (scored as they
    are, i.e. usually wrong). A metric's ``unscored``: rows it applies to whose verdict is missing
    (outage, unparseable reply), left out of the mean and counted, never taken as 0 or 1.
    """
    from medrl.eval.stats import macro_mean_ci, pooled_mean_ci

    p = get_protocol(name)
    boot = {"n_boot": n_boot, "alpha": alpha, "seed": seed}
    by_ds: dict[str, list[tuple[dict, dict]]] = {}
    for r in rows:
        by_ds.setdefault(r.get("dataset", ""), []).append((r, p.row_metrics(r)))
    keys = [m.key for m in p.metrics]
    proportion = {m.key: m.proportion for m in p.metrics}
    datasets: dict[str, dict] = {}
    for ds, items in by_ds.items():
        metrics = {}
        for k in keys:
            vals = [m[k] for _, m in items if k in m]
            if vals:
                metrics[k] = _ci(vals, proportion[k], **boot)
        groups: dict[str, dict] = {}
        for g in p.groups:
            labelled = [(str(_group_value(r, g)), m) for r, m in items if _group_value(r, g) is not None and m]
            if not labelled:
                continue
            per: dict[str, dict] = {}
            for value in sorted({v for v, _ in labelled}):
                cell = {}
                for k in keys:
                    vals = [m[k] for v, m in labelled if v == value and k in m]
                    if vals:
                        cell[k] = _ci(vals, proportion[k], **boot)
                per[value] = cell
            groups[g] = per
        datasets[ds] = {"n": len(items), "counted": sum(1 for _, m in items if m),
                        "truncated": sum(1 for r, m in items if m and r.get("truncated") is True),
                        "domain": items[0][0].get("domain", "in"), "kind": dataset_kind([r for r, _ in items]),
                        "metrics": metrics, "groups": groups}
    averages: dict[str, dict] = {"macro": {}, "pooled": {}}
    for scope in p.scopes:
        names = [n for n, d in datasets.items() if _in_scope(scope, d)]
        if not names:
            continue
        for how, fn in (("macro", macro_mean_ci), ("pooled", pooled_mean_ci)):
            scope_m = {}
            for k in keys:
                gs = {n: [m[k] for _, m in by_ds[n] if m.get(k) is not None] for n in names
                      if k in datasets[n]["metrics"]}
                gs = {n: v for n, v in gs.items() if v}
                if gs:
                    mm = fn(gs, **boot, **({"proportion": proportion[k]} if how == "pooled" else {}))
                    mm["datasets"] = sorted(gs)
                    scope_m[k] = mm
            if scope_m:
                averages[how][scope] = scope_m
    return {"protocol": p.name, "paper": p.paper, "description": p.description, "prompt": p.prompt,
            "metrics": [{"key": m.key, "label": m.label, "pct": m.pct, "proportion": m.proportion}
                        for m in p.metrics], "main": p.main,
            "average": p.average, "datasets": datasets, "macro": averages["macro"], "pooled": averages["pooled"],
            "headline": averages[p.average]}


def summarize_protocols(rows: Sequence[dict], names: Sequence[str], **boot: Any) -> dict:
    """``{name: summarize_protocol(rows, name)}`` for every named protocol, in order."""
    return {n: summarize_protocol(rows, n, **boot) for n in parse_protocols(list(names))}


#: Metrics that are not a correct/wrong verdict (continuous scores, step shares, rubrics).
_NOT_VERDICTS = ("hss", "score", "rubric", "valid_steps")


def row_correct(row: dict, protocol: str = DEFAULT_PROTOCOL) -> bool | None:
    """One correct/wrong verdict per output under ``protocol`` (its accuracy metric: ``accuracy``,
    ``overall``, else ``judged_accuracy``), for paired comparisons and FFP analyses; None when the
    row is not scored under it, has only a continuous score (HSS, rubric) or is unscored."""
    p = get_protocol(protocol)
    m = p.row_metrics(row)
    key = next((k for k in (p.main, "accuracy", "overall", "judged_accuracy") if k in m and k not in _NOT_VERDICTS),
               None)
    if key is None or m[key] is None:
        return None
    return bool(round(m[key]))
