"""The effects report as a reader sees it: built from hand-made per-seed results of the main task
and a signature task, then rendered in headless Chromium - no raw Markdown, no empty plot, integer
training steps, durations and core counts in words, the claims table first."""

from __future__ import annotations

import random

import pytest


def _eval(rng, acc, early):
    def one(a):
        return {"accuracy": {"p": a}, "early_rate": early, "early_share": 0.4, "failed_rate": 0.5,
                "valid_wrong_rate": 0.1, "pass_at_k": {"1": a, "4": min(1.0, a + 0.3)}, "far": 0.3,
                "attribute_accuracy": min(1.0, a + 0.2), "held_out_accuracy": a - 0.05,
                "counter_prior_accuracy": a - 0.1, "prior_accuracy": a + 0.1, "consistency": {"p": 0.8},
                "format": {"p": 0.99}, "n": 800, "k": 4}
    return {"sampled": one(acc + rng.uniform(-0.02, 0.02)), "sampled_t0.7": one(acc + 0.03),
            "greedy": {**one(acc + 0.3), "corruption_drop": 0.1},
            "sampled_subset": {"accuracy": acc, "early_rate": early}}


def fake_results(config, seed=0):
    rng = random.Random(seed)
    res = {}
    for s in range(config.seeds):
        res[f"s{s}/warmup"] = {"seed": s, "kind": "warmup", "eval": _eval(rng, 0.45, 0.3),
                               "warmup": {"n": 2000, "early_errors": 600, "early_error_share": 0.3,
                                          "planted": {"early_error": [600, 2000, 0.3]}},
                               "cpu_seconds": 240.0, "sft_seconds": 200.0}
        for arm, acc, early in (("grpo", 0.58, 0.24), ("mrpo", 0.59, 0.19)):
            curve = [{"step": st, "accuracy": 0.45 + st / 600, "early_rate": 0.3 - st / 1000} for st in (10, 20, 30)]
            res[f"s{s}/{arm}@oracle"] = {"seed": s, "kind": "rl", "judge": "oracle", "eval": _eval(rng, acc, early),
                                         "curve": curve, "cpu_seconds": 100.0, "seconds_per_step": 1.0,
                                         "cpu_seconds_per_step": 1.0, "steps": 30}
        res[f"s{s}/control-coin_flip"] = {"seed": s, "kind": "control", "eval": _eval(rng, 0.4, 0.35),
                                          "cpu_seconds": 100.0}
        res[f"s{s}/capo/warmup"] = {"seed": s, "kind": "warmup", "eval": _eval(rng, 0.5, 0.3),
                                    "warmup": {"planted": {"shortcut": [150, 2000, 0.075]}}, "cpu_seconds": 150.0}
        for arm, acc in (("capo_grpo", 0.55), ("capo", 0.6), ("control-coin_flip", 0.45)):
            res[f"s{s}/capo/{arm}"] = {"seed": s, "kind": "control" if "coin" in arm else "rl", "judge": "oracle",
                                       "eval": _eval(rng, acc, 0.2), "cpu_seconds": 90.0,
                                       "series": {"reward_std": [[1, 0.3], [2, 0.4]]}}
    return res


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One report from hand-made results of 3 seeds (MRPO's task and CAPO's signature)."""
    from medrl.effects import make_config
    from medrl.effects.report import build_report

    config = make_config("full", seeds=3, controls=("coin_flip",), signatures=("capo",), signature_seeds=3,
                         workers=1, curve_every=10)
    return build_report(config, fake_results(config), tmp_path_factory.mktemp("effects") / "out")


def test_effects_report_text_from_per_seed_results(report):
    md, html, numbers = report
    text = md.read_text()
    assert text.index("## Each paper's claim and its verdict") < text.index("## MRPO's task")
    assert [r["paper"].split()[0] for r in numbers["claims"]] == ["MRPO", "CAPO"]
    assert "**" not in html.read_text().replace("<strong>", "")  # no raw Markdown emphasis left
    assert "on 1 idle core (" in text and "about 0 minutes" not in text  # a duration and a core in words
    assert "sampled T=0.7" in text and "warm-up at its best temperature" in text
    assert "valid steps, wrong answer" in text  # where failures go
    # per-seed panels are titled with the metric in words and its decoding, not raw keys
    assert "early_rate" not in text.split("## MRPO vs GRPO")[1].split("\n\n")[0]


@pytest.mark.screenshot
def test_effects_report_renders_without_raw_markup_or_empty_plots_in_chromium(report, tmp_path):
    from test_report import assert_renders_cleanly, need_chromium

    need_chromium()
    text = assert_renders_cleanly(report[1], tmp_path, height=6000)
    assert "Each paper's claim and its verdict" in text and "verdict" in text
