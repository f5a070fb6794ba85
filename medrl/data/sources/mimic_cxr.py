"""MIMIC-CXR: MIMIC-Ext-MIMIC-CXR-VQA (MRPO) and report generation / summarisation (MediX-R1).
"""

from __future__ import annotations

import re
from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import SPLIT_ALIASES, find_root, need, read_rows, source_root, vqa_record


#: Where the MIMIC-CXR-JPG ``files/`` folder is looked for, relative to the MIMIC-CXR-VQA folder
#: (unpacked into it) and to the data folder beside it (a separate PhysioNet download).
MIMIC_CXR_JPG_FILES = ("files", "mimic-cxr-jpg/2.0.0/files", "mimic-cxr-jpg/files")
_JPG_BESIDE = ("mimic-cxr-jpg/2.0.0/files", "mimic-cxr-jpg/files", "physionet.org/files/mimic-cxr-jpg/2.0.0/files",
               "MIMIC-CXR-JPG/files", "mimic-cxr/files", "MIMIC-CXR/files", "mimic_cxr/files")


def mimic_jpg_files(root: Path, images: str | None = None) -> Path:
    """The MIMIC-CXR-JPG ``files/`` folder for a dataset folder ``root``: ``images`` when given,
    else the first of :data:`MIMIC_CXR_JPG_FILES` under ``root`` or of the usual download
    folders beside it; :class:`DataError` naming every folder looked for."""
    if images:
        return Path(images).resolve()
    tried = [root / c for c in MIMIC_CXR_JPG_FILES] + [root.parent / c for c in _JPG_BESIDE]
    for c in tried:
        if c.is_dir():
            return c
    raise DataError("MIMIC-CXR-JPG images not found: looked for the files/ folder in "
                    f"{[str(c) for c in tried]} (download MIMIC-CXR-JPG from "
                    "https://physionet.org/content/mimic-cxr-jpg/, credentialed, or pass images=<its files folder>)")


def load_mimic_cxr_vqa(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                       mrpo_subset: bool = True, images: str | None = None) -> list[VQARecord]:
    """MIMIC-Ext-MIMIC-CXR-VQA (Bae et al. 2024; PhysioNet, credentialed). The PhysioNet download
    holds ``mimiccxrvqa/dataset/{train,valid,test}.json`` (also under its version folder
    ``1.0.0/``; an unpacked ``dataset/`` is read too): lists of ``{idx, image_id, image_path,
    question, semantic_type, content_type, template, answer: [..]}``. It ships no images:
    ``image_path`` is relative to the ``files/`` folder of MIMIC-CXR-JPG, a separate download
    looked for inside this folder or beside it (:func:`mimic_jpg_files`; ``images=`` names it).
    ``mrpo_subset``: MRPO App. C.1's filter - ``semantic_type == "query"`` questions with
    exactly one answer (1,724 of the test set); off, every question (answers joined with ", ")."""
    from medrl.data.registry import MIMIC_CXR_VQA_DATASET_DIRS

    root = source_root("mimic_cxr_vqa", data_dir, path)
    dataset = next((root / d for d in MIMIC_CXR_VQA_DATASET_DIRS if (root / d).is_dir()), None)
    if dataset is None:
        raise DataError(f"MIMIC-CXR-VQA: none of {[str(root / d) for d in MIMIC_CXR_VQA_DATASET_DIRS]} found")
    files = {"train": "train.json", "validation": "valid.json", "test": "test.json"}
    want = SPLIT_ALIASES.get(split or "", split)
    jpg: Path | None = None
    out: list[VQARecord] = []
    for s, name in files.items():
        f = dataset / name
        if want not in (None, s):
            continue
        if not f.is_file():
            if want is not None:
                raise DataError(f"MIMIC-CXR-VQA: {f} not found")
            continue
        for i, row in enumerate(read_rows(f)):
            where = f"{f} item #{i}"
            need(row, ("question", "image_path", "semantic_type"), where)
            ans = row.get("answer")
            ans = list(ans) if isinstance(ans, list) else ([] if ans in (None, "") else [ans])
            if mrpo_subset and (row["semantic_type"] != "query" or len(ans) != 1):
                continue
            if not ans:
                continue  # a "query" with an empty answer set ("none of them") has no text answer
            jpg = jpg or mimic_jpg_files(root, images)
            rel = str(row["image_path"]).removeprefix("files/")
            rid = f"mimiccxrvqa-{s}-{row.get('idx', i)}"
            out.append(vqa_record(rid=rid, image=str(jpg / rel), question=row["question"],
                                  answer=", ".join(str(a) for a in ans), split=s, source="mimic_cxr_vqa", where=where,
                                  modality="X-Ray", organ="Chest",
                                  closed=row["semantic_type"] == "verify",
                                  extras={"semantic_type": row["semantic_type"], "content_type": row.get("content_type"),
                                          "template": row.get("template")}))
    if not out and want is not None and not (dataset / files[want]).is_file():
        raise DataError(f"MIMIC-CXR-VQA: no {split!r} file under {dataset}")
    return out


_REPORT_PROMPT = "Generate a detailed report based on the scan."


_SUMMARY_PROMPT = "Write a short summary of the following report.\n\nReport:\n{report}"


def load_mimic_cxr_report(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                          task: str = "generation") -> list[VQARecord]:
    """MIMIC-CXR report generation and summarisation (Johnson et al. 2019; MediX-R1 Table 2
    "MIMIC-CXR-Gen" and "MIMIC-CXR-Sum", scored with the 0-5 rubric). Layout: the official
    ``<root>/mimic-cxr-2.0.0-split.csv`` (or ``.csv.gz`` as MIMIC-CXR-JPG ships it; ``dicom_id, study_id, subject_id, split``), the
    report texts ``<root>/files/p<NN>/p<subject_id>/s<study_id>.txt`` and the MIMIC-CXR-JPG
    images ``<root>/files/p<NN>/p<subject_id>/s<study_id>/<dicom_id>.jpg``. ``task="generation"``:
    image -> FINDINGS (+ IMPRESSION) section; ``task="summary"``: text-only, the findings ->
    the IMPRESSION. One record per study (its first image); ``extras.task = "report"``.
    These are every study of the split, not MediX-R1's fixed subset: its items are the sources
    ``medix_mimic_cxr_report`` / ``medix_mimic_cxr_summary`` (:mod:`medrl.data.sources.medix`),
    which ``--suite medix`` prefers."""
    import csv

    root = Path(path).resolve() if path else find_root("mimic_cxr_report", data_dir)
    if task not in ("generation", "summary"):
        raise DataError(f"MIMIC-CXR report task must be 'generation' or 'summary', not {task!r}")
    split_csv = next((root / n for n in ("mimic-cxr-2.0.0-split.csv", "mimic-cxr-2.0.0-split.csv.gz")
                      if (root / n).is_file()), None)
    if split_csv is None:
        raise DataError(f"MIMIC-CXR: neither {root / 'mimic-cxr-2.0.0-split.csv'} nor its .gz (as PhysioNet ships it) found")
    want = {"validation": "validate"}.get(SPLIT_ALIASES.get(split or "", split), split)
    studies: dict[tuple[str, str], str] = {}
    import gzip

    opener = gzip.open if split_csv.suffix == ".gz" else open
    with opener(split_csv, "rt", newline="", encoding="utf-8") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            for k in ("dicom_id", "study_id", "subject_id", "split"):
                if not row.get(k):
                    raise DataError(f"{split_csv} line {i + 2}: field {k!r} missing")
            if want in (None, row["split"]):
                studies.setdefault((row["subject_id"], row["study_id"]), row["dicom_id"])
    out: list[VQARecord] = []
    for (subj, study), dicom in studies.items():
        folder = root / "files" / f"p{subj[:2]}" / f"p{subj}"
        report_file = folder / f"s{study}.txt"
        if not report_file.is_file():
            raise DataError(f"MIMIC-CXR: report {report_file} missing for study {study}")
        sections = _report_sections(report_file.read_text(encoding="utf-8"))
        findings, impression = sections.get("FINDINGS", ""), sections.get("IMPRESSION", "")
        if task == "generation":
            ref = "\n".join(x for x in (findings and f"FINDINGS: {findings}", impression and f"IMPRESSION: {impression}") if x)
            if not ref:
                continue
            rec = VQARecord(id=f"mimiccxr-gen-{study}", images=[str(folder / f"s{study}" / f"{dicom}.jpg")],
                            question=_REPORT_PROMPT, answer=ref, open_ended=True, answer_type="OPEN",
                            modality="X-Ray", modality_tag="X_RAY", organ="Chest", split=split, source="mimic_cxr_report",
                            extras={"lang": "en", "task": "report", "study_id": study})
        else:
            if not (findings and impression):
                continue
            rec = VQARecord(id=f"mimiccxr-sum-{study}", images=[], question=_SUMMARY_PROMPT.format(report=findings),
                            answer=impression, open_ended=True, answer_type="OPEN", split=split,
                            source="mimic_cxr_summary", extras={"lang": "en", "task": "report", "study_id": study})
        out.append(rec)
    if not out:
        raise DataError(f"MIMIC-CXR: no {split!r} study with a report under {root}")
    return out


_SECTION = re.compile(r"^\s*([A-Z][A-Z /]+):", re.MULTILINE)


def _report_sections(text: str) -> dict[str, str]:
    """``{"FINDINGS": ..., "IMPRESSION": ...}`` of a free-text MIMIC-CXR report (upper-case
    section headers followed by a colon; whitespace collapsed)."""
    marks = list(_SECTION.finditer(text))
    out = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        body = text[m.end(): nxt.start() if nxt else len(text)]
        out[m.group(1).strip()] = " ".join(body.split())
    return out
