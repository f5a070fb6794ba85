"""MediX-R1's own data, on fixtures written in the published layouts.

Sources (github.com/mbzuai-oryx/MediX-R1): ``eval/tasks.yaml`` names the evaluation collection
``sahalshajim/medix-eval-sets`` with configs ``pubmedqa`` (CONTEXTS, QUESTION, final_decision,
LONG_ANSWER), ``mimic_cxr`` (image URL, report, summary), ``pmc_vqa`` (question, answer,
choices, image) and ``pmc_vqa_hard`` (question, answer, image), each split ``test``; the
other tasks read HuggingSara/usmle_self_assessment, GBaker/MedQA-USMLE-4-options-hf,
hails/mmlu_no_train, openlifescienceai/medmcqa and the VQA-RAD / SLAKE / PathVQA hub copies.
``training/README.md`` and the dataset card of ``MBZUAI/medix-rl-data`` give its columns
(id, image list, source, problem, solution) and ``data/{train,test}-*`` files; the reward
function (``examples/reward_function/medical.py``) reads the solution's leading ``<TAG>``.
"""

import json

import pytest

from medrl.data import DataError, load_records
from layout_files import png as _png, write_parquet as _pq


MIMIC_URL = "https://physionet.org/files/mimic-cxr-jpg/2.0.0/files/p10/p10000032/s50414267/{}.jpg"


def medix_eval_sets(root):
    """``<root>/medix-eval-sets/<config>/test-00000-of-00001.parquet`` for the four configs, and the
    MIMIC-CXR-JPG files the mimic_cxr rows point at, downloaded beside it."""
    coll = root / "medix-eval-sets"
    _pq(coll / "pubmedqa" / "test-00000-of-00001.parquet", [
        {"CONTEXTS": ["Aspirin lowered the rate of stroke.", "Second passage."], "QUESTION": "Does aspirin prevent stroke?",
         "final_decision": "yes", "LONG_ANSWER": "It lowered the rate."},
        {"CONTEXTS": ["No difference was seen."], "QUESTION": "Does X help?", "final_decision": "no",
         "LONG_ANSWER": "No."}])
    img = {"bytes": _png(), "path": "fig.png"}
    _pq(coll / "pmc_vqa" / "test-00000-of-00001.parquet", [
        {"question": "Which imaging modality is shown?", "answer": "MRI", "choices": ["A:CT", "B:MRI", "C:X-ray", "D:US"],
         "image": img},
        {"question": "Which organ?", "answer": "A", "choices": ["A:liver", "B:lung"], "image": img}])
    _pq(coll / "pmc_vqa_hard" / "test-00000-of-00001.parquet", [
        {"question": "What abnormality is seen in the left lobe?", "answer": "a hypodense lesion", "image": img},
        {"question": "Describe the enhancement pattern.", "answer": "peripheral nodular enhancement", "image": img}])
    _pq(coll / "mimic_cxr" / "test-00000-of-00001.parquet", [
        {"image": MIMIC_URL.format("d1"), "report": "FINDINGS: Clear lungs. IMPRESSION: No acute process.",
         "summary": "No acute process."}])
    jpg = root / "mimic-cxr-jpg" / "2.0.0" / "files" / "p10" / "p10000032" / "s50414267"
    jpg.mkdir(parents=True)
    (jpg / "d1.jpg").write_bytes(_png((1, 2, 3)))
    return coll


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))


def test_evaluation_collection_tasks(tmp_path, cache):
    medix_eval_sets(tmp_path)
    pub = load_records("medix_pubmedqa", split="test", data_dir=tmp_path)
    assert [r.answer for r in pub] == ["yes", "no"] and not pub[0].images
    assert pub[0].question.startswith("Context: Aspirin lowered") and "Second passage" not in pub[0].question
    assert pub[0].extras["long_answer"] == "It lowered the rate." and pub[0].extras["choices"] == ["yes", "no", "maybe"]
    mc = load_records("medix_pmc_vqa", split="test", data_dir=tmp_path)
    assert [r.answer for r in mc] == ["MRI", "liver"] and mc[0].extras["choices"] == ["CT", "MRI", "X-ray", "US"]
    assert all(r.images for r in mc)
    hard = load_records("medix_pmc_vqa_hard", split="test", data_dir=tmp_path)
    assert [r.open_ended for r in hard] == [True, True] and "choices" not in hard[0].extras
    gen = load_records("medix_mimic_cxr_report", split="test", data_dir=tmp_path)
    assert gen[0].answer.startswith("FINDINGS: Clear lungs") and gen[0].images[0].endswith(
        "mimic-cxr-jpg/2.0.0/files/p10/p10000032/s50414267/d1.jpg") and gen[0].extras["task"] == "report"
    summ = load_records("medix_mimic_cxr_summary", split="test", data_dir=tmp_path)
    assert summ[0].answer == "No acute process." and "Clear lungs" in summ[0].question and not summ[0].images


def test_pmc_vqa_hard_reads_the_collection_before_test_2(tmp_path, cache):
    medix_eval_sets(tmp_path)
    recs = load_records("pmc_vqa_hard", split="test", data_dir=tmp_path)
    assert len(recs) == 2 and all(r.open_ended for r in recs) and recs[0].source == "pmc_vqa_hard"
    assert recs[0].id.startswith("pmc_vqa_hard-")


def test_missing_config_names_the_files_looked_for(tmp_path, cache):
    coll = medix_eval_sets(tmp_path)
    for f in (coll / "pubmedqa").iterdir():
        f.unlink()
    (coll / "pubmedqa" / "README").write_text("x")
    with pytest.raises(DataError, match=r"pubmedqa/test-\*\.parquet"):
        load_records("medix_pubmedqa", split="test", data_dir=tmp_path)


def test_mimic_image_not_downloaded_names_the_folders(tmp_path, cache):
    coll = medix_eval_sets(tmp_path)
    import shutil

    shutil.rmtree(tmp_path / "mimic-cxr-jpg")
    with pytest.raises(DataError, match="MIMIC-CXR-JPG images not found.*mimic-cxr-jpg/2.0.0/files"):
        load_records("medix_mimic_cxr_report", split="test", data_dir=tmp_path)
    # the flat folder a one-by-one download gives is read too
    (coll / "mimic_cxr" / "images").mkdir()
    (coll / "mimic_cxr" / "images" / "d1.jpg").write_bytes(_png())
    assert load_records("medix_mimic_cxr_report", split="test", data_dir=tmp_path)[0].images[0].endswith("images/d1.jpg")


def test_suite_medix_builds_its_items_from_the_collection(tmp_path, cache, capsys):
    """``medrl eval --suite medix``: the collection's copies replace the official layouts."""
    from medrl.commands.eval import _apply_suite
    from medrl.data.registry import SUITES

    medix_eval_sets(tmp_path)

    class M:
        suite, data_dir, data, ood = "medix", str(tmp_path), [], []
    _apply_suite(M)
    assert M.data == ["medix_pubmedqa:test", "medix_mimic_cxr_summary:test", "medix_pmc_vqa:test",
                      "medix_pmc_vqa_hard:test", "medix_mimic_cxr_report:test"] and M.ood == []
    assert len(SUITES["medix"]) == 17
    err = capsys.readouterr().err
    assert "usmle_sa:test missing" in err and "huggingface.co/datasets/HuggingSara/usmle_self_assessment" in err
    items = {spec: load_records(spec, data_dir=tmp_path) for spec in M.data}
    assert [len(v) for v in items.values()] == [2, 1, 2, 2, 1]


@pytest.mark.slow  # about 20 s on 2 cores (a tiny model generates for 8 items); the fast test above checks the item list
@pytest.mark.timeout(300)
def test_cli_eval_suite_medix_on_the_collection(tmp_path, cache, capsys):
    """The whole command on a tiny random model: its datasets are the collection's tasks."""
    from medrl.cli import main
    from medrl.models import build_tiny_vlm

    medix_eval_sets(tmp_path / "data")
    model = build_tiny_vlm(tmp_path / "model", hidden_size=32, num_layers=1)
    out = tmp_path / "ev"
    rc = main(["eval", "--model", str(model), "--suite", "medix", "--data-dir", str(tmp_path / "data"),
               "--judge", "reference", "--out", str(out), "--max-new-tokens", "4", "--bootstrap", "20",
               "--no-steps", "--no-text-metrics", "--rubric", "none"])
    assert rc == 0, capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["datasets"]) == {"medix_pubmedqa:test", "medix_mimic_cxr_summary:test", "medix_pmc_vqa:test",
                                        "medix_pmc_vqa_hard:test", "medix_mimic_cxr_report:test"}


def test_medix_rl_data_splits_the_modality_tag(tmp_path, cache):
    rows = [{"id": "r1", "image": [{"bytes": _png(), "path": "a.png"}], "source": "slake",
             "problem": "<image>Which organ is shown?", "solution": "<CT_SCAN> liver"},
            {"id": "r2", "image": [{"bytes": _png((2, 2, 2)), "path": "b.png"}], "source": "rad",
             "problem": "Is there a pneumothorax?", "solution": "<X_RAY>no"}]
    _pq(tmp_path / "medix-rl-data" / "data" / "train-00000-of-00001.parquet", rows)
    _pq(tmp_path / "medix-rl-data" / "data" / "test-00000-of-00001.parquet", rows[:1])
    recs = load_records("medix_rl", split="train", data_dir=tmp_path)
    assert [r.answer for r in recs] == ["liver", "no"] and [r.modality_tag for r in recs] == ["CT_SCAN", "X_RAY"]
    assert recs[0].question == "Which organ is shown?" and recs[0].extras["origin"] == "slake" and recs[0].images
    assert recs[0].id == "medix_rl-r1" and len(load_records("medix_rl", split="test", data_dir=tmp_path)) == 1
    rows[1]["solution"] = "no tag here"
    _pq(tmp_path / "medix-rl-data" / "data" / "train-00000-of-00001.parquet", rows)
    with pytest.raises(DataError, match="row 1.*MODALITY_TAG"):
        load_records("medix_rl", split="train", data_dir=tmp_path)
    report = {}
    assert len(load_records("medix_rl", split="train", data_dir=tmp_path, skip_invalid=True, report=report)) == 1


def test_med_zero_17k_drops_a_leading_modality_tag(tmp_path, cache):
    _pq(tmp_path / "Med-Zero-17K" / "data" / "train-00000-of-00001.parquet",
        [{"id": "a", "image": [{"bytes": _png(), "path": "a.png"}], "problem": "Finding?",
          "solution": "<X_RAY> pneumonia"}])
    rec = load_records("med_zero_17k", split="train", data_dir=tmp_path)[0]
    assert rec.answer == "pneumonia" and rec.modality_tag == "X_RAY"
