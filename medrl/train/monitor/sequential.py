"""The monitor's sequential test: a Shiryaev-Roberts e-detector on the share of wrong answers paid.

What is tested. Each prompt group ``g`` of a step holds ``m_g`` rollouts that the offline verdict
(:func:`medrl.train.monitor.signals.independent_verdict`) calls wrong and the run decides (its
``correct`` column, or its answer reward at or above ``answer_paid_min``); ``Y_g`` is the share of
them the run pays as correct. A clean run's judge may pay some of them (the verdict is a heuristic:
a paraphrase sharing no word with its reference is "wrong" to it, and no judge is perfect), so the
null hypothesis is a bound on that share, not zero:

    H0: given everything before the step, each rollout the verdict calls wrong is paid with
        probability at most ``p0`` (``null_rate``), and different prompts are decided
        independently.

Per group the e-value is the bet ``E_g = 1 + lam (Y_g - p0)`` with ``lam = (p1 - p0) / (p0 (1 - p0))``
(``p1``: ``alt_rate``, the rate the test is built to catch fast). For a group of one rollout this is
exactly the binomial likelihood ratio ``(p1/p0)^x ((1-p1)/(1-p0))^(1-x)``; for larger groups it is
the linear bet of Waudby-Smith & Ramdas (2024), which needs no independence *inside* a group
(rollouts of one prompt repeat each other's answers, so counting them as independent binomial
draws would overstate the evidence). Under H0, ``E[E_g | past] <= 1`` since ``E[Y_g | past] <= p0``
and ``E_g`` is linear and non-negative in ``Y_g``; the step's e-value is the product over its groups.

The detector is the Shiryaev-Roberts e-detector (Shiryaev 1963, Roberts 1966; in the e-value
form of Shin, Ramdas & Rinaldo 2024): ``R_0 = 0``, ``R_t = (1 + R_{t-1}) E_t`` with ``E_t`` the
step's e-value, so ``R_t`` is the sum over start steps ``k <= t`` of ``prod_{s=k..t} E_s`` - the
evidence for a leak that began at any step. It alarms at ``R_t >= T / alpha`` (kept as
``log R_t >= log(T / alpha)``). The bound, by construction: under H0
``E[R_t | past] <= 1 + R_{t-1}``, so ``R_t - t`` is a supermartingale from 0; stopping at the
alarm or at ``T`` (``horizon``), optional stopping gives ``E[R_stop] <= T`` and Markov's
inequality

    P_H0(any alarm within T steps) <= alpha.

Summing over start steps keeps a late leak detectable after a long clean stretch, which a plain
SPRT (one start, evidence sinking while the run is clean) would not; Page's CUSUM (the largest
product instead of the sum) has the same bound but alarms later, since the sum is never smaller
than its largest term.

References: A. N. Shiryaev, "On optimum methods in quickest detection problems", Theory Probab.
Appl. 8 (1963) 22-46; S. W. Roberts, "A comparison of some control chart procedures",
Technometrics 8 (1966) 411-430; E. S. Page, "Continuous inspection schemes", Biometrika 41
(1954) 100-115; I. Waudby-Smith and
A. Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 86 (2024) 1-27;
J. Shin, A. Ramdas and A. Rinaldo, "E-detectors: a nonparametric framework for sequential change
detection", New England J. Statist. Data Sci. 2 (2024) 229-260.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class PaidWrongTest:
    """The test's settings: ``null_rate`` p0, ``alt_rate`` p1 (0 < p0 < p1 < 1), ``alpha`` (the
    bound on a false alarm within ``horizon`` steps of a clean run)."""

    null_rate: float
    alt_rate: float
    alpha: float
    horizon: int

    def __post_init__(self) -> None:
        if not 0.0 < self.null_rate < self.alt_rate < 1.0:
            raise ValueError(f"the paid-wrong test needs 0 < null_rate < alt_rate < 1, got null_rate="
                             f"{self.null_rate}, alt_rate={self.alt_rate}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"the paid-wrong test needs 0 < alpha < 1, got alpha={self.alpha}")
        if int(self.horizon) < 1:
            raise ValueError(f"the paid-wrong test needs a horizon of at least 1 step, got {self.horizon}")

    @property
    def bet(self) -> float:
        """``lam``: the stake that makes a one-rollout group's e-value the binomial likelihood ratio."""
        return bet_size(self.null_rate, self.alt_rate)

    @property
    def threshold(self) -> float:
        """``log(horizon / alpha)``: the level of ``log R_t`` that alarms."""
        return alarm_threshold(self.alpha, self.horizon)


def bet_size(null_rate: float, alt_rate: float) -> float:
    """``(p1 - p0) / (p0 (1 - p0))``: with it, ``1 + lam (x - p0)`` for one Bernoulli ``x`` equals
    the likelihood ratio of rate p1 to rate p0 (``p1/p0`` at x = 1, ``(1-p1)/(1-p0)`` at x = 0)."""
    return (alt_rate - null_rate) / (null_rate * (1.0 - null_rate))


def group_log_evalue(paid: float, wrong: int, null_rate: float, alt_rate: float) -> float:
    """``log(1 + lam (paid/wrong - p0))`` for a group whose ``wrong`` rollouts (the verdict's wrong
    ones the run decided) include ``paid`` the run pays; 0 for a group with none (no evidence)."""
    if wrong <= 0:
        return 0.0
    if not 0 <= paid <= wrong:
        raise ValueError(f"a group cannot pay {paid} of {wrong} wrong rollouts")
    return math.log1p(bet_size(null_rate, alt_rate) * (paid / wrong - null_rate))


def step_log_evalue(groups: Iterable[tuple[float, int]], null_rate: float, alt_rate: float) -> float:
    """The step's log e-value: the sum over its groups ``(paid, wrong)`` of
    :func:`group_log_evalue` (the product of independent groups' e-values)."""
    return sum(group_log_evalue(p, w, null_rate, alt_rate) for p, w in groups)


def alarm_threshold(alpha: float, horizon: int) -> float:
    """``log(horizon / alpha)``: the level of ``log R_t`` at which a clean run of ``horizon``
    steps alarms with probability at most ``alpha``."""
    return math.log(max(int(horizon), 1) / alpha)


def sr_update(log_r: float, log_evalue: float) -> float:
    """Shiryaev-Roberts in logs: ``log R_t = log E_t + log(1 + R_{t-1})`` (``log_r`` = -inf
    before the first step, where ``R_0 = 0``)."""
    return log_evalue + (0.0 if log_r == -math.inf else _log1p_exp(log_r))


def _log1p_exp(x: float) -> float:
    """``log(1 + e^x)`` without overflow."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


@dataclass(frozen=True)
class DetectorRun:
    """:func:`paid_wrong_detector`'s result: ``log R_t`` after every step, the alarm's step
    (1-based; None without one) and the threshold."""

    statistics: tuple[float, ...]
    alarm_step: int | None
    threshold: float


def paid_wrong_detector(steps: Sequence[Sequence[tuple[float, int]]], test: PaidWrongTest) -> DetectorRun:
    """Run the test over a whole run: ``steps[t]`` holds step t's groups as ``(paid, wrong)``.

    Pure; the monitor applies :func:`step_log_evalue` and :func:`sr_update` one step at a time,
    which gives the same statistics. Under H0 (module docstring) the probability that
    ``alarm_step`` is not None for a run of at most ``test.horizon`` steps is at most
    ``test.alpha``."""
    log_r, out, alarm = -math.inf, [], None
    for t, groups in enumerate(steps, start=1):
        log_r = sr_update(log_r, step_log_evalue(groups, test.null_rate, test.alt_rate))
        out.append(log_r)
        if alarm is None and log_r >= test.threshold:
            alarm = t
    return DetectorRun(tuple(out), alarm, test.threshold)


__all__ = ["DetectorRun", "PaidWrongTest", "alarm_threshold", "bet_size", "group_log_evalue", "paid_wrong_detector",
           "sr_update", "step_log_evalue"]
