"""The monitor's place in a training run: its callback (stop on an alert, summary at the end) and
the held-out probe."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from transformers import TrainerCallback

from medrl.train.monitor.core import HackingMonitor


class MonitorCallback(TrainerCallback):
    """Saves a checkpoint and stops when the monitor asked for it; writes the summary at the end."""

    def __init__(self, monitor: HackingMonitor):
        self.monitor = monitor

    def on_step_end(self, args, state, control, **kwargs):
        if self.monitor.stop_requested:
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        if self.monitor.config.enabled and state.is_world_process_zero:
            self.monitor.write_summary()


def default_probe(records: Sequence | None = None) -> Callable[[Any], float | None]:
    """A probe that answers ``records`` (or the first ``probe_records`` rows of the trainer's
    ``eval_dataset``) greedily with the current policy and returns the share the run's
    correctness decision accepts (``algorithm.correctness`` with the run's judge).

    It generates as many tokens as the run's rollouts (``max_completion_length``; or
    ``probe_max_new_tokens`` when set): a shorter probe stops before ``</answer>`` where the
    rollouts do not, so it would count as wrong answers the training correctness counts as right.
    With the same limit, an answer cut off is wrong in both. ``probe.last_n`` holds how many
    answers the last probe decided (``probe_gap`` needs ``probe_min_records`` of them)."""

    def probe(trainer) -> float | None:
        from medrl.models.generation import generate
        from medrl.answers.completion import parse_response
        from medrl.rewards.correctness import correctness_column

        cfg = trainer._monitor.config
        rows = list(records) if records is not None else (
            [dict(trainer.eval_dataset[i]) for i in range(min(cfg.probe_records, len(trainer.eval_dataset)))]
            if trainer.eval_dataset is not None and not isinstance(trainer.eval_dataset, dict) else [])
        rows = rows[: cfg.probe_records]
        probe.last_n = 0
        if not rows:
            return None
        get = lambda r, k: r.get(k) if isinstance(r, dict) else getattr(r, k, None)  # noqa: E731
        max_new = cfg.probe_max_new_tokens or int(getattr(trainer.args, "max_completion_length", None) or 256)
        was = trainer.model.training
        texts = generate(trainer.accelerator.unwrap_model(trainer.model), trainer.processing_class, rows,
                         max_new_tokens=max_new, progress=False)
        if was:
            trainer.model.train()
        ok = correctness_column([parse_response(t).answer for t in texts], [get(r, "answer") for r in rows],
                                questions=[get(r, "question") for r in rows],
                                mode=trainer.medrl_algorithm.get("correctness", "auto"), judge=trainer.judge)
        decided = [v for v in ok if v is not None]
        probe.last_n = len(decided)
        return sum(decided) / len(decided) if decided else None

    probe.last_n = 0
    return probe


__all__ = ["MonitorCallback", "default_probe"]
