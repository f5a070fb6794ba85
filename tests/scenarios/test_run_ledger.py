"""A run folder is a ledger: an interrupted run (SIGTERM, a crash after a step was logged, a
damaged newest checkpoint), rerun with the same command, ends with the same weights and the
same log rows as a run that was never interrupted; other settings are refused."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

#: log fields that measure time, not training
TIMING = ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second")


#: a reward that differs between the rollouts of a group (the untrained tiny policy never writes
#: the answer format, so the recipe's own rewards are constant and no weight would move)
VARIED = """
def distinct_chars(prompts, completions, **kwargs):
    texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]
    return [len(set(t)) / 10.0 for t in texts]
"""


_REWARD: list[Path] = []


def _args(out: Path, data_dir: Path, steps: int = 4, *extra: str) -> list[str]:
    reward = _REWARD[0]
    # 4 records x 1 prompt per step: the whole run is one epoch (TRL's sampler reshuffles per
    # epoch from a fresh generator after a resume, a data-order effect outside the ledger)
    return ["train", "--recipe", "grpo", "--model", "tiny", "--data", "vqa_rad", "--data-dir", str(data_dir),
            "--profile", "cpu", "--limit", "4", "--max-steps", str(steps), "--reward", f"{reward}:distinct_chars",
            "--out", str(out), *extra]


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: v for k, v in r.items() if k not in TIMING and not k.startswith("monitor/seconds")} for r in rows]


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _same_run(a: Path, b: Path) -> None:
    import torch

    wa, wb = _weights(a / "final"), _weights(b / "final")
    assert wa.keys() == wb.keys()
    moved = _weights(a / "checkpoint-1") if (a / "checkpoint-1").is_dir() else None
    if moved is not None:  # training changed the weights, so equality below says something
        assert any(not torch.equal(wa[k], moved[k]) for k in wa)
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k
    ra, rb = _rows(a / "metrics.jsonl"), _rows(b / "metrics.jsonl")
    assert [r["step"] for r in ra] == [r["step"] for r in rb]
    for x, y in zip(ra, rb):
        assert x.keys() == y.keys(), (sorted(set(x) ^ set(y)), x["step"])
        differ = {k: (x[k], y[k]) for k in x if x[k] != pytest.approx(y[k], rel=1e-5, abs=1e-6)}
        assert not differ, (x["step"], differ)
    for name in ("credit.jsonl", "hacking.jsonl"):
        assert len(_rows(a / name)) == len(_rows(b / name)), name
        assert [r.get("step") for r in _rows(a / name)] == [r.get("step") for r in _rows(b / name)], name
    ca, cb = json.loads((a / "judge_cost.json").read_text()), json.loads((b / "judge_cost.json").read_text())
    assert [s["step"] for s in ca["steps"]] == [s["step"] for s in cb["steps"]] == [1, 2, 3, 4]
    ma, mb = json.loads((a / "monitor_summary.json").read_text()), json.loads((b / "monitor_summary.json").read_text())
    assert ma["steps_observed"] == mb["steps_observed"] == 4


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, data_dir):
    from medrl.cli import main

    base = tmp_path_factory.mktemp("ledger")
    (base / "varied_reward.py").write_text(VARIED)
    _REWARD[:] = [base / "varied_reward.py"]
    out = base / "uninterrupted"
    assert main(_args(out, data_dir)) == 0
    return out


def test_sigterm_saves_at_step_boundary_and_rerun_resumes_equal(reference_run, data_dir, tmp_path, monkeypatch,
                                                                capsys):
    import medrl.train.callbacks as cbs
    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    class SignalAtStep2(cbs.InterruptCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 1:  # during step 2, as `kill -TERM` would arrive
                os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(cbs, "InterruptCallback", SignalAtStep2)
    out = tmp_path / "run"
    assert main(_args(out, data_dir)) == Exit.TERMINATED == 143
    printed = capsys.readouterr()
    assert "SIGTERM" in printed.err and "final model ->" not in printed.out and not (out / "final").exists()
    assert (out / "checkpoint-2").is_dir() and not (out / "checkpoint-3").exists()
    monkeypatch.undo()
    assert main(_args(out, data_dir)) == 0  # the same command again: resumes
    assert "resuming from checkpoint-2" in capsys.readouterr().out
    _same_run(reference_run, out)


def test_crash_after_logging_with_damaged_newest_checkpoint_resumes_equal(reference_run, data_dir, tmp_path,
                                                                         monkeypatch, capsys):
    """kill -9 in step 4 after step 3 was logged and checkpointed; then checkpoint-3 is damaged
    (half a model.safetensors): the rerun names it, falls back to checkpoint-2, cuts the logs."""
    import medrl.train.callbacks as cbs
    from medrl.cli import main

    class Killed(BaseException):
        pass

    class CrashInStep4(cbs.InterruptCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.global_step == 3:
                self.armed = True

        def on_step_begin(self, args, state, control, **kwargs):
            if getattr(self, "armed", False) and state.global_step == 3:
                # what a kill leaves: step 4's credit rows written, nothing else
                with open(os.path.join(args.output_dir, "credit.jsonl"), "a") as fh:
                    fh.write('{"step": 4, "rollout": 0}\n{"step": 4, "rollo')
                raise Killed

    monkeypatch.setattr(cbs, "InterruptCallback", CrashInStep4)
    out = tmp_path / "run"
    with pytest.raises(Killed):
        main(_args(out, data_dir))
    monkeypatch.undo()
    weights = out / "checkpoint-3" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    (out / "checkpoint-7").mkdir()  # an empty folder left by a save that never started
    capsys.readouterr()
    assert main(_args(out, data_dir)) == 0
    printed = capsys.readouterr().out
    assert "checkpoint-7 is damaged (the folder is empty)" in printed
    assert "checkpoint-3 is damaged (model.safetensors is cut short" in printed
    assert "resuming from checkpoint-2" in printed
    assert (out / "damaged-checkpoint-3").is_dir()
    _same_run(reference_run, out)


def test_same_folder_other_recipe_refused_and_overwrite_starts_afresh(reference_run, tmp_path, data_dir, capsys):
    import shutil

    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    out = tmp_path / "run"
    shutil.copytree(reference_run, out)
    before = (out / "config.yaml").read_text()
    args = _args(out, data_dir)
    args[args.index("grpo")] = "mrpo"
    assert main(args) == Exit.USAGE
    err = capsys.readouterr().err
    assert "recipe.algorithm.advantage: 'grpo' -> 'mrpo'" in err and "--overwrite" in err
    assert (out / "config.yaml").read_text() == before
    # the same settings on a finished run: nothing to do, nothing rewritten
    assert main(_args(out, data_dir)) == 0 and "is finished" in capsys.readouterr().out
    assert main(args[:-2] + ["--out", str(out), "--max-steps", "1", "--overwrite"]) == 0
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [1, 1]


def test_judge_breaker_saves_and_stops_a_mostly_unscorable_run(reference_run, data_dir, tmp_path, monkeypatch,
                                                               capsys):
    """Every step's rollouts unscorable (a dead judge): after K=2 steps the run saves, stops, exits 9
    naming the judge and its last error, and writes no final model; the rerun continues."""
    import logging

    import medrl.train.callbacks as cbs
    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    def dead_judge_step(self, args, state, control, **kwargs):
        logging.getLogger("medrl.judges").warning("judge reference: request unscored after 4 attempt(s): "
                                                  "connection refused")
        self.observe(1.0, self.trainer.judge.name, state.global_step, control)
        return control

    monkeypatch.setattr(cbs.JudgeBreakerCallback, "on_step_end", dead_judge_step)
    out = tmp_path / "run"
    assert main(_args(out, data_dir, 4, "--judge-max-unscored-steps", "2")) == Exit.JUDGE
    printed = capsys.readouterr()
    assert "judge reference" in printed.err and "connection refused" in printed.err
    assert "2 consecutive steps" in printed.err and "final model ->" not in printed.out
    assert (out / "checkpoint-2").is_dir() and not (out / "final").exists()
    monkeypatch.undo()
    assert main(_args(out, data_dir, 4, "--judge-max-unscored-steps", "2")) == 0
    assert "resuming from checkpoint-2" in capsys.readouterr().out
