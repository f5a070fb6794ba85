"""What every command that writes a run folder does around its work: one writer per folder
(:func:`medrl.runlock.run_lock`: a second process on the same ``--out`` is refused naming the
first one's PID) and ``--allow-outside-data-root`` for the whole run (training workers started
from here inherit it through the environment)."""

from __future__ import annotations

import contextlib
from typing import Callable


def add_data_root_arg(p) -> None:
    """``--allow-outside-data-root``, the same option on every command that reads images."""
    p.add_argument("--allow-outside-data-root", action="store_true",
                   help="accept image paths that resolve outside the dataset's folder / the data folder "
                        "(refused by default: such a file is never read or sent to the judge; e.g. a JSONL "
                        "naming images elsewhere by absolute path; docs/data.md)")


def run_in_folder(args, command: str, work: Callable[[], int]) -> int:
    """``work()`` under the folder lock (unless ``--dry-run`` or no ``--out``) and the data-root
    setting; returns its exit code."""
    from medrl.data.images import allow_outside_data_root
    from medrl.runlock import run_lock

    with contextlib.ExitStack() as stack:
        if getattr(args, "out", None) and not getattr(args, "dry_run", False):
            stack.enter_context(run_lock(args.out, command))
        if getattr(args, "allow_outside_data_root", False):
            stack.enter_context(allow_outside_data_root())
        return work()
