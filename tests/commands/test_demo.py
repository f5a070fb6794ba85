"""``medrl demo``: options whose defaults come from the demo settings, and the checks that fail
before any training starts (no data folder, a judge that cannot take images)."""

from __future__ import annotations

import argparse

from medrl.commands import demo
from medrl.commands.demo_pipeline.settings import QUICK, DemoConfig
from medrl.common.paths import DATA_HELP


def parse(argv):
    p = argparse.ArgumentParser()
    demo.add_arguments(p)
    return p, p.parse_args(argv)


def test_help_quotes_the_default_and_quick_settings_from_one_place():
    p, a = parse([])
    text = " ".join(p.format_help().split())
    d = DemoConfig()
    assert f"default {d.rl_steps}; quick {QUICK['rl_steps']}" in text
    assert f"default {d.sft_steps}; quick {QUICK['sft_steps']}" in text
    assert f"quick {QUICK['eval_limit']}; 0 = all 200" in text
    # unset options are None, so the quick/full settings decide
    assert a.steps is None and a.sft_steps is None and a.judge == "reference" and a.model == "default"


def test_missing_data_folder_exits_with_the_data_code_and_where_to_get_the_data(tmp_path, capsys):
    from medrl.common.exit_codes import Exit

    _, a = parse(["--data-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    # one exit-code table for every command (medrl.common.exit_codes): missing data is the data code (4)
    assert demo.run(a) == Exit.DATA
    err = capsys.readouterr().err
    assert "no medical VQA data folder found" in err and DATA_HELP in err
    assert not (tmp_path / "out").exists()


def test_judge_images_with_a_text_only_judge_fails_at_start(tmp_path, capsys):
    _, a = parse(["--data-dir", str(tmp_path), "--judge-images", "--out", str(tmp_path / "out")])
    assert demo.run(a) == 2
    assert "judge 'reference' reads text only and cannot judge images" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_auto_threads_needs_two_cores(monkeypatch):
    import os

    import torch

    before = torch.get_num_threads()
    assert demo.auto_threads() in (None, 1)
    assert torch.get_num_threads() == before  # the probe restores torch's setting
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert demo.auto_threads() is None
