"""`medrl push RUN --repo ID` uploads the run's model with its Hub-ready card through
huggingface_hub's upload API - tested against a loopback stand-in of the Hub (tests/fake_hub.py)."""

from __future__ import annotations

import json
import shutil

import pytest
from fake_hub import FakeHub

from medrl.cli import main


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run folder whose final/ is the tiny model with a model card medrl wrote."""
    from medrl.models import build_tiny_vlm
    from medrl.train.model_card import write_model_card

    run = tmp_path_factory.mktemp("runs") / "mrpo"
    final = build_tiny_vlm(run / "final")
    (run / "config.yaml").write_text("recipe: {name: mrpo}\n")
    write_model_card([run, final], base_model="tiny", method="mrpo (RL)", recipe="mrpo", datasets=["vqa_rad"],
                     command="medrl train --recipe mrpo --model tiny --data vqa_rad --out mrpo")
    return run


@pytest.fixture()
def hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the conftest's offline mode
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    h = FakeHub(tmp_path / "hub", token="hf_test_token")
    yield h
    h.close()


def test_push_uploads_the_model_and_its_card(run_dir, hub, capsys):
    assert main(["push", str(run_dir), "--repo", "me/tiny-mrpo", "--endpoint", hub.url]) == 0
    got = hub.root / "me" / "tiny-mrpo"
    final = run_dir / "final"
    assert sorted(p.name for p in got.iterdir()) == sorted(p.name for p in final.iterdir() if p.is_file())
    assert (got / "model.safetensors").read_bytes() == (final / "model.safetensors").read_bytes()
    assert "datasets:" in (got / "README.md").read_text()
    assert ("POST", "/api/repos/create") in hub.requests
    assert hub.cards and hub.cards[0]["datasets"] == ["vqa_rad"] and "medrl" in hub.cards[0]["tags"]
    assert "pushed" in capsys.readouterr().out


def test_dry_run_lists_and_uploads_nothing(run_dir, hub, capsys):
    assert main(["push", str(run_dir), "--repo", "me/x", "--endpoint", hub.url, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "model.safetensors" in out and "README.md" in out and "nothing uploaded" in out and not hub.requests


def test_a_refused_token_is_one_line(run_dir, hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "wrong")
    assert main(["push", str(run_dir), "--repo", "me/x", "--endpoint", hub.url]) == 1
    err = capsys.readouterr().err.strip()
    assert "the Hub refused the upload to me/x" in err and len(err.splitlines()) == 1


def test_a_card_with_a_local_path_or_no_card_is_refused(run_dir, tmp_path, hub, capsys):
    bad = tmp_path / "bad"
    shutil.copytree(run_dir / "final", bad)
    (bad / "README.md").write_text((bad / "README.md").read_text() + f"\nTrained in {tmp_path}/x\n")
    assert main(["push", str(bad), "--repo", "me/x", "--endpoint", hub.url]) == 2
    assert "names a local path" in capsys.readouterr().err
    (bad / "README.md").unlink()
    assert main(["push", str(bad), "--repo", "me/x", "--endpoint", hub.url]) == 2
    assert "README.md is missing" in capsys.readouterr().err and not hub.requests


def test_a_damaged_model_is_not_pushed(run_dir, tmp_path, hub, capsys):
    bad = tmp_path / "bad"
    shutil.copytree(run_dir / "final", bad)
    cfg = json.loads((bad / "processor_config.json").read_text())
    (bad / "processor_config.json").write_text(json.dumps(cfg)[:-5])
    assert main(["push", str(bad), "--repo", "me/x", "--endpoint", hub.url]) == 5
    assert "processor_config.json is not valid JSON" in capsys.readouterr().err and not hub.requests


def test_offline_mode_is_refused_in_one_line(run_dir, monkeypatch, capsys):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    assert main(["push", str(run_dir), "--repo", "me/x", "--endpoint", "http://127.0.0.1:9"]) == 2
    assert "HF_HUB_OFFLINE is set" in capsys.readouterr().err
