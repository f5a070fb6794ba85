"""One JSON-lines reader and writer for every file medrl writes or reads back.

Why not ``json.dumps(row, ensure_ascii=False)`` plus ``str.splitlines()``: model outputs and data
can hold U+2028, U+2029, U+0085, U+000B/U+000C or U+001C-U+001E. ``json.dumps`` leaves them raw
and ``splitlines()`` breaks a row there, so the file can no longer be read back. Here rows are
written with those characters escaped (still valid JSON, the text is unchanged once parsed)
and files are split on ``\\n`` only. Lone surrogates (which UTF-8 cannot encode) are replaced
by U+FFFD on the way out (:func:`medrl.common.text.clean_text`).

A torn *last* line (a crash mid-write) is dropped with a warning (and cut from the file with
``repair=True``); a bad line elsewhere is an error naming the file and line.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from medrl.common.text import clean_obj

log = logging.getLogger(__name__)

# Characters str.splitlines() treats as line breaks besides \n and \r.
_SEPARATORS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085", "\u000b": "\\u000b",
               "\u000c": "\\u000c", "\u001c": "\\u001c", "\u001d": "\\u001d", "\u001e": "\\u001e"}
_SEP_TABLE = str.maketrans(_SEPARATORS)


def dumps_line(obj: Any) -> str:
    """One JSON line (no trailing newline) that every line splitter keeps whole."""
    text = json.dumps(clean_obj(obj), ensure_ascii=False, default=str)
    return text.translate(_SEP_TABLE)


def iter_jsonl(path: str | Path, *, repair: bool = False, objects_only: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line of ``path`` (missing file: none).

    ``objects_only`` skips lines that parse to something other than a JSON object, with a warning.
    """
    path = Path(path)
    if not path.exists():
        return
    raw = path.read_bytes().decode("utf-8", errors="replace")
    lines = raw.split("\n")
    last = max((i for i, l in enumerate(lines) if l.strip()), default=-1)
    good_end = 0  # byte offset after the last good line, for repair
    offset = 0
    for i, line in enumerate(lines):
        n_bytes = len(line.encode("utf-8")) + (1 if i < len(lines) - 1 else 0)
        if not line.strip():
            offset += n_bytes
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == last:
                log.warning("%s: dropping an incomplete last line %d (interrupted write)", path, i + 1)
                if repair:
                    with path.open("r+b") as fh:
                        fh.truncate(good_end)
                return
            raise ValueError(f"{path}: line {i + 1} is not valid JSON ({exc})") from None
        offset += n_bytes
        good_end = offset
        if objects_only and not isinstance(value, dict):
            log.warning("%s: line %d is not a JSON object; skipped", path, i + 1)
            continue
        yield i + 1, value


def read_jsonl(path: str | Path, *, repair: bool = False) -> list[dict]:
    """All JSON objects of ``path`` (see :func:`iter_jsonl`); ``[]`` when it does not exist."""
    return [v for _, v in iter_jsonl(path, repair=repair, objects_only=True)]


def append_jsonl(path: str | Path, rows: Iterable[Any], *, fsync: bool = True) -> None:
    """Append rows, one line each, flushed (and fsynced) before returning."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for r in rows:
            fh.write(dumps_line(r) + "\n")
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    """Replace ``path`` with ``rows`` atomically (written to a temporary file, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(dumps_line(r) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
