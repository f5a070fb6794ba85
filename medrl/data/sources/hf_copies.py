"""The Hugging Face copies of VQA-RAD, PathVQA and SLAKE that most harnesses use.

- ``vqa_rad_hf`` (``flaviagiammarino/vqa-rad``: train 1,793 / test 451) and ``pathvqa_hf``
  (``flaviagiammarino/path-vqa``: train 19,654 / validation 6,259 / test 6,719): columns ``image``,
  ``question``, ``answer``, no OPEN/CLOSED label (closed = a yes/no answer). Read from a
  ``save_to_disk`` folder, a downloaded folder of parquet files
  (``data/test-00000-of-00001.parquet``) or a hub id (``hf:<id>``, needs network or the HF cache).
- ``slake_hf``: ``BoKelvin/SLAKE`` (the official flat JSON layout with ``validation.json`` and
  ``imgs/`` unzipped from ``imgs.zip``); English only by default, like ``slake``.
"""

from __future__ import annotations

from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import find_root, read_rows


def load_vqa_rad_hf(data_dir: Path, split: str | None = None, *, path: str | None = None) -> list[VQARecord]:
    """``flaviagiammarino/vqa-rad`` from ``<data_dir>/vqa-rad`` (or ``vqa_rad_hf``), or ``path``."""
    from medrl.data.hf import load_hf_records

    root = Path(path).resolve() if path else find_root("vqa_rad_hf", data_dir)
    return load_hf_records(root, split, source="vqa_rad_hf")


def load_pathvqa_hf(data_dir: Path, split: str | None = None, *, path: str | None = None) -> list[VQARecord]:
    """``flaviagiammarino/path-vqa`` from ``<data_dir>/path-vqa`` (or ``pathvqa_hf``), or ``path``."""
    from medrl.data.hf import load_hf_records

    root = Path(path).resolve() if path else find_root("pathvqa_hf", data_dir)
    return load_hf_records(root, split, source="pathvqa_hf", defaults={"modality": "Pathology"})


def load_slake_hf(data_dir: Path, split: str | None = None, *, lang: str | None = "en",
                  path: str | None = None) -> list[VQARecord]:
    """``BoKelvin/SLAKE``: ``train.json`` / ``validation.json`` / ``test.json`` (official flat
    records) and ``imgs/`` (unzipped ``imgs.zip``), under ``<data_dir>/slake_hf`` (or ``SLAKE``)."""
    from medrl.data.sources import slake

    root = Path(path).resolve() if path else find_root("slake_hf", data_dir)
    files = {"train": "train.json", "validate": "validation.json", "test": "test.json"}
    if split is not None:
        split = slake.SPLIT_ALIASES.get(split, split)
        if split not in files:
            raise DataError(f"SLAKE has splits {list(files)}, not {split!r}")
    out: list[VQARecord] = []
    found = 0
    for s, f in files.items():
        if split not in (None, s):
            continue
        p = root / f
        if not p.is_file() and s == "validate":
            p = root / "validate.json"  # snapshots before the rename to validation.json
        if not p.is_file():
            if split is not None:
                raise DataError(f"SLAKE split file missing: {root / f}")
            continue
        found += 1
        entries = read_rows(p)
        out += [r for r in slake._flat(root, entries, s, p, {}, lang) if r.answer]
    if not found:  # no split asked and no split file at all: the folder is not SLAKE's
        raise DataError(f"SLAKE (Hugging Face copy): no split file in {root}: looked for train.json, "
                        "validation.json (or validate.json) and test.json")
    for r in out:
        r.source = "slake_hf"
    return out
