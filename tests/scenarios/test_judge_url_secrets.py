"""A password and a token inside ``--judge-base-url`` never land in a file or a log line.

A one-step training run and an eval of its model, both judged by a loopback ``serve-judge``
(reference backend) at ``http://USER:PASSWORD@127.0.0.1:PORT/v1?token=TOKEN``: every file of the
run folder, the eval folder and the judge cache, and everything both commands printed or
logged, is searched for the password, the user name and the token. The judge still answers
(the dry run's probe reaches it), so the secrets were sent where they belong."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

USER, PASSWORD, TOKEN = "medrl-judge-user", "pw-s3cret-4711", "tok-s3cret-0815"


def _holding_secrets(folder: Path) -> list[str]:
    hits = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            hits += [f"{p}: {s}" for s in (USER, PASSWORD, TOKEN) if s.encode() in data]
    return hits


def _data(folder: Path) -> Path:
    from PIL import Image

    folder.mkdir()
    rows = []
    for i, (q, a) in enumerate([("Which organ is enlarged?", "liver"), ("Where is the lesion?", "left kidney")]):
        Image.new("RGB", (32, 32), (40 * i, 80, 120)).save(folder / f"ct{i}.png")
        rows.append({"id": f"r{i}", "images": [f"ct{i}.png"], "question": q, "answer": a, "answer_type": "OPEN"})
    path = folder / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_no_secret_of_the_judge_url_is_written_by_train_or_eval(tmp_path, capsys, caplog):
    from medrl.cli import main
    from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread

    data = f"jsonl:{_data(tmp_path / 'data')}"

    app = create_app(ReferenceBackend(use_embeddings=False))
    run, ev, cache = tmp_path / "run", tmp_path / "eval", tmp_path / "judge_cache.sqlite"
    with caplog.at_level(logging.INFO), serve_in_thread(app) as url:
        secret = url.replace("http://", f"http://{USER}:{PASSWORD}@") + f"?token={TOKEN}"
        judge = ["--judge", "openai:medrl-reference", "--judge-base-url", secret, "--judge-cache", str(cache)]
        train = ["train", "--recipe", "grpo", "--model", "tiny", "--data", data, "--profile", "cpu",
                 "--set", "data.require_gold_reasoning=false", "--max-steps", "1", "--out", str(run), *judge]
        assert main(train + ["--dry-run"]) == 0, capsys.readouterr().err[-3000:]  # its probe asks the judge
        asked = app.state.requests
        code = main(train)
        assert code == 0, capsys.readouterr().err[-3000:]
        code = main(["eval", "--model", str(run / "final"), "--data", data, "--max-new-tokens", "16",
                     "--no-text-metrics", "--bootstrap", "20", "--out", str(ev), *judge])
        printed = capsys.readouterr()
        assert code == 0, printed.err[-3000:]
    assert asked > 0  # the judge was reached through the URL with its secrets
    cfg = json.loads((ev / "config.json").read_text())
    assert cfg["judge"]["endpoint"] == url.replace("http://", "http://***@") + "?token=***"
    assert "?token=***" in (ev / "report.md").read_text()
    assert (run / "config.yaml").is_file() and "token=***" in (run / "config.yaml").read_text()
    assert _holding_secrets(run) == [] and _holding_secrets(ev) == [] and _holding_secrets(tmp_path) == []
    logged = printed.out + printed.err + caplog.text
    assert not [s for s in (USER, PASSWORD, TOKEN) if s in logged]
