"""Hugging Face ``datasets`` bridge: records -> the Dataset TRL trains on, and back.

``to_hf_dataset`` produces the columns TRL passes to reward functions as keyword arguments
(``answer``, ``question``, ``image``, ``modality``, ``modality_tag``, ``organ``,
``gold_reasoning``, ``key_steps``, ``evidence``, ``answer_type``, ``record_id``) plus a
conversational ``prompt``. Images are stored as paths in an ``Image`` feature and decoded to PIL
on access, so building the dataset does not read the pictures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from medrl.data.prompts import build_prompt
from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text, normalize_answer_type


def to_hf_dataset(records: Sequence[VQARecord], prompt_style: str = "think_answer", *, system_prompt: str | None = None):
    """A ``datasets.Dataset`` with one row per record.

    Single-image records give an ``image`` column (PIL on access); when any record has several
    images the column is ``images`` (a list) instead, which TRL also accepts. ``key_step_forms``
    carries the equivalent forms of each key step (list of lists) when curation produced them.
    """
    import datasets

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
        images.append(list(r.images) if multi else (r.images[0] if r.images else None))
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


def load_hf_records(path: str | Path, split: str | None = None) -> list[VQARecord]:
    """Records from a dataset saved with ``save_to_disk`` (a Dataset or a DatasetDict).

    Needs ``question`` and ``answer`` columns and an image feature (``image`` or ``images``) whose
    rows are files on disk (decode=False gives their paths); images held only as bytes are written
    under the medrl cache (``$MEDRL_CACHE/hf_images/``). Other columns of the VQARecord schema are used
    when present; anything else goes to ``extras``.
    """
    import datasets

    path = Path(path)
    if not path.exists():
        raise DataError(f"no saved Hugging Face dataset at {path}")
    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises several types for a bad folder
        raise DataError(f"{path}: cannot load with datasets.load_from_disk ({exc})") from None
    if isinstance(ds, datasets.DatasetDict):
        names = [split] if split else list(ds)
        missing = [n for n in names if n not in ds]
        if missing:
            raise DataError(f"{path}: split {missing[0]!r} not in {list(ds)}")
        parts = [(n, ds[n]) for n in names]
    else:
        parts = [(split, ds)]
    out: list[VQARecord] = []
    for sname, d in parts:
        img_col = "image" if "image" in d.column_names else "images" if "images" in d.column_names else None
        for col in ("question", "answer"):
            if col not in d.column_names:
                raise DataError(f"{path}: column {col!r} missing (columns: {d.column_names})")
        if img_col is None:
            raise DataError(f"{path}: no 'image' or 'images' column (columns: {d.column_names})")
        d = d.cast_column(img_col, datasets.List(datasets.Image(decode=False)) if img_col == "images" else datasets.Image(decode=False))
        known = {"id", "record_id", "question", "answer", "answer_type", "modality", "modality_tag", "organ",
                 "question_type", "gold_reasoning", "key_steps", "split", img_col}
        for i, row in enumerate(d):
            imgs = row[img_col] if img_col == "images" else [row[img_col]]
            paths = [_image_file(path, x, f"{sname or 'data'}-{i}-{k}") for k, x in enumerate(imgs) if x]
            rid = row.get("id") or row.get("record_id") or f"hf-{sname or 'data'}-{i}"
            answer = normalize_answer_text(row["answer"])
            out.append(VQARecord(
                id=str(rid), images=paths, question=str(row["question"] or "").strip(), answer=answer,
                answer_type=normalize_answer_type(row.get("answer_type")),
                open_ended=is_open_ended_answer(answer),
                modality=row.get("modality"), modality_tag=row.get("modality_tag"), organ=row.get("organ"),
                question_type=row.get("question_type"), gold_reasoning=row.get("gold_reasoning"),
                key_steps=row.get("key_steps"), split=row.get("split") or sname, source=f"hf:{path.name}",
                extras={k: v for k, v in row.items() if k not in known and _jsonable(v)},
            ))
    return out


def _image_file(root: Path, item: dict, name: str) -> str:
    if item.get("path") and Path(item["path"]).is_file():
        return str(Path(item["path"]).resolve())
    if item.get("bytes"):
        import hashlib

        from medrl.paths import cache_dir

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
