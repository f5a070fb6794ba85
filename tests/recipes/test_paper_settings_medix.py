"""MediX-R1 modality tags for records that lack them (MediX-R1 Sec. 2.3.4):
the documented keyword heuristic, the explicit ``modality_tag`` column, and the rule that a
missing tag scores the modality term 0 - it never excludes a rollout."""

from __future__ import annotations

import csv

import pytest
import torch
from PIL import Image

from medrl.data import load_records
from medrl.common.modality import infer_modality_tag, keyword_modality_tag, question_modality_tag, record_modality_tag
from medrl.rewards import REWARDS

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")

HEADER = ["index", "Figure_path", "Question", "Answer", "Choice A", "Choice B", "Choice C", "Choice D",
          "Answer_label", "Caption", "modality_tag"]


def write_pmc(root, rows):
    (root / "pmc_vqa" / "images").mkdir(parents=True, exist_ok=True)
    with (root / "pmc_vqa" / "train.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for i, (fig, q, a, cap, tag) in enumerate(rows):
            Image.new("RGB", (28, 28), (40 * i, 80, 120)).save(root / "pmc_vqa" / "images" / fig)
            w.writerow([i, fig, q, a, "A:" + a, "B:other", "C:none", "D:all", "A", cap, tag])
    return root


@pytest.mark.parametrize("text,tag", [
    ("What does this CT scan show?", "CT_SCAN"),
    ("Axial computed tomography of the abdomen", "CT_SCAN"),
    ("PET/CT fusion image of the chest", "PET_SCAN"),            # specific before generic
    ("CT angiography of the circle of Willis", "ANGIOGRAPHY"),
    ("T2-weighted image of the knee", "MRI_SCAN"),
    ("Chest X-ray, PA view", "X_RAY"),
    ("H&E stain, 40x magnification", "MICROSCOPY"),
    ("Fundus photograph of the left eye", "FUNDUS_PHOTOGRAPHY"),
    ("Transabdominal ultrasound of the gallbladder", "ULTRASOUND"),
    ("Kaplan-Meier curve of survival", "GRAPHICS"),
    ("What is shown in the image?", None),
    ("Can you show us the radius?", None),                      # "us" is not ultrasound
    ("Mr. Smith's lesion", None),                               # "Mr." is not MR
])
def test_keyword_rule(text, tag):
    assert keyword_modality_tag(text) == tag


@pytest.mark.parametrize("question", [
    "Is this a CT?", "Is this image taken via X-Ray?", "Was this image taken with an MRI or CT scanner?",
    "Which type of modality is shown about this image, MRI, CT or X-Ray?", "Is the image an CT scan?",
    "What imaging modality was used?", "Does this show an MRI or a CT appearance?",
])
def test_questions_asking_for_the_modality_state_none(question):
    assert question_modality_tag(question) is None


def test_questions_stating_the_modality():
    assert question_modality_tag("Is there a mass on this CT?") == "CT_SCAN"
    assert question_modality_tag("Does this MRI show a lesion in the pons?") == "MRI_SCAN"
    assert question_modality_tag("What radiographic sign is seen in the intestines?") is None  # not X-ray


def test_infer_order_question_caption_file():
    assert infer_modality_tag("What is seen on this MRI?", "A CT image") == ("MRI_SCAN", "heuristic:question")
    assert infer_modality_tag("What is seen?", "A CT image") == ("CT_SCAN", "heuristic:caption")
    assert infer_modality_tag("What is seen?", None, ["imgs/PMC1_xray_fig2.jpg"]) == ("X_RAY", "heuristic:file")
    assert infer_modality_tag("What is seen?", "", []) == (None, None)
    assert infer_modality_tag("Is this a CT?", "Axial T2-weighted image") == ("MRI_SCAN", "heuristic:caption")


def test_pmc_vqa_loader_tags_and_column_override(tmp_path):
    write_pmc(tmp_path, [
        ("a.jpg", "What does the CT show?", "a mass", "", ""),                     # question
        ("b.jpg", "What is the finding?", "an effusion", "Chest radiograph of a child", ""),  # caption
        ("c.jpg", "What does the CT show?", "nodules", "", "MRI"),                 # explicit column wins
        ("d.jpg", "What is the finding?", "a cyst", "", ""),                       # untagged
    ])
    recs = load_records("pmc_vqa:train", data_dir=tmp_path)
    got = [(r.modality_tag, r.extras.get("modality_tag_source")) for r in recs]
    assert got == [("CT_SCAN", "heuristic:question"), ("X_RAY", "heuristic:caption"),
                   ("MRI_SCAN", "column"), (None, None)]
    assert [record_modality_tag(r)[1] for r in recs] == ["heuristic:question", "heuristic:caption", "column",
                                                         "untagged"]
    from medrl.commands.data import inspect_counts

    assert inspect_counts(recs)["modality_tag_source"] == {
        "heuristic:question": 1, "heuristic:caption": 1, "column": 1, "untagged": 1}


def test_modality_reward_untagged_is_zero_and_counted():
    fn = REWARDS.get("modality")()
    comps = ["CT_SCAN <think>x</think><answer>y</answer>"] * 3
    out = fn(["p"] * 3, comps, modality_tag=["CT_SCAN", None, None], modality=[None, None, None],
             question=["q", "What does this CT show?", "What is this?"])
    assert out == [1.0, 1.0, 0.0]  # the third has no tag anywhere: 0, not None
    assert fn.counts == {"rollouts": 3, "untagged": 1}
    logged = []
    fn(["p"], comps[:1], modality_tag=[None], question=["What is this?"], log_metric=lambda k, v: logged.append((k, v)))
    assert logged == [("modality/untagged_frac", 1.0)]


def test_pmc_vqa_fixture_trains_medix_r1_two_steps_without_exclusion(tmp_path):
    from medrl.judges import build_judge
    from medrl.models import build_tiny_vlm
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe
    from medrl.train.teacher import install_teacher

    write_pmc(tmp_path, [
        ("a.jpg", "What is the finding?", "pleural effusion", "Chest radiograph, frontal view", ""),
        ("b.jpg", "What is the finding?", "renal cyst", "", ""),  # no tag anywhere
    ])
    records = load_records("pmc_vqa:train", data_dir=tmp_path)
    assert [r.modality_tag for r in records] == ["X_RAY", None]

    def teacher(r):
        return f"{r.modality_tag or 'OTHER'} <think>The image shows the {r.answer}.</think><answer>{r.answer}</answer>"

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tiny = build_tiny_vlm(tmp_path / "tiny", texts=[r.question for r in records] + [teacher(r) for r in records])
        recipe = load_recipe("medix_r1", profile="cpu", overrides=["grpo.max_completion_length=32",
                                                                   "grpo.save_strategy='no'"])
        assert recipe.algorithm["unscorable"] == "exclude"
        res = train_rl(recipe, tiny, records, tmp_path / "run", judge=build_judge("reference"), train=False,
                       grpo_overrides={"report_to": "none"})
        tr = res.trainer
        install_teacher(tr, records, teacher, every=2)
        seen = []
        calc = tr._calculate_rewards

        def spy(*a, **k):
            rewards = calc(*a, **k)
            seen.append(rewards.detach().clone())
            return rewards

        tr._calculate_rewards = spy
        tr.train()
    finally:
        torch.set_num_threads(n)
    assert tr.state.global_step == 2
    rewards = torch.cat(seen)
    assert rewards.shape[0] == 4 and not torch.isnan(rewards).any(), "a rollout was excluded"
    modality_fn = next(f for f in tr.reward_funcs if getattr(f, "__name__", "") == "modality")
    assert modality_fn.counts["rollouts"] == 4 and modality_fn.counts["untagged"] == 2
    assert any("modality/untagged_frac" in h for h in tr.state.log_history)
