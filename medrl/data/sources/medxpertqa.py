"""MedXpertQA MM (Zuo et al., 2025; ``TsinghuaC3I/MedXpertQA``): ``MM/{dev,test}.jsonl`` and ``images/``.
"""

from __future__ import annotations

import re
from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import find_root, letter_index, mcq_record, need, read_rows, want_split


_CHOICES_TAIL = re.compile(r"\n?\s*Answer Choices:.*$", re.DOTALL)


def load_medxpertqa_mm(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """MedXpertQA MM: ``<root>/MM/{dev,test}.jsonl`` (``id``, ``question`` with its "Answer
    Choices" text, ``options`` {letter: text}, ``label``, ``images`` file names) and
    ``<root>/images/``."""
    root = Path(path).resolve() if path else find_root("medxpertqa_mm", data_dir)
    out: list[VQARecord] = []
    for s in ("dev", "test"):
        f = root / "MM" / f"{s}.jsonl"
        if not want_split(split, s) or not f.is_file():
            continue
        for i, row in enumerate(read_rows(f)):
            where = f"{f} line {i + 1}"
            need(row, ("question", "options", "label"), where)
            letters = sorted(row["options"])
            options = [row["options"][k] for k in letters]
            out.append(mcq_record(
                rid=f"medxpertqa-{row.get('id') or f'{s}-{i}'}", question=_CHOICES_TAIL.sub("", str(row["question"])),
                options=options, answer_index=letter_index(row["label"], len(options), where),
                images=[str(root / "images" / im) for im in row.get("images") or []], split=s,
                source="medxpertqa_mm", organ=row.get("body_system"), where=where,
                extras={"medical_task": row.get("medical_task"), "question_type": row.get("question_type")},
            ))
    if not out:
        raise DataError(f"MedXpertQA MM: no {split!r} file in {root / 'MM'} (dev.jsonl, test.jsonl)")
    return out
