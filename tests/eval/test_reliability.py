"""Issue 12, eval side, on real files and a local OpenAI-compatible server (127.0.0.1): an
outage leaves rows unscored and a rerun against the healthy server completes every row; the
folder's judge identity is checked on resume (refused, or accepted with --rescore-unscored);
HTTP 401 stops the run at once naming the key's variable, never its value; U+2028 and lone
surrogates in generated outputs survive resume and `medrl analyze`; an endpoint echoing the
key never gets it into outputs.jsonl or the cache."""

from __future__ import annotations

import json
import re

import pytest
from fake_openai import chat_completion
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from medrl.cli import main
from medrl.data import VQARecord
from medrl.eval.runner import EvalDataset, EvalFolderMismatch, load_run, run_eval
from medrl.judges import build_judge
from medrl.judges.base import JudgeAuthError
from medrl.judges.server import serve_in_thread

FAST = dict(timeout=2, max_retries=1, backoff=0.01, max_backoff=0.02)
SECRET = "sk-h3-TOPSECRET-0123456789"


def _app():
    """Fake judge: state.mode is "healthy", "down" (HTTP 500), "auth" (HTTP 401) or "echo"
    (a valid verdict with the request's Authorization header in an extra field)."""
    app = FastAPI()
    app.state.mode = "healthy"
    app.state.requests = 0

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        app.state.requests += 1
        body = await request.json()
        mode = app.state.mode
        if mode == "down":
            return JSONResponse({"error": {"message": "overloaded"}}, status_code=500)
        if mode == "auth":
            return JSONResponse({"error": {"message": "invalid key " + request.headers.get("authorization", "")}},
                                status_code=401)
        c = body["messages"][-1]["content"]
        text = c if isinstance(c, str) else c[0]["text"]
        if "TASK: verify_steps" in text:
            n = len(re.findall(r"^\[\d+\]", text, re.MULTILINE))
            reply = json.dumps({"steps": [{"step": k, "gold_alignment": 1, "answer_contribution": 1, "reason": "ok"}
                                          for k in range(1, n + 1)]})
        else:
            reply = '{"score": 1}'
        if mode == "echo":  # a verdict that still parses, carrying the caller's header
            reply = reply[:-1] + ', "debug": ' + json.dumps(request.headers.get("authorization", "")) + "}"
        return chat_completion(reply, body["model"], prompt_tokens=3)

    return app


@pytest.fixture(scope="module")
def server():
    app = _app()
    with serve_in_thread(app) as url:
        yield url, app


def _records(n=4):
    refs = ["liver", "left kidney", "pneumothorax", "brain"]
    return [VQARecord(id=f"r{i}", images=[], question=f"Which finding {i}?", answer=refs[i % 4],
                      answer_type="OPEN", open_ended=True) for i in range(n)]


def _gen(recs):
    outs = []
    for r in recs:
        sep = "\u2028" if r.id == "r1" else " "
        odd = "\ud800" if r.id == "r2" else ""
        outs.append(f"<think>The image is an axial CT.{sep}The finding is {r.answer}{odd}.</think>"
                    f"<answer>{r.answer}</answer>")
    return outs


def _eval(out, judge, **kw):
    return run_eval([EvalDataset("toy:test", _records())], _gen, judge, out, model="fake", batch_size=2,
                    text_metrics=False, n_boot=50, progress=False, **kw)


def _judge(url, tmp_path, **kw):
    return build_judge("openai:m", base_url=url, cache_path=str(tmp_path / "cache.sqlite"), **{**FAST, **kw})


def test_outage_then_healthy_rerun_completes_every_row_and_unicode_survives(server, tmp_path):
    url, app = server
    out = tmp_path / "ev"
    app.state.mode = "down"
    j = _judge(url, tmp_path)
    m = _eval(out, j)
    assert m["datasets"]["toy:test"]["metrics"]["judge_binary"]["unscored"] == 4
    j.close()
    app.state.mode = "healthy"
    before = app.state.requests
    j = _judge(url, tmp_path)
    m = _eval(out, j)
    j.close()
    assert app.state.requests > before  # the rerun asked the judge again
    acc = m["datasets"]["toy:test"]["metrics"]["judge_binary"]
    assert acc["unscored"] == 0 and acc["mean"] == 1.0
    rows = load_run(out)
    assert len(rows) == 4 and all(r["step_verdicts"] for r in rows)
    lines = (out / "outputs.jsonl").read_bytes().split(b"\n")
    assert len([l for l in lines if l.strip()]) == 4  # superseded rows compacted away
    assert "\u2028" in rows[1]["output"] and "\ufffd" in rows[2]["output"]
    assert "\u2028".encode() not in (out / "outputs.jsonl").read_bytes()  # escaped on disk
    # a third run: nothing left to ask
    before = app.state.requests
    j = _judge(url, tmp_path)
    _eval(out, j)
    j.close()
    assert app.state.requests == before
    assert main(["analyze", str(out), "--out", str(tmp_path / "an")]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["judge"]["endpoint"] == url and cfg["judge"]["model"] == "m" and cfg["judge"]["images"] is False
    assert cfg["judge"]["prompt_version"]


def test_other_judge_refused_unless_rescore_unscored(server, tmp_path):
    url, app = server
    app.state.mode = "down"
    out = tmp_path / "ev"
    j = _judge(url, tmp_path)
    _eval(out, j)
    j.close()
    app.state.mode = "healthy"
    with serve_in_thread(_app()) as other:
        j2 = _judge(other, tmp_path)
        with pytest.raises(EvalFolderMismatch, match=r"endpoint.*--rescore-unscored"):
            _eval(out, j2)
        m = _eval(out, j2, rescore_unscored=True)
        j2.close()
    assert m["datasets"]["toy:test"]["metrics"]["judge_binary"]["unscored"] == 0
    cfg = json.loads((out / "config.json").read_text())
    assert [u["endpoint"] for u in cfg["judges_used"]] == [url, other]
    # a different image setting is a different judge too
    j3 = build_judge("reference")
    with pytest.raises(EvalFolderMismatch, match="another judge"):
        _eval(out, j3)


def test_401_stops_at_once_naming_the_variable(server, tmp_path, monkeypatch, capsys):
    url, app = server
    app.state.mode = "healthy"
    src = tmp_path / "ev"
    j = _judge(url, tmp_path)
    _eval(src, j)
    j.close()
    monkeypatch.setenv("MEDRL_H3_KEY", SECRET)
    app.state.mode = "auth"
    before = app.state.requests
    j = build_judge("openai:m", base_url=url, api_key_env="MEDRL_H3_KEY", cache_path=":memory:", concurrency=1,
                    **FAST)
    with pytest.raises(JudgeAuthError, match="MEDRL_H3_KEY") as err:
        _eval(tmp_path / "ev401", j)
    assert SECRET not in str(err.value) and app.state.requests - before == 1  # no retry, no second request
    j.close()
    rc = main(["eval", "--rescore", str(src), "--out", str(tmp_path / "re"), "--judge", "openai:m",
               "--judge-base-url", url, "--judge-api-key-env", "MEDRL_H3_KEY", "--judge-cache",
               str(tmp_path / "c2.sqlite"), "--no-text-metrics", "--bootstrap", "20", "--concurrency", "1"])
    captured = capsys.readouterr()
    assert rc == 3 and "MEDRL_H3_KEY" in captured.err and "401" in captured.err
    assert SECRET not in captured.err + captured.out
    app.state.mode = "healthy"


def test_echoed_key_never_reaches_disk(server, tmp_path, monkeypatch):
    url, app = server
    monkeypatch.setenv("MEDRL_H3_KEY", SECRET)
    app.state.mode = "echo"
    j = build_judge("openai:m", base_url=url, api_key_env="MEDRL_H3_KEY", cache_path=str(tmp_path / "c.sqlite"),
                    **FAST)
    m = _eval(tmp_path / "ev", j)
    j.close()
    app.state.mode = "healthy"
    assert m["datasets"]["toy:test"]["metrics"]["judge_binary"]["mean"] == 1.0
    for f in (tmp_path / "ev").rglob("*"):
        if f.is_file():
            assert b"TOPSECRET" not in f.read_bytes(), f
    assert b"TOPSECRET" not in (tmp_path / "c.sqlite").read_bytes()
    raw = load_run(tmp_path / "ev")[0]["judge"]["binary_raw"]
    assert "***" in raw
