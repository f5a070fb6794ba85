"""One tiny registry class; one registry per kind (rewards, advantages, judges, ...).

Recipes name things in YAML (``rewards: [{name: format, weight: 0.1}]``); a registry turns the
name into the object. Registration happens at import time of the module that defines the
object, so each registry knows which modules to import lazily on first lookup.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterable


class Registry:
    def __init__(self, kind: str, modules: Iterable[str] = ()):
        self.kind = kind
        self._items: dict[str, Any] = {}
        self._modules = list(modules)
        self._loaded = False

    def register(self, name: str | None = None) -> Callable[[Any], Any]:
        """Decorator: ``@REWARDS.register("format")``."""

        def deco(obj: Any) -> Any:
            key = name or getattr(obj, "__name__", None)
            if not key:
                raise ValueError(f"{self.kind} registry: cannot infer a name for {obj!r}")
            if key in self._items and self._items[key] is not obj:
                raise ValueError(f"{self.kind} registry: {key!r} is registered twice")
            self._items[key] = obj
            return obj

        return deco

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for mod in self._modules:
                importlib.import_module(mod)

    def get(self, name: str) -> Any:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._items
