"""Issue 12: a judge cache damaged in its middle (at open, or while in use) never makes a judge
call raise; the damaged file is moved aside with a warning naming both paths and the judge
continues against the local server."""

from __future__ import annotations

import logging
import os
import sqlite3

from medrl.judges import build_judge, run_sync
from medrl.judges.cache import JudgeCache
from medrl.judges.server import create_app, serve_in_thread

FAST = dict(timeout=2, max_retries=1, backoff=0.01, max_backoff=0.02)


def _filled(path, n=1500):
    JudgeCache(path).close()  # the schema, as medrl writes it
    db = sqlite3.connect(path)
    db.executemany("INSERT INTO judge_cache (key, model, reply, created) VALUES (?, 'm', ?, 0)",
                   [(f"k{i}", "reply " * 40) for i in range(n)])
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


class _Yes:
    """A judge backend that answers YES to everything (this test is about the cache, not verdicts)."""

    name = "yes"

    async def complete(self, messages, max_tokens):
        return "YES", 1, 1


def _damage_middle(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\x00\xff" * 4096)


def test_damaged_cache_is_moved_aside_and_the_judge_continues(tmp_path, caplog):
    path = str(tmp_path / "judge.sqlite")
    _filled(path)
    _damage_middle(path)
    with serve_in_thread(create_app(_Yes())) as url, caplog.at_level(logging.WARNING, logger="medrl.judges"):
        j = build_judge("openai:yes", base_url=url, cache_path=path, **FAST)
        v = run_sync(j.answer_correct("What organ?", "Lung", "the lungs"))
        assert v.scored and v.value is True
        again = run_sync(j.answer_correct("What organ?", "Lung", "the lungs"))
        assert again.meta.get("cached")  # the fresh cache works
        j.close()
    moved = [f for f in os.listdir(tmp_path) if ".corrupt-" in f]
    assert any(f.startswith("judge.sqlite.corrupt-") and not f.endswith(("-wal", "-shm")) for f in moved)
    msg = next(r.getMessage() for r in caplog.records if "damaged" in r.getMessage())
    assert path in msg and str(tmp_path / moved[0]).split("-wal")[0].split("-shm")[0] in msg


def test_garbage_file_and_damage_while_in_use(tmp_path, caplog):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.WARNING, logger="medrl.judges"):
        c = JudgeCache(path)
    assert c.moved_aside and os.path.exists(c.moved_aside[0])
    c.put("a", "m", "YES")
    assert c.get("a") == "YES"
    c.close()
    # damaged while open: reads are misses and writes are skipped, never an exception
    path2 = str(tmp_path / "live.sqlite")
    _filled(path2)
    c = JudgeCache(path2)
    _damage_middle(path2)
    with caplog.at_level(logging.WARNING, logger="medrl.judges"):
        for i in range(0, 1500, 50):
            assert c.get(f"k{i}") in (None, "reply " * 40)
            c.put(f"new{i}", "m", "NO")
    assert len(c) >= 0
    c.close()


def test_lone_surrogates_reach_neither_the_cache_key_nor_the_wire(tmp_path):
    # "lung, enlarged" is not an identity, so it reaches the judge (an identity is settled locally)
    with serve_in_thread(create_app(_Yes())) as url:
        j = build_judge("openai:yes", base_url=url, cache_path=str(tmp_path / "c.sqlite"), **FAST)
        v = run_sync(j.answer_correct("Which organ\ud800 is it?", "Lung", "lung, enlarged"))
        assert v.scored and v.value is True
        again = run_sync(j.answer_correct("Which organ\ud800 is it?", "Lung", "lung, enlarged"))
        assert again.meta.get("cached")
        j.close()
