"""RadImageNet-VQA (``raidium/RadImageNet-VQA``), one of MRPO's out-of-distribution sets.
"""

from __future__ import annotations

import json
from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import letter_index, mcq_record, need, parquet_rows, row_image, source_root, vqa_record


def _meta(row: dict, where: str) -> dict:
    """The row's ``metadata`` column as a dict (a struct, or a JSON string); empty when absent."""
    meta = row.get("metadata")
    if meta in (None, ""):
        return {}
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            raise DataError(f"{where}: 'metadata' is not a JSON object: {meta[:60]!r}") from None
    if not isinstance(meta, dict):
        raise DataError(f"{where}: 'metadata' is a {type(meta).__name__}, expected an object")
    return meta


def _first(*values):
    return next((v for v in values if v not in (None, "")), None)


def load_radimagenet_vqa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """RadImageNet-VQA (``raidium/RadImageNet-VQA``), its stratified evaluation set of 9,000 CT/MRI
    questions: parquet shards (``<config>/<split>-*.parquet``, read from anywhere under the
    folder) with ``image``, ``question``, ``answer``, a question-type column (``question_type``
    or ``type``: "open" | "closed" | "mcq"), ``choices`` for multiple choice, and a
    ``metadata`` struct holding the image's ``modality`` and ``location`` (also read at the top
    level, and ``anatomy`` as the location, for older copies). MRPO App. C.1 uses the 2,000 open
    questions (``--protocol mrpo``). Ids carry the shard's file stem and the row
    (``radimagenet-<stem>-<row>``), so rows of different shards never collide."""
    root = source_root("radimagenet_vqa", data_dir, path)
    out: list[VQARecord] = []
    for s, f, rows in parquet_rows(root, split, "RadImageNet-VQA"):
        for i, row in enumerate(rows):
            where = f"{f} row {i}"
            need(row, ("question", "answer"), where)
            meta = _meta(row, where)
            kind = str(_first(row.get("question_type"), row.get("type"), meta.get("question_type"),
                              meta.get("type")) or "").strip().lower()
            if kind not in ("open", "closed", "mcq", "multiple_choice", "multiple-choice"):
                raise DataError(f"{where}: question type {kind!r} is not open/closed/mcq "
                                "(column question_type or type)")
            rid = f"radimagenet-{f.stem}-{i}"
            img = row_image(root, row.get("image"), rid)
            mod = _first(meta.get("modality"), row.get("modality"))
            organ = _first(meta.get("location"), meta.get("anatomy"), row.get("anatomy"), row.get("location"))
            extras = {k: meta[k] for k in ("content_type", "pathology", "subtype") if meta.get(k) not in (None, "")}
            if kind in ("mcq", "multiple_choice", "multiple-choice"):
                choices = list(row.get("choices") or row.get("options") or [])
                norm = [str(c).strip().lower() for c in choices]
                ans = str(row["answer"]).strip()
                idx = norm.index(ans.lower()) if ans.lower() in norm else letter_index(ans, len(choices), where)
                out.append(mcq_record(rid=rid, question=row["question"], options=choices, answer_index=idx,
                                      images=[img] if img else [], split=s or "test", source="radimagenet_vqa",
                                      modality=mod, organ=organ, where=where, extras=extras))
            else:
                out.append(vqa_record(rid=rid, image=img, question=row["question"], answer=row["answer"],
                                      split=s or "test", source="radimagenet_vqa", where=where, modality=mod,
                                      organ=organ, closed=kind == "closed", extras=extras))
    return out
