"""Record filters: open-ended questions, language, deduplication.

Open-ended modes (``open_only`` of :func:`medrl.data.load_records`, ``--open`` of the CLI):

- ``"papers"`` (``True``): the papers' sense - drop binary (yes/no) answers and multiple-choice
  records (options shown to the model). MRPO App. C.1: "we exclude
  binary and multiple-choice questions", giving 200 VQA-RAD test records; this mode gives
  exactly 200 on the official test split.
- ``"answer_type"``: the dataset's own OPEN/CLOSED field only (179 on the VQA-RAD test split:
  the 21 CLOSED "A or B?" questions with free-text answers are excluded).
- ``"strict"``: both - answer_type OPEN and an open-ended answer.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from medrl.data.record import VQARecord, is_open_ended_answer, norm_text

OPEN_MODES = ("papers", "answer_type", "strict")


def is_open(rec: VQARecord, mode: str = "papers") -> bool:
    """Whether ``rec`` is open-ended under ``mode`` (see the module docstring)."""
    papers = is_open_ended_answer(rec.answer, multiple_choice=bool(rec.extras.get("choices_in_prompt")))
    if mode == "papers":
        return papers
    by_type = rec.answer_type == "OPEN" if rec.answer_type else papers  # no field: fall back to the answer
    if mode == "answer_type":
        return by_type
    if mode == "strict":
        return by_type and papers
    raise ValueError(f"unknown open-ended mode {mode!r}; use one of {OPEN_MODES}")


def filter_open(records: Iterable[VQARecord], mode: str | bool = "papers") -> list[VQARecord]:
    """Keep open-ended records (``mode`` True means "papers")."""
    mode = "papers" if mode is True else mode
    return [r for r in records if is_open(r, mode)]


def filter_language(records: Iterable[VQARecord], lang: str | Sequence[str] | None = "en") -> list[VQARecord]:
    """Keep records whose ``extras["lang"]`` is ``lang`` (or in it). Records without a language
    are kept only when ``lang`` is None."""
    if lang is None:
        return list(records)
    langs = {lang} if isinstance(lang, str) else set(lang)
    return [r for r in records if r.extras.get("lang") in langs]


def dedup_key(rec: VQARecord, by: str = "image_question_answer") -> tuple:
    """The identity used for deduplication: images + question (+ answer), case/space folded."""
    imgs = tuple(sorted(rec.images))
    if by == "image_question_answer":
        return imgs, norm_text(rec.question), norm_text(rec.answer)
    if by == "image_question":
        return imgs, norm_text(rec.question)
    if by == "question_answer":
        return norm_text(rec.question), norm_text(rec.answer)
    if by == "id":
        return (rec.id,)
    raise ValueError(f"unknown dedup key {by!r}; use image_question_answer, image_question, question_answer or id")


def deduplicate(records: Iterable[VQARecord], by: str = "image_question_answer", report: dict | None = None) -> list[VQARecord]:
    """Keep the first record of each duplicate group; ``report["duplicates"]`` counts the rest."""
    seen: set = set()
    out = []
    dups = 0
    for r in records:
        k = dedup_key(r, by)
        if k in seen:
            dups += 1
            continue
        seen.add(k)
        out.append(r)
    if report is not None:
        report["duplicates"] = report.get("duplicates", 0) + dups
    return out
