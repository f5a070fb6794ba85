"""The demo's phantom section and the effects report, from hand-made per-seed results."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest


def fake_results(config, early, acc):
    """Runs of every seed with the given (GRPO, MRPO) early shares and accuracies."""
    res = {"warmup": {"warmup": {"n": 10, "early_errors": 3, "early_error_share": 0.3, "by_field": {}},
                      "eval": {"format": {"p": 1.0}, "accuracy": {"p": 0.5, "low": 0.4, "high": 0.6, "n": 100}}}}
    for s in range(config.seeds):
        for i, m in enumerate(("grpo", "mrpo")):
            res[f"s{s}/{m}@oracle"] = {"seed": s, "eval": {"early_share": early[s][i], "far": None,
                                                            "accuracy": {"p": acc[s][i]}}}
    return res


def test_effects_report_and_demo_section_from_per_seed_results(tmp_path):
    from medrl.commands.demo_pipeline.phantom import phantom_config, phantom_section, summary
    from medrl.effects.report import build_report
    from medrl.eval.report import Report

    config = phantom_config(quick=False)
    early = [(0.6, 0.4), (0.5, 0.45), (0.7, 0.5)]
    acc = [(0.50, 0.52), (0.40, 0.40), (0.45, 0.47)]
    out = tmp_path / "phantom"
    md, html, numbers = build_report(config, fake_results(config, early, acc), out)
    m = numbers["main"]["early_share"]
    assert m["a_values"] == [0.6, 0.5, 0.7] and m["b_values"] == [0.4, 0.45, 0.5]
    assert m["diff"] == pytest.approx(-0.15)  # mean of -0.2, -0.05, -0.2
    text = md.read_text()
    assert "MRPO vs GRPO, early-failure share" in text and "no significant difference" in text
    assert (out / "figures" / "effects_mrpo_vs_grpo.png").stat().st_size > 1000
    # the demo report's section reads the same results.json
    assert summary(tmp_path)["early_share"]["diff"] == pytest.approx(-0.15)
    rep = Report("demo")
    phantom_section(rep, SimpleNamespace(out=tmp_path))
    page = rep.to_markdown(tmp_path)
    assert "GRPO vs MRPO on phantoms" in page and "60.0% -> 40.0%" in page and "-15.0 pp" in page
    # absent results: a note, no error
    rep = Report("demo")
    phantom_section(rep, SimpleNamespace(out=tmp_path / "none"))
    assert "has not run" in rep.to_markdown(tmp_path)
    assert json.loads((out / "results.json").read_text())["config"]["seeds"] == config.seeds
