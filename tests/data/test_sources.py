"""Benchmark loaders on fixtures written in each publisher's layout: the Hugging Face copies
(save_to_disk and downloaded parquet), SLAKE (BoKelvin), OmniMedVQA, MMMU Health & Medicine,
MedXpertQA MM, MedQA, MedMCQA, PubMedQA; ``medrl data inspect`` counts; suite presence."""

import json

import pytest

from medrl.cli import main
from medrl.data import DataError, load_records
from layout_files import png as _png, write_png as _write_png, write_parquet as _pq


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
    """flaviagiammarino/vqa-rad (dataset card: image, question, answer; data/<split>-*.parquet)."""
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
    with pytest.raises(DataError, match="vqa_rad_hf|vqa-rad"):
        load_records("vqa_rad_hf", data_dir=tmp_path / "nothing")


def test_pathvqa_hf_parquet_is_pathology(tmp_path, cache):
    """flaviagiammarino/path-vqa (dataset card: image, question, answer; data/<split>-*.parquet)."""
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
    """BoKelvin/SLAKE: train.json / validation.json / test.json and imgs/ from imgs.zip."""
    _slake_flat(tmp_path / "slake_hf")
    recs = load_records("slake_hf", split="test", data_dir=tmp_path)
    assert [r.id for r in recs] == ["slake-1", "slake-2", "slake-4"]  # English only by default
    assert {r.modality for r in recs} == {"CT", "MRI"} and recs[0].organ == "Lung"
    assert len(load_records("slake_hf", split="validate", data_dir=tmp_path)) == 2
    assert len(load_records("slake_hf", split="test", data_dir=tmp_path, lang=None)) == 4


def test_omnimedvqa(tmp_path):
    """foreverbeliever/OmniMedVQA: QA_information/<access>/<dataset>.json (option_A.., gt_answer) + Images/."""
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
    """MMMU/MMMU: <Subject>/<split>-*.parquet (question, options list literal, answer letter, image_1..7)."""
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
    """TsinghuaC3I/MedXpertQA: MM/{dev,test}.jsonl (question, options {letter: text}, label, images) + images/."""
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
    """jind11/MedQA JSONL; medmcqa/medmcqa JSON lines (cop 1-4); pubmedqa/pubmedqa ori_pqal.json + test_ground_truth.json."""
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
    from medrl.data.registry import suite_specs

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


# =========================================================================== the papers' other sets
def test_vqa_med_2019_imageclef_layout(tmp_path):
    """ARMed's out-of-domain VQA-Med: the ImageCLEF 2019 release, pipe-separated QA files."""
    root = tmp_path / "VQA-Med-2019"
    val = root / "ImageClef-2019-VQA-Med-Validation"
    lines = ["synpic1|what imaging modality was used?|ct noncontrast", "synpic2|is this an mri?|no",
             "synpic3|which plane is the image taken?|axial"]
    (val / "Val_images").mkdir(parents=True)
    for i in (1, 2, 3):
        _write_png(val / "Val_images" / f"synpic{i}.jpg")
    (val / "All_QA_Pairs_val.txt").write_text("\n".join(lines) + "\n")
    test = root / "VQAMed2019Test"
    _write_png(test / "VQAMed2019_Test_Images" / "synpic9.jpg")
    (test / "VQAMed2019_Test_Questions_w_Ref_Answers.txt").write_text("synpic9|modality|what modality is shown?|us - ultrasound\n")
    recs = load_records("vqa_med_2019", split="validation", data_dir=tmp_path)
    assert len(recs) == 3 and [r.open_ended for r in recs] == [True, False, True]
    assert recs[0].answer == "ct noncontrast" and recs[0].images[0].endswith("synpic1.jpg")
    t = load_records("vqa_med_2019", split="test", data_dir=tmp_path)
    assert len(t) == 1 and t[0].extras["category"] == "modality" and t[0].answer == "us - ultrasound"
    (val / "All_QA_Pairs_val.txt").write_text("synpic1|only two fields\n")
    with pytest.raises(DataError, match="All_QA_Pairs_val.txt line 1"):
        load_records("vqa_med_2019", split="validation", data_dir=tmp_path)


def test_vqa_med_2021_keeps_single_answer_questions(tmp_path):
    """MRPO App. C.1: the 2021 test set, only questions with one reference answer."""
    root = tmp_path / "VQA-Med-2021"
    for i in range(4):
        _write_png(root / "VQA-500-Images" / f"synpic{i}.jpg")
    (root / "Task1-VQA-2021-TestSet-Questions.txt").write_text(
        "".join(f"synpic{i}|what is abnormal in the ct scan?\n" for i in range(4)))
    (root / "Task1-VQA-2021-TestSet-ReferenceAnswers.txt").write_text(
        "synpic0|pulmonary embolism\nsynpic1|meningioma|meningiomas\nsynpic2|renal cell carcinoma\nsynpic3|a#b\n")
    recs = load_records("vqa_med_2021", split="test", data_dir=tmp_path)
    assert [r.id for r in recs] == ["vqamed21-synpic0", "vqamed21-synpic2"] and recs[1].answer == "renal cell carcinoma"
    from medrl.data.sources.vqa_med import load_vqa_med_2021

    assert len(load_vqa_med_2021(tmp_path, "test", single_answer=False)) == 4


def test_quilt_vqa_parquet(tmp_path, cache):
    """wisdomik/Quilt_VQA: data/train-*.parquet with image, question, answer, answer_type, context."""
    rows = [{"image": {"bytes": _png(), "path": "a.jpg"}, "question": "What tissue is shown?", "answer": "lymph node",
             "answer_type": "open", "context": "ctx"},
            {"image": {"bytes": _png((0, 1, 2)), "path": "b.jpg"}, "question": "Is this malignant?", "answer": "yes",
             "answer_type": "closed", "context": ""},
            {"image": {"bytes": _png((3, 1, 2)), "path": "c.jpg"}, "question": "Which stain is used?", "answer": "H&E",
             "answer_type": "open", "context": ""}]
    _pq(tmp_path / "Quilt_VQA" / "data" / "train-00000-of-00001.parquet", rows)
    recs = load_records("quilt_vqa", split="test", data_dir=tmp_path)
    assert len(recs) == 3 and sum(r.open_ended for r in recs) == 2 and recs[0].modality == "Pathology"
    assert len(load_records("quilt_vqa", split="test", data_dir=tmp_path, open_only=True)) == 2


def test_radimagenet_vqa_open_closed_and_mcq(tmp_path, cache):
    """raidium/RadImageNet-VQA, a copy with modality/anatomy at the top level (the metadata form: tests/data/test_published_layouts.py)."""
    img = {"bytes": _png(), "path": "x.png"}
    rows = [{"image": img, "question": "Which organ is shown?", "answer": "liver", "question_type": "open",
             "choices": None, "modality": "CT", "anatomy": "abdomen"},
            {"image": img, "question": "Is there a lesion?", "answer": "no", "question_type": "closed", "choices": None,
             "modality": "MRI", "anatomy": "brain"},
            {"image": img, "question": "Which pathology?", "answer": "B", "question_type": "mcq",
             "choices": ["cyst", "abscess", "tumor"], "modality": "CT", "anatomy": "liver"}]
    _pq(tmp_path / "RadImageNet-VQA" / "benchmark" / "test-00000-of-00001.parquet", rows)
    recs = load_records("radimagenet_vqa", split="test", data_dir=tmp_path)
    assert len(recs) == 3 and [r.open_ended for r in recs] == [True, False, False]
    assert recs[2].answer == "abscess" and recs[2].extras["choices"] == ["cyst", "abscess", "tumor"]
    assert recs[0].organ == "abdomen"


def test_mimic_cxr_vqa_mrpo_subset(tmp_path):
    """MIMIC-Ext-MIMIC-CXR-VQA dataset/test.json with MIMIC-CXR-JPG files/ unpacked beside it (the PhysioNet folders: tests/data/test_published_layouts.py)."""
    root = tmp_path / "mimic-cxr-vqa"
    items = [{"idx": 0, "image_path": "p10/p1/s1/a.jpg", "question": "List the abnormalities in the left lung.",
              "semantic_type": "query", "content_type": "abnormality", "template": "t1", "answer": ["atelectasis"]},
             {"idx": 1, "image_path": "p10/p1/s1/a.jpg", "question": "List all anatomical findings.",
              "semantic_type": "query", "content_type": "anatomy", "template": "t2", "answer": ["a", "b"]},
             {"idx": 2, "image_path": "p10/p1/s1/a.jpg", "question": "Is there any abnormality?",
              "semantic_type": "verify", "content_type": "abnormality", "template": "t3", "answer": ["yes"]},
             {"idx": 3, "image_path": "p10/p1/s1/a.jpg", "question": "Which lung shows edema, left or right?",
              "semantic_type": "choose", "content_type": "abnormality", "template": "t4", "answer": ["right"]}]
    (root / "dataset").mkdir(parents=True)
    (root / "dataset" / "test.json").write_text(json.dumps(items))
    _write_png(root / "files" / "p10" / "p1" / "s1" / "a.jpg")
    recs = load_records("mimic_cxr_vqa", split="test", data_dir=tmp_path)
    assert [r.id for r in recs] == ["mimiccxrvqa-test-0"] and recs[0].answer == "atelectasis"
    from medrl.data.sources.mimic_cxr import load_mimic_cxr_vqa

    every = load_mimic_cxr_vqa(tmp_path, "test", mrpo_subset=False)
    assert len(every) == 4 and every[1].answer == "a, b" and not every[2].open_ended


def test_mmlu_medical_subjects_parquet_and_csv(tmp_path):
    """cais/mmlu <subject>/test-*.parquet and Hendrycks' data/test/<subject>_test.csv."""
    for subj in ("clinical_knowledge", "anatomy"):
        _pq(tmp_path / "mmlu" / subj / "test-00000-of-00001.parquet",
            [{"question": f"{subj} Q{i}?", "subject": subj, "choices": ["w", "x", "y", "z"], "answer": i}
             for i in range(3)])
    recs = load_records("mmlu_clinical_knowledge", split="test", data_dir=tmp_path)
    assert len(recs) == 3 and [r.answer for r in recs] == ["w", "x", "y"] and not recs[0].images
    assert recs[0].source == "mmlu_clinical_knowledge"
    csv_root = tmp_path / "csv"
    (csv_root / "mmlu" / "data" / "test").mkdir(parents=True)
    (csv_root / "mmlu" / "data" / "test" / "medical_genetics_test.csv").write_text(
        'What is a gene?,a,b,"c, d",e,C\nQ2?,a,b,c,d,A\n')
    g = load_records("mmlu_medical_genetics", split="test", data_dir=csv_root)
    assert [r.answer for r in g] == ["c, d", "a"]


def test_usmle_self_assessment_steps(tmp_path):
    """medalpaca/medical_meadow_usmle_self_assessment step{N}.json with inline answers (the solutions files and HuggingSara's parquet: tests/data/test_published_layouts.py)."""
    root = tmp_path / "usmle_sa"
    root.mkdir()
    (root / "step1.json").write_text(json.dumps([
        {"no": 1, "question": "A 25-year-old ...?", "options": {"A": "a", "B": "b", "C": "c"}, "answer": "B"},
        {"no": 2, "question": "Image question", "options": {"A": "a", "B": "b"}, "answer": ""}]))
    (root / "step2.json").write_text(json.dumps([
        {"no": 1, "question": "Next step?", "options": {"A": "x", "B": "y"}, "answer": "A"}]))
    recs = load_records("usmle_sa", split="test", data_dir=tmp_path)
    assert len(recs) == 2 and [r.answer for r in recs] == ["b", "x"] and recs[1].extras["step"] == "step2"


def _mimic_cxr(root):
    (root / "files" / "p10" / "p10000001").mkdir(parents=True)
    (root / "mimic-cxr-2.0.0-split.csv").write_text(
        "dicom_id,study_id,subject_id,split\nd1,50000001,10000001,test\nd2,50000001,10000001,test\n"
        "d3,50000002,10000001,train\nd4,50000003,10000001,test\n")
    for study, text in (("50000001", "EXAMINATION: CHEST\n\nFINDINGS: The lungs are clear.\n No effusion.\n\n"
                                     "IMPRESSION: No acute process."),
                        ("50000002", "FINDINGS: Cardiomegaly.\nIMPRESSION: Enlarged heart."),
                        ("50000003", "IMPRESSION: Stable.")):
        (root / "files" / "p10" / "p10000001" / f"s{study}.txt").write_text(text)
    _write_png(root / "files" / "p10" / "p10000001" / "s50000001" / "d1.jpg")
    _write_png(root / "files" / "p10" / "p10000001" / "s50000003" / "d4.jpg")


def test_mimic_cxr_report_generation_and_summary(tmp_path):
    """PhysioNet MIMIC-CXR: mimic-cxr-2.0.0-split.csv, files/pNN/p<subject>/s<study>.txt reports and JPGs."""
    _mimic_cxr(tmp_path / "mimic-cxr")
    gen = load_records("mimic_cxr_report", split="test", data_dir=tmp_path)
    assert [r.id for r in gen] == ["mimiccxr-gen-50000001", "mimiccxr-gen-50000003"]  # one per study, first image
    assert gen[0].answer == "FINDINGS: The lungs are clear. No effusion.\nIMPRESSION: No acute process."
    assert gen[0].extras["task"] == "report" and gen[0].images[0].endswith("d1.jpg")
    summ = load_records("mimic_cxr_summary", split="test", data_dir=tmp_path)
    assert len(summ) == 1 and summ[0].answer == "No acute process." and not summ[0].images
    assert "The lungs are clear." in summ[0].question
    from medrl.eval.protocols import is_report

    assert is_report({"task": gen[0].extras["task"], "reference": gen[0].answer})


def test_pmc_vqa_hard_reads_test_2(tmp_path):
    """xmcmic/PMC-VQA test_2.csv (Figure_path, Question, Answer, Choice A..D, Answer_label) + images/."""
    root = tmp_path / "pmc_vqa"
    (root / "images").mkdir(parents=True)
    for i in range(2):
        _write_png(root / "images" / f"f{i}.jpg")
    (root / "test_2.csv").write_text(
        "Figure_path,Question,Answer,Choice A,Choice B,Choice C,Choice D,Answer_label\n"
        "f0.jpg,What is shown?,B:MRI,A:CT,B:MRI,C:X-ray,D:US,B\n"
        "f1.jpg,Which organ?,A:liver,A:liver,B:lung,C:brain,D:heart,A\n")
    recs = load_records("pmc_vqa_hard", split="test", data_dir=tmp_path)
    assert len(recs) == 2 and [r.answer for r in recs] == ["MRI", "liver"] and recs[0].source == "pmc_vqa_hard"
    assert recs[0].id.startswith("pmc_vqa_hard-") and recs[0].extras["choices_in_prompt"]


def test_med_zero_17k_r1_style(tmp_path, cache):
    """The R1-style parquet layout of public medical RL sets (Med-Zero-17K itself is unpublished)."""
    rows = [{"id": "a1", "image": [{"bytes": _png(), "path": "a1.png"}], "problem": "Which modality?",
             "solution": "<answer>CT</answer>", "level": 1, "modality": "CT", "task": "modality", "options": None},
            {"id": "a2", "image": [{"bytes": _png((5, 5, 5)), "path": "a2.png"}], "problem": "Where is the mass?",
             "solution": "left upper lobe", "level": 3, "modality": "X-Ray", "task": "localisation", "options": None},
            {"id": "a3", "image": [{"bytes": _png((9, 5, 5)), "path": "a3.png"}], "problem": "Which is it?",
             "solution": "B", "options": ["cyst", "tumor"], "level": 2, "modality": "MRI", "task": "diagnosis"}]
    _pq(tmp_path / "Med-Zero-17K" / "data" / "train-00000-of-00001.parquet", rows)
    recs = load_records("med_zero_17k", split="train", data_dir=tmp_path)
    assert len(recs) == 3 and [r.answer for r in recs] == ["CT", "left upper lobe", "tumor"]
    assert [r.extras["level"] for r in recs] == [1, 3, 2] and all(r.images for r in recs)
    rows[0]["level"] = 7
    _pq(tmp_path / "Med-Zero-17K" / "data" / "train-00000-of-00001.parquet", rows)
    with pytest.raises(DataError, match="level 7"):
        load_records("med_zero_17k", split="train", data_dir=tmp_path)


def test_mulberry_cot_warm_up_data(tmp_path):
    """HuanjinYao/Mulberry-SFT: LLaMA-Factory ShareGPT JSON (messages, images)."""
    root = tmp_path / "Mulberry-SFT"
    _write_png(root / "images" / "m0.png")
    _write_png(root / "images" / "m1.png")
    items = [{"messages": [{"role": "user", "content": "<image>What is the area of the square?"},
                           {"role": "assistant", "content": "### Image Description:\nA square of side 3.\n"
                                                            "### Step 1: Area is side squared.\n"
                                                            "### The final answer is: 9"}],
              "images": ["images/m0.png"]},
             {"messages": [{"role": "user", "content": "<image>Is the lesion benign?"},
                           {"role": "assistant", "content": "The margins are smooth. The final answer is: yes."}],
              "images": ["images/m1.png"]}]
    (root / "mulberry_260k.json").write_text(json.dumps(items))
    recs = load_records("mulberry_cot", split="train", data_dir=tmp_path)
    assert len(recs) == 2 and [r.answer for r in recs] == ["9", "yes"]
    assert recs[0].gold_reasoning.startswith("### Image Description") and "final answer" not in recs[0].gold_reasoning
    assert recs[0].question == "What is the area of the square?"
    items[1]["messages"][1]["content"] = "No final line here."
    (root / "mulberry_260k.json").write_text(json.dumps(items))
    with pytest.raises(DataError, match="item #1.*final answer"):
        load_records("mulberry_cot", split="train", data_dir=tmp_path)


def test_paper_suites_route_out_of_distribution_sets(tmp_path, capsys):
    """--suite mrpo: what is present runs, the out-of-distribution sets as --ood."""
    from medrl.commands.eval import _apply_suite
    from medrl.data.registry import SUITES

    assert {"mrpo", "armed", "capo", "medix", "huatuo"} <= set(SUITES) and len(SUITES["medix"]) == 17
    root = tmp_path / "VQA-Med-2021"
    _write_png(root / "VQA-500-Images" / "synpic0.jpg")
    (root / "Task1-VQA-2021-TestSet-Questions.txt").write_text("synpic0|what is abnormal?\n")
    (root / "Task1-VQA-2021-TestSet-ReferenceAnswers.txt").write_text("synpic0|pulmonary embolism\n")
    _mimic_cxr(tmp_path / "mimic-cxr")

    class A:
        suite, data_dir, data, ood = "mrpo", str(tmp_path), [], []
    _apply_suite(A)
    assert A.data == [] and A.ood == ["vqa_med_2021:test"]
    assert "quilt_vqa:test missing" in capsys.readouterr().err

    class M:
        suite, data_dir, data, ood = "medix", str(tmp_path), [], []
    _apply_suite(M)
    assert M.data == ["mimic_cxr_summary:test", "mimic_cxr_report:test"] and M.ood == []
