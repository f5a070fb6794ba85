"""SLAKE (Liu et al., ISBI 2021; https://www.med-vqa.com/slake/, CC BY 4.0).

Under ``<data_dir>/slake/``: ``imgs/xmlabN/source.jpg`` (+ ``question.json``, ``detection.json``)
and split files ``train.json`` / ``validate.json`` / ``test.json`` in one of two layouts:

- ``per_image``: each split file lists images, ``[{"image_id": "xmlab1/source.jpg",
  "questions": [...]}, ...]``; the QA records are read from each image's own
  ``imgs/xmlabN/question.json`` (official per-image records, English and Chinese).
- ``flat`` (the official release): each split file is a list with one record per QA,
  ``{"qid", "img_id", "img_name", "question", "answer", "q_lang", "location", "modality",
  "answer_type", "base_type", "content_type", "triple"}``.

The layout is detected from the split file. English only by default (``lang="en"``; ``"zh"`` or
``None`` for all). Record ids: ``slake-<qid>`` (flat) or ``slake-<img_id>-<index in
question.json>`` (per-image).

Known defect of the release: one English record, ``imgs/xmlab281/question.json`` #3 ("Does the
picture contain liver?", train split), has an empty answer. The loader drops records with an
empty answer (``drop_empty=True``, logged as a warning and listed in ``report["empty_answers"]``)
so the default load does not stop on it; the raw English train count is 4,919, usable 4,918.
``drop_empty=False`` keeps them, and validation then reports them as invalid.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

from medrl.data.images import outside_root_problem
from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text, normalize_answer_type
from medrl.data.validate import PROBLEMS_KEY, invalid_record
from medrl.common.modality import modality_to_tag

SPLITS = {"train": "train.json", "validate": "validate.json", "test": "test.json"}
SPLIT_ALIASES = {"val": "validate", "valid": "validate", "validation": "validate", "dev": "validate"}


def find_root(data_dir: Path) -> Path:
    for c in (data_dir / "slake", data_dir / "Slake", data_dir / "SLAKE", data_dir):
        if (c / "imgs").is_dir() and any((c / f).is_file() for f in SPLITS.values()):
            return c.resolve()
    raise DataError(
        f"SLAKE not found under {data_dir}: expected {data_dir / 'slake'}/imgs/ and train.json/validate.json/test.json. "
        "Get it from https://www.med-vqa.com/slake/ - see docs/data.md."
    )


def _load_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"SLAKE file missing: {path}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None


def _folder_of(img_name: str) -> str:
    """``"xmlab1/source.jpg"`` -> ``"xmlab1"``."""
    parts = str(img_name).replace("\\", "/").strip("/").split("/")
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def _detected_organs(root: Path, folder: str, cache: dict) -> list[str] | None:
    if folder not in cache:
        p = root / "imgs" / folder / "detection.json"
        organs = None
        if p.is_file():
            try:
                organs = [k for box in json.loads(p.read_text(encoding="utf-8")) if isinstance(box, dict) for k in box]
            except (json.JSONDecodeError, OSError):
                organs = None
        cache[folder] = organs or None
    return cache[folder]


@functools.lru_cache(maxsize=256)
def _tag(modality: str | None) -> str | None:
    return modality_to_tag(modality)


def _record(root: Path, q: dict, rid: str, split: str, where: str, det_cache: dict) -> VQARecord:
    lang = q.get("q_lang", "en") if isinstance(q.get("q_lang", "en"), str) else None
    problems = [f"{where}: field {key!r} missing" for key in ("img_name", "question", "answer") if key not in q]
    if "img_name" in q and not (isinstance(q["img_name"], str) and q["img_name"].strip()):
        problems.append(f"{where}: field 'img_name' must be one image path, got {type(q['img_name']).__name__} "
                        f"{q['img_name']!r}")
    if "question" in q and not isinstance(q["question"], str):
        problems.append(f"{where}: field 'question' must be text, got {type(q['question']).__name__}")
    answer = ""
    if "answer" in q:
        try:
            answer = normalize_answer_text(q["answer"], where)
        except DataError as exc:
            problems.append(str(exc))
    if not problems:
        why = outside_root_problem(root / "imgs" / q["img_name"], [root])
        if why:
            problems.append(f"{where}: {why}")
    if problems:  # reported by validation naming file and record; skippable with skip_invalid
        return invalid_record(rid, problems, lang=lang, split=split, source="slake")
    folder = _folder_of(q["img_name"])
    extras = {"lang": q.get("q_lang", "en"), "img_id": q.get("img_id"), "img_name": q["img_name"]}
    for k in ("base_type", "content_type", "triple", "qid"):
        if k in q and q[k] not in (None, "", "_"):
            extras[k] = q[k]
    organs = _detected_organs(root, folder, det_cache)
    if organs:
        extras["detected_organs"] = organs
    modality = str(q["modality"]).strip() if q.get("modality") else None
    content_type = q.get("content_type")
    return VQARecord(
        id=rid,
        images=[str(root / "imgs" / q["img_name"])],
        question=str(q["question"]).strip(),
        answer=answer,
        answer_type=normalize_answer_type(q.get("answer_type")),
        open_ended=is_open_ended_answer(answer),
        modality=modality,
        modality_tag=_tag(modality),
        organ=str(q["location"]).strip() if q.get("location") else None,
        question_type=str(content_type).strip() if content_type else None,
        split=split,
        source="slake",
        extras=extras,
    )


def load_slake(
    data_dir: Path, split: str | None = None, *, lang: str | None = "en", drop_empty: bool = True, report: dict | None = None
) -> list[VQARecord]:
    """SLAKE records of ``split`` ("train"/"validate"/"test"; None = every split file present)."""
    root = find_root(Path(data_dir))
    if split is not None:
        split = SPLIT_ALIASES.get(split, split)
        if split not in SPLITS:
            raise DataError(f"SLAKE has splits {list(SPLITS)}, not {split!r}")
        if not (root / SPLITS[split]).is_file():
            raise DataError(f"SLAKE split file missing: {root / SPLITS[split]}")
        splits = [split]
    else:
        splits = [s for s, f in SPLITS.items() if (root / f).is_file()]
    det_cache: dict = {}
    out: list[VQARecord] = []
    for s in splits:
        path = root / SPLITS[s]
        entries = _load_json(path)
        if not isinstance(entries, list):
            raise DataError(f"{path}: expected a JSON list")
        if entries and isinstance(entries[0], dict) and "questions" in entries[0]:
            recs = _per_image(root, entries, s, path, det_cache, lang)
        else:
            recs = _flat(root, entries, s, path, det_cache, lang)
        out += recs
    if drop_empty:
        empty = [r for r in out if not r.answer and not r.extras.get(PROBLEMS_KEY)]
        if empty:
            names = [f"{r.id} ({r.extras.get('img_name')}: {r.question!r})" for r in empty]
            logging.getLogger("medrl.data").warning("SLAKE: dropped %d record(s) with an empty answer: %s", len(empty), "; ".join(names))
            if report is not None:
                report.setdefault("empty_answers", []).extend(names)
            out = [r for r in out if r.answer or r.extras.get(PROBLEMS_KEY)]
    return out


def _per_image(root: Path, entries: list, split: str, path: Path, det_cache: dict, lang: str | None) -> list[VQARecord]:
    out = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or "image_id" not in e:
            raise DataError(f"{path}: entry #{i} has no 'image_id'")
        folder = _folder_of(e["image_id"])
        qpath = root / "imgs" / folder / "question.json"
        qs = _load_json(qpath)
        if not isinstance(qs, list):
            raise DataError(f"{qpath}: expected a JSON list of QA records")
        for k, q in enumerate(qs):
            if not isinstance(q, dict):
                raise DataError(f"{qpath}: record #{k} is not an object")
            if lang is not None and q.get("q_lang", "en") != lang:
                continue
            img_id = q.get("img_id", folder)
            out.append(_record(root, q, f"slake-{img_id}-{k}", split, f"{qpath} record #{k}", det_cache))
    return out


def _flat(root: Path, entries: list, split: str, path: Path, det_cache: dict, lang: str | None) -> list[VQARecord]:
    out = []
    for i, q in enumerate(entries):
        if not isinstance(q, dict):
            raise DataError(f"{path}: record #{i} is not an object")
        if lang is not None and q.get("q_lang", "en") != lang:
            continue
        rid = f"slake-{q['qid']}" if "qid" in q else f"slake-{split}-{i}"
        out.append(_record(root, q, rid, split, f"{path} record #{i}", det_cache))
    return out
