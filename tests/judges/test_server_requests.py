"""`medrl serve-judge` answers malformed request fields with 400 naming the field (a list or an
object as ``model`` was a 500 with a traceback), refuses ambiguous framing (Content-Length with
Transfer-Encoding: one 400, then the connection is closed, so a request hidden in the body is
never answered), and refuses to serve the network without a key unless told to."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import httpx
import pytest

from medrl.judges import prompts
from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(create_app(ReferenceBackend(use_embeddings=False))) as url:
        yield url


def _ok_body(**fields) -> dict:
    return {"model": "medrl-reference", "messages": prompts.answer_correct("What organ?", "Lung", "lung", "yes_no"),
            **fields}


@pytest.mark.parametrize("fields, named", [
    ({"model": ["a"]}, "'model': Input should be a valid string (got list)"),
    ({"model": {"a": 1}}, "'model': Input should be a valid string (got dict)"),
    ({"model": 7}, "'model'"),
    ({"messages": [{"role": "user", "content": 5}]}, "'messages[0].content'"),
    ({"messages": [{"role": ["user"], "content": "x"}]}, "'messages[0].role'"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}]}, "'messages[0].content[0].text'"),
    ({"max_tokens": "5"}, "'max_tokens'"),
    ({"max_completion_tokens": 0}, "'max_completion_tokens'"),
    ({"stream": "yes"}, "'stream'"),
    ({"temperature": [0]}, "'temperature'"),
    ({"stop": [1]}, "'stop[0]'"),
])
def test_a_malformed_field_gets_400_naming_it(server, fields, named, caplog):
    r = httpx.post(server + "/chat/completions", json=_ok_body(**fields))
    assert r.status_code == 400, r.text
    assert named in r.json()["error"]["message"]
    assert "Traceback" not in caplog.text


def test_well_formed_requests_still_work(server):
    r = httpx.post(server + "/chat/completions", json=_ok_body(max_tokens=5, temperature=0, stop=["\n"], seed=1,
                                                              extra_field_of_some_client={"x": 1}))
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "YES"


def _raw(url: str, request: bytes) -> tuple[list[str], bool]:
    """Send ``request`` on one connection: (status lines received, whether the server closed it)."""
    host, port = re.match(r"http://([^:]+):(\d+)", url).groups()
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(request)
        s.settimeout(2)
        data, closed = b"", False
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    closed = True
                    break
                data += chunk
        except socket.timeout:
            pass
    return re.findall(r"HTTP/1\.1 (\d{3})", data.decode("latin-1")), closed


def test_content_length_with_transfer_encoding_is_refused_and_the_connection_closed(server):
    body = json.dumps(_ok_body()).encode()
    chunked = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    hidden = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"  # a second request inside the first one's bytes
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    for framing in (b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % len(chunked),
                    b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"):
        statuses, closed = _raw(server, head + framing + b"\r\n" + chunked + hidden)
        assert statuses == ["400"] and closed  # answered once, never the hidden request
    # each framing alone is fine
    statuses, _ = _raw(server, head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked)
    assert statuses == ["200"]
    statuses, _ = _raw(server, head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert statuses == ["200"]
    # two Content-Length values that disagree: refused too (h11 or the guard), never answered twice
    statuses, closed = _raw(server, head + b"Content-Length: %d\r\nContent-Length: 3\r\n\r\n" % len(body) + body + hidden)
    assert statuses == ["400"] and closed


def test_a_network_address_without_a_key_is_refused(capsys):
    from medrl.cli import main
    from medrl.commands.serve_judge import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("[::1]") and is_loopback("localhost")
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "judge.example.org"))
    assert main(["serve-judge", "--host", "0.0.0.0", "--port", "0", "--no-embeddings"]) == 2
    err = capsys.readouterr().err
    assert "--host 0.0.0.0 is reachable from the network but no --api-key-env" in err


@pytest.mark.parametrize("extra, warned", [
    (["--allow-unauthenticated"], "WITHOUT a key"),
    (["--api-key-env", "MEDRL_T_SERVE_KEY"], "bearer key travels in clear text"),
])
def test_a_network_address_is_served_with_a_warning_when_allowed(extra, warned):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEDRL_T_SERVE_KEY": "k" * 16}
    proc = subprocess.Popen([sys.executable, "-m", "medrl.cli", "serve-judge", "--host", "0.0.0.0", "--port", "0",
                             "--no-embeddings", *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert warned in lines[0] and "medrl judge server:" in lines[1], lines
