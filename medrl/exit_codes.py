"""One exit-code table for every ``medrl`` command, and the one-line message for each known
error class (used by :func:`medrl.cli.main`; the table is in docs/first-hour.md).

A command either returns one of these codes or lets a known error escape; :func:`for_error`
turns the error into ``(code, one-line message)`` so no user sees a traceback for a problem
they can fix (``MEDRL_TRACEBACK=1`` shows it anyway). Unknown errors keep their traceback:
those are bugs to report.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    FAILED = 1  # the command ran and its check failed (audit-rewards --strict, judge-bench gates)
    USAGE = 2  # bad option, recipe or --set value, unknown name
    JUDGE_AUTH = 3  # the judge endpoint refused the API key
    DATA = 4  # data missing or invalid (dataset folder, record, image)
    MODEL = 5  # --model is neither a model folder nor a cached hub id, or does not load
    LOCKED = 6  # another medrl process holds the run / eval folder
    BUDGET = 7  # train: the judge budget was spent; a checkpoint was saved, no final model
    MONITOR = 8  # train: the reward-hacking monitor stopped the run (monitor.stop_on_alert)
    JUDGE = 9  # the judge is unusable: the circuit breaker stopped training, or the preflight probe failed
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); finished work is kept, rerun to continue
    TERMINATED = 143  # SIGTERM (128 + 15); train saves a checkpoint at the next step boundary first


#: (code, meaning) rows, in the order docs/first-hour.md shows them.
TABLE = [
    (Exit.OK, "success"),
    (Exit.FAILED, "the command ran, and the check it makes failed (audit-rewards --strict, judge-bench gates)"),
    (Exit.USAGE, "usage error: a bad option, recipe key or --set value (the message names the key and file)"),
    (Exit.JUDGE_AUTH, "the judge endpoint refused the API key (scored rows are kept; fix the key, rerun)"),
    (Exit.DATA, "data error: dataset not found (the folders searched are listed) or an invalid record "
                "(file and record named)"),
    (Exit.MODEL, "model error: --model is neither a model folder nor a cached hub id, or it does not load"),
    (Exit.LOCKED, "another medrl process is writing the same run/eval folder (its PID is named)"),
    (Exit.BUDGET, "train: the judge budget (--judge-budget) is spent; a checkpoint was saved and no final model "
                  "written - rerun the same command with a larger budget to continue"),
    (Exit.MONITOR, "train: the reward-hacking monitor stopped the run (monitor.stop_on_alert); a checkpoint was "
                   "saved, no final model (medrl analyze hacking OUT)"),
    (Exit.JUDGE, "the judge is unusable: train's judge circuit breaker stopped the run (checkpoint saved), or the "
                 "--dry-run probe of the judge failed; the message names the judge and its last error"),
    (Exit.INTERRUPTED, "interrupted (Ctrl-C); finished rows and checkpoints are kept - rerun to continue "
                       "(train: a checkpoint is saved at the next step boundary first)"),
    (Exit.TERMINATED, "terminated (SIGTERM); train saves a checkpoint at the next step boundary - rerun to continue"),
]


class ModelNotFoundError(FileNotFoundError):
    """``--model`` names no model folder and no cached hub id."""


def _classes() -> list[tuple[tuple[str, str], Exit]]:
    # (module, class name) -> code; looked up lazily so importing this module stays instant
    return [
        (("medrl.exit_codes", "ModelNotFoundError"), Exit.MODEL),
        (("medrl.judges.base", "JudgeAuthError"), Exit.JUDGE_AUTH),
        (("medrl.runlock", "RunLockedError"), Exit.LOCKED),
        (("medrl.data.record", "DataError"), Exit.DATA),
        (("medrl.train.recipes", "RecipeError"), Exit.USAGE),
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
    text = str(exc).strip() or type(exc).__name__
    return text
