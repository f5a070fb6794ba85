"""MediX-R1: a composite reward of format, judged correctness, embedding and modality.

Paper: MediX-R1 (arXiv 2602.23363), Sec. 2.1-2.3, App. A.8.

Read top to bottom:

1. **Config** (:class:`MediXR1Config`, recipe key ``algorithm.medix_r1``): the embedding
   reward's threshold, which reaches ``medix_embed``'s options from here (the weights of Sec. 2.3
   are the recipe's ``rewards[*].weight``, ``medrl/recipes/medix_r1.yaml``), and the three parts of
   the training machinery MediX-R1's training uses beyond TRL's defaults, each off unless set:

   - ``kl_clamp`` (App. A.8): MediX-R1 trains with EasyR1's ``kl_penalty: low_var_kl``
     (kl_coef 0.01): per token d = log pi_ref - log pi_theta clamped to [-20, 20], k3 =
     exp(d) - d - 1 clamped to [-10, 10] (``verl/trainer/core_algos.py`` ``compute_kl`` of the
     released training code), averaged as the loss averages its policy term. TRL computes the same
     k3 without the clamps; the trainer adds the clamped term in TRL's place
     (:mod:`medrl.train.kl_clamp`). The paper's value: 10.0, with ``grpo.beta: 0.01`` and
     ``use_bias_correction_kl: false`` (the plain k3 form).
   - ``mean_band`` (Sec. 4, ablation "DAPO"; trained with EasyR1, whose online filter keeps a
     prompt group when ``filter_low < mean < filter_high`` of the overall reward, 0.01 and 0.99):
     dynamic sampling (:mod:`medrl.train.dynamic_sampling`) keeps the groups whose mean weighted
     total reward lies strictly inside the band, instead of DAPO's "rewards not all equal".
     Setting it turns dynamic sampling on (``algorithm.dynamic_sampling`` may still set
     ``max_rounds``). With a band the band alone decides, as in EasyR1: a group whose rollouts all
     score 0.5 lies inside (0.01, 0.99) and is kept (it carries advantage 0).
   - ``best_checkpoint`` (Table 4 compares the model "before reward hacking" with the last one):
     keep the checkpoint with the best held-out score of this metric (e.g.
     ``monitor/probe_accuracy``, the monitor's greedy accuracy on held-out records, with
     ``monitor.probe_every`` set) and copy it to ``<out>/best``
     (:mod:`medrl.train.best_checkpoint`).

   The method turns them on through :meth:`MediXR1.trainer_options`; a recipe that also sets
   the generic key (``grpo.kl_clamp``, ``algorithm.dynamic_sampling.mean_band``,
   ``grpo.metric_for_best_model``) to another value is refused.
2. **Rewards** (registry names): ``format`` (R_format, ``<think>``/``<answer>`` tags),
   ``medix_llm`` (R_llm, a strict YES/NO judge on the shared correctness decision),
   ``medix_embed`` (R_embed, cosine >= 0.8), ``modality`` (R_modality, the modality tag before
   ``<think>``). Formulas: :mod:`medrl.rewards.medix`, :mod:`medrl.rewards.format`,
   :mod:`medrl.rewards.modality`.
3. **Hooks**: none. The advantage is TRL's standardised group advantage (Sec. 2.1); App. A.8's
   clip range (0.2 / 0.3) and token-mean loss are TRL options (``grpo.epsilon``,
   ``grpo.epsilon_high``, ``grpo.loss_type: dapo``).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from medrl.methods.base import METHODS, Method, MethodConfig, TrainerOptions, reward_option
from medrl.rewards.medix import make_medix_embed


class MediXR1Config(MethodConfig):
    """``algorithm.medix_r1``: MediX-R1's reward settings; defaults taken from the reward
    factories. The weights of Sec. 2.3 (0.10 format, 0.5175 R_llm, 0.3375 R_embed, 0.045
    modality) are the recipe's ``rewards[*].weight``."""

    embed_threshold: float = reward_option(make_medix_embed, "threshold", ge=-1.0, le=1.0, description=(
        "MediX-R1 Sec. 2.3: R_embed pays when the cosine of answer and reference reaches this"))
    kl_clamp: float | None = Field(None, gt=0.0, description=(
        "MediX-R1 App. A.8 (EasyR1 low_var_kl): clamp the per-token k3 KL term to [-kl_clamp, kl_clamp] "
        "(the paper: 10.0, with grpo.beta 0.01 and use_bias_correction_kl false); None: TRL's unclamped k3"))
    mean_band: tuple[float, float] | None = Field(None, description=(
        "MediX-R1 Sec. 4 DAPO ablation (EasyR1's online filter): turn dynamic sampling on and keep the prompt "
        "groups whose mean weighted reward lies strictly inside (low, high) (the paper: [0.01, 0.99]); None: off"))
    best_checkpoint: str | None = Field(None, description=(
        "MediX-R1 Table 4 (the model before reward hacking): keep the checkpoint with the best value of this "
        "held-out metric in <out>/best (e.g. monitor/probe_accuracy with monitor.probe_every set); None: off"))

    @field_validator("mean_band")
    @classmethod
    def _band(cls, band: tuple[float, float] | None) -> tuple[float, float] | None:
        if band is not None and not band[0] < band[1]:
            raise ValueError(f"mean_band must be [low, high] with low < high, got {list(band)}")
        return band


@METHODS.register("medix_r1")
class MediXR1(Method):
    """MediX-R1: rewards and three training options; no trainer hook."""

    name = "medix_r1"
    paper = "MediX-R1 (arXiv 2602.23363), Sec. 2.3"
    Config = MediXR1Config
    section = "medix_r1"
    rewards = {"format": {}, "medix_llm": {}, "medix_embed": {"threshold": "embed_threshold"}, "modality": {}}
    activated_by = ("medix_llm", "medix_embed")

    def trainer_options(self) -> TrainerOptions:
        """The clamped KL, the dynamic-sampling band and best-checkpoint selection, as the config
        sets them (see the module docstring)."""
        cfg = self.config
        return TrainerOptions(kl_clamp=cfg.kl_clamp, mean_band=cfg.mean_band, best_checkpoint=cfg.best_checkpoint)


__all__ = ["MediXR1", "MediXR1Config"]
