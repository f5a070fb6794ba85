"""MRPO: step-aware token advantages from one judge call per rollout.

Paper: MRPO (Jung et al. 2026, arXiv 2606.31825), Sec. 4.2, Eq. 2-8, App. C.2, D.2, D.3.

Read top to bottom:

1. **Eq. 7** (:func:`mrpo_token_advantages`): the (B,) sequence advantages A_i become (B, T)
   token advantages - the tokens of an invalid step get -f(p_k)|A_i|, those of a valid step
   +|A_i| - with the shaping functions f of App. D.2 (:data:`SHAPING`) and the reweighting
   strategies of App. D.3 (:data:`STRATEGIES`). Its keyword defaults (tau, shaping, strategy)
   are the paper's and are written there once.
2. **Config** (:class:`MRPOConfig`, recipe key ``algorithm.mrpo``): tau, the shaping function
   and the strategy (defaults and choices read from Eq. 7's function and lists), the names of
   the answer and process rewards, and the coefficients of the answer and length rewards
   (Eq. 2, Eq. 4), which reach those rewards' options from here.
3. **Estimator** ``mrpo`` (:func:`mrpo_estimator`, registered in
   :data:`medrl.advantages.ADVANTAGES` from this file): Eq. 7 behind the one signature every
   estimator has; ``algorithm.advantage: mrpo`` chooses it.
4. **Rewards** (registry names): ``mrpo_answer`` (Eq. 2, :mod:`medrl.rewards.mrpo`),
   ``mrpo_process`` (Eq. 3, mean judged step validity, one judge call per rollout,
   :class:`medrl.rewards.judged.MRPOProcessReward`), ``mrpo_length`` (Eq. 4). Their weighted
   sum is Eq. 5; TRL turns it into the group advantage A_i (Eq. 6).
5. **Hooks**: ``setup`` refuses TRL options defined through one advantage per rollout
   (:func:`token_advantage_conflicts`); ``advantage_inputs`` maps the process reward's steps
   onto completion tokens (:func:`medrl.answers.completion.step_token_spans`) for the ``mrpo``
   estimator, which turns the (B,) advantages into a (B, T) tensor that TRL's loss takes as it
   is (Eq. 8).

Token alignment: a step's span is in characters of the decoded completion; token offsets come
from re-tokenising that text (:func:`medrl.answers.completion.completion_token_offsets`, exact when it
reproduces the generated ids, else rebuilt from growing prefixes). Tokens outside every step
(tags, the answer, EOS, padding) keep A_i.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Sequence

import torch
from pydantic import Field, PositiveInt, model_validator

from medrl.advantages import ADVANTAGES, float_tensor, grpo_estimator, none_to_nan, options, weighted_total
from medrl.methods.base import METHODS, MedBatch, Method, MethodConfig, option_default, reward_option
from medrl.methods.context import StepContext
from medrl.rewards.mrpo import make_mrpo_answer, make_mrpo_length

# --------------------------------------------------------------------------------------------
# Eq. 7: step-wise token advantages (pure tensor functions)

#: MRPO App. D.2 shaping functions f(p), p = (k-1)/(K-1): an invalid step's tokens get -f(p)|A_i|
#: (the choices of ``MRPOConfig.shaping``)
SHAPING: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exponential": lambda p: torch.exp(1.0 - p),
    "linear": lambda p: 1.0 - p,
    "quadratic": lambda p: (1.0 - p) ** 2,
    "uniform": lambda p: torch.ones_like(p),
}
#: MRPO App. D.3: which rollouts are reshaped (the choices of ``MRPOConfig.strategy``)
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
    a = float_tensor(advantages, "advantages", 1, "(B,)")
    b = a.shape[0]
    # kept in its own dtype (a python list becomes float64): casting float32 0.6 to float64
    # would make R_ans = tau = 0.6 compare as greater than tau
    if not isinstance(answer_rewards, torch.Tensor):
        try:
            answer_rewards = torch.as_tensor(
                none_to_nan(list(answer_rewards)), dtype=torch.float64
            )
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"answer_rewards must be (B,) numbers: {exc}") from None
    r_ans = float_tensor(answer_rewards, "answer_rewards", 1, "(B,)").to(device=a.device)
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




class MRPOConfig(MethodConfig):
    """``algorithm.mrpo``: how MRPO reshapes the sequence advantage per step (Eq. 7), and the
    coefficients of its answer and length rewards."""

    tau: float = Field(option_default(mrpo_token_advantages, "tau"), ge=0.0, le=1.0, description=(
        "MRPO Sec. 4.2, Eq. 7: answer-reward threshold; rollouts with R_ans <= tau get step shaping "
        "(selective strategy)"))
    shaping: Literal[tuple(SHAPING)] = Field(option_default(mrpo_token_advantages, "shaping"), description=(
        "MRPO App. D.2: the penalty f(p_k) of an invalid step at relative position p_k (exponential: "
        "exp(1 - p_k), earlier steps penalised more; a single-step trace's invalid step gets 1, as the "
        "released code does)"))
    strategy: Literal[STRATEGIES] = Field(option_default(mrpo_token_advantages, "strategy"), description=(
        "MRPO App. D.3: which rollouts are reshaped - selective (R_ans <= tau), full (every judged "
        "rollout), soft (every judged rollout, its reshaped step-token values scaled by 0.5)"))
    answer_reward: str = Field("mrpo_answer", description=(
        "reward of the recipe whose column holds R_ans (Eq. 2), compared with tau"))
    process_reward: str = Field("mrpo_process", description=(
        "reward of the recipe whose step verdicts shape the tokens (Eq. 3); its results must carry the step "
        "outputs 'steps' and 'step_verdicts'"))
    lambda1: float = reward_option(make_mrpo_answer, "lambda1", ge=0.0, description=(
        "MRPO Eq. 2: weight of ROUGE-1 + BLEU-1 in R_ans (option of the mrpo_answer reward)"))
    lambda2: float = reward_option(make_mrpo_answer, "lambda2", ge=0.0, description=(
        "MRPO Eq. 2: weight of BERTScore in R_ans (option of the mrpo_answer reward)"))
    k_min: PositiveInt = reward_option(make_mrpo_length, "k_min", description=(
        "MRPO Eq. 4: fewest reasoning steps before the length reward turns negative (mrpo_length)"))
    k_max: PositiveInt = reward_option(make_mrpo_length, "k_max", description=(
        "MRPO Eq. 4: most reasoning steps before the length reward turns negative (mrpo_length)"))

    @model_validator(mode="after")
    def _steps_range(self) -> "MRPOConfig":
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) must be <= k_max ({self.k_max})")
        return self


# --------------------------------------------------------------------------------------------
# The estimator ``mrpo``: Eq. 7 behind the one signature of medrl.advantages


@ADVANTAGES.register("mrpo")
def mrpo_estimator(*, rewards, mask, index, config=None, advantages=None, step_valid=None,
                   step_token_spans=None, reward_names: Sequence[str] = (), **inputs) -> torch.Tensor:
    """MRPO Eq. 7 (:func:`mrpo_token_advantages`), registered as ``mrpo``: (N,) ``advantages`` A_i
    -> (N, T) token advantages, T = ``mask.shape[1]``. R_ans: the ``rewards`` column that ``config.answer_reward``
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


# --------------------------------------------------------------------------------------------
# Hooks


def token_advantage_conflicts(args: Any) -> list[str]:
    """Why TRL options in ``args`` (a ``GRPOConfig``) cannot take MRPO's (B, T) token advantages.

    TRL's loss accepts (B, T) advantages with every option, but some options are
    defined through one advantage (or one ratio) per rollout, and with token advantages they
    would silently compute something else. Empty when everything combines.
    """
    why = []
    if getattr(args, "importance_sampling_level", "token") == "sequence":
        why.append("importance_sampling_level='sequence' (GSPO): one ratio s_i is shared by every token of "
                   "rollout i, so the gradient of sum_t A_it * s_i is (sum_t A_it) * grad s_i - the step "
                   "token advantages (MRPO Eq. 7) collapse to their mean and the step credit is lost; "
                   "use importance_sampling_level='token'")
    loss = getattr(args, "loss_type", None)
    if loss == "luspo":
        why.append("loss_type='luspo' is GSPO's length-scaled sequence-level loss (it needs "
                   "importance_sampling_level='sequence', see above)")
    if loss == "vespo":
        why.append("loss_type='vespo' picks its gamma weight of the sequence ratio by the sign of the "
                   "rollout's advantage; MRPO gives one rollout tokens of both signs (valid +|A_i|, "
                   "invalid -f(p)|A_i|)")
    if getattr(args, "off_policy_mask_threshold", None) is not None:
        why.append("off_policy_mask_threshold drops whole rollouts by the sign of their advantage; MRPO "
                   "gives one rollout tokens of both signs")
    return why


def refuse_with_token_advantages(args: Any) -> None:
    """Raise ValueError naming every option of ``args`` that cannot take MRPO token advantages
    (:func:`token_advantage_conflicts`); ``None`` (TRL's defaults) passes."""
    why = token_advantage_conflicts(args) if args is not None else []
    if why:
        raise ValueError("algorithm.advantage = 'mrpo' (token advantages) cannot be combined with: "
                         + "; ".join(why))


@METHODS.register("mrpo")
class MRPO(Method):
    """MRPO token credit: Eq. 7 on top of TRL's group advantage."""

    name = "mrpo"
    paper = "MRPO (arXiv 2606.31825), Sec. 4.2, Eq. 2-8, App. D.2-D.3"
    Config = MRPOConfig
    section = "mrpo"
    rewards = {"mrpo_answer": {"lambda1": "lambda1", "lambda2": "lambda2"}, "mrpo_process": {},
               "mrpo_length": {"k_min": "k_min", "k_max": "k_max"}}
    advantage = "mrpo"

    @property
    def process_reward(self) -> str:
        return self.config.process_reward

    @property
    def answer_reward(self) -> str:
        return self.config.answer_reward

    def credit_fields(self) -> dict[str, Any]:
        return self.config.model_dump(include={"tau", "shaping", "strategy"})

    def recipe_problems(self, reward_names) -> list[tuple[str, str]]:
        from medrl.common.registry import did_you_mean

        return [(f"algorithm.{self.section}.{key}", f"{getattr(self.config, key)!r} is not among the recipe's "
                 f"rewards {list(reward_names)}{did_you_mean(getattr(self.config, key), reward_names)}")
                for key in ("answer_reward", "process_reward") if getattr(self.config, key) not in reward_names]

    def setup(self, ctx: StepContext) -> None:
        refuse_with_token_advantages(ctx.args)
        names = list(ctx.reward_names)
        for key in ("answer_reward", "process_reward"):
            value = getattr(self.config, key)
            if value not in names:
                raise ValueError(f"MRPO needs the reward {value!r} ({key}); the trainer has {names}")
        if ctx.uses_tools:
            raise ValueError("MRPO token advantages are not supported together with tool calling")
        self._answer_idx = names.index(self.config.answer_reward)

    def advantage_inputs(self, ctx: StepContext, batch: MedBatch) -> dict[str, Any]:
        """Per rollout, its step verdicts and their token spans (None where unjudged), for the
        ``mrpo`` estimator (Eq. 7)."""
        from medrl.answers.completion import completion_token_offsets, step_token_spans

        n = len(batch.texts)
        steps, valid = batch.steps, batch.step_valid
        if steps is None or valid is None or len(steps) != n:
            raise RuntimeError(f"process reward {self.config.process_reward!r} gave no steps for this batch")
        flags: list[list[bool] | None] = []
        spans: list[list[tuple[int, int]] | None] = []
        for i in range(n):
            v, st = valid[i], steps[i]
            if v is None or st is None or len(v) != len(st) or not st:
                flags.append(None)
                spans.append(None)
                continue
            offsets = completion_token_offsets(ctx.tokenizer, batch.texts[i], batch.completion_ids[i])
            flags.append(v)
            spans.append(step_token_spans(batch.texts[i], st, offsets))
        self._judged = [f is not None for f in flags]
        return {"step_valid": flags, "step_token_spans": spans}

    def log(self, ctx: StepContext, batch: MedBatch) -> None:
        """``mrpo/reshaped_frac``: the share of this batch's rollouts whose step tokens Eq. 7 reshaped."""
        judged = getattr(self, "_judged", None)
        if judged is None or batch.local_rewards is None:
            return
        # compared in the rewards' own dtype, as the estimator compares them (R_ans = tau is reshaped)
        below = (batch.local_rewards[:, self._answer_idx] <= self.config.tau).tolist()
        reshaped = sum(1 for i, j in enumerate(judged) if j and (self.config.strategy != "selective" or below[i]))
        ctx.log("mrpo/reshaped_frac", reshaped / max(len(judged), 1))
        self._judged = None


__all__ = ["MRPO", "MRPOConfig", "SHAPING", "SOFT_FACTOR", "STRATEGIES", "mrpo_estimator", "mrpo_token_advantages",
           "refuse_with_token_advantages", "shaping_factor", "token_advantage_conflicts"]
