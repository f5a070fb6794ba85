"""`medrl data` subcommands end to end (fixtures; inspect also on the real data)."""

from __future__ import annotations

import json

from PIL import Image

from medrl.cli import main
from medrl.data import VQARecord, read_jsonl, write_jsonl


def _recs(tmp_path):
    img = tmp_path / "a.png"
    Image.new("RGB", (8, 8)).save(img)
    return [VQARecord(id=str(i), images=[str(img)], question=f"Q{i}?", answer=a, answer_type=t, organ="Chest", modality="X-Ray",
                      modality_tag="X_RAY", open_ended=a not in ("yes", "no"))
            for i, (a, t) in enumerate([("yes", "CLOSED"), ("effusion", "OPEN"), ("Left", "CLOSED"), ("effusion", "OPEN")])]


def test_inspect_real_vqa_rad(data_dir, capsys):
    assert main(["data", "inspect", "--dataset", "vqa_rad:test", "--data-dir", str(data_dir), "--json", "--samples", "1"]) == 0
    out = capsys.readouterr().out
    counts = json.loads(out[: out.rindex("}\n{") + 1])
    assert counts["records"] == 451 and counts["open_ended"] == {"open": 200, "closed": 251}


def test_convert_filter_evidence(tmp_path, capsys):
    src = write_jsonl(_recs(tmp_path), tmp_path / "in.jsonl")
    assert main(["data", "filter", "--dataset", f"jsonl:{src}", "--open", "--out", str(tmp_path / "open.jsonl")]) == 0
    assert [r.id for r in read_jsonl(tmp_path / "open.jsonl")] == ["1", "2", "3"]
    assert main(["data", "filter", "--dataset", f"jsonl:{src}", "--open", "answer_type", "--dedup", "image_question_answer",
                 "--out", str(tmp_path / "f.jsonl")]) == 0
    assert [r.id for r in read_jsonl(tmp_path / "f.jsonl")] == ["1", "3"]
    assert main(["data", "evidence", "--dataset", f"jsonl:{src}", "--out", str(tmp_path / "ev.jsonl")]) == 0
    assert read_jsonl(tmp_path / "ev.jsonl")[1].key_steps == ["X-Ray", "Chest", "effusion"]


def test_missing_image_reports_and_skip_invalid(tmp_path, capsys):
    recs = _recs(tmp_path)
    recs[0].images = [str(tmp_path / "gone.png")]
    src = write_jsonl(recs, tmp_path / "in.jsonl")
    assert main(["data", "convert", "--dataset", f"jsonl:{src}", "--out", str(tmp_path / "o.jsonl")]) == 4  # Exit.DATA
    assert "record '0': missing image" in capsys.readouterr().err
    assert main(["data", "convert", "--dataset", f"jsonl:{src}", "--skip-invalid", "--out", str(tmp_path / "o.jsonl")]) == 0
    assert "skipped 1 invalid record" in capsys.readouterr().err and len(read_jsonl(tmp_path / "o.jsonl")) == 3


def test_corrupt_command(tmp_path):
    Image.new("RGB", (8, 8), (50, 60, 70)).save(tmp_path / "x.png")
    assert main(["data", "corrupt", "--image", str(tmp_path / "x.png"), "--kind", "mask", "--out", str(tmp_path / "y.png")]) == 0
    assert Image.open(tmp_path / "y.png").size == (8, 8)
