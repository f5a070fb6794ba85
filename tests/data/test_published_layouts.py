"""Loaders read the public downloads as published: each fixture below is written in the layout
its source ships (the source is named in each test's docstring)."""

import gzip
import json

import pytest

from medrl.data import DataError, load_records
from layout_files import png as _png, write_png as _write_png, write_parquet as _pq


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))


# --------------------------------------------------------------------------- USMLE-SA
def test_usmle_sa_huggingsara_parquet(tmp_path):
    """HuggingSara/usmle_self_assessment (dataset card: options struct A..I, answer, question,
    answer_idx; one split "train" in data/train-*.parquet, 325 rows) - what MediX-R1 evaluates."""
    opts = {k: None for k in "ABCDEFGHI"}
    rows = [{"options": {**opts, "A": "Aspirin", "B": "Heparin", "C": "Warfarin"}, "answer": "Heparin",
             "question": "Which drug ...?", "answer_idx": "B"},
            {"options": {**opts, "A": "x", "B": "y"}, "answer": "x", "question": "Next step?", "answer_idx": "A"}]
    _pq(tmp_path / "usmle_self_assessment" / "data" / "train-00000-of-00001-153a9808c885c380.parquet", rows)
    recs = load_records("usmle_sa", split="test", data_dir=tmp_path)
    assert [r.answer for r in recs] == ["Heparin", "x"] and recs[0].extras["choices"] == ["Aspirin", "Heparin", "Warfarin"]
    assert recs[0].extras["answer_label"] == "B" and not recs[0].images


def test_usmle_sa_medalpaca_solutions_files(tmp_path):
    """medalpaca/medical_meadow_usmle_self_assessment: step{N}.json without answers, the answers in
    step{N}_solutions.json ({"<no>": letter}), image questions listed in question_with_images.json."""
    root = tmp_path / "medical_meadow_usmle_self_assessment"
    root.mkdir()
    (root / "step1.json").write_text(json.dumps([
        {"no": 1, "question": "A 25-year-old ...?", "options": {"A": "a", "B": "b", "C": "c"}},
        {"no": 2, "question": "Shown in the photograph ...?", "options": {"A": "a", "B": "b"}},
        {"no": 3, "question": "Which enzyme?", "options": {"A": "p", "B": "q"}}]))
    (root / "step1_solutions.json").write_text(json.dumps({"1": "C", "2": "A", "3": "b"}))
    (root / "step2.json").write_text(json.dumps([{"no": 1, "question": "Next?", "options": {"A": "x", "B": "y"}}]))
    (root / "step2_solutions.json").write_text(json.dumps({"1": "B"}))
    (root / "question_with_images.json").write_text(json.dumps({"step1": [1], "step2": [], "step3": []}))
    recs = load_records("usmle_sa", split="test", data_dir=tmp_path)
    assert [(r.extras["step"], r.answer) for r in recs] == [("step1", "c"), ("step1", "q"), ("step2", "y")]
    (root / "step1_solutions.json").unlink()
    (root / "step2_solutions.json").unlink()
    with pytest.raises(DataError, match="step1_solutions.json"):
        load_records("usmle_sa", split="test", data_dir=tmp_path)


# --------------------------------------------------------------------------- MedQA (GBaker)
def test_medqa_gbaker_hub_copy(tmp_path):
    """GBaker/MedQA-USMLE-4-options-hf (MediX-R1's MedQA): sent1, ending0..3, label (0-3)."""
    rows = [{"id": "q1", "sent1": "A 30-year-old ...?", "sent2": "", "ending0": "a", "ending1": "b", "ending2": "c",
             "ending3": "d", "label": 2}]
    _pq(tmp_path / "MedQA-USMLE-4-options-hf" / "data" / "test-00000-of-00001.parquet", rows)
    rec = load_records("medqa", split="test", data_dir=tmp_path)[0]
    assert rec.answer == "c" and rec.extras["answer_label"] == "C" and rec.id == "medqa-test-q1"


# --------------------------------------------------------------------------- VQA-Med 2021
def test_vqa_med_2021_evaluator_files_and_nested_images(tmp_path):
    """github.com/abachaa/VQA-Med-2021: EvaluationCode/data/resources/
    Task1-VQAnswering2021-Test-ReferenceAnswers-4Evaluator.txt (image_id|answer|alternatives) and
    ..._ReferenceQuestions_mscoco_format_vqa.json ({"questions": [{question, question_id}]}); the
    500 images in a VQA-500-Images folder inside images/."""
    root = tmp_path / "VQA-Med-2021"
    res = root / "EvaluationCode" / "data" / "resources"
    res.mkdir(parents=True)
    (res / "Task1-VQAnswering2021-Test-ReferenceAnswers-4Evaluator.txt").write_text(
        "synpic37231|pulmonary embolism\nsynpic51484|osteopoikilosis|osteosclerotic lesions\n")
    (res / "Task1-VQAnswering2021-Test-ReferenceQuestions_mscoco_format_vqa.json").write_text(json.dumps(
        {"info": "", "task_type": "vqa_imageclef_2021", "data_type": "questions",
         "questions": [{"question": "what is the primary abnormality in this image?", "question_id": "synpic37231"},
                       {"question": "what abnormality is seen?", "question_id": "synpic51484"}]}))
    for i in ("synpic37231", "synpic51484"):
        _write_png(root / "images" / "VQA-500-Images" / f"{i}.jpg")
    recs = load_records("vqa_med_2021", split="test", data_dir=tmp_path)
    assert [r.id for r in recs] == ["vqamed21-synpic37231"] and recs[0].answer == "pulmonary embolism"
    assert "images/VQA-500-Images" in recs[0].images[0]
    (res / "Task1-VQAnswering2021-Test-ReferenceQuestions_mscoco_format_vqa.json").unlink()
    with pytest.raises(DataError, match="Task1-VQA-2021-TestSet-Questions.txt"):
        load_records("vqa_med_2021", split="test", data_dir=tmp_path)


# --------------------------------------------------------------------------- RadImageNet-VQA
def test_radimagenet_vqa_metadata_and_shard_ids(tmp_path, cache):
    """raidium/RadImageNet-VQA: modality and location inside the ``metadata`` struct; several
    parquet shards of one split."""
    img = {"bytes": _png(), "path": "x.png"}
    row = {"image": img, "question": "Which organ?", "answer": "liver", "question_type": "open", "choices": None,
           "metadata": {"modality": "CT", "location": "abdomen", "content_type": "anatomy"}}
    _pq(tmp_path / "RadImageNet-VQA" / "benchmark" / "test-00000-of-00002.parquet", [row])
    _pq(tmp_path / "RadImageNet-VQA" / "benchmark" / "test-00001-of-00002.parquet",
        [{**row, "metadata": {"modality": "MRI", "location": "brain"}, "answer": "brain"}])
    recs = load_records("radimagenet_vqa", split="test", data_dir=tmp_path)
    assert [r.id for r in recs] == ["radimagenet-test-00000-of-00002-0", "radimagenet-test-00001-of-00002-0"]
    assert [(r.modality, r.organ, r.modality_tag) for r in recs] == [("CT", "abdomen", "CT_SCAN"),
                                                                      ("MRI", "brain", "MRI_SCAN")]
    assert recs[0].extras["content_type"] == "anatomy"


# --------------------------------------------------------------------------- MIMIC-CXR
def _mimic_vqa_items():
    return [{"idx": 0, "image_id": "a", "image_path": "p10/p10000032/s50414267/a.jpg",
             "question": "List the abnormalities in the left lung.", "semantic_type": "query",
             "content_type": "abnormality", "template": "t1", "answer": ["atelectasis"]}]


def test_mimic_cxr_vqa_physionet_download_with_separate_jpg(tmp_path):
    """PhysioNet mimic-ext-mimic-cxr-vqa/1.0.0: mimiccxrvqa/dataset/{train,valid,test}.json, no
    images; image_path is relative to MIMIC-CXR-JPG's files/ (mimic-cxr-jpg/2.0.0/files), a
    separate download beside it."""
    ds = tmp_path / "mimic-ext-mimic-cxr-vqa" / "1.0.0" / "mimiccxrvqa" / "dataset"
    ds.mkdir(parents=True)
    (ds / "test.json").write_text(json.dumps(_mimic_vqa_items()))
    with pytest.raises(DataError, match="MIMIC-CXR-JPG images not found.*mimic-cxr-jpg/2.0.0/files"):
        load_records("mimic_cxr_vqa", split="test", data_dir=tmp_path)
    _write_png(tmp_path / "mimic-cxr-jpg" / "2.0.0" / "files" / "p10" / "p10000032" / "s50414267" / "a.jpg")
    recs = load_records("mimic_cxr_vqa", split="test", data_dir=tmp_path)
    assert recs[0].answer == "atelectasis" and recs[0].images[0].endswith("2.0.0/files/p10/p10000032/s50414267/a.jpg")


def test_mimic_cxr_report_reads_the_gzipped_split_file(tmp_path):
    """MIMIC-CXR-JPG ships mimic-cxr-2.0.0-split.csv.gz; reports are files/pNN/p<subject>/s<study>.txt."""
    root = tmp_path / "mimic-cxr"
    folder = root / "files" / "p10" / "p10000001"
    folder.mkdir(parents=True)
    with gzip.open(root / "mimic-cxr-2.0.0-split.csv.gz", "wt") as fh:
        fh.write("dicom_id,study_id,subject_id,split\nd1,50000001,10000001,test\n")
    (folder / "s50000001.txt").write_text("FINDINGS: Clear.\nIMPRESSION: Normal.")
    _write_png(folder / "s50000001" / "d1.jpg")
    recs = load_records("mimic_cxr_summary", split="test", data_dir=tmp_path)
    assert recs[0].answer == "Normal." and "Clear." in recs[0].question


def test_radimagenet_vqa_reads_only_the_benchmark_config(tmp_path, cache):
    """A full download holds several configurations, each with ``test`` shards: only the
    ``benchmark`` configuration is the evaluation set; ids are ``metadata.question_id``."""
    from medrl.data.record import DataError

    img = {"bytes": _png(), "path": "x.png"}
    row = {"image": img, "question": "Which organ?", "answer": "liver", "question_type": "open", "choices": None,
           "metadata": {"modality": "CT", "location": "abdomen", "question_id": "q-17"}}
    base = tmp_path / "RadImageNet-VQA"
    _pq(base / "benchmark" / "test-00000-of-00001.parquet", [row, {**row, "metadata": {
        "modality": "MRI", "location": "brain", "question_id": "q-18"}}])
    _pq(base / "instruct" / "test-00000-of-00001.parquet", [{**row, "question": "Instruction row?"}])
    _pq(base / "alignment" / "test-00000-of-00001.parquet", [{**row, "question": "Alignment row?"}])
    recs = load_records("radimagenet_vqa", split="test", data_dir=tmp_path)
    assert [r.id for r in recs] == ["radimagenet-q-17", "radimagenet-q-18"]
    assert {r.question for r in recs} == {"Which organ?"}
    # a repeated question id names both rows
    _pq(base / "benchmark" / "test-00000-of-00001.parquet", [row, row])
    with pytest.raises(DataError, match="question_id 'q-17' already used"):
        load_records("radimagenet_vqa", split="test", data_dir=tmp_path)
    # configurations but no benchmark folder: a clear error, nothing read
    import shutil

    shutil.rmtree(base / "benchmark")
    with pytest.raises(DataError, match="no 'benchmark' configuration folder"):
        load_records("radimagenet_vqa", split="test", data_dir=tmp_path)
