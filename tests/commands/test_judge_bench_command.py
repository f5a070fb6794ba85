"""``medrl judge-bench``: how each judge spec is built (cache file per openai: judge under --out)
and a bad labels file reported with exit code 2."""

from __future__ import annotations

import argparse
from pathlib import Path

from medrl.commands import judge_bench


def parse(argv):
    p = argparse.ArgumentParser()
    judge_bench.add_arguments(p)
    return p.parse_args(argv)


def test_openai_judge_gets_its_own_cache_under_out(tmp_path):
    a = parse(["--judge", "openai:gpt-5-mini", "--judge", "reference", "--out", str(tmp_path / "b"),
               "--judge-base-url", "http://h/v1", "--concurrency", "3"])
    assert a.judge == ["openai:gpt-5-mini", "reference"]
    opts = judge_bench._options(a, "openai:gpt-5-mini")
    assert opts == {"base_url": "http://h/v1", "api_key_env": "OPENAI_API_KEY",
                    "cache_path": str(tmp_path / "b" / "cache" / "openai_gpt-5-mini.sqlite"), "concurrency": 3}
    assert (tmp_path / "b" / "cache").is_dir()
    assert judge_bench._options(a, "reference") == {}


def test_images_and_no_embeddings_options(tmp_path):
    a = parse(["--judge", "openai:m", "--out", str(tmp_path), "--judge-images", "--judge-image-size", "512",
               "--judge-cache", str(tmp_path / "c.sqlite"), "--no-embeddings"])
    opts = judge_bench._options(a, "OpenAI:m")
    assert opts["images"] is True and opts["image_max_side"] == 512
    assert opts["cache_path"] == str(tmp_path / "c.sqlite") and not (tmp_path / "cache").exists()
    assert judge_bench._options(a, "reference") == {"use_embeddings": False}


def test_bad_labels_exit_2_naming_file_and_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"type": "answer", "id": "a", "question": "q", "reference": "r", "candidate": "c"}\n')
    a = parse(["--judge", "reference", "--no-embeddings", "--labels", str(labels), "--out", str(tmp_path / "o"),
               "--quiet", "--no-record"])
    assert judge_bench.run(a) == 2
    out = capsys.readouterr().out
    assert out.startswith("medrl judge-bench: error:") and f"{labels}:1" in out and "'label'" in out
    assert Path(tmp_path / "o").is_dir()
