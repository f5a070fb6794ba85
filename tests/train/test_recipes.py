"""Recipes, config pass-through to TRL, reward building, reward-state checkpoint helpers and the
token-offset mapping of MedGRPOTrainer. No model is trained here (fast)."""

from __future__ import annotations

import json

import pytest

from medrl.train import recipes
from medrl.train.recipes import RecipeError, build_grpo_config, build_reward_funcs, load_recipe

ALL_RECIPES = ["armed", "armed_ablation_nosemantic", "armed_ablation_raw", "capo", "capo_ablation_cdr",
               "capo_ablation_dar", "capo_ablation_pcr", "capo_grpo", "dapo", "dr_grpo", "gdpo", "grpo", "gspo",
               "medix_r1", "medix_r1_ablation_embed", "medix_r1_ablation_llm", "medix_r1_ablation_llm_embed", "mrpo",
               "sft", "stepgrpo"]


def test_every_recipe_ships_and_loads_with_and_without_cpu_profile(tmp_path):
    assert set(ALL_RECIPES) <= set(recipes.list_recipes())  # plus the papers' ablation recipes
    for name in recipes.list_recipes():
        full = load_recipe(name)
        cpu = load_recipe(name, profile="cpu")
        assert full.name == name and cpu.profile == "cpu"
        if full.rewards:
            # what TRL's trainer is given, not the recipe's dict
            cpu_cfg = build_grpo_config(cpu, tmp_path, use_cpu=True)
            assert cpu_cfg.num_generations == 2 and cpu_cfg.max_steps == 2, name
            assert cpu_cfg.max_completion_length <= 24, name
            # the papers' group sizes, not the profile's
            assert build_grpo_config(full, tmp_path, use_cpu=True).num_generations >= 4, name


@pytest.mark.parametrize(
    "name, expected",
    [
        # MRPO App. C.2: 8 rollouts, lr 1e-6, beta 0.04, eps 0.2; Sec. 4.2: tau 0.6
        ("mrpo", {"num_generations": 8, "learning_rate": 1e-6, "beta": 0.04, "epsilon": 0.2}),
        # ARMed implementation details: 8 rollouts, temperature 0.7, 1024 new tokens, lr 1e-6, 1 epoch
        ("armed", {"num_generations": 8, "temperature": 0.7, "max_completion_length": 1024,
                   "learning_rate": 1e-6, "num_train_epochs": 1}),
        # CAPO implementation details: KL 1e-2, entropy 1e-3
        ("capo", {"beta": 0.01, "entropy_coef": 0.001}),
        # MediX-R1 App. A.8: 5 rollouts, temperature 1.0, KL 0.01, clip 0.2/0.3, lr 1e-6
        ("medix_r1", {"num_generations": 5, "temperature": 1.0, "beta": 0.01, "epsilon": 0.2,
                      "epsilon_high": 0.3, "learning_rate": 1e-6}),
        # StepGRPO Sec. 4.1: 4 rollouts, temperature 1.2, beta 0.04
        ("stepgrpo", {"num_generations": 4, "temperature": 1.2, "beta": 0.04}),
        ("gdpo", {"multi_objective_aggregation": "normalize_then_sum"}),
        ("dapo", {"loss_type": "dapo", "epsilon_high": 0.28, "beta": 0.0}),
        ("gspo", {"importance_sampling_level": "sequence"}),
        ("dr_grpo", {"loss_type": "dr_grpo", "scale_rewards": "none"}),
    ],
)
def test_papers_hyperparameters_reach_grpo_config(name, expected, tmp_path):
    cfg = build_grpo_config(load_recipe(name), tmp_path, use_cpu=True)
    for k, v in expected.items():
        assert getattr(cfg, k) == pytest.approx(v) if isinstance(v, float) else getattr(cfg, k) == v, k


def test_mrpo_options_and_reward_weights(tmp_path):
    import math

    import torch

    from medrl.methods import MedBatch, StepContext
    from medrl.answers.completion import completion_steps

    from medrl.methods.base import estimate_advantages
    from medrl.train.recipes import run_methods

    r = load_recipe("mrpo")
    alg, methods = r.algorithm, run_methods(r)
    # the MRPO method supplies the run's advantage inputs and config (algorithm.advantage = mrpo)
    (mrpo,) = [m for m in methods if m.advantage == alg["advantage"]]
    assert mrpo.name == "mrpo" and alg["advantage"] == "mrpo"
    assert mrpo.config.model_dump() == {"tau": 0.6, "shaping": "exponential", "strategy": "selective",
                                        "answer_reward": "mrpo_answer", "process_reward": "mrpo_process",
                                        "lambda1": 0.25, "lambda2": 0.5, "k_min": 4, "k_max": 10}
    # ... and those settings reach the token advantages (MRPO Eq. 7): the trainer's hook-5 step on a
    # batch of two rollouts of one text with steps invalid, valid, invalid and A_i = -1
    names = [x["name"] for x in r.rewards]
    # what the hooks see of the step (no trainer, no TRL)
    ctx = StepContext.for_test(args=None, reward_names=names, tokenizer=_CharTokenizer(), num_generations=2,
                               rows=2, reward_weights=torch.ones(len(names)))
    mrpo.setup(ctx)
    text = "<think>The lung is clear. The heart is large. It is cardiomegaly.</think><answer>cardiomegaly</answer>"
    ids = [ord(c) for c in text] + [0]  # one token per character, then EOS
    steps = completion_steps(text)
    assert len(steps) == 3
    r_ans = [0.58, 0.62]  # tau = 0.6: the first rollout is reshaped (R_ans <= tau), the second is not
    local = torch.zeros(2, len(names))
    local[:, names.index("mrpo_answer")] = torch.tensor(r_ans)
    batch = MedBatch(inputs=[{}, {}], texts=[text, text], completion_ids=[ids, ids], steps=[steps, steps],
                     step_verdicts=[[False, True, False]] * 2, local_rewards=local,
                     seq_advantages=torch.tensor([-1.0, -1.0]),
                     out={"completion_mask": torch.ones(2, len(ids)), "advantages": torch.tensor([-1.0, -1.0])})
    adv = estimate_advantages(ctx, batch, alg["advantage"], methods)
    assert adv.shape == (2, len(ids))
    # by hand: K = 3 steps, p_k = (k-1)/(K-1) = 0, 0.5, 1; exponential f(p) = exp(1 - p);
    # invalid step tokens -f(p_k)|A_i|, valid step tokens +|A_i|, every other token A_i
    want = [-math.e, 1.0, -1.0]
    for st, w in zip(steps, want):
        assert adv[0, st.start:st.end].tolist() == pytest.approx([w] * (st.end - st.start)), st.text
    outside = [t for t in range(len(ids)) if not any(st.start <= t < st.end for st in steps)]
    assert adv[0, outside].tolist() == pytest.approx([-1.0] * len(outside))  # tags, answer, EOS keep A_i
    assert adv[1].tolist() == pytest.approx([-1.0] * len(ids))  # R_ans > tau: not reshaped

    from medrl.judges import build_judge

    m = load_recipe("medix_r1")
    funcs, _ = build_reward_funcs(m, judge=build_judge("reference"))
    weights = dict(zip([f.__name__ for f in funcs], build_grpo_config(m, tmp_path, use_cpu=True).reward_weights))
    # MediX-R1 Sec. 2.3: 0.1 format + 0.9 x (0.575 LLM, 0.375 embedding, 0.05 modality)
    assert weights == pytest.approx({"format": 0.10, "medix_llm": 0.9 * 0.575, "medix_embed": 0.9 * 0.375,
                                     "modality": 0.9 * 0.05})
    # the weighted total TRL forms from them is the paper's composite reward
    from medrl.rewards.medix import composite_reward

    parts = {"format": 1.0, "medix_llm": 1.0, "medix_embed": 0.0, "modality": 1.0}
    assert sum(weights[k] * v for k, v in parts.items()) == pytest.approx(composite_reward(1.0, 1.0, 0.0, 1.0))

    # the SFT stage's settings (MRPO App. C.2): what medrl.train.sft hands to LoRA and SFTConfig
    from trl import SFTConfig

    from medrl.models.loading import LoraSpec
    from medrl.train.sft import resolve_options

    ours, sft_kwargs = resolve_options(load_recipe("sft").sft)
    lora = LoraSpec.coerce(ours["lora"])
    assert (lora.r, lora.alpha, lora.dropout) == (8, 32, 0.05)
    assert SFTConfig(output_dir=str(tmp_path), use_cpu=True, **sft_kwargs).learning_rate == 2e-5


def test_overrides_profiles_and_merge_order():
    r = load_recipe("mrpo", profile="cpu", overrides=["grpo.beta=0.0", "algorithm.mrpo.shaping=linear",
                                                      "grpo.num_generations=4"])
    assert r.grpo["beta"] == 0.0 and r.grpo["num_generations"] == 4  # --set wins over the profile
    assert r.algorithm["mrpo"]["shaping"] == "linear" and r.algorithm["mrpo"]["tau"] == 0.6
    assert r.overrides[0] == "grpo.beta=0.0"
    # a recipe's own profile refines the shared one (medix_r1 keeps 2 generations per prompt)
    assert load_recipe("medix_r1", profile="cpu").grpo["per_device_train_batch_size"] == 2
    assert recipes.deep_merge({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": 3}, "l": [2]}) == {
        "a": {"b": 3, "c": 2}, "l": [2]}


def test_bad_recipes_give_clear_errors(tmp_path):
    with pytest.raises(RecipeError, match="shipped recipes"):
        load_recipe("no_such_recipe")
    with pytest.raises(RecipeError, match="SECTION.KEY=VALUE"):
        load_recipe("grpo", overrides=["grpo.beta"])
    with pytest.raises(RecipeError, match="must start with one of"):
        load_recipe("grpo", overrides=["nonsense.beta=1"])
    with pytest.raises(RecipeError, match="unknown profile"):
        load_recipe("grpo", profile="gpu-cluster-9000")
    with pytest.raises(RecipeError, match="shaping"):
        load_recipe("mrpo", overrides=["algorithm.mrpo.shaping=cubic"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nrewards: [{name: format}]\nalgorithm: {advantage: mrpo}\n")
    with pytest.raises(RecipeError, match=r"bad.yaml: algorithm.mrpo.answer_reward"):
        load_recipe(bad)
    bad.write_text("name: bad\nrewards: [{name: format}]\ngrpo: {learning_rat: 1.0e-6}\n")
    with pytest.raises(RecipeError, match=r"bad.yaml: grpo.learning_rat: not a field of trl.GRPOConfig; "
                                          r"did you mean 'learning_rate'"):
        load_recipe(bad)  # refused when the recipe loads, before any model
    bad.write_text("name: bad\nrewards: [{name: no_such_reward}]\n")
    with pytest.raises(RecipeError, match="unknown reward 'no_such_reward'"):
        build_reward_funcs(load_recipe(bad))
    bad.write_text("name: bad\nrewardz: []\n")
    with pytest.raises(RecipeError, match="unknown section"):
        load_recipe(bad)


def test_scale_out_and_vllm_options_pass_through_unchanged(tmp_path):
    """Scale-out stays TRL's: vLLM, DeepSpeed and FSDP settings reach GRPOConfig as given."""
    ds = tmp_path / "zero3.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto",
                              "gradient_accumulation_steps": "auto"}))
    r = load_recipe("mrpo", profile="cpu", overrides=[
        "grpo.use_vllm=true", "grpo.vllm_mode=server", "grpo.vllm_server_base_url=http://10.0.0.1:8000",
        "grpo.vllm_gpu_memory_utilization=0.35", "grpo.vllm_importance_sampling_correction=false",
    ])
    cfg = build_grpo_config(r, tmp_path)
    assert (cfg.use_vllm, cfg.vllm_mode, cfg.vllm_server_base_url) == (True, "server", "http://10.0.0.1:8000")
    assert cfg.vllm_gpu_memory_utilization == 0.35 and cfg.vllm_importance_sampling_correction is False
    # DeepSpeed / FSDP are TrainingArguments fields; building them needs the libraries and a
    # distributed launch, so check that the recipe layer forwards them verbatim.
    fields = recipes.grpo_config_fields()
    assert {"deepspeed", "fsdp", "fsdp_config", "ds3_gather_for_generation"} <= fields
    r = load_recipe("mrpo", overrides=[f"grpo.deepspeed={ds}", "grpo.fsdp=full_shard auto_wrap"])
    assert r.grpo["deepspeed"] == str(ds) and r.grpo["fsdp"] == "full_shard auto_wrap"


def test_reward_funcs_built_with_names_and_weights_and_shared_judge():
    from medrl.judges import build_judge

    judge = build_judge("reference")
    funcs, weights = build_reward_funcs(load_recipe("mrpo"), judge=judge)
    assert [f.__name__ for f in funcs] == ["mrpo_answer", "mrpo_process", "mrpo_length"]
    assert weights == [1.0, 1.0, 1.0]
    assert funcs[1].judge is judge
    assert recipes.recipe_uses_judge(load_recipe("mrpo")) and not recipes.recipe_uses_judge(load_recipe("armed"))


# ------------------------------------------------------------------ reward state in checkpoints


def test_reward_state_round_trip_through_checkpoint_folder(tmp_path):
    from medrl.rewards import REWARDS
    from medrl.train.callbacks import REWARD_STATE_FILE, load_reward_state, save_reward_state

    a = REWARDS.get("armed")()
    a.semantic.adapt["bertscore"]([0.9, 0.8, 0.95])  # one adaptive step moves the threshold
    saved = a.state_dict()
    assert saved["bertscore"]["threshold"] is not None
    path = save_reward_state(tmp_path, [a, REWARDS.get("format")()])
    assert path == tmp_path / REWARD_STATE_FILE
    b = REWARDS.get("armed")()
    assert b.state_dict() != saved
    assert load_reward_state(tmp_path, [b]) == ["armed"]
    assert b.state_dict() == saved
    (tmp_path / REWARD_STATE_FILE).write_text(json.dumps({"other": {}}))
    with pytest.raises(KeyError, match="no saved state for reward"):
        load_reward_state(tmp_path, [b])


# ------------------------------------------------------------------ token offsets


class _CharTokenizer:
    """A slow (no offsets) tokenizer: one token per character, id 0 = EOS (special)."""

    is_fast = False
    all_special_ids = [0]

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if not (skip_special_tokens and i == 0))


def test_prefix_decoding_offsets_cover_each_token():
    from medrl.answers.completion import completion_token_offsets

    text = "ab c"
    ids = [ord(c) for c in text] + [0]  # EOS is dropped by decoding: empty span at the end
    assert completion_token_offsets(_CharTokenizer(), text, ids) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 4)]


def test_fast_tokenizer_offsets_match_step_spans():
    """Exact path: re-tokenising the decoded text reproduces the generated ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from medrl.answers.completion import completion_steps, step_token_spans
    from medrl.answers.completion import completion_token_offsets, prefix_decode_offsets

    raw = Tokenizer(models.BPE(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    corpus = ["<think>The image is a CT scan. The liver is enlarged.</think><answer>liver</answer>"] * 5
    raw.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"],
                                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    from tokenizers import decoders

    raw.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")
    text = "<think>The image is a CT scan. The liver is enlarged.</think><answer>liver</answer>"
    ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert tok.decode(ids, skip_special_tokens=True) == text
    offs = completion_token_offsets(tok, text, ids)
    assert len(offs) == len(ids) and offs[-1] == (len(text), len(text))
    # the fallback gives the same answer on a canonical tokenisation
    assert [tuple(o) for o in prefix_decode_offsets(tok, ids)] == offs
    steps = completion_steps(text)
    assert [s.text for s in steps] == ["The image is a CT scan.", "The liver is enlarged."]
    spans = step_token_spans(text, steps, offs)
    for st, (a, b) in zip(steps, spans):
        assert st.text in tok.decode(ids[a:b])  # a token straddling the step end (".</") belongs to it


def test_override_scientific_notation_is_a_number():
    # YAML 1.1 reads "1e-5" as a string; the override must still give a float (lr, beta, ...)
    from medrl.train.recipes import parse_override

    assert parse_override("grpo.learning_rate=1e-5") == (["grpo", "learning_rate"], 1e-5)
    assert parse_override("grpo.beta=4E-2") == (["grpo", "beta"], 0.04)
    assert parse_override("grpo.learning_rate=1.5e-6") == (["grpo", "learning_rate"], 1.5e-6)
    assert parse_override("grpo.run_name=exp1e5") == (["grpo", "run_name"], "exp1e5")
