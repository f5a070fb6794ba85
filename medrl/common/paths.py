"""Where medrl finds data and caches, configurable through environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

DATA_HELP = (
    "Set MEDRL_DATA_DIR (or pass --data-dir) to a folder holding vqa_rad/ and/or slake/. "
    "VQA-RAD: https://osf.io/89kps/ (CC0); SLAKE: https://www.med-vqa.com/slake/ (CC BY 4.0). "
    "See docs/data.md for the expected layouts."
)


def data_candidates(explicit: str | os.PathLike | None = None) -> list[Path]:
    """The folders a named dataset is looked for in, in order: ``explicit`` (``--data-dir``) alone
    when given; else ``$MEDRL_DATA_DIR``, ``./data`` and ``../shared/data``."""
    if explicit:
        return [Path(explicit).expanduser()]
    out = []
    if os.environ.get("MEDRL_DATA_DIR"):
        out.append(Path(os.environ["MEDRL_DATA_DIR"]).expanduser())
    out += [Path("data"), Path("..") / "shared" / "data"]
    return out


def data_roots(explicit: str | os.PathLike | None = None) -> list[Path]:
    """The candidate folders of :func:`data_candidates` that exist, resolved."""
    return [c.resolve() for c in data_candidates(explicit) if c.is_dir()]


def data_root(explicit: str | os.PathLike | None = None) -> Path:
    """The first existing data folder of :func:`data_candidates`.

    A named dataset is looked up in every candidate instead (:func:`find_data_root`): a ``./data``
    folder made by ``medrl data convert --out data/x.jsonl`` must not hide ``../shared/data``.
    Raises FileNotFoundError listing the folders tried when none exists.
    """
    candidates = data_candidates(explicit)
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"no medical VQA data folder found (tried {tried}). {DATA_HELP}")


def find_data_root(name: str, has: Callable[[Path], bool], explicit: str | os.PathLike | None = None) -> Path:
    """The first candidate folder (:func:`data_candidates`) for which ``has(folder)`` is true.

    Raises FileNotFoundError naming the dataset and every folder looked in (with why each one
    did not serve: missing, or no ``name`` in it)."""
    looked = []
    for c in data_candidates(explicit):
        if not c.is_dir():
            looked.append(f"{c} (no such folder)")
            continue
        if has(c):
            return c.resolve()
        looked.append(f"{c.resolve()} (no {name} in it)")
    raise FileNotFoundError(f"{name} not found; looked in: {'; '.join(looked)}. {DATA_HELP}")


def cache_dir() -> Path:
    """Cache folder for judge caches and built models: ``$MEDRL_CACHE`` or ``~/.cache/medrl``."""
    p = Path(os.environ.get("MEDRL_CACHE", Path.home() / ".cache" / "medrl"))
    p.mkdir(parents=True, exist_ok=True)
    return p
