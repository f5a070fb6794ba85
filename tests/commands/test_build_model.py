"""``medrl build-model``: its options (families from the family table) and the refusals."""

from __future__ import annotations

import argparse

import pytest

from medrl.commands import build_model
from medrl.models.families import FAMILY_NAMES


def parse(argv):
    p = argparse.ArgumentParser()
    build_model.add_arguments(p)
    return p.parse_args(argv)


def test_defaults_and_family_choices():
    a = parse(["tiny", "--out", "x"])
    assert (a.kind, a.family, a.hidden_size, a.layers, a.vocab_size, a.seed) == ("tiny", "qwen2_5_vl", 64, 2, 2048, 0)
    for fam in FAMILY_NAMES:
        assert parse(["tiny", "--out", "x", "--family", fam]).family == fam
    with pytest.raises(SystemExit):
        parse(["tiny", "--out", "x", "--family", "gpt2"])
    with pytest.raises(SystemExit):
        parse(["tiny"])  # --out is required


def test_folder_holding_a_model_is_refused(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{}")
    assert build_model.run(parse(["tiny", "--out", str(tmp_path)])) == 2
    assert "already holds a model (config.json); choose another --out" in capsys.readouterr().err
