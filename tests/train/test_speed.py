"""An RL step at its floor (:mod:`medrl.train.speed`): the gradient-checkpointing default, the
completion-only scoring of TRL's fused LM head, and the speed-ups installed on a trainer.

On a tiny Qwen2.5-VL with images repeated across rollouts: the completion-only head gives TRL's
log-probabilities and entropies bit for bit and its gradients to float32 rounding; a
``MedGRPOTrainer`` and a plain ``trl.GRPOTrainer`` given :func:`~medrl.train.speed.speed_up_step`
log the same metrics and write the same weights on the same reward, and a plain-path trainer
logs the same first step and ends within rounding of them (Adam amplifies rounding-level gradient
differences a little; the weights are not bit-identical to the plain path's).
"""

from __future__ import annotations

import inspect

import pytest
import torch

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


# ------------------------------------------------------------------------------ gradient checkpointing


def test_gradient_checkpointing_off_on_the_cpu_unless_set(monkeypatch, tmp_path):
    from medrl.train.recipes import build_grpo_config, load_recipe
    from medrl.train.speed import gradient_checkpointing_default

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gradient_checkpointing_default({}) == {"gradient_checkpointing": False}
    assert gradient_checkpointing_default({"gradient_checkpointing": True}) == {"gradient_checkpointing": True}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert gradient_checkpointing_default({}) == {}  # a GPU: TRL's default (on) stands
    assert gradient_checkpointing_default({"use_cpu": True})["gradient_checkpointing"] is False

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert build_grpo_config(load_recipe("grpo", profile="cpu"), tmp_path).gradient_checkpointing is False
    kept = load_recipe("grpo", profile="cpu", overrides=["grpo.gradient_checkpointing=true"])
    assert build_grpo_config(kept, tmp_path).gradient_checkpointing is True


# ------------------------------------------------------------------------------ a tiny VLM with images


@pytest.fixture(scope="module")
def vlm(tmp_path_factory):
    """(model folder, records): a tiny Qwen2.5-VL and four records with their own images."""
    from synthetic import synthetic_records

    from medrl.models import build_tiny_vlm

    root = tmp_path_factory.mktemp("speed")
    records = synthetic_records(root, size=lambda i: (56, 56))
    return build_tiny_vlm(root / "model", texts=[r.question for r in records], vocab_size=400), records


def _fused_batch(path, records, repeat=3):
    """A model with TRL's fused head (policy outputs) and one padded batch: prompt + completion,
    each record's image ``repeat`` times, labels on the completion only (as TRL builds them)."""
    from trl.trainer.utils import add_fused_lm_head

    from medrl.models import load_policy

    model, processor = load_policy(path)
    add_fused_lm_head(model, temperature=0.7, outputs=("log_probs", "entropy"))
    texts, images = [], []
    for r in records[:2]:
        chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": r.question}]}]
        prompt = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        for k in range(repeat):
            texts.append(prompt + "<think>It is a CT" + " image" * k + ".</think><answer>yes</answer>")
            images.append(r.images[0])
    from PIL import Image

    batch = processor(images=[Image.open(p).convert("RGB") for p in images], text=texts, padding=True,
                      return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    labels[:, :-12] = -100
    return model, batch, labels


def _scored(model, batch, labels):
    model.zero_grad()
    out = model(**batch, labels=labels, fused_lm_head=True)
    (out.log_probs.sum() + 0.1 * out.entropy.sum()).backward()
    return out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_completion_only_scoring_equals_trls_head(vlm):
    from medrl.train.speed import CompletionOnlyScoring, fused_head_modules, score_completions_only, \
        score_every_position

    path, records = vlm
    model, batch, labels = _fused_batch(path, records)
    trl_forward = vars(model)["forward"]
    assert fused_head_modules(model) == [model]
    full, g_full = _scored(model, batch, labels)
    assert score_completions_only(model)
    wrapper = vars(model)["forward"]
    assert isinstance(wrapper, CompletionOnlyScoring)
    assert inspect.signature(model.forward) == inspect.signature(trl_forward)  # generate validates against it
    tail, g_tail = _scored(model, batch, labels)
    assert wrapper.calls == 1
    for key in ("log_probs", "entropy", "label_mask"):
        assert torch.equal(full[key], tail[key]), key
    torch.testing.assert_close(tail["loss"], full["loss"])  # a sum over fewer (zero) terms: rounding only
    scale = max(float(g.abs().max()) for g in g_full.values())
    for name in g_full:
        torch.testing.assert_close(g_tail[name], g_full[name], rtol=1e-4, atol=1e-6 * scale, msg=name)

    with torch.no_grad():  # generation and labels from the first column go straight to TRL's head
        model.generate(input_ids=batch["input_ids"][:2], attention_mask=batch["attention_mask"][:2],
                       pixel_values=batch["pixel_values"][: 2 * 16], image_grid_thw=batch["image_grid_thw"][:2],
                       max_new_tokens=2)
        model(**batch, labels=batch["input_ids"], fused_lm_head=True)
    assert wrapper.calls == 1
    score_every_position(model)
    assert vars(model)["forward"] is trl_forward


def test_completion_only_scoring_steps_aside_for_another_layout():
    """A head whose result is not TRL's documented (batch, labelled tail) layout: the call is redone
    by the head as given and the wrapper stays off."""
    from types import SimpleNamespace

    from trl.trainer.utils import FusedCausalLMOutput

    from medrl.train.speed import CompletionOnlyScoring

    seen = []

    def head(*args, labels=None, shift_labels=None, fused_lm_head=False, **kw):
        seen.append(shift_labels is not None)
        return FusedCausalLMOutput(log_probs=torch.zeros(2, 3))  # never the tail's width

    module = SimpleNamespace(base_model=torch.nn.Identity())
    wrapper = CompletionOnlyScoring(module, head)
    labels = torch.full((2, 10), -100)
    labels[:, 6:] = 1
    out = wrapper(labels=labels, fused_lm_head=True)
    assert seen == [True, False] and out["log_probs"].shape == (2, 3) and not wrapper.enabled
    wrapper(labels=labels, fused_lm_head=True)
    assert seen == [True, False, False]


# ------------------------------------------------------------------------------ trainers


def length_reward(completions, **kw):
    from medrl.answers.completion import completion_text

    return [len(completion_text(c)) / 10.0 for c in completions]


def _trainer(cls, path, records, out, speed: bool):
    from trl import GRPOConfig

    from medrl.data import to_hf_dataset
    from medrl.models import load_policy
    from medrl.train.speed import speed_up_step, undo_step_speedups

    model, processor = load_policy(path)
    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=6, num_generations=3, max_completion_length=8,
                      max_steps=2, learning_rate=1e-2, beta=0.05, logging_steps=1, save_strategy="no",
                      report_to="none", use_cpu=True, seed=0, bf16=False, gradient_checkpointing=False,
                      dataloader_num_workers=0)
    tr = cls(model=model, processing_class=processor, reward_funcs=[length_reward], args=args,
             train_dataset=to_hf_dataset(records))
    if speed:
        speed_up_step(tr)
    else:
        undo_step_speedups(tr)
    return tr


SAME = ("loss", "reward", "reward_std", "kl", "entropy", "completions/mean_length", "rewards/length_reward/mean")


def test_medrl_and_plain_trl_stay_identical_with_the_speedups(vlm, tmp_path):
    """Same reward, config, data and seed: MedGRPOTrainer (which installs the speed-ups itself) and
    plain GRPOTrainer with speed_up_step log the same metrics and write the same weights; a
    trainer on the plain path logs the same first step and ends within rounding of them."""
    from trl import GRPOTrainer

    from medrl.models.image_dedup import dedup_stats
    from medrl.train.trainer import MedGRPOTrainer

    path, records = vlm
    runs = {}
    for name, cls, speed in (("medrl", MedGRPOTrainer, True), ("trl", GRPOTrainer, True),
                             ("plain", GRPOTrainer, False)):
        tr = _trainer(cls, path, records, tmp_path / name, speed)
        if name == "medrl":
            assert tr._speedups == {"model": True, "ref_model": True, "completion_scoring": True, "processing": True}
        tr.train()
        assert "preprocess" not in vars(tr.processing_class.image_processor)  # never saved with the processor
        stats = dedup_stats(tr.model)
        if speed:
            assert stats.encoded * 3 == stats.images > 0  # each image once instead of once per rollout
        else:
            assert stats is None
        logs = [{k: h[k] for k in SAME if k in h} for h in tr.state.log_history if "loss" in h]
        runs[name] = (logs, {n: p.detach().clone() for n, p in tr.model.named_parameters()})
    assert runs["medrl"][0] == runs["trl"][0] and len(runs["medrl"][0]) == 2
    assert all(torch.equal(runs["medrl"][1][n], runs["trl"][1][n]) for n in runs["trl"][1])
    plain_logs, plain_weights = runs["plain"]
    for k in SAME:  # first step: the same completions and rewards, the loss to rounding
        assert plain_logs[0][k] == pytest.approx(runs["trl"][0][0][k], rel=1e-5, abs=1e-7), k
    # Adam turns rounding-level gradient differences into small weight differences: tiny next to
    # how far the two steps moved the weights
    from medrl.models import load_policy

    start = dict(load_policy(path)[0].named_parameters())
    moved = sum(float((w - start[n].detach()).norm() ** 2) for n, w in plain_weights.items()) ** 0.5
    apart = sum(float((runs["trl"][1][n] - w).norm() ** 2) for n, w in plain_weights.items()) ** 0.5
    assert moved > 0 and apart < 1e-3 * moved, (apart, moved)
