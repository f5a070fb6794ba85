"""Disk and permission faults are one line naming the path and an exit code from the table, and
the run resumes cleanly once the fault is gone.

The faults are real: a read-only file system and a disk that fills up during a checkpoint save
are tmpfs mounts in a private mount namespace (``unshare -m``; tests run as root here, where
``chmod`` does not stop writes, and a mount namespace keeps the mounts away from everyone else).
Where ``unshare``/``mount`` are not allowed, those tests skip with the reason. A half-written
``final/model.safetensors`` needs no privilege: it is a real file cut in half."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]


def _train_args(out: Path, data_dir: Path, steps: int = 4) -> list[str]:
    return ["train", "--recipe", "grpo", "--model", "tiny", "--data", "vqa_rad", "--data-dir", str(data_dir),
            "--profile", "cpu", "--limit", "4", "--max-steps", str(steps), "--out", str(out)]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, data_dir):
    from medrl.cli import main

    out = tmp_path_factory.mktemp("storage") / "uninterrupted"
    assert main(_train_args(out, data_dir)) == 0
    return out


def _same_weights(a: Path, b: Path) -> bool:
    import torch
    from safetensors.torch import load_file

    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def _steps(path: Path) -> list:
    return [json.loads(x).get("step") for x in path.read_text().splitlines() if x.strip()]


def _one_line(err: str, prefix: str) -> str:
    """The line of ``err`` starting with ``prefix`` (after a progress bar's carriage return)."""
    lines = [x[x.index(prefix):] for x in err.replace("\r", "\n").splitlines() if prefix in x]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


# ------------------------------------------------------------------ a cut final model (no privilege)


def test_a_half_written_final_model_is_one_line_under_eval_and_rewritten_by_train(finished_run, data_dir, tmp_path,
                                                                                  capsys):
    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    weights = run / "final" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    code = main(["eval", "--model", str(run), "--data", "vqa_rad", "--data-dir", str(data_dir), "--limit", "2",
                 "--out", str(tmp_path / "eval")])
    assert code == Exit.MODEL == 5
    line = _one_line(capsys.readouterr().err, "medrl eval:")
    assert f"{run / 'final'}" in line and "model.safetensors is cut short" in line
    # the same training command again: the damaged final/ is moved aside and written again
    assert main(_train_args(run, data_dir)) == 0
    out = capsys.readouterr().out
    assert "final is damaged (model.safetensors is cut short" in out and "moved it aside to damaged-final" in out
    assert _same_weights(finished_run / "final", run / "final")


# ------------------------------------------------------------------ real mounts in a private namespace


def _namespace_ok() -> str | None:
    """None when this process may make private tmpfs mounts, else why not."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    probe = Path("/tmp") / f"medrl-mount-probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    try:
        done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe} && "
                               f"umount {probe}"], capture_output=True, text=True, timeout=30)
    finally:
        probe.rmdir()
    return None if done.returncode == 0 else f"no private mounts here ({done.stderr.strip()[:120]})"


needs_mounts = pytest.mark.skipif(_namespace_ok() is not None, reason=str(_namespace_ok()))


def _in_namespace(tmp_path: Path, body: str) -> dict:
    """Run ``body`` (Python, with ``sh(cmd)``, ``main`` = medrl's CLI and ``report(dict)``) in a
    private mount namespace; returns the reported dict, with everything printed on ``stderr``."""
    script = tmp_path / "driver.py"
    script.write_text("import json, subprocess, sys\n"
                      "def sh(c):\n    subprocess.run(c, shell=True, check=True)\n"
                      "_report_to, sys.stdout = sys.stdout, sys.stderr  # what medrl prints, in order, on stderr\n"
                      "def report(d):\n    print(json.dumps(d), file=_report_to)\n"
                      "from medrl.cli import main\n" + body)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO))
    done = subprocess.run(["unshare", "-m", sys.executable, str(script)], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


@needs_mounts
def test_read_only_output_folders_are_one_line_with_exit_10(finished_run, data_dir, tmp_path):
    """train into an existing folder, into a new subfolder, eval, and the same train command on a
    finished run - all on a file system mounted read-only."""
    ro = tmp_path / "ro"
    ro.mkdir()
    train = _train_args(Path("OUT"), data_dir)
    body = f"""
sh("mount -t tmpfs -o size=64m tmpfs {ro} && mkdir {ro}/existing && cp -a {finished_run} {ro}/finished")
sh("mount -o remount,ro {ro}")
train = {train!r}
codes = {{}}
for name, out in (("train", "{ro}/existing"), ("new", "{ro}/new/sub"), ("finished", "{ro}/finished")):
    print("=== " + name, file=sys.stderr, flush=True)
    codes[name] = main([*train[:-1], out])
print("=== eval", file=sys.stderr, flush=True)
codes["eval"] = main(["eval", "--model", "tiny", "--data", "vqa_rad", "--data-dir", "{data_dir}", "--limit", "2",
                      "--out", "{ro}/eval"])
report(codes)
"""
    got = _in_namespace(tmp_path, body)
    assert {k: got[k] for k in ("train", "new", "finished", "eval")} == dict.fromkeys(
        ("train", "new", "finished", "eval"), 10)
    parts = got["stderr"].split("=== ")[1:]
    said = {p.split("\n", 1)[0]: p for p in parts}
    for name, path in (("train", f"{ro}/existing"), ("new", f"{ro}/new"), ("finished", f"{ro}/finished"),
                       ("eval", f"{ro}/eval")):
        line = _one_line(said[name], "medrl ")
        assert f"cannot write {path}" in line and "Read-only file system" in line, line


def _page(n: int) -> int:
    return -(-n // 4096) * 4096


@pytest.mark.slow
@needs_mounts
@pytest.mark.parametrize("phase", ["weights", "optimizer"])
def test_a_disk_that_fills_during_a_save_is_one_line_and_the_run_resumes_once_there_is_room(phase, finished_run,
                                                                                            data_dir, tmp_path):
    """The run folder's disk is sized to hold checkpoint-1 and fill up while checkpoint-2's
    weights (safetensors) or optimizer state (torch) is written: exit 10 naming checkpoint-2. The
    disk is then made larger and the same command resumes from checkpoint-1 to the result of a
    run that never ran out of space."""
    ck = next(finished_run.glob("checkpoint-*"))  # every checkpoint holds the same files
    files = {p.name: _page(p.stat().st_size) for p in ck.iterdir()}
    base = sum(files.values()) + 128 * 1024  # checkpoint-1, the logs, config, TensorBoard events
    before_optimizer = sum(v for k, v in files.items() if k not in (
        "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json", "medrl_ledger.json"))
    size = base + (files["model.safetensors"] // 2 if phase == "weights"
                   else before_optimizer + files["optimizer.pt"] // 2)
    disk, copy = tmp_path / "disk", tmp_path / "copy"
    disk.mkdir()
    args = _train_args(disk / "run", data_dir)
    body = f"""
sh("mount -t tmpfs -o size={size} tmpfs {disk}")
codes = {{"full": main({args!r})}}
print("=== freed", file=sys.stderr, flush=True)
sh("mount -o remount,size=256m {disk}")
codes["freed"] = main({args!r})
sh("cp -a {disk}/run {copy}")
report(codes)
"""
    got = _in_namespace(tmp_path, body)
    full, freed = got["stderr"].split("=== freed")
    assert got["full"] == 10, full[-3000:]
    line = _one_line(full, "medrl train: cannot write")
    assert f"{disk}/run/checkpoint-2: No space left on device" in line
    assert got["freed"] == 0
    assert "checkpoint-2 is damaged" in freed and "resuming from checkpoint-1" in freed
    from medrl.train.checkpoints import _safetensors_problem

    damaged = copy / "damaged-checkpoint-2"  # the disk filled where the test meant it to
    weights = damaged / "model.safetensors"
    assert (not weights.is_file() or _safetensors_problem(weights)) if phase == "weights" else \
        (_safetensors_problem(weights) is None and (damaged / "optimizer.pt").is_file()
         and not (damaged / "trainer_state.json").exists())
    assert _same_weights(finished_run / "final", copy / "final")
    assert _steps(finished_run / "metrics.jsonl") == _steps(copy / "metrics.jsonl")
