"""PathVQA (He et al., 2020; https://github.com/UCSD-AI4H/PathVQA), released ``pvqa`` layout.

Under ``<data_dir>/pathvqa/`` (or ``<data_dir>/pvqa/``)::

    qas/train/train_qa.pkl   qas/val/val_qa.pkl   qas/test/test_qa.pkl
    images/train/train_0000.jpg ...

Each ``*_qa.pkl`` is a pickled list of ``{"image": "train_0422", "question": ..., "answer": ...}``
(optionally ``answer_type``). The LXMERT-style ``*_vqa.pkl`` entries (``img_id``, ``sent``,
``label`` = {answer: score}) are accepted too. Pickles are read with a restricted unpickler that
refuses any class or function, so a tampered file cannot run code.

PathVQA has no modality field: every image is pathology, raw modality "Pathology" (tag
MICROSCOPY; the corpus also holds some gross photographs, which this does not distinguish).
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text, normalize_answer_type
from medrl.common.modality import modality_to_tag

SPLIT_DIRS = {"train": "train", "validate": "val", "test": "test"}
SPLIT_ALIASES = {"val": "validate", "valid": "validate", "validation": "validate"}
IMAGE_EXTS = (".jpg", ".jpeg", ".png")


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # noqa: D401 - pickle hook
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: PathVQA files hold only lists/dicts/strings")


def safe_pickle_load(path: Path):
    """Unpickle plain data (lists, dicts, strings, numbers) only."""
    try:
        return _SafeUnpickler(io.BytesIO(path.read_bytes())).load()
    except (pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise DataError(f"{path}: cannot read as a plain-data pickle ({exc})") from None


def find_root(data_dir: Path) -> Path:
    for c in (data_dir / "pathvqa", data_dir / "PathVQA", data_dir / "pvqa", data_dir / "pathvqa" / "pvqa", data_dir):
        if (c / "qas").is_dir():
            return c
    raise DataError(
        f"PathVQA not found under {data_dir}: expected {data_dir / 'pathvqa'}/qas/<split>/<split>_qa.pkl and "
        "images/<split>/. Get it from https://github.com/UCSD-AI4H/PathVQA - see docs/data.md."
    )


def _qa_file(root: Path, sdir: str) -> Path:
    for name in (f"{sdir}_qa.pkl", f"{sdir}_vqa.pkl"):
        p = root / "qas" / sdir / name
        if p.is_file():
            return p
        p = root / "qas" / name
        if p.is_file():
            return p
    raise DataError(f"PathVQA split file missing: {root / 'qas' / sdir / (sdir + '_qa.pkl')}")


def _image_path(root: Path, sdir: str, image: str) -> Path:
    base = root / "images" / sdir / image
    if base.suffix.lower() in IMAGE_EXTS:
        return base
    for ext in IMAGE_EXTS:
        if base.with_suffix(ext).is_file():
            return base.with_suffix(ext)
    return base.with_suffix(".jpg")  # validation reports it missing


def load_pathvqa(data_dir: Path, split: str | None = None) -> list[VQARecord]:
    root = find_root(Path(data_dir)).resolve()
    if split is not None:
        split = SPLIT_ALIASES.get(split, split)
        if split not in SPLIT_DIRS:
            raise DataError(f"PathVQA has splits {list(SPLIT_DIRS)}, not {split!r}")
    splits = [split] if split else [s for s, d in SPLIT_DIRS.items() if (root / "qas" / d).is_dir()]
    out = []
    for s in splits:
        sdir = SPLIT_DIRS[s]
        path = _qa_file(root, sdir)
        rows = safe_pickle_load(path)
        if not isinstance(rows, list):
            raise DataError(f"{path}: expected a pickled list of QA dicts, got {type(rows).__name__}")
        for i, r in enumerate(rows):
            if not isinstance(r, dict):
                raise DataError(f"{path}: record #{i} is not a dict")
            image = r.get("image", r.get("img_id"))
            question = r.get("question", r.get("sent"))
            answer = r.get("answer")
            if answer is None and isinstance(r.get("label"), dict) and r["label"]:
                answer = max(r["label"].items(), key=lambda kv: kv[1])[0]
            if image is None or question is None:
                raise DataError(f"{path}: record #{i} lacks 'image' or 'question': {r}")
            answer = normalize_answer_text(answer)
            extras = {"lang": "en", "image_name": str(image)}
            if r.get("question_id") is not None:
                extras["qid"] = r["question_id"]
            out.append(VQARecord(
                id=f"pathvqa-{s}-{r.get('question_id', i)}",
                images=[str(_image_path(root, sdir, str(image)))],
                question=str(question).strip(),
                answer=answer,
                answer_type=normalize_answer_type(r.get("answer_type")) or ("CLOSED" if not is_open_ended_answer(answer) else "OPEN"),
                open_ended=is_open_ended_answer(answer),
                modality="Pathology",
                modality_tag=modality_to_tag("Pathology"),
                split=s,
                source="pathvqa",
                extras=extras,
            ))
    return out
