"""medrl.data loaders on small fixtures written here: SLAKE flat layout, PathVQA, PMC-VQA,
MedThink, JSONL, saved HF datasets; validation errors and --skip-invalid."""

from __future__ import annotations

import csv
import json
import pickle

import pytest
from PIL import Image

from medrl.data import DataError, VQARecord, load_records, read_jsonl, write_jsonl
from medrl.data.sources.medthink import attach_rationales


def _img(path, color=(120, 30, 200)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 12), color).save(path)
    return path


@pytest.fixture()
def slake_flat(tmp_path):
    root = tmp_path / "slake"
    _img(root / "imgs" / "xmlab7" / "source.jpg")
    rows = [
        {"qid": 11, "img_id": 7, "img_name": "xmlab7/source.jpg", "question": "Which organ is abnormal?", "answer": "Liver",
         "q_lang": "en", "location": "Abdomen", "modality": "CT", "answer_type": "OPEN", "base_type": "vqa",
         "content_type": "Organ", "triple": ["vhead", "_", "_"]},
        {"qid": 12, "img_id": 7, "img_name": "xmlab7/source.jpg", "question": "Is this a CT?", "answer": "Yes",
         "q_lang": "en", "location": "Abdomen", "modality": "CT", "answer_type": "CLOSED", "base_type": "vqa",
         "content_type": "Modality", "triple": ["vhead", "_", "_"]},
        {"qid": 13, "img_id": 7, "img_name": "xmlab7/source.jpg", "question": "哪个器官异常?", "answer": "肝脏",
         "q_lang": "zh", "location": "Abdomen", "modality": "CT", "answer_type": "OPEN", "base_type": "vqa",
         "content_type": "Organ", "triple": ["vhead", "_", "_"]},
    ]
    (root / "test.json").write_text(json.dumps(rows), encoding="utf-8")
    return tmp_path


def test_slake_official_flat_layout(slake_flat):
    recs = load_records("slake:test", data_dir=slake_flat)
    assert [r.id for r in recs] == ["slake-11", "slake-12"]  # English only by default
    r = recs[0]
    assert (r.modality, r.modality_tag, r.organ, r.question_type, r.split) == ("CT", "CT_SCAN", "Abdomen", "Organ", "test")
    assert r.open_ended and not recs[1].open_ended
    assert len(load_records("slake:test", data_dir=slake_flat, lang=None)) == 3


def test_pathvqa_pickled_lists(tmp_path):
    root = tmp_path / "pathvqa"
    _img(root / "images" / "test" / "test_0001.jpg")
    (root / "qas" / "test").mkdir(parents=True)
    rows = [{"image": "test_0001", "question": "What is present?", "answer": "granuloma"},
            {"image": "test_0001", "question": "Is necrosis seen?", "answer": "yes"}]
    (root / "qas" / "test" / "test_qa.pkl").write_bytes(pickle.dumps(rows))
    recs = load_records("pathvqa", split="test", data_dir=tmp_path)
    assert [(r.answer, r.open_ended, r.modality_tag) for r in recs] == [("granuloma", True, "MICROSCOPY"), ("yes", False, "MICROSCOPY")]
    assert len(load_records("pathvqa:test", data_dir=tmp_path, open_only=True)) == 1


def test_pathvqa_refuses_pickled_objects(tmp_path):
    root = tmp_path / "pathvqa" / "qas" / "test"
    root.mkdir(parents=True)
    (root / "test_qa.pkl").write_bytes(pickle.dumps([{"image": "x", "question": "q", "answer": Image.new("L", (1, 1))}]))
    with pytest.raises(DataError, match="plain-data pickle"):
        load_records("pathvqa:test", data_dir=tmp_path)


@pytest.fixture()
def pmc(tmp_path):
    root = tmp_path / "pmc_vqa"
    _img(root / "images" / "PMC1_F1.jpg")
    _img(root / "images" / "PMC2_F2.jpg")
    with (root / "test_clean.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["index", "Figure_path", "Question", "Answer", "Choice A", "Choice B", "Choice C", "Choice D", "Answer_label"])
        w.writerow([0, "PMC1_F1.jpg", "What imaging was used?", "Computed tomography", "A:MRI", "B:Computed tomography", "C:PET", "D:X-ray", "B"])
        w.writerow([1, "PMC2_F2.jpg", "Which side is the lesion on?", "A", "A:Left", "B:Right", "C:Both", "D:Neither", ""])
    return tmp_path


def test_pmc_vqa_open_ended_by_default(pmc):
    recs = load_records("pmc_vqa:test", data_dir=pmc)
    assert [r.answer for r in recs] == ["Computed tomography", "Left"]  # a bare letter maps to its option
    assert all(r.open_ended and "A:" not in r.question for r in recs)
    assert recs[0].extras["choices"] == ["MRI", "Computed tomography", "PET", "X-ray"]


def test_pmc_vqa_with_choices_is_multiple_choice(pmc):
    recs = load_records("pmc_vqa:test", data_dir=pmc, with_choices=True)
    assert "B: Computed tomography" in recs[0].question and not recs[0].open_ended
    assert load_records("pmc_vqa:test", data_dir=pmc, with_choices=True, open_only=True) == []


def _rec(rid, img, q="What organ is shown?", a="liver", **kw):
    return VQARecord(id=rid, images=[str(img)], question=q, answer=a, **kw)


def test_medthink_join_reports_matched_and_unmatched(tmp_path):
    img = _img(tmp_path / "imgs" / "synpic1.jpg")
    slake_img = _img(tmp_path / "slake" / "xmlab3" / "source.jpg")
    recs = [_rec("a", img), _rec("b", img, q="What is abnormal?", a="mass"),
            _rec("c", slake_img, q="Where is the liver?", a="Left", extras={"img_id": 3})]
    rationale = {
        "q1": {"image": "images/synpic1.jpg", "question": "What  organ is shown?", "choices": [], "answer": "Liver", "solution": "The CT shows the liver."},
        "q2": {"img_id": 3, "img_name": "xmlab3/source.jpg", "question": "Where is the liver?", "choices": ["Left", "Right"], "answer": 0, "solution": "It lies on the image left."},
        "q3": {"image": "synpic9.jpg", "question": "Other?", "answer": "x", "solution": "unused"},
    }
    path = tmp_path / "medthink.json"
    path.write_text(json.dumps(rationale))
    out, report = attach_rationales(recs, path)
    assert report == {"matched": 2, "unmatched_records": 1, "unused_rationales": 1, "ambiguous": 0}
    assert out[0].gold_reasoning == "The CT shows the liver." and out[1].gold_reasoning is None
    assert out[2].gold_reasoning == "It lies on the image left."  # answer given as an index into choices
    kept, _ = attach_rationales(recs, path, keep_unmatched=False)
    assert [r.id for r in kept] == ["a", "c"]
    _, rep = attach_rationales(recs, path, normalize=False)  # double space and case now differ
    assert rep["matched"] == 1


def test_jsonl_round_trip_and_relative_images(tmp_path):
    img = _img(tmp_path / "data" / "a.jpg")
    recs = [_rec("r1", img, key_steps=["liver"], extras={"lang": "en"}), _rec("r2", img, a="7")]
    path = write_jsonl(recs, tmp_path / "data" / "recs.jsonl")
    assert read_jsonl(path) == recs
    # relative image paths resolve against the file's folder
    (tmp_path / "data" / "rel.jsonl").write_text(json.dumps({"id": "x", "images": ["a.jpg"], "question": "q?", "answer": 4}) + "\n")
    (r,) = load_records(f"jsonl:{tmp_path / 'data' / 'rel.jsonl'}")
    assert r.images == [str(img.resolve())] and r.answer == "4"


def test_malformed_jsonl_names_file_and_line(tmp_path):
    img = _img(tmp_path / "a.jpg")
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"id": "ok", "images": [str(img)], "question": "q?", "answer": "a"})
    path.write_text(good + "\n" + json.dumps({"id": "e", "images": [str(img)], "question": "", "answer": "a"}) + "\n{not json\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2 \(id 'e'\): empty or missing 'question'"):
        read_jsonl(path)
    report: dict = {}
    recs = load_records(f"jsonl:{path}", skip_invalid=True, report=report)
    assert [r.id for r in recs] == ["ok"] and report["invalid"] == 2 and "bad.jsonl:3" in report["errors"][1]


def test_missing_image_error_names_record(tmp_path):
    img = _img(tmp_path / "a.jpg")
    (tmp_path / "broken.jpg").write_bytes(b"not an image")
    recs = [_rec("fine", img), _rec("gone", tmp_path / "missing.jpg"), _rec("junk", tmp_path / "broken.jpg")]
    path = write_jsonl(recs, tmp_path / "r.jsonl")
    with pytest.raises(DataError, match=r"r.jsonl: record 'gone': missing image .*missing.jpg"):
        load_records(f"jsonl:{path}")
    report: dict = {}
    assert [r.id for r in load_records(f"jsonl:{path}", skip_invalid=True, report=report)] == ["fine"]
    assert report["invalid"] == 2 and "unreadable image" in report["errors"][1]


def test_missing_dataset_folder_says_where_to_get_it(tmp_path):
    with pytest.raises(DataError, match="osf.io"):
        load_records("vqa_rad", data_dir=tmp_path)
    with pytest.raises(DataError, match="unknown data source"):
        load_records("nope", data_dir=tmp_path)


def test_hf_dataset_saved_to_disk(tmp_path):
    import datasets

    imgs = [str(_img(tmp_path / f"i{k}.png", (k * 40, 0, 0))) for k in range(2)]
    ds = datasets.Dataset.from_dict(
        {"image": imgs, "question": ["What is it?", "Is it CT?"], "answer": ["mass", "yes"], "modality": ["CT", "CT"], "note": ["n1", "n2"]},
        features=datasets.Features({"image": datasets.Image(), "question": datasets.Value("string"), "answer": datasets.Value("string"),
                                    "modality": datasets.Value("string"), "note": datasets.Value("string")}),
    )
    datasets.DatasetDict({"test": ds}).save_to_disk(str(tmp_path / "hfds"))
    recs = load_records(f"hf:{tmp_path / 'hfds'}", split="test")
    assert [(r.answer, r.open_ended, r.split, r.extras["note"]) for r in recs] == [("mass", True, "test", "n1"), ("yes", False, "test", "n2")]
    with Image.open(recs[0].images[0]) as im:
        assert im.size == (16, 12)
