"""One module per source family (medrl/data/sources/): the registry's table points into each
module, every loader refuses a folder without its files with a DataError naming that folder, and
the old import paths of moved loaders still work."""

from __future__ import annotations

import importlib
import inspect

import pytest

from medrl.data.record import DataError
from medrl.data.registry import SOURCES

# every family module the table uses (named here so each is imported by module path)
FAMILIES = {
    "medrl.data.sources.hf_copies": {"vqa_rad_hf", "slake_hf", "pathvqa_hf"},
    "medrl.data.sources.medix": {"pmc_vqa_hard", "medix_pubmedqa", "medix_pmc_vqa", "medix_pmc_vqa_hard",
                                 "medix_mimic_cxr_report", "medix_mimic_cxr_summary", "medix_rl"},
    "medrl.data.sources.medxpertqa": {"medxpertqa_mm"},
    "medrl.data.sources.mimic_cxr": {"mimic_cxr_vqa", "mimic_cxr_report", "mimic_cxr_summary"},
    "medrl.data.sources.mmlu": {"mmlu_med", "mmlu_clinical_knowledge", "mmlu_college_biology",
                                "mmlu_college_medicine", "mmlu_medical_genetics", "mmlu_professional_medicine",
                                "mmlu_anatomy"},
    "medrl.data.sources.mmmu": {"mmmu_med"},
    "medrl.data.sources.omnimedvqa": {"omnimedvqa"},
    "medrl.data.sources.pathvqa": {"pathvqa"},
    "medrl.data.sources.pmc_vqa": {"pmc_vqa", "pmc_vqa_mc"},
    "medrl.data.sources.quilt_vqa": {"quilt_vqa"},
    "medrl.data.sources.radimagenet_vqa": {"radimagenet_vqa"},
    "medrl.data.sources.rl_sets": {"med_zero_17k", "mulberry_cot"},
    "medrl.data.sources.slake": {"slake"},
    "medrl.data.sources.text_mcq": {"medqa", "medmcqa", "pubmedqa"},
    "medrl.data.sources.usmle_sa": {"usmle_sa"},
    "medrl.data.sources.vqa_med": {"vqa_med_2019", "vqa_med_2021"},
    "medrl.data.sources.vqa_rad": {"vqa_rad"},
}


@pytest.mark.parametrize("module", sorted(FAMILIES))
def test_registry_loaders_live_in_their_family_module(module):
    mod = importlib.import_module(module)
    for name in FAMILIES[module]:
        fn = SOURCES[name].function()
        assert fn.__module__ == module, name
        assert getattr(mod, fn.__name__) is fn, name
    # and no source of the table is left out of this list (other than the generated phantom)
    named = set().union(*FAMILIES.values())
    assert {n for n, s in SOURCES.items() if s.needs_files} <= named


NEEDS_FILES = sorted(n for n, s in SOURCES.items() if s.needs_files)


@pytest.mark.parametrize("name", NEEDS_FILES)
def test_a_folder_without_the_files_is_a_data_error_naming_it(name, tmp_path):
    src = SOURCES[name]
    fn = src.function()
    empty = tmp_path / name
    empty.mkdir()
    with pytest.raises(DataError) as e:
        if "path" in inspect.signature(fn).parameters:
            fn(tmp_path, path=str(empty), **src.fixed)
        else:
            fn(empty, **src.fixed)
    assert str(empty) in str(e.value)


def test_slake_hf_split_file_missing_is_named(tmp_path):
    from medrl.data.sources.hf_copies import load_slake_hf

    with pytest.raises(DataError, match=r"SLAKE split file missing: .*validation\.json"):
        load_slake_hf(tmp_path, "validate", path=str(tmp_path))
    with pytest.raises(DataError, match=r"SLAKE has splits \['train', 'validate', 'test'\], not 'holdout'"):
        load_slake_hf(tmp_path, "holdout", path=str(tmp_path))


def test_slake_hf_without_split_files_names_the_folder_and_files(tmp_path):
    """With no split asked, a folder holding none of SLAKE's split files is an error (not ``[]``)."""
    from medrl.data.sources.hf_copies import load_slake_hf

    with pytest.raises(DataError) as e:
        load_slake_hf(tmp_path, None, path=str(tmp_path))
    msg = str(e.value)
    assert str(tmp_path) in msg and all(f in msg for f in ("train.json", "validation.json", "test.json"))


def test_quilt_vqa_without_parquet_names_the_files_looked_for(tmp_path):
    from medrl.data.sources.quilt_vqa import load_quilt_vqa

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "README.md").write_text("not a parquet file")
    for split in (None, "test"):
        with pytest.raises(DataError) as e:
            load_quilt_vqa(tmp_path, split, path=str(tmp_path))
        msg = str(e.value)
        assert str(tmp_path) in msg and "*.parquet" in msg and "None" not in msg
