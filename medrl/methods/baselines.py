"""The baselines: GRPO and its loss variants, each a few TRL options.

None of them needs a hook: TRL's ``GRPOTrainer`` already implements them. Each config below
holds the TRL :class:`trl.GRPOConfig` fields that make the variant, with the paper and equation;
the recipes (``medrl/recipes/<name>.yaml``, ``grpo:`` section) set the same values, and
:meth:`Baseline.grpo_options` gives them as a mapping.

- ``grpo``: GRPO (Shao et al. 2024, arXiv 2402.03300), Eq. 3-4: group-normalised sequence
  advantage, per-sequence token mean, k3 KL.
- ``gdpo``: GDPO (arXiv 2601.05242): each reward normalised over the group before summing
  (TRL ``multi_objective_aggregation="normalize_then_sum"``); the estimator is also registered
  as ``gdpo`` in :data:`medrl.advantages.ADVANTAGES`.
- ``dapo``: DAPO (Yu et al. 2025, arXiv 2503.14476): token-level loss (Sec. 3.3), clip-higher
  0.2/0.28 (Sec. 3.1), no KL, overlong filtering, dynamic sampling (Sec. 3.2,
  :mod:`medrl.train.dynamic_sampling`).
- ``dr_grpo``: Dr. GRPO (Liu et al. 2025, arXiv 2503.20783): no std scaling, constant normaliser.
- ``gspo``: GSPO (Zheng et al. 2025, arXiv 2507.18071): one length-normalised ratio per sequence,
  clip range 3e-4 / 4e-4, no KL.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from medrl.methods.base import METHODS, Method, MethodConfig


class GRPOBaselineConfig(MethodConfig):
    loss_type: str = Field("grpo", description="GRPO Eq. 3: 1/|o_i| per-sequence token mean, then mean over G")
    scale_rewards: Literal["group", "batch", "none"] = Field("group", description="GRPO: (R - mean) / std per group")
    beta: float = Field(0.04, ge=0.0, description="GRPO Eq. 4: KL coefficient (k3 estimator)")


class GDPOConfig(GRPOBaselineConfig):
    multi_objective_aggregation: str = Field("normalize_then_sum", description=(
        "GDPO (arXiv 2601.05242): normalise each reward over the group, then sum"))


class DAPOConfig(MethodConfig):
    loss_type: str = Field("dapo", description="DAPO Sec. 3.3: token-level policy-gradient loss")
    epsilon: float = Field(0.2, gt=0.0, description="DAPO Sec. 3.1 clip-higher: eps_low")
    epsilon_high: float = Field(0.28, gt=0.0, description="DAPO Sec. 3.1 clip-higher: eps_high")
    beta: float = Field(0.0, ge=0.0, description="DAPO removes the KL term")
    mask_truncated_completions: bool = Field(True, description="DAPO Sec. 3.4: overlong filtering")


class DrGRPOConfig(MethodConfig):
    loss_type: str = Field("dr_grpo", description="Dr. GRPO: sum over tokens / (G * max_completion_length)")
    scale_rewards: Literal["group", "batch", "none"] = Field("none", description="Dr. GRPO: no division by the std")


class GSPOConfig(MethodConfig):
    importance_sampling_level: Literal["token", "sequence"] = Field("sequence", description=(
        "GSPO Eq. 7: one length-normalised importance ratio per sequence"))
    epsilon: float = Field(3e-4, gt=0.0, description="GSPO: clip range (left)")
    epsilon_high: float = Field(4e-4, gt=0.0, description="GSPO: clip range (right)")
    beta: float = Field(0.0, ge=0.0, description="GSPO: no KL term")


class Baseline(Method):
    """A GRPO variant made of TRL options only."""

    def grpo_options(self) -> dict[str, Any]:
        """The TRL ``GRPOConfig`` fields of this variant."""
        return self.config.model_dump()


def _baseline(name: str, config: type[MethodConfig], paper: str) -> type[Baseline]:
    cls = type(f"{name.upper()}Baseline", (Baseline,), {"name": name, "Config": config, "paper": paper,
                                                        "__doc__": f"{paper}: TRL options only."})
    return METHODS.register(name)(cls)


GRPO = _baseline("grpo", GRPOBaselineConfig, "GRPO (arXiv 2402.03300)")
GDPO = _baseline("gdpo", GDPOConfig, "GDPO (arXiv 2601.05242)")
DAPO = _baseline("dapo", DAPOConfig, "DAPO (arXiv 2503.14476)")
DR_GRPO = _baseline("dr_grpo", DrGRPOConfig, "Dr. GRPO (arXiv 2503.20783)")
GSPO = _baseline("gspo", GSPOConfig, "GSPO (arXiv 2507.18071)")

__all__ = ["Baseline", "DAPO", "DAPOConfig", "DR_GRPO", "DrGRPOConfig", "GDPO", "GDPOConfig", "GRPO",
           "GRPOBaselineConfig", "GSPO", "GSPOConfig"]
