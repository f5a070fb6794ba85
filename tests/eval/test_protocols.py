"""Eval protocols (standard, mrpo, medix, armed): which rows get which score, closed/open split,
per-modality groups, several protocols over the same saved outputs in one report, and the real
VQA-RAD / SLAKE splits with fabricated outputs (no generation)."""

import json
from pathlib import Path

import pytest

from medrl.data.record import VQARecord
from medrl.eval import protocols as P
from medrl.eval.runner import EvalDataset, rescore_run, run_eval
from medrl.judges.base import JudgeStats
from medrl.types import StepVerdict, Verdict

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


class CountingJudge:
    """answer_correct: the reference's words all appear in the answer; grade: exact; steps all valid."""

    name, images = "counting", False

    def __init__(self):
        self.stats, self.calls = JudgeStats(), {"answer": [], "grade": [], "steps": 0}

    async def answer_correct(self, question, reference, prediction, *, image=None, check="strict"):
        self.calls["answer"].append(prediction)
        if reference == "outage":
            return Verdict.unscored("judge down")
        return Verdict.ok(all(w in prediction.lower() for w in reference.lower().split()))

    async def grade(self, question, reference, prediction, *, rubric="binary", image=None):
        self.calls["grade"].append((rubric, prediction))
        ok = prediction.strip().lower() == reference.strip().lower()
        return Verdict.ok((5.0 if ok else 2.0) if rubric == "report" else float(ok))

    async def verify_steps(self, question, reference, steps, *, gold_reasoning=None, evidence=None, image=None,
                           step_prompt="hardened"):
        self.calls["steps"] += 1
        return Verdict.ok([StepVerdict(0 if "wrong" in s else 1, 0 if "wrong" in s else 1) for s in steps])


def _rec(rid, q, a, at, open_ended, modality=None, organ=None, choices=None):
    extras = {"choices": choices, "choices_in_prompt": True} if choices else {}
    return VQARecord(id=rid, images=[], question=q, answer=a, answer_type=at, open_ended=open_ended,
                     modality=modality, organ=organ, extras=extras)


RECS = [
    _rec("c1", "Is there a mass?", "yes", "CLOSED", False, "CT", "Lung"),
    _rec("c2", "Is the heart enlarged?", "no", "CLOSED", False, "X-Ray", "Chest"),
    _rec("c3", "Left or right kidney?", "left", "CLOSED", True, "CT", "Abdomen"),
    _rec("o1", "Which organ is shown?", "liver", "OPEN", True, "CT", "Abdomen"),
    _rec("o2", "What abnormality is seen?", "pleural effusion", "OPEN", True, "X-Ray", "Chest"),
    _rec("o3", "What is wrong here?", "outage", "OPEN", True, "MRI", "Brain"),
    _rec("m1", "Which modality?\nA: CT\nB: MRI", "MRI", "CLOSED", False, choices=["CT", "MRI"]),
]
OUTS = {
    "c1": "<think>There is a round opacity. It is a mass.</think><answer>Yes, there is a mass.</answer>",
    "c2": "<answer>yes or no</answer>",                       # hedge on a closed question: wrong
    "c3": "<think>The left kidney is small.</think><answer>right</answer>",
    "o1": "<think>The organ is in the right upper quadrant.</think><answer>the liver</answer>",
    "o2": "<think>This step is wrong.</think><answer>effusion</answer>",
    "o3": "<answer>partial outage</answer>",                  # reaches the judge, which is down
    "m1": "<answer>(B)</answer>",                              # option label -> MRI: right
}


def _gen(recs):
    return [OUTS[r.id] for r in recs]


def test_row_facts_and_option_mapping():
    rows = {r.id: {"reference": r.answer, "answer_type": r.answer_type, "open_ended": r.open_ended,
                   "choices": r.extras.get("choices"), "question": r.question} for r in RECS}
    assert [P.question_kind(rows[i]) for i in ("c1", "c3", "o1", "m1")] == ["closed", "closed", "open", "closed"]
    # the papers' open-ended sense differs: an "A or B?" question with a free-text answer is open
    assert P.is_open_papers(rows["c3"]) and not P.is_open_papers(rows["m1"]) and not P.is_open_papers(rows["c1"])
    # no answer_type: the shared rule (yes/no reference = closed)
    assert P.question_kind({"reference": "No"}) == "closed" and P.question_kind({"reference": "the liver"}) == "open"
    ch = ["CT", "MRI", "X-ray"]
    for pred, want in [("B", "MRI"), ("(b)", "MRI"), ("Option B", "MRI"), ("B: MRI", "MRI"), ("B. MRI", "MRI"),
                       ("answer: c", "X-ray"), ("B: CT", "CT"), ("MRI", "MRI"), ("Both", "Both"), ("D", "D")]:
        assert P.option_text(pred, ch) == want, pred
    mc = {"reference": "MRI", "choices": ch, "question": "Which?"}
    exact = lambda pred: P.exact_correct({**mc, "prediction": pred})  # noqa: E731
    assert exact("B") and exact("mri.") and not exact("A") and not exact("B: CT") and not exact("D")
    # exploit cases on closed questions go through the shared guard: lists, hedges, padding, placeholders
    yes = {"reference": "yes", "question": "Is there a mass?"}
    assert P.exact_correct({**yes, "prediction": "Yes, there is."})
    for bad in ("yes or no", "yes/no", "", "N/A", "no"):
        assert not P.exact_correct({**yes, "prediction": bad}), bad
    assert P.exact_correct({"reference": "x"}) is not None  # a missing prediction is read from the output
    assert P.parse_protocols("mrpo, medix,mrpo") == ["mrpo", "medix"] and P.parse_protocols(None) == ["standard"]
    with pytest.raises(ValueError, match="unknown eval protocol"):
        P.parse_protocols("mrpo,nope")


def test_standard_splits_closed_and_open_with_groups(tmp_path):
    judge = CountingJudge()
    m = run_eval([EvalDataset("toy:test", RECS)], _gen, judge, tmp_path / "ev", rubrics=(), verify_steps=False,
                 text_metrics=False, n_boot=200, progress=False, protocols=["standard"])
    # closed rows never reach the judge; open rows do (o1 is an exact match after normalisation:
    # decided without a call)
    assert sorted(judge.calls["answer"]) == ["effusion", "partial outage"] and not judge.calls["grade"]
    d = m["protocols"]["standard"]["datasets"]["toy:test"]
    closed, open_, overall = (d["metrics"][k] for k in ("closed", "open", "overall"))
    assert (closed["n"], closed["mean"]) == (4, 0.5)          # c1 yes, c2 hedge, c3 wrong side, m1 (B) = MRI
    assert (open_["n"], open_["unscored"], open_["mean"]) == (2, 1, 0.5)  # o1 right, o2 wrong, o3 unscored
    assert (overall["n"], overall["unscored"], overall["mean"]) == (6, 1, 0.5)
    assert overall["low"] <= 0.5 <= overall["high"]
    ct = d["groups"]["modality"]["CT"]
    assert ct["closed"]["mean"] == 0.5 and ct["open"]["mean"] == 1.0 and ct["overall"]["n"] == 3
    assert set(d["groups"]["organ"]) == {"Lung", "Chest", "Abdomen", "Brain"}
    rows = [json.loads(l) for l in (tmp_path / "ev" / "outputs.jsonl").read_text().splitlines()]
    assert {r["record_id"]: r["scores"].get("exact") for r in rows}["m1"] == 1.0


def test_three_protocols_on_the_same_saved_outputs_in_one_report(tmp_path):
    run_eval([EvalDataset("toy:test", RECS)], _gen, CountingJudge(), tmp_path / "ev", rubrics=(),
             verify_steps=False, text_metrics=False, n_boot=100, progress=False, protocols=["standard"])
    judge = CountingJudge()
    m = rescore_run(tmp_path / "ev", judge, tmp_path / "re", rubrics=(), text_metrics=False, n_boot=100,
                    progress=False, protocols=["mrpo", "medix", "standard"])
    assert list(m["protocols"]) == ["mrpo", "medix", "standard"]
    mrpo = m["protocols"]["mrpo"]["datasets"]["toy:test"]
    # MRPO: open-ended questions in the papers' sense only: c3 (free-text "A or B?"), o1, o2, o3
    assert mrpo["counted"] == 4 and mrpo["metrics"]["accuracy"]["n"] == 3 and mrpo["metrics"]["accuracy"]["mean"] == 1 / 3
    assert mrpo["metrics"]["valid_steps"]["mean"] == pytest.approx((1 + 1 + 0) / 3)  # c3, o1 valid; o2 "wrong"
    medix = m["protocols"]["medix"]["datasets"]["toy:test"]
    # MediX binary grade on every row; the judge sees "MRI" for "(B)" (option text), and only
    # the answer, never the reasoning
    assert medix["counted"] == 7 and ("binary", "MRI") in judge.calls["grade"]
    assert not any("opacity" in p for _, p in judge.calls["grade"])
    assert medix["metrics"]["accuracy"]["mean"] == pytest.approx(1 / 7)
    std = m["protocols"]["standard"]["datasets"]["toy:test"]["metrics"]
    assert std["closed"]["mean"] == 0.5 and std["open"]["mean"] == 0.5
    report = (tmp_path / "re" / "report.md").read_text()
    for name in ("mrpo", "medix", "standard"):
        assert f"Protocol `{name}`" in report
    assert "per modality" in report and "Closed acc. (%)" in report


def test_armed_and_medix_report_rubric():
    rows = [
        {"dataset": "d", "domain": "in", "reference": "liver", "open_ended": True,
         "scores": {"hss": 0.8, "judge_answer": 1.0}},
        {"dataset": "d", "domain": "in", "reference": "spleen", "open_ended": True,
         "scores": {"hss": 0.4, "judge_answer": 0.0}},
        {"dataset": "o", "domain": "out", "reference": "MRI", "choices": ["CT", "MRI"], "prediction": "B",
         "open_ended": False, "scores": {}},
        {"dataset": "o", "domain": "out", "reference": " ".join(["finding"] * 40), "task": "report",
         "scores": {"judge_report": 4.0}},
    ]
    a = P.summarize_protocol(rows, "armed", n_boot=50)
    assert a["datasets"]["d"]["metrics"]["hss"]["mean"] == pytest.approx(0.6)
    assert a["datasets"]["o"]["metrics"]["accuracy"]["mean"] == 1.0  # exact option match decided on the fly
    assert set(a["macro"]) == {"in", "out", "all"} and a["macro"]["in"]["hss"]["mean"] == pytest.approx(0.6)
    # ARMed's score mixes HSS (non-multiple-choice rows; the report row here has none computed) and
    # multiple-choice accuracy
    assert a["datasets"]["o"]["metrics"]["score"]["n"] == 1 and a["datasets"]["d"]["metrics"]["score"]["n"] == 2
    mx = P.summarize_protocol(rows, "medix", n_boot=50)
    assert mx["datasets"]["o"]["metrics"]["rubric"]["mean"] == 4.0  # long-form item: 0-5 rubric
    assert mx["datasets"]["o"]["metrics"]["score"]["mean"] == pytest.approx(0.8)  # rubric / 5
    assert P.row_correct(rows[0], "armed") is True and P.row_correct(rows[1], "standard") is False


def _fabricate(recs, right_every=2):
    """Outputs that answer every ``right_every``-th record with its reference, else "unsure"."""
    index = {r.id: i for i, r in enumerate(recs)}
    return lambda batch: [f"<answer>{r.answer if index[r.id] % right_every == 0 else 'stomach'}</answer>"
                          for r in batch]


@pytest.mark.skipif(not (DATA / "vqa_rad").is_dir(), reason="real VQA-RAD not present")
def test_standard_on_all_451_vqa_rad_test_records(tmp_path):
    from medrl.data import load_records

    recs = load_records("vqa_rad", split="test", data_dir=DATA)
    assert len(recs) == 451
    m = run_eval([EvalDataset("vqa_rad:test", recs)], _fabricate(recs), CountingJudge(), tmp_path / "ev",
                 rubrics=(), verify_steps=False, text_metrics=False, n_boot=200, progress=False,
                 protocols=["standard"])
    d = m["protocols"]["standard"]["datasets"]["vqa_rad:test"]["metrics"]
    # the dataset's own OPEN/CLOSED label: 272 closed, 179 open (VQA-RAD card, LLaVA-Med)
    assert (d["closed"]["n"], d["open"]["n"], d["overall"]["n"]) == (272, 179, 451)
    for k in ("closed", "open", "overall"):
        assert 0.35 < d[k]["mean"] < 0.65 and d[k]["low"] < d[k]["mean"] < d[k]["high"]
    organs = m["protocols"]["standard"]["datasets"]["vqa_rad:test"]["groups"]["organ"]
    assert sum(c["overall"]["n"] for c in organs.values()) == 451 and len(organs) == 3


@pytest.mark.skipif(not (DATA / "slake").is_dir(), reason="real SLAKE not present")
def test_standard_on_slake_per_modality(tmp_path):
    from medrl.data import load_records

    recs = load_records("slake", split="validate", data_dir=DATA)
    m = run_eval([EvalDataset("slake:validate", recs)], _fabricate(recs), CountingJudge(), tmp_path / "ev",
                 rubrics=(), verify_steps=False, text_metrics=False, n_boot=100, progress=False,
                 protocols=["standard"])
    ds = m["protocols"]["standard"]["datasets"]["slake:validate"]
    mods = ds["groups"]["modality"]
    assert {"CT", "MRI", "X-Ray"} <= set(mods)
    assert sum(c["overall"]["n"] for c in mods.values()) == len(recs) == ds["metrics"]["overall"]["n"]
    assert all("closed" in c and "open" in c for c in mods.values())
    assert "per modality" in (tmp_path / "ev" / "report.md").read_text()


def test_cli_protocol_and_suite(tmp_path, capsys):
    from medrl.cli import main
    from medrl.commands.eval import _apply_suite, _open_only
    from medrl.data.registry import suite_specs

    assert main(["eval", "--rescore", str(tmp_path), "--out", str(tmp_path / "x"), "--protocol", "bogus"]) == 2
    assert "unknown eval protocol" in capsys.readouterr().err

    class A:
        include_closed, protocol = False, "mrpo"
    assert _open_only(A) is True
    A.protocol = "mrpo,standard"
    assert _open_only(A) is False
    present, missing = suite_specs("huatuo", tmp_path)
    assert present == [] and len(missing) == 6 and "MMMU" in " ".join(w for _, w in missing)
    (tmp_path / "omni" / "QA_information" / "Open-access").mkdir(parents=True)
    (tmp_path / "omni").rename(tmp_path / "OmniMedVQA")

    class S:
        suite, data_dir, data = "huatuo", str(tmp_path), []
    _apply_suite(S)
    assert S.data == ["omnimedvqa:test"]
    assert "mmmu_med:validation missing" in capsys.readouterr().err


# --------------------------------------------------------------------------- truncation
def test_truncated_outputs_are_counted_per_dataset_and_in_the_report(tmp_path):
    from medrl.eval.runner import Generation
    from medrl.eval.scoring import is_truncated

    cut = "<think>The image shows a large opacity in the right lower lobe that extends"
    assert is_truncated(cut, n_tokens=16, max_new_tokens=16) is True
    assert is_truncated(cut, finish_reason="length") is True and is_truncated(cut, finish_reason="stop") is False
    assert is_truncated(cut + "</think><answer>mass</answer>", n_tokens=16, max_new_tokens=16) is False
    assert is_truncated(cut, n_tokens=5, max_new_tokens=16) is False  # stopped early: not cut off
    assert is_truncated(cut) is None  # a plain string says nothing about how generation stopped

    def gen(recs):
        return [Generation(cut if r.id == "o1" else OUTS[r.id], n_tokens=16 if r.id == "o1" else 9,
                           max_new_tokens=16) for r in recs]

    m = run_eval([EvalDataset("toy:test", RECS)], gen, CountingJudge(), tmp_path / "ev", rubrics=(),
                 verify_steps=False, text_metrics=False, n_boot=50, progress=False, protocols=["standard", "mrpo"],
                 generation={"max_new_tokens": 16})
    assert m["datasets"]["toy:test"]["truncated"] == 1 and m["datasets"]["toy:test"]["truncation_known"] == 7
    assert m["protocols"]["standard"]["datasets"]["toy:test"]["truncated"] == 1
    assert m["protocols"]["mrpo"]["datasets"]["toy:test"]["truncated"] == 1
    rows = {json.loads(l)["record_id"]: json.loads(l) for l in (tmp_path / "ev" / "outputs.jsonl").read_text().splitlines()}
    assert rows["o1"]["truncated"] is True and rows["c1"]["truncated"] is False
    report = (tmp_path / "ev" / "report.md").read_text()
    assert "Truncated" in report and "1 output(s) hit the generation limit" in report


def test_cli_eval_reports_cut_off_outputs_and_defaults_to_the_trained_length(tmp_path, capsys):
    """`medrl eval` with a tiny random model: every output is cut off at --max-new-tokens 4 (no
    closing answer tag); the default limit is the run folder's grpo.max_completion_length."""
    import yaml

    from medrl.cli import main
    from medrl.data.record import write_jsonl
    from medrl.eval.runner import default_max_new_tokens
    from medrl.models import build_tiny_vlm
    from synthetic import synthetic_records

    model = build_tiny_vlm(tmp_path / "run" / "model", hidden_size=32, num_layers=1)
    (tmp_path / "img").mkdir()
    write_jsonl(synthetic_records(tmp_path / "img")[:2], tmp_path / "fx.jsonl")
    out = tmp_path / "ev"
    assert main(["eval", "--model", str(model), "--data", f"jsonl:{tmp_path / 'fx.jsonl'}", "--judge", "reference",
                 "--out", str(out), "--max-new-tokens", "4", "--bootstrap", "20", "--no-steps",
                 "--no-text-metrics", "--rubric", "none"]) == 0
    printed = capsys.readouterr()
    assert "truncated=2" in printed.out and "max_new_tokens=4 (--max-new-tokens)" in printed.err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["datasets"][f"jsonl:{tmp_path / 'fx.jsonl'}"]["truncated"] == 2
    # default: the completion length the run was trained with, from the run folder's config.yaml
    assert default_max_new_tokens(model) == (1024, "default (the model folder names no training completion length)")
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump({"recipe": {"grpo": {"max_completion_length": 2048}}}))
    n, src = default_max_new_tokens(model)
    assert n == 2048 and "config.yaml" in src


def test_analyze_without_protocol_uses_mrpo_criterion_and_leaves_closed_rows_out(tmp_path):
    """An eval scored under ``standard`` with MediX-R1's binary grade too: `medrl analyze` without
    --protocol wants MRPO's criterion (App. H.1's check, ``judge_answer_h1``), which this eval never
    asked: without a judge it falls back to the stored verdict and counts it, and analyses
    open-ended rows only; the protocols stored with the eval are named in the report."""
    from medrl.cli import main
    from medrl.eval.scoring import stored_protocols

    out = tmp_path / "ev"
    run_eval([EvalDataset("toy:test", RECS)], _gen, CountingJudge(), out, rubrics=("binary",), verify_steps=True,
             text_metrics=False, n_boot=20, progress=False, protocols=["standard"])
    assert stored_protocols(out) == ["standard"]
    rows = {r["record_id"]: r for r in (json.loads(l) for l in (out / "outputs.jsonl").read_text().splitlines())}
    # o1 "the liver" for "liver": right by the answer decision, wrong by MediX-R1's exact grade
    assert rows["o1"]["scores"]["judge_answer"] == 1.0 and rows["o1"]["scores"]["judge_binary"] == 0.0
    assert main(["analyze", str(out), "--out", str(tmp_path / "an")]) == 0
    items = {json.loads(l)["key"]: json.loads(l) for l in (tmp_path / "an" / "per_output_ev.jsonl").read_text().splitlines()}
    assert set(items) == {"toy:test:c3", "toy:test:o1", "toy:test:o2", "toy:test:o3"}  # c1, c2, m1 left out
    # the strict decision is not MRPO's H.1 check: the fallback verdict (MediX-R1's grade) is used and named
    assert items["toy:test:o1"]["correct"] is False and items["toy:test:o1"]["correct_from"] == "fallback"
    analysis = json.loads((tmp_path / "an" / "analysis.json").read_text())["tables"]["ev"]
    assert analysis["criterion"]["protocol"] == "mrpo" and analysis["criterion"]["closed_left_out"] == 3
    assert "scored under ['standard'], not 'mrpo'" in (tmp_path / "an" / "report.md").read_text()
    # --include-closed keeps them; --protocol picks another criterion
    assert main(["analyze", str(out), "--out", str(tmp_path / "an2"), "--include-closed", "--protocol", "medix"]) == 0
    items2 = [json.loads(l) for l in (tmp_path / "an2" / "per_output_ev.jsonl").read_text().splitlines()]
    assert len(items2) == 7 and {i["key"]: i["correct"] for i in items2}["toy:test:o1"] is False


def test_qwen3_thinking_tag_is_read_as_reasoning():
    """Qwen3 models write <thinking>...</thinking>: the steps, the judged answer and the step
    verification read it like <think>; the strict format check (the papers' format reward) does not."""
    from medrl.answers.completion import completion_steps, parse_response, prediction_text

    out = "<thinking>The film is a chest X-ray. The right costophrenic angle is blunted.</thinking>\n<answer>pleural effusion</answer>"
    p = parse_response(out)
    assert p.reasoning.startswith("The film") and p.answer == "pleural effusion" and not p.well_formed
    assert [s.text for s in completion_steps(out)] == ["The film is a chest X-ray.",
                                                       "The right costophrenic angle is blunted."]
    assert prediction_text("<THINKING>long thought</THINKING> effusion") == "effusion"
    assert parse_response(out.replace("thinking>", "think>")).well_formed
