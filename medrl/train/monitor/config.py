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
    """The ``algorithm.monitor`` recipe section (every key optional)."""

    enabled: bool = True
    window: int = 6  # steps in a trend window (trend alerts need a full window)
    persist: int = 2  # consecutive steps repeat_ngram / restate must stay over their thresholds
    examples: int = 3  # example rollouts stored with an alert
    guard_share_max: float = 0.25  # guard/<reason>: share of refused rollouts (and the reward pays them)
    # disagreement: the sequential test (medrl.train.monitor.sequential), both directions
    null_rate: float = 0.2  # p0: share of the verdict's wrong (right) rollouts a clean run may pay (refuse)
    alt_rate: float = 0.4  # p1: the share the test is built to catch fast
    alpha: float = 0.05  # bound on the chance of a false alarm within `horizon` steps of a clean run (alpha/2 a direction)
    horizon: int = 0  # steps the bound covers; 0 = the run's max_steps (DEFAULT_HORIZON without one)
    # the per-answer leak test (medrl.train.monitor.answers): null_rate as above, per answer and record
    answer_alt_rate: float = 0.8  # p1 of one answer's wrong rollouts paid: a hole pays nearly all of them
    answer_alpha: float = 0.05  # bound on a false alarm of any tracked answer within `horizon` steps
    max_answers: int = 64  # answers tracked (the first to appear as wrong answers)
    reward_rise: float = 0.25  # reward_vs_correctness: relative reward rise over the window ...
    correct_rise: float = 0.02  # ... while correctness rises by less than this (absolute)
    length_growth_max: float = 3.0  # completion tokens, 2nd half / 1st half of the window
    answer_growth_max: float = 3.0  # answer characters, same
    repeat_ngram_max: float = 0.5
    restate_max: float = 0.6
    format_drop: float = 0.4  # well-formed share falls by this over the window
    zero_variance_steps: int = 3  # consecutive all-zero-variance steps before the health warning
    probe_every: int = 0  # held-out probe every N steps (0 = off)
    probe_records: int = 16
    probe_gap_max: float = 0.3
    probe_max_new_tokens: int = 0  # 0: the run's own max_completion_length (a shorter probe never reaches </answer>)
    probe_min_records: int = 8  # probe answers (truncated ones left out) a probe_gap alert needs
    answer_paid_min: float = 0.5  # without a `correct` column: an answer reward >= this counts as "paid as correct"
    min_evidence: int = 48  # rollouts each half of a trend window needs (the window grows until it has them)
    max_window: int = 48  # the longest a trend window may grow to, in steps
    guard_reward_min: float = 1e-6  # refused answers must earn more than this for `guard/<reason>`
    stop_on_alert: bool = False

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
