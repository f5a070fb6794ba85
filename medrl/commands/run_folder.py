"""What every command that writes a run folder does around its work: one writer per folder
(:func:`medrl.common.runlock.run_lock`: a second process on the same ``--out`` is refused naming the
first one's PID) and ``--allow-outside-data-root`` for the whole run (training workers started
from here inherit it through the environment)."""

from __future__ import annotations

import contextlib
from typing import Callable


def record_count(text: str) -> int:
    """argparse type of ``--limit``: a whole number of records, at least 1 (``--limit -5`` would
    silently drop the last five records as a Python slice)."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1 or str(text).strip() != str(n):
        raise argparse.ArgumentTypeError(f"expected a whole number of records >= 1, got {text!r}")
    return n


def add_data_root_arg(p) -> None:
    """``--allow-outside-data-root``, the same option on every command that reads images."""
    p.add_argument("--allow-outside-data-root", action="store_true",
                   help="accept image paths that resolve outside the dataset's folder / the data folder "
                        "(refused by default: such a file is never read or sent to the judge; e.g. a JSONL "
                        "naming images elsewhere by absolute path; docs/data.md)")


def run_in_folder(args, command: str, work: Callable[[], int]) -> int:
    """``work()`` under the folder lock (unless ``--dry-run`` or no ``--out``) and the data-root
    setting; returns its exit code. When ``work`` fails (an error or a non-zero code), the lock
    files this call created are removed (and the folder, when this call created it and it is
    empty): a failed start leaves the folder as it was."""
    from pathlib import Path

    from medrl.data.images import allow_outside_data_root
    from medrl.common.runlock import HOLDER_NAME, LOCK_NAME, run_lock

    out = Path(args.out) if getattr(args, "out", None) else None
    locking = out is not None and not getattr(args, "dry_run", False)
    existed = out is not None and out.exists()
    lock_existed = out is not None and (out / LOCK_NAME).exists()
    ok = False
    try:
        with contextlib.ExitStack() as stack:
            if locking:
                stack.enter_context(run_lock(args.out, command))
            if getattr(args, "allow_outside_data_root", False):
                stack.enter_context(allow_outside_data_root())
            code = work()
            ok = not (isinstance(code, int) and not isinstance(code, bool) and code != 0)
            return code
    finally:
        if locking and not ok and not lock_existed and out.is_dir():
            for name in (LOCK_NAME, HOLDER_NAME):
                with contextlib.suppress(OSError):
                    (out / name).unlink()
            if not existed and not any(out.iterdir()):
                with contextlib.suppress(OSError):
                    out.rmdir()
