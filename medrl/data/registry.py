"""The data registry: every named source and every evaluation suite in one table, and
``load_records`` / ``parse_source``, the one entry point that reads any of them.

Words: a *source* is a dataset medrl can read (a loader in :mod:`medrl.data.sources`, one file
per dataset family); a *suite* is a paper's collection of sources evaluated together
(``medrl eval --suite NAME``).

Source specs: a name of :data:`SOURCES` (looked up under ``data_dir``, default
:func:`medrl.common.paths.data_root`), ``jsonl:<path>`` (our own format) or ``hf:<path>`` (a Hugging
Face dataset: ``save_to_disk`` folder, downloaded parquet folder or hub id). A named source may
carry a split after a colon: ``vqa_rad:test``.

This module reaches a loader by its name in the table when one is asked for (``importlib``), so
importing it stays cheap, and every import between the two points one way: a source module
looks up its folders and constants here, this module never imports a source.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from pathlib import Path
from typing import Callable, Mapping

from medrl.data.filters import deduplicate, filter_language, filter_open
from medrl.data.record import DataError, VQARecord, read_jsonl
from medrl.data.validate import validate_records

MMLU_MED_SUBJECTS = ("clinical_knowledge", "college_biology", "college_medicine", "medical_genetics",
                     "professional_medicine", "anatomy")
"""MediX-R1 Table 2's MMLU columns: Clinical, Bio, Med, Genetics, ProfMed, Anat."""

MMMU_MED_SUBJECTS = ("Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine",
                     "Pharmacy", "Public_Health")
"""MMMU's Health & Medicine subjects."""

#: The configs of MediX-R1's evaluation collection (``sahalshajim/medix-eval-sets``) that its
#: task list reads, each a folder of that dataset.
MEDIX_EVAL_CONFIGS = ("pubmedqa", "mimic_cxr", "pmc_vqa", "pmc_vqa_hard")


def _is_dir(p: Path) -> bool:
    return p.is_dir()


def _has_any(*names: str) -> Callable[[Path], bool]:
    return lambda p: p.is_dir() and any((p / n).exists() for n in names)


def _has_parquet(p: Path) -> bool:
    return p.is_dir() and any(p.rglob("*.parquet"))


@dataclasses.dataclass(frozen=True)
class Source:
    """One named source: where its loader is, where its files are looked for, what it needs.

    ``loader``: ``"module:function"``, called ``fn(data_dir, split, **fixed, **kw)``.
    ``folders``: folder names tried under a data folder, in order; ``check`` says whether a
    candidate folder holds the source (default: it is a folder). ``finder``: instead of
    ``folders``, a ``"module:function"`` taking the data folder and returning the source's folder
    (the first loaders keep their own). ``text_only``: records carry no image.
    ``needs_files``: False for generated sources (nothing to find under a data folder).
    """

    loader: str
    title: str = ""
    url: str = ""
    folders: tuple[str, ...] = ()
    check: Callable[[Path], bool] = _is_dir
    fixed: Mapping = dataclasses.field(default_factory=dict)
    finder: str | None = None
    text_only: bool = False
    needs_files: bool = True

    def function(self) -> Callable:
        mod, _, fn = self.loader.partition(":")
        return getattr(importlib.import_module(mod), fn)


_S = "medrl.data.sources."
_VQA_MED19_FOLDERS = ("ImageClef-2019-VQA-Med-Training", "ImageClef-2019-VQA-Med-Validation", "VQAMed2019Test")
_MIMIC_SPLIT_FILES = ("mimic-cxr-2.0.0-split.csv", "mimic-cxr-2.0.0-split.csv.gz")
#: VQA-Med 2021 reference answers: the test set's own file, or the evaluator's copy in the
#: organisers' repository (``EvaluationCode/data/resources/``).
VQA_MED_2021_ANSWER_FILES = ("Task1-VQA-2021-TestSet-ReferenceAnswers.txt",
                             "Task1-VQAnswering2021-Test-ReferenceAnswers-4Evaluator.txt")
#: VQA-Med 2021 questions: pipe-separated, or the evaluator's MS-COCO-style JSON.
VQA_MED_2021_QUESTION_FILES = ("Task1-VQA-2021-TestSet-Questions.txt",
                               "Task1-VQAnswering2021-Test-ReferenceQuestions_mscoco_format_vqa.json")
#: Where MIMIC-Ext-MIMIC-CXR-VQA's JSON files sit inside its folder: the PhysioNet download
#: (``mimiccxrvqa/dataset/``, also under its version folder ``1.0.0/``) or an unpacked ``dataset/``.
MIMIC_CXR_VQA_DATASET_DIRS = ("dataset", "mimiccxrvqa/dataset", "1.0.0/mimiccxrvqa/dataset")

#: Every named source. ``medrl data inspect --dataset NAME[:SPLIT]`` reads any of them; docs/data.md
#: lists each one's layout and download.
SOURCES: dict[str, Source] = {
    # the papers' training and in-domain sets, official layouts
    "vqa_rad": Source(_S + "vqa_rad:load_vqa_rad", "VQA-RAD", "https://osf.io/89kps/",
                      finder=_S + "vqa_rad:find_root"),
    "slake": Source(_S + "slake:load_slake", "SLAKE", "https://www.med-vqa.com/slake/", finder=_S + "slake:find_root"),
    "pathvqa": Source(_S + "pathvqa:load_pathvqa", "PathVQA", "https://github.com/UCSD-AI4H/PathVQA",
                      finder=_S + "pathvqa:find_root"),
    "pmc_vqa": Source(_S + "pmc_vqa:load_pmc_vqa", "PMC-VQA", "https://huggingface.co/datasets/xmcmic/PMC-VQA",
                      finder=_S + "pmc_vqa:find_root"),
    "pmc_vqa_mc": Source(_S + "pmc_vqa:load_pmc_vqa", "PMC-VQA (multiple choice)",
                         "https://huggingface.co/datasets/xmcmic/PMC-VQA", finder=_S + "pmc_vqa:find_root",
                         fixed={"with_choices": True}),
    # Hugging Face copies
    "vqa_rad_hf": Source(_S + "hf_copies:load_vqa_rad_hf", "VQA-RAD (Hugging Face copy)",
                         "https://huggingface.co/datasets/flaviagiammarino/vqa-rad",
                         ("vqa_rad_hf", "vqa-rad", "flaviagiammarino-vqa-rad")),
    "slake_hf": Source(_S + "hf_copies:load_slake_hf", "SLAKE (Hugging Face copy)",
                       "https://huggingface.co/datasets/BoKelvin/SLAKE",
                       ("slake_hf", "BoKelvin-SLAKE", "SLAKE", "slake", "Slake"),
                       lambda p: (p / "imgs").is_dir() and any((p / f).is_file() for f in ("validation.json", "test.json"))),
    "pathvqa_hf": Source(_S + "hf_copies:load_pathvqa_hf", "PathVQA (Hugging Face copy)",
                         "https://huggingface.co/datasets/flaviagiammarino/path-vqa",
                         ("pathvqa_hf", "path-vqa", "flaviagiammarino-path-vqa")),
    # general medical VQA evaluation sets
    "omnimedvqa": Source(_S + "omnimedvqa:load_omnimedvqa", "OmniMedVQA",
                         "https://huggingface.co/datasets/foreverbeliever/OmniMedVQA", ("OmniMedVQA", "omnimedvqa"),
                         _has_any("QA_information")),
    "mmmu_med": Source(_S + "mmmu:load_mmmu_med", "MMMU", "https://huggingface.co/datasets/MMMU/MMMU",
                       ("MMMU", "mmmu", "mmmu_med"), _has_any(*MMMU_MED_SUBJECTS)),
    "medxpertqa_mm": Source(_S + "medxpertqa:load_medxpertqa_mm", "MedXpertQA",
                            "https://huggingface.co/datasets/TsinghuaC3I/MedXpertQA", ("MedXpertQA", "medxpertqa"),
                            _has_any("MM")),
    # text-only multiple choice
    "medqa": Source(_S + "text_mcq:load_medqa", "MedQA", "https://github.com/jind11/MedQA (or hf GBaker/MedQA-USMLE-4-options-hf)",
                    ("MedQA", "medqa", "MedQA-USMLE-4-options-hf"), text_only=True),
    "medmcqa": Source(_S + "text_mcq:load_medmcqa", "MedMCQA", "https://github.com/medmcqa/medmcqa",
                      ("medmcqa", "MedMCQA"), text_only=True),
    "pubmedqa": Source(_S + "text_mcq:load_pubmedqa", "PubMedQA", "https://github.com/pubmedqa/pubmedqa",
                       ("pubmedqa", "PubMedQA"), text_only=True),
    "mmlu_med": Source(_S + "mmlu:load_mmlu_med", "MMLU", "https://huggingface.co/datasets/cais/mmlu",
                       ("mmlu", "MMLU", "mmlu_no_train"), _has_any(*MMLU_MED_SUBJECTS, "data"), text_only=True),
    **{f"mmlu_{s}": Source(_S + "mmlu:load_mmlu_med", "MMLU", "https://huggingface.co/datasets/cais/mmlu",
                           ("mmlu", "MMLU", "mmlu_no_train"), _has_any(s, "data"), {"subjects": (s,)}, text_only=True)
       for s in MMLU_MED_SUBJECTS},
    "usmle_sa": Source(_S + "usmle_sa:load_usmle_sa", "USMLE self-assessment",
                       "https://huggingface.co/datasets/HuggingSara/usmle_self_assessment (or "
                       "medalpaca/medical_meadow_usmle_self_assessment)",
                       ("usmle_sa", "USMLE-SA", "usmle_self_assessment", "medical_meadow_usmle_self_assessment"),
                       lambda p: p.is_dir() and (any((p / f"step{n}.json").is_file() for n in (1, 2, 3))
                                                 or any(p.rglob("*.parquet"))), text_only=True),
    # MRPO's and ARMed's out-of-distribution sets
    "vqa_med_2019": Source(_S + "vqa_med:load_vqa_med_2019", "VQA-Med 2019", "https://github.com/abachaa/VQA-Med-2019",
                           ("VQA-Med-2019", "vqa_med_2019", "ImageClef-2019-VQA-Med"), _has_any(*_VQA_MED19_FOLDERS)),
    "vqa_med_2021": Source(_S + "vqa_med:load_vqa_med_2021", "VQA-Med 2021 test set",
                           "https://github.com/abachaa/VQA-Med-2021 (test set from ImageCLEF / AIcrowd)",
                           ("VQA-Med-2021", "vqa_med_2021", "Task1-VQA-2021-TestSet-w-GroundTruth"),
                           lambda p: p.is_dir() and _vqa_med_2021_present(p)),
    "quilt_vqa": Source(_S + "quilt_vqa:load_quilt_vqa", "Quilt-VQA", "https://huggingface.co/datasets/wisdomik/Quilt_VQA",
                        ("Quilt_VQA", "quilt_vqa", "Quilt-VQA"), _has_parquet),
    "radimagenet_vqa": Source(_S + "radimagenet_vqa:load_radimagenet_vqa", "RadImageNet-VQA",
                              "https://huggingface.co/datasets/raidium/RadImageNet-VQA",
                              ("RadImageNet-VQA", "radimagenet_vqa"), _has_parquet),
    "mimic_cxr_vqa": Source(_S + "mimic_cxr:load_mimic_cxr_vqa", "MIMIC-Ext-MIMIC-CXR-VQA",
                            "https://physionet.org/content/mimic-ext-mimic-cxr-vqa/ (credentialed)",
                            ("mimic-cxr-vqa", "MIMIC-CXR-VQA", "mimic_cxr_vqa", "mimic-ext-mimic-cxr-vqa", "mimiccxrvqa"),
                            lambda p: p.is_dir() and _mimic_cxr_vqa_present(p)),
    # MediX-R1's report tasks on the official MIMIC-CXR download
    "mimic_cxr_report": Source(_S + "mimic_cxr:load_mimic_cxr_report", "MIMIC-CXR (reports + JPG)",
                               "https://physionet.org/content/mimic-cxr-jpg/ (credentialed)",
                               ("mimic-cxr", "MIMIC-CXR", "mimic_cxr"), _has_any(*_MIMIC_SPLIT_FILES),
                               {"task": "generation"}),
    "mimic_cxr_summary": Source(_S + "mimic_cxr:load_mimic_cxr_report", "MIMIC-CXR (reports)",
                                "https://physionet.org/content/mimic-cxr/ (credentialed)",
                                ("mimic-cxr", "MIMIC-CXR", "mimic_cxr"), _has_any(*_MIMIC_SPLIT_FILES),
                                {"task": "summary"}, text_only=True),
    "pmc_vqa_hard": Source(_S + "medix:load_pmc_vqa_hard", "PMC-VQA-Hard",
                           "https://huggingface.co/datasets/sahalshajim/medix-eval-sets (config pmc_vqa_hard; "
                           "or PMC-VQA's test_2.csv)",
                           ("medix-eval-sets", "medix_eval_sets", "pmc_vqa", "PMC-VQA", "pmcvqa"),
                           _has_any("pmc_vqa_hard", "test_2.csv")),
    # MediX-R1's evaluation collection (sahalshajim/medix-eval-sets): the items of its Table 2
    **{f"medix_{task}": Source(_S + "medix:load_medix_eval", f"MediX-R1 evaluation collection ({task})",
                               "https://huggingface.co/datasets/sahalshajim/medix-eval-sets",
                               ("medix-eval-sets", "medix_eval_sets", "sahalshajim-medix-eval-sets"),
                               _has_any(config), {"task": task}, text_only=task in ("pubmedqa", "mimic_cxr_summary"))
       for task, config in (("pubmedqa", "pubmedqa"), ("pmc_vqa", "pmc_vqa"), ("pmc_vqa_hard", "pmc_vqa_hard"),
                            ("mimic_cxr_report", "mimic_cxr"), ("mimic_cxr_summary", "mimic_cxr"))},
    # training sets
    "medix_rl": Source(_S + "medix:load_medix_rl", "MediX-R1 RL data",
                       "https://huggingface.co/datasets/MBZUAI/medix-rl-data",
                       ("medix-rl-data", "medix_rl_data", "MBZUAI-medix-rl-data", "medix_rl"), _has_parquet),
    "med_zero_17k": Source(_S + "rl_sets:load_med_zero_17k", "Med-Zero-17K (CAPO)",
                           "CAPO (arXiv 2506.12849) announces its release", ("Med-Zero-17K", "med_zero_17k")),
    "mulberry_cot": Source(_S + "rl_sets:load_mulberry_cot", "Mulberry SFT data (StepGRPO warm-up)",
                           "https://huggingface.co/datasets/HuanjinYao/Mulberry-SFT",
                           ("Mulberry-SFT", "mulberry", "mulberry_cot")),
    # generated on the fly (medrl.data.sources.phantom): phantom:train, phantom:test
    "phantom": Source(_S + "phantom:load_phantom", "phantom (synthetic, generated)", "generated by medrl",
                      needs_files=False),
}


def _vqa_med_2021_present(p: Path) -> bool:
    return any(next(p.rglob(name), None) is not None for name in VQA_MED_2021_ANSWER_FILES)


def _mimic_cxr_vqa_present(p: Path) -> bool:
    return any((p / d).is_dir() for d in MIMIC_CXR_VQA_DATASET_DIRS)


#: Named sources (the names of :data:`SOURCES`).
DATASETS = tuple(SOURCES)
#: Sources whose records carry no image (validation does not ask for one).
TEXT_ONLY = tuple(n for n, s in SOURCES.items() if s.text_only)
#: The same table in the old shape: name -> (module, loader function, fixed keyword arguments).
LOADERS: dict[str, tuple[str, str, dict]] = {
    n: (s.loader.partition(":")[0], s.loader.partition(":")[2], dict(s.fixed)) for n, s in SOURCES.items()}


# --------------------------------------------------------------------------- suites
class SuiteItem(tuple):
    """One evaluation set of a suite: unpacks as ``(spec, url)``; ``prefer`` names sources tried
    before the spec's own (the paper's own copy of the items, when present)."""

    def __new__(cls, spec: str, url: str, prefer: tuple[str, ...] = ()):
        item = super().__new__(cls, (spec, url))
        item.prefer = tuple(prefer)
        return item

    @property
    def spec(self) -> str:
        return self[0]


def _items(*rows) -> tuple[SuiteItem, ...]:
    return tuple(SuiteItem(*r) for r in rows)


_MEDIX_EVAL = "https://huggingface.co/datasets/sahalshajim/medix-eval-sets"

#: ``medrl eval --suite NAME``: the suite's evaluation sets (source spec, where to get it).
SUITES: dict[str, tuple[SuiteItem, ...]] = {
    # HuatuoGPT-Vision (Chen et al. 2024) Table 3
    "huatuo": _items(
        ("vqa_rad:test", "https://osf.io/89kps/ (or hf flaviagiammarino/vqa-rad)"),
        ("slake:test", "https://www.med-vqa.com/slake/ (or hf BoKelvin/SLAKE)"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA (or hf flaviagiammarino/path-vqa)"),
        ("pmc_vqa_mc:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("omnimedvqa:test", "https://huggingface.co/datasets/foreverbeliever/OmniMedVQA"),
        ("mmmu_med:validation", "https://huggingface.co/datasets/MMMU/MMMU"),
    ),
    # MRPO (arXiv 2606.31825) Sec. 5.1, App. C.1, Table 2: 3 in-distribution + 5 out-of-distribution
    # sets, open-ended questions (--protocol mrpo keeps only those)
    "mrpo": _items(
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
    "armed": _items(
        ("vqa_rad:test", "https://osf.io/89kps/"),
        ("slake:test", "https://www.med-vqa.com/slake/"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA"),
        ("vqa_med_2019:validation", "https://github.com/abachaa/VQA-Med-2019"),
        ("pmc_vqa_mc:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("medxpertqa_mm:test", "https://huggingface.co/datasets/TsinghuaC3I/MedXpertQA"),
    ),
    # CAPO (arXiv 2506.12849) Tables 1-4: VQA-RAD, SLAKE, PathVQA, PMC-VQA; out of distribution
    # OmniMedVQA (open access) and MMMU Health & Medicine
    "capo": _items(
        ("vqa_rad:test", "https://osf.io/89kps/"),
        ("slake:test", "https://www.med-vqa.com/slake/"),
        ("pathvqa:test", "https://github.com/UCSD-AI4H/PathVQA"),
        ("pmc_vqa_mc:test", "https://huggingface.co/datasets/xmcmic/PMC-VQA"),
        ("omnimedvqa:test", "https://huggingface.co/datasets/foreverbeliever/OmniMedVQA"),
        ("mmmu_med:validation", "https://huggingface.co/datasets/MMMU/MMMU"),
    ),
    # MediX-R1 (arXiv 2602.23363) Table 2: 11 text-only + 6 image+text evaluation sets, the tasks of its
    # evaluation task list (eval/tasks.yaml of github.com/mbzuai-oryx/MediX-R1). Where its
    # evaluation collection (medix-eval-sets) holds a task, that copy's items come first.
    "medix": (
        *(SuiteItem(f"mmlu_{s}:test", "https://huggingface.co/datasets/cais/mmlu (MediX-R1 reads hails/mmlu_no_train)")
          for s in MMLU_MED_SUBJECTS),
        SuiteItem("medmcqa:validation", "https://huggingface.co/datasets/openlifescienceai/medmcqa"),
        SuiteItem("medqa:test", "https://huggingface.co/datasets/GBaker/MedQA-USMLE-4-options-hf"),
        SuiteItem("usmle_sa:test", "https://huggingface.co/datasets/HuggingSara/usmle_self_assessment"),
        SuiteItem("pubmedqa:test", _MEDIX_EVAL + " (config pubmedqa)", ("medix_pubmedqa",)),
        SuiteItem("mimic_cxr_summary:test", _MEDIX_EVAL + " (config mimic_cxr)",
                  ("medix_mimic_cxr_summary",)),
        SuiteItem("slake:test", "https://huggingface.co/datasets/BoKelvin/SLAKE"),
        SuiteItem("vqa_rad:test", "https://huggingface.co/datasets/flaviagiammarino/vqa-rad"),
        SuiteItem("pathvqa:test", "https://huggingface.co/datasets/flaviagiammarino/path-vqa"),
        SuiteItem("pmc_vqa_mc:test", _MEDIX_EVAL + " (config pmc_vqa)", ("medix_pmc_vqa",)),
        SuiteItem("pmc_vqa_hard:test", _MEDIX_EVAL + " (config pmc_vqa_hard)", ("medix_pmc_vqa_hard",)),
        SuiteItem("mimic_cxr_report:test", _MEDIX_EVAL + " (config mimic_cxr; images: PhysioNet, credentialed)",
                  ("medix_mimic_cxr_report",)),
    ),
}

#: Sources a suite evaluates as out-of-distribution (``--ood``); the others go to ``--data``.
SUITE_OOD: dict[str, frozenset[str]] = {
    "mrpo": frozenset({"pmc_vqa", "vqa_med_2021", "quilt_vqa", "radimagenet_vqa", "mimic_cxr_vqa"}),
    "armed": frozenset({"vqa_med_2019", "pmc_vqa_mc", "medxpertqa_mm"}),
    "capo": frozenset({"omnimedvqa", "mmmu_med"}),
}

#: A suite's source may be present as its Hugging Face copy instead.
SUITE_FALLBACK = {"vqa_rad": "vqa_rad_hf", "slake": "slake_hf", "pathvqa": "pathvqa_hf"}


# --------------------------------------------------------------------------- finding sources
class DataNotFoundError(DataError):
    """A named dataset is in none of the data folders (the message lists them)."""


def _source(name: str) -> Source:
    if name not in SOURCES:
        raise DataError(f"unknown data source {name!r}; use one of {list(SOURCES)}")
    return SOURCES[name]


def find_root(name: str, data_dir: str | os.PathLike) -> Path:
    """The folder of source ``name`` under ``data_dir``; :class:`DataError` naming the folders
    tried and where to get it when absent."""
    src = _source(name)
    if src.finder:
        mod, _, fn = src.finder.partition(":")
        return Path(getattr(importlib.import_module(mod), fn)(Path(data_dir)))
    if not src.needs_files:
        from medrl.common.paths import cache_dir

        return cache_dir()
    for folder in src.folders:
        c = Path(data_dir) / folder
        if src.check(c):
            return c.resolve()
    raise DataError(f"{src.title or name} not found under {data_dir}: expected one of "
                    f"{[str(Path(data_dir) / n) for n in src.folders]}. Get it from {src.url} - see docs/data.md.")


def find_source(name: str, data_dir: str | os.PathLike) -> Path | None:
    """The folder a named source would load from under ``data_dir``, or None when it is absent
    (only folder checks, nothing is loaded; ``medrl eval --suite`` uses this)."""
    _source(name)
    try:
        return find_root(name, data_dir)
    except DataError:
        return None


def locate_source(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The data folder that holds the named source ``name``: each candidate of
    :func:`medrl.common.paths.data_candidates` (``--data-dir``; else ``$MEDRL_DATA_DIR``, ``./data``,
    ``../shared/data``) is checked for that dataset, so an unrelated ``./data`` never hides the
    folder that has it. Raises :class:`DataNotFoundError` listing the folders looked in."""
    from medrl.common.paths import find_data_root

    if not _source(name).needs_files:
        return Path(data_dir or ".")

    def has(root: Path) -> bool:
        try:
            return find_source(name, root) is not None
        except OSError:  # an unreadable folder does not hold it
            return False

    try:
        return find_data_root(name, has, data_dir)
    except FileNotFoundError as exc:
        src = SOURCES[name]
        where = f" in a folder named {' or '.join(src.folders[:3])}" if src.folders else ""
        raise DataNotFoundError(f"{exc} {name} is {src.title}: get it from {src.url}{where} "
                                "(`medrl data sources` lists every source).") from None


def first_present(specs, data_dir: str | os.PathLike | None = None) -> str | None:
    """The first of ``specs`` (``name[:split]``) whose named source is in one of the data folders,
    or None. A recipe that prefers its paper's data (``medix_rl:train`` for MediX-R1) uses it to
    train on that data when present and fall back otherwise."""
    for spec in specs:
        name = parse_source(spec)[0]
        if name in SOURCES:
            try:
                locate_source(name, data_dir)
                return spec
            except DataNotFoundError:
                continue
    return None


def suite_specs(name: str, data_dir: str | Path | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """``(present specs, [(missing spec, why)])`` of a suite under ``data_dir``. For each
    evaluation set the first present of: the sources the suite prefers for it (its paper's own copy),
    the spec's source, its Hugging Face copy (:data:`SUITE_FALLBACK`)."""
    from medrl.common.paths import data_roots

    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    roots = data_roots(data_dir)
    present, missing = [], []
    for item in SUITES[name]:
        spec, url = item
        src, _, split = spec.partition(":")
        candidates = [*getattr(item, "prefer", ()), src, *([SUITE_FALLBACK[src]] if src in SUITE_FALLBACK else [])]
        found = next((c for c in candidates if any(find_source(c, root) is not None for root in roots)), None)
        if found is None:
            missing.append((spec, f"get it from {url}"))
        else:
            present.append(f"{found}:{split}" if split else found)
    return present, missing


# --------------------------------------------------------------------------- loading
def parse_source(source: str) -> tuple[str, str | None, str | None]:
    """``"vqa_rad:test"`` -> ("vqa_rad", None, "test"); ``"jsonl:/x.jsonl"`` -> ("jsonl", "/x.jsonl", None)."""
    if source.startswith(("jsonl:", "hf:")):
        kind, _, rest = source.partition(":")
        return kind, rest, None
    name, _, split = source.partition(":")
    return name, None, split or None


def load_records(
    source: str,
    split: str | None = None,
    data_dir: str | os.PathLike | None = None,
    open_only: bool | str = False,
    *,
    lang: str | None = "en",
    dedup: bool | str = False,
    validate: bool = True,
    skip_invalid: bool = False,
    report: dict | None = None,
    rationales: str | os.PathLike | None = None,
    limit: int | None = None,
    **kw,
) -> list[VQARecord]:
    """Load, validate and filter records.

    ``open_only``: False, True (= "papers"), or a mode of :mod:`medrl.data.filters`.
    ``lang``: keep this language (SLAKE is bilingual; None keeps all). ``dedup``: False, True
    (image+question+answer) or a key name. ``validate``: check every image opens and question and
    answer are non-empty; a bad record raises :class:`DataError` naming file and record, unless
    ``skip_invalid`` (then counted in ``report``). ``rationales``: a MedThink file whose
    rationales become ``gold_reasoning`` (match counts in ``report["medthink"]``). ``limit``: keep
    the first N after filtering. Other keywords go to the dataset loader (``layout="mevf"`` for
    VQA-RAD, ``with_choices=True`` for PMC-VQA).
    """
    kind, path, src_split = parse_source(source)
    split = split or src_split
    report = report if report is not None else {}
    roots = None  # jsonl/hf sources confine their own image paths (medrl.data.record, medrl.data.hf)
    if kw and kind in ("jsonl", "hf"):
        raise TypeError(f"unexpected options for {kind}: {sorted(kw)}")
    if kind == "jsonl":
        records = read_jsonl(path, skip_invalid=skip_invalid, report=report)
        if split:
            records = [r for r in records if r.split == split]
        where = path
    elif kind == "hf":
        from medrl.data.hf import load_hf_records

        records = load_hf_records(path, split)
        where = path
    elif kind in SOURCES:
        src = SOURCES[kind]
        # the folder that holds this dataset (a loader given its own path= needs none)
        root = locate_source(kind, data_dir) if not kw.get("path") else Path(data_dir or ".")
        if kind in ("slake", "slake_hf"):
            kw.setdefault("lang", lang)
        if kind == "slake":
            kw.setdefault("report", report)
        records = src.function()(Path(root), split, **{**src.fixed, **kw})
        where = f"{kind} in {root}"
        # image paths must stay inside the folder the dataset was found in (or medrl's cache,
        # where the hub-copy loaders write the images they extract)
        from medrl.common.paths import cache_dir

        roots = [root, cache_dir() / "hf_images"] + ([cache_dir()] if not src.needs_files else [])
    else:
        raise DataError(f"unknown data source {source!r}; use one of {list(DATASETS)}, 'jsonl:<path>' or "
                        "'hf:<folder or hub id>'")
    if lang is not None and any(r.extras.get("lang") for r in records):
        records = filter_language(records, lang)
    if validate:
        records = validate_records(records, where=str(where), skip_invalid=skip_invalid, report=report,
                                   check_duplicates=dedup != "id",
                                   require_image=kind not in TEXT_ONLY, roots=roots)
    if rationales:  # MedThink's rationale files are a source family too: reached by name, like every loader
        attach_rationales = getattr(importlib.import_module("medrl.data.sources.medthink"), "attach_rationales")
        records, report["medthink"] = attach_rationales(records, rationales)
    if open_only:
        records = filter_open(records, open_only)
    if dedup:
        records = deduplicate(records, "image_question_answer" if dedup is True else dedup, report)
    if limit is not None:
        records = records[:limit]
    return records


# --------------------------------------------------------------------------- source identity
def source_identity(source: str, split: str | None = None, data_dir: str | os.PathLike | None = None) -> tuple:
    """What ``source`` (a ``load_records`` spec) reads, spelled one way: a file or folder by its
    resolved path (``a.jsonl``, ``./a.jsonl``, ``x/../a.jsonl`` and a symlink to it are one),
    a named dataset by its name and the resolved data folder; plus the split."""
    kind, path, src_split = parse_source(source)
    split = split or src_split
    if kind in ("jsonl", "hf") and path:
        p = os.path.realpath(os.path.expanduser(path)) if kind == "jsonl" or os.path.exists(path) else path
        return kind, p, split
    try:
        from medrl.common.paths import data_root

        root = os.path.realpath(data_root(data_dir))
    except (FileNotFoundError, OSError):
        root = None
    return kind, root, split


def refuse_duplicate_sources(specs, data_dir: str | os.PathLike | None = None) -> None:
    """Raise :class:`DataError` when two dataset specs read the same source (by
    :func:`source_identity`): evaluated twice, one file would count as two datasets in the
    macro averages. ``specs``: ``(spec as given, source, split)``."""
    seen: dict[tuple, str] = {}
    for spec, source, split in specs:
        key = source_identity(source, split, data_dir)
        if key in seen:
            what = f"the same file {key[1]}" if key[0] in ("jsonl", "hf") else f"the same dataset {key[0]}"
            raise DataError(f"dataset specs {seen[key]!r} and {spec!r} name {what}"
                            f"{f' (split {key[2]})' if key[2] else ''}: refused as a duplicate source; "
                            "give each dataset once")
        seen[key] = spec
