"""Stage bookkeeping: which stages finished, how long each took, and refusing a folder made
with other settings (``<out>/state.json``)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from medrl.commands.demo_pipeline.settings import STATE_FILE


class DemoStateMismatch(ValueError):
    """The output folder holds a demo made with other settings."""


def fmt_secs(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _jsonable(x: Any) -> bool:
    try:
        json.dumps(x)
        return True
    except (TypeError, ValueError):
        return False


class StageRunner:
    """Runs named stages in order, recording each one's completion and wall time in
    ``<out>/state.json`` (atomically rewritten after every change).

    A stage is skipped when the state marks it done *and* its ``is_done`` check (its outputs
    exist) agrees; its result is then read back by ``load``. Otherwise it runs; its wall time
    is added to what earlier, interrupted attempts already spent. ``defaults``: settings a
    folder made by an older version may lack; such a setting matches when it keeps its default.
    """

    def __init__(self, out: Path, config: dict, *, overwrite: bool = False,
                 echo: Callable[[str], None] | None = None, defaults: dict | None = None):
        self.out = Path(out)
        self.path = self.out / STATE_FILE
        self.echo = echo or (lambda msg: print(msg, flush=True))
        if overwrite and self.out.exists():
            if not self.path.is_file() and any(self.out.iterdir()):
                raise DemoStateMismatch(
                    f"{self.out} is not empty and holds no {STATE_FILE}: not removing a folder the "
                    "demo did not make; choose another --out")
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        if self.path.is_file():
            self.state = self._resume(config, defaults or {})
        else:
            self.state = {"config": config, "stages": {}}
            self._save()

    def _resume(self, config: dict, defaults: dict) -> dict:
        try:
            state = json.loads(self.path.read_text())
        except json.JSONDecodeError as exc:
            raise DemoStateMismatch(f"{self.path}: not valid JSON ({exc}); use --overwrite to start over") from None
        old = dict(state.get("config", {}))
        for k, v in defaults.items():
            if k not in old and config.get(k) == v:
                old[k] = v  # a setting added since the folder was made, left at its default
        diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
        if diff:
            changes = ", ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in diff)
            raise DemoStateMismatch(
                f"{self.out} holds a demo run with other settings ({changes}). Rerun with the same "
                "options to resume it, pass --overwrite to start over, or choose another --out.")
        state["config"] = config
        return state

    def _save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.state, indent=2, default=str))
        os.replace(tmp, self.path)

    def info(self, name: str) -> dict:
        return self.state["stages"].setdefault(name, {"done": False, "seconds": 0.0, "cpu_seconds": 0.0,
                                                      "attempts": 0})

    def run(self, index: int, total: int, name: str, title: str, fn: Callable[[], Any], *,
            is_done: Callable[[], bool] = lambda: True, load: Callable[[], Any] | None = None) -> Any:
        info = self.info(name)
        if info["done"] and is_done():
            self.echo(f"[{index}/{total}] {title}: already done ({fmt_secs(info['seconds'])}), skipping")
            return load() if load else info.get("result")
        info["done"] = False
        info["attempts"] = info.get("attempts", 0) + 1
        self._save()
        resumed = " (resuming)" if info["seconds"] > 0 else ""
        self.echo(f"\n[{index}/{total}] {title}{resumed}")
        start, cpu = time.monotonic(), time.process_time()
        try:
            result = fn()
        finally:
            info["seconds"] = round(info["seconds"] + time.monotonic() - start, 2)
            info["cpu_seconds"] = round(info.get("cpu_seconds", 0.0) + time.process_time() - cpu, 2)
            self._save()
        info["done"] = True
        if result is not None and _jsonable(result):
            info["result"] = result
        self._save()
        self.echo(f"[{index}/{total}] {title}: done in {fmt_secs(time.monotonic() - start)}")
        return result

    def seconds(self, key: str = "seconds") -> dict[str, float]:
        """Wall (``seconds``) or CPU (``cpu_seconds``, all threads of this process) time per stage."""
        return {k: v.get(key, 0.0) for k, v in self.state["stages"].items()}
