"""MRPO: step-aware token advantages from one judge call per rollout.

Paper: MRPO (Jung et al. 2026, arXiv 2606.31825), Sec. 4.2, Eq. 2-8, App. C.2, D.2, D.3.

Read top to bottom:

1. **Config** (:class:`MRPOConfig`, recipe key ``algorithm.mrpo``): the answer-reward threshold
   tau (Eq. 7), the shaping function f (App. D.2), the reweighting strategy (App. D.3), the
   names of the answer and process rewards, and the coefficients of the answer and length
   rewards (Eq. 2, Eq. 4), which reach those rewards' options from here.
2. **Rewards** (registry names): ``mrpo_answer`` (Eq. 2, :mod:`medrl.rewards.mrpo`),
   ``mrpo_process`` (Eq. 3, mean judged step validity, one judge call per rollout,
   :class:`medrl.rewards.judged.MRPOProcessReward`), ``mrpo_length`` (Eq. 4). Their weighted
   sum is Eq. 5; TRL turns it into the group advantage A_i (Eq. 6).
3. **Hooks**: ``setup`` refuses TRL options defined through one advantage per rollout
   (:func:`token_advantage_conflicts`); ``advantage_inputs`` maps the process reward's steps
   onto completion tokens (:func:`medrl.answers.completion.step_token_spans`) for the estimator
   registered as ``mrpo`` (:func:`medrl.advantages.mrpo_estimator`, Eq. 7), which turns the
   (B,) advantages into a (B, T) tensor that TRL's loss takes as it is (Eq. 8).

Token alignment: a step's span is in characters of the decoded completion; token offsets come
from re-tokenising that text (:func:`medrl.answers.completion.completion_token_offsets`, exact when it
reproduces the generated ids, else rebuilt from growing prefixes). Tokens outside every step
(tags, the answer, EOS, padding) keep A_i.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from medrl.methods.base import METHODS, MedBatch, Method, MethodConfig, reward_option
from medrl.rewards.mrpo import make_mrpo_answer, make_mrpo_length


class MRPOConfig(MethodConfig):
    """``algorithm.mrpo``: how MRPO reshapes the sequence advantage per step (Eq. 7), and the
    coefficients of its answer and length rewards."""

    tau: float = Field(0.6, ge=0.0, le=1.0, description=(
        "MRPO Sec. 4.2, Eq. 7: answer-reward threshold; rollouts with R_ans <= tau get step shaping "
        "(selective strategy)"))
    shaping: Literal["exponential", "linear", "quadratic", "uniform"] = Field("exponential", description=(
        "MRPO App. D.2: the penalty f(p_k) of an invalid step at relative position p_k (exponential: "
        "exp(1 - p_k), earlier steps penalised more; a single-step trace's invalid step gets 1, as the "
        "released code does)"))
    strategy: Literal["selective", "full", "soft"] = Field("selective", description=(
        "MRPO App. D.3: which rollouts are reshaped - selective (R_ans <= tau), full (every judged "
        "rollout), soft (every judged rollout, its reshaped step-token values scaled by 0.5)"))
    answer_reward: str = Field("mrpo_answer", description=(
        "reward of the recipe whose column holds R_ans (Eq. 2), compared with tau"))
    process_reward: str = Field("mrpo_process", description=(
        "reward of the recipe whose step verdicts shape the tokens (Eq. 3); it must declare the outputs "
        "'steps' and 'step_verdicts'"))
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

    def advantage_inputs(self, trainer: Any, batch: MedBatch) -> dict[str, Any]:
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
            offsets = completion_token_offsets(trainer._tokenizer, batch.texts[i], batch.completion_ids[i])
            flags.append(v)
            spans.append(step_token_spans(batch.texts[i], st, offsets))
        self._judged = [f is not None for f in flags]
        return {"step_valid": flags, "step_token_spans": spans}

    def log(self, trainer: Any, batch: MedBatch) -> None:
        """``mrpo/reshaped_frac``: the share of this batch's rollouts whose step tokens Eq. 7 reshaped."""
        judged = getattr(self, "_judged", None)
        if judged is None or batch.local_rewards is None:
            return
        # compared in the rewards' own dtype, as the estimator compares them (R_ans = tau is reshaped)
        below = (batch.local_rewards[:, self._answer_idx] <= self.config.tau).tolist()
        reshaped = sum(1 for i, j in enumerate(judged) if j and (self.config.strategy != "selective" or below[i]))
        trainer._metrics[batch.mode]["mrpo/reshaped_frac"].append(reshaped / max(len(judged), 1))
        self._judged = None


__all__ = ["MRPO", "MRPOConfig", "refuse_with_token_advantages", "token_advantage_conflicts"]
