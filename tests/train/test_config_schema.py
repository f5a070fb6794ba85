"""The recipe schema: misspelled keys, wrong types and NaN are refused before any model loads,
with the key, the file and a suggestion; the papers' KL (plain k3) and batch reach TRL for any
process count. Nothing here trains a model."""

from __future__ import annotations

import math

import pytest

from medrl.train.recipes import RecipeError, build_grpo_config, list_recipes, load_recipe

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


# ------------------------------------------------------------------ refused overrides


@pytest.mark.parametrize("override, key, says", [
    ("algorithm.mrpo.shapng=linear", "algorithm.mrpo.shapng", "did you mean 'shaping'"),
    ("data.limt=4", "data.limt", "did you mean 'limit'"),
    ("algorithm.corectness=exact", "algorithm.corectness", "did you mean 'correctness'"),
    ("data.prompt_stlye=plain", "data.prompt_stlye", "did you mean 'prompt_style'"),
    ("grpo.leraning_rate=1e-5", "grpo.leraning_rate", "did you mean 'learning_rate'"),
    ("grpo.beta=0.01abc", "grpo.beta", "expected float, got '0.01abc'"),
    ("grpo.learning_rate=[1e-6]", "grpo.learning_rate", "expected float"),
    ("grpo.beta=.nan", "grpo.beta", "finite number"),
    ("grpo.num_generations=two", "grpo.num_generations", "expected int"),
    ("algorithm.log_rewards.answer=mrpo_anser", "algorithm.log_rewards.answer", "did you mean 'mrpo_answer'"),
    ("algorithm.mrpo.shaping=cubic", "algorithm.mrpo.shaping", "'exponential', 'linear', 'quadratic' or 'uniform'"),
    ("algorithm.mrpo.tau=1.5", "algorithm.mrpo.tau", "less than or equal to 1"),
    ("sft.learnig_rate=1e-5", "sft.learnig_rate", "did you mean 'learning_rate'"),
    ("batch.global_promts=8", "batch.global_promts", "did you mean 'global_prompts'"),
    ("grpo.reward_weights=[1,1,1]", "grpo.reward_weights", "in the 'rewards' list"),
])
def test_bad_override_names_key_file_and_origin(override, key, says):
    with pytest.raises(RecipeError) as err:
        load_recipe("mrpo", overrides=[override])
    msg = str(err.value)
    assert msg.startswith(str(load_recipe.__globals__["RECIPE_DIR"] / "mrpo.yaml")), msg
    assert f"{key}:" in msg and says in msg and f"(from --set {override})" in msg, msg


def test_unknown_section_in_override_suggests_the_section():
    with pytest.raises(RecipeError, match=r"must start with one of .*did you mean 'data'"):
        load_recipe("mrpo", overrides=["datta.limit=3"])


# ------------------------------------------------------------------ refused recipe files


@pytest.mark.parametrize("body, key, says", [
    ("rewards: [{name: format, weight: .nan}]", "rewards[0].weight", "finite number"),
    ("rewards: [{name: capo_accuracy, options: {r_dar: high}}]", "rewards[0].options.r_dar", "expected float"),
    ("rewards: [{name: capo_accuracy, options: {r_darr: 0.8}}]", "rewards[0].options.r_darr", "did you mean 'r_dar'"),
    ("rewards: [{name: formatt}]", "rewards[0].name", "did you mean 'format'"),
    ("rewards: [{name: format, wieght: 1}]", "rewards[0].wieght", "did you mean 'weight'"),
    ("rewards: [{name: format}]\nalgorithm: {corectness: exact}", "algorithm.corectness", "did you mean 'correctness'"),
    ("rewards: [{name: format}]\ndata: {prompt_stlye: plain}", "data.prompt_stlye", "did you mean 'prompt_style'"),
    ("rewards: [{name: format}]\nalgorithm: {log_rewards: {answer: fmt}}", "algorithm.log_rewards.answer",
     "not among the recipe's rewards"),
    ("rewards: [{name: format}]\ngrpo: {beta: '0.01abc'}", "grpo.beta", "expected float"),
    ("rewards: [{name: format}]\ngrpo: {learning_rate: [1.0e-6]}", "grpo.learning_rate", "expected float"),
    ("rewards: [{name: format}]\nstages: [{kind: rll}]", "stages[0].kind", "'rl'"),
    ("rewards: [{name: format}]\nprofiles: {cpu: {grpo: {max_step: 2}}}", "grpo.max_step",
     "did you mean 'max_steps'"),
    ("rewards: [{name: format}]\nstages: [{kind: knowledge_injection, options: {min_answer_cnt: 3}}]",
     "stages[0].options.min_answer_cnt", "did you mean 'min_answer_count'"),
    ("rewards: [{name: format}]\nstages: [{kind: rl, options: {learning_rate: 1.0e-6}}]",
     "stages[0].options.learning_rate", "takes no options"),
    ("rewards: [{name: format}]\ndata: {refine: {allow_answer_chnage: true}}", "data.refine.allow_answer_chnage",
     "did you mean 'allow_answer_change'"),
    ("rewards: [{name: format}]\njudge: {imges: true}", "judge.imges", "did you mean 'images'"),
    ("rewards: [{name: format}]\nencoders: {substitue: true}", "encoders.substitue", "did you mean 'substitute'"),
    ("rewards: [{name: format}]\nalgorithm: {capo: {knd: mask}}", "algorithm.capo.knd", "did you mean 'kind'"),
    ("rewards: [{name: format, weight: '1.0x'}]", "rewards[0].weight", "valid number"),
])
def test_bad_recipe_file_names_key_and_file(tmp_path, body, key, says):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\n" + body + "\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: ") and f"{key}:" in msg and says in msg, msg


def test_train_dry_run_exits_2_on_misspelled_set(capsys):
    from medrl.cli import main

    code = main(["train", "--recipe", "mrpo", "--set", "algorithm.mrpo.shapng=linear", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2
    assert "shapng" in err and "did you mean 'shaping'" in err and "mrpo.yaml" in err


def test_keys_of_other_parts_are_declared_and_typed():
    r = load_recipe("mrpo", overrides=[
        "monitor.window=20", "monitor.stop_on_alert=true", "monitor.probe_every=50", "monitor.probe_records=8",
        "monitor.thresholds={kl: 0.5}", "algorithm.dynamic_sampling=true", "judge.price_in_per_mtok=0.25",
        "judge.price_out_per_mtok=2.0", "data.max_pixels=401408"])
    assert r.monitor == {"window": 20, "stop_on_alert": True, "probe_every": 50, "probe_records": 8,
                         "thresholds": {"kl": 0.5}}
    assert r.algorithm["dynamic_sampling"] is True and r.data["max_pixels"] == 401408
    assert r.judge["price_in_per_mtok"] == 0.25
    with pytest.raises(RecipeError, match="monitor.window"):
        load_recipe("mrpo", overrides=["monitor.window=-1"])


# ------------------------------------------------------------------ KL: the papers' plain k3

RL_RECIPES = [n for n in list_recipes() if load_recipe(n, check_trl=False).rewards]


@pytest.mark.parametrize("name", RL_RECIPES)
def test_every_rl_recipe_uses_plain_k3(name, tmp_path):
    """All five papers (and their baselines) regularise with k3 = exp(-d) + d - 1, d = log pi -
    log pi_ref (GRPO, Shao et al. 2024, Eq. 4); TRL's default multiplies it by the ratio."""
    cfg = build_grpo_config(load_recipe(name), tmp_path, use_cpu=True)
    assert cfg.use_bias_correction_kl is False


def _trl_kl_gradient(bias_correction: bool, d: float = 2.0) -> float:
    """d(loss)/d(log pi) of TRL's own GRPO loss (``GRPOTrainer._compute_loss``) for one token with
    zero advantage and beta 1, i.e. the gradient of the KL term alone, at log pi - log pi_ref = d."""
    import collections
    import types

    import torch
    from trl import GRPOTrainer

    logp = torch.tensor([[0.0]], requires_grad=True)

    class Accelerator:
        num_processes, sync_gradients = 1, True

        def reduce(self, x, reduction="sum"):
            return x

        def gather(self, x):
            return x

        gather_for_metrics = gather

    trainer = types.SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
        aux_loss_enabled=False, top_entropy_quantile=1.0, off_policy_mask_threshold=None,
        importance_sampling_level="token",
        args=types.SimpleNamespace(use_bias_correction_kl=bias_correction, delta=None),
        beta=1.0, loss_type="grpo", epsilon_low=0.2, epsilon_high=0.2, use_vllm=False,
        model=types.SimpleNamespace(training=True), current_gradient_accumulation_steps=1,
        _entropy_bonus_enabled=False, accelerator=Accelerator(),
        _metrics=collections.defaultdict(lambda: collections.defaultdict(list)))
    inputs = {"prompt_ids": torch.zeros(1, 1, dtype=torch.long), "prompt_mask": torch.ones(1, 1),
              "completion_ids": torch.zeros(1, 1, dtype=torch.long), "completion_mask": torch.ones(1, 1),
              "advantages": torch.zeros(1), "ref_per_token_logps": torch.tensor([[-d]])}
    GRPOTrainer._compute_loss(trainer, None, inputs).backward()
    return logp.grad.item()


def test_kl_gradient_through_trls_loss_is_plain_k3():
    # d/dd k3 = 1 - exp(-d) = 0.8647 at d = 2 (hand-worked); with TRL's ratio correction the
    # gradient adds k3 itself (exp(-2) + 1 = 1.1353), giving 2.00
    assert _trl_kl_gradient(False) == pytest.approx(1 - math.exp(-2), abs=1e-6)
    assert _trl_kl_gradient(False) == pytest.approx(0.865, abs=5e-4)
    assert _trl_kl_gradient(True) == pytest.approx(2.00, abs=1e-6)


def test_kl_default_is_plain_k3_for_a_recipe_that_does_not_say(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nrewards: [{name: format}]\ngrpo: {beta: 0.04}\n")
    assert build_grpo_config(load_recipe(path), tmp_path, use_cpu=True).use_bias_correction_kl is False
    path.write_text("name: mine\nrewards: [{name: format}]\ngrpo: {beta: 0.04, use_bias_correction_kl: true}\n")
    assert build_grpo_config(load_recipe(path), tmp_path, use_cpu=True).use_bias_correction_kl is True


# ------------------------------------------------------------------ batch: stated once, any process count


@pytest.mark.parametrize("name, procs, micro, accum, steps_per_gen", [
    # MediX-R1 App. A.8: 128 prompts x 5 per update, 4 updates per 512-prompt rollout
    ("medix_r1", 1, 10, 64, 256), ("medix_r1", 2, 10, 32, 128), ("medix_r1", 8, 10, 8, 32),
    # CAPO: 128 prompts x 8 per update, micro-batch 4
    ("capo", 1, 4, 256, 256), ("capo", 8, 4, 32, 32),
    # MRPO App. C.2: batch 64 completions (8 prompts x 8 rollouts)
    ("mrpo", 1, 8, 8, 8), ("mrpo", 2, 8, 4, 4), ("mrpo", 8, 8, 1, 1),
    # ARMed: MS-SWIFT's batch counts completions: 2 per GPU x 2 accumulation x 4 GPUs = 16 = 2 prompts x 8
    ("armed", 1, 16, 1, 1), ("armed", 2, 8, 1, 1), ("armed", 4, 4, 1, 1), ("armed", 8, 2, 1, 1),
])
def test_batch_derived_for_process_count(name, procs, micro, accum, steps_per_gen, tmp_path):
    r = load_recipe(name, num_processes=procs)
    assert (r.grpo["per_device_train_batch_size"], r.grpo["gradient_accumulation_steps"]) == (micro, accum)
    assert r.grpo.get("steps_per_generation", accum) == steps_per_gen
    g = r.grpo["num_generations"]
    # the update is the paper's, whatever the process count
    assert micro * accum * procs == r.batch["global_prompts"] * g
    if procs == 1:
        cfg = build_grpo_config(r, tmp_path, use_cpu=True)
        assert cfg.generation_batch_size == r.batch["global_prompts"] * g * r.batch["updates_per_rollout"]


def test_batch_that_cannot_divide_is_a_clear_error():
    with pytest.raises(RecipeError, match=r"batch: .*1 x grpo.num_generations=2 = 2 completions per update "
                                          r"cannot be split evenly over 4 processes"):
        load_recipe("mrpo", profile="cpu", num_processes=4)


def test_explicit_trl_batch_fields_win_over_the_batch_section():
    r = load_recipe("mrpo", overrides=["grpo.per_device_train_batch_size=4"])
    assert r.grpo["per_device_train_batch_size"] == 4 and "gradient_accumulation_steps" not in r.grpo
    assert r.batch["applied"] is False and r.batch["explicit"] == ["per_device_train_batch_size"]


def test_dry_run_prints_batch_for_1_2_8_processes_grpo_config_and_rewards(capsys):
    from medrl.cli import main

    assert main(["train", "--recipe", "medix_r1", "--dry-run", "--num-processes", "4"]) == 0
    out = capsys.readouterr().out
    for procs, accum in ((1, 64), (2, 32), (4, 16), (8, 8)):
        assert f"{procs} process(es): per_device_train_batch_size=10 gradient_accumulation_steps={accum}" in out
    assert "<- this run" in out.split("4 process(es)")[1].splitlines()[0]
    assert "trl.GRPOConfig (resolved" in out and "use_bias_correction_kl: False" in out
    assert "steps_per_generation: 64" in out  # 16 x 4 updates per rollout, on 4 processes
    assert "rewards of recipe medix_r1" in out and "medix_llm" in out and "0.5175" in out
