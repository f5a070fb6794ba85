"""The monitor's settings (:class:`MonitorConfig`, the recipe's ``monitor:`` section), the alert
signals it can raise (:class:`AlertSignal`) and an alert's record (:class:`Alert`)."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from medrl.train.monitor.sequential import ShareTest

#: the horizon the disagreement test's bound covers when neither ``horizon`` nor the run's
#: ``max_steps`` gives one (a run fed by hand, :meth:`HackingMonitor.observe_rollouts`)
DEFAULT_HORIZON = 1000

#: settings that no longer exist, and what replaced them (named in the error a recipe gets)
_REPLACED = {
    "disagreement_max": "the sequential disagreement test (null_rate, alt_rate, alpha, horizon)",
    "disagreement_min": "the sequential disagreement test (null_rate, alt_rate, alpha, horizon)",
}


class AlertSignal(str, Enum):
    """Every alert the monitor raises (``Alert.signal`` holds the value). ``guard/<category>``
    alerts are :meth:`guard` of a :data:`GUARD_CATEGORIES` category."""

    GUARD = "guard"
    DISAGREEMENT = "disagreement"
    REWARD_VS_CORRECTNESS = "reward_vs_correctness"
    LENGTH_GROWTH = "length_growth"
    ANSWER_LENGTH_GROWTH = "answer_length_growth"
    REPEAT_NGRAM = "repeat_ngram"
    RESTATE = "restate"
    FORMAT_DROP = "format_drop"
    ZERO_VARIANCE = "zero_variance"
    PROBE_GAP = "probe_gap"
    ANSWER_LEAK = "answer_leak"

    @staticmethod
    def guard(category: str) -> str:
        """``guard/<category>``: the answer guard's refusals of that category are paid."""
        return f"{AlertSignal.GUARD.value}/{category}"


@dataclass
class MonitorConfig:
    """The ``algorithm.monitor`` recipe section (every key optional); each field's ``help`` is what
    ``medrl recipes show NAME --explain`` prints."""

    enabled: bool = field(default=True, metadata={"help": "watch every training step for reward hacking"})
    window: int = field(default=6, metadata={"help": (
        "steps in a trend window (trend alerts need a full window; it grows up to max_window until each half "
        "holds min_evidence rollouts)")})
    persist: int = field(default=2, metadata={"help": (
        "consecutive steps repeat_ngram / restate must stay over their maxima before they alert")})
    examples: int = field(default=3, metadata={"help": "example rollouts stored with an alert in hacking.jsonl"})
    guard_share_max: float = field(default=0.25, metadata={"help": (
        "guard/<reason> alerts when at least this share of rollouts has an answer the answer guard refuses and "
        "the reward pays them")})
    # disagreement: the sequential test (medrl.train.monitor.sequential), both directions
    null_rate: float = field(default=0.2, metadata={"help": (
        "p0 of the sequential disagreement test: the share of the offline verdict's wrong (right) rollouts a clean "
        "run may pay (refuse)")})
    alt_rate: float = field(default=0.4, metadata={"help": (
        "p1 of the sequential disagreement test: the share it is built to catch fast")})
    alpha: float = field(default=0.05, metadata={"help": (
        "bound on the chance of a false disagreement alarm within horizon steps of a clean run (alpha/2 a "
        "direction)")})
    horizon: int = field(default=0, metadata={"help": (
        "steps the false-alarm bound covers; 0 = the run's max_steps (1000 without one)")})
    # the per-answer leak test (medrl.train.monitor.answers): null_rate as above, per answer and record
    answer_alt_rate: float = field(default=0.8, metadata={"help": (
        "p1 of the per-answer leak test: the share of one answer's wrong rollouts a hole pays (nearly all of them)")})
    answer_alpha: float = field(default=0.05, metadata={"help": (
        "bound on the chance that any tracked answer raises a false answer_leak alarm within horizon steps of a "
        "clean run")})
    max_answers: int = field(default=64, metadata={"help": (
        "answers the per-answer leak test tracks (the first to appear as wrong answers)")})
    reward_rise: float = field(default=0.25, metadata={"help": (
        "reward_vs_correctness alerts when the answer reward rises by this (relative) over the trend window ...")})
    correct_rise: float = field(default=0.02, metadata={"help": (
        "... while the offline verdict's correct share rises by less than this (absolute)")})
    length_growth_max: float = field(default=3.0, metadata={"help": (
        "length_growth alerts when completion tokens in the window's second half over its first half reach this")})
    answer_growth_max: float = field(default=3.0, metadata={"help": (
        "answer_length_growth alerts when the answer/reference length ratio grows by this factor over the window")})
    repeat_ngram_max: float = field(default=0.5, metadata={"help": (
        "repeat_ngram alerts when the share of repeated word 3-grams in a completion stays above this")})
    restate_max: float = field(default=0.6, metadata={"help": (
        "restate alerts when the share of reasoning steps that restate the question or the answer stays above this")})
    format_drop: float = field(default=0.4, metadata={"help": (
        "format_drop alerts when the share of well-formed <think>/<answer> completions falls by this over the "
        "window")})
    zero_variance_steps: int = field(default=3, metadata={"help": (
        "consecutive steps in which every prompt group has equal rewards before the zero_variance health warning")})
    probe_every: int = field(default=0, metadata={"help": (
        "greedy answers on held-out records every N steps (monitor/probe_accuracy); 0 = off")})
    probe_records: int = field(default=16, metadata={"help": "held-out records the probe answers"})
    probe_gap_max: float = field(default=0.3, metadata={"help": (
        "probe_gap alerts when the training correctness exceeds the probe's accuracy by this")})
    probe_max_new_tokens: int = field(default=0, metadata={"help": (
        "probe answer length in tokens; 0 = the run's own max_completion_length (a shorter probe never reaches "
        "</answer>)")})
    probe_min_records: int = field(default=8, metadata={"help": (
        "probe answers (truncated ones left out) a probe_gap alert needs")})
    answer_paid_min: float = field(default=0.5, metadata={"help": (
        "without a correct column: an answer reward at or above this counts as paid as correct")})
    min_evidence: int = field(default=48, metadata={"help": (
        "rollouts each half of a trend window needs (the window grows until it has them)")})
    max_window: int = field(default=48, metadata={"help": "the longest a trend window may grow to, in steps"})
    guard_reward_min: float = field(default=1e-6, metadata={"help": (
        "refused answers must earn more than this for a guard/<reason> alert")})
    stop_on_alert: bool = field(default=False, metadata={"help": (
        "save a checkpoint and stop the run when a hacking alert fires")})

    def disagreement_test(self, max_steps: int | None = None) -> ShareTest:
        """Each direction's detector settings for a run of ``max_steps`` steps (``horizon`` when
        set): ``alpha / 2`` each, so both together alarm on a clean run with probability <= alpha."""
        horizon = self.horizon or (int(max_steps) if max_steps and max_steps > 0 else DEFAULT_HORIZON)
        return ShareTest(self.null_rate, self.alt_rate, self.alpha / 2, horizon)

    def answer_test(self, max_steps: int | None = None):
        """The per-answer leak test's settings for a run of ``max_steps`` steps (``horizon`` when set)."""
        from medrl.train.monitor.answers import AnswerTest

        horizon = self.horizon or (int(max_steps) if max_steps and max_steps > 0 else DEFAULT_HORIZON)
        return AnswerTest(self.null_rate, self.answer_alt_rate, self.answer_alpha, horizon, self.max_answers)

    @classmethod
    def from_value(cls, value: Any) -> "MonitorConfig":
        """``None``/``True`` -> defaults, ``False`` -> off, a dict -> defaults updated; unknown keys
        and wrong types are refused naming the key."""
        if value is None or value is True:
            return cls()
        if value is False:
            return cls(enabled=False)
        if isinstance(value, MonitorConfig):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"algorithm.monitor must be a mapping or true/false, got {value!r}")
        known = {f.name: f for f in fields(cls)}
        kwargs = {}
        value = dict(value)
        thresholds = value.pop("thresholds", None) or {}  # the recipe's monitor.thresholds: {name: value}
        if not isinstance(thresholds, dict):
            raise ValueError(f"monitor.thresholds must be a mapping of threshold names to numbers, got {thresholds!r}")
        for key, v in thresholds.items():
            if key in value:
                raise ValueError(f"monitor.thresholds.{key}: also set as monitor.{key}; set it once")
            value[key] = v
        for key, v in value.items():
            if v is None:  # the recipe schema's "not set": keep the default
                continue
            if key in _REPLACED:
                raise ValueError(f"algorithm.monitor.{key}: no longer a setting; replaced by {_REPLACED[key]}")
            if key not in known:
                near = difflib.get_close_matches(str(key), known, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise ValueError(f"algorithm.monitor.{key}: unknown setting{hint} (known: {', '.join(known)})")
            typ = known[key].type
            if typ == "int" and isinstance(v, float) and v.is_integer():
                v = int(v)  # monitor.thresholds holds numbers: 3.0 steps is 3
            want = {"bool": bool, "int": int, "float": (int, float)}[typ]
            if isinstance(v, bool) and typ != "bool" or not isinstance(v, want) or (
                    isinstance(v, float) and not math.isfinite(v)) or (typ != "bool" and v < 0):
                raise ValueError(f"algorithm.monitor.{key}: expected a non-negative {typ}, got {v!r}")
            kwargs[key] = float(v) if typ == "float" else v
        config = cls(**kwargs)
        try:
            config.disagreement_test()
            config.answer_test()
        except ValueError as exc:
            raise ValueError(f"algorithm.monitor: {exc}") from None
        return config


@dataclass
class Alert:
    step: int
    signal: str  # an AlertSignal value, or guard/<category>
    value: float
    threshold: float
    message: str
    kind: str = "hacking"  # hacking | health
    examples: list[dict] = field(default_factory=list)


def run_horizon(trainer) -> int | None:
    """How many times the monitor observes a run: its ``max_steps`` (the trainer state's once
    training began), times the generation rounds a step may take with dynamic sampling; None when
    the run gives no step count."""
    state_steps = int(getattr(getattr(trainer, "state", None), "max_steps", 0) or 0)
    steps = state_steps or int(getattr(getattr(trainer, "args", None), "max_steps", 0) or 0)
    if steps <= 0:
        return None
    dynamic = getattr(trainer, "_dynamic", None)
    rounds = 1 + int(getattr(getattr(dynamic, "config", None), "max_rounds", 0) or 0) if dynamic is not None else 1
    return steps * rounds


__all__ = ["Alert", "AlertSignal", "DEFAULT_HORIZON", "MonitorConfig", "run_horizon"]
