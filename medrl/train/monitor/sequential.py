"""The monitor's sequential test: Shiryaev-Roberts e-detectors of the run's disagreement with the
offline verdict, one per direction, with a false-alarm bound that holds by construction.

What is tested. The offline verdict (:func:`medrl.train.monitor.signals.independent_verdict`)
calls some rollouts of a prompt wrong and some right; the run decides them too (its ``correct``
column, or its answer reward at or above ``answer_paid_min``). Two directions are watched:

- *paid wrong*: of the rollouts the verdict calls wrong, the share ``Y`` the run pays as correct
  (a judge that accepts anything, a hole in a judge);
- *refused right*: of the rollouts the verdict calls right, the share ``Y`` the run does not pay
  (a reward that pays something else than the answer, such as its length).

A clean run may disagree now and then. The verdict is a heuristic: an answer that shares no word
with its reference is "wrong" to it. And no judge is perfect. So each direction's null hypothesis
bounds the share rather than setting it to zero:

    H0: given everything before the step, each such rollout goes against the verdict with
        probability at most ``p0`` (``null_rate``), and different prompts are decided
        independently.

*Evidence.* Per prompt the e-value is the bet ``E = 1 + lam (Y - p0)``, with
``lam = (p1 - p0) / (p0 (1 - p0))`` and ``p1`` (``alt_rate``) the share the test is built to
catch fast.

- For a prompt with one such rollout, the bet is exactly the binomial likelihood ratio
  ``(p1/p0)^x ((1-p1)/(1-p0))^(1-x)``.
- For more rollouts it is the linear bet of Waudby-Smith & Ramdas (2024). It needs no
  independence *inside* a prompt. The rollouts of one prompt repeat each other's answers, so
  counting them as independent binomial draws would overstate the evidence.
- Under H0, ``E[Y | past] <= p0``. The bet is linear and non-negative in ``Y``, so
  ``E[E | past] <= 1``. A step's e-value is the product over its prompts.

*Detector.* The Shiryaev-Roberts e-detector (Shiryaev 1963, Roberts 1966; in the e-value form of
Shin, Ramdas & Rinaldo 2024): ``R_0 = 0``, ``R_t = (1 + R_{t-1}) E_t``, with ``E_t`` the step's
e-value. ``R_t`` is the sum, over start steps ``k <= t``, of ``prod_{s=k..t} E_s``: the evidence for a
leak that began at any step. It alarms at ``R_t >= T / alpha``, kept in logs as
``log R_t >= log(T / alpha)``.

*The bound.*

1. Under H0, ``E[R_t | past] <= 1 + R_{t-1}``, so ``R_t - t`` is a supermartingale from 0.
2. Stop at the alarm or at ``T`` (``horizon``). Optional stopping gives ``E[R_stop] <= T``.
3. Markov's inequality then gives

       P_H0(any alarm within T steps) <= alpha.

4. The monitor runs one detector per direction at ``alpha / 2`` each, so a clean run alarms in
   either direction with probability at most ``alpha`` (Bonferroni).

*Why sum over start steps.* It keeps a late leak detectable after a long clean stretch. A plain
SPRT (one start, its evidence sinking while the run is clean) would not. Page's CUSUM (the
largest product instead of the sum) has the same bound but alarms later, since the sum is never
smaller than its largest term.

References: A. N. Shiryaev, "On optimum methods in quickest detection problems", Theory Probab.
Appl. 8 (1963) 22-46; S. W. Roberts, "A comparison of some control chart procedures",
Technometrics 8 (1966) 411-430; E. S. Page, "Continuous inspection schemes", Biometrika 41
(1954) 100-115; I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by
betting", JRSS-B 86 (2024) 1-27; J. Shin, A. Ramdas and A. Rinaldo, "E-detectors: a
nonparametric framework for sequential change detection", New England J. Statist. Data Sci. 2
(2024) 229-260.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class ShareTest:
    """One detector's settings: ``null_rate`` p0, ``alt_rate`` p1 (0 < p0 < p1 < 1), ``alpha`` (the
    bound on its false alarm within ``horizon`` steps of a clean run)."""

    null_rate: float
    alt_rate: float
    alpha: float
    horizon: int

    def __post_init__(self) -> None:
        if not 0.0 < self.null_rate < self.alt_rate < 1.0:
            raise ValueError(f"the disagreement test needs 0 < null_rate < alt_rate < 1, got null_rate="
                             f"{self.null_rate}, alt_rate={self.alt_rate}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"the disagreement test needs 0 < alpha < 1, got alpha={self.alpha}")
        if int(self.horizon) < 1:
            raise ValueError(f"the disagreement test needs a horizon of at least 1 step, got {self.horizon}")

    @property
    def bet(self) -> float:
        """``lam``: the stake that makes a one-rollout prompt's e-value the binomial likelihood ratio."""
        return bet_size(self.null_rate, self.alt_rate)

    @property
    def threshold(self) -> float:
        """``log(horizon / alpha)``: the level of ``log R_t`` that alarms."""
        return alarm_threshold(self.alpha, self.horizon)


def bet_size(null_rate: float, alt_rate: float) -> float:
    """``(p1 - p0) / (p0 (1 - p0))``: with it, ``1 + lam (x - p0)`` for one Bernoulli ``x`` equals
    the likelihood ratio of rate p1 to rate p0 (``p1/p0`` at x = 1, ``(1-p1)/(1-p0)`` at x = 0)."""
    return (alt_rate - null_rate) / (null_rate * (1.0 - null_rate))


def group_log_evalue(hits: float, n: int, null_rate: float, alt_rate: float) -> float:
    """``log(1 + lam (hits/n - p0))`` for a prompt whose ``n`` watched rollouts include ``hits``
    that go against the verdict; 0 for a prompt with none (no evidence)."""
    if n <= 0:
        return 0.0
    if not 0 <= hits <= n:
        raise ValueError(f"a prompt cannot have {hits} of {n} rollouts against the verdict")
    return math.log1p(bet_size(null_rate, alt_rate) * (hits / n - null_rate))


def step_log_evalue(groups: Iterable[tuple[float, int]], null_rate: float, alt_rate: float) -> float:
    """The step's log e-value: the sum over its prompts ``(hits, n)`` of :func:`group_log_evalue`
    (the product of independent prompts' e-values)."""
    return sum(group_log_evalue(h, n, null_rate, alt_rate) for h, n in groups)


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
    """:func:`run_detector`'s result: ``log R_t`` after every step, the alarm's step (1-based;
    None without one) and the threshold."""

    statistics: tuple[float, ...]
    alarm_step: int | None
    threshold: float


def run_detector(steps: Sequence[Sequence[tuple[float, int]]], test: ShareTest) -> DetectorRun:
    """One detector over a whole run: ``steps[t]`` holds step t's prompts as ``(hits, n)``.

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


__all__ = ["DetectorRun", "ShareTest", "alarm_threshold", "bet_size", "group_log_evalue", "run_detector", "sr_update",
           "step_log_evalue"]
