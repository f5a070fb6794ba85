"""A slow judge and a self-contradicting judge, on a local OpenAI-compatible server
(127.0.0.1): a judge slower than --judge-timeout costs each request at most
--judge-retry-budget seconds (not timeout x attempts), its rows are kept unscored with the reason
and a rerun against a healthy judge scores them; ``{"score": 1, "verdict": "NO"}`` is unscored
with "contradictory fields", never read as a pass. (Scaled down: the user's judge took 70 s
against a 60 s timeout; here 1.5 s against 0.25 s.)"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from fake_openai import chat_completion
from fastapi import FastAPI, Request

from medrl.cli import main
from medrl.data import VQARecord
from medrl.eval.runner import EvalDataset, load_run, run_eval
from medrl.judges import build_judge
from medrl.judges.base import run_sync
from medrl.judges.replies import VerdictParseError, parse_score
from medrl.judges.server import serve_in_thread

SLOW_S = 1.5


def _app():
    """state.mode: "slow" (answers after SLOW_S seconds), "contradict" ({"score": 1, "verdict":
    "NO"}), "healthy"."""
    app = FastAPI()
    app.state.mode = "healthy"
    app.state.requests = 0

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        app.state.requests += 1
        body = await request.json()
        if app.state.mode == "slow":
            await asyncio.sleep(SLOW_S)
        reply = '{"score": 1, "verdict": "NO"}' if app.state.mode == "contradict" else '{"score": 1}'
        return chat_completion(reply, body["model"])

    return app


@pytest.fixture(scope="module")
def server():
    app = _app()
    with serve_in_thread(app) as url:
        yield url, app


def _records(n=3):
    return [VQARecord(id=f"r{i}", images=[], question=f"Which organ {i}?", answer="liver", answer_type="OPEN",
                      open_ended=True) for i in range(n)]


def _gen(recs):
    return [f"<think>The scan shows the liver.</think><answer>{r.answer}</answer>" for r in recs]


def _eval(out, judge):
    return run_eval([EvalDataset("toy:test", _records())], _gen, judge, out, model="fake", batch_size=3,
                    text_metrics=False, verify_steps=False, n_boot=20, progress=False)


def test_retry_budget_bounds_a_slow_judge_per_request(server, tmp_path):
    url, app = server
    app.state.mode = "slow"
    # 5 attempts of 0.25 s each with backoff would take > 1.25 s; the budget stops it at 0.6 s
    judge = build_judge("openai:m", base_url=url, cache_path=":memory:", timeout=0.25, max_retries=4,
                        backoff=0.01, max_backoff=0.02, retry_budget=0.6)
    before = app.state.requests
    t = time.perf_counter()
    v = run_sync(judge.grade("Which organ?", "liver", "liver"))
    took = time.perf_counter() - t
    judge.close()
    app.state.mode = "healthy"
    assert not v.scored and "timeout" in v.error and "retry budget of 0.6s" in v.error
    assert took < 1.2, took
    assert 2 <= app.state.requests - before <= 4  # it retried, but only within the budget


def test_default_budget_is_twice_the_timeout():
    judge = build_judge("openai:m", base_url="http://127.0.0.1:9/v1", cache_path=":memory:", timeout=7)
    assert judge.retry_budget == 14
    judge.close()
    with pytest.raises(ValueError, match="timeout must be a positive"):
        build_judge("openai:m", base_url="http://127.0.0.1:9/v1", cache_path=":memory:", timeout=0)


def test_eval_with_a_slow_judge_keeps_rows_unscored_then_a_rerun_scores_them(server, tmp_path, monkeypatch, capsys,
                                                                              generation_faked_model):
    import medrl.eval.runner as runner

    url, app = server
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    data = tmp_path / "data"
    data.mkdir()
    from PIL import Image

    Image.new("RGB", (16, 16)).save(data / "ct.png")
    path = data / "set.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", "images": ["ct.png"], "question": f"Which organ {i}?",
                                        "answer": "liver"}) + "\n" for i in range(3)))
    monkeypatch.setenv("MEDRL_DATA_DIR", str(data))
    monkeypatch.setattr(runner, "build_generate_fn", lambda *a, **k: _gen)
    out = tmp_path / "ev"
    args = ["eval", "--model", str(model), "--data", f"jsonl:{path}", "--out", str(out), "--judge", "openai:m",
            "--judge-base-url", url, "--judge-cache", str(tmp_path / "c.sqlite"), "--no-text-metrics",
            "--no-steps", "--bootstrap", "20", "--max-new-tokens", "16", "--judge-api-key-env", "MEDRL_NO_KEY",
            "--judge-timeout", "0.25", "--judge-retry-budget", "0.5", "--concurrency", "4"]
    app.state.mode = "slow"
    t = time.perf_counter()
    assert main(args) == 0
    took = time.perf_counter() - t
    rows = load_run(out)
    assert len(rows) == 3 and all(r["scores"]["judge_binary"] is None for r in rows)
    assert all("timeout" in r["judge"]["binary_error"] and "retry budget of 0.5s" in r["judge"]["binary_error"]
               for r in rows), rows[0]["judge"]
    assert took < 20, took  # 3 rows x 5 attempts x (timeout + backoff) without the budget
    app.state.mode = "healthy"
    assert main(args) == 0
    rows = load_run(out)
    assert [r["scores"]["judge_binary"] for r in rows] == [1.0, 1.0, 1.0]  # the rerun scored every kept row


def test_contradictory_verdict_fields_are_unscored_with_the_reason(server, tmp_path):
    url, app = server
    app.state.mode = "contradict"
    judge = build_judge("openai:m", base_url=url, cache_path=str(tmp_path / "c.sqlite"), timeout=5, max_retries=1,
                        backoff=0.01, max_backoff=0.02)
    m = _eval(tmp_path / "ev", judge)
    judge.close()
    app.state.mode = "healthy"
    acc = m["datasets"]["toy:test"]["metrics"]["judge_binary"]
    assert acc["unscored"] == 3 and acc["mean"] is None
    row = load_run(tmp_path / "ev")[0]
    assert row["scores"]["judge_binary"] is None
    assert "contradictory fields: score 1 but verdict 'NO'" in row["judge"]["binary_error"]


@pytest.mark.parametrize("reply,expected", [
    ('{"score": 1, "verdict": "NO"}', None),
    ('{"score": 0, "correct": true}', None),
    ('{"score": 1, "is_correct": "incorrect"}', None),
    ('{"score": 0, "verdict": "X"}', 0.0),  # agreeing fields stay scored
    ('{"score": 1, "verdict": "YES", "reason": "no difference"}', 1.0),
    ('{"score": 1, "verdict": "partially"}', 1.0),  # free text is not read as a verdict
    ('{"score": 1, "answer": "no"}', 1.0),  # the answer text of a yes/no question is not a verdict
])
def test_parse_score_refuses_self_contradiction(reply, expected):
    if expected is None:
        with pytest.raises(VerdictParseError, match="contradictory fields"):
            parse_score(reply)
    else:
        assert parse_score(reply) == expected
    assert parse_score('{"score": 5, "verdict": "NO"}', "report") == 5.0  # the 0-5 rubric has no yes/no
