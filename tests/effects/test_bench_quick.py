"""``medrl bench effects --quick`` end to end, every signature task included: every job runs (the
controls, the learning curves and each signature's arms), the report with its claims table and
the per-seed results are written, a rerun resumes instead of training again, the report
regenerates from the folder alone, and the plain-TRL control trains exactly as medrl's trainer
does on the same reward. The numbers of a quick run mean nothing (a few steps of a tiny model);
only the machinery is checked here."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def quick(tmp_path_factory, one_torch_thread):
    """One ``medrl bench effects --quick`` run, shared by this module's tests."""
    from medrl.cli import main

    out = tmp_path_factory.mktemp("effects") / "quick"
    assert main(["bench", "effects", "--quick", "--set", f"signatures={SIGS}", "--out", str(out), "--no-progress"]) == 0
    return out


SIGS = "armed,capo,stepgrpo,medix"


def test_bench_effects_quick_writes_its_report_and_resumes(quick):
    from medrl.cli import main

    out = quick
    md, html = out / "report.md", out / "report.html"
    assert md.is_file() and html.is_file()
    text = md.read_text()
    for section in ("Each paper's claim and its verdict", "MRPO's task: the warm-up models",
                    "The arms and their controls", "Learning curves", "MRPO vs GRPO", "By question type",
                    "Time per training step", "Judge quality", "signature: reward collapse",
                    "signature: sparse reward", "Reward hacking", "torch / transformers / TRL"):
        assert section in text, section
    # every claim names its decoding
    claims = [line for line in text.splitlines() if " vs " in line and " - " in line and "seed" in line
              and line[:1].isalpha() and not line.startswith(("Profile", "|"))]
    assert claims and all("sampled" in c or "greedy" in c for c in claims), claims
    page = html.read_text()
    assert "data:image/png;base64," in page  # figures embedded
    assert "**" not in page and "about 0 minutes" not in text and "1 idle cores" not in text
    assert "medrl bench effects --quick" in text and " -q " not in text  # the command, not pytest's argv
    assert (out / "figures" / "effects_learning_curves.png").stat().st_size > 1000
    seed0 = json.loads((out / "seeds" / "seed0.json").read_text())
    runs = seed0["runs"]
    assert {"s0/grpo@oracle", "s0/mrpo@oracle", "s0/control-coin_flip", "s0/control-trl", "s0/hack-yes_judge",
            "s0/hack-oracle", "s0/armed/armed", "s0/armed/armed_ablation_raw", "s0/armed/armed_ablation_nosemantic",
            "s0/capo/capo", "s0/capo/capo_grpo", "s0/stepgrpo/stepgrpo", "s0/medix/medix_r1",
            "s0/medix/grpo_exact", "s0/medix/control-coin_flip"} <= set(runs)
    assert runs["s0/control-trl"]["trainer"] == "trl.GRPOTrainer"
    assert runs["s0/control-coin_flip"]["trainer"] == runs["s0/grpo@oracle"]["trainer"] == "MedGRPOTrainer"
    ev = runs["s0/mrpo@oracle"]["eval"]
    assert ev["greedy"]["n"] == 16 and 0.0 <= ev["greedy"]["accuracy"]["p"] <= 1.0
    assert ev["sampled"]["n"] == 32 and ev["sampled"]["k"] == 2 and set(ev["sampled"]["pass_at_k"]) == {"1", "2"}
    assert ev["sampled_t0.7"]["temperature"] == 0.7 and ev["sampled"]["temperature"] == 1.0  # two temperatures
    assert "valid_wrong_rate" in ev["sampled"]
    assert runs["s0/armed/armed"]["temperature"] == 0.7 and runs["s0/stepgrpo/stepgrpo"]["temperature"] == 1.2
    assert set(runs["s0/stepgrpo/stepgrpo"]["eval"]) >= {"sampled", "sampled_t0.7", "sampled_t1", "greedy"}
    assert runs["s0/capo/capo"]["eval"]["greedy"].get("corruption_drop") is not None
    # the curve: step 1 from the callback, step 2 (the last) from the final evaluation of the same subset
    curve = runs["s0/grpo@oracle"]["curve"]
    assert [p["step"] for p in curve] == [1, 2] and all(p["n_questions"] == 4 for p in curve)
    assert runs["s0/grpo@oracle"]["seconds_per_step"] > 0
    assert runs["s0/hack-oracle"]["series"]["monitor/truth_accuracy"]  # the oracle's view, logged at every step
    numbers = json.loads((out / "results.json").read_text())
    assert numbers["warmup"]["early_error_share"] == pytest.approx(0.3, abs=0.02)
    # each warm-up model follows the <think>...</think><answer>...</answer> format on held-out phantoms
    assert runs_warmup(out, "s0__warmup")["eval"]["greedy"]["format"]["p"] >= 0.5
    assert numbers["env"]["torch"] and numbers["env"]["torch_threads"] == 1
    assert [c["b"] for c in numbers["controls"]][:2] == ["grpo", "grpo"]
    assert any(c["a"] == "warmup_best" for c in numbers["controls"])  # the warm-up at its best temperature
    kap = numbers["kappa"]["oracle"]
    assert kap["step_validity_kappa"] == 1.0 and kap["answer_kappa"] == 1.0  # the oracle agrees with itself
    # every signature names its planted failure, and the claims table has a row per paper
    failures = {n: s["describe"]["failure"] for n, s in numbers["signatures"].items()}
    assert failures["armed"] == "reward collapse" and failures["stepgrpo"] == "sparse reward"
    assert "shortcut" in failures["capo"] and "paraphrase" in failures["medix"]
    assert all(s["warmup"]["planted"] for s in numbers["signatures"].values())
    papers = [r["paper"].split()[0] for r in numbers["claims"]]
    assert papers == ["MRPO", "MRPO", "ARMed", "CAPO", "StepGRPO", "MediX-R1"]
    assert all(r["verdict"] for r in numbers["claims"])
    # resumable: the seed's file exists, so nothing trains again
    before = {p: p.stat().st_mtime for p in (out / "runs").glob("*.json")}
    assert main(["bench", "effects", "--quick", "--set", f"signatures={SIGS}", "--out", str(out), "--no-progress"]) == 0
    assert {p: p.stat().st_mtime for p in (out / "runs").glob("*.json")} == before
    # another config in the same folder is refused (more seeds are not another config: the folder grows)
    assert main(["bench", "effects", "--quick", "--set", f"signatures={SIGS}", "--set", "rl_steps=3", "--out",
                 str(out), "--no-progress"]) == 2
    # the report regenerates from the folder alone, with the settings stored there
    (out / "report.md").unlink()
    assert main(["bench", "effects", "--report-only", "--out", str(out)]) == 0
    assert (out / "report.md").read_text().count("MRPO vs GRPO") == text.count("MRPO vs GRPO")
    assert main(["bench", "effects", "--report-only", "--seeds", "3", "--out", str(out)]) == 2


def runs_warmup(out, name):
    return json.loads((out / "runs" / f"{name}.json").read_text())


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _rows(folder):
    return [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines() if x.strip()]


def test_plain_trl_control_equals_medrl_grpo_on_the_same_reward(quick, tmp_path):
    """The trainer control: the quick run's plain-TRL arm (trl.GRPOTrainer, the oracle's verdict as
    its only reward, a learning-curve point after step 1) against medrl's trainer with the same
    reward, config, prompts and seed and no curve: the same logged numbers at every step and the
    same weights, bit for bit. So medrl's trainer adds nothing to GRPO where the reward is the same,
    and a curve point leaves the run it watches unchanged."""
    import torch

    from medrl.effects.controls import control_run
    from medrl.effects.runner import load_run_recipe, records, rl_overrides, stored_config
    from medrl.models.loading import save_policy
    from medrl.train.pipeline import train_rl

    config = stored_config(quick)
    warm = json.loads((quick / "runs" / "s0__warmup.json").read_text())["model"]
    recipe = load_run_recipe("grpo", rl_overrides(config, 0))
    cls = control_run(recipe, "trl", 0, trainer="medrl")
    assert cls.__name__ == "MedGRPOTrainer"
    res = train_rl(recipe, warm, records(config, "train", quick, 0), tmp_path / "medrl", train=False,
                   trainer_cls=cls)
    res.trainer.train()
    save_policy(res.trainer.model, res.trainer.processing_class, tmp_path / "medrl" / "final")
    trl_dir = quick / "models" / "s0__control-trl"
    ours, theirs = _rows(tmp_path / "medrl"), _rows(trl_dir)
    assert len(ours) == len(theirs) == config.rl_steps + 1  # a row per step and the closing summary
    rewards = [r["reward"] for r in theirs if "reward" in r]
    assert any(r > 0 for r in rewards), "the oracle paid nothing: the comparison would be vacuous"
    for a, b in zip(ours, theirs):
        common = sorted(set(a) & set(b) - {"train_runtime", "train_samples_per_second", "train_steps_per_second",
                                           "time", "timestamp", "step_time"})
        assert {k: a[k] for k in common} == {k: b[k] for k in common}
    wa, wb = _weights(tmp_path / "medrl" / "final"), _weights(trl_dir / "final")
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    base = _weights(__import__("pathlib").Path(warm))
    assert any(not torch.equal(wa[k], base[k]) for k in wa if k in base), "training left the weights unchanged"


def test_plan_pairs_every_method_with_the_same_warmup():
    from medrl.effects import make_config
    from medrl.effects.runner import plan

    jobs = {j.key: j for j in plan(make_config("full", signatures=("armed", "capo", "stepgrpo", "medix"),
                                               hacks=("yes_judge", "length_judge", "planted_hole", "oracle")))}
    for s in range(8):  # each seed its own warm-up model, shared by every arm of the seed
        assert (jobs[f"s{s}/grpo@oracle"].needs == jobs[f"s{s}/mrpo@oracle"].needs
                == jobs[f"s{s}/control-coin_flip"].needs == jobs[f"s{s}/control-trl"].needs == (f"s{s}/warmup",))
        assert jobs[f"s{s}/grpo@oracle"].seed == jobs[f"s{s}/mrpo@oracle"].seed == jobs[f"s{s}/control-trl"].seed == s
        assert (jobs[f"s{s}/medix/medix_r1"].needs == jobs[f"s{s}/medix/grpo_exact"].needs
                == jobs[f"s{s}/medix/control-coin_flip"].needs == (f"s{s}/medix/warmup",))
        assert jobs[f"s{s}/medix/medix_r1"].style == "modality_think_answer"
    assert {"s0/hack-yes_judge", "s0/hack-length_judge", "s0/hack-planted_hole", "s0/hack-oracle"} <= set(jobs)
    keys = list(jobs)
    # every warm-up comes before every run, so two workers train them side by side
    first_run = min(i for i, k in enumerate(keys) if jobs[k].kind in ("rl", "control", "hack"))
    assert all(i < first_run for i, k in enumerate(keys) if jobs[k].kind == "warmup")
    # the main comparison and its controls come before the signatures, the sweep and the hack runs
    last_main = max(i for i, k in enumerate(keys) if jobs[k].kind == "control" and jobs[k].task == "main")
    assert all(i > last_main for i, k in enumerate(keys)
               if jobs[k].kind != "warmup" and (jobs[k].kind == "hack" or jobs[k].task != "main"))
    # a signature profile runs that task alone
    sig = {j.key for j in plan(make_config("capo"))}
    assert "s7/capo/capo" in sig and not any(k.endswith("@oracle") for k in sig) and "kappa" not in sig


def test_config_refuses_unknown_settings():
    from medrl.effects import make_config, parse_set

    with pytest.raises(ValueError, match="unknown setting"):
        make_config("quick", rl_step=3)
    with pytest.raises(ValueError, match="signature"):
        make_config("quick", signatures=("capo", "nope"))
    with pytest.raises(ValueError, match="control"):
        make_config("quick", controls=("coin_flip", "nope"))
    with pytest.raises(ValueError, match="eval_samples"):
        make_config("quick", eval_samples=0, curve_every=5)
    assert parse_set(["rl_steps=7", "signatures=armed,capo"]) == {"rl_steps": 7, "signatures": ("armed", "capo")}
    assert parse_set(["sft_lr=3e-3"]) == {"sft_lr": 0.003}  # a float, though YAML reads "3e-3" as text
    with pytest.raises(ValueError, match="rl_steps"):
        parse_set(["rl_steps=many"])


def test_every_rl_run_trains_without_gradient_checkpointing():
    from medrl.effects import make_config
    from medrl.effects.runner import load_run_recipe, rl_overrides

    for name in ("grpo", "mrpo"):
        assert load_run_recipe(name, rl_overrides(make_config("full"), 0)).grpo["gradient_checkpointing"] is False
