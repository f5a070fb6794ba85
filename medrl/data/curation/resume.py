"""Append-only JSONL result logs that make long curation runs resumable.

Each finished item is written as one line (flushed at once) keyed by the record id; a rerun
loads the log and skips ids already present, so nothing done is redone or lost. A line cut off
by an interruption (no final newline) is dropped when the log is reopened.
"""

from __future__ import annotations

import os
from pathlib import Path

from medrl.data.record import DataError
from medrl.common.jsonl import append_jsonl, iter_jsonl


class ResultLog:
    """``done``: {key: row} of rows already in the file; :meth:`append` adds one row."""

    def __init__(self, path: str | os.PathLike | None, key: str = "id"):
        self.path = Path(path) if path else None
        self.key = key
        self.done: dict[str, dict] = {}
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self._repair_tail()
            try:
                for lineno, row in iter_jsonl(self.path, repair=True):
                    if not isinstance(row, dict) or key not in row:
                        raise DataError(f"{self.path}:{lineno}: result line without {key!r}")
                    self.done[str(row[key])] = row
            except DataError:
                raise
            except ValueError as exc:
                raise DataError(f"corrupt result line ({exc}); fix or delete it to resume") from None

    def _repair_tail(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(cut)

    def __contains__(self, key: str) -> bool:
        return str(key) in self.done

    def append(self, row: dict) -> None:
        k = str(row[self.key])
        self.done[k] = row
        if self.path is None:
            return
        append_jsonl(self.path, [row], fsync=False)


def progress(total: int, initial: int, desc: str, enabled: bool = True):
    """A tqdm bar (to stderr) that starts at the items already done."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, disable=not enabled, unit="rec")
