"""Advantage estimators as pure tensor functions, and the registry that names them.

Shapes: ``N`` = number of completions in the batch (``num_prompts * group_size``, completions
of one prompt contiguous, as TRL orders them), ``R`` = number of reward functions, ``B`` =
completions on this process, ``T`` = completion length in tokens (padded).

Unscorable rewards (a reward function returned ``None``) arrive as NaN, exactly as in TRL: they
are left out of means and standard deviations, and a completion whose reward is NaN gets
advantage 0 (it is never silently scored 0 or 1).

This module holds the generic estimators (:func:`grpo_advantages`, :func:`gdpo_advantages`) and
the helpers every estimator may use (:func:`options`, :func:`group_size`,
:func:`weighted_total`, :func:`float_tensor`). An estimator that belongs to one paper's method
lives in that method's file and registers itself from there (``@ADVANTAGES.register(name)``):
the first lookup imports every module of :mod:`medrl.methods` (the registry's ``"medrl.methods.*"``
entry), so :func:`get_advantage_fn` finds it without this module importing any method.
:data:`ADVANTAGES` names the estimators a recipe's ``algorithm.advantage`` may choose; every
registered estimator has the one signature of verl's ``register_adv_est`` estimators
(``verl/trainer/ppo/core_algos.py``)::

    estimator(*, rewards, mask, index, config=None, **inputs) -> Tensor  # (N,) or (N, T)

- ``rewards``: (N, R) sequence reward of each reward function per completion (NaN = none), or
  (N,) one reward, or (N, T) token rewards for an estimator that says it takes them;
- ``mask``: (N, T) completion mask (1 = a token the loss sees), or None;
- ``index``: (N,) group id of each completion (one prompt's completions share an id);
- ``config``: the estimator's options, a mapping or an object with attributes (the config of
  the method that provides the estimator, :attr:`medrl.methods.Method.advantage`); None =
  the defaults;
- ``inputs``: more named inputs, ignored by an estimator that does not read them. The trainer
  gives ``weights`` (R,), ``reward_names``, ``advantages`` (N,) (the group advantages TRL
  computed over every process), ``whole_groups`` (whether every group's rows are all among
  these rows) and whatever the run's methods add (:meth:`medrl.methods.Method.advantage_inputs`).

In training the rows are this process's: when a process holds fewer rows than a group, ``index``
and ``rewards`` cover part of a group (``whole_groups`` is False), so an estimator that computes
its own group baseline from them must refuse that case; ``advantages`` is computed over every
process and is always whole. An estimator that TRL itself computes (``grpo``, ``gdpo``: its
``trl_options`` name the TRL setting) keeps TRL's values, computed over every process. Any
registered name is accepted (``@ADVANTAGES.register("my_estimator")`` in a module the run
imports, e.g. a method's file), as verl accepts any name passed to ``register_adv_est``.

Names that moved to the method that owns them stay importable from here
(``from medrl.advantages import <name>``): :func:`__getattr__` finds a name among the public
names of the modules that registered an estimator.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from medrl.common.registry import Registry

#: estimators by name: this module's, and those a method's file registers (every module of
#: :mod:`medrl.methods` is imported on the first lookup)
ADVANTAGES = Registry("advantage", modules=["medrl.advantages", "medrl.methods.*"])


def get_advantage_fn(name: str) -> Callable[..., torch.Tensor]:
    """The estimator registered as ``name`` (``KeyError`` lists the known ones); after verl's
    ``get_adv_estimator_fn``."""
    return ADVANTAGES.get(name)


def __getattr__(name: str) -> Any:
    """A public name of a module that registered an estimator (its ``__all__``): an estimator's
    own formulas live in its method's file and stay importable from here."""
    import sys

    if name.startswith("__"):
        raise AttributeError(name)
    for fn in [ADVANTAGES.get(n) for n in ADVANTAGES.names()]:
        module = sys.modules.get(getattr(fn, "__module__", ""))
        if module is not None and module.__name__ != __name__ and name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


GRPO_SCALES = ("group", "batch", "none")


def _nanstd(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """NaN-ignoring *unbiased* (Bessel-corrected) standard deviation; NaN when fewer than two
    values. Same numbers as ``trl.trainer.utils.nanstd`` (TRL 1.16), which GRPOTrainer uses."""
    dims = dim if dim is not None else tuple(range(x.dim()))
    mean = torch.nanmean(x, dim=dims, keepdim=True)
    var = torch.nanmean((x - mean) ** 2, dim=dims, keepdim=True)
    count = (~torch.isnan(x)).sum(dim=dims, keepdim=True)
    corr = torch.where(count > 1, count / (count - 1), torch.full_like(var, float("nan")))
    std = torch.sqrt(var * corr)
    return std if keepdim else std.squeeze(dims)


def none_to_nan(x):
    """``x`` with every ``None`` of a (nested) list or tuple replaced by NaN."""
    if isinstance(x, (list, tuple)):
        return [float("nan") if v is None else none_to_nan(v) for v in x]
    return x


def float_tensor(x, name: str, ndim: int, want: str | None = None) -> torch.Tensor:
    """``x`` as a float tensor of ``ndim`` dims; ``None`` entries of a list become NaN. ValueError
    names the argument ``name`` and the shape wanted (``want``, default (N,) or (N, R))."""
    try:
        t = torch.as_tensor(none_to_nan(x))
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{name} must be numeric (a tensor or list of numbers): {exc}") from None
    if not torch.is_floating_point(t):
        t = t.to(torch.float32)
    if t.dim() != ndim:
        want = want or ("(N,)" if ndim == 1 else "(N, R)")
        raise ValueError(f"{name} must have shape {want}, got shape {tuple(t.shape)}")
    return t


def _check_groups(n: int, group_size: int, name: str) -> None:
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size must be a positive int, got {group_size!r}")
    if n % group_size:
        raise ValueError(
            f"{name} has {n} completions, not a multiple of group_size={group_size} "
            "(completions of one prompt must be contiguous groups)"
        )


def grpo_advantages(
    rewards, group_size: int, eps: float = 1e-4, scale: str = "group"
) -> torch.Tensor:
    """Group-relative advantages ``A_i = (R_i - mean_g(R)) / (std(R) + eps)``.

    The group-relative advantage of GRPO (DeepSeekMath, arXiv 2402.03300, Sec. 4.1.2), which
    the papers' methods take as their sequence advantage (each method's file cites its equation).

    Args:
        rewards: (N,) total reward per completion; NaN = unscorable.
        group_size: G, completions per prompt (N must be a multiple of G).
        eps: added to the standard deviation (not to the variance).
        scale: ``"group"`` divide by the std of the prompt's group (TRL default, the papers);
            ``"batch"`` divide by the std of the whole batch (mean still per group);
            ``"none"`` no division (Dr. GRPO).

    Returns:
        (N,) advantages; 0 where the reward is NaN.

    Conventions follow TRL 1.16 ``GRPOTrainer._generate_and_score_completions``
    (``multi_objective_aggregation="sum_then_normalize"``): the std is unbiased (Bessel's
    correction, ``trl.trainer.utils.nanstd``), ``eps`` is added to the std, NaN rewards are left
    out of mean/std and their advantage is set to 0, and with ``group_size == 1`` the group std
    is taken as 0 (so the advantage is 0).
    """
    r = float_tensor(rewards, "rewards", 1)
    if scale not in GRPO_SCALES:
        raise ValueError(f"scale must be one of {GRPO_SCALES}, got {scale!r}")
    _check_groups(r.numel(), group_size, "rewards")
    if r.numel() == 0:
        return r.clone()
    grouped = r.view(-1, group_size)
    mean = torch.nanmean(grouped, dim=1).repeat_interleave(group_size)
    adv = r - mean
    if scale == "group":
        std = (
            _nanstd(grouped, dim=1).repeat_interleave(group_size)
            if group_size > 1
            else torch.zeros_like(r)
        )
        adv = adv / (std + eps)
    elif scale == "batch":
        std = _nanstd(r).expand_as(r) if r.numel() > 1 else torch.zeros_like(r)
        adv = adv / (std + eps)
    return torch.nan_to_num(adv, nan=0.0)


def gdpo_advantages(rewards, weights, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """GDPO: group-normalise each reward on its own, weighted sum, then normalise over the batch.

    GDPO (arXiv 2601.05242):
    ``z_ik = (r_ik - mean_g(r_k)) / (std_g(r_k) + eps)``, ``s_i = sum_k w_k z_ik``,
    ``A_i = (s_i - mean_batch(s)) / (std_batch(s) + eps)``.

    Args:
        rewards: (N, R) reward of each of R reward functions per completion; NaN = unscorable.
        weights: (R,) reward weights.
        group_size: G, completions per prompt (N must be a multiple of G).
        eps: added to both standard deviations.

    Returns:
        (N,) advantages.

    Same computation as TRL 1.16 ``GRPOTrainer`` with ``multi_objective_aggregation=
    "normalize_then_sum"``: unbiased NaN-ignoring stds, ``eps`` on the std, a NaN z counts as 0
    in the weighted sum, a completion whose rewards are all NaN is left out of the batch
    statistics and gets advantage 0; with ``group_size == 1`` the group std is taken as 0.
    """
    r = float_tensor(rewards, "rewards", 2)
    w = torch.as_tensor(weights, dtype=r.dtype, device=r.device)
    if w.dim() != 1 or w.numel() != r.shape[1]:
        raise ValueError(
            f"weights must have shape (R,) = ({r.shape[1]},) to match rewards {tuple(r.shape)}, "
            f"got {tuple(w.shape)}"
        )
    _check_groups(r.shape[0], group_size, "rewards")
    if r.shape[0] == 0:
        return r.new_zeros(0)
    n, k = r.shape
    unscorable = torch.isnan(r).all(dim=1)
    grouped = r.view(-1, group_size, k)
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = _nanstd(grouped, dim=1, keepdim=True) if group_size > 1 else torch.zeros_like(mean_k)
    z = ((grouped - mean_k) / (std_k + eps)).view(n, k)
    s = (z * w.unsqueeze(0)).nansum(dim=1)
    s[unscorable] = float("nan")
    std = _nanstd(s).expand_as(s) if s.numel() > 1 else torch.zeros_like(s)
    adv = (s - torch.nanmean(s)) / (std + eps)
    return torch.nan_to_num(adv, nan=0.0)


# --------------------------------------------------------------------------------------------
# The registered estimators: one signature (see the module docstring)


def options(config: Any, keys: Sequence[str]) -> dict[str, Any]:
    """The ``keys`` that ``config`` sets (a mapping, or an object with those attributes), to pass
    as keyword arguments: an unset key keeps the formula's default (written once, there)."""
    if config is None:
        return {}
    get = config.get if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    return {k: get(k) for k in keys if get(k) is not None}


def group_size(index: Any) -> int:
    """G from the group ids ``index`` (N,): groups must be contiguous and of one size, as TRL
    orders the completions of a prompt. ValueError names the first row that breaks that."""
    ids = torch.as_tensor(index).flatten().tolist()
    if not ids:
        return 1
    g = 1
    while g < len(ids) and ids[g] == ids[0]:
        g += 1
    if len(ids) % g:
        raise ValueError(f"index: {len(ids)} completions are not groups of {g} (the first group's size)")
    for start in range(0, len(ids), g):
        block = ids[start:start + g]
        if any(x != block[0] for x in block) or (start and block[0] == ids[start - 1]):
            raise ValueError(f"index: the group at row {start} is not {g} contiguous completions of one id")
    return g


def weighted_total(rewards: Any, weights: Any = None) -> torch.Tensor:
    """(N,) total reward as TRL sums it: ``nansum_k w_k r_ik``, NaN where every reward is NaN."""
    r = torch.as_tensor(none_to_nan(rewards) if not isinstance(rewards, torch.Tensor) else rewards)
    r = r if torch.is_floating_point(r) else r.to(torch.float32)
    if r.dim() == 1:
        return r
    if r.dim() != 2:
        raise ValueError(f"rewards must have shape (N,) or (N, R), got shape {tuple(r.shape)}")
    w = torch.ones(r.shape[1], dtype=r.dtype) if weights is None else torch.as_tensor(weights, dtype=r.dtype)
    if w.shape != (r.shape[1],):
        raise ValueError(f"weights must have shape (R,) = ({r.shape[1]},), got {tuple(w.shape)}")
    total = (r * w.to(r.device)).nansum(dim=1)
    total[torch.isnan(r).all(dim=1)] = float("nan")
    return total


@ADVANTAGES.register("grpo")
def grpo_estimator(*, rewards, mask=None, index, config=None, weights=None, **inputs) -> torch.Tensor:
    """GRPO (:func:`grpo_advantages`) on the weighted total reward. ``config``: ``eps`` (1e-4),
    ``scale`` (``group`` | ``batch`` | ``none``). Returns (N,)."""
    return grpo_advantages(weighted_total(rewards, weights), group_size(index),
                           **options(config, ("eps", "scale")))


#: the TRL setting under which TRL's own advantages are this estimator's
grpo_estimator.trl_options = {"multi_objective_aggregation": "sum_then_normalize"}


@ADVANTAGES.register("gdpo")
def gdpo_estimator(*, rewards, mask=None, index, config=None, weights=None, **inputs) -> torch.Tensor:
    """GDPO (:func:`gdpo_advantages`): ``rewards`` (N, R), ``weights`` (R,) (default 1 each).
    ``config``: ``eps`` (1e-4). Returns (N,)."""
    r = float_tensor(rewards, "rewards", 2)
    w = torch.ones(r.shape[1]) if weights is None else weights
    return gdpo_advantages(r, w, group_size(index), **options(config, ("eps",)))


gdpo_estimator.trl_options = {"multi_objective_aggregation": "normalize_then_sum"}


__all__ = [
    "ADVANTAGES",
    "gdpo_estimator",
    "get_advantage_fn",
    "grpo_estimator",
    "group_size",
    "float_tensor",
    "none_to_nan",
    "options",
    "weighted_total",
    "GRPO_SCALES",
    "gdpo_advantages",
    "grpo_advantages",
]
