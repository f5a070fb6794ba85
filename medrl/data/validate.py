"""Record validation: readable images, non-empty question and answer, well-formed fields.

Every loader runs :func:`validate_records` on what it built, so a missing image or an empty
answer is reported with the source file and the record id rather than failing later inside a
trainer. ``skip_invalid=True`` drops bad records and counts them in a report instead.

A record id that occurs twice is an error naming both records (their lines for a JSONL file):
eval folders, caches and result logs key rows by id, so the second would silently take the
first one's place. Non-string answers converted on loading are counted here
(``report["converted_answers"]``) with one warning.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Iterable

from medrl.data.record import DataError, VQARecord, _count_invalid, take_converted

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=65536)
def _image_problem(path: str, mtime: float) -> str | None:
    """None when the image opens (header parsed by PIL), else why not. Cached per (path, mtime)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.size  # header parsed
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        return f"unreadable image {path} ({type(exc).__name__}: {exc})"
    return None


def image_problem(path: str) -> str | None:
    """Why ``path`` is not a usable image (missing or unreadable), or None when it is fine."""
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return f"missing image {path}"
    if not os.path.isfile(path):
        return f"image path {path} is not a file"
    return _image_problem(path, mtime)


def record_problems(rec: VQARecord, *, check_images: bool = True, require_image: bool = True) -> list[str]:
    """All reasons why ``rec`` is unusable (empty list when it is fine)."""
    problems = []
    if not isinstance(rec.question, str) or not rec.question.strip():
        problems.append("empty question")
    if not isinstance(rec.answer, str) or not rec.answer.strip():
        problems.append("empty answer")
    if require_image and not rec.images:
        problems.append("no image")
    if check_images:
        for p in rec.images:
            why = image_problem(p)
            if why:
                problems.append(why)
    return problems


def validate_records(
    records: Iterable[VQARecord],
    *,
    where: str = "",
    check_images: bool = True,
    require_image: bool = True,
    skip_invalid: bool = False,
    report: dict | None = None,
    check_duplicates: bool = True,
) -> list[VQARecord]:
    """Check every record; raise :class:`DataError` on the first bad one (naming ``where`` - the
    source file - and the record id) or, with ``skip_invalid``, drop bad ones and count them in
    ``report`` (``invalid`` count, ``errors`` list of messages in source order, ``valid`` count).
    ``check_duplicates``: a second record with an id already seen is invalid (message names both).
    """
    good: list[VQARecord] = []
    prefix = f"{where}: " if where else ""
    lines = (report or {}).get("positions") or {}  # id -> JSONL line numbers (medrl.data.record.read_jsonl)
    first_seen: dict[str, int] = {}
    occurrence: dict[str, int] = {}
    for index, rec in enumerate(records):
        k = occurrence.get(rec.id, 0)
        occurrence[rec.id] = k + 1
        rec_lines = lines.get(rec.id) or []
        pos = rec_lines[k] if k < len(rec_lines) else index + 1
        problems = record_problems(rec, check_images=check_images, require_image=require_image)
        if check_duplicates and rec.id in first_seen:
            first = first_seen[rec.id]
            if rec_lines and k < len(rec_lines):
                both = f"lines {first} and {pos}"
            else:
                both = f"records #{first} and #{pos}"
            problems.append(f"duplicate id: {both} both have id {rec.id!r} (ids must be unique)")
        if problems:
            msg = f"{prefix}record {rec.id!r}: " + "; ".join(problems) + (f" (line {pos})" if rec_lines else "")
            if not skip_invalid:
                raise DataError(msg + " (use --skip-invalid / skip_invalid=True to skip such records)")
            _count_invalid(report, msg, pos)
            continue
        first_seen[rec.id] = pos
        good.append(rec)
    converted = take_converted()
    if converted:
        n = sum(converted.values())
        kinds = ", ".join(f"{c} {t}" for t, c in converted.most_common())
        log.warning("%sconverted %d non-string answer(s) to text (%s)", prefix, n, kinds)
        if report is not None:
            report["converted_answers"] = report.get("converted_answers", 0) + n
    if report is not None:
        report["valid"] = report.get("valid", 0) + len(good)
    return good
