"""MRPO: step-aware token advantages from one judge call per rollout.

Paper: MRPO (Jung et al. 2026, arXiv 2606.31825), Sec. 4.2, Eq. 2-8, App. C.2, D.2, D.3.

Read top to bottom:

1. **Config** (:class:`MRPOConfig`, recipe key ``algorithm.mrpo``): the answer-reward threshold
   tau (Eq. 7), the shaping function f (App. D.2), the reweighting strategy (App. D.3), and the
   names of the answer and process rewards.
2. **Rewards** (registry names): ``mrpo_answer`` (Eq. 2, BERTScore of the answer,
   :mod:`medrl.rewards.mrpo`), ``mrpo_process`` (Eq. 3, mean judged step validity, one judge call
   per rollout, :class:`medrl.rewards.judged.MRPOProcessReward`), ``mrpo_length`` (Eq. 4). Their
   weighted sum is Eq. 5; TRL turns it into the group advantage A_i (Eq. 6).
3. **Hooks**: ``setup`` refuses TRL options defined through one advantage per rollout
   (:func:`token_advantage_conflicts`); ``token_advantages`` maps the process reward's steps
   onto completion tokens (:func:`medrl.answers.completion.step_token_spans`) and calls the estimator
   registered as ``mrpo`` (:func:`medrl.advantages.mrpo_token_advantages`, Eq. 7), which turns
   the (B,) advantages into a (B, T) tensor that TRL's loss takes as it is (Eq. 8).

Token alignment: a step's span is in characters of the decoded completion; token offsets come
from re-tokenising that text (:func:`medrl.answers.completion.completion_token_offsets`, exact when it
reproduces the generated ids, else rebuilt from growing prefixes). Tokens outside every step
(tags, the answer, EOS, padding) keep A_i.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from medrl.methods.base import METHODS, MedBatch, Method, MethodConfig, get_advantage_fn


class MRPOConfig(MethodConfig):
    """``algorithm.mrpo``: how MRPO reshapes the sequence advantage per step (Eq. 7)."""

    tau: float = Field(0.6, ge=0.0, le=1.0, description=(
        "MRPO Sec. 4.2, Eq. 7: answer-reward threshold; rollouts with R_ans <= tau get step shaping "
        "(selective strategy)"))
    shaping: Literal["exponential", "linear", "quadratic", "uniform"] = Field("exponential", description=(
        "MRPO App. D.2: the penalty f(p_k) of an invalid step at relative position p_k (exponential: "
        "exp(1 - p_k), earlier steps penalised more)"))
    strategy: Literal["selective", "full", "soft"] = Field("selective", description=(
        "MRPO App. D.3: which rollouts are reshaped - selective (R_ans <= tau), full (all judged), "
        "soft (weighted by 1 - R_ans)"))
    answer_reward: str = Field("mrpo_answer", description="reward whose column holds R_ans (Eq. 2)")
    process_reward: str = Field("mrpo_process", description=(
        "reward whose step verdicts shape the tokens (Eq. 3); it must declare the outputs "
        "'steps' and 'step_verdicts'"))


def token_advantage_conflicts(args: Any) -> list[str]:
    """Why TRL options in ``args`` (a ``GRPOConfig``) cannot take MRPO's (B, T) token advantages.

    TRL's ``_compute_loss`` accepts (B, T) advantages with every option, but some options are
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
    rewards = ("mrpo_answer", "mrpo_process", "mrpo_length")
    advantage = "mrpo"

    def setup(self, trainer: Any) -> None:
        refuse_with_token_advantages(trainer.args)
        names = list(trainer.reward_func_names)
        for key in ("answer_reward", "process_reward"):
            value = getattr(self.config, key)
            if value not in names:
                raise ValueError(f"MRPO needs the reward {value!r} ({key}); the trainer has {names}")
        if trainer.tools:
            raise ValueError("MRPO token advantages are not supported together with tool calling")
        self._answer_idx = names.index(self.config.answer_reward)

    def token_advantages(self, trainer: Any, batch: MedBatch):
        """MRPO Eq. 7: (B,) A_i -> (B, T) step-shaped token advantages."""
        from medrl.answers.completion import completion_token_offsets, step_token_spans

        out, cfg = batch.out, self.config
        n, num_tokens = out["completion_ids"].shape
        steps, valid = batch.steps, batch.step_valid
        if steps is None or valid is None or len(steps) != n:
            raise RuntimeError(f"process reward {cfg.process_reward!r} gave no steps for this batch")
        flags: list[list[bool] | None] = []
        spans: list[list[tuple[int, int]] | None] = []
        for i in range(n):
            v, st = valid[i], steps[i]
            if v is None or st is None or len(v) != len(st) or not st:
                flags.append(None)
                spans.append(None)
                continue
            offsets = completion_token_offsets(trainer._tokenizer, batch.texts[i], batch.completion_ids[i])
            flags.append(v)
            spans.append(step_token_spans(batch.texts[i], st, offsets))
        r_ans = batch.local_rewards[:, self._answer_idx].to(out["advantages"].device)
        adv = get_advantage_fn(self.advantage)(
            out["advantages"], r_ans, flags, spans, num_tokens,
            tau=cfg.tau, shaping=cfg.shaping, strategy=cfg.strategy,
        )
        judged = [i for i in range(n) if flags[i] is not None]
        if cfg.strategy == "selective":
            reshaped = sum(1 for i in judged if bool(r_ans[i] <= cfg.tau))
        else:
            reshaped = len(judged)
        trainer._metrics[batch.mode]["mrpo/reshaped_frac"].append(reshaped / max(n, 1))
        return adv


__all__ = ["MRPO", "MRPOConfig", "refuse_with_token_advantages", "token_advantage_conflicts"]
