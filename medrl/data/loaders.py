"""``load_records``: one entry point for every supported dataset layout.

Sources: ``vqa_rad``, ``slake``, ``pathvqa``, ``pmc_vqa`` (looked up under ``data_dir``, default
:func:`medrl.paths.data_root`), ``jsonl:<path>`` (our own format) and ``hf:<path>`` (a Hugging
Face dataset saved to disk). A source may carry a split after a colon: ``vqa_rad:test``.
"""

from __future__ import annotations

import os
from pathlib import Path

from medrl.data.filters import deduplicate, filter_language, filter_open
from medrl.data.record import DataError, VQARecord, read_jsonl
from medrl.data.validate import validate_records

DATASETS = ("vqa_rad", "slake", "pathvqa", "pmc_vqa")


def parse_source(source: str) -> tuple[str, str | None, str | None]:
    """``"vqa_rad:test"`` -> ("vqa_rad", None, "test"); ``"jsonl:/x.jsonl"`` -> ("jsonl", "/x.jsonl", None)."""
    if source.startswith(("jsonl:", "hf:")):
        kind, _, rest = source.partition(":")
        return kind, rest, None
    name, _, split = source.partition(":")
    return name, None, split or None


def load_records(
    source: str,
    split: str | None = None,
    data_dir: str | os.PathLike | None = None,
    open_only: bool | str = False,
    *,
    lang: str | None = "en",
    dedup: bool | str = False,
    validate: bool = True,
    skip_invalid: bool = False,
    report: dict | None = None,
    rationales: str | os.PathLike | None = None,
    limit: int | None = None,
    **kw,
) -> list[VQARecord]:
    """Load, validate and filter records.

    ``open_only``: False, True (= "papers"), or a mode of :mod:`medrl.data.filters`.
    ``lang``: keep this language (SLAKE is bilingual; None keeps all). ``dedup``: False, True
    (image+question+answer) or a key name. ``validate``: check every image opens and question and
    answer are non-empty; a bad record raises :class:`DataError` naming file and record, unless
    ``skip_invalid`` (then counted in ``report``). ``rationales``: a MedThink file whose
    rationales become ``gold_reasoning`` (match counts in ``report["medthink"]``). ``limit``: keep
    the first N after filtering. Other keywords go to the dataset loader (``layout="mevf"`` for
    VQA-RAD, ``with_choices=True`` for PMC-VQA).
    """
    kind, path, src_split = parse_source(source)
    split = split or src_split
    report = report if report is not None else {}
    if kw and kind in ("jsonl", "hf"):
        raise TypeError(f"unexpected options for {kind}: {sorted(kw)}")
    if kind == "jsonl":
        records = read_jsonl(path, skip_invalid=skip_invalid, report=report)
        if split:
            records = [r for r in records if r.split == split]
        where = path
    elif kind == "hf":
        from medrl.data.hf import load_hf_records

        records = load_hf_records(path, split)
        where = path
    elif kind in DATASETS:
        from medrl.paths import data_root

        root = data_root(data_dir)
        if kind == "vqa_rad":
            from medrl.data.vqa_rad import load_vqa_rad as fn
        elif kind == "slake":
            from medrl.data.slake import load_slake as fn

            kw.setdefault("lang", lang)
            kw.setdefault("report", report)
        elif kind == "pathvqa":
            from medrl.data.pathvqa import load_pathvqa as fn
        else:
            from medrl.data.pmc_vqa import load_pmc_vqa as fn
        records = fn(Path(root), split, **kw)
        where = f"{kind} in {root}"
    else:
        raise DataError(f"unknown data source {source!r}; use one of {list(DATASETS)}, 'jsonl:<path>' or 'hf:<path>'")
    if lang is not None and any(r.extras.get("lang") for r in records):
        records = filter_language(records, lang)
    if validate:
        records = validate_records(records, where=str(where), skip_invalid=skip_invalid, report=report)
    if rationales:
        from medrl.data.medthink import attach_rationales

        records, report["medthink"] = attach_rationales(records, rationales)
    if open_only:
        records = filter_open(records, open_only)
    if dedup:
        records = deduplicate(records, "image_question_answer" if dedup is True else dedup, report)
    if limit is not None:
        records = records[:limit]
    return records
