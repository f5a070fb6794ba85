"""The controls every RL comparison of the effects harness stands beside.

- ``coin_flip``: medrl's GRPO (recipe ``grpo``, same config, prompts, seed and budget as the GRPO
  arm) whose only reward is a fair coin per rollout (:func:`coin_flip_reward`). It carries no
  information about the answer, so whatever it changes is what the optimizer's drift alone
  changes: the noise floor. An arm that learns must beat it, not only the warm-up model (Adam
  moves every weight by about one learning rate a step whatever the signal).
- ``trl``: plain :class:`trl.GRPOTrainer` (no medrl trainer) with the GRPO arm's config and
  prompts and the exact oracle's answer verdict as its only reward
  (:func:`medrl.effects.leaky.leak_reward` with ``"oracle"``: 1 when the oracle calls the parsed
  answer correct, else 0). The trainer control: where medrl's trainer is given the same reward it
  must give the same numbers (:func:`control_run` with ``trainer="medrl"``; tested on a few steps).
  The runner gives the plain trainer :func:`medrl.train.speed.speed_up_step`, the step speed-ups
  medrl's trainer installs (each image encoded once, completion-only scoring): they compute TRL's
  numbers, and without them the scoring's summation order differs in the last bits.

The warm-up model, evaluated like every arm, is the third control.
"""

from __future__ import annotations

from typing import Any, Callable

#: the controls the harness can run (EffectsConfig.controls)
CONTROLS = ("coin_flip", "trl")
#: the reward each control pays, by import path (a custom reward of the recipe)
COIN_FLIP_REWARD = "medrl.effects.controls:coin_flip_reward"
ORACLE_VERDICT_REWARD = "medrl.effects.leaky:leak_reward"
#: the recipe every control trains with (its rewards replaced)
CONTROL_RECIPE = "grpo"


def coin_flip_reward(seed: int = 0, p: float = 0.5) -> Callable[..., list[float]]:
    """A TRL reward paying 1.0 with probability ``p`` and 0.0 otherwise, whatever the rollout:
    independent draws from its own generator (``numpy.random.default_rng(seed)``), so a run
    repeats exactly and the policy's own sampling is left alone."""
    import numpy as np

    if not 0.0 <= p <= 1.0:
        raise ValueError(f"coin_flip_reward: p must lie in [0, 1], got {p}")
    rng = np.random.default_rng(int(seed))

    def reward(prompts=None, completions=(), **_: Any) -> list[float]:
        return [float(x) for x in (rng.random(len(completions)) < p)]

    reward.__name__ = "coin_flip"
    return reward


def control_rewards(name: str, seed: int) -> tuple[list[dict], dict]:
    """The recipe ``rewards`` list and ``algorithm.log_rewards`` of control ``name``."""
    if name == "coin_flip":
        spec = {"name": COIN_FLIP_REWARD, "weight": 1.0, "options": {"seed": int(seed)}}
    elif name == "trl":
        spec = {"name": ORACLE_VERDICT_REWARD, "weight": 1.0, "options": {"leak": "oracle", "seed": int(seed)}}
    else:
        raise ValueError(f"effects: unknown control {name!r}; choose among {list(CONTROLS)}")
    return [spec], {"answer": spec["name"], "process": None}


def control_run(recipe: Any, name: str, seed: int, *, trainer: str | None = None) -> Any:
    """Make ``recipe`` (the ``grpo`` recipe with the harness's overrides) control ``name``'s:
    its rewards replaced; returns the trainer class to train it with (``trl.GRPOTrainer`` for
    ``trl``, medrl's for ``coin_flip``; ``trainer="medrl"`` or ``"trl"`` chooses, for the test
    that both trainers give the same numbers on the same reward)."""
    rewards, log = control_rewards(name, seed)
    recipe.rewards = rewards
    recipe.algorithm["log_rewards"] = log
    which = trainer or ("trl" if name == "trl" else "medrl")
    if which == "trl":
        from trl import GRPOTrainer

        return GRPOTrainer
    if which != "medrl":
        raise ValueError(f"control_run: trainer must be 'medrl' or 'trl', got {trainer!r}")
    from medrl.train.trainer import MedGRPOTrainer

    return MedGRPOTrainer


__all__ = ["CONTROLS", "CONTROL_RECIPE", "coin_flip_reward", "control_rewards", "control_run"]
