"""``serve-judge`` keeps serving while clients send half a body and go silent: their requests
time out (408), one address cannot hold more than its share of requests (429), the real
requests of another client are answered, and a disconnect is one log line, not a traceback."""

from __future__ import annotations

import logging
import socket
import time

import httpx
import pytest

from medrl.judges import prompts
from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread

SLOW = 40


def _half_body(port: int, source: str) -> socket.socket:
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 1000\r\n\r\n" + b'{"messages": [' + b" " * 100)
    return s


def test_slow_clients_cannot_take_the_server(caplog):
    try:  # the slow clients come from another loopback address than the real one
        probe = socket.socket()
        probe.bind(("127.0.0.2", 0))
        probe.close()
    except OSError:
        pytest.skip("127.0.0.2 is not a loopback address here")
    caplog.set_level(logging.INFO)
    app = create_app(ReferenceBackend(use_embeddings=False), max_pending=SLOW // 2, max_per_client=8,
                     body_timeout=1.0)
    body = {"model": "medrl-reference", "messages": prompts.answer_correct("Which organ?", "Lung", "lung", "yes_no")}
    with serve_in_thread(app) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        slow = [_half_body(port, "127.0.0.2") for _ in range(SLOW)]
        time.sleep(0.3)
        t0 = time.monotonic()
        real = [httpx.post(url + "/chat/completions", json=body, timeout=5) for _ in range(5)]
        assert [r.status_code for r in real] == [200] * 5
        assert time.monotonic() - t0 < 4
        codes = []
        for s in slow:
            try:
                head = s.recv(200).decode("latin-1")
            except (socket.timeout, OSError):
                head = ""
            codes.append(head.split(" ")[1] if head.startswith("HTTP/") else "none")
        assert codes.count("429") == SLOW - 8 and codes.count("408") == 8, codes
        # disconnects mid-body: one line each, no traceback
        gone = [_half_body(port, "127.0.0.2") for _ in range(3)]
        time.sleep(0.2)
        for s in gone:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        for s in slow:
            s.close()
        time.sleep(0.5)
        assert httpx.post(url + "/chat/completions", json=body, timeout=5).status_code == 200
    assert app.state.disconnects >= 1
    assert not any(r.exc_info or "Traceback" in r.getMessage() for r in caplog.records), \
        [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert sum("disconnected" in r.getMessage() for r in caplog.records) == app.state.disconnects


def test_slow_header_sockets_are_closed_after_the_header_timeout():
    """Clients that send a request line and half of their headers, then go silent: the server
    closes every one of them after ``header_timeout`` (uvicorn alone keeps them open for ever),
    and a real request, and one on a kept-alive connection, are still answered."""
    n = 300
    app = create_app(ReferenceBackend(use_embeddings=False))
    body = {"model": "medrl-reference", "messages": prompts.answer_correct("Which organ?", "Lung", "lung", "yes_no")}
    with serve_in_thread(app, header_timeout=1.0) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        slow = []
        for _ in range(n):
            s = socket.socket()
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Ty")
            slow.append(s)
        with httpx.Client(timeout=5) as client:  # one kept-alive connection, two requests
            assert [client.post(url + "/chat/completions", json=body).status_code for _ in range(2)] == [200, 200]
        time.sleep(1.5)
        closed = 0
        for s in slow:
            try:
                closed += s.recv(100) == b""
            except (socket.timeout, OSError):
                pass
            s.close()
        assert closed == n
        assert httpx.post(url + "/chat/completions", json=body, timeout=5).status_code == 200
