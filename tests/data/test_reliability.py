"""Issue 12, data side, on real files: odd Unicode (U+2028, U+0085, lone surrogates) in a data
file is loaded, sanitised and written back intact; `medrl data` names the first skipped record
in file order; duplicate ids are an error naming both lines; integer answers are converted with
a warning that counts them; `medrl eval --skip-invalid` skips with the same counts as `medrl data`,
and without it stops with a clear message (no traceback)."""

from __future__ import annotations

import json
import logging

import pytest
from PIL import Image

from medrl.cli import main
from medrl.data import load_records
from medrl.data.record import DataError, read_jsonl, write_jsonl


@pytest.fixture()
def folder(tmp_path):
    Image.new("RGB", (32, 32), (90, 90, 90)).save(tmp_path / "ct.png")
    return tmp_path


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_odd_unicode_in_a_data_file_survives(folder):
    # raw U+2028 and U+0085 (as json.dumps(ensure_ascii=False) writes them) and an escaped lone surrogate
    q = "Where is the lesion?\u2028Look at the\u0085left side."
    rows = [json.dumps({"id": "u1", "images": ["ct.png"], "question": q, "answer": "left kidney"}, ensure_ascii=False),
            '{"id": "u2", "images": ["ct.png"], "question": "Which organ \\ud800?", "answer": "liver\\udfff"}']
    path = _write(folder / "odd.jsonl", rows)
    recs = load_records(f"jsonl:{path}")
    assert [r.id for r in recs] == ["u1", "u2"] and recs[0].question == q
    assert recs[1].question == "Which organ \ufffd?" and recs[1].answer == "liver\ufffd"
    write_jsonl(recs, folder / "back.jsonl")
    assert len((folder / "back.jsonl").read_bytes().split(b"\n")) == 3  # 2 lines + final newline
    again = read_jsonl(folder / "back.jsonl")
    assert [r.to_dict() for r in again] == [r.to_dict() for r in recs]


def test_first_skipped_record_is_the_first_in_the_file(folder, capsys):
    path = _write(folder / "bad.jsonl", [
        '{"id": "a", "images": ["missing.png"], "question": "q?", "answer": "x"}',  # line 1: missing image
        '{not json',                                                                 # line 2
        '{"id": "b", "images": ["ct.png"], "question": "q?", "answer": "liver"}',
        '{"id": "c", "images": ["ct.png"], "question": "", "answer": "x"}',          # line 4: empty question
    ])
    report: dict = {}
    recs = load_records(f"jsonl:{path}", skip_invalid=True, report=report)
    assert [r.id for r in recs] == ["b"] and report["invalid"] == 3
    assert "line 1" in report["errors"][0] or ":1" in report["errors"][0]
    assert ":2:" in report["errors"][1] and ":4" in report["errors"][2]
    assert main(["data", "inspect", "--dataset", f"jsonl:{path}", "--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert "skipped 3 invalid record(s); first:" in err and "missing image" in err.split("first:")[1].splitlines()[0]


def test_duplicate_ids_are_an_error_naming_both(folder, capsys):
    path = _write(folder / "dup.jsonl", [
        '{"id": "r7", "images": ["ct.png"], "question": "What organ?", "answer": "liver"}',
        '{"id": "r8", "images": ["ct.png"], "question": "What side?", "answer": "left"}',
        '{"id": "r7", "images": ["ct.png"], "question": "What else?", "answer": "spleen"}',
    ])
    with pytest.raises(DataError, match=r"lines 1 and 3 both have id 'r7'"):
        load_records(f"jsonl:{path}")
    assert main(["data", "inspect", "--dataset", f"jsonl:{path}"]) != 0
    assert "lines 1 and 3" in capsys.readouterr().err
    report: dict = {}
    assert [r.id for r in load_records(f"jsonl:{path}", skip_invalid=True, report=report)] == ["r7", "r8"]
    assert report["invalid"] == 1
    # asking for de-duplication by id keeps the first without an error
    assert [r.id for r in load_records(f"jsonl:{path}", dedup="id")] == ["r7", "r8"]


def test_non_string_answers_are_converted_and_counted(folder, caplog):
    path = _write(folder / "ints.jsonl", [
        '{"id": "n1", "images": ["ct.png"], "question": "How many?", "answer": 4}',
        '{"id": "n2", "images": ["ct.png"], "question": "How many?", "answer": 12.0}',
        '{"id": "n3", "images": ["ct.png"], "question": "Which?", "answer": "liver"}',
    ])
    report: dict = {}
    with caplog.at_level(logging.WARNING):
        recs = load_records(f"jsonl:{path}", report=report)
    assert [r.answer for r in recs] == ["4", "12", "liver"] and report["converted_answers"] == 2
    assert any("converted 2 non-string answer(s)" in r.getMessage() for r in caplog.records)


def test_eval_skip_invalid_counts_match_medrl_data(folder, tmp_path, capsys, monkeypatch, generation_faked_model):
    path = _write(folder / "mixed.jsonl", [
        '{"id": "a", "images": ["missing.png"], "question": "Which organ?", "answer": "liver"}',
        '{"id": "b", "images": ["ct.png"], "question": "Which organ?", "answer": "liver"}',
        '{"id": "c", "images": ["ct.png"], "question": "Which side?", "answer": ""}',
        '{"id": "d", "images": ["ct.png"], "question": "Which side?", "answer": "left"}',
    ])
    import medrl.eval.runner as runner

    monkeypatch.setattr(runner, "build_generate_fn", lambda *a, **k: (
        lambda recs: [f"<think>The scan shows it.</think><answer>{r.answer}</answer>" for r in recs]))
    (tmp_path / "model").mkdir()  # a model folder (generation itself is faked above)
    (tmp_path / "model" / "config.json").write_text("{}")
    args = ["eval", "--model", str(tmp_path / "model"), "--data", f"jsonl:{path}", "--out", str(tmp_path / "ev"), "--no-text-metrics",
            "--bootstrap", "20", "--no-steps"]
    assert main(args) == 4  # the data-error exit code (medrl.common.exit_codes.Exit.DATA)
    err = capsys.readouterr().err
    assert "mixed.jsonl:3 (id 'c')" in err and "--skip-invalid" in err and "Traceback" not in err
    assert main(args + ["--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert "skipped 2 invalid record(s), kept 2" in err
    assert main(["data", "inspect", "--dataset", f"jsonl:{path}", "--skip-invalid"]) == 0
    assert "skipped 2 invalid record(s)" in capsys.readouterr().err
    rows = runner.load_run(tmp_path / "ev")
    assert [r["record_id"] for r in rows] == ["b", "d"] and all(r["scores"]["judge_binary"] == 1.0 for r in rows)
