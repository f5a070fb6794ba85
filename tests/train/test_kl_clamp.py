"""MediX-R1's clamped KL (``grpo.kl_clamp``): EasyR1's ``low_var_kl`` (released
``verl/trainer/core_algos.py``: log-ratio clamped to [-20, 20], k3 clamped to [-10, 10]) added to
TRL's loss with the loss type's own mask and normaliser. Hand-worked numbers, then TRL's real
``_compute_loss`` on a tiny policy: with a clamp that never binds the loss is TRL's own KL loss."""

from __future__ import annotations

import math

import pytest
import torch

from medrl.train.kl_clamp import GRPOConfig, aggregate, clamped_k3

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


def k3(d: float) -> float:
    return math.exp(d) - d - 1


def test_clamped_k3_by_hand():
    # d = ref - logp per token: 0, -3.5, 3 (k3 = 16.09 > 10: clamped), 25 (log-ratio clamped to 20 first)
    logp = torch.tensor([[-1.0, -0.5, -4.0, -30.0]])
    ref = torch.tensor([[-1.0, -4.0, -1.0, -5.0]])
    got = clamped_k3(logp, ref, 10.0)
    want = [0.0, k3(-3.5), 10.0, 10.0]
    assert got.tolist()[0] == pytest.approx(want, abs=1e-5)
    assert k3(-3.5) == pytest.approx(2.530197, abs=1e-6)  # exp(-3.5) + 3.5 - 1
    # a bound that never binds: the plain k3 TRL computes
    assert clamped_k3(logp[:, :3], ref[:, :3], 1e9).tolist()[0] == pytest.approx([0.0, k3(-3.5), k3(3.0)], rel=1e-5)
    # the gradient stays finite where the exponential would overflow
    x = torch.tensor([[-300.0]], requires_grad=True)
    clamped_k3(x, torch.tensor([[0.0]]), 10.0).sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.item() == 0.0


def test_aggregate_uses_each_loss_types_normaliser_by_hand():
    kl = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    kw = dict(accumulation=2, max_completion_length=4, num_items_in_batch=torch.tensor(10.0), num_processes=1,
              steps_per_generation=4)
    # grpo: per-sequence means 1.5 and 5, their mean 3.25, / 2 accumulation steps
    assert aggregate(kl, mask, "grpo", **kw).item() == pytest.approx(3.25 / 2)
    # bnpo: (1 + 2 + 4 + 5 + 6) / 5 tokens / 2
    assert aggregate(kl, mask, "bnpo", **kw).item() == pytest.approx(18 / 5 / 2)
    # dr_grpo: 18 / (2 sequences x 4 max tokens) / 2
    assert aggregate(kl, mask, "dr_grpo", **kw).item() == pytest.approx(18 / 8 / 2)
    # dapo: 18 / (10 tokens in the generation batch / 1 process x 2 accumulation / 4 steps per generation)
    assert aggregate(kl, mask, "dapo", **kw).item() == pytest.approx(18 / (10 * 2 / 4))
    assert aggregate(kl, mask, "dapo", **{**kw, "num_processes": 2}).item() == pytest.approx(18 / (5 * 2 / 4))
    # luspo: per-sequence sums 3 and 15, their mean 9, / 2
    assert aggregate(kl, mask, "luspo", **kw).item() == pytest.approx(9 / 2)
    # evaluation: no accumulation
    assert aggregate(kl, mask, "grpo", **kw, train=False).item() == pytest.approx(3.25)
    assert aggregate(kl, mask, "dapo", **kw, train=False).item() == pytest.approx(18 / 10)
    with pytest.raises(ValueError, match="unknown loss_type"):
        aggregate(kl, mask, "nope", **kw)


def test_config_field_and_its_checks(tmp_path):
    plain = dict(output_dir=str(tmp_path), use_cpu=True, report_to=[], use_bias_correction_kl=False)
    assert GRPOConfig(**plain, kl_clamp=10.0).kl_clamp == 10.0
    with pytest.raises(ValueError, match="positive"):
        GRPOConfig(**plain, kl_clamp=0.0)
    with pytest.raises(ValueError, match="use_bias_correction_kl"):
        GRPOConfig(output_dir=str(tmp_path), kl_clamp=10.0, use_bias_correction_kl=True, use_cpu=True, report_to=[])


def test_recipe_key_reaches_the_config(tmp_path):
    from medrl.methods.base import run_trainer_options
    from medrl.train.recipes import RecipeError, build_grpo_config, load_recipe, run_methods

    r = load_recipe("medix_r1")
    # MediX-R1's config turns the clamp on (EasyR1 low_var_kl, MediX-R1 App. A.8), not grpo.kl_clamp
    assert r.algorithm["medix_r1"]["kl_clamp"] == 10.0 and "kl_clamp" not in r.grpo
    assert run_trainer_options(run_methods(r)).kl_clamp == 10.0
    cfg = build_grpo_config(r, tmp_path, use_cpu=True, bf16=False, report_to=[])
    assert cfg.beta == 0.01 and not cfg.use_bias_correction_kl
    # the generic key still works for any recipe; set in both places it is refused
    assert build_grpo_config(load_recipe("grpo", overrides=["grpo.kl_clamp=5.0"]), tmp_path, use_cpu=True, bf16=False,
                             report_to=[]).kl_clamp == 5.0
    assert build_grpo_config(load_recipe("grpo"), tmp_path, use_cpu=True, bf16=False, report_to=[]).kl_clamp is None
    with pytest.raises(RecipeError, match=r"grpo\.kl_clamp: 10\.0, but the medix_r1 method's config turns it on"):
        load_recipe("medix_r1", overrides=["grpo.kl_clamp=10.0"])


# ------------------------------------------------------------------ TRL's own loss, tiny policy
def _trainer(policy, out, algorithm=None, methods=None, **kw):
    from datasets import Dataset

    from medrl.train.trainer import MedGRPOTrainer

    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=2, num_generations=2, max_completion_length=4,
                      max_steps=1, report_to="none", use_cpu=True, seed=0, bf16=False, dataloader_num_workers=0,
                      beta=0.5, use_bias_correction_kl=False, **kw)
    data = Dataset.from_list([{"prompt": "Which organ?", "answer": "liver"}] * 2)
    tr = MedGRPOTrainer(model=str(policy), reward_funcs=[lambda completions, **k: [0.0] * len(completions)],
                        args=args, train_dataset=data, algorithm={"log_credit_every": 0, **(algorithm or {})},
                        methods=methods, monitor=False)
    tr.model.train()
    tr.current_gradient_accumulation_steps = 2  # what the training loop sets: the normalisers divide by it
    return tr


def _inputs(trainer):
    """A hand-made batch of 2 completions of 4 tokens (the second padded after 3), with reference
    log-probabilities far from the policy's on one token (the clamp binds there)."""
    torch.manual_seed(0)
    prompt = torch.tensor([[5, 6, 7], [5, 6, 7]])
    completion = torch.tensor([[8, 9, 10, 11], [12, 13, 14, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, torch.cat([prompt, completion], 1), torch.cat([torch.ones_like(prompt), mask], 1), 4)
    ref = logps.clone()
    ref[0, 1] += 3.0  # k3(3) = 16.09 > 10
    ref[1, 0] -= 1.0
    return {"prompt_ids": prompt, "prompt_mask": torch.ones_like(prompt), "completion_ids": completion,
            "completion_mask": mask, "advantages": torch.tensor([0.5, -0.5]), "ref_per_token_logps": ref,
            "num_items_in_batch": mask.sum()}, logps, ref, mask.float()


@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_trl_loss_plus_clamped_term(policy, tmp_path, loss_type):
    plain = _trainer(policy, tmp_path / "plain", loss_type=loss_type)
    inputs, logps, ref, mask = _inputs(plain)
    want_plain = plain._compute_loss(plain.model, dict(inputs))  # TRL's own k3 KL, beta 0.5
    loose = _trainer(policy, tmp_path / "loose", loss_type=loss_type, kl_clamp=1e9)
    assert loose._compute_loss(loose.model, dict(inputs)).item() == pytest.approx(want_plain.item(), rel=1e-5)
    assert loose._metrics["train"]["kl"][-1] == pytest.approx(plain._metrics["train"]["kl"][-1], rel=1e-5)

    tight = _trainer(policy, tmp_path / "tight", loss_type=loss_type, kl_clamp=10.0)
    got = tight._compute_loss(tight.model, dict(inputs))
    assert tight.beta == 0.5 and "_get_per_token_logps_and_entropies" not in vars(tight)  # restored
    # by hand: only token (0, 1) changes, its k3 16.09 becomes 10
    d = (ref - logps)[0, 1].item()
    excess = torch.zeros_like(mask)
    excess[0, 1] = k3(d) - 10.0
    kw = dict(accumulation=tight.current_gradient_accumulation_steps, max_completion_length=4,
              num_items_in_batch=inputs["num_items_in_batch"], steps_per_generation=tight.args.steps_per_generation)
    assert got.item() == pytest.approx(want_plain.item() - 0.5 * aggregate(excess, mask, loss_type, **kw).item(),
                                       rel=1e-4)
    full = clamped_k3(logps, ref, 10.0)
    assert tight._metrics["train"]["kl"][-1] == pytest.approx(((full * mask).sum() / mask.sum()).item(), rel=1e-5)
    got.backward()
    assert all(torch.isfinite(p.grad).all() for p in tight.model.parameters() if p.grad is not None)


def test_a_method_turns_the_clamp_and_the_band_on(policy, tmp_path):
    """MediX-R1's config turns on the clamped KL and the dynamic-sampling band in a trainer built
    without a recipe; the run's own different setting of one is refused at start."""
    on = {"medix_r1": {"kl_clamp": 10.0, "mean_band": [0.01, 0.99]}}
    tr = _trainer(policy, tmp_path / "on", algorithm=on, methods=["medix_r1"])
    assert tr.medrl_kl_clamp == 10.0 and tr.args.kl_clamp is None
    assert tr._dynamic is not None and tr._dynamic.config.mean_band == (0.01, 0.99)
    assert _trainer(policy, tmp_path / "same", algorithm=on, methods=["medix_r1"], kl_clamp=10.0).medrl_kl_clamp == 10
    with pytest.raises(ValueError, match=r"grpo\.kl_clamp is 5\.0, but a method of the run turns it on with 10\.0"):
        _trainer(policy, tmp_path / "two", algorithm=on, methods=["medix_r1"], kl_clamp=5.0)
    off = _trainer(policy, tmp_path / "off", methods=["medix_r1"])
    assert off.medrl_kl_clamp is None and off._dynamic is None
