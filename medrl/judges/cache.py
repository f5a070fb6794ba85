"""A persistent judge cache in SQLite: the same question to the same model costs nothing twice.

The key is the SHA-256 of the model name, the full messages (each inline image by its digest,
so the key separates images and image vs no image), the sampling parameters and the judge's
identity: endpoint, model, prompt version and answer format (:func:`cache_key` with
``identity``, or a cache opened with ``namespace=judge.identity()``), so a verdict of one judge
never answers for another. The value is the
judge's raw reply text (secrets masked), stored only after it parsed, so a malformed reply is
never frozen into the cache and a parser change re-reads old replies.

Access is short synchronous statements under a lock (safe from threads and from coroutines on
any event loop); WAL mode lets several training processes share one file. Each entry also keeps
the tokens its reply cost (the API's ``usage``), so a cache hit can report what it saved
(:mod:`medrl.judges.cost`).

Damage never stops a run: the file is checked at open (``PRAGMA quick_check``); a damaged file
(and its -wal/-shm companions) is moved aside to ``<name>.corrupt-<time>`` with a warning naming
both paths, and a fresh cache is started in its place. A read or write that fails later (the file
damaged while in use, a full disk) is a cache miss or a skipped write, with one warning; after
repeated failures the file is moved aside the same way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from medrl.common.text import clean_obj

log = logging.getLogger("medrl.judges")

_SCHEMA = ("CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
           "reply TEXT NOT NULL, created REAL NOT NULL, input_tokens INTEGER NOT NULL DEFAULT 0, "
           "output_tokens INTEGER NOT NULL DEFAULT 0)")
#: token columns added to caches written before they existed (their rows count 0 tokens saved)
_USAGE_COLUMNS = ("input_tokens", "output_tokens")
#: errors on one statement before the cache file is moved aside and started again
_MAX_ERRORS = 3


#: What a judge's identity must name for its cached verdicts to answer for it (nothing else).
IDENTITY_FIELDS = ("endpoint", "model", "prompt_version", "answer_format")


def cache_identity(identity: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a judge's ``identity()`` that decides its verdicts: the endpoint, the model,
    the prompt version and the answer format. Two judges differing in any of them never share a
    cached verdict (a verdict of one endpoint must not answer for another). The endpoint is
    taken without credentials or query secrets (:func:`medrl.common.urls.redact_url`): a key
    never depends on, nor carries, a password or token."""
    if not identity:
        return None
    from medrl.common.urls import redact_url

    out = {k: identity.get(k) for k in IDENTITY_FIELDS}
    out["endpoint"] = redact_url(out["endpoint"])
    return out


def cache_key(model: str, messages: list[dict], params: dict[str, Any],
              identity: dict[str, Any] | None = None) -> str:
    """SHA-256 of the model, the messages, the sampling parameters and, given the judge's
    ``identity()`` (:func:`cache_identity`), its endpoint, model, prompt version and answer format."""
    payload: dict[str, Any] = {"model": model, "messages": messages, "params": params}
    ident = cache_identity(identity)
    if ident is not None:
        payload["judge"] = ident
    text = json.dumps(clean_obj(payload), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()


class JudgeCache:
    """``get(key) -> str | None`` and ``put(key, model, text)``; ``path=":memory:"`` for a
    process-local cache."""

    def __init__(self, path: str | Path = ":memory:", namespace: dict[str, Any] | None = None):
        self.path = str(path)
        self.namespace = namespace
        self.moved_aside: list[str] = []
        self._errors = 0
        self._lock = threading.Lock()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open(check=True)
        except sqlite3.DatabaseError as exc:
            self._move_aside(exc)
            self._db = self._open(check=False)

    # ------------------------------------------------------------------ opening
    def _open(self, check: bool) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        except sqlite3.Error as exc:
            raise RuntimeError(f"judge cache {self.path}: cannot open SQLite database ({exc})") from exc
        try:
            if self.path != ":memory:":
                db.execute("PRAGMA journal_mode=WAL")
            if check:
                row = db.execute("PRAGMA quick_check").fetchone()
                if row is None or row[0] != "ok":
                    raise sqlite3.DatabaseError(f"integrity check failed: {row[0] if row else 'no result'}")
            db.execute(_SCHEMA)
            have = {row[1] for row in db.execute("PRAGMA table_info(judge_cache)")}
            for col in _USAGE_COLUMNS:
                if col not in have:
                    db.execute(f"ALTER TABLE judge_cache ADD COLUMN {col} INTEGER NOT NULL DEFAULT 0")
            db.commit()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _move_aside(self, exc: BaseException) -> None:
        """Rename the damaged file (and its WAL/SHM files) so a fresh cache can start."""
        if self.path == ":memory:":
            raise RuntimeError(f"in-memory judge cache failed: {exc}") from exc
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = f"{self.path}.corrupt-{stamp}"
        n = 1
        while os.path.exists(dest):
            n += 1
            dest = f"{self.path}.corrupt-{stamp}-{n}"
        for suffix in ("", "-wal", "-shm"):
            src = self.path + suffix
            if os.path.exists(src):
                os.replace(src, dest + suffix)
        self.moved_aside.append(dest)
        why = " ".join(str(exc).split())[:200]
        log.warning("judge cache %s is damaged (%s); moved it aside to %s and started an empty cache "
                    "(earlier replies will be asked again)", self.path, why, dest)

    def _failed(self, what: str, exc: sqlite3.Error) -> None:
        """A statement failed: warn once; after repeated failures start a fresh file. Holds the lock."""
        self._errors += 1
        if self._errors == 1:
            log.warning("judge cache %s: %s failed (%s); continuing without it for this request", self.path, what, exc)
        if self._errors >= _MAX_ERRORS and self.path != ":memory:":
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            try:
                self._move_aside(exc)
                self._db = self._open(check=False)
                self._errors = 0
            except (OSError, RuntimeError, sqlite3.Error) as exc2:
                log.warning("judge cache %s: could not start a fresh cache (%s); running without a cache",
                            self.path, exc2)
                self._db = sqlite3.connect(":memory:", check_same_thread=False)
                self._db.execute(_SCHEMA)

    # ------------------------------------------------------------------ access
    @property
    def namespace(self) -> dict[str, Any] | None:
        """The judge identity mixed into every key (:func:`cache_identity`); None = keys as given."""
        return self._namespace

    @namespace.setter
    def namespace(self, identity: dict[str, Any] | None) -> None:
        ident = cache_identity(identity)
        self._namespace = ident
        self._salt = None if ident is None else json.dumps(clean_obj(ident), sort_keys=True, default=str)

    def _k(self, key: str) -> str:
        if getattr(self, "_salt", None) is None:
            return key
        return hashlib.sha256((self._salt + "\n" + key).encode("utf-8", errors="replace")).hexdigest()

    def get(self, key: str) -> str | None:
        key = self._k(key)
        with self._lock:
            try:
                row = self._db.execute("SELECT reply FROM judge_cache WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                self._failed("read", exc)
                return None
        return row[0] if row else None

    def get_usage(self, key: str) -> tuple[int, int] | None:
        """(input tokens, output tokens) the cached reply cost when it was asked (what a cache hit
        saves; 0, 0 for replies cached before tokens were stored), or None when not cached."""
        key = self._k(key)
        with self._lock:
            try:
                row = self._db.execute("SELECT input_tokens, output_tokens FROM judge_cache WHERE key = ?",
                                       (key,)).fetchone()
            except sqlite3.Error as exc:
                self._failed("read", exc)
                return None
        return (int(row[0]), int(row[1])) if row else None

    def put(self, key: str, model: str, reply: str, usage: tuple[int, int] | None = None) -> None:
        """Store a parsed reply; ``usage`` = (input tokens, output tokens) it cost."""
        tin, tout = (int(usage[0]), int(usage[1])) if usage else (0, 0)
        key = self._k(key)
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO judge_cache (key, model, reply, created, input_tokens, output_tokens) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (key, model, reply, time.time(), tin, tout),
                )
                self._db.commit()
            except sqlite3.Error as exc:
                try:
                    self._db.rollback()
                except sqlite3.Error:
                    pass
                self._failed("write", exc)

    def __len__(self) -> int:
        with self._lock:
            try:
                return self._db.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0]
            except sqlite3.Error as exc:
                self._failed("count", exc)
                return 0

    def close(self) -> None:
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
