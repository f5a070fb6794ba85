"""One tiny registry class; one registry per kind (rewards, advantages, judges, ...).

Recipes name things in YAML (``rewards: [{name: format, weight: 0.1}]``); a registry turns the
name into the object. Registration happens at import time of the module that defines the
object, so each registry knows which modules to import lazily on first lookup.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Callable, Iterable


class Registry:
    """Names -> objects of one kind.

    ``modules`` are imported on the first lookup (each registers its objects); a name ending in
    ``.*`` (``"medrl.methods.*"``) stands for every module of that package, so a registry can be
    filled by files it does not list (a method's file registers its advantage estimator); with
    ``entry_point_group``, installed packages add theirs through
    ``importlib.metadata.entry_points(group=...)`` (``[project.entry-points."medrl.methods"]
    length_penalty = "my_pkg.methods:LengthPenalty"``): each entry point is loaded then and
    registered under its name. An entry point that fails to load is no silent gap: looking its
    name up raises the reason."""

    def __init__(self, kind: str, modules: Iterable[str] = (), entry_point_group: str | None = None):
        self.kind = kind
        self._items: dict[str, Any] = {}
        self._modules = list(modules)
        self._group = entry_point_group
        self._broken: dict[str, str] = {}
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
                for name in _expand(mod):
                    importlib.import_module(name)
            if self._group:
                self._load_entry_points()

    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        for ep in entry_points(group=self._group):
            if ep.name in self._items:
                continue  # medrl's own name wins; the plugin is reachable by its import path
            try:
                obj = ep.load()
            except Exception as exc:  # noqa: BLE001 - any import error of a plugin: keep the reason
                self._broken[ep.name] = f"entry point {ep.name} = {ep.value!r} (group {self._group}) failed to " \
                                        f"load: {type(exc).__name__}: {exc}"
                continue
            self.register(ep.name)(obj)

    def get(self, name: str) -> Any:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            if name in self._broken:
                raise KeyError(f"{self.kind} {name!r}: {self._broken[name]}") from None
            known = ", ".join(sorted(self._items)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}{did_you_mean(name, self._items)}; known: {known}") from None

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._items


def _expand(module: str) -> list[str]:
    """``module``, or every module of the package ``pkg`` for ``"pkg.*"`` (sorted)."""
    if not module.endswith(".*"):
        return [module]
    import pkgutil

    package = importlib.import_module(module[:-2])
    return sorted(f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__))


def did_you_mean(key: str, allowed: Iterable[str]) -> str:
    """``"; did you mean 'shaping'?"`` or ``""`` (close matches among ``allowed``)."""
    close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


# --------------------------------------------------------------------------------------------
# Objects named by import path: "mypkg.rewards:my_reward" or "path/to/file.py:my_reward"


def is_object_spec(name: str) -> bool:
    """Whether ``name`` points at an object outside the registries: ``module:attr`` (a dotted
    module path, importable) or ``path.py:attr`` (a Python file)."""
    if not isinstance(name, str) or name.count(":") != 1 and not _windows_path(name):
        return False
    target, _, attr = name.rpartition(":")
    return bool(target and attr.isidentifier())


def _windows_path(name: str) -> bool:
    return len(name) > 2 and name[1] == ":" and name.count(":") == 2


def load_object(spec: str) -> Any:
    """Import the object ``spec`` names (see :func:`is_object_spec`).

    Raises ValueError with a one-line reason (file missing, module not importable, no such
    attribute)."""
    import importlib.util
    import sys
    from pathlib import Path

    target, _, attr = spec.rpartition(":")
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target).expanduser()
        if not path.is_file():
            raise ValueError(f"{spec!r}: no such file {str(path)!r}")
        mod_name = f"medrl_user_{abs(hash(str(path.resolve())))}"
        module = sys.modules.get(mod_name)
        if module is None:
            loader_spec = importlib.util.spec_from_file_location(mod_name, path)
            if loader_spec is None or loader_spec.loader is None:
                raise ValueError(f"{spec!r}: cannot import {str(path)!r} as Python")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[mod_name] = module
            try:
                loader_spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[mod_name]
                raise ValueError(f"{spec!r}: importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ValueError(f"{spec!r}: cannot import module {target!r} ({exc})") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"{spec!r}: module {target!r} has no attribute {attr!r}") from None
