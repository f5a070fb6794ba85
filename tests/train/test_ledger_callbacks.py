"""The run ledger's parts on their own: damaged checkpoints found and named, logs cut back to a
checkpoint, the judge budget carried over a resume, the judge circuit breaker, and the exit code
``medrl train`` gives each kind of stop."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from transformers import TrainerControl

from medrl.common.exit_codes import Exit


# ------------------------------------------------------------------ checkpoints

def _checkpoint(folder, step: int, *, optimizer: bool = True):
    from safetensors.torch import save_file

    ck = folder / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    save_file({"w": torch.arange(64, dtype=torch.float32)}, str(ck / "model.safetensors"))
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))])
    if optimizer:
        torch.save(opt.state_dict(), ck / "optimizer.pt")
    torch.save(torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0).state_dict(), ck / "scheduler.pt")
    torch.save({"python": [1], "numpy": [2], "cpu": torch.get_rng_state()}, ck / "rng_state.pth")
    return ck


def test_damaged_checkpoints_are_named_and_skipped(tmp_path, capsys):
    from medrl.train.checkpoints import checkpoint_problem, intact_checkpoint, resolve_resume

    _checkpoint(tmp_path, 2)
    half_weights = _checkpoint(tmp_path, 4)
    w = half_weights / "model.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    half_state = _checkpoint(tmp_path, 5)
    (half_state / "trainer_state.json").write_text('{"global_step": 5, "log_hist')
    (tmp_path / "checkpoint-7").mkdir()
    assert "cut short" in checkpoint_problem(half_weights)
    assert "trainer_state.json is damaged" in checkpoint_problem(half_state)
    assert checkpoint_problem(tmp_path / "checkpoint-7") == "the folder is empty"
    assert intact_checkpoint(tmp_path, move_aside=False).endswith("checkpoint-2")
    assert resolve_resume(True, tmp_path).endswith("checkpoint-2")
    out = capsys.readouterr().out
    for n in (4, 5, 7):
        assert f"checkpoint-{n} is damaged" in out
        assert (tmp_path / f"damaged-checkpoint-{n}").is_dir()
    with pytest.raises(FileNotFoundError, match="damaged"):
        resolve_resume(str(tmp_path / "damaged-checkpoint-4"), tmp_path)


def test_missing_optimizer_state_is_a_warning_naming_what_restarts(tmp_path, capsys):
    from medrl.train.checkpoints import resolve_resume

    _checkpoint(tmp_path, 3, optimizer=False)
    assert resolve_resume(True, tmp_path).endswith("checkpoint-3")
    out = capsys.readouterr().out
    assert "optimizer.pt missing" in out and "moment estimates" in out and "restart from zero" in out


# ------------------------------------------------------------------ logs

def test_logs_cut_back_to_the_checkpoint(tmp_path):
    from medrl.train.callbacks import truncate_logs

    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n{"step": 3}\n{"st')
    (tmp_path / "hacking.jsonl").write_text('{"step": 3}\n')  # first alert after the checkpoint
    (tmp_path / "mine.jsonl").write_text("kept\n")  # not a training log, not in the ledger
    changed = truncate_logs(tmp_path, {"metrics.jsonl": len('{"step": 1}\n{"step": 2}\n')})
    assert changed == ["hacking.jsonl", "metrics.jsonl"]
    assert (tmp_path / "metrics.jsonl").read_text() == '{"step": 1}\n{"step": 2}\n'
    assert not (tmp_path / "hacking.jsonl").exists() and (tmp_path / "mine.jsonl").read_text() == "kept\n"


# ------------------------------------------------------------------ judge cost and budget

class _Judge:
    name = "openai:fake"

    def __init__(self):
        from medrl.judges.base import JudgeStats

        self.stats = JudgeStats()


def _cost_callback(judge, budget):
    from medrl.judges.cost import JudgeCostCallback, parse_budget

    trainer = SimpleNamespace(_metrics={"train": defaultdict(list)}, accelerator=None)
    return JudgeCostCallback(trainer, judge, budget=parse_budget(budget))


def _step(cb, judge, step, tokens):
    judge.stats.calls += 1
    judge.stats.input_tokens += tokens
    control = TrainerControl()
    cb.on_step_end(None, SimpleNamespace(global_step=step, epoch=0), control)
    return control


def test_judge_budget_counts_the_whole_run_across_a_resume():
    judge = _Judge()
    cb = _cost_callback(judge, "4000 tokens")
    cb.on_train_begin(None, None, None)
    for step in (1, 2):
        assert not _step(cb, judge, step, 1560).should_training_stop
    saved = json.loads(json.dumps(cb.state_dict()))  # what checkpoint-2/medrl_ledger.json holds
    assert saved["total"]["input_tokens"] == 3120
    # the resumed process: a new judge client (its counters start at 0), a new callback
    judge2 = _Judge()
    cb2 = _cost_callback(judge2, "4000 tokens")
    cb2.load_state_dict(saved)
    cb2.on_train_begin(None, None, None)
    control = _step(cb2, judge2, 3, 1560)
    assert cb2.summary()["run"]["tokens"] == 4680  # not 1560: the budget counts the whole run
    assert control.should_training_stop and control.should_save and cb2.stopped_at == 3
    assert [s["step"] for s in cb2.summary()["steps"]] == [1, 2, 3]


# ------------------------------------------------------------------ judge circuit breaker

def test_breaker_stops_after_k_steps_of_mostly_failed_requests_naming_judge_and_error():
    from medrl.judges.base import JudgeStats
    from medrl.train.callbacks import JudgeBreakerCallback, RunOutcome

    outcome = RunOutcome()
    cb = JudgeBreakerCallback(outcome, max_share=0.5, steps=3)
    judge = SimpleNamespace(name="openai:gpt-x", stats=JudgeStats())
    cb.bind_trainer(SimpleNamespace(judge=judge, accelerator=None))
    cb.on_train_begin(None, None, None)
    try:
        logging.getLogger("medrl.judges").warning("judge openai:gpt-x: request unscored after 4 attempt(s): "
                                                  "timed out")
        stops = []
        # (requests, failed): 5 of 8 twice, a good step (the count resets), a step without any
        # request (no evidence: the count stays), then 3 bad steps
        for step, (asked, bad) in enumerate([(8, 5), (8, 6), (8, 1), (0, 0), (4, 3), (2, 2), (8, 7)], 1):
            judge.stats.calls += asked
            judge.stats.failures += bad
            control = TrainerControl()
            cb.on_step_end(None, SimpleNamespace(global_step=step), control)
            stops.append(control.should_training_stop)
    finally:
        cb.on_train_end(None, None, None)
    assert stops == [False, False, False, False, False, False, True]
    assert outcome.reason == "judge" and outcome.step == 7
    assert "judge openai:gpt-x" in outcome.message and "3 consecutive steps" in outcome.message
    assert "88% of 8 requests" in outcome.message and "timed out" in outcome.message
    assert cb.state_dict() == {"run": 3}
    with pytest.raises(ValueError):
        JudgeBreakerCallback(max_share=1.5)


# ------------------------------------------------------------------ exit codes of stops

@pytest.mark.parametrize("reason, code", [("judge", Exit.JUDGE), ("budget", Exit.BUDGET), ("monitor", Exit.MONITOR),
                                          ("sigint", Exit.INTERRUPTED), ("sigterm", Exit.TERMINATED)])
def test_each_stop_has_its_exit_code_and_no_final_line(reason, code, tmp_path, monkeypatch, capsys, data_dir):
    import medrl.train.pipeline as pipeline
    from medrl.cli import main
    from medrl.train.callbacks import RunLedgerCallback

    def fake_run_recipe(recipe, model, records, out, *, callbacks=(), **kw):
        ledger = next(c for c in callbacks if isinstance(c, RunLedgerCallback))
        ledger.outcome.started = True
        ledger.outcome.stop(reason, f"stopped by {reason}", 3)
        return out / "final"  # never written

    monkeypatch.setattr(pipeline, "run_recipe", fake_run_recipe)
    out = tmp_path / "run"
    assert main(["train", "--recipe", "grpo", "--profile", "cpu", "--model", "tiny", "--data", "vqa_rad",
                 "--data-dir", str(data_dir), "--out", str(out)]) == code
    printed = capsys.readouterr()
    assert "final model ->" not in printed.out and f"stopped by {reason}" in printed.err
    assert f"(exit {int(code)})" in printed.err


# ------------------------------------------------------------------ signals under several processes

def test_a_signal_on_one_process_stops_every_process_at_the_same_step():
    """Two processes, the signal reached only the other one: this one stops at the same step
    (the flag is gathered over the processes), so no process waits for a stopped one."""
    import signal as _signal

    from medrl.train.callbacks import InterruptCallback, RunOutcome

    class TwoProcesses:
        num_processes, device = 2, "cpu"

        def __init__(self, other):
            self.other = other

        def gather(self, t):
            return torch.cat([t, torch.tensor([self.other])])

    mine = RunOutcome()
    cb = InterruptCallback(mine)
    cb.bind_trainer(SimpleNamespace(accelerator=TwoProcesses(0)))
    control = cb.on_step_end(None, SimpleNamespace(global_step=3), TrainerControl())
    assert not control.should_training_stop and mine.signal is None  # nobody was signalled
    cb.bind_trainer(SimpleNamespace(accelerator=TwoProcesses(int(_signal.SIGTERM))))
    control = cb.on_step_end(None, SimpleNamespace(global_step=4), TrainerControl())
    assert control.should_training_stop and control.should_save
    assert mine.signal == _signal.SIGTERM and mine.reason == "sigterm" and mine.step == 4
