"""ARMed rewards (ARMed paper, "Adaptive Reward Function Design", Eq. 3-14).

- Textual correctness, Eq. 3: R_c = lambda1 * BLEU-1 + (1 - lambda1) * ROUGE-1, lambda1 = 0.5.
- Semantic alignment, Eq. 4: R_s = lambda2 * BERTScore + (1 - lambda2) * Cos, lambda2 = 0.2.
- Adaptive semantic alignment, Eq. 13:
  R_as = lambda2 * Adapt(BERTScore) + (1 - lambda2) * Adapt(Cos), one Adapt state per metric
  (:class:`AdaptiveThreshold`, Eq. 5-12).
- Total, Eq. 14: R_total = (gamma1 * R_c + gamma2 * R_as + gamma3 * R_f) / (gamma1 + gamma2 +
  gamma3), gamma = (0.4, 0.4, 0.2); R_f is the format reward.

The adaptive rewards keep state across training steps (threshold and reward history), so the
reward objects expose ``state_dict()`` / ``load_state_dict()`` for checkpoints and a ``frozen``
flag: a frozen object scores with its current threshold and leaves its state alone (set it for
evaluation batches). Each process of a multi-process run keeps its own state, updated from the
rewards of its own completions.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Sequence

from medrl.answers import metric_text
from medrl.rewards import REWARDS
from medrl.rewards.base import Reward, answer_metric, answer_rows, column, guarded_rows, score_answers
from medrl.rewards.base import ENCODER_HELP, NUM_LAYERS_HELP, document_options, unreadable_rows
from medrl.types import UNSCORABLE, record_unscorable
from medrl.rewards.lexical import bleu1, rouge1
from medrl.rewards.semantic import bertscore_f1, embedding_cosine, read_answers

GAMMAS = (0.4, 0.4, 0.2)


def textual_reward(bleu1: float, rouge1: float, lambda1: float = 0.5) -> float:
    """ARMed Eq. 3: R_c = lambda1 * BLEU-1 + (1 - lambda1) * ROUGE-1."""
    return lambda1 * bleu1 + (1.0 - lambda1) * rouge1


def semantic_reward(bertscore: float, cos: float, lambda2: float = 0.2) -> float:
    """ARMed Eq. 4 (and Eq. 13 given adapted inputs): lambda2 * BERTScore + (1 - lambda2) * Cos."""
    return lambda2 * bertscore + (1.0 - lambda2) * cos


def total_reward(r_c: float, r_as: float, r_f: float, gammas: Sequence[float] = GAMMAS) -> float:
    """ARMed Eq. 14: (g1 * R_c + g2 * R_as + g3 * R_f) / (g1 + g2 + g3)."""
    g1, g2, g3 = gammas
    if min(gammas) < 0 or g1 + g2 + g3 <= 0:
        raise ValueError(f"ARMed total: gammas must be non-negative with a positive sum, got {gammas}")
    return (g1 * r_c + g2 * r_as + g3 * r_f) / (g1 + g2 + g3)


def adapt_map(r: float, threshold: float, alpha_pos: float = 5.0, alpha_neg: float = 2.0,
              eps: float = 1e-8) -> float:
    """ARMed Eq. 10-12 for one reward, given the (already updated) threshold T_{t+1}.

    r_hat = clip((r - T) / (1 - T + eps), -1, 1)                                   (10)
    r'    = 0.5 * (1 + tanh(alpha_pos * r_hat)) if r_hat >= 0
            else 0.5 * (1 + tanh(alpha_neg * r_hat))                               (11)
    r''   = clip(r', 0, 1)                                                         (12)
    """
    r_hat = min(1.0, max(-1.0, (r - threshold) / (1.0 - threshold + eps)))
    alpha = alpha_pos if r_hat >= 0 else alpha_neg
    return min(1.0, max(0.0, 0.5 * (1.0 + math.tanh(alpha * r_hat))))


class AdaptiveThreshold:
    """ARMed's Adapt() (Eq. 5-12) with its state: threshold T_t and reward history H_t.

    One call on a batch of raw rewards r_1..r_B is one step t, in the paper's order:

    1. R_t = {r_i | r_i > max(0, rho * T_t)}                     (5)  filter with the *old* T_t
    2. H_{t+1} = Truncate(H_t + R_t, L_max)                     (6)  keep the newest L_max
    3. T* = Percentile_p(H_{t+1})                               (7)
    4. dT = clip(T* - T_t, -delta_max, delta_max)               (8)
    5. T_{t+1} = clip(T_t + dT, T_min, T_max)                   (9)
    6. every r_i of the batch is mapped with the *new* T_{t+1}  (10-12, :func:`adapt_map`)

    So the batch is scored after the update ("normalized ... relative to the updated threshold
    T_{t+1}", text before Eq. 10). Defaults are the paper's Table 3: rho = 0.8, L_max = 2000,
    p = 50 (the table writes 0.5, i.e. the median), delta_max = 0.01, T_min = 0, T_max = 0.995,
    eps = 1e-8, alpha_pos = 5, alpha_neg = 2. Percentiles use numpy's linear interpolation.

    T_0 (not given in the paper) is a project choice: by default (``initial_threshold=None``)
    the first batch sets T_0 = Percentile_p of its positive rewards (T_min if it has none),
    clipped to [T_min, T_max]; then Eq. 5-12 run as usual. Reason: with delta_max = 0.01 a fixed
    T_0 far below the raw scores (BERTScore sits near 0.9) needs ~90 steps to catch up, and all
    that time the adaptive reward saturates near 1, which is the collapse Adapt is meant to
    remove. Pass a float to fix T_0 instead.

    If no reward passes the filter and the history is empty, T* is undefined and the threshold
    stays (dT = 0). ``None`` entries (unscorable rows) are skipped and returned as ``None``.
    With ``frozen = True`` the call maps with the current threshold and changes no state.
    """

    def __init__(self, rho: float = 0.8, max_history: int = 2000, percentile: float = 50.0,
                 max_delta: float = 0.01, t_min: float = 0.0, t_max: float = 0.995,
                 eps: float = 1e-8, alpha_pos: float = 5.0, alpha_neg: float = 2.0,
                 initial_threshold: float | None = None):
        if not 0.0 <= percentile <= 100.0:
            raise ValueError(f"AdaptiveThreshold: percentile is in [0, 100], got {percentile}")
        if not t_min <= t_max < 1.0:
            raise ValueError(f"AdaptiveThreshold: need t_min <= t_max < 1, got {t_min}, {t_max}")
        if max_history < 1 or max_delta < 0:
            raise ValueError("AdaptiveThreshold: max_history >= 1 and max_delta >= 0 required")
        self.rho, self.max_history, self.percentile = rho, int(max_history), float(percentile)
        self.max_delta, self.t_min, self.t_max, self.eps = max_delta, t_min, t_max, eps
        self.alpha_pos, self.alpha_neg = alpha_pos, alpha_neg
        self.initial_threshold = initial_threshold
        self.threshold: float | None = None if initial_threshold is None else self._clip(initial_threshold)
        self.history: deque[float] = deque(maxlen=self.max_history)
        self.steps = 0
        self.frozen = False

    def _clip(self, t: float) -> float:
        return float(min(self.t_max, max(self.t_min, t)))

    def _warm_start(self, rewards: Sequence[float]) -> float:
        import numpy as np

        pos = [r for r in rewards if r > 0]
        return self._clip(float(np.percentile(pos, self.percentile)) if pos else self.t_min)

    def update(self, rewards: Sequence[float]) -> float:
        """Eq. 5-9 on one batch of raw rewards (no ``None``); returns T_{t+1}."""
        import numpy as np

        if self.threshold is None:
            self.threshold = self._warm_start(rewards)
        t = self.threshold
        cut = max(0.0, self.rho * t)
        self.history.extend(float(r) for r in rewards if r > cut)  # deque keeps the newest L_max
        if self.history:
            target = float(np.percentile(list(self.history), self.percentile))
            delta = min(self.max_delta, max(-self.max_delta, target - t))
            self.threshold = self._clip(t + delta)
        self.steps += 1
        return self.threshold

    def transform(self, rewards: Sequence[float], threshold: float | None = None) -> list[float]:
        """Eq. 10-12 with ``threshold`` (default: the current one), no state change."""
        t = self.threshold if threshold is None else threshold
        if t is None:
            raise ValueError("AdaptiveThreshold.transform: no threshold yet (call it on a batch first)")
        return [adapt_map(float(r), t, self.alpha_pos, self.alpha_neg, self.eps) for r in rewards]

    def __call__(self, rewards: Sequence[float | None]) -> list[float | None]:
        """One training step: update the state (unless frozen), then map the batch (Eq. 5-12)."""
        vals = [float(r) for r in rewards if r is not None]
        if not vals:
            return [None] * len(rewards)
        if self.frozen:
            t = self.threshold if self.threshold is not None else self._warm_start(vals)
        else:
            t = self.update(vals)
        mapped = iter(self.transform(vals, t))
        return [None if r is None else next(mapped) for r in rewards]

    def state_dict(self) -> dict:
        return {"threshold": self.threshold, "history": list(self.history), "steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        missing = {"threshold", "history", "steps"} - set(state)
        if missing:
            raise KeyError(f"AdaptiveThreshold.load_state_dict: state lacks {sorted(missing)}")
        t = state["threshold"]
        self.threshold = None if t is None else float(t)
        self.history = deque((float(r) for r in state["history"]), maxlen=self.max_history)
        self.steps = int(state["steps"])


def _adapt_options(options: dict) -> dict:
    allowed = {"rho", "max_history", "percentile", "max_delta", "t_min", "t_max", "eps",
               "alpha_pos", "alpha_neg", "initial_threshold"}
    unknown = set(options) - allowed
    if unknown:
        raise TypeError(f"ARMed adaptive reward: unknown options {sorted(unknown)}; "
                        f"known: {sorted(allowed)}")
    return options


class AdaptiveSemanticReward:
    """R_as (ARMed Eq. 13) as a TRL reward with one :class:`AdaptiveThreshold` per metric.

    Raw BERTScore and cosine of the parsed ``<answer>`` vs ``answer`` are computed for the
    scorable rows of the batch, each metric's batch goes through its own Adapt (one step), and
    R_as = lambda2 * Adapt(BERTScore) + (1 - lambda2) * Adapt(Cos). The raw and adapted values
    of the last batch stay in ``last_raw`` / ``last_adapted`` (ARMed Fig. 3 diagnostic) and, when
    TRL passes ``log_metric``, thresholds and means are logged under ``armed/...``.
    """

    checkpoint_state = True  # opt-in: the trainer checkpoints state_dict() (medrl.types.StatefulReward)

    def __init__(self, lambda2: float = 0.2, model: str | None = None,
                 bertscore_model: str | None = None, num_layers: int | None = None,
                 name: str = "armed_adaptive_semantic", **adapt_options):
        adapt_options = _adapt_options(adapt_options)
        self.lambda2, self.model, self.bertscore_model, self.num_layers = lambda2, model, bertscore_model, num_layers
        self.adapt = {"bertscore": AdaptiveThreshold(**adapt_options),
                      "cosine": AdaptiveThreshold(**adapt_options)}
        self.last_raw: dict[str, list[float]] = {"bertscore": [], "cosine": []}
        self.last_adapted: dict[str, list[float]] = {"bertscore": [], "cosine": []}
        self.__name__ = name

    @property
    def frozen(self) -> bool:
        return all(a.frozen for a in self.adapt.values())

    @frozen.setter
    def frozen(self, value: bool) -> None:
        for a in self.adapt.values():
            a.frozen = bool(value)

    def scores(self, preds: list[str], refs: list[str], log_metric=None) -> list[float]:
        """R_as for a batch of (answer, reference) pairs; advances both Adapt states by one step."""
        raw = {"bertscore": bertscore_f1(preds, refs, self.bertscore_model, num_layers=self.num_layers),
               "cosine": embedding_cosine(preds, refs, self.model)}
        adapted = {k: self.adapt[k](v) for k, v in raw.items()}
        self.last_raw, self.last_adapted = raw, adapted
        if callable(log_metric) and preds:
            for k in raw:
                log_metric(f"armed/{k}_threshold", float(self.adapt[k].threshold))
                for kind, vals in (("raw", raw[k]), ("adaptive", adapted[k])):  # Fig. 3: mean and variance
                    mean = sum(vals) / len(vals)
                    log_metric(f"armed/{k}_{kind}_mean", mean)
                    log_metric(f"armed/{k}_{kind}_var", sum((v - mean) ** 2 for v in vals) / len(vals))
        return [semantic_reward(b, c, self.lambda2)
                for b, c in zip(adapted["bertscore"], adapted["cosine"])]

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        log = kwargs.get("log_metric")
        # the answers as the decision reads them (medrl.rewards.semantic.read_answers): no hidden text embedded
        return record_unscorable(self, score_answers(completions, kwargs,
                                                     lambda p, r: self.scores(read_answers(p, r), r, log),
                                                     reward=self.__name__))

    def state_dict(self) -> dict:
        return {k: a.state_dict() for k, a in self.adapt.items()}

    def load_state_dict(self, state: dict) -> None:
        for k, a in self.adapt.items():
            if k not in state:
                raise KeyError(f"{self.__name__}.load_state_dict: state lacks {k!r}")
            a.load_state_dict(state[k])


class ArmedReward:
    """The ARMed total reward, Eq. 14, as one TRL reward (owns its adaptive semantic state).

    R_total = (g1 * R_c + g2 * R_as + g3 * R_f) / (g1 + g2 + g3) with R_c (Eq. 3) and R_as
    (Eq. 13) on the parsed ``<answer>`` and R_f the format reward. Rows without a reference
    answer are ``None``. Alternatively configure ``armed_textual``, ``armed_adaptive_semantic``
    and ``format`` as three rewards with TRL weights 0.4/0.4/0.2 (same sum, separate logging).
    """

    checkpoint_state = True  # opt-in: the trainer checkpoints state_dict() (medrl.types.StatefulReward)

    def __init__(self, lambda1: float = 0.5, gammas: Sequence[float] = GAMMAS, **semantic_options):
        self.lambda1, self.gammas = lambda1, tuple(gammas)
        total_reward(0.0, 0.0, 0.0, self.gammas)  # validate gammas now
        self.semantic = AdaptiveSemanticReward(name="armed", **semantic_options)
        self.__name__ = "armed"

    @property
    def frozen(self) -> bool:
        return self.semantic.frozen

    @frozen.setter
    def frozen(self, value: bool) -> None:
        self.semantic.frozen = value

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        parsed, refs, idx = answer_rows(completions, kwargs, reward=self.__name__)
        # guard (project addition, medrl.rewards.base.answer_rejection): a rejected answer gets
        # R_c = R_as = 0 and stays out of the adaptive statistics; Eq. 14 is unchanged
        rejected = guarded_rows(parsed, refs, idx, kwargs, reward=self.__name__)
        kept = [i for i in idx if i not in rejected]
        questions = column(kwargs, "question", len(completions), reward=self.__name__)
        # the answer as the decision reads it (medrl.answers.metric_text): markup is never scored as content
        preds = {i: metric_text(parsed[i].answer, refs[i], question=questions[i]) for i in kept}
        r_as = dict(zip(kept, self.semantic.scores([preds[i] for i in kept], [refs[i] for i in kept],
                                                   kwargs.get("log_metric"))))
        out: list = [None] * len(completions)
        for i in unreadable_rows(parsed, refs):
            out[i] = UNSCORABLE  # the completion has no one answer (two answer blocks, text after it)
        for i in idx:
            r_c = 0.0 if i in rejected else textual_reward(bleu1(preds[i], refs[i]), rouge1(preds[i], refs[i]),
                                                           self.lambda1)
            r_f = 1.0 if parsed[i].well_formed else 0.0  # the format reward (medrl.rewards.format)
            out[i] = total_reward(r_c, r_as.get(i, 0.0), r_f, self.gammas)
        return record_unscorable(self, out)

    def state_dict(self) -> dict:
        return self.semantic.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.semantic.load_state_dict(state)


def textual_rewards(preds, refs, lambda1: float = 0.5, questions=None) -> list[float]:
    """Eq. 3 for a batch of (answer, reference) pairs, each answer as the decision reads it
    (:func:`medrl.rewards.semantic.read_answers`)."""
    preds = read_answers(preds, refs, questions)
    return [textual_reward(bleu1(p, r), rouge1(p, r), lambda1) for p, r in zip(preds, refs)]


def semantic_rewards(preds, refs, lambda2: float = 0.2, model: str | None = None,
                     bertscore_model: str | None = None, num_layers: int | None = None,
                     questions=None) -> list[float]:
    """Eq. 4 (raw, not adapted) for a batch of (answer, reference) pairs, each answer as the
    decision reads it (:func:`medrl.rewards.semantic.read_answers`)."""
    preds = read_answers(preds, refs, questions)
    bs = bertscore_f1(preds, refs, bertscore_model, num_layers=num_layers)
    cs = embedding_cosine(preds, refs, model)
    return [semantic_reward(b, c, lambda2) for b, c in zip(bs, cs)]


@REWARDS.register("armed_textual")
def make_armed_textual(*, lambda1: float = 0.5) -> Reward:
    """R_c (Eq. 3) of the parsed ``<answer>`` vs ``answer``."""
    return Reward("armed_textual", answer_metric, metric=textual_rewards, lambda1=lambda1)


document_options(make_armed_textual, lambda1="ARMed Eq. 3: R_c = lambda1 BLEU-1 + (1 - lambda1) ROUGE-1")


@REWARDS.register("armed_semantic")
def make_armed_semantic(*, lambda2: float = 0.2, model: str | None = None,
                        bertscore_model: str | None = None, num_layers: int | None = None) -> Reward:
    """The raw (non-adaptive) R_s (Eq. 4): the GRPO baseline of the ARMed ablation."""
    return Reward("armed_semantic", answer_metric, metric=semantic_rewards, lambda2=lambda2,
                  model=model, bertscore_model=bertscore_model, num_layers=num_layers)


#: help of the semantic reward's options (ARMed Eq. 4 / 13), shared by the three rewards that take them
SEMANTIC_OPTION_HELP = dict(
    lambda2="ARMed Eq. 4 / 13: R_s = lambda2 BERTScore + (1 - lambda2) cosine similarity",
    model=f"the cosine part's sentence encoder: {ENCODER_HELP}",
    bertscore_model="the BERTScore part's encoder (None: the offline all-MiniLM-L6-v2)",
    num_layers=NUM_LAYERS_HELP)
#: help of Adapt()'s options (ARMed Eq. 5-12, Table 3)
ADAPT_OPTION_HELP = dict(
    rho="ARMed Eq. 5 / Table 3: rewards above rho * T_t enter the history",
    max_history="ARMed Eq. 6 / Table 3: L_max, rewards kept in the history",
    percentile="ARMed Eq. 7 / Table 3: the history percentile that is the target threshold (50 = the median)",
    max_delta="ARMed Eq. 8 / Table 3: largest threshold move per step",
    t_min="ARMed Eq. 9 / Table 3: lowest threshold",
    t_max="ARMed Eq. 9 / Table 3: highest threshold (below 1)",
    eps="ARMed Eq. 10-11 / Table 3: guards the division",
    alpha_pos="ARMed Eq. 12 / Table 3: tanh slope above the threshold",
    alpha_neg="ARMed Eq. 12 / Table 3: tanh slope below the threshold",
    initial_threshold=("T_0, the threshold before any history (not given in the paper; None: the project's choice, "
                       "see AdaptiveThreshold)"))
document_options(make_armed_semantic, **SEMANTIC_OPTION_HELP)


@REWARDS.register("armed_adaptive_semantic")
def make_armed_adaptive_semantic(**options) -> AdaptiveSemanticReward:
    """R_as (Eq. 13); options: lambda2, model, bertscore_model, num_layers and the Adapt
    parameters (rho, max_history, percentile, max_delta, t_min, t_max, eps, alpha_pos,
    alpha_neg, initial_threshold)."""
    return AdaptiveSemanticReward(**options)


document_options(make_armed_adaptive_semantic, **SEMANTIC_OPTION_HELP, **ADAPT_OPTION_HELP)


@REWARDS.register("armed")
def make_armed(**options) -> ArmedReward:
    """R_total (Eq. 14); options: lambda1, gammas, plus those of ``armed_adaptive_semantic``."""
    return ArmedReward(**options)


document_options(make_armed, lambda1="ARMed Eq. 3: R_c = lambda1 BLEU-1 + (1 - lambda1) ROUGE-1",
                 gammas="ARMed Eq. 14: weights of R_c, R_as and R_f (normalised by their sum)",
                 **SEMANTIC_OPTION_HELP, **ADAPT_OPTION_HELP)
