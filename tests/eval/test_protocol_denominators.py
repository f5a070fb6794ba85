"""MRPO's two accuracy denominators (all open-ended outputs vs. MRPO's evaluation script, which
leaves outputs without an <answer> out: O / (O + X)) and the per-subject breakdown of MMMU
(CAPO Table 3) under the standard protocol, worked by hand."""

from __future__ import annotations

import pytest

from medrl.eval.protocols import summarize_protocol


def _row(i, output, answer, score, **kw):
    return {"key": f"d:{i}", "dataset": "d", "domain": "in", "record_id": str(i), "question": "Which organ?",
            "reference": "liver", "open_ended": True, "output": output, "answer": answer,
            "scores": {"judge_answer_h1": score}, **kw}


def test_mrpo_reports_both_denominators():
    rows = [_row(0, "<think>x</think><answer>liver</answer>", "liver", 1.0),
            _row(1, "<think>x</think><answer>lung</answer>", "lung", 0.0),
            _row(2, "<think>x</think><answer>liver</answer>", "liver", 1.0),
            _row(3, "<think>the organ is the liver", None, 0.0)]  # cut off: no <answer>
    m = summarize_protocol(rows, "mrpo", n_boot=50)["datasets"]["d"]["metrics"]
    assert m["accuracy"]["mean"] == pytest.approx(2 / 4)            # counted as wrong
    assert m["accuracy_answered"]["mean"] == pytest.approx(2 / 3)   # MRPO script: O / (O + X)
    assert m["accuracy_answered"]["n"] == 3 and m["accuracy_answered"]["unscored"] == 0
    labels = {x["key"]: x["label"] for x in summarize_protocol(rows, "mrpo", n_boot=10)["metrics"]}
    assert "answered only" in labels["accuracy_answered"]
    # a row scored before the parsed answer was stored: read from the output
    old = {k: v for k, v in rows[3].items() if k != "answer"}
    m = summarize_protocol([rows[0], old], "mrpo", n_boot=10)["datasets"]["d"]["metrics"]
    assert m["accuracy_answered"]["n"] == 1 and m["accuracy"]["n"] == 2


def test_standard_breaks_mmmu_down_by_subject():
    def mc(i, subject, ok):
        return {"key": f"mmmu:{i}", "dataset": "mmmu_med", "domain": "out", "record_id": str(i),
                "question": "Which?", "reference": "A text", "open_ended": False, "subject": subject,
                "choices": ["A text", "B text"], "output": f"<answer>{'A text' if ok else 'B text'}</answer>",
                "scores": {"exact": float(ok)}}

    rows = [mc(0, "Pharmacy", True), mc(1, "Pharmacy", False), mc(2, "Clinical_Medicine", True),
            mc(3, "Clinical_Medicine", True), mc(4, "Public_Health", False)]
    g = summarize_protocol(rows, "standard", n_boot=20)["datasets"]["mmmu_med"]["groups"]["subject"]
    assert g["Pharmacy"]["overall"]["mean"] == pytest.approx(0.5)
    assert g["Clinical_Medicine"]["overall"]["mean"] == pytest.approx(1.0)
    assert g["Public_Health"]["overall"]["mean"] == pytest.approx(0.0)


def test_generation_rows_keep_the_subject():
    from medrl.data import VQARecord
    from medrl.eval.runner import EvalDataset, _generation_row

    rec = VQARecord(id="m1", images=[], question="Which?", answer="A", extras={"subject": "Pharmacy"})
    row = _generation_row(rec, EvalDataset("mmmu_med", [rec]), "<answer>A</answer>")
    assert row["subject"] == "Pharmacy"
    rec2 = VQARecord(id="v1", images=[], question="Which?", answer="A")
    assert "subject" not in _generation_row(rec2, EvalDataset("vqa_rad", [rec2]), "<answer>A</answer>")
