"""`kill -9` and `kill -TERM` of a real `medrl train` process at step k, then the same command
again: the weights and the logs equal those of a run that was never interrupted (slow: five
training processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

VARIED = """
import time
def distinct_chars(prompts, completions, **kwargs):
    time.sleep(0.3)  # room to kill the process between two steps
    texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]
    return [len(set(t)) / 10.0 for t in texts]
"""


def _cmd(out: Path, data_dir: Path, reward: Path) -> list[str]:
    return [sys.executable, "-m", "medrl", "train", "--recipe", "grpo", "--model", "tiny", "--data", "vqa_rad",
            "--data-dir", str(data_dir), "--profile", "cpu", "--limit", "6", "--max-steps", "6",
            "--reward", f"{reward}:distinct_chars", "--out", str(out)]


def _env() -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def _steps(path: Path) -> list[int]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().split("\n"):
        try:
            out.append(json.loads(line)["step"])
        except (ValueError, KeyError):
            pass
    return out


def _interrupt_at(cmd: list[str], out: Path, step: int, sig: int) -> int:
    proc = subprocess.Popen(cmd, env=_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while step not in _steps(out / "metrics.jsonl"):
        assert proc.poll() is None and time.monotonic() < deadline, "training ended before the step"
        time.sleep(0.05)
    proc.send_signal(sig)
    return proc.wait(timeout=300)


def _rows(path: Path) -> list[dict]:
    timing = ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second")
    return [{k: v for k, v in json.loads(line).items() if k not in timing}
            for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("sig, code", [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGTERM, 143)])
def test_killed_run_resumes_to_the_uninterrupted_result(sig, code, tmp_path, data_dir):
    import torch
    from safetensors.torch import load_file

    reward = tmp_path / "varied.py"
    reward.write_text(VARIED)
    ref, run = tmp_path / "ref", tmp_path / "run"
    subprocess.run(_cmd(ref, data_dir, reward), env=_env(), cwd=REPO, check=True, timeout=600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert _interrupt_at(_cmd(run, data_dir, reward), run, 3, sig) == code
    assert not (run / "final").exists()
    done = subprocess.run(_cmd(run, data_dir, reward), env=_env(), cwd=REPO, timeout=600, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "resuming from checkpoint-" in done.stdout
    a, b = load_file(str(ref / "final" / "model.safetensors")), load_file(str(run / "final" / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    ra, rb = _rows(ref / "metrics.jsonl"), _rows(run / "metrics.jsonl")
    assert [r["step"] for r in ra] == [r["step"] for r in rb] == [1, 2, 3, 4, 5, 6, 6]
    for x, y in zip(ra, rb):
        assert x.keys() == y.keys() and all(x[k] == pytest.approx(y[k], rel=1e-5, abs=1e-6) for k in x)
    for name in ("credit.jsonl",):
        assert _steps(ref / name) == _steps(run / name)
    cost_a, cost_b = (json.loads((p / "judge_cost.json").read_text()) for p in (ref, run))
    assert [s["step"] for s in cost_a["steps"]] == [s["step"] for s in cost_b["steps"]] == [1, 2, 3, 4, 5, 6]
    mon = [json.loads((p / "monitor_summary.json").read_text())["steps_observed"] for p in (ref, run)]
    assert mon == [6, 6]
