"""A checkpoint save is one commit: a crash at any moment of it (weights, optimizer, trainer
state, ledger, rotation of old checkpoints), followed by the same command again, ends with the
same weights, log rows, judge cost and budget as a run that was never interrupted.

The runs ask a real loopback judge (``medrl serve-judge``'s reference backend over HTTP) one
question per rollout, so judge spend is real: the steps replayed after a crash hit the judge
cache, and what the crashed attempt paid for them still counts. One crash runs in the default
suite (in-process, an exception in place of the kill); the full matrix kills real training
processes with SIGKILL at each phase (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crash_train import PHASES, Crashed, install_crash, register_reward

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

#: log fields that measure time, or say whether a request went out or came from the cache (a
#: replayed step asks the cache for what the crashed attempt sent): not training
NOT_TRAINING = ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second",
                "judge/calls", "judge/cache_hits")


@pytest.fixture(scope="module")
def judge_url():
    from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread

    with serve_in_thread(create_app(ReferenceBackend(use_embeddings=False))) as url:
        yield url


def _args(out: Path, data_dir: Path, url: str, steps: int = 4) -> list[str]:
    # 4 records x 1 prompt per step: one epoch (see test_run_ledger.py); the judge cache is per
    # run folder, so the reference run pays for every request itself
    return ["train", "--recipe", "grpo", "--model", "tiny", "--data", "vqa_rad", "--data-dir", str(data_dir),
            "--profile", "cpu", "--limit", "4", "--max-steps", str(steps), "--reward", "judged_consistency",
            "--judge", "openai:medrl-reference", "--judge-base-url", url,
            "--judge-cache", str(out.parent / f"{out.name}.judge.sqlite"), "--judge-budget", "1M tokens",
            "--out", str(out)]


def _rows(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: v for k, v in r.items() if k not in NOT_TRAINING and not k.startswith("monitor/seconds")}
            for r in rows]


def assert_same_run(a: Path, b: Path) -> None:
    """Weights, every log row, judge cost per step and in total, and the monitor: equal."""
    import torch
    from safetensors.torch import load_file

    wa, wb = load_file(str(a / "final" / "model.safetensors")), load_file(str(b / "final" / "model.safetensors"))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    ra, rb = _rows(a / "metrics.jsonl"), _rows(b / "metrics.jsonl")
    assert [r["step"] for r in ra] == [r["step"] for r in rb]
    for x, y in zip(ra, rb):
        assert x.keys() == y.keys(), sorted(set(x) ^ set(y))
        differ = {k: (x[k], y[k]) for k in x if x[k] != pytest.approx(y[k], rel=1e-5, abs=1e-6)}
        assert not differ, (x["step"], differ)
    assert [r.get("step") for r in _rows(a / "credit.jsonl")] == [r.get("step") for r in _rows(b / "credit.jsonl")]
    ca, cb = (json.loads((p / "judge_cost.json").read_text()) for p in (a, b))
    assert ca["run"]["tokens"] > 0  # the judge was paid: the comparison says something
    for key in ("requests", "input_tokens", "output_tokens", "tokens", "saved_tokens", "failures"):
        assert ca["run"][key] == cb["run"][key], (key, ca["run"], cb["run"])
        assert [s[key] for s in ca["steps"]] == [s[key] for s in cb["steps"]], key
    assert ca["budget"] == cb["budget"] and ca["budget_stop_step"] == cb["budget_stop_step"]
    ma, mb = (json.loads((p / "monitor_summary.json").read_text()) for p in (a, b))
    assert ma["steps_observed"] == mb["steps_observed"]


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, data_dir, judge_url):
    from medrl.cli import main

    register_reward()
    out = tmp_path_factory.mktemp("commit") / "uninterrupted"
    assert main(_args(out, data_dir, judge_url)) == 0
    return out


def test_crash_while_writing_the_ledger_resumes_to_the_uninterrupted_run(reference_run, data_dir, judge_url,
                                                                          tmp_path, monkeypatch, capsys):
    """Step 3's save dies with half a ledger written: checkpoint-3 has its weights, optimizer and
    trainer state, but no commit; the rerun names it, resumes from checkpoint-2 (kept: rotation
    waits for the commit) and replays step 3 from the judge cache, counting what was paid."""
    from medrl.cli import main

    out = tmp_path / "run"
    install_crash("ledger", 3, kill=False, patch=monkeypatch.setattr)
    with pytest.raises(Crashed):
        main(_args(out, data_dir, judge_url))
    monkeypatch.undo()
    ck3 = out / "checkpoint-3"
    assert (ck3 / "trainer_state.json").is_file() and (ck3 / "optimizer.pt").is_file()
    assert not (ck3 / "medrl_ledger.json").exists() and (out / "checkpoint-2" / "medrl_ledger.json").is_file()
    capsys.readouterr()
    assert main(_args(out, data_dir, judge_url)) == 0
    printed = capsys.readouterr().out
    assert "checkpoint-3 is damaged (its save did not finish" in printed and "resuming from checkpoint-2" in printed
    cost = json.loads((out / "judge_cost.json").read_text())
    assert cost["run"]["replayed"] > 0  # step 3's requests came from the cache and still count as spent
    assert cost["paid_before_crash_not_replayed"] == {"requests": 0, "tokens": 0}  # every payment claimed
    assert_same_run(reference_run, out)


# ------------------------------------------------------------------ the full matrix: real kills


def _env() -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def _run(args: list[str], crash: str | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(REPO / "tests" / "scenarios" / "crash_train.py")]
    cmd += (["--crash", crash] if crash else []) + ["--", *args]
    return subprocess.run(cmd, env=_env(), cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def reference_process(tmp_path_factory, data_dir, judge_url):
    out = tmp_path_factory.mktemp("commit-kill") / "uninterrupted"
    done = _run(_args(out, data_dir, judge_url))
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_kill_at_each_phase_of_a_save_resumes_to_the_uninterrupted_run(phase, reference_process, data_dir,
                                                                       judge_url, tmp_path):
    out = tmp_path / "run"
    killed = _run(_args(out, data_dir, judge_url), crash=f"{phase}@3")
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert not (out / "final").exists()
    done = _run(_args(out, data_dir, judge_url))
    assert done.returncode == 0, done.stderr[-3000:]
    if phase == "rotation":  # the save of step 3 was committed before the old checkpoint went
        assert "resuming from checkpoint-3" in done.stdout
    else:
        assert "checkpoint-3 is damaged" in done.stdout and "resuming from checkpoint-2" in done.stdout
    assert_same_run(reference_process, out)
