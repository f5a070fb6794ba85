"""Checkpoints a resumed run can trust (shared by RL, SFT and the pipelines).

A checkpoint is *intact* only when all of it is: every file the resume will read is checked
(:func:`checkpoint_problem`) - ``trainer_state.json`` parses and names a step; the weights
(``model.safetensors``, a sharded index with every shard, or a LoRA adapter) are as long as their
headers say; ``optimizer.pt``, ``scheduler.pt``, ``rng_state*.pth`` and ``scaler.pt`` are complete
torch archives that load as what the trainer expects; ``config.json``, ``reward_state.json``,
``method_state.json`` and ``medrl_ledger.json`` parse, with the right types. A crash or a full
disk while saving leaves a half file, an empty ``checkpoint-N/`` or a truncated JSON behind;
:func:`intact_checkpoint` skips such folders, names each one and the damaged file, and moves it
aside to ``damaged-checkpoint-N`` (kept for inspection, never read again, and out of the way of
the checkpoint the resumed run will write at that step).

A save is one commit (:func:`committed_checkpoint`, used by
:class:`medrl.train.trainer.MedGRPOTrainer`): ``checkpoint-N/.medrl_saving`` is written before
anything else and removed only after the run ledger (``medrl_ledger.json``: log lengths, judge
cost, monitor state, and the size of every file of the checkpoint) is in place, so a kill at any
moment of a save - weights, optimizer, trainer state, ledger - leaves a checkpoint that counts as
damaged, never one that resumes with half its state. Old checkpoints are rotated away
(``save_total_limit``) only after the new one is committed. A checkpoint without ``optimizer.pt``
and without a ledger (written by another trainer) resumes with a warning naming what restarts.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Iterator

log = logging.getLogger("medrl.train")

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
DAMAGED_PREFIX = "damaged-"


def last_checkpoint(folder: Path) -> str | None:
    """The last ``checkpoint-N`` folder in ``folder`` (None if there is none yet)."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder)) if Path(folder).is_dir() else None


def checkpoints(folder: str | os.PathLike) -> list[Path]:
    """``checkpoint-N`` folders of ``folder``, newest (largest N) first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def _safetensors_problem(path: Path) -> str | None:
    """Why ``path`` is not a complete safetensors file that agrees with its header (None when it
    is): :func:`medrl.models.integrity.safetensors_problem`."""
    from medrl.models.integrity import safetensors_problem

    return safetensors_problem(path)


#: present in ``checkpoint-N/`` while a save is under way: the checkpoint is not committed yet
SAVING_MARK = ".medrl_saving"
#: the run ledger of a checkpoint (:class:`medrl.train.callbacks.RunLedgerCallback`), written last
LEDGER_FILE = "medrl_ledger.json"
#: torch pickles the trainer reads on resume, and the type each must load as
_TORCH_FILES = {"optimizer.pt": dict, "scheduler.pt": dict, "scaler.pt": dict}
#: JSON files of a checkpoint that a resume reads (each must hold an object)
_JSON_FILES = ("config.json", "reward_state.json", "method_state.json", "entropy_ctrl_state.json",
               "adapter_config.json")
#: a torch file up to this size is loaded whole to check it (larger ones: their archive structure)
_LOAD_LIMIT = 64 * 1024 * 1024


def _torch_archive_problem(path: Path) -> str | None:
    """Why ``path`` is not a complete torch zip archive (None when every member lies inside the
    file): a save cut short loses the archive's central directory at the end of the file."""
    import zipfile

    try:
        size = path.stat().st_size
        if size == 0:
            return f"{path.name} is empty (0 bytes)"
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.header_offset + info.compress_size > size:
                    return f"{path.name} is cut short (member {info.filename} ends past byte {size:,})"
    except zipfile.BadZipFile as exc:
        return f"{path.name} is not a complete torch archive ({exc}; {path.stat().st_size:,} bytes)"
    except OSError as exc:
        return f"{path.name} cannot be read ({exc})"
    return None


def _torch_file_problem(path: Path, kind: type | None) -> str | None:
    """Archive structure, then (for files up to :data:`_LOAD_LIMIT`) a load as the trainer does it
    (``weights_only=True``) and the type it must have."""
    why = _torch_archive_problem(path)
    if why is not None or path.stat().st_size > _LOAD_LIMIT:
        return why
    import torch
    from transformers.trainer_pt_utils import safe_globals

    try:
        with safe_globals():  # the numpy types transformers allows in an RNG state
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure to load is damage, named with its reason
        return f"{path.name} does not load ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
    if kind is not None and not isinstance(obj, kind):
        return f"{path.name} holds a {type(obj).__name__}, not a {kind.__name__}"
    if path.name == "optimizer.pt" and not {"state", "param_groups"} <= set(obj):
        return "optimizer.pt has no optimizer state (no 'state' / 'param_groups')"
    if path.name.startswith("rng_state") and not {"python", "numpy", "cpu"} <= set(obj):
        return f"{path.name} has no random state (no 'python' / 'numpy' / 'cpu')"
    return None


def _json_object(path: Path) -> tuple[dict | None, str | None]:
    """(the JSON object in ``path``, None) or (None, why it is not one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{path.name} is damaged ({type(exc).__name__}: {exc})"
    if not isinstance(data, dict):
        return None, f"{path.name} is damaged (a JSON {type(data).__name__}, not an object)"
    return data, None


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def ledger_problem(ledger, step: int | None = None) -> str | None:
    """Why a checkpoint's ``medrl_ledger.json`` (already parsed) cannot be trusted: it must be an
    object naming the checkpoint's step; ``logs`` (when there) maps log names to byte lengths,
    ``files`` file names to sizes, and the state sections are objects."""
    if not isinstance(ledger, dict):
        return f"{LEDGER_FILE} is not an object"
    if not _is_count(ledger.get("step")):
        return f"{LEDGER_FILE} names no step (got {ledger.get('step')!r})"
    if step is not None and ledger["step"] != step:
        return f"{LEDGER_FILE} is for step {ledger['step']}, the checkpoint for step {step}"
    for key in ("logs", "files"):
        if key in ledger and not (isinstance(ledger[key], dict)
                                  and all(isinstance(k, str) and _is_count(v) for k, v in ledger[key].items())):
            return f"{LEDGER_FILE}: {key!r} must map names to byte counts"
    for key, value in ledger.items():
        if key not in ("step", "logs", "files") and value is not None and not isinstance(value, dict):
            return f"{LEDGER_FILE}: {key!r} must be an object, got {type(value).__name__}"
    return None


def checkpoint_problem(ckpt: str | os.PathLike) -> str | None:
    """Why ``ckpt`` cannot be resumed from (None when it is intact): every file the resume will
    read is checked, and the damaged one is named."""
    ckpt = Path(ckpt)
    if not ckpt.is_dir():
        return "not a folder"
    if not any(ckpt.iterdir()):
        return "the folder is empty"
    if (ckpt / SAVING_MARK).exists():
        return (f"its save did not finish ({SAVING_MARK} is still there: the process stopped while writing the "
                "checkpoint)")
    state = ckpt / "trainer_state.json"
    if not state.is_file():
        return "trainer_state.json is missing"
    data, why = _json_object(state)
    if why:
        return why
    step = data.get("global_step")
    if not _is_count(step):
        return f"trainer_state.json is damaged (global_step is {step!r})"
    if not isinstance(data.get("log_history", []), list):
        return "trainer_state.json is damaged (log_history is not a list)"
    ledger: dict = {}
    if (ckpt / LEDGER_FILE).exists():
        ledger, why = _json_object(ckpt / LEDGER_FILE)
        why = why or ledger_problem(ledger, step)
        if why:
            return why
    for name in _JSON_FILES:
        if (ckpt / name).exists():
            _, why = _json_object(ckpt / name)
            if why:
                return why
    why = _weights_problem(ckpt)
    if why:
        return why
    for name, kind in _TORCH_FILES.items():
        if (ckpt / name).exists():
            why = _torch_file_problem(ckpt / name, kind)
            if why:
                return why
    for rng in sorted(ckpt.glob("rng_state*.pth")):
        why = _torch_file_problem(rng, dict)
        if why:
            return why
    for name, size in (ledger.get("files") or {}).items():  # what the commit recorded, file by file
        f = ckpt / name
        if not f.is_file():
            return f"{name} is missing (the checkpoint was committed with it)"
        if f.stat().st_size != size:
            return f"{name} is {f.stat().st_size:,} bytes, {size:,} when the checkpoint was committed"
    return None


def _weights_problem(ckpt: Path) -> str | None:
    from medrl.models.integrity import weight_files

    weights, why = weight_files(ckpt)
    if why:
        return why
    if not weights and not any(ckpt.glob("*.bin")) and not any(ckpt.glob("global_step*")):
        return "no model weights (model.safetensors) in it"
    for w in weights:
        why = _safetensors_problem(w)
        if why:
            return why
    return None


def model_folder_problem(folder: str | os.PathLike) -> str | None:
    """Why a saved model folder (``final/``, ``best/``) will not load: a missing or damaged
    ``config.json`` or weights file cut short or missing (None when it looks complete)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    if not (folder / "config.json").is_file() and not (folder / "adapter_config.json").is_file():
        return None  # not a transformers model folder (a hub id's cache, a GGUF): not ours to judge
    for name in ("config.json", "adapter_config.json"):
        if (folder / name).is_file():
            _, why = _json_object(folder / name)
            if why:
                return why
    if not any((folder / n).is_file() for n in ("model.safetensors", "adapter_model.safetensors",
                                                "model.safetensors.index.json")):
        return None  # weights in another form (a .bin, a GGUF): the loader speaks for them
    return _weights_problem(folder)


def intact_checkpoint(folder: str | os.PathLike, *, move_aside: bool = True) -> str | None:
    """The newest intact ``checkpoint-N`` of ``folder`` (None when there is none).

    Each damaged newer checkpoint is reported by name and reason (a warning) and, with
    ``move_aside``, renamed to ``damaged-checkpoint-N``. A missing ``optimizer.pt`` in the chosen
    one is a warning naming what restarts.
    """
    for ckpt in checkpoints(folder):
        why = checkpoint_problem(ckpt)
        if why is None:
            warn_missing_optimizer(ckpt)
            return str(ckpt)
        dest = ckpt.with_name(DAMAGED_PREFIX + ckpt.name)
        if move_aside:
            n = 1
            while dest.exists():
                n += 1
                dest = ckpt.with_name(f"{DAMAGED_PREFIX}{n}-{ckpt.name}")
            os.replace(ckpt, dest)
        msg = (f"checkpoint {ckpt} is damaged ({why}); "
               + (f"moved it aside to {dest.name} and " if move_aside else "")
               + "falling back to the newest intact checkpoint")
        log.warning(msg)
        print(f"medrl train: {msg}", flush=True)
    return None


def warn_missing_optimizer(ckpt: str | os.PathLike) -> list[str]:
    """Warn (and return what) when ``ckpt`` lacks the optimizer or scheduler state."""
    ckpt = Path(ckpt)
    missing = []
    if not (ckpt / "optimizer.pt").is_file() and not any(ckpt.glob("global_step*")):
        missing.append("optimizer.pt missing: the optimizer's moment estimates (AdamW m and v) restart from zero; "
                       "weights, step count and learning-rate schedule continue")
    if not (ckpt / "scheduler.pt").is_file() and not any(ckpt.glob("global_step*")):
        missing.append("scheduler.pt missing: the learning-rate schedule restarts from its first step")
    if not (ckpt / "rng_state.pth").is_file() and not any(ckpt.glob("rng_state_*.pth")):
        missing.append("rng_state.pth missing: sampling restarts from a fresh random state (rollouts differ "
                       "from an uninterrupted run)")
    for m in missing:
        msg = f"resuming from {ckpt.name}: {m}"
        log.warning(msg)
        print(f"medrl train: warning: {msg}", flush=True)
    return missing


class CheckpointError(FileNotFoundError):
    """``--resume CHECKPOINT`` names no folder, or a damaged one (the message says what is wrong)."""


def resolve_resume(resume: bool | str | None, output_dir: Path) -> str | None:
    """``True`` -> the newest intact ``checkpoint-N`` in ``output_dir`` (None if there is none
    yet; damaged newer ones are reported and moved aside, :func:`intact_checkpoint`); a path ->
    that checkpoint; falsy -> None."""
    if not resume:
        return None
    if resume is True or resume == "last":
        return intact_checkpoint(Path(output_dir))
    p = Path(resume)
    if not p.is_dir():
        raise CheckpointError(f"--resume {resume}: no such checkpoint folder")
    why = checkpoint_problem(p)
    if why is not None:
        raise CheckpointError(f"--resume {resume}: the checkpoint is damaged ({why}); resume without a path to use "
                              "the newest intact checkpoint")
    warn_missing_optimizer(p)
    return str(p)


# --------------------------------------------------------------------------------------------
# Saving a checkpoint as one commit


def write_json_atomic(path: str | os.PathLike, data) -> Path:
    """Write ``data`` as JSON to ``path`` through a temporary file, flushed to disk and renamed
    into place: a reader sees the old file or the whole new one, never half of it."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def checkpoint_files(ckpt: str | os.PathLike) -> dict[str, int]:
    """``{relative path: size}`` of every file in ``ckpt`` (the commit's manifest; the ledger and
    the save mark themselves excluded)."""
    ckpt = Path(ckpt)
    out = {}
    for p in sorted(ckpt.rglob("*")):
        if p.is_file() and p.name not in (LEDGER_FILE, SAVING_MARK) and not p.name.endswith(".tmp"):
            out[p.relative_to(ckpt).as_posix()] = p.stat().st_size
    return out


def _ledger_source(trainer):
    """The callback that writes the run ledger (``ledger(output_dir, step)``), if the run has one."""
    for cb in getattr(getattr(trainer, "callback_handler", None), "callbacks", []):
        if callable(getattr(cb, "ledger", None)) and getattr(cb, "writes_ledger", False):
            return cb
    return None


@contextlib.contextmanager
def committed_checkpoint(trainer, trial=None) -> Iterator[Path | None]:
    """Save ``checkpoint-N`` as one commit around the block that writes it (the trainer's
    ``_save_checkpoint``); yields the folder on the process that writes files, else None.

    Before the block: the folder gets :data:`SAVING_MARK` (flushed to disk), and rotation of old
    checkpoints is held back (``save_total_limit``). After it: every process has finished writing;
    the ledger (the run ledger's state when the run has one, else the step) with the size of every
    file is written atomically, the mark is removed - the commit - and only then are old
    checkpoints rotated away. An error or a kill before the commit leaves the mark, so the folder
    counts as damaged and the previous checkpoint, never rotated away, is resumed from.
    """
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints

    args = trainer.args
    run_dir = Path(trainer._get_output_dir(trial=trial))
    step = int(trainer.state.global_step)
    folder = run_dir / f"{PREFIX_CHECKPOINT_DIR}-{step}"
    main = bool(args.should_save)
    if main:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / SAVING_MARK, "w") as fh:
            fh.write(f"saving step {step} (pid {os.getpid()})\n")
            fh.flush()
            os.fsync(fh.fileno())
        stale = folder / LEDGER_FILE  # a folder written again (an explicit --resume of an older step)
        if stale.exists():
            stale.unlink()
    limit = args.save_total_limit
    args.save_total_limit = None  # rotation waits for the commit
    try:
        yield folder if main else None
    except Exception as exc:  # a full disk or a read-only folder is one line naming the checkpoint
        from medrl.common.exit_codes import write_failure

        fault = write_failure(exc, folder)
        if fault is None:
            raise
        raise fault from exc
    finally:
        args.save_total_limit = limit
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is not None and getattr(accelerator, "num_processes", 1) > 1:
        accelerator.wait_for_everyone()  # every rank's shards are on disk before the commit
    if not main:
        return
    source = _ledger_source(trainer)
    ledger = source.ledger(run_dir, step) if source is not None else {"step": step}
    ledger["step"] = step
    ledger["files"] = checkpoint_files(folder)
    write_json_atomic(folder / LEDGER_FILE, ledger)
    (folder / SAVING_MARK).unlink()
    _fsync_dir(folder)
    rotate_checkpoints(output_dir=str(run_dir), save_total_limit=limit,
                       best_model_checkpoint=trainer.state.best_model_checkpoint, use_mtime=True)
