"""RadImageNet-VQA (``raidium/RadImageNet-VQA``), one of MRPO's out-of-distribution sets.
"""

from __future__ import annotations

import json
from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import (
    letter_index, mcq_record, need, read_rows, row_image, source_root, split_of, vqa_record, want_split,
)


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


#: The hub's configuration that holds the stratified evaluation set; other configurations of the
#: dataset (training and instruction data) have ``test`` shards too and are never read.
BENCHMARK_CONFIG = "benchmark"


def benchmark_shards(root: Path, split: str | None) -> list[tuple[str | None, Path, list[dict]]]:
    """The parquet shards of the benchmark configuration only: ``<root>/**/benchmark/*.parquet``
    when such a folder exists, else the parquet files directly in ``root`` (a copy of just that
    configuration); shards of any other configuration folder are left out."""
    folders = sorted(p for p in root.rglob(BENCHMARK_CONFIG) if p.is_dir())
    if len(folders) > 1:
        raise DataError(f"RadImageNet-VQA: several {BENCHMARK_CONFIG!r} folders under {root} "
                        f"({[str(f) for f in folders[:3]]}); keep one copy or pass its folder")
    folder = folders[0] if folders else root
    if not folders and not any(folder.glob("*.parquet")):
        others = sorted({p.parent.name for p in root.rglob("*.parquet")})
        raise DataError(f"RadImageNet-VQA: no {BENCHMARK_CONFIG!r} configuration folder under {root} and no parquet "
                        f"file directly in it (configurations found: {others[:5]}); the evaluation set is the "
                        f"hub's {BENCHMARK_CONFIG!r} configuration")
    files = sorted(folder.glob("*.parquet"))
    picked = [(s, f) for f in files if want_split(split, s := split_of(f.name))]
    if not picked:
        raise DataError(f"RadImageNet-VQA: no {split!r} parquet file in {folder} (found {[f.name for f in files][:5]})")
    return [(s, f, read_rows(f)) for s, f in picked]


def load_radimagenet_vqa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """RadImageNet-VQA (``raidium/RadImageNet-VQA``), its stratified evaluation set of 9,000 CT/MRI
    questions: the parquet shards of the ``benchmark`` configuration only
    (``benchmark/<split>-*.parquet``, :func:`benchmark_shards`; a full download's other
    configurations are never mixed in) with ``image``, ``question``, ``answer``, a question-type
    column (``question_type`` or ``type``: "open" | "closed" | "mcq"), ``choices`` for multiple
    choice, and a ``metadata`` struct holding the image's ``modality`` and ``location`` (also read
    at the top level, and ``anatomy`` as the location, for older copies). MRPO App. C.1 uses the
    2,000 open questions (``--protocol mrpo``). Record ids are the dataset's own
    ``metadata.question_id`` (``radimagenet-<question_id>``); a copy without it gets the shard's
    file stem and the row (``radimagenet-<stem>-<row>``), so rows of different shards never
    collide. A question id given twice is an error naming both rows."""
    root = source_root("radimagenet_vqa", data_dir, path)
    out: list[VQARecord] = []
    seen: dict[str, str] = {}
    for s, f, rows in benchmark_shards(root, split):
        for i, row in enumerate(rows):
            where = f"{f} row {i}"
            need(row, ("question", "answer"), where)
            meta = _meta(row, where)
            kind = str(_first(row.get("question_type"), row.get("type"), meta.get("question_type"),
                              meta.get("type")) or "").strip().lower()
            if kind not in ("open", "closed", "mcq", "multiple_choice", "multiple-choice"):
                raise DataError(f"{where}: question type {kind!r} is not open/closed/mcq "
                                "(column question_type or type)")
            qid = _first(meta.get("question_id"), row.get("question_id"))
            rid = f"radimagenet-{qid}" if qid is not None else f"radimagenet-{f.stem}-{i}"
            if rid in seen:
                raise DataError(f"{where}: question_id {qid!r} already used by {seen[rid]}")
            seen[rid] = where
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
