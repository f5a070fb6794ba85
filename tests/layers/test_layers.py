"""Every top-level module of medrl has a place in the layer contract (pyproject.toml,
``[tool.importlinter]``; ``lint-imports`` checks it in ``make test``): a module left out would
escape the layer check."""

from __future__ import annotations

import pkgutil
import re
import tomllib
from pathlib import Path

import medrl

ROOT = Path(__file__).resolve().parents[2]


def test_every_top_level_module_is_in_a_layer():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    placed = {name.strip("() ") for layer in layers for name in re.split(r"[:|]", layer)}
    modules = {m.name for m in pkgutil.iter_modules(medrl.__path__)}
    assert modules - placed == set(), "add these modules to a layer in pyproject.toml [tool.importlinter]"
