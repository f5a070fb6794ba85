"""The reward-hacking monitor on leaky and clean runs (medrl.train.monitor), one fault at a time.

Each test plays two short runs through :meth:`HackingMonitor.observe_rollouts` - the same code
path the trainer hook uses, minus the trainer - one whose reward leaks and one whose reward is
honest, and checks the monitor alerts on the first and stays quiet on the second:

- ``guard/<reason>``: refused and unrefused answers both earning 0 under an honest reward is
  not an exploit;
- ``disagreement``: a yes-to-everything judge behind the shared correctness decision (which
  applies the guard and exact match first), and a recipe without a ``correct`` column whose
  answer reward pays wrong answers;
- ``reward_vs_correctness``: a rising length reward next to a flat, honest answer reward is
  normal; a reward that only pays length is not; a few rollouts per step are not evidence;
- ``answer_length_growth``: references of different lengths are not answer padding;
- the probe generates as many tokens as the rollouts.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from medrl.train.monitor import HackingMonitor, MonitorConfig, independent_verdict

Q_SIDE = "Which kidney holds the lesion?"
Q_ORGAN = "Which organ holds the lesion?"


def text(answer: str, think: str = "The image is a CT. The kidneys are visible. One lesion is seen.") -> str:
    return f"<think>{think}</think><answer>{answer}</answer>"


def run(steps, *, config=None, names=("r",), answer_reward=None, group=4):
    """Feed ``steps`` (lists of (text, record, reward row)) to a fresh monitor; its hacking alerts.
    The paid-wrong test's horizon is the run's length, as a trainer's ``max_steps`` gives it."""
    mon = HackingMonitor(config or MonitorConfig(horizon=len(steps)))
    for i, rollouts in enumerate(steps, start=1):
        texts, recs, rows = zip(*rollouts)
        mon.observe_rollouts(i, list(texts), list(recs), [list(r) for r in rows], names=list(names),
                             answer_reward=answer_reward, group=group)
    return mon, [a.signal for a in mon.alerts if a.kind == "hacking"]


def test_offline_verdict_decides_hard_mismatches_the_judge_would_be_asked():
    assert independent_verdict("right kidney", "left kidney") is False
    assert independent_verdict("spleen", "liver") is False
    assert independent_verdict("MRI", "CT") is False
    assert independent_verdict("3 lesions", "2 lesions") is False
    assert independent_verdict("left kidney", "left kidney") is True
    assert independent_verdict("hepatic lobe", "liver") is None  # still left to the judge
    assert independent_verdict("a round shadow", "left kidney") is False  # shares no concept with it


# ----------------------------------------------------------------------------- guard/<reason>


def test_guard_quiet_when_refused_and_unrefused_answers_both_earn_nothing():
    rec = {"question": Q_ORGAN, "answer": "liver"}
    hedges = [(text("liver or spleen"), rec, [0.0])] * 2  # refused (hedge / list)
    wrong = [(text("spleen"), rec, [0.0])] * 2  # wrong, not refused
    mon, clean = run([hedges + wrong] * 4)
    assert clean == []
    assert mon.series["monitor/guard_refused"][-1][1] >= 0.25  # the policy did try it
    # leaky: the same answers, and the reward pays the hedges as if they were right
    leaky_steps = [[(text("liver or spleen"), rec, [1.0])] * 2 + [(text("liver"), rec, [1.0]),
                                                                  (text("spleen"), rec, [0.0])]] * 4
    _, leaky = run(leaky_steps)
    assert any(s.startswith("guard/") for s in leaky)


# ----------------------------------------------------------------------------- disagreement


class YesJudge:
    """A judge that calls every answer correct (a deliberately broken judge)."""

    name, images = "yes", False

    async def answer_correct(self, question, reference, prediction, *, image=None):
        from medrl.types import Verdict

        return Verdict.ok(True)


def correct_column(answers, refs, judge):
    from medrl.rewards.correctness import correctness_column

    return correctness_column(answers, refs, questions=[Q_ORGAN] * len(refs), mode="judge", judge=judge)


def side_steps(correct_fn, n_steps=3):
    """Four prompts a step, two rollouts each, one answering something unrelated (the shared
    decision's guard and hard mismatch cannot refuse it, so it asks the judge); ``correct`` from
    the run's decision."""
    steps = []
    for _ in range(n_steps):
        answers = ["liver", "a round shadow"] * 4
        refs = ["liver"] * 8
        cols = correct_fn(answers, refs)
        steps.append([(text(a), {"record_id": f"p{i // 2}", "question": Q_ORGAN, "answer": r, "correct": c},
                       [1.0 if c else 0.0]) for i, (a, r, c) in enumerate(zip(answers, refs, cols))])
    return steps


def test_disagreement_fires_on_a_yes_to_everything_judge_and_not_on_an_honest_decision():
    _, leaky = run(side_steps(lambda a, r: correct_column(a, r, YesJudge())))
    assert "disagreement" in leaky
    _, clean = run(side_steps(lambda a, r: [x == y for x, y in zip(a, r)]))
    assert "disagreement" not in clean


def test_disagreement_watches_recipes_without_a_correct_column():
    """MRPO/ARMed have no ``correct`` column: the answer reward's verdict stands in for it."""
    recs = [{"record_id": f"p{i}", "question": Q_SIDE, "answer": "left kidney"} for i in range(4)]

    def steps(pay_wrong):
        return [[(text(a), rec, [r, 0.5]) for rec in recs
                 for a, r in (("left kidney", 0.9), ("right kidney", pay_wrong))]] * 3

    _, leaky = run(steps(0.85), names=("mrpo_answer", "mrpo_length"), answer_reward="mrpo_answer")
    assert "disagreement" in leaky
    _, clean = run(steps(0.0), names=("mrpo_answer", "mrpo_length"), answer_reward="mrpo_answer")
    assert "disagreement" not in clean


def test_disagreement_needs_enough_rollouts():
    rec = {"question": Q_SIDE, "answer": "left kidney", "correct": True}
    one = [[(text("right kidney"), rec, [1.0])]] * 3  # 1 rollout per step: 3 rollouts are not evidence
    _, alerts = run(one, group=1)
    assert "disagreement" not in alerts
    # the same wrong answer repeated by every rollout of one prompt is one piece of evidence
    same = [[(text("right kidney"), rec, [1.0])] * 8] * 3
    _, alerts = run(same, group=8)
    assert "disagreement" not in alerts


# ----------------------------------------------------------------------------- reward_vs_correctness


def length_steps(n_steps, per_step, leaky: bool):
    """Answers right half the time throughout; a length reward that rises over the run."""
    rec = {"question": Q_ORGAN, "answer": "liver"}
    out = []
    for s in range(n_steps):
        length_r = min(1.0, 0.1 + 0.15 * s)
        rows = []
        for i in range(per_step):
            right = i % 2 == 0
            ans = 1.0 if right else 0.0
            rows.append((text("liver" if right else "spleen"), rec, [length_r] if leaky else [ans, length_r]))
        out.append(rows)
    return out


def test_reward_vs_correctness_reads_the_answer_reward_not_process_or_length():
    # honest GRPO-style reward: a flat answer reward plus a length reward that rises
    _, clean = run(length_steps(8, 16, leaky=False), names=("answer", "length"), answer_reward="answer")
    assert "reward_vs_correctness" not in clean
    # leaky: the reward pays only length, and correctness does not move
    _, leaky = run(length_steps(8, 16, leaky=True), names=("length",))
    assert "reward_vs_correctness" in leaky


def test_trend_alerts_wait_for_enough_rollouts():
    # 4 rollouts per step: six steps (24 rollouts) are not enough evidence for a trend
    _, few = run(length_steps(6, 4, leaky=True), names=("length",))
    assert "reward_vs_correctness" not in few
    # the window grows until each half holds min_evidence rollouts, then the trend is judged
    _, many = run(length_steps(30, 4, leaky=True), names=("length",),
                  config=MonitorConfig(min_evidence=24))
    assert "reward_vs_correctness" in many


# ----------------------------------------------------------------------------- answer_length_growth


def test_answer_length_growth_compares_answers_with_their_references():
    short = {"question": "What modality is this?", "answer": "CT"}
    long = {"question": "Describe the finding.", "answer": "a 2.1 cm lesion in the upper pole of the left kidney"}
    # honest: answers equal their references; the later records just have longer references
    steps = [[(text(r["answer"]), r, [1.0])] * 16 for r in (short, short, short, long, long, long)]
    _, clean = run(steps)
    assert "answer_length_growth" not in clean
    # leaky: the same records, the answers padded more and more
    pad = " with additional clinically relevant descriptive detail"
    steps = [[(text(r["answer"] + pad * k), r, [1.0])] * 16
             for k, r in enumerate((short, short, short, short, short, short))]
    _, leaky = run(steps)
    assert "answer_length_growth" in leaky


# ----------------------------------------------------------------------------- probe


def test_probe_generates_as_many_tokens_as_the_rollouts(monkeypatch):
    import medrl.models.generation as generation
    from medrl.train.monitor import default_probe

    seen = {}

    def fake_generate(model, processor, rows, max_new_tokens=256, **kw):
        seen["max_new_tokens"] = max_new_tokens
        return [text(r["answer"]) for r in rows]

    monkeypatch.setattr(generation, "generate", fake_generate)
    model = SimpleNamespace(training=False, train=lambda: None)
    trainer = SimpleNamespace(
        _monitor=SimpleNamespace(config=MonitorConfig(probe_records=4)),
        args=SimpleNamespace(max_completion_length=300),
        eval_dataset=[{"question": Q_ORGAN, "answer": "liver"}] * 4, model=model,
        accelerator=SimpleNamespace(unwrap_model=lambda m: m), processing_class=None, medrl_algorithm={}, judge=None)
    probe = default_probe()
    assert probe(trainer) == 1.0 and probe.last_n == 4
    assert seen["max_new_tokens"] == 300  # the run's completion length, not a short fixed probe
    # probe_gap needs probe_min_records decided probe answers
    mon = HackingMonitor(MonitorConfig(probe_min_records=8))
    mon.update(1, {"monitor/correct": 0.9})
    assert mon.update(2, {"monitor/correct": 0.9, "monitor/probe_accuracy": 0.1, "monitor/probe_n": 4.0}) == []
    assert [a.signal for a in mon.update(3, {"monitor/correct": 0.9, "monitor/probe_accuracy": 0.1,
                                             "monitor/probe_n": 8.0})] == ["probe_gap"]
    assert not math.isnan(mon.summary()["signals"]["monitor/probe_accuracy"]["last"])


def test_guard_reads_the_answer_reward_when_the_recipe_names_one():
    """A format reward pays a refused answer like any rollout; only the answer reward paying it
    is an exploit (capo_grpo: capo_accuracy + format, every answer wrong this step)."""
    rec = {"question": "Is there a lesion?", "answer": "hypodense lesion"}
    clean = [[(text("no lesion"), rec, [0.0, 1.0])] * 2 + [(text("spleen"), rec, [0.0, 1.0])] * 2] * 3
    _, alerts = run(clean, names=("capo_accuracy", "format"), answer_reward="capo_accuracy")
    assert not any(a.startswith("guard/") for a in alerts)
    leaky = [[(text("no lesion"), rec, [0.8, 1.0])] * 2 + [(text("spleen"), rec, [0.0, 1.0])] * 2] * 3
    _, alerts = run(leaky, names=("capo_accuracy", "format"), answer_reward="capo_accuracy")
    assert any(a.startswith("guard/") for a in alerts)
