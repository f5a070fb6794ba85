"""A persistent judge cache in SQLite: the same question to the same model costs nothing twice.

The key is the SHA-256 of the model name, the full messages (images included, as sent) and the
sampling parameters. The value is the judge's raw reply text, stored only after it parsed, so
a malformed reply is never frozen into the cache and a parser change re-reads old replies.

Access is short synchronous statements under a lock (safe from threads and from coroutines on
any event loop); WAL mode lets several training processes share one file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any


def cache_key(model: str, messages: list[dict], params: dict[str, Any]) -> str:
    payload = json.dumps(
        {"model": model, "messages": messages, "params": params},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache:
    """``get(key) -> str | None`` and ``put(key, model, text)``; ``path=":memory:"`` for a
    process-local cache."""

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "reply TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._db.commit()
        except sqlite3.Error as exc:
            raise RuntimeError(f"judge cache {self.path}: cannot open SQLite database ({exc})") from exc

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM judge_cache WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, reply: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judge_cache (key, model, reply, created) VALUES (?, ?, ?, ?)",
                (key, model, reply, time.time()),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
