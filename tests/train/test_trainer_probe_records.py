"""Held-out probe records given to the trainer reach the hacking monitor's probe
(``monitor.probe_every``), as ``medrl train --probe-data`` gives them; without them the probe
falls back to the trainer's ``eval_dataset``."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


def constant_reward(completions, **kw):
    return [1.0 for _ in completions]


@pytest.mark.parametrize("given", [True, False])
def test_probe_records_reach_the_monitor_probe(policy, tmp_path, monkeypatch, given):
    from datasets import Dataset
    from trl import GRPOConfig

    import medrl.train.monitor as monitor
    from medrl.data.record import VQARecord
    from medrl.train.trainer import MedGRPOTrainer

    seen = []
    real = monitor.default_probe

    def spy(records=None):
        seen.append(records)
        return real(records)

    monkeypatch.setattr(monitor, "default_probe", spy)
    held_out = [VQARecord(id="h1", images=[], question="Which organ?", answer="liver")]
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, max_steps=1, report_to="none", use_cpu=True, bf16=False)
    data = Dataset.from_list([{"prompt": "Which organ?", "answer": "liver"}] * 2)
    MedGRPOTrainer(model=str(policy), reward_funcs=[constant_reward], args=args, train_dataset=data,
                   monitor={"probe_every": 1}, algorithm={"log_credit_every": 0},
                   **({"probe_records": held_out} if given else {}))
    assert seen == [held_out if given else None]
