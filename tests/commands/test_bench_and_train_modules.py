"""The `bench` and `train` command modules: the options their --help teaches."""

from __future__ import annotations

import argparse

import medrl.commands.bench as bench
import medrl.commands.train as train


def _help(module) -> str:
    p = argparse.ArgumentParser(prog="medrl x", description=module.DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(p)
    return p.format_help()


def test_bench_help_names_effects_and_quick():
    text = _help(bench)
    assert "effects" in text and "--quick" in text
    assert "known truth" in bench.HELP


def test_train_help_teaches_data_choice_probe_data_and_overwrite():
    text = _help(train)
    for option in ("--data", "--probe-data", "--overwrite", "--dry-run", "--resume", "--set"):
        assert option in text, option
