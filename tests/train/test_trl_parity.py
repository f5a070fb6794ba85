"""TRL parity: what TRL's ``GRPOTrainer`` can do, ``MedGRPOTrainer`` can do.

Written from TRL 1.16's documented ``GRPOConfig`` options (not copied from TRL's tests). Every
run uses a tiny text policy (one Qwen2 layer built from a config, BPE tokenizer trained offline)
and, where a reward model is wanted, a tiny ``Qwen2ForSequenceClassification`` saved next to it
and passed by path, as TRL takes a model id. A run is 2 optimizer steps of 2 rollouts of one
prompt; it must finish, write its checkpoint and move the policy's parameters.

Rewards that give the random policy something to learn: the completion length (sync and async
versions) and the reward model's score. MRPO runs (``algorithm.advantage = "mrpo"``) replace
every second rollout by a well-formed teacher text (:func:`medrl.train.teacher.install_teacher`)
so the step judge (the offline reference judge) has steps to verify and the token advantages
differ from the sequence advantage.

Also here: the two meanings of a missing reward value (``None`` = not applicable, TRL;
:data:`medrl.types.UNSCORABLE` = could not be scored, excluded), opt-in reward state next to
reward models in checkpoints, and the options refused with MRPO token advantages.

Default runs keep to a few representative options (< 60 s on one core); the full option matrix
is ``@pytest.mark.slow``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

QUESTIONS = ["Which organ shows the abnormality?", "What imaging modality was used?",
             "Is the heart enlarged on this radiograph?", "Is there a nodule in the left lung?"]
ANSWERS = ["liver", "CT", "no", "yes"]
RECORDS = [SimpleNamespace(question=q, answer=a) for q, a in zip(QUESTIONS, ANSWERS)]
MAX_LEN = 24


def teacher_text(rec) -> str:
    return f"<think>This is a CT image. The finding is {rec.answer}.</think><answer>{rec.answer}</answer>"


# ------------------------------------------------------------------------------ tiny models


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """``(policy_dir, reward_model_dir)``: tiny Qwen2 causal LM and sequence classifier."""
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2ForSequenceClassification

    from medrl.models.tiny import DEFAULT_TEXTS, _train_tokenizer

    root = tmp_path_factory.mktemp("parity_models")
    tok = _train_tokenizer(DEFAULT_TEXTS + QUESTIONS + [teacher_text(r) for r in RECORDS], 600)
    cfg = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
               pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    torch.manual_seed(0)
    policy = Qwen2ForCausalLM(Qwen2Config(**cfg))
    policy.generation_config.pad_token_id = tok.pad_token_id
    policy.generation_config.eos_token_id = tok.eos_token_id
    policy.save_pretrained(root / "policy")
    tok.save_pretrained(root / "policy")
    rm = Qwen2ForSequenceClassification(Qwen2Config(**cfg, num_labels=1))
    with torch.no_grad():  # a reward model with spread: scores differ between completions
        rm.score.weight.normal_(0.0, 2.0)
    rm.save_pretrained(root / "reward_model")
    tok.save_pretrained(root / "reward_model")
    return root / "policy", root / "reward_model"


def dataset(kind: str = "standard", n: int = 4, iterable: bool = False):
    from datasets import Dataset

    rows = []
    for r in RECORDS[:n]:
        prompt = r.question if kind == "standard" else [{"role": "user", "content": r.question}]
        rows.append({"prompt": prompt, "question": r.question, "answer": r.answer})
    ds = Dataset.from_list(rows)
    return ds.to_iterable_dataset() if iterable else ds


# ------------------------------------------------------------------------------ rewards


def length_reward(completions, **kw):
    from medrl.answers.completion import completion_text

    return [len(completion_text(c)) / 10.0 for c in completions]


async def async_length_reward(completions, **kw):
    return length_reward(completions)


def not_applicable(completions, **kw):
    """TRL's "this reward does not apply to these samples": None everywhere."""
    return [None] * len(completions)


def mrpo_answer(completions, answer, **kw):
    """Stand-in R_ans for the MRPO runs: 1 when the parsed answer equals the reference."""
    from medrl.answers.completion import completion_text, parse_response

    return [float((parse_response(completion_text(c)).answer or "").strip() == a) for c, a in zip(completions, answer)]


class CountingReward:
    """A stateful reward that opted in (``checkpoint_state = True``): counts its calls."""

    checkpoint_state = True

    def __init__(self):
        self.__name__ = "counting"
        self.calls = 0
        self.frozen = False

    def __call__(self, completions, **kw):
        if not self.frozen:
            self.calls += 1
        return [0.0] * len(completions)

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = int(state["calls"])


# ------------------------------------------------------------------------------ harness


def config(out: Path, **overrides):
    from trl import GRPOConfig

    kw = dict(output_dir=str(out), per_device_train_batch_size=2, num_generations=2, max_completion_length=MAX_LEN,
              max_steps=2, learning_rate=5e-2, logging_steps=1, save_strategy="steps", save_steps=2,
              report_to="none", use_cpu=True, seed=0, bf16=False, dataloader_num_workers=0)
    kw.update(overrides)
    return GRPOConfig(**kw)


def trainer(out: Path, models, rewards, *, algorithm=None, args=None, data=None, **kw):
    from medrl.train.trainer import MedGRPOTrainer

    policy, _ = models
    return MedGRPOTrainer(model=str(policy), reward_funcs=rewards, args=args or config(out),
                          train_dataset=dataset() if data is None else data, algorithm=algorithm, **kw)


def params(model):
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def assert_trained(tr, before, steps=2, checkpoint=True):
    assert tr.state.global_step == steps
    changed = [n for n, p in tr.model.named_parameters() if p.requires_grad and not torch.equal(p.detach(), before[n])]
    assert changed, "no parameter changed"
    if checkpoint:
        assert (Path(tr.args.output_dir) / f"checkpoint-{steps}").is_dir()


# strategy "full": every judged rollout is reshaped (the teacher's are correct, so "selective"
# would leave them alone), so the loss really receives (B, T) advantages that differ from A_i
MRPO = {"advantage": "mrpo", "correctness": "exact",
        "mrpo": {"answer_reward": "mrpo_answer", "process_reward": "mrpo_process", "strategy": "full"}}


def mrpo_rewards():
    from medrl.rewards.judged import make_mrpo_process

    return [mrpo_answer, make_mrpo_process(judge="reference"), length_reward]


def run(tmp_path, models, *, advantage="grpo", rewards=None, data=None, teacher=None, checkpoint=True, **grpo):
    """Build, train 2 steps, check. MRPO runs get teacher rollouts (every second one)."""
    from medrl.train.teacher import install_teacher

    mrpo = advantage == "mrpo"
    # the random policy never stops within MAX_LEN: with truncated completions masked only the
    # (EOS-terminated) teacher rollouts can carry the loss
    teacher = teacher or grpo.get("mask_truncated_completions", False)
    rewards = rewards if rewards is not None else (mrpo_rewards() if mrpo else [length_reward])
    tr = trainer(tmp_path / "run", models, rewards, algorithm=MRPO if mrpo else None,
                 args=config(tmp_path / "run", **grpo), data=data)
    if mrpo or teacher:
        install_teacher(tr, RECORDS, teacher_text, every=2)
    before = params(tr.model)
    tr.train()
    assert_trained(tr, before, steps=grpo.get("max_steps", 2), checkpoint=checkpoint)
    if mrpo:
        logs = [h["mrpo/reshaped_frac"] for h in tr.state.log_history if "mrpo/reshaped_frac" in h]
        assert logs and max(logs) > 0, "MRPO token advantages were not computed"
    return tr


# ------------------------------------------------------------------------------ reward models + state


def test_reward_model_trains_checkpoints_resumes_and_continues(tmp_path, models):
    """A sequence-classification reward model (by path, as TRL takes a model id) next to a
    function and an opted-in stateful reward: checkpoint, resume, continue. Only the opted-in
    reward's state is written to reward_state.json; the reward model is not reward state."""
    from medrl.train.callbacks import REWARD_STATE_FILE, StopAfterStepCallback, stateful_rewards

    _, rm = models
    out = tmp_path / "rm"
    counting = CountingReward()
    args = config(out, max_steps=3, save_steps=1)
    tr = trainer(out, models, [str(rm), length_reward, counting], args=args, callbacks=[StopAfterStepCallback(1)])
    assert isinstance(tr.reward_funcs[0], torch.nn.Module)
    assert list(stateful_rewards(tr.reward_funcs)) == ["counting"]
    before = params(tr.model)
    tr.train()
    assert_trained(tr, before, steps=1)
    saved = json.loads((out / "checkpoint-1" / REWARD_STATE_FILE).read_text())
    assert saved == {"counting": {"calls": 1}}
    logs = [h for h in tr.state.log_history if "rewards/reward_model/mean" in h]
    assert logs and all(h["rewards/reward_model/mean"] == h["rewards/reward_model/mean"] for h in logs)

    counting2 = CountingReward()
    tr2 = trainer(out, models, [str(rm), length_reward, counting2], args=config(out, max_steps=3, save_steps=1))
    mid = params(tr2.model)
    tr2.train(resume_from_checkpoint=str(out / "checkpoint-1"))
    assert tr2.state.global_step == 3
    assert counting2.calls == 3  # restored 1, then two more steps
    assert json.loads((out / "checkpoint-3" / REWARD_STATE_FILE).read_text()) == {"counting": {"calls": 3}}
    assert any(not torch.equal(p.detach(), mid[n]) for n, p in tr2.model.named_parameters() if p.requires_grad)


def test_reward_model_object_with_its_tokenizer_and_mrpo(tmp_path, models):
    """A loaded reward model and its tokenizer (TRL's ``reward_processing_classes``) in an MRPO
    run (token advantages), checkpointed."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from medrl.train.teacher import install_teacher

    _, rm_dir = models
    rm = AutoModelForSequenceClassification.from_pretrained(rm_dir, num_labels=1)
    rm_tok = AutoTokenizer.from_pretrained(rm_dir)
    rewards = mrpo_rewards() + [rm]
    tr = trainer(tmp_path / "o", models, rewards, algorithm=MRPO, args=config(tmp_path / "o"),
                 reward_processing_classes=[None, None, None, rm_tok])
    install_teacher(tr, RECORDS, teacher_text, every=2)
    before = params(tr.model)
    tr.train()
    assert_trained(tr, before)
    assert not (tmp_path / "o" / "checkpoint-2" / "reward_state.json").exists()


def test_state_dict_alone_is_not_reward_state():
    """Duck-typed ``state_dict`` (every nn.Module) is not an opt-in; a half opt-in is an error."""
    from medrl.train.callbacks import save_reward_state, stateful_rewards

    module = torch.nn.Linear(2, 1)
    assert stateful_rewards([module, length_reward]) == {}

    class Half:
        checkpoint_state = True
        __name__ = "half"

    with pytest.raises(TypeError, match="half.*state_dict"):
        stateful_rewards([Half()])

    class Tensorish(CountingReward):
        def state_dict(self):
            return {"w": torch.zeros(1)}

    with pytest.raises(TypeError, match="counting.*JSON"):
        save_reward_state("/nonexistent-not-written", [Tensorish()])


def test_armed_rewards_opt_in():
    from medrl.rewards.armed import AdaptiveSemanticReward, ArmedReward
    from medrl.types import is_stateful_reward

    assert is_stateful_reward(ArmedReward) and is_stateful_reward(AdaptiveSemanticReward)


# ------------------------------------------------------------------------------ None vs UNSCORABLE


def test_unscorable_marker_is_converted_for_trl():
    import pickle

    from medrl.rewards.base import Reward
    from medrl.types import UNSCORABLE, record_unscorable

    assert pickle.loads(pickle.dumps(UNSCORABLE)) is UNSCORABLE
    fn = Reward("r", lambda completions, columns, reward: [1.0, None, UNSCORABLE, 0.0])
    out = fn(None, ["a", "b", "c", "d"])
    assert out == [1.0, None, None, 0.0] and out.unscorable == (2,)  # the typed result: TRL's list + the rows
    assert pickle.loads(pickle.dumps(out)).unscorable == (2,)
    holder = SimpleNamespace()
    assert record_unscorable(holder, [None, None]) == [None, None] and record_unscorable(holder, []).unscorable == ()
    assert not vars(holder)  # nothing is left on the reward


def test_reward_returning_none_everywhere_still_trains(tmp_path, models):
    """TRL semantics: a reward that returns None for every sample does not apply to them; the
    other reward still trains the policy (with the default ``unscorable: exclude``)."""
    tr = run(tmp_path, models, rewards=[not_applicable, length_reward], checkpoint=False, save_strategy="no")
    logs = [h for h in tr.state.log_history if "unscorable_frac" in h]
    assert logs and all(h["unscorable_frac"] == 0.0 for h in logs)


class FlakyJudge:
    """A judge whose step verification fails (unscored or raising) for rollouts mentioning
    "outage"; other rollouts get every step valid."""

    name, images = "flaky", False

    def __init__(self, mode: str):
        from medrl.judges.base import JudgeStats

        self.stats, self.mode = JudgeStats(), mode

    async def verify_steps(self, question, reference, steps, **kw):
        from medrl.types import StepVerdict, Verdict

        self.stats.calls += 1
        if any("outage" in s for s in steps):
            self.stats.failures += 1
            if self.mode == "raise":
                raise ConnectionError("judge endpoint down")
            return Verdict.unscored("judge endpoint down")
        return Verdict.ok([StepVerdict(1, 1) for _ in steps])

    async def answer_correct(self, *a, **k):
        raise AssertionError("not used")

    async def consistency(self, *a, **k):
        raise AssertionError("not used")


@pytest.mark.parametrize("mode", ["unscored", "raise"])
def test_judge_outage_excludes_only_its_rollouts(tmp_path, models, mode):
    """Rollouts the judge could not score get no advantage and no loss mask; the others of the
    batch (including a reward returning None everywhere) keep theirs. ``per_reward`` keeps them."""
    from medrl.rewards.judged import MRPOProcessReward
    from medrl.train.teacher import install_teacher

    texts = iter(["<think>The scan is fine. The judge had an outage.</think><answer>liver</answer>",
                  "<think>This is a CT image. The liver is abnormal.</think><answer>liver</answer>"] * 8)
    for policy in ("exclude", "per_reward"):
        proc = MRPOProcessReward("mrpo_process", FlakyJudge(mode))
        tr = trainer(tmp_path / policy, models, [proc, not_applicable, length_reward],
                     algorithm={"unscorable": policy},
                     args=config(tmp_path / policy, per_device_train_batch_size=4, max_completion_length=64))
        install_teacher(tr, RECORDS, lambda rec: next(texts), replace_all=True)
        tr.model.train()
        out = tr._generate_and_score_completions([dict(dataset()[0])] * 2 + [dict(dataset()[1])] * 2)
        mask = out["completion_mask"].sum(dim=1)
        assert tr._batch.results["mrpo_process"].unscorable == (0, 2)  # the reward's typed result
        if policy == "exclude":
            assert mask[0] == 0 and mask[2] == 0 and mask[1] > 0 and mask[3] > 0
            assert out["advantages"][0] == 0 and out["advantages"][2] == 0
            assert tr._last_unscorable.tolist() == [True, False, True, False]
        else:
            assert (mask > 0).all()


# ------------------------------------------------------------------------------ options refused with MRPO


@pytest.mark.parametrize("option, match", [
    ({"importance_sampling_level": "sequence"}, "importance_sampling_level='sequence'"),
    ({"loss_type": "luspo", "importance_sampling_level": "sequence"}, "luspo"),
    ({"loss_type": "vespo"}, "vespo"),
    ({"off_policy_mask_threshold": 0.5}, "off_policy_mask_threshold"),
])
def test_options_that_need_one_advantage_per_rollout_are_refused_with_mrpo(tmp_path, models, option, match):
    with pytest.raises(ValueError, match=match):
        trainer(tmp_path, models, mrpo_rewards(), algorithm=MRPO, args=config(tmp_path, **option))


def test_config_aggregation_chooses_the_estimator_without_a_recipe(tmp_path, models):
    """Used as a drop-in ``GRPOTrainer`` (no ``algorithm``), the trainer follows the GRPOConfig:
    ``multi_objective_aggregation="normalize_then_sum"`` runs GDPO's estimator and trains; an
    ``algorithm`` that names GRPO's estimator under that config is still refused at start."""
    tr = run(tmp_path / "gdpo", models, rewards=[length_reward, async_length_reward],
             multi_objective_aggregation="normalize_then_sum")
    assert tr.medrl_algorithm["advantage"] == "gdpo"
    assert trainer(tmp_path / "plain", models, [length_reward]).medrl_algorithm["advantage"] == "grpo"
    with pytest.raises(ValueError, match="sum_then_normalize"):
        trainer(tmp_path / "named", models, [length_reward], algorithm={"advantage": "grpo"},
                args=config(tmp_path / "named", multi_objective_aggregation="normalize_then_sum"))


def test_token_advantage_conflicts_lists_every_reason():
    from medrl.methods.mrpo import token_advantage_conflicts

    assert token_advantage_conflicts(SimpleNamespace(importance_sampling_level="token", loss_type="dapo")) == []
    why = token_advantage_conflicts(SimpleNamespace(importance_sampling_level="sequence", loss_type="luspo",
                                                    off_policy_mask_threshold=0.1))
    assert len(why) == 3


# ------------------------------------------------------------------------------ option matrix

FAST = [  # (advantage, options): representative runs in the default suite
    ("mrpo", {"loss_type": "grpo"}),
    ("grpo", {"loss_type": "dapo", "scale_rewards": "batch", "importance_sampling_level": "sequence"}),
]

TOKEN_OK = [  # options MRPO token advantages combine with: run with both advantages
    {"loss_type": "grpo"}, {"loss_type": "bnpo"}, {"loss_type": "dr_grpo"}, {"loss_type": "dapo"},
    {"loss_type": "cispo"}, {"loss_type": "sapo"},
    {"scale_rewards": "group"}, {"scale_rewards": "batch"}, {"scale_rewards": "none"},
    {"multi_objective_aggregation": "normalize_then_sum"},
    {"num_iterations": 2}, {"steps_per_generation": 2, "num_iterations": 2},
    {"top_entropy_quantile": 0.2}, {"entropy_coef": 0.01}, {"use_adaptive_entropy": True, "entropy_coef": 0.01},
    {"mask_truncated_completions": True},
    {"beta": 0.04}, {"beta": 0.04, "sync_ref_model": True, "ref_model_sync_steps": 1, "ref_model_mixup_alpha": 0.5},
    {"delta": 1.5}, {"epsilon_high": 0.28}, {"generation_kwargs": {"top_k": 5}},
]
GRPO_ONLY = [  # options defined through one advantage / ratio per rollout (refused with MRPO, tested above)
    {"importance_sampling_level": "sequence"}, {"loss_type": "luspo", "importance_sampling_level": "sequence"},
    {"loss_type": "vespo"}, {"off_policy_mask_threshold": 0.5},
]
SLOW = ([("grpo", o) for o in TOKEN_OK + GRPO_ONLY] + [("mrpo", o) for o in TOKEN_OK])


def _id(case):
    adv, opts = case
    return adv + "-" + "-".join(f"{k}={v}" for k, v in opts.items())


@pytest.mark.parametrize("case", FAST, ids=_id)
def test_option_trains_and_checkpoints(tmp_path, models, case):
    advantage, opts = case
    run(tmp_path, models, advantage=advantage, **opts)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=_id)
def test_option_matrix(tmp_path, models, case):
    advantage, opts = case
    run(tmp_path, models, advantage=advantage, **opts)


@pytest.mark.slow
@pytest.mark.parametrize("advantage", ["grpo", "mrpo"])
@pytest.mark.parametrize("kind", ["standard", "conversational"])
def test_datasets_standard_conversational_iterable(tmp_path, models, advantage, kind):
    run(tmp_path / "map", models, advantage=advantage, data=dataset(kind))
    run(tmp_path / "iter", models, advantage=advantage, data=dataset(kind, iterable=True))


@pytest.mark.slow
@pytest.mark.parametrize("advantage", ["grpo", "mrpo"])
def test_reward_models_mixed_with_sync_and_async_functions(tmp_path, models, advantage):
    _, rm = models
    extra = [str(rm), async_length_reward]
    rewards = (mrpo_rewards() if advantage == "mrpo" else [length_reward]) + extra
    run(tmp_path, models, advantage=advantage, rewards=rewards)


@pytest.mark.slow
@pytest.mark.parametrize("advantage", ["grpo", "mrpo"])
def test_eval_strategy_steps_with_eval_dataset(tmp_path, models, advantage):
    from medrl.train.teacher import install_teacher

    rewards = mrpo_rewards() if advantage == "mrpo" else [length_reward]
    args = config(tmp_path, eval_strategy="steps", eval_steps=1, per_device_eval_batch_size=2)
    tr = trainer(tmp_path, models, rewards, algorithm=MRPO if advantage == "mrpo" else None, args=args,
                 eval_dataset=dataset(n=2))
    if advantage == "mrpo":
        install_teacher(tr, RECORDS, teacher_text, every=2)
    before = params(tr.model)
    tr.train()
    assert_trained(tr, before)
    assert any("eval_loss" in h or "eval_reward" in h for h in tr.state.log_history)


@pytest.mark.slow
@pytest.mark.parametrize("advantage", ["grpo", "mrpo"])
def test_peft_lora(tmp_path, models, advantage):
    pytest.importorskip("peft")
    from peft import LoraConfig

    from medrl.train.teacher import install_teacher

    rewards = mrpo_rewards() if advantage == "mrpo" else [length_reward]
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    tr = trainer(tmp_path, models, rewards, algorithm=MRPO if advantage == "mrpo" else None,
                 args=config(tmp_path), peft_config=lora)
    if advantage == "mrpo":
        install_teacher(tr, RECORDS, teacher_text, every=2)
    before = params(tr.model)
    assert before and all("lora" in n for n in before)
    tr.train()
    assert_trained(tr, before)


def test_rewards_run_with_zero3_init_off():
    """Under DeepSpeed ZeRO-3, models a reward loads lazily must not be partitioned (no engine
    wraps them): the trainer calls the rewards with transformers' ZeRO-3 hook off, restored after."""
    from transformers.integrations import deepspeed as hf_ds

    from medrl.train.trainer import _zero3_init_off

    class Zero3Config:
        def is_zero3(self):
            return True

    cfg = Zero3Config()
    hf_ds.set_hf_deepspeed_config(cfg)
    try:
        assert hf_ds.is_deepspeed_zero3_enabled()
        with _zero3_init_off():
            assert not hf_ds.is_deepspeed_zero3_enabled()
        assert hf_ds.is_deepspeed_zero3_enabled()
    finally:
        hf_ds.unset_hf_deepspeed_config()
    with _zero3_init_off():  # no ZeRO-3: nothing to do
        assert not hf_ds.is_deepspeed_zero3_enabled()
