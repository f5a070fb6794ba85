"""medrl.eval.hacking_report: the monitor's files of a run folder read back and written as a report
(also reached through ``medrl analyze hacking RUN``)."""

from __future__ import annotations

import json

import pytest

from medrl.eval import hacking_report as H

ALERT = {"step": 2, "signal": "monitor/guard/list", "kind": "hacking", "value": 0.5, "threshold": 0.2,
         "message": "list answers paid", "examples": [
             {"reward": 1.0, "answer": "liver, spleen, <kidney>", "reference": "liver", "guard": "list",
              "text": "<think>x</think><answer>liver, spleen</answer>"}]}
SERIES = {"monitor/guard/list": [[1, 0.0], [2, 0.5]], "monitor/reward": [[1, 0.2], [2, 0.9]],
          "monitor/correct": [[1, 0.2], [2, 0.1]], "train/loss": [[1, 1.0]]}
COST = {"run": {"requests": 10, "sent": 6, "cache_hits": 3, "deduplicated": 1, "input_tokens": 1000,
                "output_tokens": 50, "saved_tokens": 400, "cost_usd": None}}


def make_run(tmp_path, *, summary=True, alerts=(ALERT,), cost=None):
    run = tmp_path / "run"
    run.mkdir()
    if summary:
        (run / H.SUMMARY_FILE).write_text(json.dumps({"series": SERIES, "alerts": list(alerts)}))
    (run / H.HACKING_FILE).write_text("".join(json.dumps(a) + "\n" for a in alerts))
    if cost:
        (run / H.COST_FILE).write_text(json.dumps(cost))
    return run


def test_load_monitor_reads_summary_alerts_and_cost(tmp_path):
    data = H.load_monitor(make_run(tmp_path, cost=COST))
    assert data["series"]["monitor/reward"] == [(1, 0.2), (2, 0.9)]
    assert [a["signal"] for a in data["alerts"]] == ["monitor/guard/list"]
    assert data["cost"]["run"]["sent"] == 6


def test_without_summary_signals_come_from_metrics_jsonl(tmp_path):
    run = make_run(tmp_path, summary=False, alerts=())
    (run / "metrics.jsonl").write_text(
        '{"step": 1, "monitor/reward": 0.5, "loss": 2.0}\n\n{"step": 3, "monitor/reward": 1, "monitor/x": "text"}\n')
    data = H.load_monitor(run)
    assert data["series"] == {"monitor/reward": [(1, 0.5), (3, 1.0)]}  # only numeric monitor/ keys
    assert data["summary"] is None and data["alerts"] == [] and data["cost"] is None


def test_missing_or_broken_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such run folder"):
        H.load_monitor(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="neither monitor_summary.json nor metrics.jsonl"):
        H.load_monitor(tmp_path / "empty")
    run = make_run(tmp_path)
    (run / H.HACKING_FILE).write_text(json.dumps(ALERT) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"hacking\.jsonl line 2: not JSON"):
        H.load_monitor(run)


def test_report_has_alert_table_examples_cost_and_plot(tmp_path):
    run = make_run(tmp_path, cost=COST)
    summary = H.hacking_report(run)
    out = run / "hacking"
    assert summary["alerts"] == [{"step": 2, "signal": "monitor/guard/list"}]
    assert summary["signals"] == sorted(SERIES)
    assert (out / "figures" / "hacking_signals.png").is_file()
    assert json.loads((out / "hacking_summary.json").read_text()) == summary
    md = (out / "report.md").read_text()
    assert "list answers paid" in md and "answer `liver, spleen, <kidney>`" in md and "unknown" in md
    page = (out / "report.html").read_text()
    assert "liver, spleen, &lt;kidney&gt;" in page  # rollout text is escaped


def test_no_alert_and_nothing_to_plot(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / H.SUMMARY_FILE).write_text(json.dumps({"series": {"train/loss": [[1, 1.0]]}}))
    summary = H.hacking_report(run, tmp_path / "out")
    assert summary["figure"] is None and summary["alerts"] == []
    assert "No alert: no signal crossed its threshold." in (tmp_path / "out" / "report.md").read_text()
