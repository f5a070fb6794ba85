"""Where medrl finds data and caches, configurable through environment variables."""

from __future__ import annotations

import os
from pathlib import Path

DATA_HELP = (
    "Set MEDRL_DATA_DIR (or pass --data-dir) to a folder holding vqa_rad/ and/or slake/. "
    "VQA-RAD: https://osf.io/89kps/ (CC0); SLAKE: https://www.med-vqa.com/slake/ (CC BY 4.0). "
    "See docs/data.md for the expected layouts."
)


def data_root(explicit: str | os.PathLike | None = None) -> Path:
    """The data folder: ``explicit``, else ``$MEDRL_DATA_DIR``, else ``./data``, else ``../shared/data``.

    Raises FileNotFoundError with instructions when none exists.
    """
    candidates = []
    if explicit:
        candidates.append(Path(explicit))
    elif os.environ.get("MEDRL_DATA_DIR"):
        candidates.append(Path(os.environ["MEDRL_DATA_DIR"]))
    else:
        candidates += [Path("data"), Path("..") / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"no medical VQA data folder found (tried {tried}). {DATA_HELP}")


def cache_dir() -> Path:
    """Cache folder for judge caches and built models: ``$MEDRL_CACHE`` or ``~/.cache/medrl``."""
    p = Path(os.environ.get("MEDRL_CACHE", Path.home() / ".cache" / "medrl"))
    p.mkdir(parents=True, exist_ok=True)
    return p
