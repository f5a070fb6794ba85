"""StepGRPO: step-wise reasoning rewards on pre-extracted key steps.

Paper: StepGRPO (arXiv 2503.12937), Sec. 3.2, Eq. 1-6.

Read top to bottom:

1. **Config** (:class:`StepGRPOConfig`, recipe key ``algorithm.stepgrpo``): alpha of StepRAR and
   the step count of StepRVR, which reach the two rewards' options from here (defaults from
   the reward factories).
2. **Rewards** (registry names): ``steprar`` (StepRAR, Eq. 2: the answer's correctness plus
   alpha times the share of the record's key steps the reasoning matches) and ``steprvr``
   (StepRVR, Eq. 3: a reasoning that is complete and logically ordered). Formulas:
   :mod:`medrl.rewards.stepgrpo`.
3. **Hooks**: none. StepRAR reads the trainer's one correctness decision (``batch.correct``);
   the advantage is TRL's group-mean baseline (Eq. 4).
4. **Pipeline** (recipe ``stages``): key-step extraction by the judge (Sec. 3.2.2) -> warm-up
   SFT (Eq. 1) -> RL, run by :func:`medrl.train.pipeline.run_recipe`.
"""

from __future__ import annotations

from pydantic import PositiveInt

from medrl.methods.base import METHODS, Method, MethodConfig, reward_option
from medrl.rewards.stepgrpo import make_steprar, make_steprvr


class StepGRPOConfig(MethodConfig):
    """``algorithm.stepgrpo``: StepGRPO's reward settings; defaults taken from the ``steprar`` /
    ``steprvr`` factories."""

    alpha: float = reward_option(make_steprar, "alpha", ge=0.0, description=(
        "StepGRPO Eq. 2: weight of the key-step match in StepRAR"))
    min_reasoning_steps: PositiveInt = reward_option(make_steprvr, "min_reasoning_steps", description=(
        "StepGRPO Eq. 3: steps a complete reasoning needs"))


@METHODS.register("stepgrpo")
class StepGRPO(Method):
    """StepGRPO: rewards and a key-step stage; no trainer hook."""

    name = "stepgrpo"
    paper = "StepGRPO (arXiv 2503.12937), Sec. 3.2"
    Config = StepGRPOConfig
    section = "stepgrpo"
    rewards = {"steprar": {"alpha": "alpha"}, "steprvr": {"min_reasoning_steps": "min_reasoning_steps"}}
    activated_by = tuple(rewards)


__all__ = ["StepGRPO", "StepGRPOConfig"]
