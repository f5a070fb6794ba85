"""Other harnesses' predictions scored by medrl, and medrl's outputs written for them.

Fixtures in ``interop_fixtures/`` follow the published layouts (no network): VLMEvalKit's
prediction files (an open VQA set as ``PRED_FORMAT=tsv`` writes it, QUOTE_ALL; a multiple-choice
set as ``PRED_FORMAT=json`` writes it, options in columns A-D, the answer a letter) and
lmms-eval's ``--log_samples`` files (a 0.3-style file keeping ``doc`` and ``arguments`` with
nested responses; a later one with ``input`` and flattened responses). Each is scored with the
reference judge under the standard protocol through ``medrl eval --predictions``; the verdicts
are checked by hand; an eval folder is exported in both layouts and read back."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from medrl.data import DataError
from medrl.eval.interop import detect_format, export_eval, read_lmms_eval, read_predictions, read_vlmevalkit

FIX = Path(__file__).parent / "interop_fixtures"
VQA_TSV = FIX / "Qwen2-VL-7B_VQA_RAD.tsv"
MCQ_JSON = FIX / "Qwen2-VL-7B_PMC_VQA.json"
LMMS = FIX / "lmms_eval" / "qwen2_vl__Qwen2-VL-7B"
SLAKE = LMMS / "20250101_120000_samples_slake_en.jsonl"
VQA_NEW = LMMS / "20250102_090000_samples_vqa_rad.jsonl"
FAST = ["--judge", "reference", "--no-text-metrics", "--no-steps", "--bootstrap", "20", "--protocol", "standard"]


def test_vlmevalkit_files_become_records_and_outputs():
    d = read_vlmevalkit(VQA_TSV)
    assert d.name == "Qwen2-VL-7B_VQA_RAD" and len(d.records) == 6
    r0, r1 = d.records[0], d.records[1]
    assert (r0.id, r0.question, r0.answer, r0.answer_type, r0.open_ended) == ("0", "Which organ is enlarged?",
                                                                              "liver", "OPEN", True)
    assert r1.answer_type == "CLOSED" and not r1.open_ended and r1.extras["category"] == "X-Ray"
    assert d.outputs["3"].startswith("<think>")
    m = read_predictions(MCQ_JSON)
    q = {r.id: r for r in m.records}
    assert q["10"].answer == "Cardiomegaly" and q["10"].extras["choices"] == ["Pneumonia", "Cardiomegaly",
                                                                               "Pleural effusion", "Normal"]
    assert q["11"].extras["choices"] == ["Axial", "Sagittal", "Coronal"]  # the missing D is no option
    assert q["11"].question.startswith("Hint: The image is an MRI of the head.\nWhich plane is shown?\nA: Axial")
    assert detect_format(VQA_TSV) == "vlmevalkit" and detect_format(SLAKE) == "lmms-eval"


def test_lmms_eval_samples_of_both_layouts():
    old = read_lmms_eval(SLAKE)
    assert old.name == "slake_en" and old.model == "qwen2_vl__Qwen2-VL-7B"
    r = old.records[0]
    assert (r.question, r.answer, r.answer_type, r.modality, r.organ) == ("Which organ is shown?", "Lung", "OPEN",
                                                                          "X-Ray", "Chest")
    assert old.outputs == {"0": "Lung", "1": "No", "2": "right lung"}
    new = read_lmms_eval(VQA_NEW)
    assert new.name == "vqa_rad" and new.records[0].question.startswith("Which organ is enlarged?\nAnswer")
    assert new.outputs == {"0": "Liver.", "1": "no", "2": "the kidney"}


def test_bad_prediction_files_name_the_file_and_row(tmp_path):
    bad = tmp_path / "m_d.tsv"
    bad.write_text('"index"\t"question"\t"answer"\n"0"\t"q?"\t"a"\n')
    with pytest.raises(DataError, match=r"m_d.tsv: not a VLMEvalKit prediction file: column\(s\) prediction missing"):
        read_vlmevalkit(bad)
    bad.write_text('"index"\t"question"\t"answer"\t"prediction"\n"0"\t"q?"\t""\t"x"\n')
    with pytest.raises(DataError, match=r"row 2 \(index '0'\): no 'answer'"):
        read_vlmevalkit(bad)
    mcq = tmp_path / "m_mcq.json"
    mcq.write_text(json.dumps([{"index": 1, "question": "q?", "A": "x", "B": "y", "answer": "E", "prediction": "A"}]))
    with pytest.raises(DataError, match=r"answer label 'E' is not one of the 2 option letters"):
        read_vlmevalkit(mcq)
    lm = tmp_path / "x_samples_t.jsonl"
    lm.write_text('{"target": "a"}\n')
    with pytest.raises(DataError, match=r"line 1: not an lmms-eval sample \(no 'doc_id'\)"):
        read_lmms_eval(lm)
    with pytest.raises(DataError, match="cannot tell which harness"):
        detect_format("preds.parquet")
    if not _has_openpyxl():
        xlsx = tmp_path / "m_d.xlsx"
        xlsx.write_bytes(b"PK")
        with pytest.raises(DataError, match=r"needs openpyxl: pip install 'medrl\[interop\]'"):
            read_vlmevalkit(xlsx)


def _has_openpyxl() -> bool:
    import importlib.util

    return importlib.util.find_spec("openpyxl") is not None


def _cells(md: str, dataset: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| {dataset} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_vlmevalkit_and_lmms_eval_predictions_are_scored_like_an_eval(tmp_path, capsys):
    """Hand-worked verdicts under the standard protocol (closed by exact match, open by the
    reference judge): VQA-RAD TSV: closed 1 of 2 (Yes = yes; yes != no), open 3 of 4 ("The liver",
    the answer after </think>, the exact lobe; "CT scan" is not MRI); PMC-VQA JSON: 1 of 3 (B; "A.
    Axial" is not C; "The answer is A" is refused); SLAKE (0.3 layout): closed 0 of 1, open 2 of 2;
    VQA-RAD (later layout): closed 1 of 1, open 1 of 2."""
    from medrl.cli import main

    out = tmp_path / "ev"
    code = main(["eval", "--predictions", str(VQA_TSV), str(MCQ_JSON), str(SLAKE), f"rad_new={VQA_NEW}",
                 "--out", str(out), *FAST])
    assert code == 0, capsys.readouterr().err[-2000:]
    metrics = json.loads((out / "metrics.json").read_text())
    std = metrics["protocols"]["standard"]["datasets"]
    got = {ds: {k: (round(v["mean"], 4) if v.get("mean") is not None else None) for k, v in d["metrics"].items()}
           for ds, d in std.items()}
    assert got["Qwen2-VL-7B_VQA_RAD"] == {"closed": 0.5, "open": 0.75, "overall": round(4 / 6, 4)}
    assert got["Qwen2-VL-7B_PMC_VQA"]["closed"] == round(1 / 3, 4)
    assert got["slake_en"] == {"closed": 0.0, "open": 1.0, "overall": round(2 / 3, 4)}
    assert got["rad_new"] == {"closed": 1.0, "open": 0.5, "overall": round(2 / 3, 4)}
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["generation"]["backend"] == "imported" and cfg["generation"]["format"] == "lmms-eval+vlmevalkit"
    assert (out / "report.html").is_file() and "rad_new" in (out / "report.md").read_text()
    # the same command again resumes: nothing is asked again
    assert main(["eval", "--predictions", str(VQA_TSV), str(MCQ_JSON), str(SLAKE), f"rad_new={VQA_NEW}",
                 "--out", str(out), *FAST]) == 0
    # predictions exclude a model
    assert main(["eval", "--predictions", str(VQA_TSV), "--model", "tiny", "--out", str(tmp_path / "x")]) == 2


def test_xlsx_predictions_when_openpyxl_is_installed(tmp_path):
    pytest.importorskip("openpyxl")
    import pandas as pd

    frame = pd.read_csv(VQA_TSV, sep="\t", dtype=str)
    xlsx = tmp_path / "Qwen2-VL-7B_VQA_RAD.xlsx"
    frame.to_excel(xlsx, index=False)  # what VLMEvalKit writes by default
    d = read_predictions(xlsx)
    assert [r.answer for r in d.records] == [r.answer for r in read_vlmevalkit(VQA_TSV).records]
    assert d.outputs == read_vlmevalkit(VQA_TSV).outputs


def test_medrl_outputs_export_to_both_layouts_and_read_back(tmp_path, capsys):
    """An eval folder exported as VLMEvalKit TSV and lmms-eval samples: the files have the
    harnesses' columns and fields, and medrl reads them back to the same records, outputs and
    scores."""
    from medrl.cli import main

    src = tmp_path / "ev"
    assert main(["eval", "--predictions", str(VQA_TSV), str(MCQ_JSON), "--out", str(src), *FAST]) == 0
    assert main(["eval", "--export", "vlmevalkit", "lmms-eval", "--out", str(src)]) == 0
    printed = capsys.readouterr().out
    tsvs = sorted((src / "export" / "vlmevalkit").glob("*.tsv"))
    assert len(tsvs) == 2 and all(str(p) in printed for p in tsvs)
    with open(next(p for p in tsvs if p.name.endswith("_Qwen2-VL-7B_PMC_VQA.tsv")), encoding="utf-8") as fh:
        head = fh.readline()
        rows = list(csv.DictReader([head] + fh.readlines(), delimiter="\t"))
    assert head.startswith('"index"\t"question"\t"answer"\t"A"\t"B"')  # quoted as VLMEvalKit writes
    assert [r["answer"] for r in rows] == ["B", "C", "A"] and rows[0]["prediction"] == "B"
    assert [r["medrl_correct"] for r in rows] == ["1.0", "0.0", "0.0"]
    samples = sorted((src / "export" / "lmms-eval").rglob("*_samples_*.jsonl"))
    results = list((src / "export" / "lmms-eval").rglob("*_results.json"))
    assert len(samples) == 2 and len(results) == 1
    line = json.loads(samples[0].read_text().splitlines()[0])
    assert {"doc_id", "doc", "target", "resps", "filtered_resps", "doc_hash", "prompt_hash", "target_hash",
            "medrl_score"} <= set(line)
    res = json.loads(results[0].read_text())["results"]
    assert res["Qwen2-VL-7B_VQA_RAD"]["medrl_score,none"] == pytest.approx(4 / 6)
    # read back: same questions, references and answers; scored the same
    back = tmp_path / "back"
    names = [f"{p.stem.split('_samples_')[1]}={p}" for p in samples]
    assert main(["eval", "--predictions", *names, "--out", str(back), *FAST]) == 0
    m1 = json.loads((src / "metrics.json").read_text())["protocols"]["standard"]["datasets"]
    m2 = json.loads((back / "metrics.json").read_text())["protocols"]["standard"]["datasets"]
    assert {k: v["metrics"]["overall"]["mean"] for k, v in m1.items()} == \
        {k: v["metrics"]["overall"]["mean"] for k, v in m2.items()}
    again = tmp_path / "again"
    shutil.copytree(src / "export" / "vlmevalkit", again)
    d = read_vlmevalkit(next(again.glob("*_VQA_RAD.tsv")))
    assert [r.answer for r in d.records] == [r.answer for r in read_vlmevalkit(VQA_TSV).records]
    assert main(["eval", "--export", "vlmevalkit", "--out", str(tmp_path / "nothing")]) == 2
    assert export_eval(src, "vlmevalkit", tmp_path / "direct")
