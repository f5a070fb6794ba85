"""``medrl analyze``: its usage errors (exit 2 with the reason) and the hacking report path."""

from __future__ import annotations

import argparse
import json

import pytest

from medrl.cli import main
from medrl.commands import analyze


def parse(argv):
    p = argparse.ArgumentParser()
    analyze.add_arguments(p)
    return p.parse_args(argv)


@pytest.mark.parametrize("argv, message", [
    ([], "medrl analyze: give EVAL_DIR(s), --compare RUN_A RUN_B, 'agreement' or 'training'"),
    (["agreement", "--a", "x"], "medrl analyze agreement: --a and --b are required"),
    (["training"], "medrl analyze training: give LOGDIR(s) and/or --samples"),
    (["training", "logs", "--metric", "KL"], "--metric needs PANEL=KEY, got 'KL'"),
    (["hacking"], "medrl analyze hacking: give one RUN folder"),
    (["credit"], "medrl analyze credit: give RUN folder(s) holding credit.jsonl"),
])
def test_usage_errors_exit_2_with_the_reason(argv, message, capsys):
    assert analyze.run(parse(argv)) == 2
    assert message in capsys.readouterr().err


def test_missing_run_folder_is_a_one_line_error(tmp_path, capsys):
    assert analyze.run(parse(["hacking", str(tmp_path / "nope")])) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_hacking_report_of_a_run_folder(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    alert = {"step": 3, "signal": "monitor/restate", "value": 0.6, "threshold": 0.3, "message": "restating"}
    (run / "monitor_summary.json").write_text(json.dumps({"series": {"monitor/restate": [[3, 0.6]]}}))
    (run / "hacking.jsonl").write_text(json.dumps(alert) + "\n")
    assert analyze.run(parse(["hacking", str(run), "--out", str(tmp_path / "rep")])) == 0
    out = capsys.readouterr().out
    assert "alerts: monitor/restate (step 3)" in out
    assert f"report: {tmp_path / 'rep'}/report.html" in out
    assert (tmp_path / "rep" / "report.html").is_file()


def test_help_describes_the_analyses(capsys):
    with pytest.raises(SystemExit) as e:
        main(["analyze", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for usage in ("medrl analyze --compare RUN_A RUN_B", "medrl analyze agreement", "medrl analyze training",
                  "medrl analyze credit", "medrl analyze hacking RUN", "--include-closed"):
        assert usage in text
