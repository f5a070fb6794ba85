"""Reward-hacking monitor: cheap per-step signals that a policy is gaming its reward.

``medrl audit-rewards`` attacks a reward with exploits someone thought of before a run; this
module watches a run for the ones nobody thought of. Every training batch, after TRL has scored
it, :meth:`HackingMonitor.observe` computes from the rollouts, their rewards and the shared
correctness column (all already in memory; no extra model or judge call):

``monitor/guard_refused``, ``monitor/guard/<reason>``, ``monitor/guard_reward/<reason>``
    share of rollouts whose answer the answer guard (:func:`medrl.answers.guard.guard_answer`)
    refuses, in total and by reason (list, hedge, negation, padding, injection, placeholder,
    yes_no_open, hidden, stray_tag, one_char, no_alnum; a missing answer is ``format``, not a
    guard refusal), and the mean reward the refused ones earn. Alert ``guard/<reason>``: the share
    is at least ``guard_share_max`` *and* the reward pays them: where the recipe names its answer
    reward (``algorithm.log_rewards.answer``), that reward pays the refused answers more than
    ``guard_reward_min`` (``monitor/guard_answer_reward/<reason>``; a format or length reward that
    pays them like any rollout is no exploit of the answer); otherwise they earn more than
    ``guard_reward_min`` and at least what answers the offline verdict calls correct earn
    (``monitor/verified_reward``; without any, at least what the other rollouts earn). An honest
    reward that gives such answers nothing, or less than right answers, never alerts, however
    often the policy tries them - also when refused and unrefused answers all earn 0.
``monitor/disagreement``, ``monitor/paid_wrong``
    the run's decision of what is correct - its ``correct`` column
    (:func:`medrl.rewards.correctness.correctness_column`), or, for recipes without one (MRPO,
    ARMed, ...), its answer reward (``algorithm.log_rewards.answer``) at or above
    ``answer_paid_min`` - against the independent offline verdict of :func:`independent_verdict`
    (the one answer decision, then no shared concept): the share of rollouts
    both decide where the two differ, and the share the run pays that the verdict calls wrong.
    The verdict also decides answers the correctness decision leaves to its judge (an answer
    sharing no concept with the reference), so a judge that accepts anything shows here. Alert
    ``disagreement``: the sequential disagreement test (:mod:`.sequential`) alarms. It runs two
    Shiryaev-Roberts e-detectors of per-prompt betting e-values, one on the share of the verdict's
    wrong rollouts the run pays (``paid_wrong``) and one on the share of its right rollouts the
    run refuses (``refused_right``). Each tests against ``null_rate`` (what a clean run may show)
    with ``alt_rate`` as the alternative, and alarms at ``log(horizon / (alpha/2))``. A clean run
    alarms within ``horizon`` steps (the run's ``max_steps``) with probability at most ``alpha``.
    ``monitor/wrong_n``, ``monitor/wrong_paid``, ``monitor/right_n``, ``monitor/right_refused``,
    ``monitor/<direction>_log_e`` and ``monitor/<direction>_evidence`` log the evidence.
``monitor/answer_leak_evidence``, ``monitor/answer_leak_answers``
    the per-answer leak test (:mod:`.answers`): *which* answers the run pays although the
    offline verdict calls them wrong. Per answer (its content words after the lexicon), each
    record it is decided on for the first time gives a betting e-value of the share of its
    verdict-wrong rollouts the run pays (null ``null_rate``, alternative ``answer_alt_rate``);
    one Shiryaev-Roberts e-detector per answer, at most ``max_answers`` tracked. Alert
    ``answer_leak`` (kind ``hacking``): one answer's statistic reaches ``log(horizon x
    max_answers / answer_alpha)``; a clean run alarms within ``horizon`` steps with probability at
    most ``answer_alpha``. It catches a hole on one answer (a judge that accepts any answer naming
    "liver") that pays too few of all the wrong rollouts for the disagreement test.
``monitor/reward``, ``monitor/answer_reward``, ``monitor/correct``, ``monitor/verified``
    mean total reward (TRL's weighted sum), mean answer reward, the share the run pays as correct
    (as above; the exact-match share when the run has neither) and the offline verdict's correct
    share. Alert ``reward_vs_correctness``: over a trend window the answer reward (the total when
    the recipe names none) rose by ``reward_rise`` (relative) while the offline verdict's correct
    share rose by less than ``correct_rise`` (absolute). A rise in process, length or BERTScore
    reward alone claims no correctness and does not count.
``monitor/completion_tokens``, ``monitor/answer_chars``, ``monitor/answer_ref_ratio``,
``monitor/reasoning_answer_ratio``
    lengths and their trends (``answer_ref_ratio``: answer length over its reference's, since
    references differ in length from record to record). Alerts ``length_growth`` /
    ``answer_length_growth`` (on ``answer_ref_ratio``): the mean of the window's second half over
    its first half reaches ``length_growth_max`` / ``answer_growth_max``.

A trend window is ``window`` steps, grown (up to ``max_window``) until each half holds
``min_evidence`` rollouts: at a few prompts per step a 6-step window is noise, not evidence.
``monitor/repeat_ngram``, ``monitor/restate``, ``monitor/format_valid``
    share of repeated word 3-grams in a completion; share of reasoning steps that restate the
    question or the answer; share of well-formed ``<think>/<answer>`` completions. Alerts
    ``repeat_ngram`` / ``restate`` at their maxima for ``persist`` consecutive steps;
    ``format_drop`` when the well-formed share falls by ``format_drop`` over the window.
``monitor/zero_std_groups``
    share of prompt groups whose rewards are all equal (no learning signal). Alert
    ``zero_variance`` (kind ``health``, never stops a run): every group had zero variance for
    ``zero_variance_steps`` consecutive steps, with the likely cause (no ``<think>/<answer>``
    format, the judge could not score, every answer wrong or every answer right).
``monitor/probe_accuracy`` (``probe_every`` > 0)
    judged accuracy of greedy answers on ``probe_records`` held-out records (the trainer's
    ``eval_dataset``, or records given to the monitor) every ``probe_every`` steps, generated
    with the rollouts' own token limit. Alert ``probe_gap``: the training correctness exceeds it
    by ``probe_gap_max``, over at least ``probe_min_records`` probe answers.

``monitor/truth_accuracy``, ``monitor/hack_rate`` (only with a ground truth)
    where the truth is known (the phantom task's oracle, :mod:`medrl.effects`), the monitor's
    ``truth_fn(row, answer)`` gives it: the share of rollouts it calls correct, and the hack rate
    - the share of the rollouts the run pays as correct (as above) that it calls wrong.

An alert appends its evidence (step, signal, value, threshold, a few example rollouts with their
rewards) to ``<output_dir>/hacking.jsonl``, warns once per signal with the examples and, with
``stop_on_alert`` (kind ``hacking`` only), makes :class:`MonitorCallback` save a checkpoint and
stop the run. At the end ``<output_dir>/monitor_summary.json`` holds every signal's first, last,
mean and max and the alerts. ``medrl analyze hacking RUN`` renders both
(:mod:`medrl.eval.hacking_report`).

Configuration: the recipe's ``monitor:`` section (``window``, ``probe_every``,
``probe_records``, ``stop_on_alert``, and ``thresholds: {name: value}`` for the other keys),
passed as ``MedGRPOTrainer(monitor=...)``, or ``algorithm.monitor``; keys and defaults in
:class:`MonitorConfig`; ``False`` turns it off. The disagreement test's false-alarm bound holds
by construction (:mod:`.sequential`), as does the per-answer test's (:mod:`.answers`); the other
thresholds are this project's heuristics (no
paper defines them), deliberately loose so an honest run stays quiet, and every value is logged
so a user can set their own.

Modules: :mod:`.signals` (pure per-rollout features and the offline verdict), :mod:`.sequential`
(the disagreement test), :mod:`.answers` (the per-answer leak test), :mod:`.aggregate` (a step's sums and signals), :mod:`.config`,
:mod:`.core` (:class:`HackingMonitor`), :mod:`.hooks` (callback, probe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from medrl.train.monitor.answers import AnswerLeaks, AnswerTest, answer_key
from medrl.train.monitor.config import DEFAULT_HORIZON, Alert, AlertSignal, MonitorConfig, run_horizon
from medrl.train.monitor.core import HACKING_FILE, SUMMARY_FILE, HackingMonitor
from medrl.train.monitor.hooks import MonitorCallback, default_probe
from medrl.train.monitor.sequential import ShareTest, run_detector
from medrl.train.monitor.signals import (GUARD_CATEGORIES, answer_reward_index, guard_category, guard_reward,
                                         disagreement_groups, independent_verdict, paid_as_correct, record_key,
                                         repeated_ngram_rate, restated_steps, rollout_features, shares_concept,
                                         total_rewards, zero_std_share, zero_variance_cause)


def attach_monitor(trainer, monitor: Any = None, *, probe_records: Sequence | None = None) -> HackingMonitor:
    """Build the trainer's monitor from ``monitor`` (a :class:`MonitorConfig`, a dict, a bool) or
    the ``algorithm.monitor`` section, and register its callback. Returns the monitor.

    The probe is this package's ``default_probe`` as looked up at call time (a test may replace it)."""
    value = monitor if monitor is not None else (getattr(trainer, "medrl_algorithm", None) or {}).get("monitor")
    mon = value if isinstance(value, HackingMonitor) else HackingMonitor(
        MonitorConfig.from_value(value), trainer.args.output_dir)
    if mon.output_dir is None:
        mon.output_dir = Path(trainer.args.output_dir)
    if mon.probe_fn is None and mon.config.probe_every:
        mon.probe_fn = default_probe(probe_records)
    trainer.add_callback(MonitorCallback(mon))
    return mon


__all__ = ["Alert", "AlertSignal", "AnswerLeaks", "AnswerTest", "DEFAULT_HORIZON", "GUARD_CATEGORIES", "HACKING_FILE", "HackingMonitor",
           "MonitorCallback", "MonitorConfig", "SUMMARY_FILE", "ShareTest", "answer_key", "answer_reward_index", "attach_monitor",
           "default_probe", "disagreement_groups", "guard_category", "guard_reward", "independent_verdict",
           "paid_as_correct", "record_key", "repeated_ngram_rate", "restated_steps", "rollout_features",
           "run_detector", "run_horizon", "shares_concept", "total_rewards", "zero_std_share", "zero_variance_cause"]
