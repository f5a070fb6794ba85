"""The papers' evaluation settings: MRPO App. H.1's answer check under ``--protocol mrpo`` (the
strict check as ``mrpo_strict``), App. H.2's step prompt under the MRPO protocols, MediX-R1's
three judge rounds under ``--protocol medix``, and their cost in ``medrl eval --dry-run``."""

from __future__ import annotations

import json

import pytest

from medrl.eval.protocols import answer_key, step_prompt_for, summarize_protocol
from medrl.eval.scoring import answer_h1, score_rows
from medrl.judges.base import JudgeStats, run_sync
from medrl.types import StepVerdict, Verdict


class Recorder:
    """Records what it is asked; accepts only answers naming every reference word."""

    name = "recorder"
    images = False

    def __init__(self):
        self.stats = JudgeStats()
        self.asked: list[tuple] = []

    async def answer_correct(self, question, reference, prediction, *, image=None, check="strict"):
        self.asked.append(("answer", check, prediction))
        return Verdict.ok(all(w in prediction.lower() for w in reference.lower().split()))

    async def grade(self, question, reference, prediction, *, rubric="binary", image=None, rounds=1):
        self.asked.append(("grade", rubric, rounds))
        return Verdict.ok(1.0)

    async def verify_steps(self, question, reference, steps, *, gold_reasoning=None, evidence=None, image=None,
                           step_prompt="hardened"):
        self.asked.append(("steps", step_prompt))
        return Verdict.ok([StepVerdict(1, 1) for _ in steps])


def _row(i, answer, reference="pleural effusion", **kw):
    return {"key": f"d:{i}", "dataset": "d", "domain": "in", "record_id": str(i), "question": "What is seen?",
            "reference": reference, "open_ended": True, "images": [], "evidence": None, "gold_reasoning": None,
            "output": f"<think>A finding is seen.</think><answer>{answer}</answer>", **kw}


def test_answer_h1_asks_the_judge_alone_with_the_paper_check():
    j = Recorder()
    assert run_sync(answer_h1("", "pleural effusion", "q", j)) is False            # empty: wrong, no call
    assert run_sync(answer_h1("Pleural effusion.", "pleural effusion", "q", j)) is True  # exact: right, no call
    assert j.asked == []
    # a hedge goes to the judge (no answer guard in front), asked with H.1's check
    assert run_sync(answer_h1("pleural effusion or pneumonia", "pleural effusion", "q", j)) is True
    assert j.asked == [("answer", "paper", "pleural effusion or pneumonia")]


def test_mrpo_reads_h1_and_mrpo_strict_the_strict_decision():
    j = Recorder()
    rows = [_row(0, "pleural effusion or pneumonia"), _row(1, "effusion")]
    scored = score_rows(rows, j, rubrics=(), text_metrics=False, protocols=["mrpo", "mrpo_strict"])
    h1 = [r["scores"]["judge_answer_h1"] for r in scored]
    strict = [r["scores"]["judge_answer"] for r in scored]
    assert h1 == [1.0, 0.0] and strict == [0.0, 0.0]  # the strict guard refuses the hedge without a call
    assert summarize_protocol(scored, "mrpo", n_boot=0)["datasets"]["d"]["metrics"]["accuracy"]["mean"] == 0.5
    assert summarize_protocol(scored, "mrpo_strict", n_boot=0)["datasets"]["d"]["metrics"]["accuracy"]["mean"] == 0
    assert ("steps", "paper") in j.asked and all(r["judge"]["step_prompt"] == "paper" for r in scored)
    assert answer_key("mrpo") == "judge_answer_h1" and answer_key("mrpo_strict") == "judge_answer"
    assert step_prompt_for(["standard"]) == "hardened" and step_prompt_for(["medix", "mrpo_strict"]) == "paper"
    # under the other protocols the judge keeps its default step prompt (the keyword is not sent)
    j2 = Recorder()
    score_rows([_row(0, "x")], j2, rubrics=(), text_metrics=False, protocols=["standard"])
    assert ("steps", "hardened") in j2.asked


def test_judge_rounds_reach_every_grade():
    j = Recorder()
    scored = score_rows([_row(0, "some effusion")], j, rubrics=("binary",), verify_steps=False, text_metrics=False,
                        protocols=["medix"], judge_rounds=3)
    assert ("grade", "binary", 3) in j.asked and scored[0]["judge"]["rounds"] == 3
    with pytest.raises(ValueError, match="judge_rounds"):
        score_rows([_row(0, "x")], j, rubrics=("binary",), judge_rounds=0)


def test_eval_dry_run_counts_three_rounds_under_medix(tmp_path, capsys):
    from medrl.cli import main

    from PIL import Image

    Image.new("RGB", (16, 16), (90, 90, 90)).save(tmp_path / "x.png")
    recs = [{"id": f"r{i}", "question": f"Which organ {i}?", "answer": "liver", "images": [str(tmp_path / "x.png")]}
            for i in range(4)]
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in recs))
    out = tmp_path / "ev"
    args = ["eval", "--data", f"jsonl:{data}", "--out", str(out), "--dry-run", "--no-steps",
            "--allow-outside-data-root"]
    assert main(args + ["--protocol", "medix", "--rubric", "none"]) == 0
    lines = capsys.readouterr().out
    assert "3 evaluation round(s)" in lines and "grade_binary 12" in lines and "cost unknown" in lines
    assert main(args + ["--protocol", "medix", "--rubric", "none", "--judge-rounds", "1",
                        "--judge-price", "1", "2"]) == 0
    lines = capsys.readouterr().out
    assert "grade_binary 4" in lines and "cost $" in lines
    assert not out.exists() or not any(out.iterdir())  # nothing generated or judged
