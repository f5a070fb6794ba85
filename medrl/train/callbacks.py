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
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Iterable

from transformers import TrainerCallback

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
        from medrl.jsonl import append_jsonl

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
