"""A clamped KL term inside TRL's loss (EasyR1's ``low_var_kl``): an option a method turns on.

Per token, d = log pi_ref - log pi_theta clamped to [-20, 20], k3 = exp(d) - d - 1 clamped to
[-bound, bound] (EasyR1 / verl ``compute_kl`` with ``kl_penalty: low_var_kl``: bound 10),
averaged with the loss's own token averaging and added as ``beta x kl_loss``. TRL computes the
same k3 without the clamps and has no option for them. A method turns it on
(:class:`medrl.methods.base.TrainerOptions` ``kl_clamp``; the method's file says which paper
trains this way), or a recipe sets ``grpo.kl_clamp`` itself.

How it is done without copying TRL's loss: :func:`compute_loss_with_clamped_kl` runs TRL's
``_compute_loss`` with ``beta`` set to 0 for the call (so TRL adds no KL of its own), catches the
policy's per-token log-probabilities TRL computes on the way, and adds ``beta`` times
:func:`clamped_k3` aggregated by :func:`aggregate` - the same mask and the same normaliser as the
run's ``loss_type`` uses for its policy term. The reference log-probabilities are TRL's own
(``inputs["ref_per_token_logps"]``: ``beta`` stays non-zero outside the call, so TRL keeps its
reference model). The value is logged under TRL's ``kl`` key, the masked mean over every token of
every process, as TRL logs its KL.

``kl_clamp`` is a field of :class:`GRPOConfig`, TRL's config with this one field added (the
recipe's ``grpo`` section is built into it, :func:`medrl.train.recipes.build_grpo_config`);
``None`` (default) leaves TRL's loss untouched. The trainer keeps the bound it uses in
``medrl_kl_clamp`` (the config's, or the one a method turns on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import trl

#: EasyR1 clamps the log-ratio before the exponential (numerical safety: no inf, hence no NaN gradient).
LOG_RATIO_BOUND = 20.0


@dataclass
class GRPOConfig(trl.GRPOConfig):
    """``trl.GRPOConfig`` plus ``kl_clamp`` (see the module docstring)."""

    kl_clamp: float | None = field(default=None, metadata={
        "help": "Clamp the per-token k3 KL term to [-kl_clamp, kl_clamp] (EasyR1 low_var_kl: 10.0; MediX-R1 "
                "App. A.8). None: TRL's unclamped k3."})

    def __post_init__(self):
        super().__post_init__()
        check_kl_clamp(self.kl_clamp, self)


def check_kl_clamp(bound: Any, args: Any) -> None:
    """Refuse a bound that is not a positive number, or one with ``args.use_bias_correction_kl``
    (TRL's k3 x ratio is another estimator than the plain clamped k3). None passes."""
    if bound is None:
        return
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not float(bound) > 0:
        raise ValueError(f"kl_clamp must be a positive number (EasyR1: 10.0), got {bound!r}")
    if getattr(args, "use_bias_correction_kl", False):
        raise ValueError("kl_clamp is EasyR1's plain clamped k3; it cannot be combined with "
                         "use_bias_correction_kl: true")


def clamped_k3(per_token_logps: torch.Tensor, ref_per_token_logps: torch.Tensor, bound: float) -> torch.Tensor:
    """Per-token clamp(exp(d) - d - 1, -bound, bound) with d = clamp(ref - logp, -20, 20)."""
    d = (ref_per_token_logps.float() - per_token_logps.float()).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    return (torch.exp(d) - d - 1).clamp(min=-bound, max=bound)


def aggregate(per_token: torch.Tensor, mask: torch.Tensor, loss_type: str, *, accumulation: float,
              max_completion_length: int | None = None, num_items_in_batch: torch.Tensor | None = None,
              num_processes: int = 1, steps_per_generation: int = 1, train: bool = True) -> torch.Tensor:
    """A per-token term reduced as TRL 1.16 reduces its policy term for ``loss_type``: the
    per-sequence mean then the batch mean (grpo, sapo), the mean over tokens (bnpo), the sum over
    B x max_completion_length (dr_grpo), the per-sequence sum then the mean (luspo), each divided
    by the accumulation steps in training; or the sum over the generation batch's token count
    (cispo, dapo, vespo)."""
    x = per_token * mask
    acc = accumulation if train else 1.0
    if loss_type in ("grpo", "sapo"):
        return (x.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / acc
    if loss_type == "bnpo":
        return x.sum() / mask.sum().clamp(min=1.0) / acc
    if loss_type == "dr_grpo":
        return x.sum() / (x.size(0) * max_completion_length) / acc
    if loss_type == "luspo":
        return x.sum(-1).mean() / acc
    if loss_type in ("cispo", "dapo", "vespo"):
        normaliser = num_items_in_batch.clamp(min=1.0) / num_processes
        if train:
            normaliser = normaliser * accumulation / steps_per_generation
        return x.sum() / normaliser
    raise ValueError(f"kl_clamp: unknown loss_type {loss_type!r}")


def compute_loss_with_clamped_kl(trainer: Any, model: Any, inputs: dict, compute: Callable) -> torch.Tensor:
    """``compute(model, inputs)`` (TRL's ``_compute_loss``) with ``beta`` 0, plus ``beta`` x the
    clamped k3 term; ``compute`` unchanged when the trainer's bound (``trainer.medrl_kl_clamp``,
    else ``trainer.args.kl_clamp``) is None or beta is 0."""
    bound = getattr(trainer, "medrl_kl_clamp", getattr(trainer.args, "kl_clamp", None))
    beta = trainer.beta
    if bound is None or beta == 0.0:
        return compute(model, inputs)
    caught: list[torch.Tensor] = []
    inner = trainer._get_per_token_logps_and_entropies

    def catch(m, *args, **kwargs):
        out = inner(m, *args, **kwargs)
        if m is model and not caught:
            caught.append(out[0])
        return out

    trainer.beta = 0.0
    trainer._get_per_token_logps_and_entropies = catch
    try:
        loss = compute(model, inputs)
    finally:
        trainer.beta = beta
        del trainer._get_per_token_logps_and_entropies  # the class's method again
    mask = inputs["completion_mask"]
    if "tool_mask" in inputs:
        mask = mask * inputs["tool_mask"]
    kl = clamped_k3(caught[0], inputs["ref_per_token_logps"], float(bound))
    train = trainer.model.training
    loss = loss + beta * aggregate(
        kl, mask, trainer.loss_type, accumulation=trainer.current_gradient_accumulation_steps if train else 1,
        max_completion_length=trainer.max_completion_length, num_items_in_batch=inputs.get("num_items_in_batch"),
        num_processes=trainer.accelerator.num_processes, steps_per_generation=trainer.args.steps_per_generation,
        train=train).to(loss.dtype)
    totals = trainer.accelerator.reduce(torch.stack([(kl.detach() * mask).sum(), mask.sum().float()]), reduction="sum")
    trainer._metrics["train" if train else "eval"]["kl"].append((totals[0] / totals[1].clamp(min=1.0)).item())
    return loss


__all__ = ["GRPOConfig", "LOG_RATIO_BOUND", "aggregate", "check_kl_clamp", "clamped_k3", "compute_loss_with_clamped_kl"]
