"""``load_records``: one entry point for every supported dataset layout.

Sources: the names in :data:`LOADERS` (``vqa_rad``, ``slake``, ``pathvqa``, ``pmc_vqa``, the
benchmarks of :mod:`medrl.data.benchmarks`; looked up under ``data_dir``, default
:func:`medrl.paths.data_root`), ``jsonl:<path>`` (our own format) and ``hf:<path>`` (a Hugging
Face dataset: ``save_to_disk`` folder, downloaded parquet folder or hub id). A source may carry
a split after a colon: ``vqa_rad:test``.
"""

from __future__ import annotations

import os
from pathlib import Path

from medrl.data.benchmarks import EXTRA_LOADERS, EXTRA_TEXT_ONLY
from medrl.data.filters import deduplicate, filter_language, filter_open
from medrl.data.record import DataError, VQARecord, read_jsonl
from medrl.data.validate import validate_records

#: Named sources: name -> (module, loader function, fixed keyword arguments). Each loader takes
#: ``(data_dir, split, **kw)`` and finds its files under ``data_dir`` (see docs/evaluation.md).
LOADERS: dict[str, tuple[str, str, dict]] = {
    "vqa_rad": ("medrl.data.vqa_rad", "load_vqa_rad", {}),
    "slake": ("medrl.data.slake", "load_slake", {}),
    "pathvqa": ("medrl.data.pathvqa", "load_pathvqa", {}),
    "pmc_vqa": ("medrl.data.pmc_vqa", "load_pmc_vqa", {}),
    "pmc_vqa_mc": ("medrl.data.pmc_vqa", "load_pmc_vqa", {"with_choices": True}),
    "vqa_rad_hf": ("medrl.data.benchmarks", "load_vqa_rad_hf", {}),
    "slake_hf": ("medrl.data.benchmarks", "load_slake_hf", {}),
    "pathvqa_hf": ("medrl.data.benchmarks", "load_pathvqa_hf", {}),
    "omnimedvqa": ("medrl.data.benchmarks", "load_omnimedvqa", {}),
    "mmmu_med": ("medrl.data.benchmarks", "load_mmmu_med", {}),
    "medxpertqa_mm": ("medrl.data.benchmarks", "load_medxpertqa_mm", {}),
    "medqa": ("medrl.data.benchmarks", "load_medqa", {}),
    "medmcqa": ("medrl.data.benchmarks", "load_medmcqa", {}),
    "pubmedqa": ("medrl.data.benchmarks", "load_pubmedqa", {}),
    **EXTRA_LOADERS,  # the papers' other benchmarks and training sets (medrl.data.benchmarks)
}
DATASETS = tuple(LOADERS)
#: Sources whose records carry no image (text-only multiple choice).
TEXT_ONLY = ("medqa", "medmcqa", "pubmedqa") + EXTRA_TEXT_ONLY
#: Where each source's files are looked for (``find_root`` of its module), for ``find_source``.
_ROOT_FINDERS = {"vqa_rad": "medrl.data.vqa_rad", "slake": "medrl.data.slake", "pathvqa": "medrl.data.pathvqa",
                 "pmc_vqa": "medrl.data.pmc_vqa", "pmc_vqa_mc": "medrl.data.pmc_vqa"}


def find_source(name: str, data_dir: str | os.PathLike) -> Path | None:
    """The folder a named source would load from under ``data_dir``, or None when it is absent
    (only folder checks, nothing is loaded; ``medrl eval --suite`` uses this)."""
    import importlib

    if name not in LOADERS:
        raise DataError(f"unknown data source {name!r}; use one of {list(LOADERS)}")
    try:
        if name in _ROOT_FINDERS:
            return Path(importlib.import_module(_ROOT_FINDERS[name]).find_root(Path(data_dir)))
        from medrl.data.benchmarks import find_root

        return find_root(name, data_dir)
    except DataError:
        return None


class DataNotFoundError(DataError):
    """A named dataset is in none of the data folders (the message lists them)."""


def locate_source(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The data folder that holds the named source ``name``: each candidate of
    :func:`medrl.paths.data_candidates` (``--data-dir``; else ``$MEDRL_DATA_DIR``, ``./data``,
    ``../shared/data``) is checked for that dataset, so an unrelated ``./data`` never hides the
    folder that has it. Raises :class:`DataNotFoundError` listing the folders looked in."""
    from medrl.paths import find_data_root

    def has(root: Path) -> bool:
        try:
            return find_source(name, root) is not None
        except OSError:  # an unreadable folder does not hold it
            return False

    try:
        return find_data_root(name, has, data_dir)
    except FileNotFoundError as exc:
        raise DataNotFoundError(str(exc)) from None


def suite_specs(name: str, data_dir: str | Path | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """``(present specs, [(missing spec, why)])`` of a suite under ``data_dir``: a benchmark is
    present when its loader finds its files (a local copy's own layout, or its HF copy)."""
    from medrl.data.benchmarks import _SUITE_FALLBACK, SUITES
    from medrl.paths import data_roots

    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    roots = data_roots(data_dir)
    present, missing = [], []
    for spec, url in SUITES[name]:
        src, _, split = spec.partition(":")
        alt = _SUITE_FALLBACK.get(src)
        if any(find_source(src, root) is not None for root in roots):
            present.append(spec)
        elif alt and any(find_source(alt, root) is not None for root in roots):
            present.append(f"{alt}:{split}" if split else alt)
        else:
            missing.append((spec, f"get it from {url}"))
    return present, missing


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
    roots = None  # jsonl/hf sources confine their own image paths (medrl.data.record, medrl.data.hf)
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
    elif kind in LOADERS:
        import importlib

        # the folder that holds this dataset (a loader given its own path= needs none)
        root = locate_source(kind, data_dir) if not kw.get("path") else Path(data_dir or ".")
        mod, name, fixed = LOADERS[kind]
        fn = getattr(importlib.import_module(mod), name)
        if kind in ("slake", "slake_hf"):
            kw.setdefault("lang", lang)
        if kind == "slake":
            kw.setdefault("report", report)
        records = fn(Path(root), split, **{**fixed, **kw})
        where = f"{kind} in {root}"
        # image paths must stay inside the folder the dataset was found in (or medrl's cache,
        # where the hub-copy loaders write the images they extract)
        from medrl.paths import cache_dir

        roots = [root, cache_dir() / "hf_images"]
    else:
        raise DataError(f"unknown data source {source!r}; use one of {list(DATASETS)}, 'jsonl:<path>' or "
                        "'hf:<folder or hub id>'")
    if lang is not None and any(r.extras.get("lang") for r in records):
        records = filter_language(records, lang)
    if validate:
        records = validate_records(records, where=str(where), skip_invalid=skip_invalid, report=report,
                                   check_duplicates=dedup != "id",
                                   require_image=kind not in TEXT_ONLY, roots=roots)
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
