"""Loaders for the benchmarks people compare on, and the benchmark suites of ``medrl eval --suite``.

Each loader reads a local copy in the layout its publisher ships (see docs/evaluation.md for
where to get each one and which split the papers report) and returns :class:`VQARecord`s.
Multiple-choice items follow the PMC-VQA convention of :mod:`medrl.data.pmc_vqa`: the options
are appended to the question as ``A: ...`` lines, ``answer`` is the correct option's text,
``answer_type`` is ``CLOSED``, ``open_ended`` is False and ``extras`` holds ``choices``,
``answer_label`` and ``choices_in_prompt=True`` (the eval scores them by exact option match).

- ``vqa_rad_hf`` / ``pathvqa_hf``: the Hugging Face copies most harnesses use
  (``flaviagiammarino/vqa-rad``: train 1,793 / test 451; ``flaviagiammarino/path-vqa``: train
  19,654 / validation 6,259 / test 6,719): columns ``image``, ``question``, ``answer``, no
  OPEN/CLOSED label (closed = a yes/no answer). A ``save_to_disk`` folder, a downloaded folder of
  parquet files (``data/test-00000-of-00001.parquet``) or a hub id (``hf:<id>``, needs network
  or the HF cache).
- ``slake_hf``: ``BoKelvin/SLAKE`` (the official flat JSON layout with ``validation.json`` and
  ``imgs/`` unzipped from ``imgs.zip``); English only by default, like ``slake``.
- ``omnimedvqa``: OmniMedVQA (Hu et al., CVPR 2024): ``QA_information/{Open-access,
  Restricted-access}/<dataset>.json`` and ``Images/...``; every item is multiple choice
  (``option_A``..``option_D``, ``gt_answer``); one split ("test").
- ``mmmu_med``: MMMU (Yue et al., CVPR 2024) Health & Medicine subjects (Basic Medical Science,
  Clinical Medicine, Diagnostics and Laboratory Medicine, Pharmacy, Public Health) from the
  ``MMMU/MMMU`` parquet files ``<Subject>/<split>-*.parquet``; papers report "validation" (test
  answers are hidden).
- ``medxpertqa_mm``: MedXpertQA MM (Zuo et al., 2025): ``MM/{dev,test}.jsonl`` and ``images/``.
- ``medqa``, ``medmcqa``, ``pubmedqa``: text-only multiple choice (MediX-R1 Table 2's
  language benchmarks): MedQA USMLE 4-option JSONL; MedMCQA JSON lines (``cop`` 1-4) or the HF
  parquet (``cop`` 0-3); PubMedQA PQA-L ``ori_pqal.json`` (+ ``test_ground_truth.json`` for the
  500-item test split) or the HF parquet. Records carry no image.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text
from medrl.modality import modality_to_tag

#: Benchmarks without images (validation must not ask for one).
TEXT_ONLY = ("medqa", "medmcqa", "pubmedqa")

#: MediX-R1 Table 2's MMLU columns: Clinical, Bio, Med, Genetics, ProfMed, Anat.
MMLU_MED_SUBJECTS = ("clinical_knowledge", "college_biology", "college_medicine", "medical_genetics",
                     "professional_medicine", "anatomy")


MMMU_MED_SUBJECTS = ("Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine",
                     "Pharmacy", "Public_Health")

#: ``medrl eval --suite NAME``: (source spec, where to get it). HuatuoGPT-Vision (Chen et al.
#: 2024) Table 3 reports VQA-RAD, SLAKE, PathVQA, PMC-VQA, OmniMedVQA and MMMU Health & Medicine.
SUITES: dict[str, tuple[tuple[str, str], ...]] = {
    "huatuo": (
        ("vqa_rad:test", "https://osf.io/89kps/ (or hf flaviagiammarino/vqa-rad)"),
        ("slake:test", "https://www.med-vqa.com/slake/ (or hf BoKelvin/SLAKE)"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA (or hf flaviagiammarino/path-vqa)"),
        ("pmc_vqa_mc:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("omnimedvqa:test", "https://huggingface.co/datasets/foreverbeliever/OmniMedVQA"),
        ("mmmu_med:validation", "https://huggingface.co/datasets/MMMU/MMMU"),
    ),
}

SUITES.update({
    # MRPO (arXiv 2606.31825) Sec. 5.1, App. C.1, Table 2: 3 in-distribution + 5 out-of-distribution
    # sets, open-ended questions (--protocol mrpo keeps only those)
    "mrpo": (
        ("vqa_rad:test", "https://osf.io/89kps/"),
        ("slake:test", "https://www.med-vqa.com/slake/"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA"),
        ("pmc_vqa:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("vqa_med_2021:test", "https://github.com/abachaa/VQA-Med-2021"),
        ("quilt_vqa:test", "https://huggingface.co/datasets/wisdomik/Quilt_VQA"),
        ("radimagenet_vqa:test", "https://huggingface.co/datasets/raidium/RadImageNet-VQA"),
        ("mimic_cxr_vqa:test", "https://physionet.org/content/mimic-ext-mimic-cxr-vqa/ (credentialed)"),
    ),
    # ARMed (arXiv 2508.12957) Table 1: in-domain VQA-RAD, SLAKE, PathVQA; out-of-domain VQA-Med
    # (2019 validation), PMC-VQA (multiple choice), MedXpertQA MM
    "armed": (
        ("vqa_rad:test", "https://osf.io/89kps/"),
        ("slake:test", "https://www.med-vqa.com/slake/"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA"),
        ("vqa_med_2019:validation", "https://github.com/abachaa/VQA-Med-2019"),
        ("pmc_vqa_mc:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("medxpertqa_mm:test", "https://huggingface.co/datasets/TsinghuaC3I/MedXpertQA"),
    ),
    # CAPO (arXiv 2506.12849) Tables 1-4: VQA-RAD, SLAKE, PathVQA, PMC-VQA; out of distribution
    # OmniMedVQA (open access) and MMMU Health & Medicine
    "capo": (
        ("vqa_rad:test", "https://osf.io/89kps/"),
        ("slake:test", "https://www.med-vqa.com/slake/"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA"),
        ("pmc_vqa_mc:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("omnimedvqa:test", "https://huggingface.co/datasets/foreverbeliever/OmniMedVQA"),
        ("mmmu_med:validation", "https://huggingface.co/datasets/MMMU/MMMU"),
    ),
    # MediX-R1 (arXiv 2602.23363) Table 2: 11 text-only + 6 image+text benchmarks
    "medix": (
        *((f"mmlu_{s}:test", "https://huggingface.co/datasets/cais/mmlu") for s in MMLU_MED_SUBJECTS),
        ("medmcqa:validation", "https://github.com/medmcqa/medmcqa"),
        ("medqa:test", "https://github.com/jind11/MedQA"),
        ("usmle_sa:test", "https://huggingface.co/datasets/medalpaca/medical_meadow_usmle_self_assessment"),
        ("pubmedqa:test", "https://github.com/pubmedqa/pubmedqa"),
        ("mimic_cxr_summary:test", "https://physionet.org/content/mimic-cxr/ (credentialed)"),
        ("slake:test", "https://www.med-vqa.com/slake/"),
        ("vqa_rad:test", "https://osf.io/89kps/"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA"),
        ("pmc_vqa_mc:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("pmc_vqa_hard:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("mimic_cxr_report:test", "https://physionet.org/content/mimic-cxr-jpg/ (credentialed)"),
    ),
})

#: Sources a suite evaluates as out-of-distribution (``--ood``); the others go to ``--data``.
SUITE_OOD: dict[str, frozenset[str]] = {
    "mrpo": frozenset({"pmc_vqa", "vqa_med_2021", "quilt_vqa", "radimagenet_vqa", "mimic_cxr_vqa"}),
    "armed": frozenset({"vqa_med_2019", "pmc_vqa_mc", "medxpertqa_mm"}),
    "capo": frozenset({"omnimedvqa", "mmmu_med"}),
}

# alternatives: the spec's source may be present as its Hugging Face copy instead
_SUITE_FALLBACK = {"vqa_rad": "vqa_rad_hf", "slake": "slake_hf", "pathvqa": "pathvqa_hf"}


# --------------------------------------------------------------------------- helpers
def _find(data_dir: Path, names: Sequence[str], what: str, url: str, check=lambda p: p.is_dir()) -> Path:
    for n in names:
        c = Path(data_dir) / n
        if check(c):
            return c.resolve()
    raise DataError(f"{what} not found under {data_dir}: expected one of {[str(Path(data_dir) / n) for n in names]}. "
                    f"Get it from {url} - see docs/evaluation.md.")


def _read_any(path: Path) -> list[dict]:
    """Rows of a .json (a list, or a dict of id -> row), .jsonl or .parquet file."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        if suffix == ".jsonl":
            from medrl.jsonl import read_jsonl

            return read_jsonl(path)
        text = path.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if "Extra data" not in str(exc):
                raise
            from medrl.jsonl import read_jsonl  # a .json file holding JSON lines (MedMCQA's release)

            return read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    if isinstance(data, dict):
        return [{"_key": k, **v} if isinstance(v, dict) else {"_key": k, "value": v} for k, v in data.items()]
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list or object")
    return data


def _need(row: dict, fields: Iterable[str], where: str) -> None:
    for f in fields:
        if row.get(f) in (None, ""):
            raise DataError(f"{where}: field {f!r} missing or empty")


def mcq_record(*, rid: str, question: str, options: Sequence[str], answer_index: int, images: Sequence[str],
               split: str | None, source: str, modality: str | None = None, organ: str | None = None,
               extras: dict | None = None, where: str = "", options_in_question: bool = False) -> VQARecord:
    """A multiple-choice record in the project's convention (see the module docstring)."""
    options = [normalize_answer_text(o) for o in options]
    if not 0 <= answer_index < len(options):
        raise DataError(f"{where}: record {rid!r}: answer index {answer_index} outside {len(options)} options")
    q = str(question).strip()
    if not options_in_question:
        q += "\n" + "\n".join(f"{chr(65 + k)}: {c}" for k, c in enumerate(options))
    return VQARecord(
        id=rid, images=list(images), question=q, answer=options[answer_index], answer_type="CLOSED",
        open_ended=False, modality=modality, modality_tag=modality_to_tag(modality) if modality else None,
        organ=organ, split=split, source=source,
        extras={"lang": "en", "choices": options, "answer_label": chr(65 + answer_index), "choices_in_prompt": True,
                **(extras or {})},
    )


def _letter_index(label: Any, n: int, where: str) -> int:
    s = str(label or "").strip().upper().strip("().")
    if len(s) == 1 and "A" <= s <= "Z" and ord(s) - 65 < n:
        return ord(s) - 65
    raise DataError(f"{where}: answer label {label!r} is not one of the {n} option letters")


def _split_of(name: str) -> str | None:
    n = name.lower()
    for key, split in (("train", "train"), ("validation", "validation"), ("valid", "validation"), ("val", "validation"),
                       ("dev", "dev"), ("test", "test")):
        if n.startswith(key):
            return split
    return None


_SPLIT_ALIASES = {"validate": "validation", "val": "validation", "valid": "validation"}


def _want(split: str | None, candidate: str | None, dev_is_validation: bool = False) -> bool:
    """Does file split ``candidate`` match the requested ``split``? ``dev_is_validation``: the
    benchmark's "dev" file is its validation split (MedQA, MedMCQA), not a few-shot set (MMMU)."""
    if split is None:
        return True
    a = {**_SPLIT_ALIASES, **({"dev": "validation"} if dev_is_validation else {})}
    return a.get(split, split) == a.get(candidate or "", candidate)


def _has_any(*names: str):
    return lambda p: p.is_dir() and any((p / n).exists() for n in names)


#: Where each benchmark is looked for under the data folder: (folder names, name, url, check).
_LOCATIONS: dict[str, tuple[tuple[str, ...], str, str, Any]] = {
    "vqa_rad_hf": (("vqa_rad_hf", "vqa-rad", "flaviagiammarino-vqa-rad"), "VQA-RAD (Hugging Face copy)",
                   "https://huggingface.co/datasets/flaviagiammarino/vqa-rad", lambda p: p.is_dir()),
    "pathvqa_hf": (("pathvqa_hf", "path-vqa", "flaviagiammarino-path-vqa"), "PathVQA (Hugging Face copy)",
                   "https://huggingface.co/datasets/flaviagiammarino/path-vqa", lambda p: p.is_dir()),
    "slake_hf": (("slake_hf", "BoKelvin-SLAKE", "SLAKE", "slake", "Slake"), "SLAKE (Hugging Face copy)",
                 "https://huggingface.co/datasets/BoKelvin/SLAKE",
                 lambda p: (p / "imgs").is_dir() and any((p / f).is_file() for f in ("validation.json", "test.json"))),
    "omnimedvqa": (("OmniMedVQA", "omnimedvqa"), "OmniMedVQA",
                   "https://huggingface.co/datasets/foreverbeliever/OmniMedVQA", _has_any("QA_information")),
    "mmmu_med": (("MMMU", "mmmu", "mmmu_med"), "MMMU", "https://huggingface.co/datasets/MMMU/MMMU",
                 _has_any(*MMMU_MED_SUBJECTS)),
    "medxpertqa_mm": (("MedXpertQA", "medxpertqa"), "MedXpertQA",
                      "https://huggingface.co/datasets/TsinghuaC3I/MedXpertQA", _has_any("MM")),
    "medqa": (("MedQA", "medqa"), "MedQA", "https://github.com/jind11/MedQA", lambda p: p.is_dir()),
    "medmcqa": (("medmcqa", "MedMCQA"), "MedMCQA", "https://github.com/medmcqa/medmcqa", lambda p: p.is_dir()),
    "pubmedqa": (("pubmedqa", "PubMedQA"), "PubMedQA", "https://github.com/pubmedqa/pubmedqa", lambda p: p.is_dir()),
}


def find_root(name: str, data_dir: str | Path) -> Path:
    """The folder of benchmark ``name`` under ``data_dir``; :class:`DataError` (naming the
    folders tried and where to get it) when absent."""
    names, what, url, check = _LOCATIONS[name]
    return _find(Path(data_dir), names, what, url, check)


# --------------------------------------------------------------------------- HF copies
def load_vqa_rad_hf(data_dir: Path, split: str | None = None, *, path: str | None = None) -> list[VQARecord]:
    """``flaviagiammarino/vqa-rad`` from ``<data_dir>/vqa-rad`` (or ``vqa_rad_hf``), or ``path``."""
    from medrl.data.hf import load_hf_records

    root = Path(path).resolve() if path else find_root("vqa_rad_hf", data_dir)
    return load_hf_records(root, split, source="vqa_rad_hf")


def load_pathvqa_hf(data_dir: Path, split: str | None = None, *, path: str | None = None) -> list[VQARecord]:
    """``flaviagiammarino/path-vqa`` from ``<data_dir>/path-vqa`` (or ``pathvqa_hf``), or ``path``."""
    from medrl.data.hf import load_hf_records

    root = Path(path).resolve() if path else find_root("pathvqa_hf", data_dir)
    return load_hf_records(root, split, source="pathvqa_hf", defaults={"modality": "Pathology"})


def load_slake_hf(data_dir: Path, split: str | None = None, *, lang: str | None = "en",
                  path: str | None = None) -> list[VQARecord]:
    """``BoKelvin/SLAKE``: ``train.json`` / ``validation.json`` / ``test.json`` (official flat
    records) and ``imgs/`` (unzipped ``imgs.zip``), under ``<data_dir>/slake_hf`` (or ``SLAKE``)."""
    from medrl.data import slake

    root = Path(path).resolve() if path else find_root("slake_hf", data_dir)
    files = {"train": "train.json", "validate": "validation.json", "test": "test.json"}
    if split is not None:
        split = slake.SPLIT_ALIASES.get(split, split)
        if split not in files:
            raise DataError(f"SLAKE has splits {list(files)}, not {split!r}")
    out: list[VQARecord] = []
    for s, f in files.items():
        if split not in (None, s):
            continue
        p = root / f
        if not p.is_file() and s == "validate":
            p = root / "validate.json"  # snapshots before the rename to validation.json
        if not p.is_file():
            if split is not None:
                raise DataError(f"SLAKE split file missing: {root / f}")
            continue
        entries = _read_any(p)
        out += [r for r in slake._flat(root, entries, s, p, {}, lang) if r.answer]
    for r in out:
        r.source = "slake_hf"
    return out


# --------------------------------------------------------------------------- OmniMedVQA
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
            for i, row in enumerate(_read_any(f)):
                where = f"{f} item #{i}"
                _need(row, ("question", "gt_answer", "image_path"), where)
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


# --------------------------------------------------------------------------- MMMU (Health & Medicine)
def _image_file(root: Path, item: Any, name: str) -> str | None:
    if not item:
        return None
    if isinstance(item, str):
        return str(root / item)
    from medrl.data.hf import _image_file as hf_image_file

    return hf_image_file(root, item, name)


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
        files = sorted(f for f in (root / subject).glob("*.parquet") if _want(split, _split_of(f.name)))
        for f in files:
            s = _split_of(f.name)
            for i, row in enumerate(_read_any(f)):
                where = f"{f} row {i}"
                _need(row, ("question", "answer"), where)
                rid = f"mmmu-{row.get('id') or f'{subject}-{s}-{i}'}"
                imgs = [p for k in range(1, 8) if (p := _image_file(root, row.get(f"image_{k}"), f"{rid}-{k}"))]
                extras = {"subject": subject, "subfield": row.get("subfield"), "img_type": row.get("img_type")}
                opts = row.get("options")
                if isinstance(opts, str):
                    try:
                        opts = ast.literal_eval(opts)
                    except (ValueError, SyntaxError):
                        raise DataError(f"{where}: options {opts[:60]!r} is not a list literal") from None
                if opts and str(row.get("question_type", "multiple-choice")) == "multiple-choice":
                    out.append(mcq_record(rid=rid, question=row["question"], options=list(opts),
                                          answer_index=_letter_index(row["answer"], len(opts), where),
                                          images=imgs, split=s, source="mmmu_med", where=where, extras=extras))
                else:
                    ans = normalize_answer_text(row["answer"])
                    out.append(VQARecord(id=rid, images=imgs, question=str(row["question"]).strip(), answer=ans,
                                         open_ended=is_open_ended_answer(ans), split=s, source="mmmu_med",
                                         extras={"lang": "en", **extras}))
    if not out:
        raise DataError(f"MMMU: no {split!r} parquet files for {list(subjects)} under {root}")
    return out


# --------------------------------------------------------------------------- MedXpertQA MM
_CHOICES_TAIL = re.compile(r"\n?\s*Answer Choices:.*$", re.DOTALL)


def load_medxpertqa_mm(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """MedXpertQA MM: ``<root>/MM/{dev,test}.jsonl`` (``id``, ``question`` with its "Answer
    Choices" text, ``options`` {letter: text}, ``label``, ``images`` file names) and
    ``<root>/images/``."""
    root = Path(path).resolve() if path else find_root("medxpertqa_mm", data_dir)
    out: list[VQARecord] = []
    for s in ("dev", "test"):
        f = root / "MM" / f"{s}.jsonl"
        if not _want(split, s) or not f.is_file():
            continue
        for i, row in enumerate(_read_any(f)):
            where = f"{f} line {i + 1}"
            _need(row, ("question", "options", "label"), where)
            letters = sorted(row["options"])
            options = [row["options"][k] for k in letters]
            out.append(mcq_record(
                rid=f"medxpertqa-{row.get('id') or f'{s}-{i}'}", question=_CHOICES_TAIL.sub("", str(row["question"])),
                options=options, answer_index=_letter_index(row["label"], len(options), where),
                images=[str(root / "images" / im) for im in row.get("images") or []], split=s,
                source="medxpertqa_mm", organ=row.get("body_system"), where=where,
                extras={"medical_task": row.get("medical_task"), "question_type": row.get("question_type")},
            ))
    if not out:
        raise DataError(f"MedXpertQA MM: no {split!r} file in {root / 'MM'} (dev.jsonl, test.jsonl)")
    return out


# --------------------------------------------------------------------------- text-only MCQ
def _split_files(root: Path, split: str | None, patterns: Sequence[str]) -> list[tuple[str, Path]]:
    """``[(split, file)]`` for the first pattern that matches any file of ``split`` (dev = validation)."""
    found = []
    for pat in patterns:
        for f in sorted(root.glob(pat)):
            s = _split_of(f.name.split("phrases_no_exclude_")[-1])
            if s and _want(split, s, dev_is_validation=True) and (s, f) not in found:
                found.append((s, f))
        if found:
            break
    return found


def load_medqa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """MedQA (USMLE, 4 options): JSON lines with ``question``, ``options`` {A..D: text},
    ``answer_idx`` (letter) and ``answer``; ``<root>/{train,dev,test}.jsonl`` or the original
    ``data_clean/questions/US/4_options/phrases_no_exclude_<split>.jsonl``."""
    root = Path(path).resolve() if path else find_root("medqa", data_dir)
    files = _split_files(root, split, ("*.jsonl", "data_clean/questions/US/4_options/*.jsonl", "**/*.jsonl"))
    out: list[VQARecord] = []
    for s, f in files:
        for i, row in enumerate(_read_any(f)):
            where = f"{f} line {i + 1}"
            _need(row, ("question", "options"), where)
            letters = sorted(row["options"])
            options = [row["options"][k] for k in letters]
            if row.get("answer_idx"):
                idx = _letter_index(row["answer_idx"], len(options), where)
            else:
                _need(row, ("answer",), where)
                norm = [str(o).strip().lower() for o in options]
                if str(row["answer"]).strip().lower() not in norm:
                    raise DataError(f"{where}: answer {row['answer']!r} is not among the options")
                idx = norm.index(str(row["answer"]).strip().lower())
            out.append(mcq_record(rid=f"medqa-{s}-{row.get('id', i)}", question=row["question"], options=options,
                                  answer_index=idx, images=[], split=s, source="medqa", where=where,
                                  extras={"meta_info": row.get("meta_info")}))
    if not out:
        raise DataError(f"MedQA: no {split!r} JSONL file under {root}")
    return out


def load_medmcqa(data_dir: Path, split: str | None = "validation", *, path: str | None = None) -> list[VQARecord]:
    """MedMCQA: ``<root>/{train,dev,test}.json`` (JSON lines, ``cop`` 1-4) or the Hugging Face
    parquet files (``cop`` 0-3); fields ``question``, ``opa``..``opd``, ``cop``. The papers
    report the dev/validation split (4,183; the test answers are hidden)."""
    root = Path(path).resolve() if path else find_root("medmcqa", data_dir)
    files = _split_files(root, split, ("*.json", "*.jsonl", "data/*.parquet", "*.parquet"))
    out: list[VQARecord] = []
    for s, f in files:
        zero_based = f.suffix == ".parquet"
        for i, row in enumerate(_read_any(f)):
            where = f"{f} record {i + 1}"
            _need(row, ("question", "opa", "opb"), where)
            if row.get("cop") in (None, "", -1):
                continue  # unlabelled (test split)
            options = [row[k] for k in ("opa", "opb", "opc", "opd") if row.get(k) not in (None, "")]
            idx = int(row["cop"]) - (0 if zero_based else 1)
            out.append(mcq_record(rid=f"medmcqa-{row.get('id') or f'{s}-{i}'}", question=row["question"],
                                  options=options, answer_index=idx, images=[], split=s, source="medmcqa",
                                  where=where, extras={"subject": row.get("subject_name"), "topic": row.get("topic_name")}))
    if not out:
        raise DataError(f"MedMCQA: no labelled {split!r} records under {root}")
    return out


def load_pubmedqa(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                  with_context: bool = True) -> list[VQARecord]:
    """PubMedQA PQA-L: ``<root>/ori_pqal.json`` ({pmid: {QUESTION, CONTEXTS, final_decision,
    ...}}) with ``test_ground_truth.json`` naming the 500 test ids (the split the papers report;
    the other 500 are "train"), or the HF ``pqa_labeled`` parquet (``pubid``, ``question``,
    ``context.contexts``, ``final_decision``; all rows, split "train"). Options: yes / no / maybe."""
    root = Path(path).resolve() if path else find_root("pubmedqa", data_dir)
    rows: list[tuple[str, dict]] = []
    src = root / "ori_pqal.json"
    if src.is_file():
        test_ids: set = set()
        gt = root / "test_ground_truth.json"
        if gt.is_file():
            test_ids = {str(k) for k in json.loads(gt.read_text(encoding="utf-8"))}
        for r in _read_any(src):
            s = "test" if str(r["_key"]) in test_ids else "train"
            rows.append((s, {"pubid": r["_key"], "question": r.get("QUESTION"), "contexts": r.get("CONTEXTS") or [],
                             "final_decision": r.get("final_decision")}))
    else:
        for f in sorted(root.rglob("*.parquet")):
            for r in _read_any(f):
                ctx = r.get("context") or {}
                rows.append(("train", {"pubid": r.get("pubid"), "question": r.get("question"),
                                       "contexts": ctx.get("contexts") or [], "final_decision": r.get("final_decision")}))
    if not rows:
        raise DataError(f"PubMedQA: neither ori_pqal.json nor parquet files under {root}")
    options = ["yes", "no", "maybe"]
    out: list[VQARecord] = []
    for s, r in rows:
        if not _want(split, s):
            continue
        where = f"PubMedQA {root} pubid {r['pubid']}"
        _need(r, ("question", "final_decision"), where)
        dec = str(r["final_decision"]).strip().lower()
        if dec not in options:
            raise DataError(f"{where}: final_decision {r['final_decision']!r} is not yes/no/maybe")
        q = str(r["question"]).strip()
        if with_context and r["contexts"]:
            q = "Context: " + " ".join(map(str, r["contexts"])) + "\nQuestion: " + q
        out.append(mcq_record(rid=f"pubmedqa-{r['pubid']}", question=q, options=options,
                              answer_index=options.index(dec), images=[], split=s, source="pubmedqa", where=where))
    return out


# =========================================================================== the papers' other sets
# MRPO's out-of-distribution sets (App. C.1), ARMed's VQA-Med 2019, MediX-R1's text and report
# benchmarks (Table 2), CAPO's RL set and StepGRPO's warm-up data. Each reads the layout its
# publisher ships (docs/evaluation.md "Benchmarks" states which); a missing field is a DataError
# naming the file and record.
def _vqa_record(*, rid: str, image: str | None, question: str, answer: str, split: str | None, source: str,
                where: str, modality: str | None = None, organ: str | None = None, closed: bool | None = None,
                extras: dict | None = None) -> VQARecord:
    ans = normalize_answer_text(answer)
    if not ans:
        raise DataError(f"{where}: record {rid!r}: empty answer")
    open_ = is_open_ended_answer(ans) if closed is None else not closed
    return VQARecord(id=rid, images=[image] if image else [], question=str(question).strip(), answer=ans,
                     answer_type="OPEN" if open_ else "CLOSED", open_ended=open_, modality=modality,
                     modality_tag=modality_to_tag(modality) if modality else None, organ=organ, split=split,
                     source=source, extras={"lang": "en", **(extras or {})})


def _pipe_lines(path: Path) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of a ``|``-separated ImageCLEF file (blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    return [(i + 1, [f.strip() for f in line.split("|")]) for i, line in enumerate(text.splitlines()) if line.strip()]


def _image_in(folder: Path, stem: str) -> str:
    for ext in (".jpg", ".jpeg", ".png"):
        if (folder / f"{stem}{ext}").is_file():
            return str(folder / f"{stem}{ext}")
    return str(folder / f"{stem}.jpg")  # validation reports it missing


# --------------------------------------------------------------------------- VQA-Med 2019 (ARMed)
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
    want = _SPLIT_ALIASES.get(split or "", split)
    out: list[VQARecord] = []
    for s, (folder, qa, imgs) in _VQAMED19.items():
        if want not in (None, s):
            continue
        f = root / folder / qa
        if not f.is_file():
            if want is not None:
                raise DataError(f"VQA-Med 2019: {f} not found (split {s!r})")
            continue
        for ln, fields in _pipe_lines(f):
            where = f"{f} line {ln}"
            if len(fields) == 4:
                img, category, q, a = fields
            elif len(fields) == 3:
                (img, q, a), category = fields, None
            else:
                raise DataError(f"{where}: expected image_id|question|answer (or 4 fields with the category), "
                                f"got {len(fields)} fields")
            out.append(_vqa_record(rid=f"vqamed19-{s}-{ln}", image=_image_in(root / folder / imgs, img), question=q,
                                   answer=a, split=s, source="vqa_med_2019", where=where, modality="Radiology",
                                   closed=a.strip().lower() in ("yes", "no"),
                                   extras={"image_id": img, "category": category}))
    if not out:
        raise DataError(f"VQA-Med 2019: no {split!r} QA file under {root}")
    return out


# --------------------------------------------------------------------------- VQA-Med 2021 (MRPO)
def load_vqa_med_2021(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                      single_answer: bool = True) -> list[VQARecord]:
    """VQA-Med 2021 test set (ImageCLEF 2021, 500 abnormality questions on 500 images; MRPO's
    "VQA-Med"): ``<root>/Task1-VQA-2021-TestSet-Questions.txt`` (``image_id|question``),
    ``<root>/Task1-VQA-2021-TestSet-ReferenceAnswers.txt`` (``image_id|answer[|alternative...]``)
    and ``<root>/VQA-500-Images/<image_id>.jpg``. ``single_answer`` keeps the questions with one
    reference answer, as MRPO App. C.1 does (425 of 500)."""
    root = Path(path).resolve() if path else find_root("vqa_med_2021", data_dir)
    if split not in (None, "test"):
        raise DataError(f"VQA-Med 2021 has one split here, 'test', not {split!r}")
    qf = root / "Task1-VQA-2021-TestSet-Questions.txt"
    af = root / "Task1-VQA-2021-TestSet-ReferenceAnswers.txt"
    for f in (qf, af):
        if not f.is_file():
            raise DataError(f"VQA-Med 2021: {f} not found")
    answers: dict[str, list[str]] = {}
    for ln, fields in _pipe_lines(af):
        if len(fields) < 2 or not fields[1]:
            raise DataError(f"{af} line {ln}: expected image_id|answer[|alternative ...]")
        answers[fields[0]] = [a for f in fields[1:] for a in f.split("#") if a.strip()]
    out: list[VQARecord] = []
    for ln, fields in _pipe_lines(qf):
        where = f"{qf} line {ln}"
        if len(fields) < 2:
            raise DataError(f"{where}: expected image_id|question")
        img, q = fields[0], fields[-1]
        if img not in answers:
            raise DataError(f"{where}: image {img!r} has no reference answer in {af.name}")
        refs = answers[img]
        if single_answer and len(refs) != 1:
            continue
        out.append(_vqa_record(rid=f"vqamed21-{img}", image=_image_in(root / "VQA-500-Images", img), question=q,
                               answer=refs[0], split="test", source="vqa_med_2021", where=where,
                               modality="Radiology", extras={"image_id": img, "alternatives": refs[1:]}))
    return out


# --------------------------------------------------------------------------- parquet helpers
def _parquet_rows(root: Path, split: str | None, what: str) -> list[tuple[str | None, Path, list[dict]]]:
    files = sorted(root.rglob("*.parquet"))
    picked = [(s, f) for f in files if _want(split, s := _split_of(f.name))]
    if not picked:
        raise DataError(f"{what}: no {split!r} parquet file under {root} (found {[f.name for f in files][:5]})")
    return [(s, f, _read_any(f)) for s, f in picked]


def _row_image(root: Path, item: Any, name: str) -> str | None:
    if isinstance(item, list):
        item = item[0] if item else None
    return _image_file(root, item, name)


# --------------------------------------------------------------------------- Quilt-VQA (MRPO)
def load_quilt_vqa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """Quilt-VQA (Seyfioglu et al. 2025; ``wisdomik/Quilt_VQA``): the Hugging Face parquet
    (``data/train-*.parquet``; the benchmark is an evaluation set, so every row is "test" here)
    with ``image``, ``question``, ``answer``, ``answer_type`` ("open" | "closed") and ``context``.
    MRPO App. C.1 uses the 724 open questions (``--protocol mrpo`` keeps them)."""
    root = Path(path).resolve() if path else find_root("quilt_vqa", data_dir)
    if split not in (None, "test"):
        raise DataError(f"Quilt-VQA is an evaluation set (split 'test'), not {split!r}")
    out: list[VQARecord] = []
    for _, f, rows in _parquet_rows(root, None, "Quilt-VQA"):
        for i, row in enumerate(rows):
            where = f"{f} row {i}"
            _need(row, ("question", "answer", "answer_type"), where)
            kind = str(row["answer_type"]).strip().lower()
            if kind not in ("open", "closed"):
                raise DataError(f"{where}: answer_type {row['answer_type']!r} is not open/closed")
            rid = f"quilt-{f.stem}-{i}"
            out.append(_vqa_record(rid=rid, image=_row_image(root, row.get("image"), rid), question=row["question"],
                                   answer=row["answer"], split="test", source="quilt_vqa", where=where,
                                   modality="Pathology", closed=kind == "closed",
                                   extras={"context": row.get("context")}))
    return out


# --------------------------------------------------------------------------- RadImageNet-VQA (MRPO)
def load_radimagenet_vqa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """RadImageNet-VQA (Butsanets et al. 2026; ``raidium/RadImageNet-VQA``), its stratified
    benchmark of 9,000 CT/MRI questions as parquet with ``image``, ``question``, ``answer``, a
    question-type column (``question_type`` or ``type``: "open" | "closed" | "mcq"), ``choices``
    for multiple choice, and ``modality`` / ``anatomy`` when present. MRPO App. C.1 uses the
    2,000 open questions (``--protocol mrpo``)."""
    root = Path(path).resolve() if path else find_root("radimagenet_vqa", data_dir)
    out: list[VQARecord] = []
    for s, f, rows in _parquet_rows(root, split, "RadImageNet-VQA"):
        for i, row in enumerate(rows):
            where = f"{f} row {i}"
            _need(row, ("question", "answer"), where)
            kind = str(row.get("question_type") or row.get("type") or "").strip().lower()
            if kind not in ("open", "closed", "mcq", "multiple_choice", "multiple-choice"):
                raise DataError(f"{where}: question type {kind!r} is not open/closed/mcq "
                                "(column question_type or type)")
            rid = f"radimagenet-{s or 'test'}-{i}"
            img = _row_image(root, row.get("image"), rid)
            mod, organ = row.get("modality"), row.get("anatomy") or row.get("location")
            if kind in ("mcq", "multiple_choice", "multiple-choice"):
                choices = list(row.get("choices") or row.get("options") or [])
                norm = [str(c).strip().lower() for c in choices]
                ans = str(row["answer"]).strip()
                idx = norm.index(ans.lower()) if ans.lower() in norm else _letter_index(ans, len(choices), where)
                out.append(mcq_record(rid=rid, question=row["question"], options=choices, answer_index=idx,
                                      images=[img] if img else [], split=s or "test", source="radimagenet_vqa",
                                      modality=mod, organ=organ, where=where))
            else:
                out.append(_vqa_record(rid=rid, image=img, question=row["question"], answer=row["answer"],
                                       split=s or "test", source="radimagenet_vqa", where=where, modality=mod,
                                       organ=organ, closed=kind == "closed"))
    return out


# --------------------------------------------------------------------------- MIMIC-CXR-VQA (MRPO)
def load_mimic_cxr_vqa(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                       mrpo_subset: bool = True) -> list[VQARecord]:
    """MIMIC-Ext-MIMIC-CXR-VQA (Bae et al. 2024; PhysioNet, credentialed): ``<root>/dataset/
    {train,valid,test}.json`` (lists of ``{idx, image_id, image_path, question, semantic_type,
    content_type, template, answer: [..]}``) and the MIMIC-CXR-JPG images under
    ``<root>/files/`` (``image_path`` is relative to it). ``mrpo_subset``: MRPO App. C.1's
    filter - ``semantic_type == "query"`` questions with exactly one answer (1,724 of the test
    set); off, every question (answers joined with ", ")."""
    root = Path(path).resolve() if path else find_root("mimic_cxr_vqa", data_dir)
    files = {"train": "train.json", "validation": "valid.json", "test": "test.json"}
    want = _SPLIT_ALIASES.get(split or "", split)
    out: list[VQARecord] = []
    for s, name in files.items():
        f = root / "dataset" / name
        if want not in (None, s):
            continue
        if not f.is_file():
            if want is not None:
                raise DataError(f"MIMIC-CXR-VQA: {f} not found")
            continue
        for i, row in enumerate(_read_any(f)):
            where = f"{f} item #{i}"
            _need(row, ("question", "image_path", "semantic_type"), where)
            ans = row.get("answer")
            ans = list(ans) if isinstance(ans, list) else ([] if ans in (None, "") else [ans])
            if mrpo_subset and (row["semantic_type"] != "query" or len(ans) != 1):
                continue
            if not ans:
                continue  # a "query" with an empty answer set ("none of them") has no text answer
            rid = f"mimiccxrvqa-{s}-{row.get('idx', i)}"
            out.append(_vqa_record(rid=rid, image=str(root / "files" / row["image_path"]), question=row["question"],
                                   answer=", ".join(str(a) for a in ans), split=s, source="mimic_cxr_vqa", where=where,
                                   modality="X-Ray", organ="Chest",
                                   closed=row["semantic_type"] == "verify",
                                   extras={"semantic_type": row["semantic_type"], "content_type": row.get("content_type"),
                                           "template": row.get("template")}))
    if not out and want is not None and not (root / "dataset" / files[want]).is_file():
        raise DataError(f"MIMIC-CXR-VQA: no {split!r} file under {root / 'dataset'}")
    return out


# --------------------------------------------------------------------------- MMLU medical (MediX-R1)
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
        parquet = sorted(f for f in (root / subject).glob("*.parquet") if _want(split, _split_of(f.name)))
        csv_file = root / "data" / split / f"{subject}_{split}.csv"
        rows: list[tuple[str, dict]] = []
        for f in parquet:
            rows += [(f"{f} row {i}", r) for i, r in enumerate(_read_any(f))]
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
            _need(r, ("question",), where)
            choices = list(r.get("choices") or [])
            ans = r.get("answer")
            if not isinstance(ans, int) or not 0 <= ans < len(choices):
                raise DataError(f"{where}: answer {ans!r} is not an index into {len(choices)} choices")
            out.append(mcq_record(rid=f"mmlu-{subject}-{split}-{j}", question=r["question"], options=choices,
                                  answer_index=ans, images=[], split=split, source=f"mmlu_{subject}", where=where,
                                  extras={"subject": subject}))
    return out


# --------------------------------------------------------------------------- USMLE self-assessment
def load_usmle_sa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """USMLE self-assessment (Han et al. 2023, MedAlpaca; MediX-R1's "USMLE-SA"):
    ``<root>/step{1,2,3}.json`` (lists of ``{no, question, options: {A: .., ...}, answer}`` where
    ``answer`` is the option letter) - the layout of ``medalpaca/medical_meadow_usmle_self_assessment``;
    items without an answer (image questions the release leaves unanswered) are skipped.
    Text-only, one split ("test")."""
    root = Path(path).resolve() if path else find_root("usmle_sa", data_dir)
    if split not in (None, "test"):
        raise DataError(f"USMLE-SA has one split, 'test', not {split!r}")
    out: list[VQARecord] = []
    for step in ("step1", "step2", "step3"):
        f = root / f"{step}.json"
        if not f.is_file():
            continue
        for i, row in enumerate(_read_any(f)):
            where = f"{f} item #{i}"
            _need(row, ("question", "options"), where)
            if row.get("answer") in (None, ""):
                continue
            opts = row["options"]
            letters = sorted(opts)
            options = [opts[k] for k in letters]
            idx = letters.index(str(row["answer"]).strip().upper()) if str(row["answer"]).strip().upper() in letters \
                else _letter_index(row["answer"], len(options), where)
            out.append(mcq_record(rid=f"usmle-{step}-{row.get('no', i)}", question=row["question"], options=options,
                                  answer_index=idx, images=[], split="test", source="usmle_sa", where=where,
                                  extras={"step": step}))
    if not out:
        raise DataError(f"USMLE-SA: no answered items in {root}/step{{1,2,3}}.json")
    return out


# --------------------------------------------------------------------------- MIMIC-CXR reports (MediX-R1)
_REPORT_PROMPT = "Generate a detailed report based on the scan."
_SUMMARY_PROMPT = "Write a short summary of the following report.\n\nReport:\n{report}"


def load_mimic_cxr_report(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                          task: str = "generation") -> list[VQARecord]:
    """MIMIC-CXR report generation and summarisation (Johnson et al. 2019; MediX-R1 Table 2
    "MIMIC-CXR-Gen" and "MIMIC-CXR-Sum", scored with the 0-5 rubric). Layout: the official
    ``<root>/mimic-cxr-2.0.0-split.csv`` (``dicom_id, study_id, subject_id, split``), the
    report texts ``<root>/files/p<NN>/p<subject_id>/s<study_id>.txt`` and the MIMIC-CXR-JPG
    images ``<root>/files/p<NN>/p<subject_id>/s<study_id>/<dicom_id>.jpg``. ``task="generation"``:
    image -> FINDINGS (+ IMPRESSION) section; ``task="summary"``: text-only, the findings ->
    the IMPRESSION. One record per study (its first image); ``extras.task = "report"``."""
    import csv

    root = Path(path).resolve() if path else find_root("mimic_cxr_report", data_dir)
    if task not in ("generation", "summary"):
        raise DataError(f"MIMIC-CXR report task must be 'generation' or 'summary', not {task!r}")
    split_csv = root / "mimic-cxr-2.0.0-split.csv"
    if not split_csv.is_file():
        raise DataError(f"MIMIC-CXR: {split_csv} not found")
    want = {"validation": "validate"}.get(_SPLIT_ALIASES.get(split or "", split), split)
    studies: dict[tuple[str, str], str] = {}
    with split_csv.open(newline="", encoding="utf-8") as fh:
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


# --------------------------------------------------------------------------- PMC-VQA-Hard (MediX-R1)
def load_pmc_vqa_hard(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """PMC-VQA-Hard (MediX-R1 Table 2): PMC-VQA's harder test file ``test_2.csv`` (released with
    PMC-VQA v2, ``xmcmic/PMC-VQA``: ``Figure_path, Question, Answer, Choice A..D, Answer_label``)
    with the images under ``images/`` or ``figures/``, as multiple choice. Read by
    :mod:`medrl.data.pmc_vqa` with ``test_file="test_2.csv"``."""
    from medrl.data import pmc_vqa

    root = Path(path).resolve() if path else find_root("pmc_vqa_hard", data_dir)
    if split not in (None, "test"):
        raise DataError(f"PMC-VQA-Hard has one split, 'test', not {split!r}")
    if not (root / "test_2.csv").is_file():
        raise DataError(f"PMC-VQA-Hard: {root / 'test_2.csv'} not found (PMC-VQA's test_2.csv)")
    recs = pmc_vqa.load_pmc_vqa(root, "test", with_choices=True, csv_file="test_2.csv")
    for r in recs:
        r.id, r.source = r.id.replace("pmc_vqa-", "pmc_vqa_hard-", 1), "pmc_vqa_hard"
    return recs


# --------------------------------------------------------------------------- R1-style RL sets (CAPO)
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def load_med_zero_17k(data_dir: Path, split: str | None = "train", *, path: str | None = None) -> list[VQARecord]:
    """CAPO's Med-Zero-17K (Sec. 3.1). The paper says it "will be released"; no public copy was
    found when this loader was written, so it reads the R1-style layout public medical RL sets
    use (e.g. ``MBZUAI/medix-rl-data``): parquet or JSON(L) files ``<root>/**/<split>*`` with
    ``problem`` (or ``question``), ``solution`` (or ``answer``; an ``<answer>...</answer>``
    wrapper is removed), ``image``/``images``, and optional ``level`` (CAPO's difficulty 1-3),
    ``modality``, ``task``, ``options`` (multiple choice)."""
    root = Path(path).resolve() if path else find_root("med_zero_17k", data_dir)
    files = [f for f in sorted(root.rglob("*")) if f.suffix in (".parquet", ".json", ".jsonl")
             and _want(split, _split_of(f.name) or "train")]
    if not files:
        raise DataError(f"Med-Zero-17K: no {split!r} parquet/JSON file under {root}")
    out: list[VQARecord] = []
    for f in files:
        s = _split_of(f.name) or "train"
        for i, row in enumerate(_read_any(f)):
            where = f"{f} record {i}"
            q = row.get("problem") or row.get("question")
            a = row.get("solution") if row.get("solution") not in (None, "") else row.get("answer")
            if q in (None, "") or a in (None, ""):
                raise DataError(f"{where}: field 'problem'/'question' or 'solution'/'answer' missing or empty")
            m = _ANSWER_TAG.search(str(a))
            a = m.group(1).strip() if m else str(a)
            rid = f"medzero-{row.get('id') or f'{f.stem}-{i}'}"
            imgs = row.get("images") if row.get("images") is not None else row.get("image")
            imgs = imgs if isinstance(imgs, list) else [imgs] if imgs else []
            images = [p for k, it in enumerate(imgs) if (p := _image_file(root, it, f"{rid}-{k}"))]
            level = row.get("level")
            if level not in (None, "") and str(level) not in ("1", "2", "3"):
                raise DataError(f"{where}: level {level!r} is not CAPO's difficulty 1, 2 or 3")
            extras = {"level": int(level) if level not in (None, "") else None, "task": row.get("task")}
            opts = row.get("options")
            if opts:
                options = list(opts.values()) if isinstance(opts, dict) else list(opts)
                norm = [str(o).strip().lower() for o in options]
                idx = norm.index(a.strip().lower()) if a.strip().lower() in norm else _letter_index(a, len(options), where)
                out.append(mcq_record(rid=rid, question=q, options=options, answer_index=idx, images=images, split=s,
                                      source="med_zero_17k", modality=row.get("modality"), where=where, extras=extras))
            else:
                rec = _vqa_record(rid=rid, image=None, question=q, answer=a, split=s, source="med_zero_17k",
                                  where=where, modality=row.get("modality"), extras=extras)
                rec.images = images
                out.append(rec)
    return out


# --------------------------------------------------------------------------- Mulberry CoT (StepGRPO)
_FINAL = re.compile(r"(?:###\s*)?The final answer is\s*:?\s*", re.IGNORECASE)


def load_mulberry_cot(data_dir: Path, split: str | None = "train", *, path: str | None = None) -> list[VQARecord]:
    """StepGRPO's warm-up data (Sec. 4.1: SFT on Mulberry-260k chain-of-thought, Eq. 1): the
    Mulberry SFT release (``HuanjinYao/Mulberry-SFT``) in LLaMA-Factory's ShareGPT layout - JSON
    files ``<root>/*.json`` of ``{"messages": [{"role": "user", "content": "<image>question"},
    {"role": "assistant", "content": "...step-by-step... The final answer is: X"}], "images":
    [relative path]}``, images relative to ``<root>``. The reasoning before "The final answer
    is" becomes ``gold_reasoning`` (what the warm-up SFT teaches), the rest the answer."""
    root = Path(path).resolve() if path else find_root("mulberry_cot", data_dir)
    if split not in (None, "train"):
        raise DataError(f"Mulberry SFT data has one split, 'train', not {split!r}")
    files = sorted(f for f in root.glob("*.json*") if f.suffix in (".json", ".jsonl"))
    if not files:
        raise DataError(f"Mulberry: no JSON file under {root}")
    out: list[VQARecord] = []
    for f in files:
        for i, row in enumerate(_read_any(f)):
            where = f"{f} item #{i}"
            msgs = row.get("messages") or row.get("conversations")
            if not isinstance(msgs, list) or len(msgs) < 2:
                raise DataError(f"{where}: expected 'messages' with a user and an assistant turn")
            user = next((m for m in msgs if m.get("role", m.get("from")) in ("user", "human")), None)
            bot = next((m for m in reversed(msgs) if m.get("role", m.get("from")) in ("assistant", "gpt")), None)
            if user is None or bot is None:
                raise DataError(f"{where}: needs one user and one assistant message")
            q = str(user.get("content", user.get("value", ""))).replace("<image>", "").strip()
            reply = str(bot.get("content", bot.get("value", "")))
            parts = _FINAL.split(reply)
            if len(parts) < 2 or not parts[-1].strip():
                raise DataError(f"{where}: the assistant reply has no 'The final answer is' line")
            answer = parts[-1].strip().rstrip(".").strip()
            reasoning = _FINAL.sub("", "".join(parts[:-1])).strip()
            images = [str(root / p) for p in (row.get("images") or [])]
            rec = _vqa_record(rid=f"mulberry-{f.stem}-{i}", image=None, question=q, answer=answer, split="train",
                              source="mulberry_cot", where=where)
            rec.images, rec.gold_reasoning = images, reasoning or None
            out.append(rec)
    return out


# --------------------------------------------------------------------------- registration
#: Sources defined here beyond the first set (``medrl.data.loaders.LOADERS`` includes them).
EXTRA_LOADERS: dict[str, tuple[str, str, dict]] = {
    "vqa_med_2019": ("medrl.data.benchmarks", "load_vqa_med_2019", {}),
    "vqa_med_2021": ("medrl.data.benchmarks", "load_vqa_med_2021", {}),
    "quilt_vqa": ("medrl.data.benchmarks", "load_quilt_vqa", {}),
    "radimagenet_vqa": ("medrl.data.benchmarks", "load_radimagenet_vqa", {}),
    "mimic_cxr_vqa": ("medrl.data.benchmarks", "load_mimic_cxr_vqa", {}),
    "mmlu_med": ("medrl.data.benchmarks", "load_mmlu_med", {}),
    **{f"mmlu_{s}": ("medrl.data.benchmarks", "load_mmlu_med", {"subjects": (s,)}) for s in MMLU_MED_SUBJECTS},
    "usmle_sa": ("medrl.data.benchmarks", "load_usmle_sa", {}),
    "mimic_cxr_report": ("medrl.data.benchmarks", "load_mimic_cxr_report", {"task": "generation"}),
    "mimic_cxr_summary": ("medrl.data.benchmarks", "load_mimic_cxr_report", {"task": "summary"}),
    "pmc_vqa_hard": ("medrl.data.benchmarks", "load_pmc_vqa_hard", {}),
    "med_zero_17k": ("medrl.data.benchmarks", "load_med_zero_17k", {}),
    "mulberry_cot": ("medrl.data.benchmarks", "load_mulberry_cot", {}),
}
#: Of those, the ones without images.
EXTRA_TEXT_ONLY = ("mmlu_med", *(f"mmlu_{s}" for s in MMLU_MED_SUBJECTS), "usmle_sa", "mimic_cxr_summary")

_LOCATIONS.update({
    "vqa_med_2019": (("VQA-Med-2019", "vqa_med_2019", "ImageClef-2019-VQA-Med"), "VQA-Med 2019",
                     "https://github.com/abachaa/VQA-Med-2019",
                     _has_any(*(v[0] for v in _VQAMED19.values()))),
    "vqa_med_2021": (("VQA-Med-2021", "vqa_med_2021", "Task1-VQA-2021-TestSet-w-GroundTruth"), "VQA-Med 2021 test set",
                     "https://github.com/abachaa/VQA-Med-2021", _has_any("Task1-VQA-2021-TestSet-Questions.txt")),
    "quilt_vqa": (("Quilt_VQA", "quilt_vqa", "Quilt-VQA"), "Quilt-VQA", "https://huggingface.co/datasets/wisdomik/Quilt_VQA",
                  lambda p: p.is_dir() and any(p.rglob("*.parquet"))),
    "radimagenet_vqa": (("RadImageNet-VQA", "radimagenet_vqa"), "RadImageNet-VQA",
                        "https://huggingface.co/datasets/raidium/RadImageNet-VQA",
                        lambda p: p.is_dir() and any(p.rglob("*.parquet"))),
    "mimic_cxr_vqa": (("mimic-cxr-vqa", "MIMIC-CXR-VQA", "mimic_cxr_vqa"), "MIMIC-Ext-MIMIC-CXR-VQA",
                      "https://physionet.org/content/mimic-ext-mimic-cxr-vqa/ (credentialed)", _has_any("dataset")),
    "mmlu_med": (("mmlu", "MMLU"), "MMLU", "https://huggingface.co/datasets/cais/mmlu",
                 _has_any(*MMLU_MED_SUBJECTS, "data")),
    **{f"mmlu_{s}": (("mmlu", "MMLU"), "MMLU", "https://huggingface.co/datasets/cais/mmlu", _has_any(s, "data"))
       for s in MMLU_MED_SUBJECTS},
    "usmle_sa": (("usmle_sa", "USMLE-SA", "medical_meadow_usmle_self_assessment"), "USMLE self-assessment",
                 "https://huggingface.co/datasets/medalpaca/medical_meadow_usmle_self_assessment",
                 _has_any("step1.json", "step2.json", "step3.json")),
    "mimic_cxr_report": (("mimic-cxr", "MIMIC-CXR", "mimic_cxr"), "MIMIC-CXR (reports + JPG)",
                         "https://physionet.org/content/mimic-cxr-jpg/ (credentialed)",
                         _has_any("mimic-cxr-2.0.0-split.csv")),
    "mimic_cxr_summary": (("mimic-cxr", "MIMIC-CXR", "mimic_cxr"), "MIMIC-CXR (reports)",
                          "https://physionet.org/content/mimic-cxr/ (credentialed)", _has_any("mimic-cxr-2.0.0-split.csv")),
    "pmc_vqa_hard": (("pmc_vqa", "PMC-VQA", "pmcvqa"), "PMC-VQA-Hard (PMC-VQA test_2.csv)",
                     "https://huggingface.co/datasets/xmcmic/PMC-VQA", _has_any("test_2.csv")),
    "med_zero_17k": (("Med-Zero-17K", "med_zero_17k"), "Med-Zero-17K (CAPO)",
                     "CAPO (arXiv 2506.12849) announces its release", lambda p: p.is_dir()),
    "mulberry_cot": (("Mulberry-SFT", "mulberry", "mulberry_cot"), "Mulberry SFT data (StepGRPO warm-up)",
                     "https://huggingface.co/datasets/HuanjinYao/Mulberry-SFT", lambda p: p.is_dir()),
})
