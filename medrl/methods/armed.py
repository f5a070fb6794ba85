"""ARMed: adaptive semantic reward, then medical-thinking knowledge injection.

Paper: ARMed (Liu et al. 2025, arXiv 2508.12957), Eq. 3-14, Implementation details,
"Medical Thinking Knowledge Injection".

Read top to bottom:

1. **Config** (:class:`ARMedConfig`, recipe key ``algorithm.armed``): the reward's
   coefficients (Eq. 3, 4, 14) and the constants of Adapt() (Table 3). They reach the options
   of the ARMed rewards of the run from here; their defaults are written once, in
   :mod:`medrl.rewards.armed`.
2. **Rewards** (registry names): ``armed`` = Eq. 14, (0.4 R_c + 0.4 R_as + 0.2 R_f) / 1.0, with
   the textual reward R_c (Eq. 3, lambda1) and the adaptive semantic reward R_as (Eq. 4 + 13,
   lambda2, thresholds adapted by Eq. 5-12); its parts are also registered alone
   (``armed_textual``, ``armed_semantic``, ``armed_adaptive_semantic``). Formulas:
   :mod:`medrl.rewards.armed`.
3. **Hooks**: ``state_dict`` / ``load_state_dict`` carry the adaptive thresholds (Eq. 5-12 state
   of every ARMed reward of the run, ``{"rewards": {reward name: thresholds}}``) into each
   checkpoint's ``method_state.json`` and back on resume; the trainer freezes them during
   evaluation (they are :class:`medrl.types.StatefulReward`). ``log`` writes each step's raw and
   adapted semantic rewards to ``<run>/reward_samples.jsonl`` (the input of ARMed Fig. 3,
   ``medrl analyze training``).
4. **Pipeline** (recipe ``stages``): RL (ARMed-I) -> knowledge injection -> SFT (ARMed-A) -> RL
   (ARMed-R), run by :func:`medrl.train.pipeline.run_recipe`.
"""

from __future__ import annotations

import os
from typing import Any

from medrl.methods.base import METHODS, MedBatch, Method, MethodConfig, reward_option
from medrl.rewards.armed import AdaptiveSemanticReward, AdaptiveThreshold, ArmedReward


class ARMedConfig(MethodConfig):
    """``algorithm.armed``: ARMed's reward coefficients and Adapt() constants (defaults from
    :mod:`medrl.rewards.armed`, where the paper's values are written)."""

    lambda1: float = reward_option(ArmedReward, "lambda1", ge=0.0, le=1.0, description=(
        "ARMed Eq. 3: R_c = lambda1 BLEU-1 + (1 - lambda1) ROUGE-1"))
    lambda2: float = reward_option(AdaptiveSemanticReward, "lambda2", ge=0.0, le=1.0, description=(
        "ARMed Eq. 4 / 13: R_s = lambda2 BERTScore + (1 - lambda2) cosine similarity"))
    gammas: tuple[float, float, float] = reward_option(ArmedReward, "gammas", description=(
        "ARMed Eq. 14: weights of R_c, R_as and R_f (normalised by their sum)"))
    rho: float = reward_option(AdaptiveThreshold, "rho", ge=0.0, description=(
        "ARMed Eq. 5 / Table 3: rewards above rho * T_t enter the history"))
    max_history: int = reward_option(AdaptiveThreshold, "max_history", ge=1, description=(
        "ARMed Eq. 6 / Table 3: L_max, rewards kept"))
    percentile: float = reward_option(AdaptiveThreshold, "percentile", ge=0.0, le=100.0, description=(
        "ARMed Eq. 7 / Table 3: the history percentile that is the target threshold (50 = the median)"))
    max_delta: float = reward_option(AdaptiveThreshold, "max_delta", ge=0.0, description=(
        "ARMed Eq. 8 / Table 3: largest threshold move per step"))
    t_min: float = reward_option(AdaptiveThreshold, "t_min", description="ARMed Eq. 9 / Table 3: lowest threshold")
    t_max: float = reward_option(AdaptiveThreshold, "t_max", lt=1.0, description=(
        "ARMed Eq. 9 / Table 3: highest threshold (below 1)"))
    eps: float = reward_option(AdaptiveThreshold, "eps", gt=0.0, description=(
        "ARMed Eq. 10-11 / Table 3: guards the division"))
    alpha_pos: float = reward_option(AdaptiveThreshold, "alpha_pos", gt=0.0, description=(
        "ARMed Eq. 12 / Table 3: tanh slope above the threshold"))
    alpha_neg: float = reward_option(AdaptiveThreshold, "alpha_neg", gt=0.0, description=(
        "ARMed Eq. 12 / Table 3: tanh slope below the threshold"))


#: Adapt() options, as the config fields of the same names
_ADAPT = {k: k for k in ("rho", "max_history", "percentile", "max_delta", "t_min", "t_max", "eps", "alpha_pos",
                         "alpha_neg")}


#: rewards whose adaptive thresholds ARMed Fig. 3 plots
ADAPTIVE_REWARDS = ("armed", "armed_adaptive_semantic")


@METHODS.register("armed")
class ARMed(Method):
    """ARMed's adaptive semantic reward: its thresholds checkpointed, per-step samples for Fig. 3."""

    name = "armed"
    paper = "ARMed (arXiv 2508.12957), Eq. 3-14"
    Config = ARMedConfig
    section = "armed"
    rewards = {"armed": {"lambda1": "lambda1", "lambda2": "lambda2", "gammas": "gammas", **_ADAPT},
               "armed_textual": {"lambda1": "lambda1"}, "armed_semantic": {"lambda2": "lambda2"},
               "armed_adaptive_semantic": {"lambda2": "lambda2", **_ADAPT}}
    activated_by = tuple(rewards)

    def setup(self, trainer: Any) -> None:
        self._adaptive = [fn for fn, name in zip(trainer.reward_funcs, trainer.reward_func_names)
                          if hasattr(getattr(fn, "semantic", fn), "last_adapted")]
        #: reward name -> ARMed reward object whose thresholds this method checkpoints
        self._stateful = {name: fn for fn, name in zip(trainer.reward_funcs, trainer.reward_func_names)
                          if isinstance(fn, (ArmedReward, AdaptiveSemanticReward))}

    def state_rewards(self) -> list:
        return list(getattr(self, "_stateful", {}).values())

    def state_dict(self) -> dict:
        """The adaptive thresholds (ARMed Eq. 5-12 state) of each ARMed reward of the run."""
        rewards = {name: fn.state_dict() for name, fn in getattr(self, "_stateful", {}).items()}
        return {"rewards": rewards} if rewards else {}

    def load_state_dict(self, state: dict) -> None:
        """Restore the thresholds; a reward of this run missing from ``state`` is an error
        (restarting its thresholds from scratch would silently change the reward)."""
        saved = state.get("rewards", {})
        missing = sorted(set(getattr(self, "_stateful", {})) - set(saved))
        if missing:
            raise KeyError(f"ARMed: the checkpoint has no thresholds for reward(s) {missing}; saved: {sorted(saved)}")
        for name, fn in self._stateful.items():
            fn.load_state_dict(saved[name])

    def log(self, trainer: Any, batch: MedBatch) -> None:
        """Append this step's raw and adapted semantic rewards to ``reward_samples.jsonl``
        (``{"step", "bertscore": [...], "bertscore_adaptive": [...], ...}``)."""
        if batch.mode != "train":
            return
        row: dict[str, Any] = {}
        for fn in self._adaptive:
            sem = getattr(fn, "semantic", fn)
            raw, adapted = getattr(sem, "last_raw", None), getattr(sem, "last_adapted", None)
            if not raw or not adapted:
                continue
            for k in raw:
                row[k] = [float(v) for v in raw[k] if v is not None]
                row[f"{k}_adaptive"] = [float(v) for v in adapted.get(k, []) if v is not None]
        if row and trainer.accelerator.is_main_process:
            from medrl.common.jsonl import append_jsonl

            row = {"step": int(trainer.state.global_step), **row}
            append_jsonl(os.path.join(trainer.args.output_dir, "reward_samples.jsonl"), [row], fsync=False)


__all__ = ["ADAPTIVE_REWARDS", "ARMed", "ARMedConfig"]
