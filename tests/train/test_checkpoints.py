"""A checkpoint is intact only when all of it is: every file a resume reads, cut short or holding
the wrong types, is named; the checkpoint is moved aside and the newest intact one before it is
used. A ledger that never recorded the logs never cuts them."""

from __future__ import annotations

import json

import pytest
import torch

from medrl.train.checkpoints import (LEDGER_FILE, SAVING_MARK, checkpoint_files, checkpoint_problem,
                                     intact_checkpoint, model_folder_problem)


def _checkpoint(folder, step: int, *, ledger: bool = True):
    """A checkpoint as MedGRPOTrainer commits it: weights, optimizer, scheduler, RNG state,
    trainer state, config and the ledger with every file's size (real torch and safetensors files)."""
    from safetensors.torch import save_file

    ck = folder / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    save_file({"w": torch.arange(64, dtype=torch.float32)}, str(ck / "model.safetensors"))
    p = torch.nn.Parameter(torch.zeros(16))
    opt = torch.optim.AdamW([p])
    p.grad = torch.ones(16)
    opt.step()
    torch.save(opt.state_dict(), ck / "optimizer.pt")
    torch.save(torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0).state_dict(), ck / "scheduler.pt")
    torch.save({"python": [1, 2], "numpy": [3], "cpu": torch.get_rng_state()}, ck / "rng_state.pth")
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    (ck / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    if ledger:
        (ck / LEDGER_FILE).write_text(json.dumps({"step": step, "logs": {"metrics.jsonl": 10 * step},
                                                  "files": checkpoint_files(ck)}))
    return ck


def _cut(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("name, why", [
    ("optimizer.pt", "optimizer.pt is not a complete torch archive"),
    ("scheduler.pt", "scheduler.pt is not a complete torch archive"),
    ("rng_state.pth", "rng_state.pth is not a complete torch archive"),
    ("config.json", "config.json is damaged"),
    (LEDGER_FILE, f"{LEDGER_FILE} is damaged"),
    ("trainer_state.json", "trainer_state.json is damaged"),
    ("model.safetensors", "model.safetensors is cut short"),
])
def test_every_file_a_resume_reads_is_checked(tmp_path, capsys, name, why):
    _checkpoint(tmp_path, 2)
    _cut(_checkpoint(tmp_path, 3) / name)
    assert why in checkpoint_problem(tmp_path / "checkpoint-3")
    assert intact_checkpoint(tmp_path).endswith("checkpoint-2")
    assert f"checkpoint-3 is damaged ({why}" in capsys.readouterr().out
    assert (tmp_path / "damaged-checkpoint-3").is_dir()


@pytest.mark.parametrize("ledger, why", [
    ({}, "names no step"),
    ([], "is damaged (a JSON list"),
    ({"step": 3, "logs": {"metrics.jsonl": "12"}}, "'logs' must map names to byte counts"),
    ({"step": 3, "logs": [1, 2]}, "'logs' must map names to byte counts"),
    ({"step": 4, "logs": {}}, "is for step 4, the checkpoint for step 3"),
    ({"step": 3, "judge_cost": [1]}, "'judge_cost' must be an object"),
])
def test_a_ledger_with_wrong_types_is_damage(tmp_path, ledger, why):
    ck = _checkpoint(tmp_path, 3)
    (ck / LEDGER_FILE).write_text(json.dumps(ledger))
    assert why in checkpoint_problem(ck)


def test_files_the_commit_recorded_must_all_be_there_at_their_size(tmp_path):
    ck = _checkpoint(tmp_path, 3)
    (ck / "tokenizer.json").write_text("{}")
    (ck / LEDGER_FILE).write_text(json.dumps({"step": 3, "logs": {}, "files": checkpoint_files(ck)}))
    assert checkpoint_problem(ck) is None
    (ck / "tokenizer.json").write_text("{} ")
    assert checkpoint_problem(ck) == "tokenizer.json is 3 bytes, 2 when the checkpoint was committed"
    (ck / "tokenizer.json").unlink()
    assert checkpoint_problem(ck) == "tokenizer.json is missing (the checkpoint was committed with it)"


def test_a_save_that_did_not_finish_is_damage_whatever_is_in_it(tmp_path):
    ck = _checkpoint(tmp_path, 3)
    (ck / SAVING_MARK).write_text("saving step 3\n")
    assert "its save did not finish" in checkpoint_problem(ck)


def test_an_optimizer_file_holding_something_else_is_damage(tmp_path):
    ck = _checkpoint(tmp_path, 3, ledger=False)
    torch.save([1, 2, 3], ck / "optimizer.pt")
    assert checkpoint_problem(ck) == "optimizer.pt holds a list, not a dict"
    torch.save({"lr": 1}, ck / "optimizer.pt")
    assert "no optimizer state" in checkpoint_problem(ck)


def test_a_cut_final_model_is_named(tmp_path):
    final = tmp_path / "final"
    final.mkdir()
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(256)}, str(final / "model.safetensors"))
    (final / "config.json").write_text("{}")
    assert model_folder_problem(final) is None
    _cut(final / "model.safetensors")
    assert "model.safetensors is cut short" in model_folder_problem(final)


@pytest.mark.parametrize("ledger, said", [({"step": 2}, "records no log lengths"),
                                          ({"step": 2, "judge_cost": {}}, "records no log lengths"),
                                          ({}, "logs are kept as they are")])
def test_a_ledger_without_log_lengths_never_cuts_the_logs(tmp_path, ledger, said, caplog):
    """A ledger that records no log lengths has nothing to cut the logs to: every row stays."""
    from types import SimpleNamespace

    from transformers import TrainerControl

    from medrl.train.callbacks import RunLedgerCallback

    ck = _checkpoint(tmp_path, 2)
    (ck / LEDGER_FILE).write_text(json.dumps(ledger))
    rows = "".join(json.dumps({"step": s}) + "\n" for s in (1, 2, 3))
    (tmp_path / "metrics.jsonl").write_text(rows)
    cb = RunLedgerCallback()
    cb.bind_trainer(SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[]), _monitor=None))
    cb.on_train_begin(SimpleNamespace(output_dir=str(tmp_path)),
                      SimpleNamespace(global_step=2, is_world_process_zero=True), TrainerControl())
    assert (tmp_path / "metrics.jsonl").read_text() == rows
    assert said in caplog.text
