"""The judge cache never answers for another judge: its key includes the endpoint, the model,
the prompt version and the answer format."""

from __future__ import annotations

import inspect
import socket

import pytest

from medrl.judges.cache import JudgeCache, cache_identity, cache_key

MSGS = [{"role": "user", "content": "TASK: answer_correct\nQUESTION: Which organ?"}]
IDENT = {"spec": "openai:m", "endpoint": "http://127.0.0.1:8000/v1", "model": "m", "prompt_version": "abc",
         "answer_format": "yes_no", "images": False, "image_max_side": None}


@pytest.mark.parametrize("field, value", [("endpoint", "http://127.0.0.1:9999/v1"), ("model", "m2"),
                                          ("prompt_version", "abd"), ("answer_format", "o_x")])
def test_key_changes_with_each_identity_field(field, value):
    base = cache_key("m", MSGS, {"temperature": 0.0}, identity=IDENT)
    assert cache_key("m", MSGS, {"temperature": 0.0}, identity={**IDENT, field: value}) != base
    # fields that do not decide a verdict leave the key alone
    assert cache_key("m", MSGS, {"temperature": 0.0}, identity={**IDENT, "spec": "other"}) == base
    assert cache_identity(IDENT) == {k: IDENT[k] for k in ("endpoint", "model", "prompt_version", "answer_format")}


def test_cache_namespaced_by_judge_misses_on_a_changed_endpoint(tmp_path):
    path = tmp_path / "cache.sqlite"
    key = cache_key("m", MSGS, {})
    a = JudgeCache(path, namespace=IDENT)
    a.put(key, "m", "YES", usage=(10, 1))
    assert a.get(key) == "YES" and a.get_usage(key) == (10, 1)
    a.close()
    same = JudgeCache(path, namespace=dict(IDENT))
    assert same.get(key) == "YES"
    other = JudgeCache(path, namespace={**IDENT, "endpoint": "http://127.0.0.1:9999/v1"})
    assert other.get(key) is None and other.get_usage(key) is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_judge_on_another_endpoint_does_not_read_the_first_ones_verdicts(tmp_path):
    from medrl.judges.base import run_sync
    from medrl.judges.openai_judge import OpenAIJudge
    from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread

    cache = tmp_path / "cache.sqlite"
    with serve_in_thread(create_app(ReferenceBackend(use_embeddings=False))) as url:
        j = OpenAIJudge("medrl-reference", base_url=url, cache_path=cache, timeout=5, max_retries=0)
        v = run_sync(j.consistency("Which organ is enlarged?", "The liver is large.", "liver"))
        assert v.scored
        j.close()
    dead = OpenAIJudge("medrl-reference", base_url=f"http://127.0.0.1:{_free_port()}/v1", cache_path=cache,
                       timeout=0.5, max_retries=0, retry_budget=1)
    v2 = run_sync(dead.consistency("Which organ is enlarged?", "The liver is large.", "liver"))
    assert not v2.scored and dead.stats.cache_hits == 0  # asked the new endpoint, not the cache
    dead.close()
