"""MMLU's medical subjects (Hendrycks et al. 2021), MediX-R1 Table 2's MMLU columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from medrl.data.record import DataError, VQARecord
from medrl.data.registry import MMLU_MED_SUBJECTS
from medrl.data.sources._common import find_root, mcq_record, need, read_rows, split_of, want_split




def load_mmlu_med(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                  subjects: Sequence[str] = MMLU_MED_SUBJECTS) -> list[VQARecord]:
    """MMLU's medical subjects (Hendrycks et al. 2021), text-only multiple choice: the
    ``cais/mmlu`` parquet files ``<root>/<subject>/<split>-*.parquet`` (``question``,
    ``choices`` list, ``answer`` index 0-3) or the original CSVs ``<root>/data/<split>/
    <subject>_<split>.csv`` (no header: question, A, B, C, D, answer letter). ``subjects`` picks
    some (the ``mmlu_<subject>`` sources load one each, MediX-R1 reports them separately)."""
    import csv

    root = Path(path).resolve() if path else find_root("mmlu_med", data_dir)
    split = split or "test"
    out: list[VQARecord] = []
    for subject in subjects:
        parquet = sorted(f for f in (root / subject).glob("*.parquet") if want_split(split, split_of(f.name)))
        csv_file = root / "data" / split / f"{subject}_{split}.csv"
        rows: list[tuple[str, dict]] = []
        for f in parquet:
            rows += [(f"{f} row {i}", r) for i, r in enumerate(read_rows(f))]
        if not parquet and csv_file.is_file():
            with csv_file.open(newline="", encoding="utf-8") as fh:
                for i, rec in enumerate(csv.reader(fh)):
                    if len(rec) != 6:
                        raise DataError(f"{csv_file} line {i + 1}: expected question,A,B,C,D,answer")
                    rows.append((f"{csv_file} line {i + 1}", {"question": rec[0], "choices": rec[1:5],
                                                               "answer": "ABCD".index(rec[5].strip().upper())
                                                               if rec[5].strip().upper() in ("A", "B", "C", "D") else rec[5]}))
        if not rows:
            raise DataError(f"MMLU {subject}: neither {root / subject}/{split}-*.parquet nor {csv_file}")
        for j, (where, r) in enumerate(rows):
            need(r, ("question",), where)
            choices = list(r.get("choices") or [])
            ans = r.get("answer")
            if not isinstance(ans, int) or not 0 <= ans < len(choices):
                raise DataError(f"{where}: answer {ans!r} is not an index into {len(choices)} choices")
            out.append(mcq_record(rid=f"mmlu-{subject}-{split}-{j}", question=r["question"], options=choices,
                                  answer_index=ans, images=[], split=split, source=f"mmlu_{subject}", where=where,
                                  extras={"subject": subject}))
    return out
