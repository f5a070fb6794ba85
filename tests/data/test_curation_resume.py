"""medrl.data.curation.resume and ._judged: append-only result logs that make curation resumable,
and the shared judge loop that skips what a log already holds."""

from __future__ import annotations

import json

import pytest

from medrl.data.curation import _judged
from medrl.data.curation.resume import ResultLog, progress
from medrl.data.record import DataError, VQARecord
from medrl.types import Verdict


def test_rows_are_appended_and_found_again(tmp_path):
    path = tmp_path / "sub" / "log.jsonl"
    log = ResultLog(path)
    log.append({"id": 1, "keep": True})
    log.append({"id": "b", "keep": False})
    assert 1 in log and "1" in log and "b" in log and "c" not in log
    again = ResultLog(path)
    assert again.done == {"1": {"id": 1, "keep": True}, "b": {"id": "b", "keep": False}}


def test_torn_last_line_is_cut_from_the_file(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps({"id": "a"}) + "\n" + '{"id": "b", "ke')
    log = ResultLog(path)
    assert list(log.done) == ["a"]
    assert path.read_text() == json.dumps({"id": "a"}) + "\n"
    log.append({"id": "b"})
    assert list(ResultLog(path).done) == ["a", "b"]


def test_line_without_the_key_names_file_and_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"id": "a"}\n{"other": 1}\n')
    with pytest.raises(DataError, match=r"log\.jsonl:2: result line without 'id'"):
        ResultLog(path)
    with pytest.raises(DataError, match=r"log\.jsonl:1: result line without 'other'"):
        ResultLog(path, key="other")  # the key is the caller's: every row must carry it


def test_in_memory_log_without_a_path():
    log = ResultLog(None)
    log.append({"id": "x"})
    assert "x" in log and log.path is None


def test_progress_starts_at_the_items_already_done():
    with progress(10, 4, "curate") as bar:
        assert bar.n == 4 and bar.total == 10 and bar.desc == "curate"
        bar.update(3)
        assert bar.n == 7
    with progress(10, 4, "quiet", enabled=False) as bar:
        assert bar.disable


def test_run_judged_calls_only_records_not_in_the_log(tmp_path):
    records = [VQARecord(id=f"r{i}", images=[], question=f"q{i}", answer=f"a{i}") for i in range(5)]
    log = ResultLog(tmp_path / "log.jsonl")
    log.append({"id": "r1", "ok": True})
    log.append({"id": "r3", "ok": True})
    called = []

    async def call(rec):
        called.append(rec.id)
        return Verdict(scored=True, value=rec.answer)

    done_before = _judged.run_judged(records, call, lambda r, v: {"id": r.id, "value": v.value}, log,
                                     desc="t", concurrency=2, show_progress=False)
    assert done_before == 2
    assert sorted(called) == ["r0", "r2", "r4"]
    rows = ResultLog(tmp_path / "log.jsonl").done
    assert rows["r4"] == {"id": "r4", "value": "a4"} and set(rows) == {f"r{i}" for i in range(5)}
    # a rerun calls the judge for nothing
    called.clear()
    assert _judged.run_judged(records, call, lambda r, v: {"id": r.id}, log, desc="t", show_progress=False) == 5
    assert called == []
