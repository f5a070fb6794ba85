"""Quilt-VQA (Seyfioglu et al. 2025; ``wisdomik/Quilt_VQA``), one of MRPO's out-of-distribution sets.
"""

from __future__ import annotations

from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import find_root, need, parquet_rows, row_image, vqa_record


def load_quilt_vqa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """Quilt-VQA (Seyfioglu et al. 2025; ``wisdomik/Quilt_VQA``): the Hugging Face parquet
    (``data/train-*.parquet``; it is an evaluation set, so every row is "test" here)
    with ``image``, ``question``, ``answer``, ``answer_type`` ("open" | "closed") and ``context``.
    MRPO App. C.1 uses the 724 open questions (``--protocol mrpo`` keeps them)."""
    root = Path(path).resolve() if path else find_root("quilt_vqa", data_dir)
    if split not in (None, "test"):
        raise DataError(f"Quilt-VQA is an evaluation set (split 'test'), not {split!r}")
    if not any(root.rglob("*.parquet")):  # every parquet file is read, whatever its split name
        raise DataError(f"Quilt-VQA: no parquet file under {root} (looked for {root}/**/*.parquet; the "
                        "Hugging Face copy ships data/train-*.parquet)")
    out: list[VQARecord] = []
    for _, f, rows in parquet_rows(root, None, "Quilt-VQA"):
        for i, row in enumerate(rows):
            where = f"{f} row {i}"
            need(row, ("question", "answer", "answer_type"), where)
            kind = str(row["answer_type"]).strip().lower()
            if kind not in ("open", "closed"):
                raise DataError(f"{where}: answer_type {row['answer_type']!r} is not open/closed")
            rid = f"quilt-{f.stem}-{i}"
            out.append(vqa_record(rid=rid, image=row_image(root, row.get("image"), rid), question=row["question"],
                                   answer=row["answer"], split="test", source="quilt_vqa", where=where,
                                   modality="Pathology", closed=kind == "closed",
                                   extras={"context": row.get("context")}))
    return out
