"""Record validation: images that decode fully, non-empty question and answer, well-formed fields.

Every loader runs :func:`validate_records` on what it built, so a missing, truncated or
oversized image (:mod:`medrl.data.images`: every image is decoded, in parallel, cached by file
digest), an empty answer, an overlong question or a malformed field a loader found
(``extras["load_problems"]``) is reported with the source file and the record id rather than
failing later inside a trainer. ``skip_invalid=True`` drops bad records and counts them in a report instead.

A record id that occurs twice is an error naming both records (their lines for a JSONL file):
eval folders, caches and result logs key rows by id, so the second would silently take the
first one's place. The kept records whose answer was converted from a number on loading are
counted here (``report["converted_answers"]``) with one warning.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import Counter
from typing import Iterable

from medrl.data.record import DataError, VQARecord, _count_invalid, answer_converted_from
from medrl.answers.completion import MAX_TEXT_CHARS, max_question_chars

log = logging.getLogger(__name__)


#: Longest question accepted, in characters (``$MEDRL_MAX_QUESTION_CHARS`` overrides): the one text
#: cap of :mod:`medrl.answers.completion` (answers are capped by it too). A longer question is a broken
#: record (a file pasted into a field), and generating on it would fill the model's context for
#: minutes. The policy side also checks the rendered prompt in tokens
#: (:func:`medrl.models.generation.generate`).
MAX_QUESTION_CHARS = MAX_TEXT_CHARS
#: ``extras`` key where a loader leaves per-record problems it found while building a record
#: (a malformed field, an image path outside the data root), so that validation reports them
#: naming file and record, and ``skip_invalid`` can skip the record instead of the load failing.
PROBLEMS_KEY = "load_problems"


def invalid_record(rid: str, problems: list[str], *, lang: str | None = "en", **fields) -> VQARecord:
    """A placeholder for a record a loader could not build: validation reports ``problems``
    (each naming file, record and field) and raises, or skips it with ``skip_invalid``.
    ``lang`` keeps it through the language filter so that it is reported, not silently lost."""
    extras = {PROBLEMS_KEY: list(problems)}
    if lang:
        extras["lang"] = lang
    return VQARecord(id=rid, images=[], question="", answer="", extras=extras, **fields)


def image_problem(path: str) -> str | None:
    """Why ``path`` is not a usable image (missing, unreadable, truncated, a decompression bomb),
    or None when it decodes fully (:func:`medrl.data.images.check_images`, cached by digest)."""
    from medrl.data.images import check_images

    return check_images([path])[path]


def record_problems(rec: VQARecord, *, check_images: bool = True, require_image: bool = True,
                    image_problems: dict[str, str | None] | None = None) -> list[str]:
    """All reasons why ``rec`` is unusable (empty list when it is fine). ``image_problems``:
    results of :func:`medrl.data.images.check_images` already computed for its images."""
    loader_problems = rec.extras.get(PROBLEMS_KEY) if isinstance(rec.extras, dict) else None
    if loader_problems:  # the loader named the cause; its images are not opened
        return [str(p) for p in loader_problems]
    problems = []
    if not isinstance(rec.question, str) or not rec.question.strip():
        problems.append("empty question")
    elif len(rec.question) > max_question_chars():
        problems.append(f"question is {len(rec.question):,} characters, over the limit of "
                        f"{max_question_chars():,} (MEDRL_MAX_QUESTION_CHARS)")
    if not isinstance(rec.answer, str) or not rec.answer.strip():
        problems.append("empty answer")
    if require_image and not rec.images:
        problems.append("no image")
    if check_images:
        for p in rec.images:
            why = image_problems[p] if image_problems is not None and p in image_problems else image_problem(p)
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
    roots: Iterable[str | os.PathLike] | None = None,
) -> list[VQARecord]:
    """Check every record; raise :class:`DataError` on the first bad one (naming ``where`` - the
    source file - and the record id) or, with ``skip_invalid``, drop bad ones and count them in
    ``report`` (``invalid`` count, ``errors`` list of messages in source order, ``valid`` count).
    ``check_duplicates``: a second record with an id already seen is invalid (message names both).
    ``roots``: the folders the source may read images from (its dataset folder); an image
    resolving outside all of them is invalid and never opened
    (:func:`medrl.data.images.outside_root_problem`; allowed with ``--allow-outside-data-root``).
    """
    records = list(records)
    if roots is not None:
        from medrl.data.images import outside_root_problem

        roots = list(roots)
        for i, rec in enumerate(records):
            outside = [w for w in (outside_root_problem(p, roots) for p in rec.images) if w]
            if outside and not (rec.extras or {}).get(PROBLEMS_KEY):
                extras = dict(rec.extras or {})
                extras[PROBLEMS_KEY] = outside
                records[i] = dataclasses.replace(rec, extras=extras)
    images: dict[str, str | None] | None = None
    if check_images:  # decode every image once, in parallel, before the per-record pass
        from medrl.data.images import check_images as decode_all

        images = decode_all(p for r in records if not (r.extras or {}).get(PROBLEMS_KEY) for p in r.images)
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
        problems = record_problems(rec, check_images=check_images, require_image=require_image,
                                   image_problems=images)
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
    # the records kept whose answer was a number in the source (this load's, not the loader's
    # other passes over the file)
    converted = Counter(kind for kind in map(answer_converted_from, good) if kind)
    if converted:
        n = sum(converted.values())
        kinds = ", ".join(f"{c} {t}" for t, c in converted.most_common())
        log.warning("%sconverted %d non-string answer(s) to text (%s)", prefix, n, kinds)
        if report is not None:
            report["converted_answers"] = report.get("converted_answers", 0) + n
    if report is not None:
        report["valid"] = report.get("valid", 0) + len(good)
    return good
