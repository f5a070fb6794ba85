"""One exit-code table for every ``medrl`` command, and the one-line message for each known
error class (used by :func:`medrl.cli.main`; the table is in docs/first-hour.md).

A command either returns one of these codes or lets a known error escape; :func:`for_error`
turns the error into ``(code, one-line message)`` so no user sees a traceback for a problem
they can fix (``MEDRL_TRACEBACK=1`` shows it anyway). Unknown errors keep their traceback:
those are bugs to report.
"""

from __future__ import annotations

import errno
import re
from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    FAILED = 1  # the command ran and its check failed (audit-rewards --strict, judge-bench gates)
    USAGE = 2  # bad option, recipe or --set value, unknown name
    JUDGE_AUTH = 3  # the judge endpoint refused the API key
    DATA = 4  # data missing or invalid (dataset folder, record, image), or changed under a run
    MODEL = 5  # --model is neither a model folder nor a cached hub id, or does not load (the file is named)
    LOCKED = 6  # another medrl process holds the run / eval folder
    BUDGET = 7  # train: the judge budget was spent; a checkpoint was saved, no final model
    MONITOR = 8  # train: the reward-hacking monitor stopped the run (monitor.stop_on_alert)
    JUDGE = 9  # the judge is unusable: the circuit breaker stopped training, or the preflight probe failed
    STORAGE = 10  # a file or folder could not be written: disk full, read-only file system, no permission
    REWARD = 11  # train: a reward function is broken (raised, wrong output, non-finite values that persist)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); finished work is kept, rerun to continue
    TERMINATED = 143  # SIGTERM (128 + 15); train saves a checkpoint at the next step boundary first


#: (code, meaning) rows, in the order docs/first-hour.md shows them. The one source of the exit
#: codes: ``medrl --help`` (:func:`summary`), the README's list and the docs table
#: (:func:`markdown_table`; ``python -m medrl.common.exit_codes`` prints both) are made from it, and a
#: test checks that the documents still say what this table says.
TABLE = [
    (Exit.OK, "success"),
    (Exit.FAILED, "the command ran, and the check it makes failed (`audit-rewards --strict`, `judge-bench` gates), "
                  "or `push`: the Hub refused the upload"),
    (Exit.USAGE, "usage error: a bad option, recipe key or `--set` value (the message names the key and file), a "
                 "key given twice in a YAML file (its line is named), YAML refused by the strict loader (an alias bomb, "
                 "a `!!python` tag, an unreadable file - a recipe, a `--set` value or a run folder's `config.yaml`, "
                 "named), a value outside its range (the accepted range is named: `grpo.learning_rate=1e3`, "
                 "`grpo.beta=-1`, `grpo.seed=-1`, `--limit -5`), an optional package the settings need and this "
                 "machine lacks (vLLM, DeepSpeed, a `report_to` tracker, bitsandbytes: the `pip install` is named), or "
                 "an unusable `--out` (a name too long, a file, `/dev/null`, a path under a file, a folder inside "
                 "another run)"),
    (Exit.JUDGE_AUTH, "the judge endpoint refused the API key (scored rows are kept; fix the key and rerun)"),
    (Exit.DATA, "data error: dataset not found (the folders searched are listed), an invalid record (file and "
                "record named), or `train`: the training data changed since the run started (the source is "
                "named; `--overwrite` starts afresh)"),
    (Exit.MODEL, "model error: `--model` is neither a model folder nor a cached hub id, or it does not load: the "
                 "file is named - a cut or garbage JSON file (tokenizer, processor config), a broken chat template, "
                 "a weights file cut short or whose header lies, NaN or infinite weights, code that needs "
                 "`--trust-remote-code`"),
    (Exit.LOCKED, "another medrl process is writing the same run/eval folder (its PID is named)"),
    (Exit.BUDGET, "`train`: the judge budget (`--judge-budget`) is spent; a checkpoint is saved, no `final/` - "
                  "rerun with a larger budget"),
    (Exit.MONITOR, "`train`: the reward-hacking monitor stopped the run (`monitor.stop_on_alert`); a checkpoint "
                   "is saved, no `final/`"),
    (Exit.JUDGE, "the judge is unusable: `train`'s judge circuit breaker stopped the run (checkpoint saved), or "
                 "the `--dry-run` probe failed; the message names the judge and its last error"),
    (Exit.STORAGE, "a file or folder could not be written: the disk is full, the file system is read-only or "
                   "permission is denied (the path is named); finished work is kept - free space or fix the "
                   "permissions, then rerun the same command to continue"),
    (Exit.REWARD, "`train`: a reward function is broken - it raised, returned something other than one number "
                  "(or None) per rollout, or gave non-finite values for several steps in a row; the message "
                  "names the reward, the step and the value; the last checkpoint is kept"),
    (Exit.INTERRUPTED, "interrupted (Ctrl-C); finished rows and checkpoints are kept - rerun the same command to "
                       "continue (`train` saves a checkpoint at the next step first)"),
    (Exit.TERMINATED, "terminated (SIGTERM); `train` saves a checkpoint at the next step boundary - rerun the "
                      "same command to continue"),
]

#: A few words per code, for ``medrl --help`` and the README's one-line list.
SHORT = {
    Exit.OK: "ok", Exit.FAILED: "check failed", Exit.USAGE: "usage", Exit.JUDGE_AUTH: "judge auth",
    Exit.DATA: "data", Exit.MODEL: "model", Exit.LOCKED: "folder locked", Exit.BUDGET: "judge budget spent",
    Exit.MONITOR: "hacking monitor stop", Exit.JUDGE: "judge unusable", Exit.STORAGE: "cannot write (disk, permission)",
    Exit.REWARD: "broken reward", Exit.INTERRUPTED: "interrupted", Exit.TERMINATED: "terminated",
}


def summary() -> str:
    """``0 ok, 1 check failed, ...``: every code of :data:`TABLE` with its short name."""
    return ", ".join(f"{int(code)} {SHORT[code]}" for code, _ in TABLE)


def markdown_table() -> str:
    """The table of docs/first-hour.md, made from :data:`TABLE`."""
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| {int(code)} | {meaning} |" for code, meaning in TABLE]
    return "\n".join(rows)


class ModelNotFoundError(FileNotFoundError):
    """``--model`` names no model folder and no cached hub id."""


class OutPathError(ValueError):
    """``--out`` cannot be used: a name too long for the file system, an existing file (or device)
    where a folder is wanted, a path under a file, or a folder inside another run's folder."""


class ModelDamagedError(ValueError):
    """A model folder is there but cannot load: a weights file cut short or missing (the
    message names the file)."""


#: errno values that mean "this path cannot be written now" (disk full, quota, read-only file
#: system, no permission, file too large): :data:`Exit.STORAGE`
STORAGE_ERRNOS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EFBIG")
                           if hasattr(errno, n))


class StorageError(OSError):
    """A file or folder could not be written (disk full, read-only, no permission); the message
    names the path and what to do. Built by :func:`storage_error`."""


def storage_error(exc: OSError | None, path=None, doing: str = "write") -> StorageError:
    """One line for a write that failed on ``path``: what the OS said and what to do next."""
    import os

    code = getattr(exc, "errno", None)
    path = path if path is not None else getattr(exc, "filename", None)
    why = (os.strerror(code) if code else None) or (str(exc) if exc is not None else "unknown error")
    hint = {
        errno.ENOSPC: "free space on that disk",
        getattr(errno, "EDQUOT", -1): "free space within your quota",
        errno.EROFS: "the file system is mounted read-only: use an --out on a writable disk",
        errno.EACCES: "give this user write permission there, or use another --out",
        errno.EPERM: "give this user write permission there, or use another --out",
        errno.EFBIG: "the file system refuses files this large: use another disk",
    }.get(code, "check the disk and the permissions")
    err = StorageError(code or 0, f"cannot {doing} {path}: {why} ({hint}); finished work is kept - rerun the same "
                                  "command to continue")
    err.filename = str(path) if path is not None else None
    return err


def is_storage_error(exc: BaseException) -> bool:
    """An OSError that means the path cannot be written now (:data:`STORAGE_ERRNOS`)."""
    return isinstance(exc, OSError) and getattr(exc, "errno", None) in STORAGE_ERRNOS


#: how libraries without an errno say that a write failed: torch ("PytorchStreamWriter failed
#: writing file ...", or "[enforce fail at inline_container.cc] unexpected pos" from its zip
#: writer), safetensors ("I/O error: No space left on device (os error 28)")
_WRITE_WORDS = ("write", "writing", "serializ", "no space", "read-only", "permission denied", "i/o error", "quota",
                "inline_container", "pytorchstreamwriter")
_ERRNO_IN_TEXT = (re.compile(r"os error (\d+)"), re.compile(r"\[Errno (\d+)\]"))
_STRERROR_IN_TEXT = {"no space left on device": errno.ENOSPC, "read-only file system": errno.EROFS,
                     "permission denied": errno.EACCES, "disk quota exceeded": getattr(errno, "EDQUOT", errno.ENOSPC)}
#: free space below which a failed write is put down to a full disk
LOW_SPACE = 16 * 1024 * 1024


def write_failure(exc: BaseException, folder) -> StorageError | None:
    """The :class:`StorageError` behind ``exc``, raised while writing into ``folder``; None when
    nothing says the disk or the permissions are at fault (the error is something else).

    In order: an OSError with a storage errno anywhere in the chain; an errno or the OS's words
    for one in the message (safetensors: "No space left on device (os error 28)"); for a failed
    write that names no cause (torch: "PytorchStreamWriter failed writing file"), what a probe
    write into ``folder`` says now, or a disk with less than :data:`LOW_SPACE` free."""
    import os
    import shutil
    from pathlib import Path

    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        if isinstance(e, StorageError):
            return e
        if is_storage_error(e):
            return storage_error(e, getattr(e, "filename", None) or folder)
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    text = " ".join(str(exc).split()).lower()
    if not any(w in text for w in _WRITE_WORDS):
        return None
    for pattern in _ERRNO_IN_TEXT:
        m = pattern.search(text)
        if m and int(m.group(1)) in STORAGE_ERRNOS:
            return storage_error(OSError(int(m.group(1)), os.strerror(int(m.group(1)))), folder)
    for words, code in _STRERROR_IN_TEXT.items():
        if words in text:
            return storage_error(OSError(code, os.strerror(code)), folder)
    folder = Path(folder)
    probe_dir = folder if folder.is_dir() else folder.parent
    probe = probe_dir / f".medrl-write-probe-{os.getpid()}"
    try:
        with open(probe, "wb") as fh:
            fh.write(b"\0" * 65536)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as probe_exc:
        if is_storage_error(probe_exc):
            return storage_error(probe_exc, folder)
        return None
    finally:
        try:
            probe.unlink()
        except OSError:
            pass
    try:
        if shutil.disk_usage(probe_dir).free < LOW_SPACE:
            return storage_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), folder)
    except OSError:
        pass
    return None


def _classes() -> list[tuple[tuple[str, str], Exit]]:
    # (module, class name) -> code; looked up lazily so importing this module stays instant
    return [
        (("medrl.common.exit_codes", "ModelNotFoundError"), Exit.MODEL),
        (("medrl.common.exit_codes", "ModelDamagedError"), Exit.MODEL),
        (("medrl.common.exit_codes", "OutPathError"), Exit.USAGE),
        (("medrl.common.exit_codes", "StorageError"), Exit.STORAGE),
        (("medrl.train.reward_checks", "RewardError"), Exit.REWARD),
        (("medrl.train.checkpoints", "CheckpointError"), Exit.USAGE),
        (("medrl.judges.base", "JudgeAuthError"), Exit.JUDGE_AUTH),
        (("medrl.common.runlock", "RunLockedError"), Exit.LOCKED),
        (("medrl.data.record", "DataError"), Exit.DATA),
        (("medrl.train.recipes", "RecipeError"), Exit.USAGE),
        (("medrl.common.strict_yaml", "ConfigFileError"), Exit.USAGE),
        (("medrl.eval.runner", "EvalFolderMismatch"), Exit.USAGE),
    ]


def for_error(exc: BaseException) -> tuple[int, str] | None:
    """``(exit code, one-line message)`` for a known error class, else None."""
    import sys

    if isinstance(exc, KeyboardInterrupt):
        return Exit.INTERRUPTED, "interrupted; finished work is kept - rerun the same command to continue"
    for (module, name), code in _classes():
        mod = sys.modules.get(module)  # a class never imported cannot have been raised
        cls = getattr(mod, name, None) if mod is not None else None
        if cls is not None and isinstance(exc, cls):
            return code, _one_line(exc)
    if is_storage_error(exc):  # a disk full or read-only anywhere below the command: one line, not a traceback
        return Exit.STORAGE, _one_line(storage_error(exc))
    return None


#: Options of each command that data-error hints may name (others are cut from the hint).
COMMAND_OPTIONS = {
    "train": (), "audit-rewards": (), "sft": (), "demo": (),
    "eval": ("--skip-invalid",), "data": ("--skip-invalid",),
}

_SKIP_HINTS = (" (use --skip-invalid / skip_invalid=True to skip such records)",
               "; shorten or drop the record (--skip-invalid skips it)")


def command_hint(message: str, command: str) -> str:
    """``message`` without hints naming an option ``command`` does not have (``--skip-invalid``
    outside ``eval`` and ``data``); what every command can do is said instead."""
    if "--skip-invalid" not in message or "--skip-invalid" in COMMAND_OPTIONS.get(command, ("--skip-invalid",)):
        return message
    for h in _SKIP_HINTS:
        message = message.replace(h, "")
    message = message.replace("--skip-invalid", "dropping the record")
    return message + f" (fix or remove the record; `medrl data inspect` shows the data; `medrl {command}` has no " \
                     "--skip-invalid)"


def code_for(exc: BaseException, default: int = Exit.USAGE) -> int:
    """The table's code for a known error class (data error 4, recipe error 2, ...), else ``default``."""
    known = for_error(exc)
    return int(known[0]) if known is not None else int(default)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, StorageError):
        return exc.strerror or str(exc)
    text = str(exc).strip() or type(exc).__name__
    return text


if __name__ == "__main__":  # python -m medrl.common.exit_codes: the README line and the docs table
    print(summary())
    print()
    print(markdown_table())
