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
- ``medqa``, ``medmcqa``, ``pubmedqa``: text-only multiple choice (MediX-R1 003_ Table 2's
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
