"""Small numbers shown honestly: Wilson (or exact) intervals for shares, so 0 of 10 is never
"0.0 [0.0, 0.0]"; fewer than 5 points drawn as markers; unscored rows in console summaries;
demo run folders carry their generation settings for `medrl eval`."""

from __future__ import annotations

import pytest

from medrl.eval.stats import honest_interval, proportion_ci, score_ci


def test_wilson_and_exact_intervals_worked_by_hand():
    # Wilson upper bound at k = 0: z^2 / (n + z^2) = 1.959964^2 / (10 + 1.959964^2) = 0.27753
    w = proportion_ci(0, 10)
    assert (w["low"], round(w["high"], 5)) == (0.0, 0.27753)
    # Clopper-Pearson upper bound at k = 0: 1 - (alpha / 2)^(1 / n) = 1 - 0.025^(1/10) = 0.30850
    cp = proportion_ci(0, 10, method="beta")
    assert round(cp["high"], 5) == round(1 - 0.025 ** 0.1, 5) == 0.3085
    # 10 of 10 mirrors 0 of 10
    full = proportion_ci(10, 10)
    assert full["high"] == 1.0 and round(full["low"], 5) == round(1 - 0.27753, 5)
    with pytest.raises(ValueError):
        proportion_ci(11, 10)


def test_report_cells_show_wilson_for_shares():
    from medrl.eval.report import ci_cell

    collapsed = {"mean": 0.0, "low": 0.0, "high": 0.0, "n": 10}  # what a bootstrap of 0/10 says
    assert ci_cell(collapsed, True) == "0.0 [0.0, 27.8]"
    assert ci_cell(score_ci([0] * 10), True) == "0.0 [0.0, 27.8]"
    assert score_ci([0, 1, 1, 0])["method"] == "wilson"
    assert score_ci([0.2, 0.7, 0.4])["method"] == "bootstrap"
    hss = {"mean": 0.5, "low": 0.4, "high": 0.6, "n": 10}
    assert ci_cell(hss, False) == "0.500 [0.400, 0.600]" and honest_interval({"mean": 0.55, "n": 10}) == \
        {"mean": 0.55, "n": 10}  # not a k/n share: left alone


def test_fewer_than_five_points_are_markers(tmp_path, monkeypatch):
    from medrl.eval import plots

    figs = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figs.append(fig) or path)
    plots.training_curves({"Total reward": {"GRPO": [(1, 0.1), (2, 0.3)],
                                            "MRPO": [(i, 0.1 * i) for i in range(1, 7)]}}, tmp_path / "c.png")
    lines = {ln.get_label(): ln for ln in figs[0].axes[0].get_lines()}
    assert lines["GRPO (2 points)"].get_linestyle() == "None" and lines["GRPO (2 points)"].get_marker() == "o"
    assert lines["MRPO"].get_linestyle() == "-"


def test_console_summary_counts_unscored(capsys):
    from medrl.commands.eval import print_protocol_summary

    metrics = {"datasets": {"vqa_rad": {"n": 10, "truncated": 0, "metrics": {
        "judge_binary": {"mean": 1.0, "low": 1.0, "high": 1.0, "n": 8, "unscored": 2},
        "hss": {"mean": 0.5, "low": 0.4, "high": 0.6, "n": 10}}}}}
    print_protocol_summary(metrics)
    line = capsys.readouterr().out
    assert "accuracy=100.0%" in line and "unscored=2" in line  # 100% of the 8 scored, 2 not scored


def test_demo_folder_carries_generation_settings_for_eval(tmp_path):
    from medrl.commands.demo_pipeline.pipeline import Demo
    from medrl.commands.demo_pipeline.settings import make_config
    from medrl.eval.runner import default_max_new_tokens

    out = tmp_path / "quick"
    Demo(out, make_config(quick=True), echo=lambda m: None).write_run_config()
    for model in ("grpo", "mrpo", "sft"):
        (out / model / "final").mkdir(parents=True)
        n, src = default_max_new_tokens(out / model / "final")
        assert n == 80 and src.endswith("config.yaml"), (n, src)
