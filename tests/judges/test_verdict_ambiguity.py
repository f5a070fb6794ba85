"""An ambiguous verdict is unscored, never read one way: a key given twice in one JSON object
(``{"score": 0, "score": 1}``, where ``json.loads`` keeps the last), the same key in two cases,
NaN, or two names of one field that disagree."""

from __future__ import annotations

import pytest

from medrl.judges.parsing import VerdictParseError, parse_score, parse_step_verdicts


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
