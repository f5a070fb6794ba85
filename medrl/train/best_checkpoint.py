"""Keep the checkpoint with the best held-out score, not only the last one.

MediX-R1 (Mullappilly et al. 2026, arXiv 2602.23363) Table 4 compares the model "before reward
hacking" with the last one: a run whose reward keeps rising while a held-out score falls must
still yield its best model. :class:`BestCheckpointCallback` does that for any
``transformers.Trainer`` (TRL's ``GRPOTrainer`` and medrl's trainer included):

- the score of a checkpoint is a held-out number measured at or after the previous save: either
  a metric the trainer logs (``metric``, e.g. ``monitor/probe_accuracy``, the training monitor's
  greedy accuracy on held-out records, :mod:`medrl.train.monitor`), or, when ``probe`` is given,
  that function's value computed at each save (``probe(trainer) -> float | None``; with held-out
  records, :func:`medrl.train.monitor.default_probe` - the run's own correctness decision on
  greedy answers). A checkpoint without a fresh score (the metric was not logged since the last
  save) is not a candidate: set ``save_steps`` to a multiple of ``monitor.probe_every``;
- after each save, when the checkpoint's score beats the best so far (``greater_is_better``,
  ties keep the earlier one), ``state.best_metric`` / ``state.best_model_checkpoint`` are set -
  so ``save_total_limit`` rotation keeps that checkpoint, as transformers does for its own best
  model (keep ``save_total_limit`` >= 2: with 1, transformers keeps the best checkpoint only and
  deletes the latest, which a resume needs) - its weights and processor are copied to ``<output_dir>/best/`` (optimizer and RNG
  states left out) and ``<output_dir>/best_checkpoint.json`` records step, score, metric and
  every candidate's score.

Configuration: the TRL fields ``grpo.metric_for_best_model`` (turns it on; e.g.
``monitor/probe_accuracy`` with ``monitor.probe_every`` set) and ``grpo.greater_is_better`` (None =
transformers' default: False only for a name ending in "loss"), so a recipe or
``--set grpo.metric_for_best_model=monitor/probe_accuracy`` sets it (:func:`attach_best_checkpoint`).
``load_best_model_at_end`` is not used: the last model stays in ``final/`` and the best one in
``best/``, side by side, as MediX-R1 Table 4 compares them.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

from transformers import TrainerCallback

log = logging.getLogger(__name__)

BEST_DIR = "best"
BEST_FILE = "best_checkpoint.json"
#: checkpoint files that are training state, not the model (left out of ``best/``)
_NOT_MODEL = ("optimizer.pt", "optimizer.bin", "scheduler.pt", "rng_state*.pth", "global_step*", "scaler.pt",
              "*.optimizer*")


class BestCheckpointCallback(TrainerCallback):
    """See the module docstring. ``trainer`` is needed only with ``probe``."""

    def __init__(self, metric: str = "monitor/probe_accuracy", *, greater_is_better: bool = True,
                 probe: Callable[[Any], float | None] | None = None, trainer: Any = None,
                 copy_dir: str | None = BEST_DIR):
        if not metric:
            raise ValueError("best checkpoint: a metric name is needed")
        if probe is not None and trainer is None:
            raise ValueError("best checkpoint: a probe needs the trainer it evaluates")
        self.metric, self.greater_is_better = str(metric), bool(greater_is_better)
        self.probe, self.trainer, self.copy_dir = probe, trainer, copy_dir
        self._fresh: tuple[int, float] | None = None  # (step, score) logged since the last save
        self.best: dict | None = None
        self.candidates: list[dict] = []

    # ------------------------------------------------------------------ decisions
    def better(self, score: float) -> bool:
        if self.best is None:
            return True
        return score > self.best["score"] if self.greater_is_better else score < self.best["score"]

    def on_log(self, args, state, control, logs=None, **kwargs):
        v = (logs or {}).get(self.metric)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v)):
            self._fresh = (int(state.global_step), float(v))

    def on_save(self, args, state, control, **kwargs):
        step = int(state.global_step)
        if self.probe is not None:
            score = self.probe(self.trainer)
            score = float(score) if score is not None and math.isfinite(float(score)) else None
            if score is not None:
                state.log_history.append({self.metric: score, "step": step})
        else:
            score = self._fresh[1] if self._fresh is not None else None
        self._fresh = None
        ckpt = Path(args.output_dir) / f"checkpoint-{step}"
        if score is None:
            log.info("best checkpoint: no fresh %s for %s; not a candidate", self.metric, ckpt.name)
            return control
        self.candidates.append({"step": step, "score": score, "checkpoint": str(ckpt)})
        if self.better(score):
            self.best = {"step": step, "score": score, "checkpoint": str(ckpt)}
            state.best_metric = score
            state.best_model_checkpoint = str(ckpt)
            if state.is_world_process_zero and self.copy_dir and ckpt.is_dir():
                self._copy(ckpt, Path(args.output_dir) / self.copy_dir)
        if state.is_world_process_zero:
            self._write(Path(args.output_dir))
        return control

    # ------------------------------------------------------------------ files
    def _copy(self, ckpt: Path, dest: Path) -> None:
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(ckpt, tmp, ignore=shutil.ignore_patterns(*_NOT_MODEL))
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        log.info("best checkpoint: %s (%s = %.4g) copied to %s", ckpt.name, self.metric, self.best["score"], dest)

    def _write(self, out: Path) -> None:
        info = {"metric": self.metric, "greater_is_better": self.greater_is_better, "best": self.best,
                "copy": str(out / self.copy_dir) if self.copy_dir and self.best else None,
                "candidates": self.candidates}
        path = out / BEST_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(info, indent=2), encoding="utf-8")
        tmp.replace(path)


def attach_best_checkpoint(trainer: Any, *, metric: str | None = None, greater_is_better: bool | None = None,
                           probe_records: Sequence | None = None) -> BestCheckpointCallback | None:
    """Add a :class:`BestCheckpointCallback` to ``trainer`` when ``metric`` or the trainer's
    ``args.metric_for_best_model`` names one (None otherwise). With ``probe_records`` the score is
    :func:`medrl.train.monitor.default_probe` on them, computed at every save; without, the
    logged metric (a ``monitor/probe_*`` metric needs ``monitor.probe_every`` > 0)."""
    args = trainer.args
    metric = metric or getattr(args, "metric_for_best_model", None)
    if not metric:
        return None
    if greater_is_better is None:
        greater_is_better = getattr(args, "greater_is_better", None)
    if greater_is_better is None:
        greater_is_better = not str(metric).endswith("loss")
    probe = None
    if probe_records is not None:
        from medrl.train.monitor import default_probe

        probe = default_probe(list(probe_records))
    else:
        mon = getattr(trainer, "_monitor", None)
        if str(metric).startswith("monitor/probe") and mon is not None and not mon.config.probe_every:
            raise ValueError(f"metric_for_best_model={metric!r} is the monitor's held-out probe, which is off: "
                             "set monitor.probe_every (a divisor of grpo.save_steps) or give probe records")
    cb = BestCheckpointCallback(metric, greater_is_better=bool(greater_is_better), probe=probe,
                                trainer=trainer if probe is not None else None)
    trainer.add_callback(cb)
    return cb


__all__ = ["BEST_DIR", "BEST_FILE", "BestCheckpointCallback", "attach_best_checkpoint"]
