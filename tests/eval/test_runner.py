"""``medrl eval`` engine with a fake generator and a fake judge: outputs, unscored handling,
resumability (generation and scoring), re-scoring with another judge, metrics and CIs."""

import json
import math

import pytest

from medrl.data import VQARecord
from medrl.eval.runner import EvalDataset, EvalFolderMismatch, load_run, read_rows, rescore_run, run_eval
from medrl.eval.scoring import is_empty_answer, prediction_text
from medrl.eval.stats import macro_mean_ci, mean_ci
from medrl.judges.base import JudgeStats
from medrl.types import StepVerdict, Verdict


class FakeJudge:
    """Correct iff the prediction equals the reference; a step is valid unless it says 'wrong';
    the reference 'outage' is unscorable. Counts calls."""

    def __init__(self, name="fake", flip=False):
        self.name, self.flip, self.stats = name, flip, JudgeStats()
        self.grades, self.verifies, self.seen_predictions = 0, 0, []

    async def grade(self, question, reference, prediction, *, rubric="binary"):
        self.grades += 1
        self.seen_predictions.append(prediction)
        if reference == "outage":
            return Verdict.unscored("judge outage")
        ok = prediction.strip().lower() == reference.lower()
        ok = (not ok) if self.flip else ok
        return Verdict.ok((5.0 if ok else 1.0) if rubric == "report" else float(ok), raw=f"score={int(ok)}")

    async def verify_steps(self, question, reference, steps, *, gold_reasoning=None, evidence=None, image=None):
        self.verifies += 1
        return Verdict.ok([StepVerdict(0, 0 if "wrong" in s else 1) for s in steps])


def records(n, prefix="r"):
    refs = ["liver", "lung", "outage", "brain", "kidney", "heart", "spleen", "colon", "bone", "skin"]
    return [VQARecord(id=f"{prefix}{i}", images=[], question=f"What organ {i}?", answer=refs[i % len(refs)],
                      answer_type="OPEN", open_ended=True) for i in range(n)]


class FakeGenerator:
    """Deterministic outputs; answers right for even record numbers. Fails after ``fail_after``
    records (an interruption). Records the ids it was asked for."""

    def __init__(self, fail_after=None):
        self.fail_after, self.asked = fail_after, []

    def __call__(self, recs):
        if self.fail_after is not None and len(self.asked) + len(recs) > self.fail_after:
            raise RuntimeError("generation interrupted")
        self.asked += [r.id for r in recs]
        outs = []
        for r in recs:
            i = int(r.id.lstrip("rs"))
            ans = r.answer if i % 2 == 0 else "stomach"
            steps = "The image is a CT scan. This step is wrong. The organ is visible." if i % 3 else \
                "The image is a CT scan. The organ is visible."
            outs.append(f"<think>{steps}</think><answer>{ans}</answer>")
        return outs


def _run(tmp_path, gen, judge, n=8, **kw):
    ds = [EvalDataset("toy:test", records(n)), EvalDataset("ood:test", records(4, "s"), domain="out")]
    return run_eval(ds, gen, judge, tmp_path / "ev", batch_size=2, text_metrics=False, n_boot=200,
                    progress=False, model="fake", **kw)


def test_prediction_text_strips_reasoning():
    assert prediction_text("<think>it is the lung</think><answer> liver </answer>") == "liver"
    assert prediction_text("<think>lung lung</think> liver") == "liver"
    assert prediction_text("just liver") == "just liver"
    assert is_empty_answer(" . ") and is_empty_answer("-") and not is_empty_answer("no")


def test_eval_outputs_metrics_and_unscored(tmp_path):
    judge = FakeJudge()
    m = _run(tmp_path, FakeGenerator(), judge)
    out = tmp_path / "ev"
    rows = load_run(out)
    assert len(rows) == 12 and len(read_rows(out / "generations.jsonl")) == 12
    r0 = rows[0]
    for field in ("key", "dataset", "question", "reference", "output", "answer", "scores", "judge", "steps",
                  "step_verdicts", "evidence"):
        assert field in r0
    assert r0["key"] == "toy:test:r0" and r0["answer"] == "liver" and r0["scores"]["judge_binary"] == 1.0
    # the judge never saw the reasoning
    assert all("<think>" not in p and "CT scan" not in p for p in judge.seen_predictions)
    # record r2 ("outage") is unscored: excluded and counted, not 0 or 1
    r2 = next(r for r in rows if r["key"] == "toy:test:r2")
    assert r2["scores"]["judge_binary"] is None and "outage" in r2["judge"]["binary_error"]
    toy = m["datasets"]["toy:test"]["metrics"]["judge_binary"]
    # 8 records, r2 unscored; correct = even ids {r0, r4, r6} of the 7 scored -> 3/7
    assert toy["unscored"] == 1 and toy["n"] == 7 and math.isclose(toy["mean"], 3 / 7)
    assert toy["low"] <= toy["mean"] <= toy["high"]
    ood = m["datasets"]["ood:test"]["metrics"]["judge_binary"]
    # s2 is the outage; of s0, s1, s3 only s0 (even) is right -> 1/3
    assert ood["unscored"] == 1 and math.isclose(ood["mean"], 1 / 3)
    assert math.isclose(m["macro"]["all"]["judge_binary"]["mean"], (3 / 7 + 1 / 3) / 2)
    assert set(m["macro"]) == {"in", "out", "all"}
    # step verdicts: 3 steps when id % 3 != 0, the second one invalid
    r1 = rows[1]
    assert len(r1["steps"]) == 3 and [v["answer_contribution"] for v in r1["step_verdicts"]] == [1, 0, 1]
    for f in ("metrics.json", "report.md", "report.html"):
        assert (out / f).exists()
    assert "judge_binary" in json.loads((out / "metrics.json").read_text())["datasets"]["toy:test"]["metrics"]


def test_interrupted_generation_resumes_without_redoing(tmp_path):
    gen = FakeGenerator(fail_after=5)  # batches of 2: r0-r1, r2-r3 saved, third batch fails
    with pytest.raises(RuntimeError):
        _run(tmp_path, gen, FakeJudge())
    assert [r["key"] for r in read_rows(tmp_path / "ev" / "generations.jsonl")] == [
        "toy:test:r0", "toy:test:r1", "toy:test:r2", "toy:test:r3"]
    gen2 = FakeGenerator()
    _run(tmp_path, gen2, FakeJudge())
    assert gen2.asked == ["r4", "r5", "r6", "r7", "s0", "s1", "s2", "s3"]  # nothing redone
    rows = load_run(tmp_path / "ev")
    assert [r["key"] for r in rows][:4] == ["toy:test:r0", "toy:test:r1", "toy:test:r2", "toy:test:r3"]
    assert len(rows) == 12 and len({r["key"] for r in rows}) == 12
    # a third run has nothing left to generate; only the two unscored outputs (the "outage"
    # references r2, s2) are asked again (issue 12: resume retries unscored rows)
    gen3, judge3 = FakeGenerator(), FakeJudge()
    _run(tmp_path, gen3, judge3)
    assert gen3.asked == [] and judge3.grades == 2


def test_interrupted_scoring_resumes_and_survives_a_torn_line(tmp_path):
    _run(tmp_path, FakeGenerator(), FakeJudge())
    path = tmp_path / "ev" / "outputs.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])  # crash in the middle of line 6
    judge = FakeJudge()
    gen = FakeGenerator()
    _run(tmp_path, gen, judge)
    assert gen.asked == []
    # the 7 outputs not fully saved were scored again, plus r2 whose grade was unscored (outage)
    assert judge.verifies == 8
    assert len(load_run(tmp_path / "ev")) == 12


def test_resume_refuses_different_settings(tmp_path):
    _run(tmp_path, FakeGenerator(), FakeJudge())
    with pytest.raises(EvalFolderMismatch, match="judge"):
        _run(tmp_path, FakeGenerator(), FakeJudge(name="other"))


def test_rescore_with_another_judge_does_not_regenerate(tmp_path):
    _run(tmp_path, FakeGenerator(), FakeJudge(), rubrics=("binary", "report"))
    judge_b = FakeJudge(name="flipped", flip=True)
    m = rescore_run(tmp_path / "ev", judge_b, tmp_path / "ev_b", text_metrics=False, n_boot=100, progress=False)
    rows_a, rows_b = load_run(tmp_path / "ev"), load_run(tmp_path / "ev_b")
    assert [r["output"] for r in rows_a] == [r["output"] for r in rows_b]
    flipped = 0
    for a, b in zip(rows_a, rows_b):
        if "guard" in (b["judge"].get("binary_note") or ""):  # refused before any judge: the same 0
            assert a["scores"]["judge_binary"] == b["scores"]["judge_binary"] == 0.0
        elif a["scores"]["judge_binary"] is not None:
            assert b["scores"]["judge_binary"] == 1.0 - a["scores"]["judge_binary"]
            flipped += 1
    assert flipped >= 1
    assert rows_a[0]["scores"]["judge_report"] == 5.0
    assert m["config"]["rescored_from"].endswith("ev") and m["config"]["judge"]["spec"] == "flipped"
    with pytest.raises(ValueError):
        rescore_run(tmp_path / "ev", judge_b, tmp_path / "ev")


def test_bootstrap_ci():
    ci = mean_ci([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], n_boot=2000, seed=1)
    assert ci["mean"] == 0.7 and ci["n"] == 10
    # the 95% interval of a 10-sample Bernoulli mean at 0.7 is wide: roughly [0.4, 1.0]
    assert 0.3 <= ci["low"] <= 0.5 and 0.9 <= ci["high"] <= 1.0
    assert mean_ci([]) == {"mean": None, "low": None, "high": None, "n": 0}
    assert mean_ci([0.5])["low"] == 0.5
    assert mean_ci([0.2, 0.2, 0.2])["low"] == pytest.approx(0.2)
    m = macro_mean_ci({"a": [1, 1, 1, 1], "b": [0, 0, 1, 1], "c": []}, n_boot=500)
    assert m["mean"] == 0.75 and m["n_groups"] == 2 and m["low"] <= 0.75 <= m["high"]
