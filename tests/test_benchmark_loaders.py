"""Benchmark loaders on fixtures written in each publisher's layout: the Hugging Face copies
(save_to_disk and downloaded parquet), SLAKE (BoKelvin), OmniMedVQA, MMMU Health & Medicine,
MedXpertQA MM, MedQA, MedMCQA, PubMedQA; ``medrl data inspect`` counts; suite presence."""

import io
import json

import pytest
from PIL import Image

from medrl.cli import main
from medrl.data import DataError, load_records


def _png(color=(120, 10, 10)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


def _write_png(path, color=(1, 2, 3)):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_png(color))
    return path


def _hf_rows(n_yes=2, n_open=1):
    rows = [{"image": {"bytes": _png(), "path": None}, "question": f"is there a lesion {i}?", "answer": "yes"}
            for i in range(n_yes)]
    rows += [{"image": {"bytes": _png((0, 90, 0)), "path": None}, "question": f"where is the lesion {i}?",
              "answer": "left lobe"} for i in range(n_open)]
    return rows


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))


def test_vqa_rad_hf_from_save_to_disk_and_parquet(tmp_path, cache):
    import datasets

    feats = datasets.Features({"image": datasets.Image(), "question": datasets.Value("string"),
                               "answer": datasets.Value("string")})
    dd = datasets.DatasetDict({
        "train": datasets.Dataset.from_list(_hf_rows(3, 2), features=feats),
        "test": datasets.Dataset.from_list(_hf_rows(2, 1), features=feats),
    })
    dd.save_to_disk(str(tmp_path / "data" / "vqa-rad"))
    recs = load_records("vqa_rad_hf", split="test", data_dir=tmp_path / "data")
    assert len(recs) == 3 and {r.source for r in recs} == {"vqa_rad_hf"}
    assert [r.open_ended for r in recs] == [False, False, True] and recs[0].id == "vqa_rad_hf-test-0"
    assert all(r.images and r.images[0].endswith(".png") for r in recs)  # bytes written to the medrl cache
    assert len(load_records("vqa_rad_hf", data_dir=tmp_path / "data")) == 8
    # the downloaded repo layout: data/<split>-00000-of-00001.parquet
    (tmp_path / "dl" / "data").mkdir(parents=True)
    dd["test"].to_parquet(str(tmp_path / "dl" / "data" / "test-00000-of-00001.parquet"))
    dd["train"].to_parquet(str(tmp_path / "dl" / "data" / "train-00000-of-00001.parquet"))
    recs = load_records(f"hf:{tmp_path / 'dl'}", split="test")
    assert [r.answer for r in recs] == ["yes", "yes", "left lobe"] and recs[2].images
    with pytest.raises(DataError, match="split 'validation'"):
        load_records(f"hf:{tmp_path / 'dl'}", split="validation")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(DataError, match="vqa-rad"):
        load_records("vqa_rad_hf", data_dir=tmp_path / "nothing")


def test_pathvqa_hf_parquet_is_pathology(tmp_path, cache):
    import datasets

    feats = datasets.Features({"image": datasets.Image(), "question": datasets.Value("string"),
                               "answer": datasets.Value("string")})
    d = datasets.Dataset.from_list(_hf_rows(1, 2), features=feats)
    (tmp_path / "path-vqa" / "data").mkdir(parents=True)
    d.to_parquet(str(tmp_path / "path-vqa" / "data" / "validation-00000-of-00001.parquet"))
    recs = load_records("pathvqa_hf", split="validate", data_dir=tmp_path)
    assert len(recs) == 3 and {r.modality for r in recs} == {"Pathology"}
    assert {r.modality_tag for r in recs} == {"MICROSCOPY"} and recs[0].split == "validation"


def _slake_flat(root):
    _write_png(root / "imgs" / "xmlab1" / "source.jpg")
    _write_png(root / "imgs" / "xmlab2" / "source.jpg")
    base = {"img_name": "xmlab1/source.jpg", "img_id": 1, "location": "Lung", "modality": "CT",
            "base_type": "vqa", "content_type": "Organ", "triple": ["vhead", "_", "_"]}
    rows = [
        {**base, "qid": 1, "question": "Which organ is abnormal?", "answer": "Lung", "q_lang": "en", "answer_type": "OPEN"},
        {**base, "qid": 2, "question": "Is it normal?", "answer": "No", "q_lang": "en", "answer_type": "CLOSED"},
        {**base, "qid": 3, "question": "哪个器官?", "answer": "肺", "q_lang": "zh", "answer_type": "OPEN"},
        {**base, "qid": 4, "img_name": "xmlab2/source.jpg", "modality": "MRI", "location": "Brain",
         "question": "What is the modality?", "answer": "MRI", "q_lang": "en", "answer_type": "OPEN"},
    ]
    (root / "test.json").write_text(json.dumps(rows), encoding="utf-8")
    (root / "validation.json").write_text(json.dumps(rows[:2]), encoding="utf-8")


def test_slake_hf_bokelvin_layout(tmp_path):
    _slake_flat(tmp_path / "slake_hf")
    recs = load_records("slake_hf", split="test", data_dir=tmp_path)
    assert [r.id for r in recs] == ["slake-1", "slake-2", "slake-4"]  # English only by default
    assert {r.modality for r in recs} == {"CT", "MRI"} and recs[0].organ == "Lung"
    assert len(load_records("slake_hf", split="validate", data_dir=tmp_path)) == 2
    assert len(load_records("slake_hf", split="test", data_dir=tmp_path, lang=None)) == 4


def test_omnimedvqa(tmp_path):
    root = tmp_path / "OmniMedVQA"
    _write_png(root / "Images" / "ACRIMA" / "a.png")
    qa = [{"dataset": "ACRIMA", "question_id": "ACRIMA_0", "question_type": "Disease Diagnosis",
           "question": "What is shown?", "gt_answer": "Glaucoma", "image_path": "Images/ACRIMA/a.png",
           "option_A": "Normal", "option_B": "Glaucoma", "modality_type": "Fundus Photography"},
          {"dataset": "ACRIMA", "question_id": "ACRIMA_1", "question_type": "Modality Recognition",
           "question": "Which modality?", "gt_answer": "Fundus photography", "image_path": "Images/ACRIMA/a.png",
           "option_A": "CT", "option_B": "MRI", "option_C": "fundus photography", "modality_type": "Fundus Photography"}]
    (root / "QA_information" / "Open-access").mkdir(parents=True)
    (root / "QA_information" / "Open-access" / "ACRIMA.json").write_text(json.dumps(qa))
    recs = load_records("omnimedvqa", split="test", data_dir=tmp_path)
    assert [r.answer for r in recs] == ["Glaucoma", "fundus photography"]
    assert recs[0].extras["answer_label"] == "B" and recs[1].extras["answer_label"] == "C"
    assert recs[0].question.endswith("A: Normal\nB: Glaucoma") and recs[0].extras["choices_in_prompt"]
    assert recs[0].answer_type == "CLOSED" and not recs[0].open_ended and recs[0].modality == "Fundus Photography"
    qa[0]["gt_answer"] = "Cataract"
    (root / "QA_information" / "Open-access" / "ACRIMA.json").write_text(json.dumps(qa))
    with pytest.raises(DataError, match="ACRIMA.json item #0: gt_answer 'Cataract'"):
        load_records("omnimedvqa", data_dir=tmp_path)


def test_mmmu_health_and_medicine(tmp_path, cache):
    import pyarrow as pa
    import pyarrow.parquet as pq

    img = {"bytes": _png(), "path": "x.png"}
    rows = [
        {"id": "validation_Clinical_Medicine_1", "question": "<image 1> What is the diagnosis?",
         "options": "['Pneumonia', 'Edema', 'Normal']", "answer": "B", "image_1": img, "image_2": None,
         "img_type": "['X-Ray']", "question_type": "multiple-choice", "subfield": "Radiology"},
        {"id": "validation_Clinical_Medicine_2", "question": "<image 1> How many lesions?", "options": "[]",
         "answer": "3", "image_1": img, "image_2": None, "img_type": "['CT']", "question_type": "open",
         "subfield": "Radiology"},
    ]
    folder = tmp_path / "MMMU" / "Clinical_Medicine"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "validation-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(rows[:1]), folder / "dev-00000-of-00001.parquet")
    (tmp_path / "MMMU" / "Art").mkdir()  # not a Health & Medicine subject: ignored
    recs = load_records("mmmu_med", split="validation", data_dir=tmp_path)
    assert len(recs) == 2 and recs[0].answer == "Edema" and recs[0].extras["answer_label"] == "B"
    assert recs[0].extras["subject"] == "Clinical_Medicine" and len(recs[0].images) == 1
    assert recs[1].answer == "3" and recs[1].extras.get("choices") is None
    rows[0]["answer"] = "F"
    pq.write_table(pa.Table.from_pylist(rows), folder / "validation-00000-of-00001.parquet")
    with pytest.raises(DataError, match="answer label 'F'"):
        load_records("mmmu_med", data_dir=tmp_path)


def test_medxpertqa_mm(tmp_path):
    root = tmp_path / "MedXpertQA"
    _write_png(root / "images" / "MM-1-a.jpeg")
    row = {"id": "MM-1", "question": "A 40-year-old ... What is the diagnosis?\nAnswer Choices: (A) Gout (B) Lupus",
           "options": {"A": "Gout", "B": "Lupus"}, "label": "B", "images": ["MM-1-a.jpeg"],
           "medical_task": "Diagnosis", "body_system": "Skeletal", "question_type": "Reasoning"}
    (root / "MM").mkdir(parents=True)
    (root / "MM" / "test.jsonl").write_text(json.dumps(row) + "\n")
    (recs,) = load_records("medxpertqa_mm", split="test", data_dir=tmp_path)
    assert recs.answer == "Lupus" and recs.organ == "Skeletal"
    assert "Answer Choices" not in recs.question and recs.question.endswith("A: Gout\nB: Lupus")


def test_text_only_mcq_medqa_medmcqa_pubmedqa(tmp_path):
    (tmp_path / "medqa").mkdir()
    q = {"question": "A 23-year-old woman ... Which drug?", "answer": "Nitrofurantoin",
         "options": {"A": "Ampicillin", "B": "Ceftriaxone", "C": "Doxycycline", "D": "Nitrofurantoin"},
         "meta_info": "step1", "answer_idx": "D"}
    (tmp_path / "medqa" / "test.jsonl").write_text(json.dumps(q) + "\n")
    (r,) = load_records("medqa", split="test", data_dir=tmp_path)
    assert r.answer == "Nitrofurantoin" and r.images == [] and r.extras["answer_label"] == "D"

    (tmp_path / "medmcqa").mkdir()
    lines = [{"id": "m1", "question": "Drug of choice?", "opa": "A1", "opb": "B1", "opc": "C1", "opd": "D1",
              "cop": 3, "subject_name": "Pharmacology"},
             {"id": "m2", "question": "Unlabelled", "opa": "x", "opb": "y", "opc": "z", "opd": "w", "cop": None}]
    (tmp_path / "medmcqa" / "dev.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (r,) = load_records("medmcqa", split="validation", data_dir=tmp_path)
    assert r.answer == "C1" and r.extras["answer_label"] == "C"  # cop 1-4 in the JSON release

    (tmp_path / "pubmedqa").mkdir()
    pq = {"111": {"QUESTION": "Does X help?", "CONTEXTS": ["Trial of X.", "X helped."], "final_decision": "yes"},
          "222": {"QUESTION": "Is Y safe?", "CONTEXTS": ["Unclear."], "final_decision": "maybe"}}
    (tmp_path / "pubmedqa" / "ori_pqal.json").write_text(json.dumps(pq))
    (tmp_path / "pubmedqa" / "test_ground_truth.json").write_text(json.dumps({"222": "maybe"}))
    (r,) = load_records("pubmedqa", split="test", data_dir=tmp_path)
    assert r.id == "pubmedqa-222" and r.answer == "maybe" and r.question.startswith("Context: Unclear.")
    assert r.extras["choices"] == ["yes", "no", "maybe"]
    assert [x.id for x in load_records("pubmedqa", split="train", data_dir=tmp_path)] == ["pubmedqa-111"]


def test_data_inspect_counts_and_suite_presence(tmp_path, capsys):
    from medrl.data.loaders import suite_specs

    _slake_flat(tmp_path / "slake_hf")
    (tmp_path / "medqa").mkdir()
    q = {"question": "Q?", "options": {"A": "a", "B": "b"}, "answer_idx": "B"}
    (tmp_path / "medqa" / "test.jsonl").write_text(json.dumps(q) + "\n" + json.dumps(q) + "\n")
    assert main(["data", "inspect", "--dataset", "medqa:test", "--data-dir", str(tmp_path), "--json", "--samples", "0"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["records"] == 2 and counts["multiple_choice"] == 2 and counts["text_only"] == 2
    assert main(["data", "inspect", "--dataset", "slake_hf:test", "--data-dir", str(tmp_path), "--json", "--samples", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 3
    present, missing = suite_specs("huatuo", tmp_path)
    assert present == ["slake_hf:test"] and [m for m, _ in missing][:1] == ["vqa_rad:test"]


def test_hub_id_goes_through_load_dataset_and_medmcqa_parquet(tmp_path, cache, monkeypatch):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    feats = datasets.Features({"image": datasets.Image(), "question": datasets.Value("string"),
                               "answer": datasets.Value("string")})
    local = datasets.DatasetDict({"test": datasets.Dataset.from_list(_hf_rows(1, 1), features=feats)})
    asked = []
    monkeypatch.setattr(datasets, "load_dataset", lambda name, *a, **k: asked.append(name) or local)
    recs = load_records("hf:flaviagiammarino/vqa-rad", split="test")
    assert asked == ["flaviagiammarino/vqa-rad"] and len(recs) == 2 and recs[0].images
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: (_ for _ in ()).throw(ConnectionError("offline")))
    with pytest.raises(DataError, match="download it first"):
        load_records("hf:owner/missing", split="test")

    (tmp_path / "medmcqa" / "data").mkdir(parents=True)
    rows = [{"id": "p1", "question": "Q?", "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": 0},
            {"id": "p2", "question": "R?", "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": 3}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "medmcqa" / "data" / "validation-00000-of-00001.parquet")
    recs = load_records("medmcqa", split="validation", data_dir=tmp_path)
    assert [r.answer for r in recs] == ["a", "d"]  # HF parquet: cop 0-3
