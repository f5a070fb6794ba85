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
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); finished work is kept, rerun to continue


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
    (Exit.INTERRUPTED, "interrupted (Ctrl-C); finished rows and checkpoints are kept - rerun to continue"),
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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text
