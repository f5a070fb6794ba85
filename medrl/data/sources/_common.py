"""Helpers the source loaders share: finding a source's folder, reading rows of JSON, JSON
lines or parquet files, split names, and building records in the project's conventions.

Multiple-choice items follow the PMC-VQA convention of :mod:`medrl.data.sources.pmc_vqa`: the
options are appended to the question as ``A: ...`` lines, ``answer`` is the correct option's text,
``answer_type`` is ``CLOSED``, ``open_ended`` is False and ``extras`` holds ``choices``,
``answer_label`` and ``choices_in_prompt=True`` (the eval scores them by exact option match).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text
from medrl.common.modality import modality_to_tag


def find_folder(data_dir: Path, names: Sequence[str], what: str, url: str, check=lambda p: p.is_dir()) -> Path:
    for n in names:
        c = Path(data_dir) / n
        if check(c):
            return c.resolve()
    raise DataError(f"{what} not found under {data_dir}: expected one of {[str(Path(data_dir) / n) for n in names]}. "
                    f"Get it from {url} - see docs/evaluation.md.")


def read_rows(path: Path) -> list[dict]:
    """Rows of a .json (a list, or a dict of id -> row), .jsonl or .parquet file."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        if suffix == ".jsonl":
            from medrl.common.jsonl import read_jsonl

            return read_jsonl(path)
        text = path.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if "Extra data" not in str(exc):
                raise
            from medrl.common.jsonl import read_jsonl  # a .json file holding JSON lines (MedMCQA's release)

            return read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    if isinstance(data, dict):
        return [{"_key": k, **v} if isinstance(v, dict) else {"_key": k, "value": v} for k, v in data.items()]
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list or object")
    return data


def need(row: dict, fields: Iterable[str], where: str) -> None:
    for f in fields:
        if row.get(f) in (None, ""):
            raise DataError(f"{where}: field {f!r} missing or empty")


def mcq_record(*, rid: str, question: str, options: Sequence[str], answer_index: int, images: Sequence[str],
               split: str | None, source: str, modality: str | None = None, organ: str | None = None,
               extras: dict | None = None, where: str = "", options_in_question: bool = False) -> VQARecord:
    """A multiple-choice record in the project's convention (see the module docstring)."""
    options = [normalize_answer_text(o) for o in options]
    if not 0 <= answer_index < len(options):
        raise DataError(f"{where}: record {rid!r}: answer index {answer_index} outside {len(options)} options")
    q = str(question).strip()
    if not options_in_question:
        q += "\n" + "\n".join(f"{chr(65 + k)}: {c}" for k, c in enumerate(options))
    return VQARecord(
        id=rid, images=list(images), question=q, answer=options[answer_index], answer_type="CLOSED",
        open_ended=False, modality=modality, modality_tag=modality_to_tag(modality) if modality else None,
        organ=organ, split=split, source=source,
        extras={"lang": "en", "choices": options, "answer_label": chr(65 + answer_index), "choices_in_prompt": True,
                **(extras or {})},
    )


def letter_index(label: Any, n: int, where: str) -> int:
    s = str(label or "").strip().upper().strip("().")
    if len(s) == 1 and "A" <= s <= "Z" and ord(s) - 65 < n:
        return ord(s) - 65
    raise DataError(f"{where}: answer label {label!r} is not one of the {n} option letters")


def split_of(name: str) -> str | None:
    n = name.lower()
    for key, split in (("train", "train"), ("validation", "validation"), ("valid", "validation"), ("val", "validation"),
                       ("dev", "dev"), ("test", "test")):
        if n.startswith(key):
            return split
    return None


SPLIT_ALIASES = {"validate": "validation", "val": "validation", "valid": "validation"}


def want_split(split: str | None, candidate: str | None, dev_is_validation: bool = False) -> bool:
    """Does file split ``candidate`` match the requested ``split``? ``dev_is_validation``: the
    dataset's "dev" file is its validation split (MedQA, MedMCQA), not a few-shot set (MMMU)."""
    if split is None:
        return True
    a = {**SPLIT_ALIASES, **({"dev": "validation"} if dev_is_validation else {})}
    return a.get(split, split) == a.get(candidate or "", candidate)


def has_any(*names: str):
    return lambda p: p.is_dir() and any((p / n).exists() for n in names)


def image_file(root: Path, item: Any, name: str) -> str | None:
    if not item:
        return None
    if isinstance(item, str):
        return str(root / item)
    from medrl.data.hf import _image_file as hf_image_file

    return hf_image_file(root, item, name)


def vqa_record(*, rid: str, image: str | None, question: str, answer: str, split: str | None, source: str,
                where: str, modality: str | None = None, organ: str | None = None, closed: bool | None = None,
                extras: dict | None = None) -> VQARecord:
    ans = normalize_answer_text(answer)
    if not ans:
        raise DataError(f"{where}: record {rid!r}: empty answer")
    open_ = is_open_ended_answer(ans) if closed is None else not closed
    return VQARecord(id=rid, images=[image] if image else [], question=str(question).strip(), answer=ans,
                     answer_type="OPEN" if open_ else "CLOSED", open_ended=open_, modality=modality,
                     modality_tag=modality_to_tag(modality) if modality else None, organ=organ, split=split,
                     source=source, extras={"lang": "en", **(extras or {})})


def pipe_lines(path: Path) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of a ``|``-separated ImageCLEF file (blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    return [(i + 1, [f.strip() for f in line.split("|")]) for i, line in enumerate(text.splitlines()) if line.strip()]


def image_in(folder: Path, stem: str) -> str:
    for ext in (".jpg", ".jpeg", ".png"):
        if (folder / f"{stem}{ext}").is_file():
            return str(folder / f"{stem}{ext}")
    return str(folder / f"{stem}.jpg")  # validation reports it missing


def parquet_rows(root: Path, split: str | None, what: str) -> list[tuple[str | None, Path, list[dict]]]:
    files = sorted(root.rglob("*.parquet"))
    picked = [(s, f) for f in files if want_split(split, s := split_of(f.name))]
    if not picked:
        which = f"{split!r} parquet file" if split else "parquet file"
        raise DataError(f"{what}: no {which} under {root} (looked for **/*.parquet; found {[f.name for f in files][:5]})")
    return [(s, f, read_rows(f)) for s, f in picked]


def row_image(root: Path, item: Any, name: str) -> str | None:
    if isinstance(item, list):
        item = item[0] if item else None
    return image_file(root, item, name)


def find_root(name: str, data_dir: str | Path) -> Path:
    """The folder of source ``name`` under ``data_dir``, by its entry in
    :data:`medrl.data.registry.SOURCES`; :class:`DataError` (naming the folders tried and where
    to get it) when absent."""
    from medrl.data.registry import find_root as registry_find_root

    return registry_find_root(name, data_dir)


def source_root(name: str, data_dir: str | Path, path: str | None) -> Path:
    """``path`` when a caller gave the folder itself, else the folder of ``name`` under ``data_dir``."""
    return Path(path).resolve() if path else find_root(name, data_dir)


def first_existing(root: Path, names: Sequence[str], what: str, check=lambda p: p.exists()) -> Path:
    """The first of ``root/name`` that exists; :class:`DataError` naming every path looked for."""
    for n in names:
        c = root / n
        if check(c):
            return c
    raise DataError(f"{what}: none of {[str(root / n) for n in names]} found")


def split_modality_tag(text: str) -> tuple[str | None, str]:
    """``"<X_RAY> pneumonia"`` -> ("X_RAY", "pneumonia"): MediX-R1's training answers start with the
    image-modality tag its modality reward checks (its reward function reads the text before the
    first ``>`` as the tag). Text without a leading ``<TAG>`` -> (None, text)."""
    import re

    m = re.match(r"\s*<\s*([A-Za-z][A-Za-z_ ]*?)\s*>\s*(.*)\Z", str(text), re.DOTALL)
    if not m or m.group(1).lower() in ("answer", "think", "thinking"):
        return None, str(text).strip()
    return m.group(1).strip().upper().replace(" ", "_"), m.group(2).strip()
