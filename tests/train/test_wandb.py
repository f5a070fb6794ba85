"""Weights & Biases through `report_to: [wandb]`, tested in offline mode (WANDB_MODE=offline: the
run is written to disk, nothing is sent). Skipped where wandb is not installed
(`pip install 'medrl[wandb]'`); without it the preflight names the package (test_settings_preflight)."""

from __future__ import annotations

import json

import pytest
from synthetic import synthetic_records

wandb = pytest.importorskip("wandb")
pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


def test_an_sft_run_logs_to_wandb_offline_under_its_folder_name(tmp_path, monkeypatch):
    from medrl.models import build_tiny_vlm
    from medrl.train.sft import train_sft

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_PROJECT", "medrl-test")
    (tmp_path / "wandb_dir").mkdir()
    names = []
    real_init = wandb.init

    def init(*args, **kwargs):  # the real init (offline), with the name the trainer asks for recorded
        names.append(kwargs.get("name"))
        return real_init(*args, **kwargs)

    monkeypatch.setattr(wandb, "init", init)
    tiny = build_tiny_vlm(tmp_path / "tiny")
    (tmp_path / "imgs").mkdir()
    records = synthetic_records(tmp_path / "imgs", ["Is there a nodule?", "Which organ?"], ["yes", "liver"])
    out = tmp_path / "runs" / "warmup_try"
    train_sft(tiny, records, out, options={"max_steps": 1, "per_device_train_batch_size": 2, "report_to": ["wandb"],
                                           "save_strategy": "no", "lora": None})
    if wandb.run is not None:
        wandb.finish()
    assert names == ["warmup_try"]  # the run folder's name is the W&B run name
    runs = list((tmp_path / "wandb_dir" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("run-*.wandb"))
    assert any("loss" in json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines())


def test_the_preflight_accepts_wandb_when_it_is_installed():
    from medrl.train.backends import backend_problems
    from medrl.train.recipes import load_recipe

    assert backend_problems(load_recipe("grpo", overrides=["grpo.report_to=[wandb]"])) == []
