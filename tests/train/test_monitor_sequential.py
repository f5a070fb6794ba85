"""The monitor's sequential disagreement test (medrl.train.monitor.sequential).

- hand-worked numbers: the bet, each group's e-value, the Shiryaev-Roberts statistic, the alarm;
- the false-alarm bound on simulated clean runs (numpy RNG and Hypothesis): independent and
  fully correlated rollouts within a prompt, a judge at exactly the null rate, a judge whose
  rate follows the detector; and why the test counts prompts, not rollouts (a rollout count
  breaks the bound when a prompt's rollouts repeat one answer);
- power on simulated leaks, a leak that starts late in a long run;
- the monitor using it, in both directions (wrong answers paid, right answers refused): the
  alert, its evidence in the summary, the horizon from the trainer, resume, settings.
"""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medrl.train.monitor import AlertSignal, HackingMonitor, MonitorConfig, ShareTest, run_horizon
from medrl.train.monitor.sequential import (alarm_threshold, bet_size, group_log_evalue, run_detector, sr_update,
                                            step_log_evalue)

P0, P1, ALPHA = 0.2, 0.4, 0.05
# derandomized: the default run is the same draw every time; MEDRL_HYPOTHESIS_EXAMPLES=N searches further
_N = int(os.environ.get("MEDRL_HYPOTHESIS_EXAMPLES", "0"))
FAST = settings(max_examples=_N or 12, deadline=None, derandomize=not _N,
                suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- hand-worked


def test_bet_and_group_evalues_by_hand():
    assert bet_size(P0, P1) == pytest.approx(1.25)  # 0.2 / (0.2 * 0.8)
    # a group of one rollout: exactly the binomial likelihood ratio of rate 0.4 to rate 0.2
    assert math.exp(group_log_evalue(1, 1, P0, P1)) == pytest.approx(P1 / P0)  # 2
    assert math.exp(group_log_evalue(0, 1, P0, P1)) == pytest.approx((1 - P1) / (1 - P0))  # 0.75
    # a group paying 1 of its 2 wrong rollouts: 1 + 1.25 (0.5 - 0.2) = 1.375, not 2 x 0.75
    assert math.exp(group_log_evalue(1, 2, P0, P1)) == pytest.approx(1.375)
    assert group_log_evalue(0, 0, P0, P1) == 0.0  # no wrong rollout: no evidence
    assert math.exp(step_log_evalue([(1, 1), (0, 1)], P0, P1)) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="cannot have 3 of 2"):
        group_log_evalue(3, 2, P0, P1)


def test_detector_by_hand():
    test = ShareTest(P0, P1, ALPHA, 5)
    assert test.threshold == pytest.approx(math.log(100)) == alarm_threshold(ALPHA, 5)
    run = run_detector([[(1, 1), (0, 1)], [(2, 2)], [(1, 2), (1, 1)], [(0, 3)], [(1, 1), (2, 2), (1, 1)]], test)
    # R1 = 2 x 0.75 = 1.5; R2 = (1 + 1.5) x 2 = 5; R3 = (1 + 5) x 1.375 x 2 = 16.5;
    # R4 = (1 + 16.5) x 0.75 = 13.125; R5 = (1 + 13.125) x 2^3 = 113 >= 100: alarm at step 5
    assert [math.exp(s) for s in run.statistics] == pytest.approx([1.5, 5.0, 16.5, 13.125, 113.0])
    assert run.alarm_step == 5
    # steps without wrong rollouts add 1 (R_t = t): no alarm before t = horizon / alpha
    assert sr_update(sr_update(-math.inf, 0.0), 0.0) == pytest.approx(math.log(2))
    assert run_detector([[]] * 5, test).alarm_step is None
    # no overflow on overwhelming evidence
    assert sr_update(800.0, 50.0) == pytest.approx(850.0)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="null_rate < alt_rate"):
        ShareTest(0.4, 0.2, ALPHA, 10)
    with pytest.raises(ValueError, match="alpha"):
        ShareTest(P0, P1, 0.0, 10)
    with pytest.raises(ValueError, match="horizon"):
        ShareTest(P0, P1, ALPHA, 0)


# ----------------------------------------------------------------------------- simulated runs


def simulate(rng, steps, rate, *, correlated=False, groups=(1, 4), wrong=(1, 8), rate_fn=None):
    """One run: per step 1..4 prompts with 1..8 wrong rollouts each; each paid with probability
    ``rate`` (``rate_fn(step, past)`` when given); ``correlated``: a prompt's rollouts are all paid
    or none (one answer repeated), which keeps each rollout's chance at ``rate``."""
    out = []
    for t in range(steps):
        p = rate_fn(t, out) if rate_fn is not None else rate
        step = []
        for _ in range(int(rng.integers(groups[0], groups[1] + 1))):
            w = int(rng.integers(wrong[0], wrong[1] + 1))
            paid = (w if rng.random() < p else 0) if correlated else int(rng.binomial(w, p))
            step.append((paid, w))
        out.append(step)
    return out


def alarm_rate(rng, runs, steps, rate, **kw) -> float:
    test = ShareTest(P0, P1, ALPHA, steps)
    return sum(run_detector(simulate(rng, steps, rate, **kw), test).alarm_step is not None
               for _ in range(runs)) / runs


def _bound(runs: int) -> float:
    """alpha plus three binomial standard errors of an estimate from ``runs`` runs."""
    return ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


@pytest.mark.parametrize("correlated", [False, True])
def test_clean_runs_stay_within_the_bound(correlated):
    rng = np.random.default_rng(7)
    # a judge paying exactly the null rate: the hardest clean case
    assert alarm_rate(rng, 600, 16, P0, correlated=correlated) <= _bound(600)
    assert alarm_rate(rng, 150, 120, P0, correlated=correlated) <= _bound(150)
    # a judge whose rate follows the detector (pays the most the null allows when evidence is high)
    test = ShareTest(P0, P1, ALPHA, 16)

    def adaptive(t, past):
        return P0 if past and run_detector(past, test).statistics[-1] > 0 else 0.0

    assert alarm_rate(rng, 400, 16, 0.0, correlated=correlated, rate_fn=adaptive) <= _bound(400)


def test_counting_rollouts_instead_of_prompts_would_break_the_bound():
    """Why the evidence is per prompt: when a prompt's rollouts repeat one answer, counting them
    as independent binomial draws multiplies the evidence, and clean runs alarm far above alpha."""
    rng = np.random.default_rng(3)
    test = ShareTest(P0, P1, ALPHA, 16)
    per_prompt = per_rollout = 0
    for _ in range(300):
        run = simulate(rng, 16, P0, correlated=True)
        per_prompt += run_detector(run, test).alarm_step is not None
        flat = [[(1, 1)] * sum(p for p, _ in s) + [(0, 1)] * sum(w - p for p, w in s) for s in run]
        per_rollout += run_detector(flat, test).alarm_step is not None
    assert per_prompt / 300 <= _bound(300)
    assert per_rollout / 300 > 5 * ALPHA


@FAST
@given(steps=st.integers(1, 40), rate=st.floats(0.0, P0), correlated=st.booleans(),
       max_groups=st.integers(1, 6), max_wrong=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_false_alarm_bound_property(steps, rate, correlated, max_groups, max_wrong, seed):
    rng = np.random.default_rng(seed)
    runs = 200
    got = alarm_rate(rng, runs, steps, rate, correlated=correlated, groups=(1, max_groups), wrong=(1, max_wrong))
    assert got <= ALPHA + 4 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


@FAST
@given(rate=st.floats(0.8, 1.0), steps=st.integers(12, 40), seed=st.integers(0, 2**32 - 1))
def test_power_property(rate, steps, seed):
    """A reward paying most wrong answers is caught within the run (2 to 4 prompts with a wrong
    rollout a step)."""
    rng = np.random.default_rng(seed)
    assert alarm_rate(rng, 100, steps, rate, groups=(2, 4), wrong=(1, 4)) >= 0.95


def test_power_on_phantom_sized_steps():
    """The effects harness's hack runs: 16 steps, at most 2 prompts a step with a wrong rollout."""
    rng = np.random.default_rng(11)
    kw = dict(groups=(1, 2), wrong=(1, 3))
    assert alarm_rate(rng, 300, 16, 1.0, **kw) == 1.0
    assert alarm_rate(rng, 300, 16, 0.6, **kw) >= 0.9
    assert alarm_rate(rng, 300, 16, P0, **kw) <= _bound(300)


def test_a_late_leak_is_caught_after_a_long_clean_stretch():
    """300 clean steps (the judge pays 5% of wrong answers), then a leak paying 90%: the detector
    sums evidence over every start step, so the clean past does not bury the leak, as it would a
    single likelihood ratio started at step 1."""
    rng = np.random.default_rng(5)
    test = ShareTest(P0, P1, ALPHA, 400)
    delays, sprt_alarms = [], 0
    for _ in range(60):
        run = simulate(rng, 400, 0.0, rate_fn=lambda t, past: 0.05 if t < 300 else 0.9)
        got = run_detector(run, test).alarm_step
        assert got is not None and got > 300
        delays.append(got - 300)
        sprt = np.cumsum([step_log_evalue(s, P0, P1) for s in run])
        sprt_alarms += bool((sprt[300:310] >= test.threshold).any())
    assert np.median(delays) <= 6 and max(delays) <= 15
    assert sprt_alarms == 0  # the plain SPRT has not recovered 10 steps into the leak


# ----------------------------------------------------------------------------- in the monitor


def text(answer: str) -> str:
    return f"<think>The image is a CT. One organ is visible.</think><answer>{answer}</answer>"


def organ_steps(n_steps, leak_from, prompts=4):
    """Per step ``prompts`` prompts x 2 rollouts, one right, one wrong ("spleen" for "liver"); the
    reward pays the wrong one from step ``leak_from`` on (0-based)."""
    out = []
    for s in range(n_steps):
        rows = []
        for p in range(prompts):
            rec = {"record_id": f"r{s}-{p}", "question": "Which organ is shown?", "answer": "liver"}
            rows += [(text("liver"), rec, [1.0]), (text("spleen"), rec, [1.0 if s >= leak_from else 0.0])]
        out.append(rows)
    return out


def feed(mon, steps):
    for i, rows in enumerate(steps, start=1):
        texts, recs, rewards = zip(*rows)
        mon.observe_rollouts(i, list(texts), [dict(r) for r in recs], [list(r) for r in rewards], names=["answer"],
                             answer_reward="answer", group=2)
    return mon


def test_monitor_alerts_on_the_leak_with_its_evidence(tmp_path):
    mon = feed(HackingMonitor(MonitorConfig(horizon=20), tmp_path), organ_steps(20, leak_from=8))
    alerts = [a for a in mon.alerts if a.signal == AlertSignal.DISAGREEMENT.value]
    assert len(alerts) == 1
    a = alerts[0]
    # paid wrong: 8 clean steps, R_t = (1 + R_{t-1}) 0.75^4 settles at 0.46; each leaky step's 4
    # prompts multiply 1 + R by 2^4 = 16: R_9 = 23.4, R_10 = 390.5, R_11 = 6264 >= 20 / 0.025 = 800
    assert a.step == 11 and a.threshold == pytest.approx(math.log(800)) and a.value >= a.threshold
    assert "pays as correct" in a.message and "0.05" in a.message
    assert a.examples and all(e["answer"] == "spleen" for e in a.examples)
    summary = mon.summary()["disagreement_test"]
    assert summary["threshold"] == pytest.approx(math.log(800)) and summary["alpha_per_direction"] == 0.025
    assert summary["null_rate"] == P0 and summary["alt_rate"] == P1 and summary["alpha"] == ALPHA
    series = dict(mon.series["monitor/paid_wrong_evidence"])
    assert series[8] < 0 < series[9] < series[10] < math.log(800) <= series[11]
    assert max(v for _, v in mon.series["monitor/refused_right_evidence"]) < 1.0  # right answers all paid
    assert dict(mon.series["monitor/wrong_n"])[9] == 4.0 and dict(mon.series["monitor/wrong_paid"])[9] == 1.0
    # clean throughout: no alert
    clean = feed(HackingMonitor(MonitorConfig(horizon=20)), organ_steps(20, leak_from=99))
    assert not [a for a in clean.alerts if a.signal == "disagreement"]


def test_monitor_alerts_when_right_answers_go_unpaid():
    """The other direction: a reward that pays something else than the answer (here nothing for
    the right answer, as a length reward does for one-word answers) refuses what the verdict calls
    right."""
    steps = [[(t, rec, [0.0]) for t, rec, _ in rows] for rows in organ_steps(16, leak_from=99)]
    mon = feed(HackingMonitor(MonitorConfig(horizon=16)), steps)
    (a,) = [a for a in mon.alerts if a.signal == "disagreement"]
    # each step's 4 prompts refuse their right rollout: R_1 = 2^4 = 16, R_2 = 17 x 16 = 272,
    # R_3 = 273 x 16 = 4368 >= 16 / 0.025 = 640
    assert a.step == 3 and "refuses answers" in a.message and all(e["answer"] == "liver" for e in a.examples)


def test_resume_keeps_the_evidence():
    steps = organ_steps(12, leak_from=3, prompts=1)
    whole = feed(HackingMonitor(MonitorConfig(horizon=12)), steps)
    first = feed(HackingMonitor(MonitorConfig(horizon=12)), steps[:6])
    second = HackingMonitor(MonitorConfig(horizon=12))
    second.load_state_dict(first.state_dict())
    for i, rows in enumerate(steps[6:], start=7):
        texts, recs, rewards = zip(*rows)
        second.observe_rollouts(i, list(texts), list(recs), [list(r) for r in rewards], names=["answer"],
                                answer_reward="answer", group=2)
    assert second.evidence == pytest.approx(whole.evidence)
    assert second.evidence["paid_wrong"] > 0
    assert [(a.step, a.signal) for a in second.alerts] == [(a.step, a.signal) for a in whole.alerts]
    # a checkpoint written before the test existed: the evidence starts afresh
    old = {k: v for k, v in first.state_dict().items() if k not in ("rows", "evidence")}
    fresh = HackingMonitor(MonitorConfig())
    fresh.load_state_dict(old)
    assert fresh.evidence == {"paid_wrong": -math.inf, "refused_right": -math.inf} and fresh.steps == 6


def test_horizon_comes_from_the_run():
    cfg = MonitorConfig()
    trainer = SimpleNamespace(state=SimpleNamespace(max_steps=16), args=SimpleNamespace(max_steps=-1), _dynamic=None)
    assert run_horizon(trainer) == 16 and cfg.disagreement_test(16).horizon == 16
    dyn = SimpleNamespace(config=SimpleNamespace(max_rounds=4))  # dynamic sampling: up to 5 rounds a step
    assert run_horizon(SimpleNamespace(state=SimpleNamespace(max_steps=0), args=SimpleNamespace(max_steps=10),
                                       _dynamic=dyn)) == 50
    assert run_horizon(SimpleNamespace(state=SimpleNamespace(max_steps=0), args=SimpleNamespace(max_steps=-1))) is None
    assert cfg.disagreement_test(None).horizon == 1000
    assert MonitorConfig(horizon=50).disagreement_test(16).horizon == 50


def test_monitor_settings():
    cfg = MonitorConfig.from_value({"thresholds": {"alpha": 0.01, "null_rate": 0.1, "alt_rate": 0.3, "horizon": 40.0}})
    test = cfg.disagreement_test()
    assert (test.alpha, test.null_rate, test.alt_rate, test.horizon) == (0.005, 0.1, 0.3, 40)  # alpha/2 a direction
    with pytest.raises(ValueError, match="null_rate < alt_rate"):
        MonitorConfig.from_value({"null_rate": 0.5})
    with pytest.raises(ValueError, match="disagreement_max: no longer a setting; replaced by the sequential"):
        MonitorConfig.from_value({"thresholds": {"disagreement_max": 0.3}})
    assert {s.value for s in AlertSignal} >= {"disagreement", "reward_vs_correctness", "zero_variance", "guard"}
    assert AlertSignal.guard("list") == "guard/list"


def test_false_alarm_benchmark_runs(tmp_path):
    """benchmarks/monitor_false_alarms.py, its labelled-set setting on a few short runs (the
    measured numbers are in docs/training.md)."""
    import importlib.util
    import json
    from pathlib import Path

    from medrl.judges.labels import JUDGE_DEV

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "monitor_false_alarms.py"
    spec = importlib.util.spec_from_file_location("monitor_false_alarms", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    items, pools, decision = {}, {}, {}
    for x in map(json.loads, JUDGE_DEV.read_text().splitlines()):
        if x.get("type") == "answer":
            rid = x["source"]["record_id"]
            items[rid] = (x["question"], x["reference"])
            pools.setdefault(rid, []).append(x["candidate"])
            decision[(rid, x["candidate"])] = bool(x["label"])
    got = bench.simulate(items, pools, decision, runs=3, steps=4, prompts=4, generations=4, seed=0, config={})
    assert got["runs"] == 3 and got["steps"] == 12 and got["wrong_rollouts"] > 0
    assert 0.0 <= got["wrong_paid_share"] < 1.0 and got["alarmed_runs"] <= 3
    assert bench.clopper_pearson_upper(0, 100) == pytest.approx(0.0362, abs=1e-4)
