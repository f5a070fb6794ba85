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


# --------------------------------------------------------------------------------------------
# --out: a path the command can write, and not inside another run


#: longest file name (one path component, in bytes) and path most file systems take
NAME_MAX = 255
PATH_MAX = 4095

#: the commands whose --out is a run folder of their own kind (others write reports, files)
RUN_COMMANDS = {"train": "train", "sft": "sft", "eval": "eval"}


def out_problem(out, *, kind: str = "folder") -> str | None:
    """Why ``out`` cannot be written as a ``kind`` ("folder" or "file") before any work starts
    (None when it can): a name longer than the file system takes, an existing file, device or
    FIFO where a folder is wanted (``/dev/null``), a folder where a file is wanted, or a path
    under a file. Permission and disk faults are left to the write itself (exit 10)."""
    import os
    from pathlib import Path

    text = os.fspath(out)
    if not text.strip():
        return "is empty"
    long = [c for c in Path(text).parts if len(c.encode("utf-8", "surrogateescape")) > NAME_MAX]
    if long:
        return (f"has a name of {len(long[0].encode('utf-8', 'surrogateescape'))} bytes ({long[0][:40]}...); file "
                f"systems take at most {NAME_MAX}")
    if len(os.path.abspath(text).encode("utf-8", "surrogateescape")) > PATH_MAX:
        return f"is longer than the {PATH_MAX} bytes a path may have"
    p = Path(text)
    if p.exists() or p.is_symlink():
        if kind == "folder" and not p.is_dir():
            what = "a file" if p.is_file() else "not a folder (a device, a FIFO or a dangling link)"
            return f"is {what}; give a folder path (new or existing)"
        if kind == "file" and p.is_dir():
            return "is a folder; give a file path"
        if kind == "file" and not p.is_file():
            return "is not a regular file (a device, a FIFO or a dangling link); give a file path"
        return None
    for parent in p.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                return f"lies under {parent}, which is a file, not a folder"
            break
    return None


def folder_kind(folder) -> str | None:
    """What ``folder`` holds: "train", "sft" or "eval" (a run of that command, by the lock of the
    process writing it now or by its files), "model" (a model folder), or None."""
    from pathlib import Path

    from medrl.common.runlock import lock_holder

    p = Path(folder)
    if not p.is_dir():
        return None
    command = str(lock_holder(p).get("what") or "")
    for name, kind in RUN_COMMANDS.items():
        if command == f"medrl {name}":
            return kind
    if (p / "config.yaml").is_file() and (any(p.glob("checkpoint-*")) or any((p / n).exists() for n in (
            "final", "stages", "metrics.jsonl", "data_fingerprint.json", "judge_cost.json"))):
        return "train"
    if (p / "sft_config.yaml").is_file():
        return "sft"
    weights = any((p / n).exists() for n in ("model.safetensors", "model.safetensors.index.json",
                                            "adapter_config.json", "pytorch_model.bin"))
    if (p / "config.json").is_file() and weights:
        return "model"
    if (p / "config.json").is_file() and any((p / n).is_file() for n in ("outputs.jsonl", "generations.jsonl",
                                                                         "metrics.json")):
        return "eval"
    return None


_KIND_WORDS = {"train": "training run", "sft": "SFT run", "eval": "eval folder", "model": "model folder"}


def other_run_problem(out, command: str, *, model: str | None = None, overwrite: bool = False) -> str | None:
    """Why ``command`` (train, sft, eval) must not write into ``out`` (None when it may): ``out``
    lies inside another run's folder (its checkpoints, ``final/``, stages) or a model folder, or
    is itself a folder of another kind (``eval --out RUN``); ``--overwrite`` lets the first two
    through. Never allowed: writing into or over the ``--model`` being loaded, or an eval into a
    model folder (its config.json would be replaced)."""
    from pathlib import Path

    own = RUN_COMMANDS.get(command)
    if own is None:
        return None
    target = Path(out).expanduser().resolve()
    if model is not None and Path(model).exists():
        m = Path(model).expanduser().resolve()
        if target == m or target in m.parents:
            return (f"holds the --model {model}: {command} there would write over the model it reads; use another "
                    "--out")
    kind = folder_kind(target)
    if kind == "model" and own == "eval":
        return "is a model folder: an eval there would replace its config.json; use another --out"
    for parent in target.parents:
        pk = folder_kind(parent)
        if pk is not None:
            if overwrite:
                return None
            return (f"lies inside the {_KIND_WORDS[pk]} {parent} ({target.relative_to(parent)}): {command} there would "
                    "change that run; use another --out (or pass --overwrite if you mean it)")
    if kind is not None and kind != own and not overwrite:
        return (f"is a {_KIND_WORDS[kind]}: {command} there would mix its files into it; use another --out (or pass "
                "--overwrite if you mean it)")
    return None


def check_out(args, command: str) -> None:
    """Refuse an unusable ``--out`` (:func:`out_problem`) or one inside another run
    (:func:`other_run_problem`) with one line (:class:`~medrl.common.exit_codes.OutPathError`,
    exit 2), before the command does anything."""
    from medrl.common.exit_codes import OutPathError

    out = getattr(args, "out", None)
    if out is None:
        return
    why = out_problem(out, kind=getattr(args, "_out_kind", "folder"))
    if why is None:
        model = getattr(args, "model", None)
        if isinstance(model, str) and model and not (model in ("tiny", "default") or model.startswith("tiny-")):
            from medrl.common.exit_codes import ModelNotFoundError
            from medrl.models.loading import resolve_model_path

            try:
                model = resolve_model_path(model)
            except (ModelNotFoundError, OSError, ValueError):
                pass
        why = other_run_problem(out, command, model=model if isinstance(model, str) else None,
                                overwrite=bool(getattr(args, "overwrite", False)))
    if why is not None:
        raise OutPathError(f"--out {out} {why}")
