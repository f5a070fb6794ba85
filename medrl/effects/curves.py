"""Learning curves: held-out sampled accuracy and early failures per output during an RL run.

:class:`CurveCallback` evaluates the policy being trained every ``every`` steps on a fixed
subset of held-out records (the first ``records`` of the test split, the same for every run of
an effects folder): ``k`` samples per question at the training temperature, scored by the oracle
(:func:`medrl.effects.metrics.sample_outputs`). The warm-up model's evaluation gives step 0 and
the run's final evaluation on the same subset gives its last step
(:func:`medrl.effects.metrics.evaluate_model` with ``subset``), so the callback skips the last
step.

The evaluation must not change the run it watches: sampling draws from torch's global random
generator, which TRL's rollouts draw from too, so each curve point runs inside
:func:`torch.random.fork_rng` (the generator's state is restored afterwards) with its own seed.
A run with curves therefore trains exactly as one without (tested). The seconds spent on curve
points, wall and CPU, are kept (``seconds``, ``cpu_seconds``) so the run's training time per step
can leave them out.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from transformers import TrainerCallback


class CurveCallback(TrainerCallback):
    """Appends one JSON row per curve point to ``path``: ``{"step", "accuracy", "early_rate",
    "failed_rate", "n_questions", "seconds"}`` (sampled decoding)."""

    def __init__(self, path: str | Path, records: Sequence[Any], *, every: int, k: int, temperature: float,
                 seed: int, max_new_tokens: int, batch_size: int, prompt_style: str) -> None:
        self.path = Path(path)
        self.records = list(records)
        self.every = int(every)
        self.options = dict(k=k, temperature=temperature, seed=seed, max_new_tokens=max_new_tokens,
                            batch_size=batch_size, prompt_style=prompt_style)
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs: Any):
        step = state.global_step
        if not self.every or not self.records or step % self.every or step >= state.max_steps:
            return control
        import torch

        from medrl.effects.metrics import curve_point, sample_outputs, summarize_samples

        t0, c0 = time.monotonic(), time.process_time()
        unwrapped = getattr(model, "module", model)
        with torch.random.fork_rng(devices=[torch.cuda.current_device()] if torch.cuda.is_available() else []):
            rows = sample_outputs(unwrapped, processing_class, self.records, **self.options)
        point = {"step": step, **curve_point(summarize_samples(rows, self.options["k"]))}
        point["seconds"] = round(time.monotonic() - t0, 2)
        self.seconds += point["seconds"]
        self.cpu_seconds += time.process_time() - c0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps(point) + "\n")
        return control


def read_curve(path: str | Path) -> list[dict]:
    """The rows a :class:`CurveCallback` wrote (none when the file is absent)."""
    p = Path(path)
    if not p.is_file():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


__all__ = ["CurveCallback", "read_curve"]
