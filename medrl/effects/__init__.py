"""Effects harness: each method's claimed effect measured where the truth is known.

Python API::

    from medrl.effects import make_config, run_effects

    config = make_config("quick")                 # or "full", "gpu"; keyword overrides
    md, html = run_effects(config, "effects_out/quick")

Modules: :mod:`~medrl.effects.config` (settings and profiles), :mod:`~medrl.effects.runner`
(warm-up, paired RL runs and their controls, worker processes, per-seed results),
:mod:`~medrl.effects.controls` (the coin-flip and plain-TRL arms), :mod:`~medrl.effects.metrics`
(oracle evaluation, greedy and sampled), :mod:`~medrl.effects.curves` (learning curves),
:mod:`~medrl.effects.leaky` (leaky judges and rewards, the monitor's truth hook), :mod:`~medrl.effects.stats`
(paired statistics over seeds) and :mod:`~medrl.effects.report`. The command is
``medrl bench effects``; docs/effects.md holds the design and the full run's report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medrl.effects.config import EffectsConfig, make_config, parse_set


def run_effects(config: EffectsConfig, out: str | Path, *, report_only: bool = False, progress: bool = True,
                echo: Any = print, command: str | None = None) -> tuple[Path, Path]:
    """Run (or resume) every job of ``config`` in ``out`` and write the report; returns the
    Markdown and HTML report paths.

    One writer per folder: the folder's lock (:func:`medrl.common.runlock.run_lock`, as ``medrl train``
    takes it) is held throughout, so a second run on ``out`` is refused at once with
    :class:`medrl.common.runlock.RunLockedError` (exit code 6 from the command) and touches nothing."""
    import time

    from medrl.effects.report import build_report, read_results
    from medrl.effects.runner import prepare, record_invocation, run_all
    from medrl.common.runlock import run_lock

    out = Path(out)
    t0 = time.monotonic()
    with run_lock(out, "medrl bench effects"):
        if report_only:
            prepare(out, config)
            results = read_results(config, out)
            seconds = None
        else:
            started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
            results = run_all(config, out, echo=echo, progress=progress)["jobs"]
            seconds = time.monotonic() - t0
            record_invocation(out, started, seconds, command)  # what each run of this folder took
        md, html, _ = build_report(config, results, out, seconds=seconds, command=command)
    return md, html


__all__ = ["EffectsConfig", "make_config", "parse_set", "run_effects"]
