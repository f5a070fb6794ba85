"""The data registry: one table of sources and suites, one load_records, no import circle, and
the judge labels as package data."""

import pytest

from medrl.data import registry
from medrl.data.registry import DATASETS, SOURCES, SUITES, TEXT_ONLY, find_source, load_records


def test_every_source_names_a_loader_that_exists():
    for name, src in SOURCES.items():
        assert callable(src.function()), name
        if src.finder:
            mod, _, fn = src.finder.partition(":")
            assert callable(getattr(__import__(mod, fromlist=[fn]), fn)), name
        assert src.folders or src.finder or not src.needs_files, name
    assert DATASETS == tuple(SOURCES) and set(TEXT_ONLY) <= set(SOURCES)
    assert {"medqa", "usmle_sa", "mimic_cxr_summary", "medix_pubmedqa"} <= set(TEXT_ONLY)
    assert "vqa_rad" not in TEXT_ONLY and "medix_mimic_cxr_report" not in TEXT_ONLY


def test_every_suite_spec_is_a_registered_source():
    for suite, items in SUITES.items():
        for item in items:
            spec, url = item
            assert spec.partition(":")[0] in SOURCES and url, (suite, spec)
            assert all(alt in SOURCES for alt in item.prefer), (suite, spec)


def test_absent_source_is_none_and_unknown_is_an_error(tmp_path):
    assert find_source("omnimedvqa", tmp_path) is None
    with pytest.raises(registry.DataError, match="unknown data source 'nope'"):
        find_source("nope", tmp_path)


def test_phantom_is_registered_and_generated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    assert not SOURCES["phantom"].needs_files
    recs = load_records("phantom:test", n=2)
    assert len(recs) == 2 and all(r.images for r in recs) and recs[0].split == "test"


def test_no_import_circle_in_medrl_data():
    """The registry reaches loaders by name (importlib), loaders look up their folders in its
    table: every import between the two points one way."""
    grimp = pytest.importorskip("grimp")
    g = grimp.build_graph("medrl")
    assert g.find_shortest_chain(importer="medrl.data.validate", imported="medrl.data.registry") is None
    for mod in g.find_descendants("medrl.data.sources"):
        assert g.find_shortest_chain(importer="medrl.data.registry", imported=mod) is None, mod


def test_judge_labels_are_package_data_under_judges():
    from medrl.judges.labels import JUDGE_AGREEMENT, JUDGE_DEV

    assert JUDGE_DEV.is_file() and JUDGE_AGREEMENT.is_file() and JUDGE_DEV.parent.name == "labels"


def test_data_sources_command_lists_table_and_presence(tmp_path, capsys):
    import json

    from medrl.cli import main

    (tmp_path / "OmniMedVQA" / "QA_information").mkdir(parents=True)
    assert main(["data", "sources", "--data-dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sources"]["omnimedvqa"]["found"] == str((tmp_path / "OmniMedVQA").resolve())
    assert out["sources"]["usmle_sa"]["found"] is None and "HuggingSara" in out["sources"]["usmle_sa"]["url"]
    assert out["sources"]["phantom"]["found"] == "generated" and len(out["suites"]["medix"]) == 17


def test_first_present_picks_the_papers_data_when_there(tmp_path, monkeypatch):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    from medrl.data.registry import first_present

    monkeypatch.setenv("MEDRL_DATA_DIR", str(tmp_path))
    assert first_present(["medix_rl:train"], tmp_path) is None
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, format="PNG")
    (tmp_path / "medix-rl-data" / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"id": "a", "image": [{"bytes": buf.getvalue(), "path": "a.png"}],
                                          "source": "x", "problem": "q?", "solution": "<CT_SCAN> liver"}]),
                   tmp_path / "medix-rl-data" / "data" / "train-00000-of-00001.parquet")
    assert first_present(["medix_rl:train", "vqa_rad:train"], tmp_path) == "medix_rl:train"
