"""Durations come from the monotonic clock: a wall clock set back during a run used to write a
negative ``train_runtime`` into metrics.jsonl."""

from __future__ import annotations

import json
import time

import pytest
from synthetic import synthetic_records

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_runtime_ignores_a_wall_clock_jump_back(monkeypatch):
    from transformers.trainer_utils import speed_metrics

    from medrl.train.clock import MonotonicClock

    class Trainer:  # the two transformers methods the mixin wraps, as transformers computes them
        def add_callback(self, cb):
            self.cb = cb

        def _finalize_training(self, trial, num_train_samples, start_time):
            return speed_metrics("train", start_time, num_samples=num_train_samples, num_steps=2)

        def log(self, logs, start_time=None):
            return {**logs, **(speed_metrics("train", start_time) if start_time is not None else {})}

    class Clocked(MonotonicClock, Trainer):
        pass

    plain, clocked = Trainer(), Clocked()
    start = time.time()  # what transformers takes just before on_train_begin
    clocked.cb.on_train_begin(None, None, None)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600.0)  # the clock is set back an hour
    assert plain._finalize_training(None, 8, start)["train_runtime"] < -3000
    got = clocked._finalize_training(None, 8, start)
    assert 0 <= got["train_runtime"] < 60 and got["train_samples_per_second"] > 0
    assert 0 <= clocked.log({"loss": 1.0}, start)["train_runtime"] < 60


def test_a_real_run_logs_a_positive_runtime_after_the_clock_jumps_back(tmp_path, monkeypatch):
    """Two SFT steps on the tiny model; after the first, time.time() jumps back an hour."""
    from transformers import TrainerCallback

    from medrl.models import build_tiny_vlm
    from medrl.train.sft import _trainer_class, train_sft

    from medrl.train.trainer import MedGRPOTrainer
    from medrl.train.clock import MonotonicClock

    real = time.time

    class JumpBack(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            monkeypatch.setattr(time, "time", lambda: real() - 3600.0)

    tiny = build_tiny_vlm(tmp_path / "tiny")
    (tmp_path / "imgs").mkdir()
    records = synthetic_records(tmp_path / "imgs", ["Is there a nodule?", "Which organ?"], ["yes", "liver"])
    out = tmp_path / "run"
    train_sft(tiny, records, out, options={"max_steps": 2, "per_device_train_batch_size": 2, "report_to": [],
                                           "save_strategy": "no", "lora": None}, callbacks=[JumpBack()])
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    runtimes = [r["train_runtime"] for r in rows if "train_runtime" in r]
    assert runtimes and all(0 <= r < 600 for r in runtimes), runtimes
    assert issubclass(MedGRPOTrainer, MonotonicClock) and issubclass(_trainer_class(object), MonotonicClock)
