"""The model card a medrl run writes next to its model: the base model and the method by name.

TRL's card names the base model only when it is a hub id, so a policy trained from a local folder
(every warm-up -> RL chain, every tiny model) reads "a fine-tuned version of None". medrl writes
its own ``README.md`` in the run folder and in ``final/`` instead, after training.
"""

from __future__ import annotations

import os
from pathlib import Path


def base_model_name(model: str | os.PathLike) -> str:
    """A readable name for the starting model: a hub id as given; a folder by its path, plus the
    hub id it was itself trained from when its ``config.json`` records one."""
    import json

    name = str(model)
    p = Path(name)
    cfg = p / "config.json"
    if cfg.is_file():
        try:
            origin = json.loads(cfg.read_text()).get("_name_or_path") or ""
        except (OSError, ValueError):
            origin = ""
        if origin and not Path(origin).exists() and origin != name:
            return f"{name} (from {origin})"
    return name


def model_card(*, base_model: str, method: str, recipe: str = "", paper: str = "", data: str = "",
               steps: int | None = None, extra: dict | None = None) -> str:
    """Markdown text of the card (front matter with ``base_model`` and tags, then prose)."""
    import medrl

    import re

    hub = re.search(r"(?:^|\(from )([\w.-]+/[\w.-]+)\)?$", base_model)
    hub_id = hub.group(1) if hub and not Path(hub.group(1)).exists() else None
    tag = re.sub(r"[^a-z0-9_-]+", "-", (recipe or method).lower()).strip("-")
    lines = ["---", *([f"base_model: {hub_id}"] if hub_id else []), "library_name: transformers", "tags:",
             "- medrl", "- trl", f"- {tag}", "---", "",
             f"# {recipe or method} policy", "",
             f"This model is a fine-tuned version of `{base_model}`, trained with **{method}** using "
             f"medrl {medrl.__version__} on TRL."]
    if paper:
        lines += ["", f"Method: {paper}."]
    facts = {"recipe": recipe, "training data": data, "optimizer steps": steps, **(extra or {})}
    rows = [f"- {k}: {v}" for k, v in facts.items() if v not in (None, "")]
    if rows:
        lines += ["", "## Training", "", *rows]
    lines += ["", "The full resolved settings are in the run folder's `config.yaml` (RL) or "
              "`sft_config.yaml` (SFT)."]
    return "\n".join(lines) + "\n"


def write_model_card(folders, **kw) -> None:
    """Write :func:`model_card` as ``README.md`` into each existing folder of ``folders``."""
    text = model_card(**kw)
    for f in folders:
        f = Path(f)
        if f.is_dir():
            (f / "README.md").write_text(text)
