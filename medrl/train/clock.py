"""Run durations from the monotonic clock.

transformers measures ``train_runtime`` (and the samples, steps and tokens per second derived
from it) as ``time.time() - start_time``: a wall clock set back during a run (NTP, a manual
change, a suspended VM) writes a negative or wrong runtime into ``metrics.jsonl``, TensorBoard
and ``train_result.json``. :class:`MonotonicClock` hands transformers a start time derived from
``time.monotonic()``, so every duration it computes is the monotonic elapsed time.
"""

from __future__ import annotations

import time

from transformers import TrainerCallback


class _ClockStart(TrainerCallback):
    """Records the monotonic time at ``on_train_begin`` (transformers takes its start time just
    before calling it)."""

    def __init__(self, trainer):
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        self.trainer._medrl_monotonic_start = time.monotonic()


class MonotonicClock:
    """Mixin for a transformers ``Trainer`` (put it first among the bases): the start time its
    speed metrics subtract from ``time.time()`` is replaced by ``time.time()`` minus the monotonic
    time elapsed since training began, so ``train_runtime`` is never negative or skewed by a clock
    change."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_callback(_ClockStart(self))

    def _monotonic_start_time(self, start_time):
        began = getattr(self, "_medrl_monotonic_start", None)
        if start_time is None or began is None:
            return start_time
        return time.time() - (time.monotonic() - began)

    def _finalize_training(self, trial, num_train_samples, start_time):
        return super()._finalize_training(trial, num_train_samples, self._monotonic_start_time(start_time))

    def log(self, logs, start_time=None, *args, **kwargs):
        return super().log(logs, self._monotonic_start_time(start_time), *args, **kwargs)


__all__ = ["MonotonicClock"]
