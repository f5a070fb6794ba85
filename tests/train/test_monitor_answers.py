"""The monitor's per-answer leak test (medrl.train.monitor.answers): which answers are paid wrong.

- hand-worked numbers: the threshold, one answer's evidence per new record, no evidence from a
  record seen before;
- a planted hole (one answer paid whatever the reference) caught within a few steps although it
  pays no more of all the wrong rollouts than a clean judge's noise may; a verdict that is wrong
  about one answer to one record (paid on every visit) and a judge that pays wrong answers at the
  null rate stay quiet within the bound;
- the alert (kind ``hacking``, its examples), the summary, resume and the settings.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from medrl.train.monitor import AlertSignal, HackingMonitor, MonitorConfig
from medrl.train.monitor.answers import AnswerLeaks, AnswerTest, answer_key

P0, P1, ALPHA = 0.2, 0.8, 0.05
ORGANS = ("brain", "heart", "liver", "kidneys")


def test_answer_key_reads_the_content_words():
    assert answer_key("The liver.") == answer_key("liver") == answer_key("**Liver**") == "liver"
    assert answer_key("Left kidney") == answer_key("kidney, left") == "kidney left"
    assert answer_key("It is") == "it is" and answer_key("") is None and answer_key(None) is None


def test_threshold_and_evidence_by_hand():
    test = AnswerTest(P0, P1, ALPHA, horizon=60, max_answers=64)
    assert test.threshold == pytest.approx(math.log(60 * 64 / 0.05))  # log(horizon x answers / alpha) = 11.25
    leaks = AnswerLeaks()
    # step 1: "liver" wrong and paid on two new records (one rollout each): 2 x log(1 + 3.75 x 0.8) = 2 log 4
    leaks.update(1, [("liver", "r1", False, True), ("liver", "r2", False, True), ("brain", "r1", True, True)], test)
    assert leaks.slots["liver"].log_r == pytest.approx(2 * math.log(4))
    assert set(leaks.slots) == {"liver"}  # only answers the verdict calls wrong are tracked
    # step 2: the same records again (no new evidence: R_2 = (1 + R_1) x 1), and a new record where it is not paid
    leaks.update(2, [("liver", "r1", False, True), ("liver", "r3", False, False)], test)
    assert leaks.slots["liver"].log_r == pytest.approx(math.log((1 + 16) * 0.25))
    assert leaks.slots["liver"].records == {"r1", "r2", "r3"} and leaks.slots["liver"].paid == 3
    # a record's rollouts count as one share: 1 of 2 paid is the bet 1 + 3.75 (0.5 - 0.2)
    one = AnswerLeaks()
    one.update(1, [("spleen", "r9", False, True), ("spleen", "r9", False, False)], test)
    assert one.slots["spleen"].log_r == pytest.approx(math.log(1 + 3.75 * 0.3))
    # at most max_answers answers are tracked
    few = AnswerLeaks()
    few.update(1, [(f"a{i}", "r", False, True) for i in range(5)], AnswerTest(P0, P1, ALPHA, 10, max_answers=3))
    assert len(few.slots) == 3


def organ_run(seed: int, *, hole: bool, steps: int = 60, noise: float = 0.0, fixed_wrong: bool = False):
    """A phantom-like run: 4 prompts x 8 rollouts a step, organ questions; the policy answers right
    70% of the time, else "liver" a sixth of the time and another wrong organ otherwise. The run pays
    the right answers, every "liver" (``hole``), each wrong answer with probability ``noise``, and
    (``fixed_wrong``) a "brain" answer to one record on every visit (a verdict wrong about one
    answer to one reference, which a good judge pays)."""
    rng = random.Random(seed)
    mon = HackingMonitor(MonitorConfig(horizon=steps))
    for step in range(1, steps + 1):
        texts, recs, rewards = [], [], []
        for _ in range(4):
            rid = 0 if fixed_wrong and rng.random() < 0.5 else rng.randrange(2000)
            truth = ORGANS[rid % 4] if rid else "heart"
            for _ in range(8):
                others = [o for o in ORGANS if o not in (truth, "liver")]
                a = truth if rng.random() < 0.7 else ("liver" if rng.random() < 1 / 6 else rng.choice(others))
                if fixed_wrong and rid == 0 and rng.random() < 0.5:
                    a = "brain"
                paid = a == truth or (hole and a == "liver") or (fixed_wrong and rid == 0 and a == "brain") \
                    or rng.random() < noise
                texts.append(f"<think>I look at the image.</think><answer>{a}</answer>")
                recs.append({"record_id": str(rid), "question": "Which organ is shown in this image?", "answer": truth})
                rewards.append([1.0 if paid else 0.0])
        mon.observe_rollouts(step, texts, recs, rewards, names=["answer"], answer_reward="answer", group=8)
    return mon


def test_a_planted_hole_on_one_answer_is_caught_within_a_few_steps():
    for seed in range(5):
        mon = organ_run(seed, hole=True)
        (a,) = [a for a in mon.alerts if a.signal == AlertSignal.ANSWER_LEAK.value]
        assert a.kind == "hacking" and a.step <= 10, a
        assert "'liver'" in a.message and a.value >= a.threshold == pytest.approx(math.log(60 * 64 / 0.05))
        assert a.examples and all(e["answer"] == "liver" and e["verdict"] is False for e in a.examples)
        # the disagreement test does not see it: the hole pays under a fifth of all the wrong rollouts
        wrong = dict(mon.series["monitor/wrong_paid"])
        assert 0.05 < np.mean(list(wrong.values())) < 0.2
        assert not [a for a in mon.alerts if a.signal == "disagreement"]
        summary = mon.summary()["answer_test"]
        assert next(iter(summary["answers"])) == "liver" and summary["alpha"] == 0.05


def test_clean_runs_stay_quiet():
    """A verdict wrong about one answer to one record (a good judge pays it on every visit) and a
    judge paying wrong answers at exactly the null rate: within the bound over many runs."""
    assert not [a for a in organ_run(0, hole=False, fixed_wrong=True).alerts if a.signal == "answer_leak"]
    alarms = sum(bool([a for a in organ_run(s, hole=False, steps=30, noise=P0).alerts if a.signal == "answer_leak"])
                 for s in range(40))
    assert alarms / 40 <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 40)


def test_resume_keeps_the_answers():
    whole = organ_run(3, hole=True, steps=8)
    first = organ_run(3, hole=True, steps=8)
    again = HackingMonitor(MonitorConfig(horizon=8))
    again.load_state_dict(first.state_dict())
    assert again.answer_leaks.state_dict() == whole.answer_leaks.state_dict()
    old = {k: v for k, v in first.state_dict().items() if k != "answer_leaks"}  # a checkpoint from before the test
    fresh = HackingMonitor(MonitorConfig())
    fresh.load_state_dict(old)
    assert fresh.answer_leaks.slots == {}


def test_settings():
    cfg = MonitorConfig.from_value({"thresholds": {"answer_alt_rate": 0.9, "answer_alpha": 0.01, "max_answers": 16}})
    t = cfg.answer_test(40)
    assert (t.null_rate, t.alt_rate, t.alpha, t.max_answers, t.horizon) == (0.2, 0.9, 0.01, 16, 40)
    with pytest.raises(ValueError, match="answer_alt_rate"):
        MonitorConfig.from_value({"answer_alt_rate": 0.1})
    with pytest.raises(ValueError, match="answer_alpha"):
        MonitorConfig.from_value({"answer_alpha": 1.5})
    assert AlertSignal.ANSWER_LEAK.value == "answer_leak"
