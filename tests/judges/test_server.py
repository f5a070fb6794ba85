"""Issue 12: `medrl serve-judge` under hostile requests, on 127.0.0.1. One run of the real
command (`--port 0 --api-key-env`): the real port is printed; no token -> 401; a 6 MB body -> 413
while /health answers within 1 s; deeply nested JSON -> 400; an unknown model -> 404 naming the
served one; /docs is off; a slow CPU-heavy request does not stall /health. In-process: more
requests than --max-pending -> 503 with Retry-After, which the client retries."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import httpx
import pytest

from medrl.judges import prompts, run_sync
from medrl.judges.openai_judge import OpenAIJudge
from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread

KEY = "medrl-h3-server-token-42"


@pytest.fixture(scope="module")
def served():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEDRL_H3_SERVER_KEY": KEY}
    proc = subprocess.Popen([sys.executable, "-m", "medrl.cli", "serve-judge", "--port", "0", "--no-embeddings",
                             "--api-key-env", "MEDRL_H3_SERVER_KEY", "--max-body-mb", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
        assert m, line + (proc.stdout.read() if proc.poll() is not None else "")
        port = int(m.group(1))
        assert port != 0 and KEY not in line
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


AUTH = {"Authorization": f"Bearer {KEY}"}


def _chat(text: str, model: str = "medrl-reference") -> dict:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def test_token_required(served):
    msgs = prompts.answer_correct("What organ?", "Lung", "lung", "yes_no")
    body = {"model": "medrl-reference", "messages": msgs}
    assert httpx.post(served + "/v1/chat/completions", json=body).status_code == 401
    bad = httpx.post(served + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and KEY not in bad.text
    assert httpx.get(served + "/v1/models").status_code == 401
    ok = httpx.post(served + "/v1/chat/completions", json=body, headers=AUTH)
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "YES"
    # the client with the key in the named variable works end to end
    os.environ["MEDRL_H3_CLIENT_KEY"] = KEY
    try:
        j = OpenAIJudge("medrl-reference", base_url=served + "/v1", api_key_env="MEDRL_H3_CLIENT_KEY",
                        cache_path=":memory:", timeout=10, max_retries=0)
        assert run_sync(j.answer_correct("What organ?", "Lung", "lung")).value is True
        j.close()
    finally:
        del os.environ["MEDRL_H3_CLIENT_KEY"]


def test_hostile_requests_get_4xx(served):
    url = served + "/v1/chat/completions"
    deep = b'{"model": "medrl-reference", "messages": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    r = httpx.post(url, content=deep, headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 400 and "nested" in r.json()["error"]["message"]
    r = httpx.post(url, content=b"{not json", headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 400
    r = httpx.post(url, json=_chat("TASK: answer_correct", model="gpt-4o"), headers=AUTH)
    assert r.status_code == 404 and "medrl-reference" in r.json()["error"]["message"]
    for path in ("/docs", "/openapi.json", "/redoc"):
        assert httpx.get(served + path).status_code == 404
    # a lone surrogate (a legal JSON escape) is judged, not a 500
    odd = json.dumps({"model": "medrl-reference",
                      "messages": prompts.answer_correct("What organ\ud800?", "Lung", "lung\udfff", "yes_no")})
    r = httpx.post(url, content=odd.encode(), headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 200, r.text


def test_6mb_request_gets_413_while_health_answers(served):
    big = _chat("x" * (6 * 1024 * 1024))
    result = {}

    def send():
        result["r"] = httpx.post(served + "/v1/chat/completions", json=big, headers=AUTH, timeout=30)

    t = threading.Thread(target=send)
    t.start()
    times = []
    while t.is_alive() or not times:
        t0 = time.monotonic()
        assert httpx.get(served + "/health", timeout=5).status_code == 200
        times.append(time.monotonic() - t0)
        time.sleep(0.02)
    t.join()
    assert result["r"].status_code == 413 and max(times) < 1.0


class _CpuBound:
    """A backend that burns ~3 s of pure-Python CPU per request (a stand-in for a heavy judge)."""

    name = "cpu"

    async def complete(self, messages, max_tokens):
        t, x = time.monotonic(), 0
        while time.monotonic() - t < 3.0:
            x += sum(i * i for i in range(1000))
        return "YES", 1, 1


def test_heavy_judging_does_not_stall_health():
    with serve_in_thread(create_app(_CpuBound())) as url:
        base = url[: -len("/v1")]
        result = {}

        def send():
            result["r"] = httpx.post(url + "/chat/completions", json=_chat("judge this", model="cpu"), timeout=30)

        t = threading.Thread(target=send)
        t.start()
        time.sleep(0.1)
        times = []
        while t.is_alive():
            t0 = time.monotonic()
            assert httpx.get(base + "/health", timeout=5).status_code == 200
            times.append(time.monotonic() - t0)
            time.sleep(0.05)
        t.join()
    assert result["r"].status_code == 200 and times
    # judged in a worker thread, /health keeps answering; on the event loop one /health call
    # would wait the whole 3 s (the margin allows for a loaded 2-core machine)
    times.sort()
    assert times[len(times) // 2] < 0.5 and times[-1] < 2.0, times


def test_overload_gets_503_and_the_client_retries():
    app = create_app(ReferenceBackend(use_embeddings=False), max_pending=1, latency=0.3)
    with serve_in_thread(app) as url:
        body = {"model": "medrl-reference", "messages": prompts.answer_correct("q?", "Lung", "lung", "yes_no")}
        out = []
        threads = [threading.Thread(target=lambda: out.append(httpx.post(url + "/chat/completions", json=body,
                                                                         timeout=10))) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(r.status_code for r in out)
        assert codes[0] == 200 and 503 in codes
        busy = next(r for r in out if r.status_code == 503)
        assert busy.headers["retry-after"] == "1"
        j = OpenAIJudge("medrl-reference", base_url=url, cache_path=":memory:", timeout=5, max_retries=4,
                        backoff=0.05, max_backoff=1.5)

        async def go():
            import asyncio

            # not an identity, so each reaches the server (the reference backend accepts the qualifier)
            return await asyncio.gather(*(j.answer_correct(f"q{i}?", "Lung", "lung, enlarged") for i in range(3)))

        assert all(v.scored and v.value is True for v in run_sync(go()))
        assert j.stats.retries >= 1
        j.close()
