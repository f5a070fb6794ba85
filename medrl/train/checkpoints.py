"""Finding the checkpoint a resumed run continues from (shared by RL, SFT and the pipelines)."""

from __future__ import annotations

from pathlib import Path


def last_checkpoint(folder: Path) -> str | None:
    """The last ``checkpoint-N`` folder in ``folder`` (None if there is none yet)."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder)) if Path(folder).is_dir() else None


def resolve_resume(resume: bool | str | None, output_dir: Path) -> str | None:
    """``True`` -> the last ``checkpoint-N`` in ``output_dir`` (None if there is none yet);
    a path -> that checkpoint; falsy -> None."""
    if not resume:
        return None
    if resume is True or resume == "last":
        return last_checkpoint(Path(output_dir))
    p = Path(resume)
    if not p.is_dir():
        raise FileNotFoundError(f"--resume {resume}: no such checkpoint folder")
    return str(p)
