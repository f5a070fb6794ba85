"""A run trains on one dataset: the records' fingerprint is pinned at the start, and a resume on
data edited in place (a ``jsonl:`` file, an image replaced) is refused naming the source, while
``--overwrite`` starts afresh."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medrl.data.fingerprint import data_fingerprint, describe_change

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")

record = st.fixed_dictionaries({"id": st.text("abc123", min_size=1, max_size=4),
                                "question": st.text(max_size=20), "answer": st.text(max_size=8)})


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=8, unique_by=lambda r: r["id"]), st.data())
def test_any_edit_of_a_record_changes_the_fingerprint_and_is_named(records, data):
    before = data_fingerprint(records)
    assert describe_change(before, data_fingerprint([dict(r) for r in records])) is None  # same data: same print
    i = data.draw(st.integers(0, len(records) - 1))
    field = data.draw(st.sampled_from(["question", "answer"]))
    edited = [dict(r) for r in records]
    edited[i][field] = edited[i][field] + data.draw(st.text(min_size=1, max_size=3))
    said = describe_change(before, data_fingerprint(edited))
    assert said is not None and f"1 changed (first: {records[i]['id']!r})" in said
    dropped = describe_change(before, data_fingerprint(records[:i] + records[i + 1:]))
    assert f"1 removed (first: {records[i]['id']!r})" in dropped


def test_a_replaced_image_file_changes_the_fingerprint(tmp_path):
    img = tmp_path / "a.png"
    img.write_bytes(b"one")
    before = data_fingerprint([{"id": "r0", "question": "q", "answer": "a", "images": [str(img)]}])
    img.write_bytes(b"other image")
    assert "1 changed (first: 'r0')" in describe_change(
        before, data_fingerprint([{"id": "r0", "question": "q", "answer": "a", "images": [str(img)]}]))


@pytest.mark.usefixtures("one_torch_thread")
def test_a_jsonl_file_edited_between_run_and_rerun_is_refused(tmp_path, capsys):
    from PIL import Image

    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    Image.new("RGB", (16, 16), (90, 90, 90)).save(tmp_path / "img.png")
    data = tmp_path / "recs.jsonl"
    rows = [{"id": f"r{i}", "question": "Which organ is enlarged?", "answer": a, "images": ["img.png"]}
            for i, a in enumerate(["liver", "spleen", "heart", "kidney"])]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"

    def train(steps, *extra):
        return main(["train", "--recipe", "grpo", "--model", "tiny", "--data", f"jsonl:{data}", "--profile", "cpu",
                     "--max-steps", str(steps), "--out", str(out), *extra])

    assert train(1) == 0
    rows[2]["answer"] = "lung"  # edited in place
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert train(2) == Exit.DATA == 4  # a larger --max-steps would resume: refused, nothing trained
    err = capsys.readouterr().err
    assert f"the training data of {out} changed since the run started: jsonl:{data}" in err
    assert "1 changed (first: 'r2')" in err and "--overwrite" in err
    assert not (out / "checkpoint-2").exists()
    assert main(["train", "--recipe", "grpo", "--model", "tiny", "--dry-run", "--data", f"jsonl:{data}",
                 "--profile", "cpu", "--max-steps", "2", "--out", str(out)]) == Exit.DATA  # the preflight says the same
    assert train(1, "--overwrite") == 0  # afresh, on the data as it is now
    assert json.loads((out / "data_fingerprint.json").read_text())["records"] == 4
    os.utime(tmp_path / "img.png", ns=(1, 1))  # the image touched: its time is part of the print
    assert train(2) == Exit.DATA
