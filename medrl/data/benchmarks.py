"""Old import path of the dataset loaders and suites.

The loaders are *sources* now, one file per dataset family under :mod:`medrl.data.sources`; the
suites (``medrl eval --suite``) are in :mod:`medrl.data.registry`. The names this module used to
define resolve to their new homes, so old imports keep working.
"""

from __future__ import annotations

import importlib

_MOVED = {
    # the registry
    **{n: "medrl.data.registry" for n in ("SUITES", "SUITE_OOD", "_SUITE_FALLBACK", "SUITE_FALLBACK",
                                          "MMLU_MED_SUBJECTS", "MMMU_MED_SUBJECTS", "find_root")},
    # helpers
    "mcq_record": "medrl.data.sources._common",
    # loaders
    "load_vqa_rad_hf": "medrl.data.sources.hf_copies", "load_pathvqa_hf": "medrl.data.sources.hf_copies",
    "load_slake_hf": "medrl.data.sources.hf_copies", "load_omnimedvqa": "medrl.data.sources.omnimedvqa",
    "load_mmmu_med": "medrl.data.sources.mmmu", "load_medxpertqa_mm": "medrl.data.sources.medxpertqa",
    "load_medqa": "medrl.data.sources.text_mcq", "load_medmcqa": "medrl.data.sources.text_mcq",
    "load_pubmedqa": "medrl.data.sources.text_mcq", "load_vqa_med_2019": "medrl.data.sources.vqa_med",
    "load_vqa_med_2021": "medrl.data.sources.vqa_med", "load_quilt_vqa": "medrl.data.sources.quilt_vqa",
    "load_radimagenet_vqa": "medrl.data.sources.radimagenet_vqa", "load_mimic_cxr_vqa": "medrl.data.sources.mimic_cxr",
    "load_mmlu_med": "medrl.data.sources.mmlu", "load_usmle_sa": "medrl.data.sources.usmle_sa",
    "load_mimic_cxr_report": "medrl.data.sources.mimic_cxr", "load_pmc_vqa_hard": "medrl.data.sources.medix",
    "load_med_zero_17k": "medrl.data.sources.rl_sets", "load_mulberry_cot": "medrl.data.sources.rl_sets",
}


def __getattr__(name: str):
    if name in _MOVED:
        return getattr(importlib.import_module(_MOVED[name]), name)
    if name in ("TEXT_ONLY", "EXTRA_TEXT_ONLY"):
        from medrl.data.registry import TEXT_ONLY

        return TEXT_ONLY
    raise AttributeError(f"module 'medrl.data.benchmarks' has no attribute {name!r}")
