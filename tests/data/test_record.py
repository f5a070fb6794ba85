"""Record type, filters, prompts, SFT targets, and the HF dataset TRL trains on."""

from __future__ import annotations

import pytest
from PIL import Image

from medrl.data import VQARecord, deduplicate, filter_language, filter_open, format_target, to_hf_dataset
from medrl.data.prompts import SYSTEM_PROMPTS, build_prompt, evidence_reasoning
from medrl.data.record import is_yes_no
from medrl.common.modality import MODALITY_TAGS


@pytest.fixture()
def img(tmp_path):
    p = tmp_path / "a.png"
    Image.new("RGB", (8, 8), (10, 20, 30)).save(p)
    return str(p)


def rec(rid, answer, img, answer_type=None, **kw):
    from medrl.data.record import is_open_ended_answer

    extras = kw.pop("extras", {})
    return VQARecord(id=rid, images=[img], question=kw.pop("question", f"Question {rid}?"), answer=answer,
                     answer_type=answer_type, open_ended=is_open_ended_answer(answer, multiple_choice=bool(extras.get("choices_in_prompt"))),
                     extras=extras, **kw)


def test_yes_no_detection():
    assert all(is_yes_no(a) for a in ("yes", "No", " YES. ", "no!"))
    assert not any(is_yes_no(a) for a in ("yesterday", "not seen", "", None, "left"))


def test_open_filters_modes(img):
    recs = [rec("1", "Yes", img, "CLOSED"), rec("2", "Left", img, "CLOSED"), rec("3", "mass", img, "OPEN"),
            rec("4", "no", img, "OPEN"), rec("5", "Right", img, "OPEN", extras={"choices_in_prompt": True})]
    assert [r.id for r in filter_open(recs)] == ["2", "3"]  # papers: no yes/no, no multiple choice
    assert [r.id for r in filter_open(recs, "answer_type")] == ["3", "4", "5"]
    assert [r.id for r in filter_open(recs, "strict")] == ["3"]
    with pytest.raises(ValueError):
        filter_open(recs, "bogus")


def test_language_and_dedup(img):
    recs = [rec("1", "a", img, extras={"lang": "en"}, question="What?"), rec("2", "A ", img, extras={"lang": "en"}, question="what? "),
            rec("3", "b", img, extras={"lang": "zh"})]
    assert [r.id for r in filter_language(recs, "en")] == ["1", "2"]
    assert [r.id for r in filter_language(recs, ["en", "zh"])] == ["1", "2", "3"]
    report: dict = {}
    assert [r.id for r in deduplicate(recs, report=report)] == ["1", "3"] and report["duplicates"] == 1
    assert len(deduplicate(recs, by="id")) == 3


def test_format_target_gold_and_evidence(img):
    r = rec("1", "Liver", img, modality="CT", modality_tag="CT_SCAN", organ="Abdomen", gold_reasoning="Axial CT. The liver is enlarged.")
    assert format_target(r) == "<think>Axial CT. The liver is enlarged.</think><answer>Liver</answer>"
    assert format_target(r, "modality_think_answer").startswith("CT_SCAN <think>")
    assert format_target(r, "plain") == "Liver"
    no_gold = rec("2", "Liver", img, modality="CT", modality_tag="CT_SCAN", organ="Abdomen")
    target = format_target(no_gold)
    assert target == f"<think>{evidence_reasoning(no_gold)}</think><answer>Liver</answer>"
    assert "CT" in target and "abdomen" in target
    assert format_target(rec("3", "x", img), "modality_think_answer").startswith("OTHER <think>")
    assert no_gold.evidence() == {"modality": "CT", "modality_tag": "CT_SCAN", "organ": "Abdomen", "answer": "Liver",
                                  "question_type": None, "findings": None}


def test_system_prompts_own_words():
    assert set(SYSTEM_PROMPTS) == {"think_answer", "modality_think_answer", "plain"}
    assert "<think>" in SYSTEM_PROMPTS["think_answer"] and "<answer>" in SYSTEM_PROMPTS["think_answer"]
    assert all(tag in SYSTEM_PROMPTS["modality_think_answer"] for tag in MODALITY_TAGS)
    assert "<think>" not in SYSTEM_PROMPTS["plain"]


def test_hf_dataset_columns_and_trl_prompt(img):
    from trl.data_utils import is_conversational, prepare_multimodal_messages

    recs = [rec("1", "Liver", img, "OPEN", modality="CT", modality_tag="CT_SCAN", organ="Abdomen", key_steps=["liver"],
                extras={"key_step_forms": [["liver", "hepatic"]]}),
            rec("2", "yes", img, "CLOSED")]
    ds = to_hf_dataset(recs, prompt_style="modality_think_answer")
    for col in ("prompt", "image", "answer", "question", "modality", "modality_tag", "organ", "gold_reasoning",
                "key_steps", "evidence", "answer_type", "record_id"):
        assert col in ds.column_names
    row = ds[0]
    assert isinstance(row["image"], Image.Image) and row["answer"] == "Liver" and row["key_steps"] == ["liver"]
    assert row["key_step_forms"] == [["liver", "hepatic"]] and ds[1]["key_steps"] is None
    assert row["evidence"]["organ"] == "Abdomen" and row["record_id"] == "1"
    assert row["prompt"][0]["content"][0]["text"] == SYSTEM_PROMPTS["modality_think_answer"]
    assert is_conversational({"prompt": row["prompt"]})
    # what GRPOTrainer does with an `image` column: fill the placeholder with the image
    filled = prepare_multimodal_messages(row["prompt"], images=[row["image"]])
    user = filled[1]["content"]
    assert user[0]["type"] == "image" and user[0]["image"] is row["image"]
    assert user[1] == {"type": "text", "text": "Question 1?"}
    assert build_prompt(recs[0])[1]["content"][0] == {"type": "image", "text": None}


def test_hf_dataset_multi_image_uses_images_column(img, tmp_path):
    other = tmp_path / "b.png"
    Image.new("RGB", (4, 4)).save(other)
    r = VQARecord(id="m", images=[img, str(other)], question="Compare?", answer="bigger")
    ds = to_hf_dataset([r])
    assert "images" in ds.column_names and len(ds[0]["images"]) == 2
    assert sum(p["type"] == "image" for p in ds[0]["prompt"][1]["content"]) == 2


def test_import_is_light():
    import subprocess
    import sys

    code = ("import sys, medrl.data, medrl.commands.data; "
            "print(sorted(m for m in ('torch', 'datasets', 'sklearn', 'transformers', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
