"""``medrl train``: which data a run trains on when --data is not given (the recipe's preferred
source when present, else the default; the choice is saved and checked on a rerun), and
--probe-data, the held-out records of the best checkpoint and the monitor's probe."""

from __future__ import annotations

import yaml

from medrl.cli import main
from medrl.common.exit_codes import Exit


def test_help_teaches_the_data_choice_and_probe_data(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in ("--probe-data SPEC", "held-out records", "data.prefer", "medix_rl:train", "saved in config.yaml",
                   "grpo.metric_for_best_model", "monitor.probe_every", "vqa_rad:test"):
        assert needle in text, needle


def test_dry_run_saves_the_chosen_data_and_probe_records_and_a_rerun_checks_them(tmp_path, data_dir, capsys):
    out = tmp_path / "run"
    args = ["train", "--recipe", "grpo", "--profile", "cpu", "--model", "tiny", "--data-dir", str(data_dir),
            "--limit", "4", "--out", str(out)]
    assert main([*args, "--probe-data", "vqa_rad:test", "--dry-run"]) == Exit.OK
    printed = capsys.readouterr().out
    # no --data: the default, printed with its reason; the probe records are counted
    assert "training data: vqa_rad (medrl's default; --data chooses another)" in printed
    # the recipe's filters apply to the probe records too (the cpu profile's data.limit: 8)
    assert "probe records: 8 from vqa_rad:test" in printed and "preflight: OK" in printed
    saved = yaml.safe_load((out / "config.yaml").read_text())["run"]
    assert saved["data"] == "vqa_rad" and saved["probe_data"] == "vqa_rad:test"
    # a run in the folder: other probe records or another training source are refused, naming the key
    (out / "metrics.jsonl").write_text("")
    assert main([*args, "--probe-data", "vqa_rad:train"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "run.probe_data: 'vqa_rad:test' -> 'vqa_rad:train'" in err
    assert main([*args, "--probe-data", "vqa_rad:test", "--data", "vqa_rad:test"]) == Exit.USAGE
    assert "run.data: 'vqa_rad' -> 'vqa_rad:test'" in capsys.readouterr().err


def test_probe_data_that_is_training_data_is_warned_and_missing_probe_data_is_a_data_error(tmp_path, data_dir,
                                                                                          capsys):
    args = ["train", "--recipe", "grpo", "--profile", "cpu", "--data-dir", str(data_dir), "--data", "vqa_rad:test",
            "--dry-run"]
    assert main([*args, "--probe-data", "vqa_rad:test"]) == Exit.OK
    assert "8 of 8 --probe-data records are training records too" in capsys.readouterr().err
    assert main([*args, "--probe-data", "no_such_source"]) == Exit.DATA


def test_the_recipe_preferred_source_is_used_when_present(tmp_path, data_dir, capsys, monkeypatch):
    # MediX-R1's recipe prefers its own training data (data.prefer: [medix_rl:train]); stand in a
    # present source for it, so the choice, not the MediX-R1 files, is what is tested
    import medrl.data.registry as registry

    seen = []

    def first_present(specs, data_dir=None):
        seen.append(list(specs))
        return "vqa_rad:train"

    monkeypatch.setattr(registry, "first_present", first_present)
    out = tmp_path / "run"
    assert main(["train", "--recipe", "medix_r1", "--profile", "cpu", "--data-dir", str(data_dir), "--limit", "2",
                 "--out", str(out), "--dry-run"]) == Exit.OK
    assert seen[0] == ["medix_rl:train"]
    assert "training data: vqa_rad:train (the first present of the recipe's data.prefer" in capsys.readouterr().out
    assert yaml.safe_load((out / "config.yaml").read_text())["run"]["data"] == "vqa_rad:train"
