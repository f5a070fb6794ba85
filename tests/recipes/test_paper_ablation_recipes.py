"""The papers' ablation recipes (CAPO Tables 5-8, StepGRPO Tables 2 and 4) and the paper settings
of the main recipes: every new recipe passes ``medrl train --dry-run`` (full and ``--profile cpu``),
its values are the paper's, and a representative few run one RL step on a tiny Qwen2.5-VL."""

from __future__ import annotations

import pytest

from medrl.train.recipes import build_grpo_config, load_recipe

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

CAPO_ABLATIONS = ["capo_ablation_t0", "capo_ablation_t300", "capo_ablation_mask", "capo_ablation_crop",
                  "capo_ablation_ratio_211", "capo_ablation_ratio_111", "capo_ablation_tau01", "capo_ablation_tau05"]
STEPGRPO_ABLATIONS = ["stepgrpo_ablation_steprar", "stepgrpo_ablation_steprvr", "stepgrpo_ablation_outcome",
                      "stepgrpo_ablation_warmup"]
NEW = CAPO_ABLATIONS + STEPGRPO_ABLATIONS


@pytest.mark.parametrize("name", NEW)
def test_dry_run(name, tmp_path, capsys):
    from medrl.cli import main

    assert main(["train", "--recipe", name, "--dry-run"]) == 0
    assert main(["train", "--recipe", name, "--dry-run", "--profile", "cpu", "--model", "tiny",
                 "--out", str(tmp_path / "run")]) == 0
    assert name in capsys.readouterr().out


@pytest.mark.parametrize("name, capo", [
    ("capo_ablation_t0", {"kind": "diffusion", "t": 0}), ("capo_ablation_t300", {"kind": "diffusion", "t": 300}),
    ("capo_ablation_mask", {"kind": "mask", "t": 100}), ("capo_ablation_crop", {"kind": "crop", "t": 100}),
])
def test_capo_corruption_ablations(name, capo):
    r = load_recipe(name)
    assert {k: r.algorithm["capo"][k] for k in ("kind", "t")} == capo
    assert [x["name"] for x in r.rewards] == ["capo_accuracy", "capo_consistency", "capo_perception"]
    assert r.grpo == load_recipe("capo").grpo  # only the ablated setting differs


@pytest.mark.parametrize("name, dar, pcr, cdr, tau", [
    ("capo_ablation_ratio_211", 0.5, 0.25, 0.25, 0.3),       # Table 7: 2:1:1
    ("capo_ablation_ratio_111", 0.3333, 0.3333, 0.3333, 0.3),  # Table 7: 1:1:1
    ("capo_ablation_tau01", 0.8, 0.1, 0.1, 0.1),             # Table 8
    ("capo_ablation_tau05", 0.8, 0.1, 0.1, 0.5),
])
def test_capo_reward_ablations_by_hand(name, dar, pcr, cdr, tau):
    from medrl.rewards.capo import perception_consistency_reward

    from medrl.train.recipes import reward_options

    recipe = load_recipe(name)
    # the values reach the rewards from algorithm.capo (one place; R_DAR once for both rewards that use it)
    opts = {x["name"]: o for x, o in zip(recipe.rewards, reward_options(recipe))}
    assert opts["capo_accuracy"]["r_dar"] == pytest.approx(dar) and opts["capo_perception"]["r_dar"] == pytest.approx(dar)
    assert opts["capo_perception"]["r_pcr"] == pytest.approx(pcr)
    assert opts["capo_consistency"]["r_cdr"] == pytest.approx(cdr)
    assert opts["capo_perception"]["tau"] == pytest.approx(tau)
    assert recipe.algorithm["capo"]["r_dar"] == pytest.approx(dar)
    # Eq. 3 still pays exactly when o is right and o~ wrong
    assert perception_consistency_reward(True, False, dar, pcr, tau) == pytest.approx(pcr)
    assert perception_consistency_reward(True, True, dar, pcr, tau) == 0.0
    assert perception_consistency_reward(False, True, dar, pcr, tau) == 0.0


def test_stepgrpo_ablations():
    full = load_recipe("stepgrpo")
    rar, rvr, out = (load_recipe(f"stepgrpo_ablation_{n}") for n in ("steprar", "steprvr", "outcome"))
    assert [x["name"] for x in rar.rewards] == ["steprar"] and [s["kind"] for s in rar.stages] == [
        "key_steps", "sft", "rl"]
    assert [(x["name"], x["weight"]) for x in rvr.rewards] == [("steprvr", 1.0), ("steprar", 0.0)]  # StepRAR logged only
    assert [s["kind"] for s in rvr.stages] == ["sft", "rl"]
    from medrl.train.recipes import reward_options

    assert out.rewards[0]["options"] == {"missing_key_steps": "zero"} and out.algorithm["stepgrpo"]["alpha"] == 0.0
    assert reward_options(out) == [{"alpha": 0.0, "missing_key_steps": "zero"}]  # StepRAR with alpha = 0 (Eq. 2)
    assert reward_options(full)[0]["alpha"] == pytest.approx(0.1)
    for r in (rar, rvr, out):
        assert r.grpo == full.grpo and r.sft == full.sft
    warm = load_recipe("stepgrpo_ablation_warmup")
    assert not warm.rewards and warm.sft == full.sft
    # Sec. 4.2: warm-up batch 128 in total on the paper's 4 GPUs
    assert warm.sft["per_device_train_batch_size"] * warm.sft["gradient_accumulation_steps"] * 4 == 128


def test_outcome_reward_is_answer_correctness_by_hand():
    from medrl.rewards import REWARDS

    fn = REWARDS.get("steprar")(alpha=0.0, missing_key_steps="zero")
    out = fn(prompts=["q"] * 3, completions=["<think>a. b.</think><answer>liver</answer>",
                                             "<think>a. b.</think><answer>lung</answer>",
                                             "<think>a. b.</think>"],
             answer=["liver"] * 3, question=["Which organ?"] * 3)
    assert out == [1.0, 0.0, 0.0]


def test_main_recipes_take_the_papers_settings(tmp_path):
    mrpo = load_recipe("mrpo")  # dmis-lab/MRPO Train_MRPO.sh
    assert mrpo.grpo["max_completion_length"] == 512 and mrpo.data["max_pixels"] == 802816
    # ARMed: 2 completions per GPU x 2 accumulation x 4 GPUs = 16 completions = 2 prompts x 8
    for n in ("armed", "armed_ablation_nosemantic", "armed_ablation_raw"):
        r = load_recipe(n, num_processes=4)
        assert r.batch["global_prompts"] * r.grpo["num_generations"] == 16 == (
            r.grpo["per_device_train_batch_size"] * r.grpo["gradient_accumulation_steps"] * 4)
    assert [x["name"] for x in load_recipe("armed_ablation_nosemantic").rewards] == ["armed_textual"]
    for n in ("medix_r1", "medix_r1_ablation_embed", "medix_r1_ablation_llm", "medix_r1_ablation_llm_embed"):
        assert build_grpo_config(load_recipe(n), tmp_path, use_cpu=True).delta == 3.0  # App. A.8 clip_ratio_dual
    sft = load_recipe("stepgrpo").sft
    assert sft["per_device_train_batch_size"] * sft["gradient_accumulation_steps"] * 4 == 128


# ----------------------------------------------------------------------------- one tiny step


@pytest.fixture(scope="module")
def records(data_dir):
    from medrl.data import load_records

    return load_records("vqa_rad", split="train", data_dir=data_dir, open_only=True, limit=2)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, records):
    from medrl.models import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"), texts=[r.question for r in records], seed=0)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", ["capo_ablation_mask", "capo_ablation_ratio_211", "stepgrpo_ablation_outcome"])
def test_one_tiny_rl_step(name, tiny, records, tmp_path):
    from medrl.judges import build_judge
    from medrl.train.pipeline import train_rl

    recipe = load_recipe(name, profile="cpu", overrides=["grpo.max_steps=1", "grpo.max_completion_length=8",
                                                         "grpo.save_strategy='no'"])
    res = train_rl(recipe, tiny, records, tmp_path / name, judge=build_judge("reference"), train=False,
                   grpo_overrides={"report_to": "none"})
    res.trainer.train()
    assert res.trainer.state.global_step == 1
    logs = [h for h in res.trainer.state.log_history if "reward" in h]
    for r in recipe.rewards:
        assert any(f"rewards/{r['name']}/mean" in h for h in logs), r["name"]


def test_capo_tau_ablations_cannot_differ_from_the_main_run():
    """CAPO Table 8: with Eq. 2's binary R_DAR (0 or 0.8) the gap R_DAR(o) - R_DAR(o~) takes only
    -0.8, 0 and 0.8, so tau 0.1, 0.3 and 0.5 pay R_PCR on exactly the same rollouts; the recipes
    say so."""
    from medrl.rewards.capo import perception_consistency_reward

    cases = [(a, b) for a in (True, False) for b in (True, False)]
    main = [perception_consistency_reward(a, b) for a, b in cases]
    for name, tau in (("capo_ablation_tau01", 0.1), ("capo_ablation_tau05", 0.5)):
        assert [perception_consistency_reward(a, b, tau=tau) for a, b in cases] == main
        text = " ".join(load_recipe(name).description.split())
        assert "cannot differ from the main run" in text


def test_capo_recipes_cite_table_5_in_section_4_3():
    """The diffusion step (100) is CAPO's Table 5 in Sec. 4.3 (the paper has no Sec. 4.4)."""
    from pathlib import Path

    import medrl

    folder = Path(medrl.__file__).parent / "recipes"
    for path in sorted(folder.glob("capo*.yaml")):
        text = path.read_text()
        assert "Sec. 4.4" not in text, path.name
        if "t: 100 " in text:
            assert "Sec. 4.3, Table 5" in text, path.name
