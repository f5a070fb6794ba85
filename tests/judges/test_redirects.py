"""The judge client never follows a redirect: a 307/308 to another loopback server (which would
answer with another verdict) leaves the row unscored, names both URLs and caches nothing; the
honest server at the configured address is asked next time (no cache poisoning). 301/302/303
(which would turn the POST into a GET) are refused the same way. Secrets inside the judge URL
(a password, a query token) reach the server but never an error, the identity or the cache key."""

from __future__ import annotations

import logging

import pytest
from fake_openai import chat_completion
from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse

from medrl.common.urls import origin, redact_url, redact_urls_in, url_secrets, without_query
from medrl.judges import build_judge, run_sync
from medrl.judges.server import serve_in_thread

FAST = dict(timeout=3, max_retries=2, backoff=0.01, max_backoff=0.02)
ASK = ("Where is the mass?", "Left kidney", "left kidney, enlarged")  # not settled without a request


def _verdict_app(reply: str):
    app = FastAPI()
    app.state.calls = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        app.state.calls.append({"query": str(request.url.query), "auth": request.headers.get("authorization")})
        return chat_completion(reply, body["model"])

    return app


@pytest.fixture()
def servers():
    """An impostor answering NO and a switchable server at the configured address: it redirects
    to the impostor (status ``app.state.redirect``) or, with ``redirect = None``, answers YES."""
    impostor = _verdict_app("NO")
    front = _verdict_app("YES")
    front.state.redirect = 307

    @front.middleware("http")
    async def maybe_redirect(request: Request, call_next):
        if front.state.redirect is not None:
            return RedirectResponse(front.state.target + "/chat/completions", status_code=front.state.redirect)
        return await call_next(request)

    with serve_in_thread(impostor) as other_url, serve_in_thread(front) as url:
        front.state.target = other_url
        yield url, other_url, front, impostor


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_to_another_server_is_unscored_uncached_and_the_honest_server_is_asked_next(servers, tmp_path,
                                                                                               status):
    url, other_url, front, impostor = servers
    front.state.redirect = status
    cache = tmp_path / "cache.sqlite"
    j = build_judge("openai:m", base_url=url, cache_path=str(cache), **FAST)
    v = run_sync(j.answer_correct(*ASK))
    assert not v.scored and v.value is None
    assert f"HTTP {status} redirect from {url}/chat/completions to {other_url}/chat/completions" in v.error
    assert "another server" in v.error and "never follows" in v.error
    assert impostor.state.calls == []  # the impostor was never asked
    assert v.meta.get("attempts") == 1  # a redirect is not retried
    assert len(j.cache) == 0  # nothing cached under the configured endpoint
    j.close()

    front.state.redirect = None  # the honest server is back at the configured address
    j2 = build_judge("openai:m", base_url=url, cache_path=str(cache), **FAST)
    v2 = run_sync(j2.answer_correct(*ASK))
    assert v2.scored and v2.value is True and not v2.meta.get("cached")
    assert len(front.state.calls) == 1 and impostor.state.calls == []
    j2.close()


@pytest.mark.parametrize("status", [301, 302, 303])
def test_redirects_that_would_turn_the_post_into_a_get_are_refused_too(servers, tmp_path, status):
    url, other_url, front, impostor = servers
    front.state.redirect = status
    j = build_judge("openai:m", base_url=url, cache_path=":memory:", **FAST)
    v = run_sync(j.answer_correct(*ASK))
    assert not v.scored and f"HTTP {status} redirect from {url}" in v.error and other_url in v.error
    assert impostor.state.calls == [] and len(j.cache) == 0
    j.close()


def test_a_redirect_on_the_same_server_is_named_as_such(tmp_path):
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def moved():
        return RedirectResponse("/v2/chat/completions", status_code=308)

    with serve_in_thread(app) as url:
        j = build_judge("openai:m", base_url=url, cache_path=":memory:", **FAST)
        v = run_sync(j.answer_correct(*ASK))
        j.close()
    assert not v.scored and "another address on the same server" in v.error
    assert url.replace("/v1", "/v2/chat/completions") in v.error


def test_secrets_in_the_judge_url_reach_the_server_but_no_message_identity_or_cache_key(tmp_path, caplog):
    app = _verdict_app("YES")
    with serve_in_thread(app) as url:
        secret_url = url.replace("http://", "http://medrl-user:pw-s3cret-91@") + "?token=tok-s3cret-77&api-version=2"
        j = build_judge("openai:m", base_url=secret_url, cache_path=str(tmp_path / "c.sqlite"), **FAST)
        with caplog.at_level(logging.INFO):
            v = run_sync(j.answer_correct(*ASK))
        assert v.scored and v.value is True
        call = app.state.calls[-1]
        assert "token=tok-s3cret-77" in call["query"] and "api-version=2" in call["query"]  # sent as a query
        ident = j.identity()
        assert ident["endpoint"] == url.replace("http://", "http://***@") + "?token=***&api-version=2"
        text = " ".join([repr(j), str(ident), j._sanitise(f"failed at {secret_url}: pw-s3cret-91"), caplog.text])
        assert "s3cret" not in text and "medrl-user" not in text
        j.close()
        # the cache key holds the endpoint without its secrets: the same server with another token
        # finds the verdict; the file itself holds no secret
        again = build_judge("openai:m", base_url=secret_url.replace("tok-s3cret-77", "other-token"),
                            cache_path=str(tmp_path / "c.sqlite"), **FAST)
        assert run_sync(again.answer_correct(*ASK)).meta.get("cached") is True
        again.close()
    assert b"s3cret" not in (tmp_path / "c.sqlite").read_bytes()


def test_redaction_helpers():
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url(None) is None and redact_url("not a url") == "not a url"
    assert redact_url("https://u:p@h.example/v1?key=abc&api-version=1#frag") == \
        "https://***@h.example/v1?key=***&api-version=1"
    assert redact_url("https://tokenonly@h.example/v1") == "https://***@h.example/v1"
    assert redact_urls_in("error at http://a:secret1@h/x?sig=zzz9, see logs") == \
        "error at http://***@h/x?sig=***, see logs"
    assert sorted(url_secrets("http://a-user:secret1@h/v1?sig=zzzz&api-version=1")) == ["a-user", "secret1", "zzzz"]
    assert without_query("http://h/v1?token=t#x") == ("http://h/v1", {"token": "t"})
    assert origin("http://h/v1") == origin("HTTP://H:80/v2") != origin("https://h/v1")
