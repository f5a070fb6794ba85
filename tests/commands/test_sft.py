"""``medrl sft``: command-line shortcuts over the recipe's ``sft`` section, --dry-run, bad options."""

from __future__ import annotations

import argparse

import pytest
import yaml

from medrl.commands import sft


def parse(argv):
    p = argparse.ArgumentParser()
    sft.add_arguments(p)
    return p.parse_args(argv)


def test_shortcuts_override_the_recipe_section():
    recipe = {"learning_rate": 2e-5, "num_train_epochs": 3, "lora": {"r": 8}}
    a = parse(["--model", "m", "--out", "o", "--epochs", "1.5", "--max-steps", "7", "--lr", "1e-4",
               "--batch-size", "2", "--grad-accum", "4"])
    opts = sft.options_from_args(recipe, a)
    assert opts == {"learning_rate": 1e-4, "num_train_epochs": 1.5, "max_steps": 7, "lora": {"r": 8},
                    "per_device_train_batch_size": 2, "gradient_accumulation_steps": 4}
    assert recipe["learning_rate"] == 2e-5  # the recipe's dict is not changed


def test_lora_switch():
    base = parse(["--model", "m", "--out", "o"])
    assert sft.options_from_args({"lora": {"r": 8}}, base) == {"lora": {"r": 8}}  # unset: the recipe's
    off = parse(["--model", "m", "--out", "o", "--no-lora"])
    assert sft.options_from_args({"lora": {"r": 8}}, off)["lora"] is None
    on = parse(["--model", "m", "--out", "o", "--lora"])
    assert sft.options_from_args({}, on)["lora"] is True
    assert sft.options_from_args({"lora": {"r": 4}}, on)["lora"] == {"r": 4}  # keeps the recipe's adapter


def test_dry_run_prints_the_resolved_options_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    rc = sft.run(parse(["--model", "tiny", "--out", str(out), "--dry-run", "--lr", "3e-5", "--set", "max_length=256"]))
    assert rc == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["model"] == "tiny" and shown["data"] == "vqa_rad"
    assert shown["options"]["learning_rate"] == 3e-5 and shown["options"]["max_length"] == 256
    assert not out.exists()


def test_unknown_option_is_refused_naming_it(tmp_path, capsys):
    rc = sft.run(parse(["--model", "tiny", "--out", str(tmp_path / "r"), "--dry-run", "--set", "sft.learnin_rate=1"]))
    assert rc == 2
    assert "learnin_rate" in capsys.readouterr().err
