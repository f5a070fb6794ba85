"""MedGRPOTrainer's hook points: the documented order, data through the typed batch, method
state saved in checkpoints and restored on resume. A tiny one-layer Qwen2 text policy, 2
rollouts of one prompt per step."""

from __future__ import annotations

import json

import pytest
import torch

from medrl.methods import HOOK_ORDER, MedBatch, Method, MethodConflict, StepContext

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


class Recorder(Method):
    """Records the hooks it sees; counts steps as its checkpointed state."""

    name = "recorder"

    def __init__(self, config=None):
        super().__init__(config)
        self.calls: list[str] = []
        self.steps = 0

    def setup(self, ctx):
        assert isinstance(ctx, StepContext) and ctx.rows == range(0)  # what a hook sees: the run, not the trainer
        self.calls.append("setup")

    def before_generation(self, ctx, batch: MedBatch):
        assert ctx.num_generations == 2 and ctx.whole_groups and len(ctx.rows) == len(batch.inputs)
        self.calls.append("before_generation")
        batch.columns["row_tag"] = [f"row{i}" for i in range(len(batch.inputs))]

    def before_rewards(self, ctx, batch):
        self.calls.append("before_rewards")
        assert batch.texts and batch.rewards is None

    def after_rewards(self, ctx, batch):
        self.calls.append("after_rewards")
        assert batch.rewards.shape == (len(batch.inputs), 1)

    def log(self, ctx, batch):
        self.calls.append("log")
        self.steps += batch.mode == "train"

    def state_dict(self):
        return {"steps": self.steps}

    def load_state_dict(self, state):
        self.steps = state["steps"]


def tagged_reward(completions, row_tag, **kw):
    """Reads the column a method put in the batch."""
    return [float(t.endswith(("0", "2"))) + len(str(c)) / 100 for t, c in zip(row_tag, completions)]


def make(policy, out, methods, reward_funcs=(tagged_reward,), max_steps=1, **kw):
    from datasets import Dataset
    from trl import GRPOConfig

    from medrl.train.trainer import MedGRPOTrainer

    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=2, num_generations=2, max_completion_length=8,
                      max_steps=max_steps, learning_rate=1e-2, logging_steps=1, save_strategy="steps", save_steps=1,
                      report_to="none", use_cpu=True, seed=0, bf16=False, dataloader_num_workers=0)
    data = Dataset.from_list([{"prompt": "Which organ?", "answer": "liver"}] * 2 * max_steps)
    return MedGRPOTrainer(model=str(policy), reward_funcs=list(reward_funcs), args=args, train_dataset=data,
                          methods=methods, algorithm={"log_credit_every": 0}, **kw)


def test_hooks_run_in_the_documented_order_and_state_is_checkpointed(policy, tmp_path):
    rec = Recorder()
    tr = make(policy, tmp_path / "run", [rec])
    assert tr.methods == [rec]
    tr.train()
    order = [h for h in HOOK_ORDER if h in rec.calls]
    assert rec.calls[:5] == order == ["setup", "before_generation", "before_rewards", "after_rewards", "log"]
    saved = json.loads((tmp_path / "run" / "checkpoint-1" / "method_state.json").read_text())
    assert saved == {"recorder": {"steps": 1}}

    again = Recorder()
    tr2 = make(policy, tmp_path / "run2", [again])
    assert tr2._load_method_state(str(tmp_path / "run" / "checkpoint-1")) == ["recorder"]  # as on resume
    assert again.steps == 1


def test_two_advantage_methods_are_refused_at_start(policy, tmp_path):
    class Other(Method):
        name = "other"
        advantage = "other"

    with pytest.raises(MethodConflict, match="both provide the advantage estimator"):
        make(policy, tmp_path, ["mrpo", Other()])


@pytest.fixture
def cheap_armed(monkeypatch):
    """ARMed's adaptive semantic reward (ARMed Eq. 5-13) on cheap raw scores: the completion's
    length stands in for BERTScore and cosine, so its thresholds move every step offline."""
    import medrl.rewards.armed as armed

    monkeypatch.setattr(armed, "bertscore_f1", lambda p, r, *a, **k: [min(1.0, len(x) / 40) for x in p])
    monkeypatch.setattr(armed, "embedding_cosine", lambda p, r, *a, **k: [min(1.0, len(x) / 30) for x in p])

    class Adaptive(armed.AdaptiveSemanticReward):
        def __call__(self, prompts, completions, answer, **kw):  # no answer guard: raw text scored
            return self.scores([str(c) for c in completions], list(answer))

    return Adaptive


def test_armed_thresholds_travel_through_the_method_state(policy, tmp_path, cheap_armed):
    """ARMed's thresholds go to method_state.json (the method's state_dict), not reward_state.json;
    resuming from step 1 restores exactly the saved thresholds before the next step."""
    from transformers import TrainerCallback

    from medrl.train.callbacks import REWARD_STATE_FILE, StopAfterStepCallback

    out = tmp_path / "run"
    first = cheap_armed()
    tr = make(policy, out, ["armed"], reward_funcs=[first], max_steps=2, callbacks=[StopAfterStepCallback(1)])
    assert tr.methods[0].state_rewards() == [first]
    tr.train()
    ckpt = out / "checkpoint-1"
    saved = json.loads((ckpt / "method_state.json").read_text())["armed"]["rewards"]["armed_adaptive_semantic"]
    assert saved == first.state_dict() and saved["bertscore"]["steps"] == 1 and saved["bertscore"]["threshold"]
    assert not (ckpt / REWARD_STATE_FILE).exists()  # one route

    seen = {}

    class Probe(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            seen.setdefault("state", json.loads(json.dumps(fresh.state_dict())))

    fresh = cheap_armed()
    tr2 = make(policy, out, ["armed"], reward_funcs=[fresh], max_steps=2, callbacks=[Probe()])
    tr2.train(resume_from_checkpoint=str(ckpt))
    assert seen["state"] == saved  # restored before the first resumed step
    assert tr2.state.global_step == 2 and fresh.state_dict()["bertscore"]["steps"] == 2
    last = json.loads((out / "checkpoint-2" / "method_state.json").read_text())
    assert last == {"armed": {"rewards": {"armed_adaptive_semantic": fresh.state_dict()}}}


def test_armed_reads_thresholds_of_a_checkpoint_from_before_the_method_carried_them(policy, tmp_path, cheap_armed):
    """A checkpoint with ARMed's thresholds only in reward_state.json (as written before) still
    restores them; a method_state.json entry without them is refused."""
    from medrl.train.callbacks import REWARD_STATE_FILE

    old = {"armed_adaptive_semantic": {k: {"threshold": 0.4, "history": [0.4, 0.5], "steps": 3}
                                       for k in ("bertscore", "cosine")}}
    ckpt = tmp_path / "checkpoint-3"
    ckpt.mkdir()
    (ckpt / REWARD_STATE_FILE).write_text(json.dumps(old))
    fn = cheap_armed()
    tr = make(policy, tmp_path / "run", ["armed"], reward_funcs=[fn])
    assert tr._load_method_state(str(ckpt)) == ["armed"]
    assert fn.state_dict() == old["armed_adaptive_semantic"]
    (ckpt / "method_state.json").write_text(json.dumps({"armed": {"rewards": {}}}))
    with pytest.raises(KeyError, match=r"no thresholds for reward\(s\) \['armed_adaptive_semantic'\]"):
        tr._load_method_state(str(ckpt))


def test_resuming_a_checkpoint_at_max_steps_trains_no_further_step(policy, tmp_path):
    """transformers' loop, resumed at max_steps partway through an epoch, ran one more step (and
    wrote checkpoint-2); MedGRPOTrainer starts past the last epoch instead. The checkpoint's
    weights and method state are still loaded (the real resume path, not a direct call)."""
    out = tmp_path / "run"
    tr = make(policy, out, [Recorder()])
    tr.train()
    assert tr.state.global_step == 1 and tr.state.max_steps == 1
    saved = {k: v.detach().clone() for k, v in tr.model.state_dict().items()}

    again = Recorder()
    tr2 = make(policy, out, [again])
    tr2.train(resume_from_checkpoint=str(out / "checkpoint-1"))
    assert tr2.state.global_step == 1
    assert not (out / "checkpoint-2").exists()
    assert again.calls == ["setup"] and again.steps == 1  # no step ran; the state was restored
    for k, v in tr2.model.state_dict().items():
        assert torch.equal(v, saved[k]), k
