"""MedGRPOTrainer end to end on a tiny Qwen2.5-VL with real VQA-RAD records and the reference
judge in-process: two RL steps per recipe, MRPO vs GRPO on the same batch, resume, CLI.

Teacher rollouts. A freshly built tiny policy emits random tokens, never the
``<think>/<answer>`` format, so every rollout of a group gets the same reward, every advantage is
0 and no parameter can move. To test that rewards *do* move the policy,
:func:`medrl.train.teacher.install_teacher` replaces the second rollout of every group with a
short well-formed completion written from the record (after the policy's own generation has
run); the first rollout stays the policy's. Rewards, advantages, loss and optimizer step are the
real ones.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from medrl.train.recipes import load_recipe

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

REPO = Path(__file__).resolve().parents[2]
MAX_LEN = 32  # completion tokens; the teacher texts below fit in it


def teacher_text(rec, style: str = "think_answer") -> str:
    tag = f"{rec.modality_tag or 'OTHER'} " if style == "modality_think_answer" else ""
    return (f"{tag}<think>This is a {rec.modality or 'medical'} image. The answer is {rec.answer}.</think>"
            f"<answer>{rec.answer}</answer>")


@pytest.fixture(scope="module")
def records(data_dir):
    from medrl.data import load_records

    return load_records("vqa_rad", split="train", data_dir=data_dir, open_only=True, limit=4)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, records):
    from medrl.models import build_tiny_vlm

    texts = [r.question for r in records] + [teacher_text(r, s) for r in records
                                              for s in ("think_answer", "modality_think_answer")]
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"), texts=texts, seed=0)


@pytest.fixture(scope="module")
def judge():
    from medrl.judges import build_judge

    return build_judge("reference")


def with_teacher(trainer, records, style):
    """Every second rollout of a group becomes the record's short teacher text (see module doc)."""
    from medrl.train.teacher import install_teacher

    install_teacher(trainer, records, lambda r: teacher_text(r, style), every=2)
    assert all(len(trainer._tokenizer(teacher_text(r, style))["input_ids"]) < MAX_LEN for r in records)
    return trainer


def _params(model):
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def _two_steps(name, tiny, records, judge, out, overrides=(), callbacks=(), resume=None):
    from medrl.train.pipeline import train_rl

    recipe = load_recipe(name, profile="cpu", overrides=[f"grpo.max_completion_length={MAX_LEN}", *overrides])
    res = train_rl(recipe, tiny, records, out, judge=judge, train=False, callbacks=callbacks,
                   grpo_overrides={"report_to": "none"})
    tr = with_teacher(res.trainer, records, recipe.data.get("prompt_style", "think_answer"))
    before = _params(tr.model)
    from medrl.train.pipeline import resolve_resume

    tr.train(resume_from_checkpoint=resolve_resume(resume, Path(out)))
    return recipe, tr, before


def _check_trained(recipe, tr, before, steps=2):
    assert tr.state.global_step == steps
    logs = [h for h in tr.state.log_history if "reward" in h]
    assert len(logs) >= 1
    for r in recipe.rewards:
        vals = [h[f"rewards/{r['name']}/mean"] for h in logs if f"rewards/{r['name']}/mean" in h]
        assert vals and all(v == v for v in vals), f"reward {r['name']} was not computed"
    assert any((h.get("reward_std") or 0) > 0 for h in logs), "no reward spread: nothing to learn from"
    changed = [n for n, p in tr.model.named_parameters() if p.requires_grad and not torch.equal(p.detach(), before[n])]
    assert changed, "no parameter changed"


RL_RECIPES = ["mrpo", "capo", "armed", "grpo", "gdpo", "dapo", "dr_grpo", "gspo", "medix_r1", "stepgrpo"]


@pytest.mark.parametrize("name", RL_RECIPES)
def test_two_rl_steps_compute_rewards_and_change_parameters(name, tiny, records, judge, tmp_path):
    if name == "stepgrpo":  # StepRAR needs key steps: the recipe's key_steps stage extracts them
        from medrl.methods.stepgrpo import key_steps_stage

        records = key_steps_stage(records, judge, tmp_path / "key_steps", show_progress=False)
        assert all(r.key_steps for r in records)
    recipe, tr, before = _two_steps(name, tiny, records, judge, tmp_path / name, overrides=["grpo.save_strategy='no'"])
    _check_trained(recipe, tr, before)
    last = [h for h in tr.state.log_history if "reward" in h][-1]
    if recipe.algorithm["advantage"] == "mrpo":
        assert "mrpo/reshaped_frac" in last and "process_reward" in last and "answer_reward" in last
        assert {"ffp/early", "ffp/mid", "ffp/late", "ffp/no_ffp"} <= set(last)
        assert last["judge/calls"] + last["judge/cache_hits"] >= 1  # the teacher rollouts were judged
    if recipe.algorithm.get("capo"):
        assert "capo/corrupted_mean_length" in last and "rewards/capo_perception/mean" in last
    assert (tmp_path / name / "metrics.jsonl").is_file()


@pytest.fixture(scope="module")
def reward_model(tiny, tmp_path_factory):
    """A tiny sequence-classification reward model on the policy's tokenizer, saved to a folder."""
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForSequenceClassification

    tok = AutoTokenizer.from_pretrained(tiny)
    torch.manual_seed(0)
    rm = Qwen2ForSequenceClassification(Qwen2Config(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, num_labels=1, pad_token_id=tok.pad_token_id))
    out = tmp_path_factory.mktemp("reward_model")
    rm.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", RL_RECIPES)
def test_every_recipe_takes_a_reward_model_and_checkpoints(name, tiny, records, judge, reward_model, tmp_path):
    """Each recipe's rewards plus a sequence-classification reward model (by path, as TRL takes
    a model id): two steps, a checkpoint after each; the reward model is not reward state."""
    from medrl.train.callbacks import REWARD_STATE_FILE
    from medrl.train.trainer import MedGRPOTrainer

    if name == "stepgrpo":
        from medrl.methods.stepgrpo import key_steps_stage

        records = key_steps_stage(records, judge, tmp_path / "key_steps", show_progress=False)

    class WithRewardModel(MedGRPOTrainer):
        def __init__(self, *a, reward_funcs, args, **kw):
            args.reward_weights = [*args.reward_weights, 0.5]
            super().__init__(*a, reward_funcs=[*reward_funcs, str(reward_model)], args=args, **kw)

    from medrl.train.pipeline import train_rl

    recipe = load_recipe(name, profile="cpu", overrides=[f"grpo.max_completion_length={MAX_LEN}", "grpo.save_steps=1"])
    res = train_rl(recipe, tiny, records, tmp_path / name, judge=judge, train=False, trainer_cls=WithRewardModel,
                   grpo_overrides={"report_to": "none"})
    tr = with_teacher(res.trainer, records, recipe.data.get("prompt_style", "think_answer"))
    assert isinstance(tr.reward_funcs[-1], torch.nn.Module)
    before = _params(tr.model)
    tr.train()
    _check_trained(recipe, tr, before)
    for step in (1, 2):
        ckpt = tmp_path / name / f"checkpoint-{step}"
        assert ckpt.is_dir()
        # ARMed's thresholds travel in the ARMed method's state (method_state.json), nowhere else
        state = ckpt / "method_state.json"
        assert ((json.loads(state.read_text())["armed"]["rewards"].keys() == {"armed"}) if name == "armed"
                else not (ckpt / REWARD_STATE_FILE).exists())
        assert not (ckpt / REWARD_STATE_FILE).exists()


def test_resume_after_kill_restores_step_optimizer_and_armed_threshold(tiny, records, judge, tmp_path):
    """ARMed: stop after the step-1 checkpoint, resume, and compare with the checkpoint."""
    from transformers import TrainerCallback

    from medrl.train.callbacks import REWARD_STATE_FILE, StopAfterStepCallback

    out = tmp_path / "armed"
    recipe, tr, before = _two_steps("armed", tiny, records, judge, out, callbacks=[StopAfterStepCallback(1)])
    assert tr.state.global_step == 1
    ckpt = out / "checkpoint-1"
    saved_state = json.loads((ckpt / "method_state.json").read_text())["armed"]["rewards"]["armed"]
    assert not (ckpt / REWARD_STATE_FILE).exists()
    assert saved_state == tr.reward_funcs[0].state_dict()
    assert saved_state["bertscore"]["threshold"] is not None and saved_state["bertscore"]["steps"] == 1
    assert not (out / "final").exists()

    seen = {}

    class Probe(TrainerCallback):
        def on_train_begin(self, args, state, control, optimizer=None, model=None, **kw):
            seen["step"] = state.global_step
            seen["optimizer"] = copy.deepcopy(optimizer.state_dict())
            seen["weights"] = {k: v.detach().clone() for k, v in model.state_dict().items()}

        def on_step_begin(self, args, state, control, **kw):
            seen.setdefault("reward_state", json.loads(json.dumps(fn.state_dict())))

    from medrl.train.pipeline import train_rl

    res = train_rl(load_recipe("armed", profile="cpu", overrides=[f"grpo.max_completion_length={MAX_LEN}"]),
                   tiny, records, out, judge=judge, train=False, callbacks=[Probe()],
                   grpo_overrides={"report_to": "none"})
    fn = res.trainer.reward_funcs[0]
    assert fn.state_dict()["bertscore"]["threshold"] is None  # a fresh reward object...
    tr2 = with_teacher(res.trainer, records, "think_answer")
    tr2.train(resume_from_checkpoint=str(ckpt))
    # ...restored from the checkpoint before the first resumed step
    assert seen["step"] == 1
    assert seen["reward_state"] == saved_state
    ref = torch.load(ckpt / "optimizer.pt", weights_only=True)
    got = seen["optimizer"]
    assert ref["state"].keys() == got["state"].keys() and ref["state"]
    for k, s in ref["state"].items():
        for name, v in s.items():
            assert torch.equal(torch.as_tensor(v), torch.as_tensor(got["state"][k][name])), (k, name)
    # the weights are the checkpoint's (not the freshly loaded initial ones)
    saved_model = type(tr2.model).from_pretrained(ckpt)
    for k, v in saved_model.state_dict().items():
        assert torch.equal(seen["weights"][k], v), k
    assert any(not torch.equal(seen["weights"][k], before[k]) for k in before if k in seen["weights"])
    assert tr2.state.global_step == 2
    assert fn.state_dict()["bertscore"]["steps"] == 2  # and it kept adapting
    _check_trained(recipe, tr2, before)
    assert json.loads((out / "checkpoint-2" / "method_state.json").read_text())["armed"]["rewards"]["armed"] == \
        fn.state_dict()
    # per-sample raw and adaptive semantic rewards of each step feed ARMed Fig. 3
    from medrl.eval.diagnostics import load_reward_samples, raw_vs_adaptive

    samples = load_reward_samples(out / "reward_samples.jsonl")
    assert {"bertscore", "bertscore_adaptive", "cosine", "cosine_adaptive"} <= set(samples)
    assert len(samples["bertscore"]) == 2  # steps 1 and 2 (one batch each)
    assert samples["cosine_adaptive"][-1] == [float(v) for v in fn.semantic.last_adapted["cosine"]]
    stats = raw_vs_adaptive({k: samples[k] for k in ("bertscore", "bertscore_adaptive")})
    assert stats["bertscore"]["replayed"] is False and stats["bertscore"]["raw"]["n"] > 0


# ------------------------------------------------------------------ MRPO vs GRPO, same batch


def _fixed_batch_trainer(name, tiny, records, judge, out, overrides=()):
    """A trainer whose rollouts are fixed texts: 2 prompts x (right answer, wrong answer with a
    meta-commentary first step). No sampling, so the batch is the same on every call."""
    from medrl.data import to_hf_dataset
    from medrl.train.pipeline import train_rl
    from medrl.train.teacher import install_teacher

    recipe = load_recipe(name, profile="cpu", overrides=[
        f"grpo.max_completion_length={MAX_LEN + 16}", "grpo.per_device_train_batch_size=4", *overrides])
    tr = train_rl(recipe, tiny, records, out, judge=judge, train=False, grpo_overrides={"report_to": "none"}).trainer
    recs = records[:2]
    calls = {"n": 0}

    def text(rec):  # rows alternate right / wrong within each group of 2
        calls["n"] += 1
        if calls["n"] % 2 == 1:
            return teacher_text(rec)
        return (f"<think>Let me think about this. This is a {rec.modality} image. It looks fine."
                "</think><answer>banana</answer>")

    install_teacher(tr, recs, text, replace_all=True)
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    ds = to_hf_dataset(recs, "think_answer")
    return tr, [dict(ds[i]) for i in (0, 0, 1, 1)]


def test_unscorable_rollouts_are_excluded_not_scored_zero(tiny, records, judge, tmp_path):
    """A rollout a reward marks UNSCORABLE leaves the group baseline, gets advantage 0 and no
    loss tokens ("exclude", the default); "per_reward" treats it like TRL's None (sums the other
    rewards)."""
    from medrl.types import UNSCORABLE, record_unscorable

    results = {}
    for mode in ("exclude", "per_reward"):
        tr, inputs = _fixed_batch_trainer("grpo", tiny, records, judge, tmp_path / mode,
                                          overrides=[f"algorithm.unscorable={mode}"])
        length_fn = tr.reward_funcs[2]

        def flaky(prompts, completions, _fn=length_fn, **kw):
            out = _fn(prompts, completions, **kw)
            out[1] = UNSCORABLE  # row 1 (the wrong answer of prompt 1) cannot be scored
            return record_unscorable(flaky, out)

        flaky.__name__ = length_fn.__name__
        tr.reward_funcs[2] = flaky
        out = tr._generate_and_score_completions(inputs)
        results[mode] = (out, tr._last_rewards.clone())
    out, rew = results["exclude"]
    assert torch.isnan(rew[1]).all() and not torch.isnan(rew[[0, 2, 3]]).any()
    assert out["advantages"][1] == 0 and out["advantages"][0] == 0  # row 0 is alone in its group now
    assert out["completion_mask"][1].sum() == 0 and out["completion_mask"][0].sum() > 0
    assert out["num_items_in_batch"] == out["completion_mask"].sum()
    out_p, rew_p = results["per_reward"]
    assert not torch.isnan(rew_p[1, :2]).any() and torch.isnan(rew_p[1, 2])
    assert out_p["advantages"][1] != 0 and out_p["completion_mask"][1].sum() > 0


def test_mrpo_token_advantages_and_loss_terms_differ_from_grpo_exactly_on_shaped_steps(tiny, records, judge, tmp_path):
    """Same prompts, same fixed completions, same rewards: GRPO gives every token A_i; MRPO
    (Eq. 7) changes exactly the step tokens of wrong-answer rollouts (R_ans <= tau) whose shaped
    value differs from A_i, and the per-token loss gradients follow the advantages."""
    import math

    from medrl.answers.completion import step_token_spans
    from medrl.answers.completion import completion_token_offsets

    tr, inputs = _fixed_batch_trainer("mrpo", tiny, records, judge, tmp_path)
    tok = tr._tokenizer

    results = {}
    for adv in ("mrpo", "grpo"):
        tr.medrl_algorithm["advantage"] = adv
        out = tr._generate_and_score_completions([dict(x) for x in inputs])
        captured = {}
        orig = tr._get_per_token_logps_and_entropies

        def capture(*a, **kw):
            logps, ent, aux = orig(*a, **kw)
            logps.retain_grad()
            captured["logps"] = logps
            return logps, ent, aux

        tr._get_per_token_logps_and_entropies = capture
        tr.model.zero_grad()
        tr._compute_loss(tr.model, out).backward()
        tr._get_per_token_logps_and_entropies = orig
        results[adv] = (out, tr._last_rewards.clone(), captured["logps"].grad.clone(),
                        list(tr._process_fn.last_steps), list(tr._process_fn.last_step_verdicts))

    out_m, rew_m, grad_m, steps, verdicts = results["mrpo"]
    out_g, rew_g, grad_g, _, _ = results["grpo"]
    assert torch.equal(rew_m, rew_g)  # deterministic rewards: the same batch twice
    a = out_g["advantages"]  # (B,)
    assert a.dim() == 1 and out_m["advantages"].dim() == 2
    mask = out_m["completion_mask"].float()
    B, T = out_m["completion_ids"].shape
    r_ans = rew_m[:, 0]  # mrpo_answer is the first reward of the recipe
    assert (r_ans[[0, 2]] > 0.6).all() and (r_ans[[1, 3]] <= 0.6).all()  # teacher right, "banana" wrong

    # Hand computation of Eq. 7 (exponential shaping, selective strategy, tau = 0.6):
    expected = a.unsqueeze(1).expand(B, T).clone()
    shaped = torch.zeros(B, T, dtype=torch.bool)
    for i in (1, 3):
        valid = [v.valid for v in verdicts[i]]
        assert valid[0] is False and True in valid  # meta step "Let me think about this." is invalid
        text = tr._last_texts[i]
        spans = step_token_spans(text, steps[i], completion_token_offsets(tok, text, tr._last_ids[i]))
        K = len(spans)
        for k, ((s, e), ok) in enumerate(zip(spans, valid), start=1):
            p = (k - 1) / (K - 1)
            expected[i, s:e] = abs(a[i]) if ok else -math.exp(1 - p) * abs(a[i])
            shaped[i, s:e] = True
    torch.testing.assert_close(out_m["advantages"], expected)
    differs = ~torch.isclose(out_m["advantages"], a.unsqueeze(1).expand(B, T))
    assert differs.any()
    assert torch.equal(differs, shaped & ~torch.isclose(expected, a.unsqueeze(1).expand(B, T)))
    assert not differs[[0, 2]].any()  # right-answer rollouts are untouched

    # Per-token loss terms: with old = current policy (ratio 1) and policy == reference (KL grad 0)
    # the GRPO loss mean_i (1/|y_i|) sum_t -A_it * ratio_it has d/dlogp_it = -A_it / (|y_i| * B).
    lengths = mask.sum(1, keepdim=True)
    torch.testing.assert_close(grad_m, -out_m["advantages"] * mask / (lengths * B))
    torch.testing.assert_close(grad_g, -a.unsqueeze(1) * mask / (lengths * B))
    assert torch.equal(~torch.isclose(grad_m, grad_g), differs & mask.bool())


# ------------------------------------------------------------------ CLI, accelerate


def _cli_env():
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               OMP_NUM_THREADS="1")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def test_cli_dry_run_writes_resolved_config(tmp_path):
    from medrl.cli import main

    assert main(["train", "--recipe", "mrpo", "--model", "tiny", "--out", str(tmp_path), "--profile", "cpu",
                 "--set", "algorithm.mrpo.strategy=soft", "--dry-run"]) == 0
    import yaml

    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert cfg["recipe"]["algorithm"]["mrpo"]["strategy"] == "soft"
    assert cfg["recipe"]["grpo"]["num_generations"] == 2 and cfg["run"]["model"] == "tiny"
    assert main(["train", "--recipe", "mrpo", "--model", "tiny", "--out", str(tmp_path), "--set", "bogus=1"]) == 2


@pytest.mark.slow
def test_cli_train_then_resume_writes_run_folder(tiny, data_dir, tmp_path):
    """`medrl train` with the CPU profile: config, checkpoints, TensorBoard events, final model;
    `--resume` continues from the last checkpoint to a larger max_steps."""
    base = [sys.executable, "-m", "medrl.cli", "train", "--recipe", "grpo", "--model", str(tiny), "--data",
            "vqa_rad", "--data-dir", str(data_dir), "--judge", "reference", "--profile", "cpu", "--limit", "2",
            "--out", str(tmp_path)]
    subprocess.run(base + ["--max-steps", "1"], check=True, env=_cli_env(), cwd=REPO, timeout=600)
    assert (tmp_path / "checkpoint-1").is_dir() and (tmp_path / "final" / "config.json").is_file()
    assert list((tmp_path / "runs").rglob("events.out.tfevents.*"))
    subprocess.run(base + ["--max-steps", "2", "--resume"], check=True, env=_cli_env(), cwd=REPO, timeout=600)
    state = json.loads((tmp_path / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2


@pytest.mark.slow
def test_accelerate_launch_single_cpu_process(tiny, data_dir, tmp_path):
    """`accelerate launch --cpu --num_processes 1 -m medrl.cli train ...` runs one step."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "1",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "-m", "medrl.cli", "train", "--recipe", "mrpo", "--model", str(tiny), "--data", "vqa_rad",
           "--data-dir", str(data_dir), "--profile", "cpu", "--limit", "2", "--max-steps", "1",
           "--out", str(tmp_path)]
    subprocess.run(cmd, check=True, env=_cli_env(), cwd=REPO, timeout=600)
    assert (tmp_path / "final" / "config.json").is_file()
    assert json.loads((tmp_path / "checkpoint-1" / "trainer_state.json").read_text())["global_step"] == 1


@pytest.mark.parametrize("name", ["stepgrpo", "armed"])
def test_multi_stage_pipeline_runs_every_stage_and_resumes(name, tiny, records, judge, tmp_path):
    """StepGRPO: key steps -> warm-up SFT -> RL; ARMed: RL -> knowledge injection -> SFT -> RL.
    A second call finds every stage done and returns the same final model."""
    from medrl.models import load_policy
    from medrl.train.pipeline import run_recipe

    recipe = load_recipe(name, profile="cpu", overrides=["grpo.report_to='none'", "sft.report_to='none'"])
    final = run_recipe(recipe, tiny, records, tmp_path, judge=judge)
    stages = sorted((tmp_path / "stages").iterdir())
    assert [p.name.split("_", 1)[1] for p in stages] == [s["name"] for s in recipe.stages]
    assert all((p / "DONE").is_file() for p in stages)
    for card in [p / "final" / "README.md" for p in stages if (p / "final").is_dir()]:  # every final/ is Hub-ready
        text = card.read_text()
        assert "datasets:" in text.split("---")[1] and f"medrl train --recipe {name} --model" in text, card
        assert str(tmp_path) not in text and str(tiny) not in text, card
    model, _ = load_policy(final)
    assert model is not None
    assert run_recipe(recipe, tiny, records, tmp_path, judge=judge, resume=True) == final


def test_train_rl_keeps_the_best_checkpoint_by_a_held_out_probe(tiny, records, judge, tmp_path):
    """``grpo.metric_for_best_model`` with held-out probe records: every save is scored and the best
    checkpoint's weights land in ``best/`` beside ``final/`` (MediX-R1 Table 4 compares the two)."""
    from medrl.train.best_checkpoint import BEST_DIR, BEST_FILE
    from medrl.train.pipeline import train_rl

    recipe = load_recipe("grpo", profile="cpu", overrides=[
        f"grpo.max_completion_length={MAX_LEN}", "grpo.save_steps=1", "grpo.save_total_limit=2",
        "grpo.metric_for_best_model=monitor/probe_accuracy"])
    out = tmp_path / "run"
    res = train_rl(recipe, tiny, records, out, judge=judge, train=False, probe_records=records[:2],
                   grpo_overrides={"report_to": "none"})
    tr = with_teacher(res.trainer, records, "think_answer")
    tr.train()
    info = json.loads((out / BEST_FILE).read_text())
    assert info["metric"] == "monitor/probe_accuracy"
    assert [c["step"] for c in info["candidates"]] == [1, 2]  # every save was scored
    assert info["best"]["step"] in (1, 2)
    assert (out / BEST_DIR / "config.json").is_file()
    assert not (out / BEST_DIR / "optimizer.pt").exists()
