"""An ambiguous verdict is unscored, never read one way: a key given twice in one JSON object
(``{"score": 0, "score": 1}``, where ``json.loads`` keeps the last), the same key in two cases,
NaN, or two names of one field that disagree."""

from __future__ import annotations

import pytest

from medrl.judges.replies import VerdictParseError, parse_score, parse_step_verdicts


@pytest.mark.parametrize("reply", [
    '{"score": 0, "score": 1}',
    '{"score": 1, "score": 1}',  # even agreeing duplicates: the reply is not one object
    '{"score": 1, "Score": 0}',
    '```json\n{"score": 1, " score": 1}\n```',
    '{"score": NaN}',
    '{"score": 1, "detail": {"a": 1, "a": 2}}',  # at any depth
])
def test_ambiguous_scores_raise(reply):
    with pytest.raises(VerdictParseError, match="ambiguous"):
        parse_score(reply)


def test_step_verdict_with_two_disagreeing_names_raises():
    both = '{"steps": [{"step": 1, "gold_alignment": 1, "Gold Alignment": 0, "answer_contribution": 1}]}'
    with pytest.raises(VerdictParseError, match="ambiguous"):
        parse_step_verdicts(both, 1)
    same = '{"steps": [{"step": 1, "gold_alignment": 1, "Gold Alignment": 1, "answer_contribution": 1}]}'
    assert parse_step_verdicts(same, 1)[0].gold_alignment == 1
    assert parse_score('{"score": 1, "verdict": "yes"}') == 1.0


def test_duplicate_key_reply_is_unscored_by_the_judge():
    from medrl.judges.base import run_sync
    from medrl.judges.openai_judge import OpenAIJudge
    from medrl.judges.server import create_app, serve_in_thread

    class Duplicates:
        name = "dup"

        async def complete(self, messages, max_tokens):
            return '{"score": 0, "score": 1}', 5, 1

    with serve_in_thread(create_app(Duplicates())) as url:
        j = OpenAIJudge("dup", base_url=url, cache_path=":memory:", timeout=5, max_retries=0, parse_retries=0)
        v = run_sync(j.grade("Which organ is enlarged?", "liver", "the spleen is enlarged"))
        j.close()
    assert not v.scored and v.value is None and "ambiguous" in v.error


# ------------------------------------------------------------------ both step shapes in one reply

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

bits = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=6)


def _both(ours, theirs) -> str:
    import json

    return json.dumps({
        "steps": [{"step": k, "gold_alignment": g, "answer_contribution": a} for k, (g, a) in enumerate(ours, 1)],
        "Reasoning_Check": {f"step{k}": {"Gold Alignment": g, "Answer Contribution": a}
                            for k, (g, a) in enumerate(theirs, 1)}})


@settings(max_examples=60, deadline=None)
@given(bits, st.data())
def test_steps_and_reasoning_check_must_agree(verdicts, data):
    """Both shapes saying the same is one reading; flipping any one bit in either makes the
    reply ambiguous (unscored), as does a different number of steps."""
    got = parse_step_verdicts(_both(verdicts, verdicts), len(verdicts))
    assert [(v.gold_alignment, v.answer_contribution) for v in got] == verdicts
    k = data.draw(st.integers(0, len(verdicts) - 1))
    which = data.draw(st.integers(0, 1))
    flipped = list(verdicts)
    g, a = flipped[k]
    flipped[k] = (1 - g, a) if which == 0 else (g, 1 - a)
    first = data.draw(st.booleans())
    reply = _both(flipped, verdicts) if first else _both(verdicts, flipped)
    with pytest.raises(VerdictParseError, match=f"disagree at step {k + 1}"):
        parse_step_verdicts(reply, len(verdicts))
    with pytest.raises(VerdictParseError):
        parse_step_verdicts(_both(verdicts, verdicts + [(1, 1)]), len(verdicts))


# ------------------------------------------------------------------ replies Python cannot read


HUGE = '{"score": 1' + "0" * 5000 + "}"
DEEP = '{"score": 1, "why": ' + "[" * 50_000 + "]" * 50_000 + "}"


@pytest.mark.parametrize("reply, why", [(HUGE, "cannot read"), (DEEP, "nested too deeply")])
def test_unreadable_json_is_a_parse_error(reply, why):
    with pytest.raises(VerdictParseError, match=why):
        parse_score(reply)
    with pytest.raises(VerdictParseError, match=why):
        parse_step_verdicts(reply.replace('"score"', '"steps"'), 1)


@pytest.mark.parametrize("reply, why", [(HUGE, "cannot read"), (DEEP, "nested too deeply")])
def test_a_judge_replying_unreadable_json_gives_an_unscored_verdict(reply, why):
    """A real loopback judge sends the reply: the client returns an unscored verdict with the
    reason, for a grade and a step verification alike; it never raises ValueError or
    RecursionError into the reward."""
    from medrl.judges.base import run_sync
    from medrl.judges.openai_judge import OpenAIJudge
    from medrl.judges.server import create_app, serve_in_thread

    class Unreadable:
        name = "odd"

        async def complete(self, messages, max_tokens):
            return reply, 5, 1

    with serve_in_thread(create_app(Unreadable())) as url:
        j = OpenAIJudge("odd", base_url=url, cache_path=":memory:", timeout=10, max_retries=0, parse_retries=0)
        graded = run_sync(j.grade("Which organ is enlarged?", "liver", "the spleen is enlarged"))
        steps = run_sync(j.verify_steps("Which organ?", "liver", ["The liver is large."]))
        j.close()
    for v in (graded, steps):
        assert not v.scored and v.value is None and why in v.error
