"""The OpenAI-compatible judge over real HTTP: against `medrl serve-judge` (reference backend),
and against a fault-injecting server (500s, 429, timeouts, malformed replies and bodies, slow
replies). Retries recover what they can, the rest is unscored and counted, nothing raises, a
repeated call comes from the cache, and the API key never shows in logs or errors."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections import Counter

import httpx
import pytest
from fake_openai import chat_completion
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from medrl.judges import build_judge, run_sync
from medrl.judges.base import JudgeAuthError
from medrl.judges.openai_judge import OpenAIJudge
from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread

SECRET = "sk-test-SECRET123"
FAST = dict(timeout=0.4, max_retries=2, backoff=0.01, max_backoff=0.05)


@pytest.fixture(scope="module")
def reference_url():
    with serve_in_thread(create_app(ReferenceBackend(use_embeddings=False))) as url:
        yield url


def _judge(url, tmp_path=None, **kw):
    cache = str(tmp_path / "judge.sqlite") if tmp_path else ":memory:"
    return build_judge("openai:medrl-reference", base_url=url, cache_path=cache, **{**FAST, **kw})


def test_models_endpoint_and_all_six_tasks(reference_url):
    r = httpx.get(reference_url + "/models", timeout=5).json()
    assert r["data"][0]["id"] == "medrl-reference"
    j = _judge(reference_url)

    async def go():
        return await asyncio.gather(
            j.answer_correct("What organ?", "Lung", "Lung, enlarged"),  # left open by the structure: asked
            j.answer_correct("What organ?", "Lung", "lung apex"),
            j.verify_steps("Where is the mass?", "Left kidney",
                           ["This is an axial CT of the abdomen.", "I will check.", "A mass is in the left kidney."],
                           evidence={"modality": "CT", "organ": "Abdomen"}),
            j.consistency("Where is the mass?", "It is in the left kidney.", "left kidney"),
            j.grade("What organ?", "Lung", "lung"),
            j.grade("Describe", "Heart normal size. Lungs clear.", "Heart of normal size.", rubric="report"),
            j.audit_vqa("What organ is shown?", "yes"),
            j.extract_key_steps("Where?", "left kidney", "CT of the abdomen. A mass is in the left kidney."),
        )

    v = run_sync(go())
    assert all(x.scored for x in v), [x.error for x in v]
    assert v[0].value is True and v[1].value is False
    assert [(s.gold_alignment, s.answer_contribution) for s in v[2].value] == [(1, 0), (0, 0), (1, 1)]
    assert v[3].value is True and v[4].value == 1.0 and v[5].value == 4.0
    assert v[6].value["status"] == "drop" and v[7].value == ["CT of the abdomen", "mass is in the left kidney"]
    s = j.stats
    assert s.calls == 8 and s.failures == 0 and s.input_tokens > 0 and s.output_tokens > 0
    j.close()


def test_o_x_format_over_http(reference_url):
    j = _judge(reference_url, answer_format="o_x")
    assert run_sync(j.answer_correct("q", "Lung", "Lung, enlarged")).value is True
    assert run_sync(j.answer_correct("q", "Lung", "lung apex")).value is False
    assert j.stats.calls == 2
    j.close()


def test_cache_persists_and_duplicates_are_merged(reference_url, tmp_path):
    j = _judge(reference_url, tmp_path)

    async def batch():  # a GRPO group: 8 rollouts, 3 distinct short answers the answer structure leaves to the judge
        a, b, c = "Lung, enlarged", "enlarged lung", "lung apex"
        preds = [a, a, b, c, a, c, b, a]
        return await asyncio.gather(*(j.answer_correct("What organ?", "Lung", p) for p in preds))

    first = run_sync(batch())
    assert [v.value for v in first] == [True, True, True, False, True, False, True, True]
    assert j.stats.calls == 3 and j.stats.deduplicated == 5 and j.stats.cache_hits == 0
    j.close()
    j2 = _judge(reference_url, tmp_path)  # a new process would see the same file

    async def repeat():
        return await asyncio.gather(*(j2.answer_correct("What organ?", "Lung", p) for p in ["Lung, enlarged", "lung apex"]))

    again = run_sync(repeat())
    assert [v.value for v in again] == [True, False] and all(v.meta.get("cached") for v in again)
    assert j2.stats.calls == 0 and j2.stats.cache_hits == 2
    j2.close()


def test_serve_judge_command_subprocess():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "medrl.cli", "serve-judge", "--port", str(port), "--no-embeddings"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url.replace("/v1", "/health"), timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "serve-judge did not start within 60 s"
            time.sleep(0.2)
        j = _judge(url)
        assert run_sync(j.answer_correct("What does the arrow point to?", "Renal artery", "renal artery")).value is True
        assert run_sync(j.answer_correct("What does the arrow point to?", "Renal artery", "-")).value is False
        j.close()
        r = httpx.post(url + "/chat/completions",
                       json={"model": "medrl-reference", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 400 and "TASK" in r.json()["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ------------------------------------------------------------------ fault injection
def _fault_app():
    """Replies by a FAULT=<mode> marker in the candidate answer; attempts counted per prompt."""
    app = FastAPI()
    seen: Counter = Counter()
    app.state.seen = seen

    def ok(text: str):
        return chat_completion(text, "m", prompt_tokens=10)

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        user = body["messages"][-1]["content"]
        m = re.search(r"FAULT=([a-z0-9_]+)", user)
        mode = m.group(1) if m else "none"
        seen[user] += 1
        n = seen[user]
        auth = request.headers.get("authorization", "")
        if mode == "http500_once" and n == 1 or mode == "http500_always":
            return JSONResponse({"error": {"message": f"upstream broke for {auth}"}}, status_code=500)
        if mode == "http429_once" and n == 1:
            return JSONResponse({"error": {"message": "slow down"}}, status_code=429, headers={"retry-after": "0"})
        if mode == "auth401":
            return JSONResponse({"error": {"message": f"Incorrect API key provided: {auth}"}}, status_code=401)
        if mode == "timeout_once" and n == 1 or mode == "timeout_always":
            await asyncio.sleep(1.5)
        if mode == "slow":
            await asyncio.sleep(0.15)
        if mode == "malformed_always" or mode == "malformed_once" and n == 1:
            return ok("Sure! After careful thought, the candidate looks right to me.")
        if mode == "garbage_body_once" and n == 1:
            return PlainTextResponse("{'choices': oops", media_type="application/json")
        return ok("YES")

    return app


@pytest.fixture(scope="module")
def fault_server():
    app = _fault_app()
    with serve_in_thread(app) as url:
        yield url, app


def test_faults_are_retried_or_unscored_and_counted(fault_server, caplog):
    url, _ = fault_server
    # retry_budget=0: every retry counted here runs (the budget is tested in test_judge_timeouts.py)
    j = OpenAIJudge("m", base_url=url, cache_path=":memory:", concurrency=8, retry_budget=0, **FAST)
    modes = ["plain", "slow", "http500_once", "http429_once", "timeout_once", "malformed_once", "garbage_body_once",
             "http500_always", "timeout_always", "malformed_always"]

    async def go():
        return await asyncio.gather(*(j.answer_correct("q", "lung", f"lung FAULT={m}") for m in modes))

    t = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="medrl.judges"):
        v = dict(zip(modes, run_sync(go())))
    elapsed = time.monotonic() - t
    for m in modes[:7]:
        assert v[m].scored and v[m].value is True, (m, v[m].error)
    for m in modes[7:]:
        assert not v[m].scored and v[m].value is None, m
    assert "HTTP 500" in v["http500_always"].error
    assert "timeout" in v["timeout_always"].error
    assert "unparseable" in v["malformed_always"].error and v["malformed_always"].raw.startswith("Sure!")
    assert v["http500_always"].meta["attempts"] == 3  # 1 try + max_retries=2
    s = j.stats
    # calls: 10 requests; retries: 1 each for the 5 recovered faults + 2 + 2 + 1 (one parse retry)
    assert s.calls == 10 and s.failures == 3 and s.retries == 5 + 2 + 2 + 1
    assert len([r for r in caplog.records if "unscored" in r.getMessage()]) == 3
    assert elapsed < 10
    # the failures were not cached; a recovered one was: asking again costs nothing
    again = run_sync(j.answer_correct("q", "lung", "lung FAULT=http500_once"))
    assert again.meta.get("cached") and j.stats.cache_hits == 1
    j.close()


def test_api_key_never_leaks(fault_server, caplog, monkeypatch):
    url, _ = fault_server
    monkeypatch.setenv("MEDRL_TEST_JUDGE_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx", "httpcore", "medrl.judges"):
        caplog.set_level(logging.DEBUG, logger=name)
    j = OpenAIJudge("m", base_url=url, api_key_env="MEDRL_TEST_JUDGE_KEY", cache_path=":memory:", **FAST)
    v500 = run_sync(j.answer_correct("q", "lung", "lung FAULT=http500_always"))
    # 401 is not retried: it stops the run (issue 12), naming the variable, never the key
    with pytest.raises(JudgeAuthError, match="MEDRL_TEST_JUDGE_KEY") as e401:
        run_sync(j.answer_correct("q", "lung", "lung FAULT=auth401"))
    assert "HTTP 401" in str(e401.value)
    assert not v500.scored and "HTTP 500" in v500.error
    texts = [str(e401.value), v500.error, v500.raw, repr(j), str(j.stats), caplog.text]
    texts += [r.getMessage() for r in caplog.records]
    assert all(SECRET not in t and "SECRET123" not in t for t in texts), [t for t in texts if "SECRET123" in t]
    # the SDK's own exception, sanitised by the judge
    import openai

    exc = openai.AuthenticationError(f"bad key {SECRET}", response=httpx.Response(
        401, request=httpx.Request("POST", url)), body=None)
    retryable, msg, _ = j._classify(exc)
    assert not retryable and SECRET not in msg and "***" in msg
    j.close()
    monkeypatch.delenv("MEDRL_TEST_JUDGE_KEY")
    with pytest.raises(RuntimeError, match="MEDRL_TEST_JUDGE_KEY") as err:
        OpenAIJudge("gpt-5-mini", api_key_env="MEDRL_TEST_JUDGE_KEY", cache_path=":memory:")
    assert SECRET not in str(err.value)


def test_unreachable_server_is_unscored_not_raised():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    j = OpenAIJudge("m", base_url=f"http://127.0.0.1:{port}/v1", cache_path=":memory:", **FAST)
    v = run_sync(j.verify_steps("q", "a", ["step one here."]))
    assert not v.scored and "connection" in v.error and j.stats.failures == 1 and j.stats.retries == 2
    j.close()


def test_guards_decide_without_a_call(fault_server):
    url, app = fault_server
    j = OpenAIJudge("m", base_url=url, cache_path=":memory:", **FAST)
    for pred in ("-", "", "The largest organ in the picture is [insert your answer here based on the medical "
                          "reasoning provided above]."):
        v = run_sync(j.answer_correct("q", "Renal artery", pred))
        assert v.scored and v.value is False and v.meta["guard"]
    assert run_sync(j.verify_steps("q", "a", [])).value == []
    assert run_sync(j.consistency("q", "", "lung")).value is False
    assert j.stats.calls == 0
    j.close()


def test_grade_rounds_ask_again_in_one_conversation(reference_url):
    """MediX-R1's evaluation rounds over HTTP: three requests, each holding the earlier rounds and
    a request to re-evaluate; the verdict is their majority (the reference judge repeats itself)."""
    j = _judge(reference_url)
    one = run_sync(j.grade("Which organ?", "liver", "liver", rubric="binary"))
    three = run_sync(j.grade("Which organ?", "liver", "liver", rubric="binary", rounds=3))
    # round 1 is the one-round request again (a cache hit); rounds 2 and 3 are new conversations
    assert one.value == three.value == 1.0 and (j.stats.calls, j.stats.cache_hits) == (3, 1)
    assert json.loads(three.raw)["rounds"] == [1, 1, 1]
    report = run_sync(j.grade("Summarise.", "small left effusion", "small left pleural effusion", rubric="report",
                              rounds=3))
    assert report.scored and json.loads(report.raw)["rounds"] == [report.value] * 3


def test_paper_answer_check_skips_the_override_tier(reference_url):
    """MRPO App. H.1: the judge alone decides every answer (a hedge reaches it), replying O/X."""
    j = _judge(reference_url)
    before = j.stats.calls
    v = run_sync(j.answer_correct("Which organ?", "liver", "liver or spleen", check="paper"))
    assert v.scored and j.stats.calls == before + 1
    strict = run_sync(j.answer_correct("Which organ?", "liver", "liver or spleen"))
    assert strict.value is False and j.stats.calls == before + 1  # refused by the override tier, no request
