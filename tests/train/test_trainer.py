"""MedGRPOTrainer's hook points: the documented order, data through the typed batch, method
state saved in checkpoints and restored on resume. A tiny one-layer Qwen2 text policy, 2
rollouts of one prompt per step."""

from __future__ import annotations

import json

import pytest
import torch

from medrl.methods import HOOK_ORDER, MedBatch, Method, MethodConflict

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from medrl.models.tiny import DEFAULT_TEXTS, _train_tokenizer

    root = tmp_path_factory.mktemp("policy")
    tok = _train_tokenizer(DEFAULT_TEXTS, 400)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                         max_position_embeddings=256, pad_token_id=tok.pad_token_id,
                                         eos_token_id=tok.eos_token_id, tie_word_embeddings=True))
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(root)
    tok.save_pretrained(root)
    return root


class Recorder(Method):
    """Records the hooks it sees; counts steps as its checkpointed state."""

    name = "recorder"

    def __init__(self, config=None):
        super().__init__(config)
        self.calls: list[str] = []
        self.steps = 0

    def setup(self, trainer):
        self.calls.append("setup")

    def before_generation(self, trainer, batch: MedBatch):
        self.calls.append("before_generation")
        batch.columns["row_tag"] = [f"row{i}" for i in range(len(batch.inputs))]

    def before_rewards(self, trainer, batch):
        self.calls.append("before_rewards")
        assert batch.texts and batch.rewards is None

    def after_rewards(self, trainer, batch):
        self.calls.append("after_rewards")
        assert batch.rewards.shape == (len(batch.inputs), 1)

    def log(self, trainer, batch):
        self.calls.append("log")
        self.steps += batch.mode == "train"

    def state_dict(self):
        return {"steps": self.steps}

    def load_state_dict(self, state):
        self.steps = state["steps"]


def tagged_reward(completions, row_tag, **kw):
    """Reads the column a method put in the batch."""
    return [float(t.endswith(("0", "2"))) + len(str(c)) / 100 for t, c in zip(row_tag, completions)]


def make(policy, out, methods, **kw):
    from datasets import Dataset
    from trl import GRPOConfig

    from medrl.train.trainer import MedGRPOTrainer

    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=2, num_generations=2, max_completion_length=8,
                      max_steps=1, learning_rate=1e-2, logging_steps=1, save_strategy="steps", save_steps=1,
                      report_to="none", use_cpu=True, seed=0, bf16=False, dataloader_num_workers=0)
    data = Dataset.from_list([{"prompt": "Which organ?", "answer": "liver"}] * 2)
    return MedGRPOTrainer(model=str(policy), reward_funcs=[tagged_reward], args=args, train_dataset=data,
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

    with pytest.raises(MethodConflict, match="both replace the advantages"):
        make(policy, tmp_path, ["mrpo", Other()])
