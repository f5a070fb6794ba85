"""MMMU (Yue et al., CVPR 2024) Health & Medicine subjects (Basic Medical Science, Clinical
Medicine, Diagnostics and Laboratory Medicine, Pharmacy, Public Health) from the ``MMMU/MMMU``
parquet files ``<Subject>/<split>-*.parquet``; papers report "validation" (test answers are hidden).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Sequence

from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text
from medrl.data.registry import MMMU_MED_SUBJECTS
from medrl.data.sources._common import (
    find_root,
    image_file,
    letter_index,
    mcq_record,
    need,
    read_rows,
    split_of,
    want_split,
)




def load_mmmu_med(data_dir: Path, split: str | None = "validation", *, subjects: Sequence[str] = MMMU_MED_SUBJECTS,
                  path: str | None = None) -> list[VQARecord]:
    """MMMU Health & Medicine: ``<root>/<Subject>/<split>-*.parquet`` (the ``MMMU/MMMU`` files).

    Multiple-choice items (``question_type`` "multiple-choice", ``options`` a list literal,
    ``answer`` a letter) become MCQ records; open items keep their free-text answer. Images:
    ``image_1`` .. ``image_7`` (the ``<image k>`` tags stay in the question)."""
    root = Path(path).resolve() if path else find_root("mmmu_med", data_dir)
    split = split or "validation"
    out: list[VQARecord] = []
    for subject in subjects:
        files = sorted(f for f in (root / subject).glob("*.parquet") if want_split(split, split_of(f.name)))
        for f in files:
            s = split_of(f.name)
            for i, row in enumerate(read_rows(f)):
                where = f"{f} row {i}"
                need(row, ("question", "answer"), where)
                rid = f"mmmu-{row.get('id') or f'{subject}-{s}-{i}'}"
                imgs = [p for k in range(1, 8) if (p := image_file(root, row.get(f"image_{k}"), f"{rid}-{k}"))]
                extras = {"subject": subject, "subfield": row.get("subfield"), "img_type": row.get("img_type")}
                opts = row.get("options")
                if isinstance(opts, str):
                    try:
                        opts = ast.literal_eval(opts)
                    except (ValueError, SyntaxError):
                        raise DataError(f"{where}: options {opts[:60]!r} is not a list literal") from None
                if opts and str(row.get("question_type", "multiple-choice")) == "multiple-choice":
                    out.append(mcq_record(rid=rid, question=row["question"], options=list(opts),
                                          answer_index=letter_index(row["answer"], len(opts), where),
                                          images=imgs, split=s, source="mmmu_med", where=where, extras=extras))
                else:
                    ans = normalize_answer_text(row["answer"])
                    out.append(VQARecord(id=rid, images=imgs, question=str(row["question"]).strip(), answer=ans,
                                         open_ended=is_open_ended_answer(ans), split=s, source="mmmu_med",
                                         extras={"lang": "en", **extras}))
    if not out:
        raise DataError(f"MMMU: no {split!r} parquet files for {list(subjects)} under {root}")
    return out
