"""MediX-R1: a composite reward of format, judged correctness, embedding and modality.

Paper: MediX-R1 (arXiv 2602.23363), Sec. 2.1-2.3, App. A.8.

Read top to bottom:

1. **Config** (:class:`MediXR1Config`, recipe key ``algorithm.medix_r1``): the embedding
   reward's threshold, which reaches ``medix_embed``'s options from here (the weights of Sec. 2.3
   are the recipe's ``rewards[*].weight``, ``medrl/recipes/medix_r1.yaml``).
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

from medrl.methods.base import METHODS, Method, MethodConfig, reward_option
from medrl.rewards.medix import make_medix_embed


class MediXR1Config(MethodConfig):
    """``algorithm.medix_r1``: MediX-R1's reward settings; defaults taken from the reward
    factories. The weights of Sec. 2.3 (0.10 format, 0.5175 R_llm, 0.3375 R_embed, 0.045
    modality) are the recipe's ``rewards[*].weight``."""

    embed_threshold: float = reward_option(make_medix_embed, "threshold", ge=-1.0, le=1.0, description=(
        "MediX-R1 Sec. 2.3: R_embed pays when the cosine of answer and reference reaches this"))


@METHODS.register("medix_r1")
class MediXR1(Method):
    """MediX-R1: rewards only; no trainer hook."""

    name = "medix_r1"
    paper = "MediX-R1 (arXiv 2602.23363), Sec. 2.3"
    Config = MediXR1Config
    section = "medix_r1"
    rewards = {"format": {}, "medix_llm": {}, "medix_embed": {"threshold": "embed_threshold"}, "modality": {}}
    activated_by = ("medix_llm", "medix_embed")


__all__ = ["MediXR1", "MediXR1Config"]
