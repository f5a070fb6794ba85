"""``medrl serve-judge``: options and their defaults, and the checks made before serving."""

from __future__ import annotations

import argparse
import socket

import pytest

from medrl.commands import serve_judge
from medrl.judges.server import BODY_TIMEOUT, MAX_PER_CLIENT


def parse(argv):
    p = argparse.ArgumentParser()
    serve_judge.add_arguments(p)
    return p.parse_args(argv)


def test_defaults_serve_the_reference_judge_locally():
    a = parse([])
    assert (a.backend, a.host, a.port, a.workers) == ("reference", "127.0.0.1", 8000, 4)
    assert a.body_timeout == BODY_TIMEOUT and a.max_per_client == MAX_PER_CLIENT
    assert a.api_key_env is None and a.docs is False
    with pytest.raises(SystemExit):
        parse(["--backend", "vllm"])  # only reference | lm


@pytest.mark.parametrize("argv, env, message", [
    (["--api-key-env", "MEDRL_TEST_UNSET_KEY"], None,
     "--api-key-env MEDRL_TEST_UNSET_KEY: that environment variable is empty or unset"),
    (["--api-key-env", "MEDRL_TEST_UNSET_KEY"], "", "that environment variable is empty or unset"),
    (["--max-body-mb", "0"], None, "--max-body-mb must be positive"),
    (["--body-timeout", "0"], None, "--body-timeout must be positive and --max-per-client at least 1"),
    (["--max-per-client", "0"], None, "--body-timeout must be positive and --max-per-client at least 1"),
])
def test_bad_settings_exit_2_before_serving(argv, env, message, monkeypatch, capsys):
    if env is None:
        monkeypatch.delenv("MEDRL_TEST_UNSET_KEY", raising=False)
    else:
        monkeypatch.setenv("MEDRL_TEST_UNSET_KEY", env)
    assert serve_judge.run(parse(argv)) == 2
    assert message in capsys.readouterr().err


def test_busy_port_is_refused_naming_host_and_port(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert serve_judge.run(parse(["--no-embeddings", "--port", str(port)])) == 2
    assert f"cannot bind 127.0.0.1:{port}" in capsys.readouterr().err


def test_description_states_the_hardening():
    for phrase in ("/v1/chat/completions", "bodies over\n--max-body-mb get 413", "get 503", "(401 otherwise)"):
        assert phrase in serve_judge.DESCRIPTION
