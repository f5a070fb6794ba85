"""CAPO: perception-aware rewards from rollouts on corrupted images.

Paper: CAPO (Jiang et al. 2025, arXiv 2506.12849), Sec. 3, Eq. 1-6, Sec. 4.3 Tables 5-8.

Read top to bottom:

1. **Config** (:class:`CAPOConfig`, recipe key ``algorithm.capo``; absent = off): how the image
   is corrupted for the perception reward (kind, diffusion step t, seed) and the reward values
   of Eq. 1-3 (r_dar, r_cdr, r_pcr, tau), which reach the rewards' options from here (R_DAR's
   value once, for both rewards that use it).
2. **Rewards** (registry names), summed with weight 1 each = Eq. 4:

   - ``capo_accuracy``: R_DAR = r_dar (0.8) if the answer is correct, else 0 (Eq. 2);
   - ``capo_consistency``: R_CDR = r_cdr (0.1) if a judge finds the reasoning leads to the answer (Eq. 1);
   - ``capo_perception``: R_PCR = r_pcr (0.1) if R_DAR(o_i) - R_DAR(o~_i) > tau (0.3) (Eq. 3), o~_i
     the paired rollout on the corrupted image.

   The formulas are in :mod:`medrl.rewards.capo` and :mod:`medrl.rewards.judged`; correctness is
   the trainer's one decision per rollout (``batch.correct`` / ``batch.corrupted_correct``).
   The advantage is TRL's group advantage (Eq. 5); the KL loss Eq. 6.
3. **Hook** ``before_generation``: every prompt's image is corrupted
   (:func:`medrl.data.corruption.corrupt_image`) and rolled out through the run's own generation
   backend (HF generate or vLLM, :meth:`medrl.methods.StepContext.generate`) without gradient.
   Pairing: the i-th rollout o_i of a prompt is paired with the i-th corrupted rollout o~_i of the
   same prompt (both groups have G members in the same order; every row of a group sees the same
   corrupted image, seeded by record id, ``seed`` and the step). The texts go to ``batch.corrupted_completions`` (the reward reads the
   column of that name); they are never part of the training batch.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import Field, NonNegativeInt

from medrl.methods.base import METHODS, MedBatch, Method, MethodConfig, reward_option
from medrl.methods.context import StepContext
from medrl.rewards.capo import make_capo_accuracy, make_capo_perception
from medrl.rewards.judged import make_capo_consistency


class CAPOConfig(MethodConfig):
    """``algorithm.capo``: the corrupted-image rollouts of R_PCR (CAPO Eq. 3)."""

    kind: Literal["diffusion", "mask", "crop"] = Field("diffusion", description=(
        "CAPO Tables 5-6: how the image is corrupted - forward-diffusion noise (the paper's default), "
        "a random mask, or a crop"))
    t: NonNegativeInt = Field(100, description=(
        "CAPO Table 5 (Sec. 4.3): forward-diffusion step of a standard DDPM schedule"))
    seed: int = Field(0, description="seed of the corruption (with the record id and the step)")
    r_dar: float = reward_option(make_capo_accuracy, "r_dar", ge=0.0, description=(
        "CAPO Eq. 2: R_DAR of a correct answer (capo_accuracy; also the R_DAR values compared in Eq. 3, "
        "capo_perception)"))
    r_cdr: float = reward_option(make_capo_consistency, "r_cdr", ge=0.0, description=(
        "CAPO Eq. 1: R_CDR when the judge finds the reasoning leads to the answer (capo_consistency)"))
    r_pcr: float = reward_option(make_capo_perception, "r_pcr", ge=0.0, description=(
        "CAPO Eq. 3: R_PCR paid when the answer on the clean image beats the corrupted one (capo_perception)"))
    tau: float = reward_option(make_capo_perception, "tau", description=(
        "CAPO Eq. 3: R_PCR pays when R_DAR(o) - R_DAR(o~) > tau (capo_perception; Table 8 varies it)"))


def stable_seed(*parts: Any) -> int:
    """A 32-bit seed from ``parts`` that is the same on every process and run."""
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:4], "little")


@METHODS.register("capo")
class CAPO(Method):
    """CAPO's corrupted-image rollouts for R_PCR; the rewards do the rest."""

    name = "capo"
    paper = "CAPO (arXiv 2506.12849), Sec. 3, Eq. 1-6"
    Config = CAPOConfig
    section = "capo"
    fills = ("corrupted_completions",)
    rewards = {"capo_accuracy": {"r_dar": "r_dar"}, "capo_consistency": {"r_cdr": "r_cdr"},
               "capo_perception": {"r_dar": "r_dar", "r_pcr": "r_pcr", "tau": "tau"}}

    def before_generation(self, ctx: StepContext, batch: MedBatch) -> None:
        """Roll every prompt out once more on a corrupted image (CAPO Eq. 3, o~_i)."""
        from medrl.data.corruption import corrupt_image

        cfg, inputs = self.config, batch.inputs
        key = "images" if "images" in inputs[0] else "image"
        corrupted = []
        for x in inputs:
            imgs = x.get(key)
            imgs = list(imgs) if isinstance(imgs, (list, tuple)) else ([imgs] if imgs is not None else [])
            if not imgs:
                raise ValueError(f"CAPO needs an image in every record; record {x.get('record_id')!r} has none")
            seed = stable_seed(x.get("record_id") or x.get("question"), cfg.seed, ctx.global_step)
            corrupted.append([corrupt_image(im, cfg.kind, int(cfg.t), seed + j) for j, im in enumerate(imgs)])
        out = ctx.generate([x["prompt"] for x in inputs], corrupted)
        batch.corrupted_completions = list(out.texts)
        if len(batch.corrupted_completions) != len(inputs):
            raise RuntimeError(f"CAPO: {len(batch.corrupted_completions)} corrupted rollouts for {len(inputs)} rows")
        ids = out.token_ids
        ctx.log("capo/corrupted_mean_length", sum(len(i) for i in ids) / max(len(ids), 1))


__all__ = ["CAPO", "CAPOConfig", "stable_seed"]
