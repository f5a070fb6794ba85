"""Hugging Face ``datasets`` bridge: records -> the Dataset TRL trains on, and back.

``to_hf_dataset`` produces the columns TRL passes to reward functions as keyword arguments
(``answer``, ``question``, ``image``, ``modality``, ``modality_tag``, ``organ``,
``gold_reasoning``, ``key_steps``, ``evidence``, ``answer_type``, ``record_id``) plus a
conversational ``prompt``. Images are stored as paths in an ``Image`` feature and decoded to PIL
on access, so building the dataset does not read the pictures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from medrl.data.prompts import build_prompt
from medrl.data.images import configured_data_roots, outside_root_problem
from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text, normalize_answer_type
from medrl.data.validate import invalid_record


def to_hf_dataset(records: Sequence[VQARecord], prompt_style: str = "think_answer", *, system_prompt: str | None = None,
                  max_pixels: int | None = None):
    """A ``datasets.Dataset`` with one row per record.

    Single-image records give an ``image`` column (PIL on access); when any record has several
    images the column is ``images`` (a list) instead, which TRL also accepts. ``key_step_forms``
    carries the equivalent forms of each key step (list of lists) when curation produced them.
    An image over ``max_pixels`` (default :func:`medrl.data.images.default_max_pixels`; ARMed
    401,408, MediX-R1 4,194,304 in their recipes) is replaced by a downscaled copy
    (:func:`medrl.data.images.capped_image_path`), so the trainer never decodes it at full size.
    """
    import datasets

    from medrl.data.images import capped_image_path

    if not records:
        raise DataError("to_hf_dataset: no records")
    multi = any(len(r.images) > 1 for r in records)
    ev_keys = ("modality", "modality_tag", "organ", "answer", "question_type")
    cols: dict[str, list] = {k: [] for k in (
        "record_id", "prompt", "question", "answer", "answer_type", "open_ended", "modality", "modality_tag",
        "organ", "question_type", "gold_reasoning", "key_steps", "key_step_forms", "evidence", "split", "source")}
    images: list = []
    for r in records:
        cols["record_id"].append(r.id)
        cols["prompt"].append(build_prompt(r, prompt_style, system=system_prompt))
        for k in ("question", "answer", "answer_type", "open_ended", "modality", "modality_tag", "organ",
                  "question_type", "gold_reasoning", "key_steps", "split", "source"):
            cols[k].append(getattr(r, k))
        cols["key_step_forms"].append(r.extras.get("key_step_forms"))
        ev = r.evidence()
        cols["evidence"].append({k: ev.get(k) for k in ev_keys} | {"findings": ev.get("findings")})
        capped = [capped_image_path(p, max_pixels) for p in r.images]
        images.append(capped if multi else (capped[0] if capped else None))
    S, L = datasets.Value("string"), datasets.List
    features = datasets.Features({
        "record_id": S,
        "prompt": L({"role": S, "content": L({"type": S, "text": S})}),
        "question": S, "answer": S, "answer_type": S, "open_ended": datasets.Value("bool"),
        "modality": S, "modality_tag": S, "organ": S, "question_type": S, "gold_reasoning": S,
        "key_steps": L(S), "key_step_forms": L(L(S)),
        "evidence": {**{k: S for k in ev_keys}, "findings": L(S)},
        "split": S, "source": S,
        ("images" if multi else "image"): L(datasets.Image()) if multi else datasets.Image(),
    })
    cols["images" if multi else "image"] = images
    return datasets.Dataset.from_dict(cols, features=features)


def _open_hf(path_or_id: str | Path, split: str | None) -> tuple[Path, list[tuple[str | None, Any]]]:
    """``(root, [(split name, rows)])`` for a ``save_to_disk`` folder, a folder of parquet files
    (a downloaded Hugging Face dataset repo: ``data/<split>-00000-of-00001.parquet``) or a hub id
    (``owner/name``, through :func:`datasets.load_dataset`: network or the local HF cache).
    Image columns come as ``{"bytes", "path"}`` dicts, never decoded."""
    import datasets

    asked = split
    if split is not None:
        split = {"validate": "validation", "val": "validation", "valid": "validation"}.get(split, split)
    path = Path(path_or_id)
    if path.exists():
        parquet = sorted(path.rglob("*.parquet")) if path.is_dir() else []
        saved = path.is_dir() and any((path / f).is_file() for f in ("dataset_dict.json", "state.json", "dataset_info.json"))
        if parquet and not saved:
            import pyarrow.parquet as pq

            groups: dict[str, list[Path]] = {}
            for f in parquet:
                groups.setdefault(_parquet_split(f), []).append(f)
            names = [split] if split else list(groups)
            if split and split not in groups:
                raise DataError(f"{path}: split {split!r} not among the parquet files' splits {sorted(groups)}")
            return path, [(n, [r for f in groups[n] for r in pq.read_table(f).to_pylist()]) for n in names]
        try:
            ds = datasets.load_from_disk(str(path))
        except Exception as exc:  # datasets raises several types for a bad folder
            raise DataError(f"{path}: cannot load with datasets.load_from_disk ({exc})") from None
    elif "/" in str(path_or_id) and not str(path_or_id).startswith((".", "/")):
        try:
            ds = datasets.load_dataset(str(path_or_id))
        except Exception as exc:  # noqa: BLE001 - offline, unknown id, ...
            raise DataError(f"cannot load Hugging Face dataset {path_or_id!r} ({type(exc).__name__}: {exc}); "
                            "download it first (huggingface-cli download --repo-type dataset ...) and pass the folder") from None
        path = Path(str(path_or_id).replace("/", "__"))
    else:
        raise DataError(f"no saved Hugging Face dataset at {path}")
    if isinstance(ds, datasets.DatasetDict):
        if asked in ds:
            split = asked
        names = [split] if split else list(ds)
        missing = [n for n in names if n not in ds]
        if missing:
            raise DataError(f"{path}: split {missing[0]!r} not in {list(ds)}")
        parts = [(n, ds[n]) for n in names]
    else:
        parts = [(split, ds)]
    out = []
    for n, d in parts:
        for col, feat in d.features.items():
            if isinstance(feat, datasets.Image):
                d = d.cast_column(col, datasets.Image(decode=False))
            elif isinstance(feat, (datasets.Sequence, datasets.List)) and isinstance(getattr(feat, "feature", None), datasets.Image):
                d = d.cast_column(col, datasets.List(datasets.Image(decode=False)))
        out.append((n, d))
    return path, out


def _parquet_split(f: Path) -> str:
    """``test-00000-of-00001-abc.parquet`` -> "test"; ``validation-...`` -> "validation"."""
    name = f.name.lower()
    for s in ("train", "validation", "valid", "val", "dev", "test"):
        if name.startswith(s):
            return {"valid": "validation", "val": "validation"}.get(s, s)
    return f.parent.name if f.parent.name in ("train", "test", "validation", "dev") else "data"


def load_hf_records(path: str | Path, split: str | None = None, *, source: str | None = None,
                    defaults: dict | None = None) -> list[VQARecord]:
    """Records from a Hugging Face dataset: a ``save_to_disk`` folder (a Dataset or a
    DatasetDict), a downloaded folder of parquet files, or a hub id (see :func:`_open_hf`).

    Needs ``question`` and ``answer`` columns and an image column (``image`` or ``images``);
    images that are files on disk are used in place, images held as bytes are written under the
    medrl cache (``$MEDRL_CACHE/hf_images/``). Other columns of the VQARecord schema are used
    when present (``defaults`` fills the missing ones, e.g. ``{"modality": "Pathology"}``);
    anything else goes to ``extras``. ``source`` names the records (default ``hf:<folder>``);
    ids are the ``id``/``record_id`` column or ``<source>-<split>-<row>``.
    """
    path, parts = _open_hf(path, split)
    defaults = defaults or {}
    src = source or f"hf:{path.name}"
    out: list[VQARecord] = []
    roots = _image_roots(path)
    for sname, d in parts:
        cols = list(d.column_names) if hasattr(d, "column_names") else (list(d[0]) if d else [])
        img_col = "image" if "image" in cols else "images" if "images" in cols else None
        for col in ("question", "answer"):
            if cols and col not in cols:
                raise DataError(f"{path}: column {col!r} missing (columns: {cols})")
        if cols and img_col is None:
            raise DataError(f"{path}: no 'image' or 'images' column (columns: {cols})")
        known = {"id", "record_id", "question", "answer", "answer_type", "modality", "modality_tag", "organ",
                 "question_type", "gold_reasoning", "key_steps", "split", img_col}
        for i, row in enumerate(d):
            imgs = row[img_col] if img_col == "images" else [row[img_col]]
            paths = [_image_file(path, x, f"{sname or 'data'}-{i}-{k}") for k, x in enumerate(imgs or []) if x]
            rid = row.get("id") or row.get("record_id") or f"{source or 'hf'}-{sname or 'data'}-{i}"
            where = f"{path} split {sname or 'data'} row #{i}"
            problems = [f"{where}: {why}" for why in (outside_root_problem(p, roots) for p in paths if p) if why]
            try:
                answer = normalize_answer_text(row["answer"], where)
            except DataError as exc:
                problems.append(str(exc))
            if problems:  # reported by validation naming the row; skippable with skip_invalid
                out.append(invalid_record(str(rid), problems, split=row.get("split") or sname, source=src))
                continue
            get = lambda k: row.get(k) if row.get(k) not in (None, "") else defaults.get(k)  # noqa: E731
            modality = get("modality")
            tag = get("modality_tag")
            if tag is None and modality:
                from medrl.common.modality import modality_to_tag

                tag = modality_to_tag(modality)
            out.append(VQARecord(
                id=str(rid), images=paths, question=str(row["question"] or "").strip(), answer=answer,
                answer_type=normalize_answer_type(get("answer_type")),
                open_ended=is_open_ended_answer(answer),
                modality=modality, modality_tag=tag, organ=get("organ"),
                question_type=get("question_type"), gold_reasoning=row.get("gold_reasoning"),
                key_steps=row.get("key_steps"), split=row.get("split") or sname, source=src,
                extras={"lang": "en", **{k: v for k, v in row.items() if k not in known and _jsonable(v)}},
            ))
    return out


def _image_roots(path: Path) -> list:
    """Folders a Hugging Face dataset's image files may be in: its own folder, medrl's copy of
    its embedded images, the configured data folder and the Hugging Face cache."""
    from medrl.common.paths import cache_dir

    roots = [path if path.exists() else None, cache_dir() / "hf_images", *configured_data_roots()]
    try:
        from huggingface_hub import constants

        roots += [constants.HF_HOME, constants.HF_HUB_CACHE, os.environ.get("HF_DATASETS_CACHE")]
    except ImportError:  # pragma: no cover - datasets depends on huggingface_hub
        pass
    return roots


def _image_file(root: Path, item: dict, name: str) -> str:
    if item.get("path") and Path(item["path"]).is_file():
        return str(Path(item["path"]).resolve())
    if item.get("bytes"):
        import hashlib

        from medrl.common.paths import cache_dir

        out = cache_dir() / "hf_images" / hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
        out.mkdir(parents=True, exist_ok=True)
        suffix = Path(item.get("path") or "").suffix or ".png"
        f = out / f"{name}{suffix}"
        if not f.exists():
            f.write_bytes(item["bytes"])
        return str(f.resolve())
    return str(item.get("path") or "")  # validation reports it missing


def _jsonable(v) -> bool:
    return isinstance(v, (str, int, float, bool, type(None), list, dict))
