"""VQA-Med (ImageCLEF): the 2019 release (ARMed's out-of-domain set) and the 2021 test set (MRPO's).

Both are pipe-separated text files of ``image_id|...`` with a folder of ``<image_id>.jpg`` images.
"""

from __future__ import annotations

import json
from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import SPLIT_ALIASES, find_root, image_in, pipe_lines, source_root, vqa_record


_VQAMED19 = {  # split -> (folder, QA file, image folder); the ImageCLEF 2019 release
    "train": ("ImageClef-2019-VQA-Med-Training", "All_QA_Pairs_train.txt", "Train_images"),
    "validation": ("ImageClef-2019-VQA-Med-Validation", "All_QA_Pairs_val.txt", "Val_images"),
    "test": ("VQAMed2019Test", "VQAMed2019_Test_Questions_w_Ref_Answers.txt", "VQAMed2019_Test_Images"),
}


def load_vqa_med_2019(data_dir: Path, split: str | None = "validation", *, path: str | None = None) -> list[VQARecord]:
    """VQA-Med 2019 (ImageCLEF 2019; ARMed's out-of-domain "VQA-Med", its 2,000-item validation
    set: 1,798 open, 202 yes/no). ``<root>/ImageClef-2019-VQA-Med-{Training,Validation}/
    All_QA_Pairs_{train,val}.txt`` (``image_id|question|answer``) with ``{Train,Val}_images/``,
    and ``VQAMed2019Test/VQAMed2019_Test_Questions_w_Ref_Answers.txt``
    (``image_id|category|question|answer``) with ``VQAMed2019_Test_Images/``."""
    root = Path(path).resolve() if path else find_root("vqa_med_2019", data_dir)
    want = SPLIT_ALIASES.get(split or "", split)
    out: list[VQARecord] = []
    for s, (folder, qa, imgs) in _VQAMED19.items():
        if want not in (None, s):
            continue
        f = root / folder / qa
        if not f.is_file():
            if want is not None:
                raise DataError(f"VQA-Med 2019: {f} not found (split {s!r})")
            continue
        for ln, fields in pipe_lines(f):
            where = f"{f} line {ln}"
            if len(fields) == 4:
                img, category, q, a = fields
            elif len(fields) == 3:
                (img, q, a), category = fields, None
            else:
                raise DataError(f"{where}: expected image_id|question|answer (or 4 fields with the category), "
                                f"got {len(fields)} fields")
            out.append(vqa_record(rid=f"vqamed19-{s}-{ln}", image=image_in(root / folder / imgs, img), question=q,
                                   answer=a, split=s, source="vqa_med_2019", where=where, modality="Radiology",
                                   closed=a.strip().lower() in ("yes", "no"),
                                   extras={"image_id": img, "category": category}))
    if not out:
        raise DataError(f"VQA-Med 2019: no {split!r} QA file under {root}")
    return out


def _find_file(root: Path, names: tuple[str, ...]) -> Path | None:
    """The first of ``names`` at ``root`` or anywhere below it (the test set zip and the
    organisers' repository nest them differently)."""
    for n in names:
        if (root / n).is_file():
            return root / n
    for n in names:
        hit = next(iter(sorted(root.rglob(n))), None)
        if hit is not None and hit.is_file():
            return hit
    return None


def _image_folder(root: Path) -> Path:
    """The folder of the 500 test images: ``VQA-500-Images`` at ``root`` or below it (the test
    set zip unpacks it beside the question files or inside ``images/``)."""
    for cand in (root / "VQA-500-Images", root / "images" / "VQA-500-Images"):
        if cand.is_dir():
            return cand
    hit = next(iter(sorted(p for p in root.rglob("VQA-500-Images") if p.is_dir())), None)
    return hit if hit is not None else root / "VQA-500-Images"  # validation names the missing images


def _questions(qf: Path) -> list[tuple[str, str, str]]:
    """``[(where, image_id, question)]`` from the pipe-separated file or the evaluator's JSON."""
    if qf.suffix == ".json":
        data = json.loads(qf.read_text(encoding="utf-8"))
        rows = data.get("questions") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise DataError(f"{qf}: expected an object with a 'questions' list")
        out = []
        for i, r in enumerate(rows):
            if not isinstance(r, dict) or not r.get("question_id") or not r.get("question"):
                raise DataError(f"{qf} question #{i}: expected 'question_id' and 'question'")
            out.append((f"{qf} question #{i}", str(r["question_id"]), str(r["question"])))
        return out
    out = []
    for ln, fields in pipe_lines(qf):
        if len(fields) < 2:
            raise DataError(f"{qf} line {ln}: expected image_id|question")
        out.append((f"{qf} line {ln}", fields[0], fields[-1]))
    return out


def load_vqa_med_2021(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                      single_answer: bool = True) -> list[VQARecord]:
    """VQA-Med 2021 test set (ImageCLEF 2021, 500 abnormality questions on 500 images; MRPO's
    "VQA-Med"). Files, at the folder's top or anywhere below it:

    - questions: ``Task1-VQA-2021-TestSet-Questions.txt`` (``image_id|question``), or the
      evaluator's ``Task1-VQAnswering2021-Test-ReferenceQuestions_mscoco_format_vqa.json``
      (``{"questions": [{"question_id": image_id, "question"}]}``, in
      ``EvaluationCode/data/resources/`` of github.com/abachaa/VQA-Med-2021);
    - answers: ``Task1-VQA-2021-TestSet-ReferenceAnswers.txt`` or the evaluator's
      ``Task1-VQAnswering2021-Test-ReferenceAnswers-4Evaluator.txt``
      (``image_id|answer[|alternative...]``, alternatives also ``#``-separated);
    - images: ``VQA-500-Images/<image_id>.jpg`` (beside the files, inside ``images/`` or deeper).

    ``single_answer`` keeps the questions with one reference answer, as MRPO App. C.1 does
    (425 of 500). The evaluator files are verified against the organisers' repository; the
    test-set zip's own file names are as the task overview describes them (docs/data.md)."""
    from medrl.data.registry import VQA_MED_2021_ANSWER_FILES, VQA_MED_2021_QUESTION_FILES

    root = source_root("vqa_med_2021", data_dir, path)
    if split not in (None, "test"):
        raise DataError(f"VQA-Med 2021 has one split here, 'test', not {split!r}")
    qf = _find_file(root, VQA_MED_2021_QUESTION_FILES)
    af = _find_file(root, VQA_MED_2021_ANSWER_FILES)
    if qf is None or af is None:
        missing = VQA_MED_2021_QUESTION_FILES if qf is None else VQA_MED_2021_ANSWER_FILES
        raise DataError(f"VQA-Med 2021: none of {list(missing)} found under {root}")
    answers: dict[str, list[str]] = {}
    for ln, fields in pipe_lines(af):
        if len(fields) < 2 or not fields[1]:
            raise DataError(f"{af} line {ln}: expected image_id|answer[|alternative ...]")
        answers[fields[0]] = [a for f in fields[1:] for a in f.split("#") if a.strip()]
    images = _image_folder(root)
    out: list[VQARecord] = []
    for where, img, q in _questions(qf):
        if img not in answers:
            raise DataError(f"{where}: image {img!r} has no reference answer in {af.name}")
        refs = answers[img]
        if single_answer and len(refs) != 1:
            continue
        out.append(vqa_record(rid=f"vqamed21-{img}", image=image_in(images, img), question=q,
                              answer=refs[0], split="test", source="vqa_med_2021", where=where,
                              modality="Radiology", extras={"image_id": img, "alternatives": refs[1:]}))
    return out
