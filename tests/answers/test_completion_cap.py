"""Answers get the questions' length cap before any reward: a 200,000-character answer is read
as no answer, quickly, by the parser every reward and the correctness decision go through."""

from __future__ import annotations

import time

from medrl.data.validate import MAX_QUESTION_CHARS
from medrl.answers.completion import cap_answer, max_answer_chars, parse_response, prediction_text

HUGE = "<think>The liver is enlarged.</think><answer>" + "hepatomegaly " * 16_000 + "</answer>"


def test_cap_is_the_question_cap_and_env_overrides(monkeypatch):
    monkeypatch.delenv("MEDRL_MAX_QUESTION_CHARS", raising=False)
    assert max_answer_chars() == MAX_QUESTION_CHARS
    assert cap_answer("a" * MAX_QUESTION_CHARS) == "a" * MAX_QUESTION_CHARS
    assert cap_answer("a" * (MAX_QUESTION_CHARS + 1)) is None and cap_answer(None) is None
    monkeypatch.setenv("MEDRL_MAX_QUESTION_CHARS", "10")
    assert parse_response("<think>x</think><answer>liver</answer>").answer == "liver"
    p = parse_response("<think>x</think><answer>an enlarged liver</answer>")
    assert p.answer is None and p.answer_span is None and not p.well_formed


def test_huge_answer_is_no_answer_before_any_reward():
    assert len(HUGE) > 200_000
    t0 = time.perf_counter()
    p = parse_response(HUGE)
    assert p.answer is None and not p.well_formed and p.reasoning == "The liver is enlarged."
    assert prediction_text(HUGE) == ""  # nothing is sent to a judge
    from medrl.rewards import REWARDS

    comps = [[{"role": "assistant", "content": HUGE}], [{"role": "assistant", "content": "<think>x</think>"}]]
    for name in ("format", "capo_accuracy"):
        fn = REWARDS.get(name)()
        huge, missing = fn(prompts=["q", "q"], completions=comps, answer=["hepatomegaly"] * 2,
                           question=["What is seen?"] * 2)
        assert huge == missing, name  # what a missing answer gets
    assert time.perf_counter() - t0 < 5
