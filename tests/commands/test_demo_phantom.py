"""The demo's phantom section and the effects report, from hand-made per-seed results."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest


def _eval(acc_sampled, acc_greedy, early_rate):
    return {"sampled": {"accuracy": {"p": acc_sampled}, "early_rate": early_rate, "early_share": 0.5,
                        "pass_at_k": {"1": acc_sampled, "4": min(1.0, 2 * acc_sampled)}, "n": 1200, "k": 4},
            "greedy": {"accuracy": {"p": acc_greedy}, "early_rate": early_rate / 4, "early_share": 0.4, "n": 300}}


def fake_results(config, early, acc, greedy):
    """Runs of every seed with the given (GRPO, MRPO) sampled early failures per output, sampled
    and greedy accuracies, and each seed's warm-up model at 50% sampled, 90% greedy."""
    res = {}
    for s in range(config.seeds):
        res[f"s{s}/warmup"] = {"seed": s, "kind": "warmup", "eval": _eval(0.5, 0.9, 0.38),
                               "warmup": {"n": 10, "early_errors": 3, "early_error_share": 0.3, "by_field": {}}}
        for i, m in enumerate(("grpo", "mrpo")):
            res[f"s{s}/{m}@oracle"] = {"seed": s, "kind": "rl", "eval": _eval(acc[s][i], greedy[s][i], early[s][i])}
    return res


def test_effects_report_and_demo_section_from_per_seed_results(tmp_path):
    import dataclasses

    from medrl.commands.demo_pipeline.phantom import phantom_config, phantom_section, summary
    from medrl.effects.report import build_report
    from medrl.eval.report import Report

    config = dataclasses.replace(phantom_config(quick=False), seeds=3)
    early = [(0.30, 0.24), (0.25, 0.22), (0.28, 0.22)]
    acc = [(0.60, 0.62), (0.58, 0.58), (0.61, 0.63)]
    greedy = [(0.88, 0.87), (0.90, 0.90), (0.86, 0.88)]
    out = tmp_path / "phantom"
    md, html, numbers = build_report(config, fake_results(config, early, acc, greedy), out)
    m = numbers["main"]["early_rate@sampled"]
    assert m["a_values"] == [0.30, 0.25, 0.28] and m["b_values"] == [0.24, 0.22, 0.22]
    assert m["diff"] == pytest.approx(-0.05)  # mean of -0.06, -0.03, -0.06
    assert numbers["main"]["accuracy@greedy"]["diff"] == pytest.approx(0.01 / 3)
    assert numbers["arms"]["warmup"]["accuracy@sampled"] == [0.5, 0.5, 0.5]  # each seed's warm-up model
    # GRPO against the warm-up: +10, +8, +11 pp sampled
    ctl = next(c for c in numbers["controls"] if c["a"] == "warmup" and c["b"] == "grpo")
    assert ctl["accuracy@sampled"]["diff"] == pytest.approx(0.0966667, abs=1e-6)
    text = md.read_text()
    assert "MRPO vs GRPO, early failures per output" in text
    assert "sampled, 4 per question at the training temperature 1" in text
    assert "minimum detectable difference at 80% power" in text
    assert (out / "figures" / "effects_mrpo_vs_grpo.png").stat().st_size > 1000
    # the demo report's section reads the same results.json
    assert summary(tmp_path)["early_rate@sampled"]["diff"] == pytest.approx(-0.05)
    rep = Report("demo")
    phantom_section(rep, SimpleNamespace(out=tmp_path))
    page = rep.to_markdown(tmp_path)
    assert "warm-up, GRPO and MRPO on phantoms" in page
    assert "| Warm-up (SFT) | 0 | 50.0% | 90.0% | 38.0% |" in page
    assert "| GRPO | 0 | 60.0% | 88.0% | 30.0% |" in page and "| MRPO | 2 | 63.0% | 88.0% | 22.0% |" in page
    assert "-5.0 pp" in page and "(sampled, 4 per question at the training temperature 1)" in page
    # absent results: a note, no error
    rep = Report("demo")
    phantom_section(rep, SimpleNamespace(out=tmp_path / "none"))
    assert "has not run" in rep.to_markdown(tmp_path)
    assert json.loads((out / "results.json").read_text())["config"]["seeds"] == config.seeds


def test_demo_runs_the_full_profiles_first_seeds():
    """The demo's section trains exactly what the full profile trains at its first seeds (same task,
    model, warm-up, budget and evaluation), GRPO and MRPO only."""
    from medrl.commands.demo_pipeline.phantom import phantom_config
    from medrl.effects import make_config

    demo, full = phantom_config(quick=False).to_dict(), make_config("full").to_dict()
    differs = {k for k in full if demo[k] != full[k]}
    assert differs <= {"profile", "seeds", "controls", "curve_every", "noise_sweep", "signatures", "hacks", "workers"}
    assert demo["controls"] == () and demo["seeds"] <= full["seeds"]
