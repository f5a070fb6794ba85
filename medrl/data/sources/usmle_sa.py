"""USMLE self-assessment (MediX-R1's "USMLE-SA"): the USMLE sample exam questions, text-only
multiple choice, one split ("test"). Two published forms, both read as downloaded:

- ``HuggingSara/usmle_self_assessment`` (what MediX-R1's task list evaluates, 325 rows): the
  parquet file ``data/train-*.parquet`` with columns ``question``, ``options`` (a struct
  ``A``..``I``, unused letters empty), ``answer`` (the correct option's text) and
  ``answer_idx`` (its letter). The hub calls its one split "train"; it is an evaluation set, so
  its rows are this source's "test" split.
- ``medalpaca/medical_meadow_usmle_self_assessment``: ``step1.json``, ``step2.json``,
  ``step3.json`` (lists of ``{"no", "question", "options": {letter: text}}``) with the answers in
  ``step{N}_solutions.json`` (``{"<no>": "<letter>"}``) and ``question_with_images.json``
  (``{"step1": [positions of questions that refer to an image]}``, skipped by default: medrl
  has no image for them). An inline ``answer`` letter on an item is read too.

When both are in the folder the Hugging Face parquet wins (MediX-R1's items).
"""

from __future__ import annotations

import json
from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import letter_index, mcq_record, need, read_rows, source_root

STEPS = ("step1", "step2", "step3")


def _option_list(opts, where: str) -> tuple[list[str], list[str]]:
    """``(letters, texts)`` of an options dict (empty or missing letters dropped) or list."""
    if isinstance(opts, dict):
        letters = [k for k in sorted(opts) if opts[k] not in (None, "")]
        return letters, [str(opts[k]) for k in letters]
    if isinstance(opts, (list, tuple)):
        return [chr(65 + i) for i in range(len(opts))], [str(o) for o in opts]
    raise DataError(f"{where}: 'options' is neither a mapping of letters to text nor a list")


def _index(letters: list[str], texts: list[str], label, text, where: str) -> int:
    """Index of the correct option from its letter (preferred) or its text."""
    lab = str(label or "").strip().upper().strip("().")
    if lab in letters:
        return letters.index(lab)
    if text not in (None, ""):
        norm = [t.strip().lower() for t in texts]
        if str(text).strip().lower() in norm:
            return norm.index(str(text).strip().lower())
    return letter_index(label if label not in (None, "") else text, len(texts), where)


def _from_parquet(files: list[Path]) -> list[VQARecord]:
    out = []
    for f in files:
        for i, row in enumerate(read_rows(f)):
            where = f"{f} row {i}"
            need(row, ("question", "options"), where)
            if row.get("answer_idx") in (None, "") and row.get("answer") in (None, ""):
                raise DataError(f"{where}: neither 'answer_idx' nor 'answer' is set")
            letters, texts = _option_list(row["options"], where)
            idx = _index(letters, texts, row.get("answer_idx"), row.get("answer"), where)
            out.append(mcq_record(rid=f"usmle-{f.stem}-{i}", question=row["question"], options=texts,
                                  answer_index=idx, images=[], split="test", source="usmle_sa", where=where,
                                  extras={"form": "HuggingSara/usmle_self_assessment"}))
    return out


def _from_medalpaca(root: Path, with_image_questions: bool) -> list[VQARecord]:
    skip: dict = {}
    img_file = root / "question_with_images.json"
    if img_file.is_file() and not with_image_questions:
        skip = json.loads(img_file.read_text(encoding="utf-8"))
    out = []
    for step in STEPS:
        f = root / f"{step}.json"
        if not f.is_file():
            continue
        sol_file = root / f"{step}_solutions.json"
        solutions = json.loads(sol_file.read_text(encoding="utf-8")) if sol_file.is_file() else {}
        skipped = {int(k) for k in skip.get(step, [])}
        for i, row in enumerate(read_rows(f)):
            where = f"{f} item #{i}"
            if i in skipped:
                continue
            need(row, ("question", "options"), where)
            label = row.get("answer") or solutions.get(str(row.get("no", i + 1)))
            if label in (None, ""):
                continue  # unanswered in this release
            letters, texts = _option_list(row["options"], where)
            idx = _index(letters, texts, label, None, where)
            out.append(mcq_record(rid=f"usmle-{step}-{row.get('no', i)}", question=row["question"], options=texts,
                                  answer_index=idx, images=[], split="test", source="usmle_sa", where=where,
                                  extras={"step": step, "form": "medalpaca/medical_meadow_usmle_self_assessment"}))
    return out


def load_usmle_sa(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                  with_image_questions: bool = False) -> list[VQARecord]:
    """USMLE-SA records from either published form (see the module docstring).
    ``with_image_questions``: keep the medalpaca questions that refer to an image."""
    root = source_root("usmle_sa", data_dir, path)
    if split not in (None, "test"):
        raise DataError(f"USMLE-SA has one split, 'test', not {split!r}")
    parquet = sorted(root.rglob("*.parquet"))
    out = _from_parquet(parquet) if parquet else _from_medalpaca(root, with_image_questions)
    if not out:
        looked = [str(root / "data" / "train-*.parquet")] + [str(root / f"{s}{x}.json") for s in STEPS
                                                             for x in ("", "_solutions")]
        raise DataError(f"USMLE-SA: no answered items under {root}; looked for {looked}")
    return out
