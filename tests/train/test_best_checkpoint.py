"""BestCheckpointCallback (medrl.train.best_checkpoint; MediX-R1 Table 4 "before reward hacking"):
decisions on a fake trainer state, then a tiny transformers Trainer whose scripted held-out score
peaks mid-run: the peak checkpoint survives save_total_limit rotation and is copied to best/."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from transformers import TrainerControl, TrainerState

from medrl.train.best_checkpoint import BEST_FILE, BestCheckpointCallback, attach_best_checkpoint

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]


def _save(cb, args, state, step, files=("model.safetensors", "optimizer.pt")):
    state.global_step = step
    ck = args.output_dir / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    for f in files:
        (ck / f).write_text(f"{f}@{step}")
    cb.on_save(args, state, TrainerControl())


def test_fake_state_keeps_the_best_fresh_score(tmp_path):
    args = SimpleNamespace(output_dir=tmp_path)
    state = TrainerState()
    cb = BestCheckpointCallback("monitor/probe_accuracy")
    for step, logged in [(1, 0.5), (2, 0.75), (3, None), (4, 0.25), (5, 0.75)]:
        state.global_step = step
        cb.on_log(args, state, TrainerControl(), logs={"reward": 1.0, **(
            {"monitor/probe_accuracy": logged} if logged is not None else {})})
        _save(cb, args, state, step)
    # step 3 had no fresh score (not a candidate); the tie at step 5 keeps step 2
    assert [c["step"] for c in cb.candidates] == [1, 2, 4, 5]
    assert cb.best["step"] == 2 and state.best_metric == 0.75
    assert state.best_model_checkpoint == str(tmp_path / "checkpoint-2")
    info = json.loads((tmp_path / BEST_FILE).read_text())
    assert info["best"]["score"] == 0.75 and len(info["candidates"]) == 4
    best = tmp_path / "best"
    assert (best / "model.safetensors").read_text() == "model.safetensors@2"
    assert not (best / "optimizer.pt").exists()  # training state is not copied
    low = BestCheckpointCallback("eval_loss", greater_is_better=False)
    low.on_log(args, state, TrainerControl(), logs={"eval_loss": 2.0})
    assert low.better(1.0) and (low.best is None)


def test_attach_reads_the_trl_fields():
    class T:
        def __init__(self, **kw):
            self.args, self.cbs = SimpleNamespace(**kw), []

        def add_callback(self, cb):
            self.cbs.append(cb)

    assert attach_best_checkpoint(T(metric_for_best_model=None)) is None
    t = T(metric_for_best_model="monitor/probe_accuracy", greater_is_better=None)
    cb = attach_best_checkpoint(t)
    assert t.cbs == [cb] and cb.greater_is_better
    assert not attach_best_checkpoint(T(metric_for_best_model="train_loss", greater_is_better=None)).greater_is_better
    t = T(metric_for_best_model="monitor/probe_accuracy", greater_is_better=None)
    t._monitor = SimpleNamespace(config=SimpleNamespace(probe_every=0))
    with pytest.raises(ValueError, match="probe_every"):
        attach_best_checkpoint(t)


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(2, 1)

    def forward(self, x, y):
        return {"loss": ((self.w(x).squeeze(-1) - y) ** 2).mean()}


def test_tiny_trainer_rotation_keeps_the_peak(tmp_path, one_torch_thread):
    from transformers import Trainer, TrainingArguments

    torch.manual_seed(0)
    data = [{"x": torch.randn(2), "y": torch.tensor(1.0)} for _ in range(6)]
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=6, per_device_train_batch_size=1, save_steps=1,
                             save_total_limit=2, logging_steps=1, report_to="none", use_cpu=True,
                             metric_for_best_model="probe", greater_is_better=True, save_only_model=False)
    tr = Trainer(model=Tiny(), args=args, train_dataset=data)
    scores = {1: 0.2, 2: 0.6, 3: 0.9, 4: 0.5, 5: 0.4, 6: 0.3}  # held-out score peaks at step 3
    cb = BestCheckpointCallback("probe", probe=lambda t: scores[t.state.global_step], trainer=tr)
    tr.add_callback(cb)
    tr.train()
    assert cb.best["step"] == 3
    kept = sorted(p.name for p in tmp_path.glob("checkpoint-*"))
    assert kept == ["checkpoint-3", "checkpoint-6"]  # the best survives the rotation beside the last
    assert (tmp_path / "best" / "model.safetensors").is_file()
    assert not list((tmp_path / "best").glob("optimizer*"))
    assert any(h.get("probe") == 0.9 for h in tr.state.log_history)
