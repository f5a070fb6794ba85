"""Record validation: readable images, non-empty question and answer, well-formed fields.

Every loader runs :func:`validate_records` on what it built, so a missing image or an empty
answer is reported with the source file and the record id rather than failing later inside a
trainer. ``skip_invalid=True`` drops bad records and counts them in a report instead.
"""

from __future__ import annotations

import functools
import os
from typing import Iterable

from medrl.data.record import DataError, VQARecord


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
) -> list[VQARecord]:
    """Check every record; raise :class:`DataError` on the first bad one (naming ``where`` - the
    source file - and the record id) or, with ``skip_invalid``, drop bad ones and count them in
    ``report`` (``invalid`` count, ``errors`` list of messages, ``valid`` count).
    """
    good: list[VQARecord] = []
    prefix = f"{where}: " if where else ""
    for rec in records:
        problems = record_problems(rec, check_images=check_images, require_image=require_image)
        if problems:
            msg = f"{prefix}record {rec.id!r}: " + "; ".join(problems)
            if not skip_invalid:
                raise DataError(msg + " (use --skip-invalid / skip_invalid=True to skip such records)")
            if report is not None:
                report["invalid"] = report.get("invalid", 0) + 1
                report.setdefault("errors", []).append(msg)
            continue
        good.append(rec)
    if report is not None:
        report["valid"] = report.get("valid", 0) + len(good)
    return good
