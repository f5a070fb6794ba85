"""Advantage estimators as pure tensor functions: GRPO, GDPO and MRPO step-wise token shaping.

Shapes: ``N`` = number of completions in the batch (``num_prompts * group_size``, completions
of one prompt contiguous, as TRL orders them), ``R`` = number of reward functions, ``B`` =
completions on this process, ``T`` = completion length in tokens (padded).

Unscorable rewards (a reward function returned ``None``) arrive as NaN, exactly as in TRL: they
are left out of means and standard deviations, and a completion whose reward is NaN gets
advantage 0 (it is never silently scored 0 or 1).

The formulas are plain functions (:func:`grpo_advantages`, :func:`gdpo_advantages`,
:func:`mrpo_token_advantages`). :data:`ADVANTAGES` names the estimators a recipe's
``algorithm.advantage`` may choose; every registered estimator has the one signature of verl's
``register_adv_est`` estimators (``verl/trainer/ppo/core_algos.py``)::

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
  computed over every process) and whatever the run's methods add
  (:meth:`medrl.methods.Method.advantage_inputs`; MRPO: ``step_valid``, ``step_token_spans``).

In training the rows are this process's; an estimator that TRL itself computes (``grpo``,
``gdpo``: its ``trl_options`` name the TRL setting) keeps TRL's values, computed over every
process. Any registered name is accepted (``@ADVANTAGES.register("my_estimator")`` in a module
the run imports, e.g. a method's file), as verl accepts any name passed to ``register_adv_est``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from medrl.common.registry import Registry

ADVANTAGES = Registry("advantage", modules=["medrl.advantages"])


def get_advantage_fn(name: str) -> Callable[..., torch.Tensor]:
    """The estimator registered as ``name`` (``KeyError`` lists the known ones); after verl's
    ``get_adv_estimator_fn``."""
    return ADVANTAGES.get(name)

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


def _none_to_nan(x):
    if isinstance(x, (list, tuple)):
        return [float("nan") if v is None else _none_to_nan(v) for v in x]
    return x


def _float_tensor(x, name: str, ndim: int, want: str | None = None) -> torch.Tensor:
    """``x`` as a float tensor of ``ndim`` dims; ``None`` entries of a list become NaN."""
    try:
        t = torch.as_tensor(_none_to_nan(x))
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

    Papers: MRPO Eq. 6; ARMed Eq. 1;
    CAPO Eq. 5 (its ``+delta`` in the denominator is ``eps``);
    StepGRPO Eq. 4; MediX-R1 Sec. 2.2.

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
    r = _float_tensor(rewards, "rewards", 1)
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

    GDPO (arXiv 2601.05242), the baseline of MRPO Table 2:
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
    r = _float_tensor(rewards, "rewards", 2)
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


# MRPO App. D.2 shaping functions f(p), p = (k-1)/(K-1): an invalid step's tokens get -f(p)|A_i|.
SHAPING: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exponential": lambda p: torch.exp(1.0 - p),
    "linear": lambda p: 1.0 - p,
    "quadratic": lambda p: (1.0 - p) ** 2,
    "uniform": lambda p: torch.ones_like(p),
}
STRATEGIES = ("selective", "full", "soft")
SOFT_FACTOR = 0.5  # MRPO App. D.3 "scaled by a factor of 0.5"


def _valid_flag(v, i: int, k: int) -> bool:
    if hasattr(v, "valid"):  # a StepVerdict
        return bool(v.valid)
    if hasattr(v, "item"):  # numpy / torch scalar
        try:
            v = v.item()
        except (ValueError, RuntimeError):
            pass  # more than one element: rejected below
    if isinstance(v, bool) or (isinstance(v, (int, float)) and v in (0, 1)):
        return bool(v)
    raise ValueError(f"step_valid[{i}][{k}] must be a bool (or 0/1 or a StepVerdict), got {v!r}")


def _mrpo_inputs(advantages, answer_rewards, step_valid, step_token_spans, num_tokens, shaping, strategy):
    """``(A, R_ans)`` as tensors after checking every argument of :func:`mrpo_token_advantages`
    (shapes, one entry per rollout, known shaping and strategy); ValueError says which is wrong."""
    a = _float_tensor(advantages, "advantages", 1, "(B,)")
    b = a.shape[0]
    # kept in its own dtype (a python list becomes float64): casting float32 0.6 to float64
    # would make R_ans = tau = 0.6 compare as greater than tau
    if not isinstance(answer_rewards, torch.Tensor):
        try:
            answer_rewards = torch.as_tensor(
                _none_to_nan(list(answer_rewards)), dtype=torch.float64
            )
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"answer_rewards must be (B,) numbers: {exc}") from None
    r_ans = _float_tensor(answer_rewards, "answer_rewards", 1, "(B,)").to(device=a.device)
    if r_ans.shape != (b,):
        raise ValueError(
            f"answer_rewards must have shape (B,) = ({b},) like advantages, "
            f"got {tuple(r_ans.shape)}"
        )
    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 0:
        raise ValueError(f"num_tokens must be a non-negative int, got {num_tokens!r}")
    if shaping not in SHAPING:
        raise ValueError(f"shaping must be one of {tuple(SHAPING)}, got {shaping!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if len(step_valid) != b or len(step_token_spans) != b:
        raise ValueError(
            f"step_valid ({len(step_valid)}) and step_token_spans ({len(step_token_spans)}) "
            f"must have one entry per rollout (B = {b})"
        )
    return a, r_ans


def _step_table(step_valid, step_token_spans, num_tokens: int):
    """One entry per judged step of every rollout: (row, token start, token end, valid, relative
    position p_k, whether it is its trace's only step). ValueError names the rollout and step
    of a span that is malformed, outside [0, num_tokens] or not after the previous step."""
    rows: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    valid: list[bool] = []
    pos: list[float] = []
    single: list[bool] = []  # the step is a trace's only one (K = 1): penalty 1
    for i, (flags, spans) in enumerate(zip(step_valid, step_token_spans)):
        if flags is None or spans is None:
            continue
        if len(flags) != len(spans):
            raise ValueError(f"rollout {i}: {len(flags)} step verdicts but {len(spans)} step token spans")
        n_steps, prev_end = len(spans), 0
        for k, span in enumerate(spans):
            try:
                s, e = (int(x) for x in span)
            except (TypeError, ValueError):
                raise ValueError(f"rollout {i} step {k}: span must be (start, end), got {span!r}") from None
            if not (0 <= s <= e <= num_tokens):
                raise ValueError(f"rollout {i} step {k}: token span ({s}, {e}) outside [0, num_tokens={num_tokens}]")
            if s < prev_end:
                raise ValueError(f"rollout {i} step {k}: token span ({s}, {e}) overlaps or precedes the previous "
                                 f"step (ends at {prev_end}); spans must be ordered and disjoint")
            prev_end = e
            rows.append(i)
            starts.append(s)
            ends.append(e)
            valid.append(_valid_flag(flags[k], i, k))
            pos.append(k / (n_steps - 1) if n_steps > 1 else 0.0)
            single.append(n_steps == 1)
    return rows, starts, ends, valid, pos, single


def mrpo_token_advantages(
    advantages,
    answer_rewards,
    step_valid: Sequence[Sequence[bool] | None],
    step_token_spans: Sequence[Sequence[tuple[int, int]] | None],
    num_tokens: int,
    tau: float = 0.6,
    shaping: str = "exponential",
    strategy: str = "selective",
) -> torch.Tensor:
    """MRPO step-wise token advantages (MRPO Eq. 7, App. D.2, App. D.3).

    For rollout i with K steps and step k (1-based), ``p_k = (k-1)/(K-1)``. For a token of step
    r_k of a *reshaped* rollout::

        A_hat[i, t] = -f(p_k) * |A_i|   if R_proc(r_k) = 0 (invalid step)
        A_hat[i, t] = +|A_i|            if R_proc(r_k) = 1 (valid step)

    A single-step trace (K = 1) has no relative position; the paper leaves it open. As the
    released code does (``grpo_trainer_MRPO_Qwen2_5.py``, the ``len(sentences) > 1`` branch of
    the step-wise advantage reweighting, dmis-lab/MRPO), its invalid step gets ``-1 * |A_i|``
    (not ``-f(0) * |A_i| = -e |A_i|``); a valid one ``+|A_i|`` as always.

    and ``A_hat[i, t] = A_i`` for every other token (outside all steps: ``<think>`` tags,
    list markers, the answer, padding) and for rollouts that are not reshaped.
    f (App. D.2): ``exponential`` exp(1-p) (Eq. 7, default), ``linear`` 1-p, ``quadratic``
    (1-p)^2, ``uniform`` 1. Which rollouts are reshaped (App. D.3):

    - ``selective`` (MRPO, default): only rollouts whose answer is judged incorrect,
      ``R_ans <= tau`` (tau = 0.6, Sec. 4.2). A NaN R_ans is not reshaped.
    - ``full``: every rollout, whatever its answer reward.
    - ``soft``: every rollout, with the reshaped step-token values multiplied by 0.5.
      Project reading of "applies the same reshaping to all instances but scaled by a factor
      of 0.5": the reshaped value is halved (``0.5 * A_hat``), tokens outside steps keep A_i.

    Args:
        advantages: (B,) sequence-level advantages A_i (e.g. from :func:`grpo_advantages`).
        answer_rewards: (B,) answer rewards R_ans (MRPO Eq. 2).
        step_valid: B lists of K_i step validities R_proc(r_k) (bools, 0/1 or StepVerdicts);
            ``None`` for a rollout without verdicts (it keeps A_i everywhere).
        step_token_spans: B lists of K_i token spans [start, end) into the completion tokens
            (from :func:`medrl.answers.completion.step_token_spans`); within a rollout they must not
            overlap; ``None`` like above.
        num_tokens: T, the completion length (``completion_ids.shape[1]``).

    Returns:
        (B, T) token advantages, dtype and device of ``advantages``.

    Vectorised: spans become a (M, T) membership mask (M = total steps) combined by ``index_add_``.
    """
    a, r_ans = _mrpo_inputs(advantages, answer_rewards, step_valid, step_token_spans, num_tokens, shaping, strategy)
    b = a.shape[0]
    rows, starts, ends, valid, pos, single = _step_table(step_valid, step_token_spans, num_tokens)

    out = a.unsqueeze(1).expand(b, num_tokens).clone()
    if not rows or num_tokens == 0:
        return out

    # (B,) rows reshaped; a NaN R_ans compares False
    reshaped = r_ans <= tau if strategy == "selective" else torch.ones(b, dtype=torch.bool, device=a.device)

    dev = a.device
    row_t = torch.tensor(rows, device=dev)
    p = torch.tensor(pos, dtype=a.dtype, device=dev)
    valid_t = torch.tensor(valid, device=dev)
    penalty = torch.where(torch.tensor(single, device=dev), torch.ones_like(p), SHAPING[shaping](p))
    mult = torch.where(valid_t, torch.ones_like(p), -penalty)  # (M,)
    if strategy == "soft":
        mult = mult * SOFT_FACTOR
    t_idx = torch.arange(num_tokens, device=dev)
    member = (t_idx >= torch.tensor(starts, device=dev).unsqueeze(1)) & (
        t_idx < torch.tensor(ends, device=dev).unsqueeze(1)
    )  # (M, T)
    member = member & reshaped[row_t].unsqueeze(1)
    token_mult = torch.zeros(b, num_tokens, dtype=a.dtype, device=dev)
    token_mult.index_add_(0, row_t, member.to(a.dtype) * mult.unsqueeze(1))
    covered = torch.zeros(b, num_tokens, dtype=a.dtype, device=dev)
    covered = covered.index_add_(0, row_t, member.to(a.dtype)) > 0
    return torch.where(covered, token_mult * a.abs().unsqueeze(1), out)


def shaping_factor(k: int, n_steps: int, shaping: str = "exponential") -> float:
    """The penalty of an invalid step k (1-based) of K as a plain float (for reports/tests):
    f(p_k) (MRPO App. D.2), and 1 for a single-step trace (K = 1, the released code's rule; see
    :func:`mrpo_token_advantages`)."""
    if shaping not in SHAPING:
        raise ValueError(f"shaping must be one of {tuple(SHAPING)}, got {shaping!r}")
    if not (1 <= k <= n_steps):
        raise ValueError(f"step index k={k} outside 1..K={n_steps}")
    if n_steps == 1:
        return 1.0
    return float(SHAPING[shaping](torch.tensor((k - 1) / (n_steps - 1), dtype=torch.float64)))


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
    r = torch.as_tensor(_none_to_nan(rewards) if not isinstance(rewards, torch.Tensor) else rewards)
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
    r = _float_tensor(rewards, "rewards", 2)
    w = torch.ones(r.shape[1]) if weights is None else weights
    return gdpo_advantages(r, w, group_size(index), **options(config, ("eps",)))


gdpo_estimator.trl_options = {"multi_objective_aggregation": "normalize_then_sum"}


@ADVANTAGES.register("mrpo")
def mrpo_estimator(*, rewards, mask, index, config=None, advantages=None, step_valid=None,
                   step_token_spans=None, reward_names: Sequence[str] = (), **inputs) -> torch.Tensor:
    """MRPO Eq. 7 (:func:`mrpo_token_advantages`): (N,) ``advantages`` A_i -> (N, T) token
    advantages, T = ``mask.shape[1]``. R_ans: the ``rewards`` column that ``config.answer_reward``
    names in ``reward_names`` ((N,) ``rewards``: R_ans itself). ``config``: ``tau``, ``shaping``,
    ``strategy``, ``answer_reward``. ``advantages`` left out: GRPO's over R_ans and ``index``.
    A rollout without ``step_valid`` / ``step_token_spans`` keeps A_i."""
    r = weighted_total(rewards) if not isinstance(rewards, torch.Tensor) or rewards.dim() == 1 else rewards
    if r.dim() == 2:
        name = options(config, ("answer_reward",)).get("answer_reward")
        if name not in list(reward_names):
            raise ValueError(f"mrpo: config.answer_reward {name!r} is not among reward_names {list(reward_names)}")
        r = r[:, list(reward_names).index(name)]
    if advantages is None:
        advantages = grpo_estimator(rewards=r, index=index)
    if mask is None:
        raise ValueError("mrpo: token advantages need the (N, T) completion mask")
    n = r.shape[0]
    return mrpo_token_advantages(
        advantages, r, step_valid if step_valid is not None else [None] * n,
        step_token_spans if step_token_spans is not None else [None] * n, int(mask.shape[1]),
        **options(config, ("tau", "shaping", "strategy")))


__all__ = [
    "ADVANTAGES",
    "gdpo_estimator",
    "get_advantage_fn",
    "grpo_estimator",
    "group_size",
    "mrpo_estimator",
    "options",
    "weighted_total",
    "GRPO_SCALES",
    "SHAPING",
    "STRATEGIES",
    "gdpo_advantages",
    "grpo_advantages",
    "mrpo_token_advantages",
    "shaping_factor",
]
