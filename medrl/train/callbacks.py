"""Trainer callbacks and checkpoint helpers: reward state (ARMed) and a JSONL metrics log.

:func:`reload_renamed_weights` works around a transformers 5.x resume bug for Qwen-VL models
(any ``Trainer`` subclass can call it from ``_load_from_checkpoint``).

Stateful rewards (ARMed's adaptive thresholds, "Adaptive Reward Function Design" Eq. 5-12) opt
in explicitly (:class:`medrl.types.StatefulReward`: ``checkpoint_state = True`` plus
``state_dict()`` / ``load_state_dict()``); having a ``state_dict`` is not enough, since every
``torch.nn.Module`` reward model has one. :func:`save_reward_state` writes them as
``reward_state.json`` into a checkpoint folder and :func:`load_reward_state` puts them back;
:class:`medrl.train.trainer.MedGRPOTrainer` calls both from the same hooks TRL uses for its own
adaptive-entropy state (``_save_checkpoint`` / ``_load_optimizer_and_scheduler``), so a resumed
run continues with the threshold and history it had at the checkpoint.

The run folder is a ledger (:class:`RunLedgerCallback`): each checkpoint also records how long
every JSON-lines log was and the judge-cost, monitor and judge-breaker state at its step, so a
resumed run cuts the logs back and continues the totals instead of repeating or losing rows.
:class:`InterruptCallback` turns SIGINT/SIGTERM into a checkpoint at the next step boundary and
:class:`JudgeBreakerCallback` stops a run whose rollouts are mostly unscorable; both record why
in a shared :class:`RunOutcome` that ``medrl train`` turns into its exit code.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Iterable

from transformers import TrainerCallback

from medrl.train.checkpoints import LEDGER_FILE, SAVING_MARK  # the ledger is the checkpoint's commit record

log = logging.getLogger(__name__)

REWARD_STATE_FILE = "reward_state.json"


def stateful_rewards(reward_funcs: Iterable[Any]) -> dict[str, Any]:
    """Reward functions that opted in to checkpointed state (``checkpoint_state = True``,
    :class:`medrl.types.StatefulReward`), by ``__name__``. Reward models (``nn.Module``) and
    other objects with a ``state_dict`` but no opt-in are not reward state."""
    from medrl.types import is_stateful_reward

    out = {}
    for fn in reward_funcs:
        if is_stateful_reward(fn):
            name = getattr(fn, "__name__", type(fn).__name__)
            for method in ("state_dict", "load_state_dict"):
                if not callable(getattr(fn, method, None)):
                    raise TypeError(f"reward {name!r} sets checkpoint_state = True but has no {method}()")
            if name in out:
                raise ValueError(f"two stateful rewards are both named {name!r}; give them distinct names")
            out[name] = fn
    return out


def save_reward_state(checkpoint_dir: str | os.PathLike, reward_funcs: Iterable[Any]) -> Path | None:
    """Write ``reward_state.json`` (``{reward name: state_dict}``) into ``checkpoint_dir``."""
    funcs = stateful_rewards(reward_funcs)
    if not funcs:
        return None
    path = Path(checkpoint_dir) / REWARD_STATE_FILE
    state = {name: fn.state_dict() for name, fn in funcs.items()}
    for name, st in state.items():
        try:
            json.dumps(st)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"reward {name!r}: state_dict() must be JSON-serialisable for {path} ({exc})") from None
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)  # never leave a half-written state next to a complete checkpoint
    return path


def load_reward_state(checkpoint_dir: str | os.PathLike, reward_funcs: Iterable[Any]) -> list[str]:
    """Restore stateful rewards from ``checkpoint_dir/reward_state.json``; returns restored names.

    A checkpoint without the file restores nothing (a run that had no stateful reward). A
    stateful reward missing from an existing file is an error: resuming it from scratch would
    silently change the reward.
    """
    funcs = stateful_rewards(reward_funcs)
    path = Path(checkpoint_dir) / REWARD_STATE_FILE
    if not funcs or not path.is_file():
        return []
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    missing = sorted(set(funcs) - set(state))
    if missing:
        raise KeyError(f"{path}: no saved state for reward(s) {missing}; saved: {sorted(state)}")
    for name, fn in funcs.items():
        fn.load_state_dict(state[name])
    return sorted(funcs)


def reload_renamed_weights(trainer, checkpoint: str, model) -> bool:
    """Work around transformers 5.x resuming with renamed checkpoint keys; True if it reloaded.

    ``Trainer._load_from_checkpoint`` reads ``checkpoint-N/model.safetensors`` and calls
    ``model.load_state_dict(..., strict=False)``, but ``save_pretrained`` writes some
    architectures (Qwen2-VL / Qwen2.5-VL among them) under their legacy key names, so no weight
    matches and the model silently keeps its current weights. When the saved keys are not the
    model's own, reload the checkpoint through ``from_pretrained`` (which applies the key mapping)
    and copy its weights in. DeepSpeed, FSDP and PEFT checkpoints keep their own loaders.
    """
    if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled or hasattr(model, "peft_config"):
        return False
    single = os.path.join(checkpoint, "model.safetensors")
    index = os.path.join(checkpoint, "model.safetensors.index.json")
    if os.path.isfile(single):
        from safetensors import safe_open

        with safe_open(single, "pt") as f:
            saved = set(f.keys())
    elif os.path.isfile(index):
        with open(index) as f:
            saved = set(json.load(f)["weight_map"])
    else:
        return False
    unwrapped = trainer.accelerator.unwrap_model(model)
    if saved <= set(unwrapped.state_dict()):
        return False
    dtype = next(unwrapped.parameters()).dtype
    fresh = type(unwrapped).from_pretrained(checkpoint, dtype=dtype)
    result = unwrapped.load_state_dict(fresh.state_dict(), strict=False)
    if result.missing_keys:
        raise RuntimeError(f"{checkpoint}: could not restore weights {result.missing_keys[:5]} ...")
    logging.getLogger(__name__).info("reloaded %s through from_pretrained (checkpoint keys use the legacy names)", checkpoint)
    return True


class JsonlMetricsCallback(TrainerCallback):
    """Append every log record (step, metrics) to ``<run>/metrics.jsonl`` (plots, reports).

    TensorBoard gets the same numbers through ``report_to=["tensorboard"]``; this file is the
    dependency-free copy the analysis and the tests read.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        rec = {"step": state.global_step}
        for k, v in logs.items():
            if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
                rec[k] = v
        from medrl.common.jsonl import append_jsonl

        append_jsonl(self.path, [rec], fsync=False)


class StopAfterStepCallback(TrainerCallback):
    """Stop training after ``step`` optimizer steps (after that step's checkpoint is written).

    Used to simulate a run killed right after a checkpoint (resume tests).
    """

    def __init__(self, step: int):
        self.step = int(step)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            control.should_save = True
            control.should_training_stop = True
        return control


# --------------------------------------------------------------------------------------------
# The run folder as a ledger: what a checkpoint must carry so a resumed run continues exactly.

#: JSON-lines logs a training run appends to (truncated to a checkpoint's step on resume)
RUN_LOGS = ("metrics.jsonl", "credit.jsonl", "hacking.jsonl", "reward_samples.jsonl")
#: summaries written at the end of training (rebuilt from the ledger's state on resume)
RUN_SUMMARIES = ("judge_cost.json", "monitor_summary.json")


class RunOutcome:
    """Why training ended, shared by the stop callbacks and ``medrl train`` (which turns it into
    an exit code, :mod:`medrl.common.exit_codes`). ``reason``: None (ran to its end), ``"budget"``,
    ``"monitor"``, ``"judge"``, ``"sigint"`` or ``"sigterm"``; ``started``: training began (a
    failure before that leaves the run folder as it was)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.message: str = ""
        self.step: int | None = None
        self.started = False
        self.signal: int | None = None  # set by the signal handler; turned into a stop at the next step

    def stop(self, reason: str, message: str, step: int | None = None) -> None:
        if self.reason is None:
            self.reason, self.message, self.step = reason, message, step


def bind_trainer_callbacks(trainer: Any) -> None:
    """Hand ``trainer`` to its callbacks that ask for it (:func:`medrl.judges.cost.bind_trainer_callbacks`)."""
    from medrl.judges.cost import bind_trainer_callbacks as bind

    bind(trainer)


def _monitor_state(monitor: Any) -> dict | None:
    """The reward-hacking monitor's state (its ``state_dict()`` when it has one)."""
    if monitor is None:
        return None
    if callable(getattr(monitor, "state_dict", None)):
        return monitor.state_dict()
    from dataclasses import asdict

    return {"history": {k: list(v) for k, v in monitor.history.items()},
            "series": {k: [list(p) for p in v] for k, v in monitor.series.items()},
            "alerts": [asdict(a) for a in monitor.alerts], "warned": sorted(monitor.warned),
            "stop_requested": bool(monitor.stop_requested), "over": dict(getattr(monitor, "_over", {})),
            "zero_run": int(getattr(monitor, "_zero_run", 0)), "seconds": float(monitor.seconds),
            "steps": int(monitor.steps), "enabled": bool(monitor.config.enabled)}


def _load_monitor_state(monitor: Any, state: dict) -> None:
    if callable(getattr(monitor, "load_state_dict", None)):
        monitor.load_state_dict(state)
        return
    from collections import deque

    from medrl.train.monitor import Alert

    window = max(monitor.config.window, 2)
    monitor.history = {k: deque(v, maxlen=window) for k, v in state["history"].items()}
    monitor.series = {k: [tuple(p) for p in v] for k, v in state["series"].items()}
    monitor.alerts = [Alert(**a) for a in state["alerts"]]
    monitor.warned = set(state["warned"])
    monitor.stop_requested = False  # a resumed run continues; the alert stays recorded
    monitor._over = dict(state.get("over", {}))
    monitor._zero_run = int(state.get("zero_run", 0))
    monitor.seconds, monitor.steps = float(state["seconds"]), int(state["steps"])
    monitor.config.enabled = bool(state.get("enabled", True)) and monitor.config.enabled


class RunLedgerCallback(TrainerCallback):
    """Make a checkpoint a complete account of the run up to its step.

    On every save it writes ``checkpoint-N/medrl_ledger.json``: the byte length of each JSON-lines
    log of the run folder (``metrics.jsonl``, ``credit.jsonl``, ``hacking.jsonl``,
    ``reward_samples.jsonl``), the judge-cost totals and per-step rows (so the budget counts what
    the whole run spent), the monitor's history and the judge breaker's count. On a resumed start
    it cuts every log back to that length (rows of steps after the checkpoint - logged before a
    kill - would otherwise be written twice) and restores the state; on a fresh start (step 0) it
    empties the logs a previous, checkpoint-less attempt left. Main process only for files.
    """

    def __init__(self, outcome: RunOutcome | None = None):
        self.outcome = outcome or RunOutcome()
        self.trainer: Any = None
        self.resumed_from: str | None = None

    def bind_trainer(self, trainer: Any) -> None:
        self.trainer = trainer

    # what carries state -----------------------------------------------------------------
    def _stateful(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        t = self.trainer
        if t is None:
            return out
        for cb in t.callback_handler.callbacks:
            key = getattr(cb, "ledger_key", None)
            if key and callable(getattr(cb, "state_dict", None)):
                out[key] = cb
        return out

    #: :func:`medrl.train.checkpoints.committed_checkpoint` writes this callback's ledger as the commit
    writes_ledger = True

    def ledger(self, output_dir: str | os.PathLike, step: int) -> dict:
        from medrl.judges.cost import SPEND_FILE

        run = Path(output_dir)
        # the judge's spend journal is never cut back (money spent stays spent): not a log here
        logs = {p.name: p.stat().st_size for p in sorted(run.glob("*.jsonl")) if p.is_file() and p.name != SPEND_FILE}
        state: dict[str, Any] = {"step": int(step), "logs": logs}
        for key, cb in self._stateful().items():
            state[key] = cb.state_dict()
        monitor = getattr(self.trainer, "_monitor", None)
        if monitor is not None:
            state["monitor"] = _monitor_state(monitor)
        return state

    # hooks ---------------------------------------------------------------------------------
    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        ckpt = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if not ckpt.is_dir() or (ckpt / LEDGER_FILE).exists() or (ckpt / SAVING_MARK).exists():
            return  # committed with its ledger already (MedGRPOTrainer), or a save that did not finish
        from medrl.train.checkpoints import write_json_atomic

        write_json_atomic(ckpt / LEDGER_FILE, self.ledger(args.output_dir, state.global_step))

    def on_train_begin(self, args, state, control, **kwargs):
        self.outcome.started = True
        if self.trainer is None:
            log.warning("RunLedgerCallback was not bound to its trainer; logs are not truncated on resume")
            return
        run = Path(args.output_dir)
        step = int(state.global_step or 0)
        if step == 0:
            if state.is_world_process_zero:
                for name in (*RUN_LOGS, *RUN_SUMMARIES):
                    p = run / name
                    if p.is_file():
                        p.unlink()
            return
        ckpt = run / f"checkpoint-{step}"
        path = ckpt / LEDGER_FILE
        if not path.is_file():
            log.warning("%s has no %s (written by an older medrl): logs are appended as they are, and judge cost and "
                        "monitor state restart from zero", ckpt, LEDGER_FILE)
            return
        from medrl.train.checkpoints import ledger_problem

        try:
            ledger = json.loads(path.read_text())
        except ValueError as exc:
            ledger, why = None, f"not JSON ({exc})"
        else:
            why = ledger_problem(ledger, step)
        if why is not None:  # checked before the resume (checkpoint_problem); kept logs beat cut ones
            log.warning("%s: %s; logs are kept as they are, judge cost and monitor state restart from zero", path, why)
            return
        self.resumed_from = str(ckpt)
        if state.is_world_process_zero:
            if isinstance(ledger.get("logs"), dict):
                truncate_logs(run, ledger["logs"])
            else:  # a ledger that never recorded the logs must not cut them (nothing to cut them to)
                log.warning("%s records no log lengths: the logs are kept as they are (rows after step %d may "
                            "repeat)", path, step)
        for key, cb in self._stateful().items():
            if key in ledger:
                cb.load_state_dict(ledger[key])
        monitor = getattr(self.trainer, "_monitor", None)
        if monitor is not None and ledger.get("monitor"):
            _load_monitor_state(monitor, ledger["monitor"])

    def on_train_end(self, args, state, control, **kwargs):
        t = self.trainer
        if t is None:
            return
        cost = getattr(t, "_judge_cost", None)
        if cost is not None and getattr(cost, "stopped_at", None) == state.global_step:
            self.outcome.stop("budget", f"the judge budget {cost.budget} was spent at step {state.global_step}",
                              state.global_step)
        monitor = getattr(t, "_monitor", None)
        if monitor is not None and monitor.stop_requested:
            last = next((a for a in reversed(monitor.alerts) if a.kind == "hacking"), None)
            what = f" ({last.signal}: {last.message})" if last is not None else ""
            self.outcome.stop("monitor", f"the reward-hacking monitor stopped the run at step {state.global_step}{what}",
                              state.global_step)


def truncate_logs(run: str | os.PathLike, lengths: dict[str, int]) -> list[str]:
    """Cut each JSON-lines log of ``run`` to the byte length a checkpoint recorded (a log the
    checkpoint did not know is removed); returns the names changed."""
    run = Path(run)
    changed = []
    for p in sorted(run.glob("*.jsonl")):
        if not p.is_file():
            continue
        want = lengths.get(p.name)
        if want is None:
            if p.name in RUN_LOGS:
                p.unlink()
                changed.append(p.name)
            continue
        size = p.stat().st_size
        if size > want:
            with p.open("r+b") as fh:
                fh.truncate(int(want))
            changed.append(p.name)
        elif size < want:
            log.warning("%s is shorter (%d bytes) than at the checkpoint (%d bytes): rows were lost", p, size, want)
    if changed:
        log.info("resume: cut %s back to the checkpoint", ", ".join(changed))
    return changed


class InterruptCallback(TrainerCallback):
    """Turn a SIGINT/SIGTERM (recorded in ``outcome.signal`` by ``medrl train``'s handler) into a
    checkpoint and a stop at the next step boundary.

    Under a multi-process launch a signal may reach one process only (a scheduler signalling
    one rank, a Ctrl-C in one terminal); every process then stops at the same step: the flag is
    gathered over the processes at each step end, so none waits in a collective for a process
    that has stopped."""

    def __init__(self, outcome: RunOutcome):
        self.outcome = outcome
        self.trainer: Any = None

    def bind_trainer(self, trainer: Any) -> None:
        self.trainer = trainer

    def _signal_anywhere(self) -> int | None:
        """This process's signal, or under several processes the one any process received."""
        sig = self.outcome.signal
        acc = getattr(self.trainer, "accelerator", None)
        if acc is None or getattr(acc, "num_processes", 1) <= 1:
            return sig
        import torch

        flags = acc.gather(torch.tensor([int(sig or 0)], dtype=torch.long, device=acc.device))
        got = int(flags.max().item())
        return got or None

    def on_step_end(self, args, state, control, **kwargs):
        import signal as _signal

        sig = self._signal_anywhere()
        if sig is not None:
            self.outcome.signal = sig
            name = "sigterm" if sig == _signal.SIGTERM else "sigint"
            self.outcome.stop(name, f"{_signal.Signals(sig).name} received; stopped after step {state.global_step} "
                                    "with a checkpoint", state.global_step)
            control.should_save = True
            control.should_training_stop = True
        return control


class _LastJudgeError(logging.Handler):
    """Keeps the last warning the judges logged (their failures: timeouts, refusals, parse errors)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage()
        except Exception:  # noqa: BLE001 - a log handler never raises
            pass


#: Defaults of the judge circuit breaker (``medrl train --judge-max-unscored`` / ``--judge-max-unscored-steps``)
BREAKER_SHARE = 0.5
BREAKER_STEPS = 3


class JudgeBreakerCallback(TrainerCallback):
    """Stop a run whose judge has stopped answering: when more than ``max_share`` of a step's
    judge requests fail (the judge died, hangs, or replies in prose it cannot parse) for ``steps``
    consecutive steps, save a checkpoint and stop, naming the judge and its last logged error.

    It counts judge *requests*, not rollouts: early in an MRPO run most rollouts carry no answer
    tags and never reach the judge, so a dead judge leaves their rows scored by the other rewards
    and the unscorable share of the rows stays at or below one half while every request fails.
    A request is one question asked of the judge (sent, answered from its cache or merged with an
    identical one in flight; :class:`medrl.judges.base.JudgeStats`); it failed when it ended
    unscored. A step that asked the judge nothing says nothing about it and leaves the count as
    it was. Counts are summed over processes.

    Unscorable rollouts are excluded from the loss, so such a run would go on training on the few
    rows left (or on none) and write a final model that says nothing about the reward.
    ``max_share`` 1.0 turns the breaker off.
    """

    ledger_key = "judge_breaker"

    def __init__(self, outcome: RunOutcome | None = None, max_share: float = BREAKER_SHARE,
                 steps: int = BREAKER_STEPS):
        if not 0.0 <= float(max_share) <= 1.0:
            raise ValueError(f"judge breaker: the failed share must be between 0 and 1, got {max_share!r}")
        if int(steps) < 1:
            raise ValueError(f"judge breaker: the number of steps must be at least 1, got {steps!r}")
        self.outcome = outcome or RunOutcome()
        self.max_share, self.steps = float(max_share), int(steps)
        self.trainer: Any = None
        self.run = 0
        self._seen: tuple[int, int] | None = None
        self._errors = _LastJudgeError()

    def bind_trainer(self, trainer: Any) -> None:
        self.trainer = trainer

    def state_dict(self) -> dict:
        return {"run": self.run}

    def load_state_dict(self, state: dict) -> None:
        self.run = int(state.get("run", 0))

    def _judge(self) -> Any:
        return getattr(self.trainer, "judge", None) if self.trainer is not None else None

    def _counts(self) -> tuple[int, int]:
        """(requests asked, requests failed) by this process's judge so far."""
        from medrl.judges.cost import stats_snapshot

        s = stats_snapshot(self._judge())
        return s["calls"] + s["cache_hits"] + s["deduplicated"], s["failures"]

    def on_train_begin(self, args, state, control, **kwargs):
        logging.getLogger("medrl.judges").addHandler(self._errors)
        if self._judge() is not None:
            self._seen = self._counts()  # the preflight probe and set-up requests are not the run's

    def on_train_end(self, args, state, control, **kwargs):
        logging.getLogger("medrl.judges").removeHandler(self._errors)

    def observe(self, share: float | None, judge_name: str | None, step: int, control,
                asked: int | None = None) -> None:
        """One step's failed share of judge requests (None: the step asked the judge nothing, the
        count stays); stops training through ``control`` when the breaker trips."""
        if share is None:
            return
        self.run = self.run + 1 if share > self.max_share else 0
        if self.run >= self.steps and self.max_share < 1.0:
            err = self._errors.last or "no error was logged"
            of = f" ({share:.0%} of {asked} requests)" if asked is not None else f" ({share:.0%})"
            self.outcome.stop("judge", f"judge {judge_name or '?'}: more than {self.max_share:.0%} of its requests "
                                       f"failed for {self.run} consecutive steps (last step{of}); last error: {err}",
                              step)
            control.should_save = True
            control.should_training_stop = True

    def on_step_end(self, args, state, control, **kwargs):
        judge = self._judge()
        if judge is None or getattr(judge, "stats", None) is None:
            return control
        now = self._counts()
        before = self._seen if self._seen is not None else now
        self._seen = now
        asked, failed = now[0] - before[0], now[1] - before[1]
        acc = getattr(self.trainer, "accelerator", None)
        if acc is not None and getattr(acc, "num_processes", 1) > 1:
            import torch

            both = acc.reduce(torch.tensor([asked, failed], dtype=torch.float64, device=acc.device), reduction="sum")
            asked, failed = (int(x) for x in both.tolist())
        asked = max(asked, failed)  # a request that failed before it was sent (an unreadable image)
        share = failed / asked if asked else None
        self.observe(share, getattr(judge, "name", None), state.global_step, control, asked=asked)
        return control
