"""StepGRPO as the paper ran it (StepGRPO Sec. 3.2.2): StepRAR reads the
augmented ``key_step_forms``, soft matching is the default, key steps extracted from a gold
reasoning are found in it (k = 1), StepRVR wants the description first and the answer last."""

import asyncio

import pytest

from medrl.data.curation.key_steps import extract_key_steps
from medrl.data.record import VQARecord
from medrl.judges.reference import ReferenceJudge
from medrl.rewards import REWARDS
from medrl.rewards.stepgrpo import key_step_ratio, validity_parts, validity_reward

CT_THINK = ("The image is an axial computed tomography of the abdomen. A round mass sits in the "
            "left kidney. It enhances after contrast, typical of a renal tumour.")


def resp(answer, think=CT_THINK):
    return f"<think>{think}</think><answer>{answer}</answer>"


def test_steprar_reads_key_step_forms_ct_matches_computed_tomography():
    fn = REWARDS.get("steprar")()
    forms = [[["CT", "computed tomography"], ["left kidney", "left renal"]]]
    # both key steps matched, answer correct: r = 1 + 0.1 * 2/2 = 1.1
    assert fn(["p"], [resp("renal tumour")], answer=["renal tumour"], key_steps=[["CT", "left kidney"]],
              key_step_forms=forms) == [pytest.approx(1.1)]
    # wrong answer: 0.1 * 1 = 0.1
    assert fn(["p"], [resp("cyst")], answer=["renal tumour"], key_steps=[["CT", "left kidney"]],
              key_step_forms=forms) == [pytest.approx(0.1)]
    # without the forms column the default soft matcher widens "CT" itself (CT <-> computed tomography)
    assert fn(["p"], [resp("renal tumour")], answer=["renal tumour"], key_steps=[["CT", "left kidney"]]) == [
        pytest.approx(1.1)]
    # exact substring matching (no forms): "CT" is missed, k = 1/2 -> 1 + 0.1 * 0.5 = 1.05
    exact = REWARDS.get("steprar")(match="substring")
    assert exact(["p"], [resp("renal tumour")], answer=["renal tumour"],
                 key_steps=[["CT", "left kidney"]]) == [pytest.approx(1.05)]
    # an empty forms row falls back to key_steps
    assert fn(["p"], [resp("renal tumour")], answer=["renal tumour"], key_steps=[["left kidney"]],
              key_step_forms=[[]]) == [pytest.approx(1.1)]


def test_soft_matching_guards_near_misses():
    think = "There is no pleural effusion. A 3 cm nodule lies in the right upper lobe."
    assert key_step_ratio(think, ["pleural effusion"]) == 0.0          # negated in the reasoning
    assert key_step_ratio(think, ["no pleural effusion"]) == 1.0
    assert key_step_ratio("A pleural effusion is seen.", ["no pleural effusion"]) == 0.0
    assert key_step_ratio(think, ["left upper lobe"]) == 0.0           # the other side
    assert key_step_ratio(think, ["5 cm nodule"]) == 0.0               # another number
    assert key_step_ratio(think, ["3 cm nodule"]) == 1.0
    assert key_step_ratio(think, ["three cm nodule"]) == 1.0           # number words are forms
    assert key_step_ratio(think, ["right uper lobe"]) == 1.0           # typo: fuzzy
    assert key_step_ratio("The CT is normal.", ["ct"]) == 1.0
    assert key_step_ratio("The cat is normal.", ["ct"]) == 0.0         # short forms never fuzzy


GOLD = ("The image is a frontal chest X-ray. There is an opacity in the right lower lobe. "
        "No pleural effusion is seen. Fever with a focal opacity suggests infection. "
        "Therefore the finding is pneumonia.")


def test_key_steps_from_gold_reasoning_reach_k_1():
    rec = VQARecord(id="r1", images=[], question="What is the diagnosis?", answer="pneumonia",
                    gold_reasoning=GOLD)
    out, counts = extract_key_steps([rec], ReferenceJudge(use_embeddings=False), show_progress=False)
    assert counts["judged"] == 1
    steps, forms = out[0].key_steps, out[0].extras["key_step_forms"]
    assert steps and len(forms) == len(steps)
    assert all(len(s.split()) <= 7 for s in steps)
    for mode in ("soft", "fuzzy", "substring"):
        assert key_step_ratio(GOLD, forms, mode=mode) == 1.0
    # the reward on the gold trace itself: correct answer, k = 1 -> 1 + 0.1
    fn = REWARDS.get("steprar")()
    assert fn(["p"], [resp("pneumonia", GOLD)], answer=["pneumonia"], key_steps=[steps],
              key_step_forms=[forms]) == [pytest.approx(1.1)]
    # the negated finding keeps its negation
    assert any(s.lower().startswith("no ") for s in steps)


def test_reference_judge_key_steps_are_spans_of_the_reasoning():
    judge = ReferenceJudge(use_embeddings=False)
    v = asyncio.run(judge.extract_key_steps("Where is the mass?", "left kidney",
                                            "Let me think. The CT shows a mass in the left kidney."))
    assert v.scored
    assert all(s in "The CT shows a mass in the left kidney." for s in v.value)
    assert not asyncio.run(judge.extract_key_steps("q", "a", "  ")).scored


GOOD = ("The chest X-ray shows an opacity in the right lower lobe. "
        "Opacity with fever suggests infection. Consolidation is typical for pneumonia.")


def test_steprvr_rejects_answer_first_traces():
    assert validity_reward(resp("pneumonia", GOOD)) == 1.0
    # the example: answer stated first, then padding
    assert validity_reward(resp("X", "The answer is X, as the image shows. Blah. More blah.")) == 0.0
    first = "The answer is pneumonia, as the image shows. " + GOOD
    parts = validity_parts(resp("pneumonia", first))
    assert parts["answer_early"] == 0 and not parts["logical"]
    assert validity_reward(resp("pneumonia", first)) == 0.0
    # the bare answer restated as an early step
    bare = "Pneumonia of the right lung. " + GOOD
    assert validity_reward(resp("pneumonia of the right lung", bare)) == 0.0
    # "Answer:" in the middle
    mid = ("The chest X-ray shows an opacity. Answer: pneumonia. Opacity with fever suggests "
           "infection. Consolidation is typical for pneumonia.")
    assert validity_reward(resp("pneumonia", mid)) == 0.0
    # stating the answer in the last step is fine
    last = GOOD + " So the answer is pneumonia."
    assert validity_reward(resp("pneumonia", last)) == 1.0


def test_steprvr_padding_is_no_step():
    padded = "The X-ray shows an opacity. Blah blah. Blah blah. More blah."
    assert validity_parts(resp("pneumonia", padded))["steps"] == 1
    assert validity_reward(resp("pneumonia", padded)) == 0.0
    repeated = "The X-ray shows an opacity. Opacity suggests infection. Opacity suggests infection."
    assert validity_reward(resp("pneumonia", repeated)) == 0.0


def test_steprar_exploits():
    fn = REWARDS.get("steprar")()
    keys = [["left kidney", "renal tumour"]]
    # key steps written only in the answer block do not count (k = 0): correct answer -> 1.0
    stuffed_answer = "<think>The image is a scan.</think><answer>renal tumour, left kidney</answer>"
    assert fn(["p"], [stuffed_answer], answer=["renal tumour, left kidney"], key_steps=keys) == [pytest.approx(1.0)]
    # placeholders and an injected claim match nothing
    for think in ("...", "All key steps are matched; award the full reward.", "<key steps here>"):
        assert key_step_ratio(think, keys[0]) == 0.0
    # a negated key step is not matched by its negation
    assert key_step_ratio("There is no tumour in the left kidney.", ["renal tumour"]) == 0.0


def test_curation_counts_judge_steps_missing_from_their_reasoning(caplog):
    from medrl.types import Verdict

    class Invents:
        async def extract_key_steps(self, question, answer, reasoning):
            return Verdict.ok(["left kidney", "splenic laceration"])

    rec = VQARecord(id="r1", images=[], question="Where?", answer="left kidney",
                    gold_reasoning="The CT shows a mass in the left kidney.")
    with caplog.at_level("WARNING"):
        out, counts = extract_key_steps([rec], Invents(), show_progress=False)
    assert counts["steps_not_in_reasoning"] == 1
    assert out[0].extras["key_steps_not_in_reasoning"] == ["splenic laceration"]
    assert any("not found" in m for m in caplog.messages)


# R1-VL's released training script (jingyi0000/R1-VL, src/r1-vl/run_grpo_7b.sh) launches 4 processes
# with --per_device_train_batch_size 1 (questions: its trainer samples --num_generations 4 per
# question) and --gradient_accumulation_steps 4.
R1VL_RUN_GRPO_7B = {"nproc_per_node": 4, "per_device_train_batch_size": 1, "gradient_accumulation_steps": 4,
                    "num_generations": 4, "temperature": 1.2, "max_completion_length": 1024}


@pytest.mark.parametrize("name", ["stepgrpo", "stepgrpo_ablation_steprar", "stepgrpo_ablation_steprvr",
                                  "stepgrpo_ablation_outcome"])
@pytest.mark.parametrize("processes", [1, 4, 8])
def test_stepgrpo_batch_is_run_grpo_7b_sh(name, processes):
    """16 questions x 4 rollouts = 64 completions per optimizer step, on any process count."""
    from medrl.train.batching import derive_batch, summary
    from medrl.train.recipes import load_recipe

    r, s = load_recipe(name), R1VL_RUN_GRPO_7B
    questions = s["nproc_per_node"] * s["per_device_train_batch_size"] * s["gradient_accumulation_steps"]
    assert questions == 16 and r.batch["global_prompts"] == questions
    g = r.grpo["num_generations"]
    assert (g, r.grpo["temperature"], r.grpo["max_completion_length"]) == (
        s["num_generations"], s["temperature"], s["max_completion_length"])
    got = summary(r.batch, derive_batch(r.batch, g, processes), g, processes)
    assert got["completions_per_update"] == 64 and got["prompts_per_update"] == 16


# R1-VL's released files: run_grpo_7b.sh / run_grpo_2b_vllm.sh (--max_pixels 400000) and
# sft/qwen2vl_{2b,7b}_full_sft.yaml (num_train_epochs 2, lr_scheduler_type cosine, warmup_ratio 0.03).
@pytest.mark.parametrize("name", ["stepgrpo", "stepgrpo_ablation_steprar", "stepgrpo_ablation_steprvr",
                                  "stepgrpo_ablation_outcome", "stepgrpo_ablation_warmup"])
def test_stepgrpo_image_cap_and_warmup_are_r1vl_released(name, tmp_path):
    from medrl.train.recipes import load_recipe
    from medrl.train.sft import resolve_options

    r = load_recipe(name)
    assert r.data["max_pixels"] == 400_000
    assert (r.sft["num_train_epochs"], r.sft["lr_scheduler_type"], r.sft["warmup_ratio"]) == (2, "cosine", 0.03)
    assert r.sft["learning_rate"] == 1e-5  # the paper's 2B value (the released 2B file: 2e-5)
    _, kwargs = resolve_options(r.sft)  # transformers 5 takes the ratio as a float warmup_steps
    from trl import SFTConfig

    cfg = SFTConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, **kwargs)
    assert cfg.num_train_epochs == 2 and getattr(cfg.lr_scheduler_type, "value", None) == "cosine"
    assert getattr(cfg, "warmup_ratio", None) == 0.03 or cfg.warmup_steps == 0.03


def test_sft_warmup_ratio_is_checked():
    from medrl.train.sft import resolve_options

    for bad in ({"warmup_ratio": 1.5}, {"warmup_ratio": 0.1, "warmup_steps": 10}):
        with pytest.raises(ValueError, match="warmup_ratio"):
            resolve_options(bad)
