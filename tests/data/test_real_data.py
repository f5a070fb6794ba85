"""medrl.data loaders on the real VQA-RAD and SLAKE copies (../shared/data)."""

from __future__ import annotations

from collections import Counter

from PIL import Image

from medrl.data import load_records
from medrl.data.sources.slake import load_slake
from medrl.common.modality import MODALITY_TAGS


def test_vqa_rad_official_counts(data_dir):
    recs = load_records("vqa_rad", data_dir=data_dir)
    assert len(recs) == 2248
    assert Counter(r.split for r in recs) == {"train": 1797, "test": 451}
    assert all(isinstance(r.answer, str) and r.answer for r in recs)
    assert len({r.id for r in recs}) == 2248
    # qid "0" (a string) and int qids normalise alike; int answers become strings
    by_id = {r.id: r for r in recs}
    assert by_id["vqa_rad-0"].extras["qid"] == "0"
    assert by_id["vqa_rad-1511"].answer == "4"
    assert {r.answer_type for r in recs} == {"OPEN", "CLOSED"}  # "CLOSED " lost its space
    assert all(r.modality_tag in MODALITY_TAGS for r in recs)
    assert Counter(r.extras["modality_source"] for r in recs)["modality_question"] > 0


def test_vqa_rad_open_ended_test_split(data_dir):
    test = load_records("vqa_rad:test", data_dir=data_dir, validate=False)
    assert len(load_records("vqa_rad", split="test", data_dir=data_dir, open_only=True)) == 200  # MRPO App. C.1
    assert sum(r.answer_type == "OPEN" for r in test) == 179  # the dataset's own field alone
    assert len(load_records("vqa_rad:test", data_dir=data_dir, open_only="answer_type", validate=False)) == 179
    assert len(load_records("vqa_rad:test", data_dir=data_dir, open_only="strict", validate=False)) == 179


def test_vqa_rad_modality_from_own_questions(data_dir):
    recs = load_records("vqa_rad", data_dir=data_dir, validate=False)
    img = {r.extras["image_name"]: r for r in recs}
    # "What type of imaging is this?" -> "MRI Diffusion Weighted" on synpic54610
    assert img["synpic54610.jpg"].modality == "MRI" and img["synpic54610.jpg"].extras["modality_source"] == "modality_question"
    # "What type of image is this?" -> "Chest X-ray"
    assert img["synpic42202.jpg"].modality_tag == "X_RAY"


def test_vqa_rad_mevf_layout(data_dir):
    recs = load_records("vqa_rad", data_dir=data_dir, layout="mevf", validate=False)
    assert Counter(r.split for r in recs) == {"train": 3064, "test": 451}
    assert all(r.source == "vqa_rad_mevf" and isinstance(r.answer, str) for r in recs)


def test_slake_english_counts(data_dir):
    raw_train = load_slake(data_dir, "train", drop_empty=False)
    assert len(raw_train) == 4919  # the published SLAKE-EN train split
    assert all(isinstance(r.answer, str) for r in raw_train)
    assert [r.id for r in raw_train if not r.answer] == ["slake-281-3"]  # a defect of the release
    report: dict = {}
    train = load_records("slake", split="train", data_dir=data_dir, report=report)
    assert len(train) == 4918 and report["empty_answers"][0].startswith("slake-281-3")
    val = load_records("slake:validate", data_dir=data_dir)
    assert len(val) == 1053
    assert {r.lang for r in train + val} == {"en"}
    assert {r.modality_tag for r in val} == {"CT_SCAN", "MRI_SCAN", "X_RAY"}
    assert all(r.organ for r in val)
    zh = load_slake(data_dir, "validate", lang="zh")
    assert zh and {r.lang for r in zh} == {"zh"}


def test_every_image_opens(data_dir):
    paths = {p for src in ("vqa_rad", "slake") for r in load_records(src, data_dir=data_dir, validate=False) for p in r.images}
    assert len(paths) == 314 + 546  # synpic35356.jpg is referenced by no VQA-RAD record
    for p in sorted(paths):
        with Image.open(p) as im:
            im.verify()
