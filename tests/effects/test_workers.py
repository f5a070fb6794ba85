"""One writer per effects folder, and worker processes that end with their parent (real processes:
a second process holding the folder's lock, a parent killed with SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and uses prctl (Linux)")


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def _children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``, from /proc."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@linux_only
def test_a_second_writer_is_refused_and_touches_nothing(tmp_path):
    """Another process holds the folder (as a running `medrl bench effects` does): a second run on
    it exits with code 6 at once, naming the holder's PID, and leaves an unfinished run folder there
    as it was."""
    from medrl.cli import main

    out = tmp_path / "effects"
    unfinished = out / "models" / "s0__grpo@oracle"
    unfinished.mkdir(parents=True)
    (unfinished / "metrics.jsonl").write_text('{"step": 1}\n')
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom medrl.common.runlock import run_lock\n"
                               f"with run_lock({str(out)!r}, 'medrl bench effects'):\n"
                               "    print('held', flush=True)\n    time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        assert main(["bench", "effects", "--quick", "--out", str(out), "--no-progress"]) == 6
        assert time.monotonic() - t0 < 30  # refused at once, not after waiting or training
        assert (unfinished / "metrics.jsonl").read_text() == '{"step": 1}\n'
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".medrl.lock")) == ["models"]
    finally:
        holder.kill()
        holder.wait()


@linux_only
def test_killing_the_parent_ends_its_workers(tmp_path):
    """`medrl bench effects` with a worker process running is killed with SIGKILL (no handler can
    run): the worker ends too (the kernel's parent-death signal), instead of training on alone."""
    out = tmp_path / "effects"
    parent = subprocess.Popen([sys.executable, "-m", "medrl", "bench", "effects", "--quick", "--workers", "1",
                               "--out", str(out), "--no-progress"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=_env())
    worker = None
    try:
        deadline = time.monotonic() + 120
        while worker is None and time.monotonic() < deadline and parent.poll() is None:
            for pid in _children(parent.pid):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"medrl.effects.runner" in cmd:
                    worker = pid
            time.sleep(0.1)
        assert worker is not None, "no worker process started"
        # the worker pins itself to one core right after asking to die with its parent: wait for the pin
        cpus = ""
        while _alive(worker) and time.monotonic() < deadline:
            status = Path(f"/proc/{worker}/status").read_text()
            cpus = next(x for x in status.splitlines() if x.startswith("Cpus_allowed_list")).split(":")[1].strip()
            if cpus.isdigit():
                break
            time.sleep(0.1)
        assert _alive(worker) and cpus.isdigit(), f"the worker is not pinned to one core: {cpus!r}"
        time.sleep(0.5)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 20
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(worker), f"worker {worker} kept running after its parent was killed"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)
