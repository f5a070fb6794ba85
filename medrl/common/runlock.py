"""One writer per run or eval folder.

Two ``medrl eval`` (or ``train``) processes writing one folder would both append every record:
each generates what the other is generating, and the scored rows stop matching the generations
kept. :func:`run_lock` takes an exclusive lock on the folder (``filelock``, an OS-level lock
released by the kernel when the holder dies, so a crash never leaves a stale lock) and writes the
holder's PID, host, command and start time to a sidecar file; a second writer is refused at once
with :class:`RunLockedError` naming that PID, instead of waiting or writing.

    with run_lock("evals/mrpo", "medrl eval"):
        run_eval(...)
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Iterator

LOCK_NAME = ".medrl.lock"
#: Sidecar file with the holder's PID, host, command and start time (read by a refused writer).
HOLDER_NAME = ".medrl.lock.json"


class RunLockedError(RuntimeError):
    """The folder is being written by another process (the message names its PID)."""

    def __init__(self, message: str, holder: dict | None = None):
        super().__init__(message)
        self.holder = holder or {}


def lock_holder(folder: str | os.PathLike) -> dict:
    """What the sidecar file says about the folder's current (or last) writer; {} when none."""
    try:
        data = json.loads((Path(folder) / HOLDER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_main_process() -> bool:
    """False in the non-zero ranks of a distributed launch (``accelerate launch``/``torchrun`` set
    ``RANK``): one launch is one writer, and only its rank 0 takes the folder's lock."""
    for var in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(var, "").strip()
        if value and value != "0":
            return False
    return True


@contextlib.contextmanager
def run_lock(folder: str | os.PathLike, what: str = "medrl") -> Iterator[Path]:
    """Hold the exclusive writer lock of ``folder`` (created when missing) for the block.

    Raises :class:`RunLockedError` immediately when another process (or another lock object in
    this one) holds it: the message names ``folder``, the holder's PID, host, command and start.
    In the non-zero ranks of a distributed launch it does nothing (:func:`is_main_process`).
    """
    from filelock import FileLock, Timeout

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if not is_main_process():
        yield folder
        return
    lock = FileLock(str(folder / LOCK_NAME), thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder = lock_holder(folder)
        pid = holder.get("pid", "unknown")
        since = holder.get("started", "?")
        cmd = holder.get("command") or what
        raise RunLockedError(
            f"{folder} is being written by another process (PID {pid} on {holder.get('host', '?')}, "
            f"running since {since}: {cmd}). Two writers would generate and score every record twice. "
            f"Wait for it to finish (or stop PID {pid}), or use another output folder.", holder) from None
    try:
        info = {"pid": os.getpid(), "host": socket.gethostname(), "what": what,
                "command": " ".join(sys.argv) or what, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        tmp = folder / f"{HOLDER_NAME}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(info), encoding="utf-8")
        os.replace(tmp, folder / HOLDER_NAME)
        yield folder
    finally:
        with contextlib.suppress(OSError):
            (folder / HOLDER_NAME).unlink()
        lock.release()
