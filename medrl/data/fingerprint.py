"""A fingerprint of the records a run trains on, so one run folder holds one dataset.

A ``jsonl:`` file edited in place (or an image replaced) between a run and its resumption would
otherwise resume silently: the checkpoints before the change and the steps after it would come
from two datasets. :func:`data_fingerprint` digests every record - its id, question, answer,
answer type, gold reasoning and key steps, and for each image file its name, size and
modification time (not its bytes: reading every image of a large dataset at each start costs
minutes) - into one SHA-256, keeping a short digest per record so a difference can be named;
:func:`describe_change` says what changed between two fingerprints (records changed, added,
removed, with the first ids).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

#: the fingerprint file of a run folder
FINGERPRINT_FILE = "data_fingerprint.json"
_FIELDS = ("question", "answer", "answer_type", "open_ended", "gold_reasoning", "key_steps")


def _image_stamp(image: Any) -> Any:
    """What identifies one image: a file by name, size and modification time; bytes by digest."""
    if isinstance(image, (bytes, bytearray)):
        return hashlib.sha256(bytes(image)).hexdigest()[:16]
    if isinstance(image, dict):
        return _image_stamp(image.get("bytes") or image.get("path"))
    if isinstance(image, (str, os.PathLike)):
        p = Path(image)
        try:
            st = p.stat()
        except OSError:
            return [p.name, None, None]  # missing: the loaders report it; here it is part of the data
        return [p.name, st.st_size, st.st_mtime_ns]
    return repr(type(image).__name__)


def record_digest(record: Any) -> str:
    """A short digest of one record (its text fields and its image files' stamps)."""
    get = (lambda k: record.get(k)) if isinstance(record, dict) else (lambda k: getattr(record, k, None))
    payload = {k: get(k) for k in _FIELDS}
    payload["images"] = [_image_stamp(x) for x in (get("images") or [])]
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]


def data_fingerprint(records: Iterable[Any], source: str | None = None) -> dict:
    """``{"source", "records", "sha256", "digests": {id: digest}}`` of ``records`` in order."""
    digests: dict[str, str] = {}
    whole = hashlib.sha256()
    n = 0
    for i, r in enumerate(records):
        rid = str(r.get("id") if isinstance(r, dict) else getattr(r, "id", None) or f"#{i}")
        d = record_digest(r)
        key = rid if rid not in digests else f"{rid}#{i}"
        digests[key] = d
        whole.update(f"{key}\t{d}\n".encode("utf-8", errors="replace"))
        n += 1
    return {"source": source, "records": n, "sha256": whole.hexdigest(), "digests": digests}


def describe_change(before: dict, now: dict) -> str | None:
    """What changed from fingerprint ``before`` to ``now`` in a few words (None when nothing did)."""
    if before.get("sha256") == now.get("sha256"):
        return None
    a, b = before.get("digests") or {}, now.get("digests") or {}
    changed = [k for k in a if k in b and a[k] != b[k]]
    added = [k for k in b if k not in a]
    removed = [k for k in a if k not in b]
    parts = [f"{before.get('records')} records then, {now.get('records')} now"]
    for what, ids in (("changed", changed), ("added", added), ("removed", removed)):
        if ids:
            parts.append(f"{len(ids)} {what} (first: {ids[0]!r})")
    if not (changed or added or removed):
        parts.append("the same records in another order")
    return "; ".join(parts)


def read_fingerprint(folder: str | os.PathLike) -> dict | None:
    """The fingerprint a run folder holds (None when it holds none, or an unreadable one)."""
    try:
        data = json.loads((Path(folder) / FINGERPRINT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "sha256" in data else None


def write_fingerprint(folder: str | os.PathLike, fingerprint: dict) -> Path:
    """Store ``fingerprint`` in ``folder`` (written to a temporary file, then renamed)."""
    path = Path(folder) / FINGERPRINT_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(fingerprint), encoding="utf-8")
    os.replace(tmp, path)
    return path
