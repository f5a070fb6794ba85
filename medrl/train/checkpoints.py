"""Finding the checkpoint a resumed run continues from (shared by RL, SFT and the pipelines).

A checkpoint is *intact* when its ``trainer_state.json`` parses and names a step, and its
weights (``model.safetensors``, a sharded ``model.safetensors.index.json`` with every shard, or
a LoRA ``adapter_model.safetensors``) are complete: a safetensors file is exactly as long as its
header says. A crash or a full disk while saving leaves a half file, an empty ``checkpoint-N/``
or a truncated JSON behind; :func:`intact_checkpoint` skips such folders, names each one and why,
and moves it aside to ``damaged-checkpoint-N`` (kept for inspection, never read again, and out of
the way of the checkpoint the resumed run will write at that step). A checkpoint without
``optimizer.pt`` resumes with a warning naming what restarts (the optimizer's moment estimates).
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
from pathlib import Path

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
    """Why ``path`` is not a complete safetensors file (None when it is)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"{path.name} is {size} bytes (no header)"
            (n,) = struct.unpack("<Q", head)
            if n > size - 8:
                return f"{path.name} is cut short ({size} bytes, header alone needs {n + 8})"
            header = json.loads(fh.read(n))
    except (OSError, ValueError) as exc:
        return f"{path.name} cannot be read ({exc})"
    end = max((int(v["data_offsets"][1]) for k, v in header.items()
               if k != "__metadata__" and isinstance(v, dict) and "data_offsets" in v), default=0)
    if size < 8 + n + end:
        return f"{path.name} is cut short ({size:,} of {8 + n + end:,} bytes)"
    return None


def checkpoint_problem(ckpt: str | os.PathLike) -> str | None:
    """Why ``ckpt`` cannot be resumed from (None when it is intact)."""
    ckpt = Path(ckpt)
    if not ckpt.is_dir():
        return "not a folder"
    if not any(ckpt.iterdir()):
        return "the folder is empty"
    state = ckpt / "trainer_state.json"
    try:
        data = json.loads(state.read_text())
        int(data["global_step"])
    except FileNotFoundError:
        return "trainer_state.json is missing"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"trainer_state.json is damaged ({type(exc).__name__}: {exc})"
    index = ckpt / "model.safetensors.index.json"
    weights = [ckpt / n for n in ("model.safetensors", "adapter_model.safetensors") if (ckpt / n).is_file()]
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError) as exc:
            return f"model.safetensors.index.json is damaged ({exc})"
        for s in shards:
            if not (ckpt / s).is_file():
                return f"weight shard {s} is missing"
        weights += [ckpt / s for s in shards]
    elif not weights and not any(ckpt.glob("*.bin")) and not any(ckpt.glob("global_step*")):
        return "no model weights (model.safetensors) in it"
    for w in weights:
        why = _safetensors_problem(w)
        if why:
            return why
    return None


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
        raise FileNotFoundError(f"--resume {resume}: no such checkpoint folder")
    why = checkpoint_problem(p)
    if why is not None:
        raise FileNotFoundError(f"--resume {resume}: the checkpoint is damaged ({why})")
    warn_missing_optimizer(p)
    return str(p)
