"""OmniMedVQA (Hu et al., CVPR 2024; ``foreverbeliever/OmniMedVQA``).

Layout: ``QA_information/{Open-access,Restricted-access}/<dataset>.json`` and ``Images/...``;
every item is multiple choice (``option_A``..``option_D``, ``gt_answer``); one split ("test").
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import find_root, mcq_record, need, read_rows


def load_omnimedvqa(data_dir: Path, split: str | None = None, *, access: Sequence[str] = ("Open-access", "Restricted-access"),
                    path: str | None = None) -> list[VQARecord]:
    """OmniMedVQA: ``<root>/QA_information/<access>/<dataset>.json`` + ``<root>/Images/...``."""
    root = Path(path).resolve() if path else find_root("omnimedvqa", data_dir)
    if split not in (None, "test"):
        raise DataError(f"OmniMedVQA has one split, 'test', not {split!r}")
    out: list[VQARecord] = []
    for acc in access:
        folder = root / "QA_information" / acc
        for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            for i, row in enumerate(read_rows(f)):
                where = f"{f} item #{i}"
                need(row, ("question", "gt_answer", "image_path"), where)
                options = [row[k] for k in ("option_A", "option_B", "option_C", "option_D", "option_E")
                           if row.get(k) not in (None, "")]
                norm = [str(o).strip().lower() for o in options]
                gt = str(row["gt_answer"]).strip().lower()
                if gt not in norm:
                    raise DataError(f"{where}: gt_answer {row['gt_answer']!r} is not among the options {options}")
                out.append(mcq_record(
                    rid=f"omnimedvqa-{row.get('question_id') or f'{f.stem}-{i}'}", question=row["question"],
                    options=options, answer_index=norm.index(gt), images=[str(root / row["image_path"])],
                    split="test", source="omnimedvqa", modality=row.get("modality_type"), where=where,
                    extras={"dataset": row.get("dataset") or f.stem, "question_type": row.get("question_type"),
                            "access": acc},
                ))
    if not out:
        raise DataError(f"OmniMedVQA: no QA files under {root / 'QA_information'} ({', '.join(access)})")
    return out
