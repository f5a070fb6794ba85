"""The ``combined`` recipe (MRPO token credit + CAPO perception and consistency + ARMed adaptive
semantic + MediX-R1 format and modality) on a tiny Qwen2.5-VL with real VQA-RAD records and the
reference judge: its token advantages equal a hand computation of TRL's group advantage and
MRPO Eq. 7, and it trains one optimizer step end to end.

Rollouts are fixed teacher texts (:func:`medrl.train.teacher.install_teacher`, ``replace_all``):
per prompt a right answer with a sound reasoning and a wrong answer whose first step is
meta-commentary; the CAPO corrupted rollouts get the same texts.
"""

from __future__ import annotations

import math

import pytest
import torch

from medrl.train.recipes import load_recipe

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

MAX_LEN = 48


def right(rec) -> str:
    return (f"{rec.modality_tag or 'OTHER'} <think>This is a {rec.modality or 'medical'} image. "
            f"The answer is {rec.answer}.</think><answer>{rec.answer}</answer>")


def wrong(rec) -> str:
    return (f"{rec.modality_tag or 'OTHER'} <think>Let me think about this. This is a {rec.modality or 'medical'} "
            "image. It looks fine.</think><answer>banana</answer>")


@pytest.fixture(scope="module")
def records(data_dir):
    from medrl.data import load_records

    return load_records("vqa_rad", split="train", data_dir=data_dir, open_only=True, limit=2)


@pytest.fixture(scope="module")
def trainer(records, tmp_path_factory):
    from medrl.judges import build_judge
    from medrl.models import build_tiny_vlm
    from medrl.train.pipeline import train_rl
    from medrl.train.teacher import install_teacher

    texts = [r.question for r in records] + [f(r) for r in records for f in (right, wrong)]
    tiny = build_tiny_vlm(tmp_path_factory.mktemp("tiny"), texts=texts, seed=0)
    recipe = load_recipe("combined", profile="cpu", overrides=[
        f"grpo.max_completion_length={MAX_LEN}", "grpo.per_device_train_batch_size=4", "grpo.max_steps=1",
        "grpo.save_strategy='no'", "algorithm.log_credit_every=0"])
    tr = train_rl(recipe, tiny, records, tmp_path_factory.mktemp("run"), judge=build_judge("reference"),
                  train=False, grpo_overrides={"report_to": "none"}).trainer
    calls = {"n": 0}

    def text(rec):  # rows alternate right / wrong within each group of 2
        calls["n"] += 1
        return right(rec) if calls["n"] % 2 else wrong(rec)

    install_teacher(tr, records, text, replace_all=True)
    return recipe, tr


def test_combined_recipe_composes_the_four_methods_in_order(trainer):
    recipe, tr = trainer
    assert [m.name for m in tr.methods] == ["mrpo", "capo", "armed", "medix_r1"]
    assert tr.medrl_algorithm["advantage"] == "mrpo" and tr.medrl_algorithm["capo"]["t"] == 100
    assert list(tr.reward_func_names) == [r["name"] for r in recipe.rewards]


def test_combined_token_advantages_match_a_hand_computation(trainer, records):
    from medrl.data import to_hf_dataset
    from medrl.answers.completion import completion_token_offsets, step_token_spans

    recipe, tr = trainer
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    ds = to_hf_dataset(records, "modality_think_answer")
    out = tr._generate_and_score_completions([dict(ds[i]) for i in (0, 0, 1, 1)])
    rewards = tr._last_rewards  # (4, 8): one column per recipe reward
    weights = torch.tensor([r["weight"] for r in recipe.rewards])
    names = list(tr.reward_func_names)
    assert not torch.isnan(rewards).any()
    # CAPO: the corrupted rollouts were generated and scored (R_PCR = 0.1 exactly when o_i is right
    # and its paired o~_i wrong: rows alternate right/wrong in both, so never here)
    assert tr._metrics["train"]["capo/corrupted_mean_length"]
    assert rewards[:, names.index("capo_perception")].tolist() == [0.0] * 4

    # TRL's group advantage (scale_rewards=group): A_i = (R_i - mean_g) / (std_g + 1e-4), R_i = sum_j w_j r_ij
    total = (rewards * weights).sum(dim=1)
    groups = total.view(-1, 2)
    mean = groups.mean(dim=1).repeat_interleave(2)
    std = groups.std(dim=1).repeat_interleave(2)
    a = (total - mean) / (std + 1e-4)
    B, T = out["completion_ids"].shape
    # MRPO Eq. 7 (exponential shaping, selective, tau = 0.6): in rollouts with R_ans <= tau, valid
    # steps get |A_i|, invalid step k of K gets -exp(1 - (k-1)/(K-1)) |A_i|; other tokens keep A_i
    r_ans = rewards[:, names.index("mrpo_answer")]
    assert (r_ans[[0, 2]] > 0.6).all() and (r_ans[[1, 3]] <= 0.6).all()
    proc = tr._process_fn
    expected = a.unsqueeze(1).expand(B, T).clone()
    for i in (1, 3):
        valid = [v.valid for v in proc.last_step_verdicts[i]]
        assert valid[0] is False and True in valid  # "Let me think about this." is not a reasoning step
        text = tr._last_texts[i]
        spans = step_token_spans(text, proc.last_steps[i], completion_token_offsets(tr._tokenizer, text,
                                                                                    tr._last_ids[i]))
        K = len(spans)
        for k, ((s, e), ok) in enumerate(zip(spans, valid), start=1):
            p = (k - 1) / (K - 1)
            expected[i, s:e] = abs(a[i]) if ok else -math.exp(1 - p) * abs(a[i])
    torch.testing.assert_close(out["advantages"], expected.to(out["advantages"].dtype), rtol=1e-5, atol=1e-6)
    assert not torch.equal(out["advantages"], a.unsqueeze(1).expand(B, T))  # the shaping did change tokens


def test_combined_recipe_trains_one_step(trainer):
    recipe, tr = trainer
    seen = []
    orig = tr._compute_loss

    def compute_loss(model, inputs, _orig=orig):
        seen.append(inputs["advantages"].detach().clone())
        return _orig(model, inputs)

    tr._compute_loss = compute_loss
    before = {n: p.detach().clone() for n, p in tr.model.named_parameters() if p.requires_grad}
    tr.train()
    tr._compute_loss = orig
    assert tr.state.global_step == 1
    assert seen and all(x.dim() == 2 for x in seen)  # MRPO token advantages reached the loss
    logs = [h for h in tr.state.log_history if "reward" in h]
    for r in recipe.rewards:
        vals = [h[f"rewards/{r['name']}/mean"] for h in logs if f"rewards/{r['name']}/mean" in h]
        assert vals and all(v == v for v in vals), f"reward {r['name']} was not computed"
    assert any(not torch.equal(p.detach(), before[n]) for n, p in tr.model.named_parameters() if n in before)
