"""``medrl bench effects --quick`` end to end: every job runs, the report and per-seed results
are written, and a rerun resumes instead of training again. The numbers of a quick run mean
nothing (a few steps of a random tiny model); only the machinery is checked here."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


def test_bench_effects_quick_writes_its_report_and_resumes(tmp_path):
    from medrl.cli import main

    out = tmp_path / "effects"
    assert main(["bench", "effects", "--quick", "--out", str(out), "--no-progress"]) == 0
    md, html = out / "report.md", out / "report.html"
    assert md.is_file() and html.is_file()
    text = md.read_text()
    for section in ("Warm-up model", "MRPO vs GRPO", "Judge quality", "signature effect", "Reward hacking"):
        assert section in text, section
    assert "data:image/png;base64," in html.read_text()  # figures embedded
    seed0 = json.loads((out / "seeds" / "seed0.json").read_text())
    runs = seed0["runs"]
    assert {"s0/grpo@oracle", "s0/mrpo@oracle", "s0/hack-yes_judge", "s0/hack-oracle"} <= set(runs)
    ev = runs["s0/mrpo@oracle"]["eval"]
    assert ev["n"] == 16 and 0.0 <= ev["accuracy"]["p"] <= 1.0
    assert runs["s0/hack-oracle"]["series"]["monitor/truth_accuracy"]  # the oracle's view, logged at every step
    numbers = json.loads((out / "results.json").read_text())
    assert numbers["warmup"]["warmup"]["early_error_share"] == pytest.approx(0.3, abs=0.02)
    # the warm-up model follows the <think>...</think><answer>...</answer> format on held-out phantoms
    assert numbers["warmup"]["eval"]["format"]["p"] >= 0.5
    kap = numbers["kappa"]["oracle"]
    assert kap["step_validity_kappa"] == 1.0 and kap["answer_kappa"] == 1.0  # the oracle agrees with itself
    # resumable: the seed's file exists, so nothing trains again
    before = {p: p.stat().st_mtime for p in (out / "runs").glob("*.json")}
    assert main(["bench", "effects", "--quick", "--out", str(out), "--no-progress"]) == 0
    assert {p: p.stat().st_mtime for p in (out / "runs").glob("*.json")} == before
    # another config in the same folder is refused
    assert main(["bench", "effects", "--quick", "--seeds", "2", "--out", str(out), "--no-progress"]) != 0


def test_plan_pairs_every_method_with_the_same_warmup():
    from medrl.effects import make_config
    from medrl.effects.runner import plan

    jobs = {j.key: j for j in plan(make_config("full"))}
    for s in range(8):
        assert jobs[f"s{s}/grpo@oracle"].needs == jobs[f"s{s}/mrpo@oracle"].needs == ("warmup",)
        assert jobs[f"s{s}/grpo@oracle"].seed == jobs[f"s{s}/mrpo@oracle"].seed == s
    assert jobs["s0/medix_r1@oracle"].needs == ("warmup_tag",)
    assert {"s0/hack-yes_judge", "s0/hack-length_judge", "s0/hack-planted_hole", "s0/hack-oracle"} <= set(jobs)
    keys = list(jobs)
    assert keys.index("warmup") < keys.index("s0/grpo@oracle")  # warm-ups first
    # both warm-ups come before every run, so two workers train them side by side
    first_run = min(i for i, k in enumerate(keys) if jobs[k].kind in ("rl", "hack"))
    assert keys.index("warmup_tag") < first_run


def test_config_refuses_unknown_settings():
    from medrl.effects import make_config, parse_set

    with pytest.raises(ValueError, match="unknown setting"):
        make_config("quick", rl_step=3)
    with pytest.raises(ValueError, match="signature"):
        make_config("quick", signatures=("capo", "nope"))
    assert parse_set(["rl_steps=7", "signatures=armed,capo"]) == {"rl_steps": 7, "signatures": ("armed", "capo")}
    assert parse_set(["sft_lr=3e-3"]) == {"sft_lr": 0.003}  # a float, though YAML reads "3e-3" as text
    with pytest.raises(ValueError, match="rl_steps"):
        parse_set(["rl_steps=many"])
