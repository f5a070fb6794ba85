"""``medrl demo``: stage bookkeeping and resume, settings, the report, the CLI; the quick run
end to end is marked slow."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from medrl.common.exit_codes import Exit
from medrl.commands.demo_pipeline import (
    EVAL_DATASET,
    MODELS,
    DemoConfig,
    DemoStateMismatch,
    StageRunner,
    count_parameters,
    make_config,
    pick_examples,
    training_series,
)


# --------------------------------------------------------------------------- stage runner
def _runner(tmp_path, config=None, **kw):
    msgs: list[str] = []
    r = StageRunner(tmp_path / "out", config or {"a": 1}, echo=msgs.append, **kw)
    return r, msgs


def test_stages_run_once_and_are_skipped_when_done(tmp_path):
    r, msgs = _runner(tmp_path)
    calls = []
    out = r.run(1, 2, "one", "Stage one", lambda: calls.append("one") or {"n": 3})
    assert out == {"n": 3} and calls == ["one"]
    state = json.loads((tmp_path / "out" / "state.json").read_text())
    assert state["config"] == {"a": 1}
    assert state["stages"]["one"]["done"] is True and state["stages"]["one"]["result"] == {"n": 3}
    assert state["stages"]["one"]["seconds"] >= 0

    r2, msgs2 = _runner(tmp_path)  # a second invocation in the same folder
    out2 = r2.run(1, 2, "one", "Stage one", lambda: calls.append("again"))
    assert calls == ["one"] and out2 == {"n": 3}  # skipped; result read back from the state
    assert any("already done" in m for m in msgs2)


def test_stage_reruns_when_its_outputs_are_missing(tmp_path):
    marker = tmp_path / "output.txt"
    r, _ = _runner(tmp_path)
    calls = []
    r.run(1, 1, "s", "S", lambda: (calls.append(1), marker.write_text("x"))[-1] and None,
          is_done=marker.is_file)
    marker.unlink()  # the output vanished: the done flag alone must not skip the stage
    r2, _ = _runner(tmp_path)
    r2.run(1, 1, "s", "S", lambda: (calls.append(2), marker.write_text("x"))[-1] and None, is_done=marker.is_file)
    assert calls == [1, 2]


def test_interrupted_stage_is_resumed_and_earlier_stages_skipped(tmp_path):
    r, _ = _runner(tmp_path)
    calls = []
    r.run(1, 2, "first", "First", lambda: calls.append("first"))

    def boom():
        calls.append("second-try-1")
        time.sleep(0.05)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        r.run(2, 2, "second", "Second", boom)
    state = json.loads((tmp_path / "out" / "state.json").read_text())
    assert state["stages"]["second"]["done"] is False
    spent = state["stages"]["second"]["seconds"]
    assert spent >= 0.05  # the interrupted attempt's time is kept

    r2, msgs = _runner(tmp_path)
    r2.run(1, 2, "first", "First", lambda: calls.append("first-again"))
    r2.run(2, 2, "second", "Second", lambda: calls.append("second-try-2"))
    assert calls == ["first", "second-try-1", "second-try-2"]
    state = json.loads((tmp_path / "out" / "state.json").read_text())
    assert state["stages"]["second"]["done"] is True and state["stages"]["second"]["attempts"] == 2
    assert state["stages"]["second"]["seconds"] >= spent  # summed over both attempts
    assert any("(resuming)" in m for m in msgs)


def test_other_settings_are_refused_and_overwrite_starts_over(tmp_path):
    r, _ = _runner(tmp_path, {"steps": 3})
    r.run(1, 1, "s", "S", lambda: None)
    with pytest.raises(DemoStateMismatch, match=r"steps: 3 -> 4"):
        _runner(tmp_path, {"steps": 4})
    r3, _ = _runner(tmp_path, {"steps": 4}, overwrite=True)
    assert r3.state["stages"] == {} and r3.state["config"] == {"steps": 4}


def test_overwrite_never_removes_a_folder_the_demo_did_not_make(tmp_path):
    foreign = tmp_path / "out"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    with pytest.raises(DemoStateMismatch, match="not removing"):
        _runner(tmp_path, overwrite=True)
    assert (foreign / "precious.txt").read_text() == "keep me"


# --------------------------------------------------------------------------- settings
def test_quick_settings_are_smaller_and_overrides_apply():
    full, quick = make_config(), make_config(quick=True)
    assert quick.mode == "quick" and full.mode == "default"
    for k in ("sft_steps", "rl_steps", "eval_limit", "max_completion_length"):
        assert getattr(quick, k) < getattr(full, k), k
    assert make_config(quick=True, rl_steps=7, seed=None).rl_steps == 7  # None = keep the default
    with pytest.raises(TypeError, match="nope"):
        make_config(nope=1)


def test_grpo_and_mrpo_share_seed_data_order_and_budget():
    """The two RL stages get the same overrides; after them the recipes differ only in the
    advantage (the comparison the demo makes)."""
    from medrl.commands.demo_pipeline import Demo
    from medrl.train.recipes import load_recipe

    cfg = make_config(quick=True, seed=5)
    overrides = Demo.rl_overrides(type("D", (), {"config": cfg})())
    g, m = load_recipe("grpo", overrides=overrides), load_recipe("mrpo", overrides=overrides)
    assert g.grpo == m.grpo
    assert g.grpo["seed"] == 5 and g.grpo["max_steps"] == cfg.rl_steps
    assert g.grpo["num_generations"] == cfg.num_generations
    assert g.grpo["per_device_train_batch_size"] == cfg.num_generations * cfg.rl_prompts
    assert g.rewards == m.rewards and g.data == m.data
    assert (g.algorithm["advantage"], m.algorithm["advantage"]) == ("grpo", "mrpo")
    assert g.encoders == m.encoders and g.encoders["substitute"] is True  # offline MiniLM in both
    # every step's rollouts go to credit.jsonl (the report's token-level view)
    assert g.algorithm["log_credit_every"] == m.algorithm["log_credit_every"] == 1
    assert g.algorithm["log_credit_rollouts"] == cfg.num_generations * cfg.rl_prompts


def test_count_parameters_reads_the_weight_files(tmp_path):
    import torch
    from safetensors.torch import save_file

    save_file({"a": torch.zeros(3, 4), "b": torch.zeros(5)}, str(tmp_path / "model-1.safetensors"))
    save_file({"c": torch.zeros(2, 2, 2)}, str(tmp_path / "model-2.safetensors"))
    assert count_parameters(tmp_path) == 3 * 4 + 5 + 8  # 25
    with pytest.raises(FileNotFoundError):
        count_parameters(tmp_path / "missing")


def test_training_series_skips_summary_and_torn_lines(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 1, "reward": 0.5, "kl": 0.0}\n{"step": 2, "reward": 0.75, "kl": 0.01}\n'
        '{"step": 2, "train_runtime": 9.0, "train_loss": 0.1}\n{"step": 3, "rew')
    s = training_series(tmp_path)
    assert s["reward"] == [(1.0, 0.5), (2.0, 0.75)] and "train_runtime" not in s


# --------------------------------------------------------------------------- report
def _row(key, correct, flags, output="<think>a. b.</think><answer>x</answer>"):
    return {"key": key, "dataset": EVAL_DATASET, "domain": "in", "record_id": key.split(":")[-1],
            "question": f"question {key}?", "reference": "x", "output": output, "prediction": "x",
            "well_formed": True, "scores": {"judge_binary": float(correct), "hss": 0.5 if correct else 0.25},
            "steps": [{"text": f"step {i}", "start": 0, "end": 1} for i in range(len(flags))],
            "step_verdicts": [{"gold_alignment": int(f), "answer_contribution": 0, "reason": ""} for f in flags]}


def _fake_demo(out: Path) -> DemoConfig:
    """Eval folders, training logs and state of a finished demo, without any model."""
    from medrl.commands.demo_pipeline import StageRunner
    from medrl.eval.scoring import summarize_scores

    cfg = make_config(quick=True)
    runner = StageRunner(out, cfg.to_dict(), echo=lambda m: None)
    runner.run(1, 2, "policy", "p", lambda: {"path": "/models/x", "parameters": 143367168})
    runner.run(2, 2, "data", "d", lambda: {"train": 855, "test": 4, "data_root": "/data"})
    # hand-made outcomes on 4 records: GRPO gets 1/4 right, MRPO 3/4, warm-up 2/4.
    # GRPO's failures are early (FFP 1/4), MRPO's late (FFP 4/4).
    plan = {
        "warmup": [(1, [1, 1]), (1, [1, 0]), (0, [0, 1]), (0, [0, 0])],
        "grpo": [(1, [1, 1, 1, 1]), (0, [0, 1, 1, 1]), (0, [0, 0, 1, 1]), (0, [0, 0, 0, 0])],
        "mrpo": [(1, [1, 1, 1, 1]), (1, [1, 1, 1, 0]), (1, [1, 1, 1, 1]), (0, [1, 1, 1, 0])],
    }
    for m, outcomes in plan.items():
        folder = out / "eval" / m
        folder.mkdir(parents=True)
        rows = [_row(f"{EVAL_DATASET}:{i}", c, f) for i, (c, f) in enumerate(outcomes)]
        (folder / "outputs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        metrics = summarize_scores(rows, n_boot=200)
        metrics["config"] = {"judge": "reference"}
        (folder / "metrics.json").write_text(json.dumps(metrics))
    for run, rewards in (("grpo", [0.5, 0.6]), ("mrpo", [0.5, 0.9])):
        (out / run).mkdir()
        (out / run / "metrics.jsonl").write_text("".join(
            json.dumps({"step": i + 1, "reward": r, "kl": 0.001 * i, "rewards/mrpo_answer/mean": r / 2,
                        "completions/mean_length": 60}) + "\n" for i, r in enumerate(rewards)))
    (out / "sft").mkdir()
    (out / "sft" / "metrics.jsonl").write_text('{"step": 1, "loss": 3.0}\n{"step": 2, "loss": 1.0}\n')
    # credit logs, step 1: the same two rollouts in both runs (same warm-up model and seed), different credit
    from test_credit_report import _row as credit_row

    from medrl.common.jsonl import write_jsonl

    for run in ("grpo", "mrpo"):
        write_jsonl(out / run / "credit.jsonl", [
            credit_row(run, 1, 0, "vqa_rad-1", "cardiomegaly", 0.7, [True, True], 1.0),
            credit_row(run, 1, 1, "vqa_rad-1", "banana", -0.7, [False, True, False], 0.0)])
    return cfg


def test_report_from_stage_outputs(tmp_path):
    from medrl.commands.demo_pipeline import analyse, write_report

    out = tmp_path / "demo"
    cfg = _fake_demo(out)
    result = analyse(out)
    # paired table by hand: both correct = record 0; MRPO only = records 1, 2; GRPO only = none
    assert result["paired"] == {"n": 4, "both_correct": 1, "a_only": 0, "b_only": 2, "both_wrong": 1}
    md, html = write_report(out, cfg)
    text = md.read_text()
    assert "small-scale demonstration" in text
    assert "143,367,168 parameters" in text and "143.4M-parameter" in text
    # accuracy by hand: warm-up 2/4 = 50.0, GRPO 1/4 = 25.0, MRPO 3/4 = 75.0
    acc = {}
    for line in text.splitlines():  # the first table with these rows: accuracy and HSS
        if line.startswith("| ") and ("GRPO" in line or "MRPO" in line or "Warm-up" in line) and "[" in line:
            acc.setdefault(line.split("|")[1].strip(), line.split("|")[3].strip())
    assert acc["GRPO"].startswith("25.0") and acc["MRPO"].startswith("75.0") and acc["Warm-up (SFT)"].startswith("50.0")
    # FFP stages by hand: GRPO failures at k=1/4 (x3, early); MRPO at k=4/4 (x2, late)
    ffp = [line for line in text.splitlines() if line.startswith("| GRPO |") or line.startswith("| MRPO |")]
    assert any(line.startswith("| GRPO | 4 | 3 | 1 | 100.0 | 0.0 | 0.0") for line in ffp), ffp
    assert any(line.startswith("| MRPO | 4 | 2 | 2 | 0.0 | 0.0 | 100.0") for line in ffp), ffp
    for fig in ("accuracy.png", "hss.png", "ffp_stage_shares.png", "far_curves.png", "training_curves.png"):
        assert (out / "figures" / fig).stat().st_size > 1000, fig
    h = html.read_text()
    assert h.count("data:image/png;base64,") >= 5 and "<script" not in h
    assert "step 1: INVALID" in text or "step 1: VALID" in text  # examples carry step verdicts
    # "What MRPO changed": the judge and its agreement, the credit view, the paired statistics
    assert "## What MRPO changed" in text and "Judge: reference." in text
    assert h.count('title="A=') > 20 and (out / "figures" / "credit_by_position.png").is_file()
    assert "step 1 INVALID mean A -1.903" in text  # MRPO, wrong answer: -e * 0.7 on the first invalid step
    assert "step 1 INVALID mean A -0.700" in text  # GRPO: A_i on every token
    # McNemar by hand: GRPO -> MRPO discordant pairs 0 vs 2: exact p = 2 * 0.5^2 = 0.5; +50 points
    assert "| GRPO -> MRPO | 4 | 25.0 | 75.0 | +50.0 [" in text
    assert "MRPO vs GRPO: +50.0 accuracy points on 4 paired test records" in text
    assert "McNemar exact p = 0.500" in text and "is NOT statistically significant at the 5% level" in text
    # warm-up [1, 1, 0, 0] -> GRPO [1, 0, 0, 0]: one discordant pair, p = 1
    assert "| Warm-up (SFT) -> GRPO | 4 | 50.0 | 25.0 | -25.0 [" in text and "| 1.000 | 1 | 0 | 0 |" in text


def test_report_without_credit_logs_says_so(tmp_path):
    """A demo folder from before credit logging still gets its report, with a note."""
    from types import SimpleNamespace

    from medrl.commands.demo_pipeline.mrpo_changed import credit_view
    from medrl.eval.report import Report

    rep = Report("t")
    credit_view(rep, SimpleNamespace(out=tmp_path, fig_dir=tmp_path / "figures"))
    assert "No credit.jsonl in grpo/ or mrpo/" in rep.to_markdown(tmp_path)


def test_examples_prefer_records_where_grpo_and_mrpo_differ():
    rows = {
        "grpo": {k: _row(k, c, f) for k, c, f in (("d:0", 1, [1]), ("d:1", 0, [0]), ("d:2", 1, [1, 0]))},
        "mrpo": {k: _row(k, c, f) for k, c, f in (("d:0", 1, [1]), ("d:1", 1, [1]), ("d:2", 1, [1, 1]))},
    }
    assert pick_examples(rows, 2) == ["d:1", "d:2"]  # correctness differs, then step verdicts differ
    assert pick_examples(rows, 3) == ["d:1", "d:2", "d:0"]


# --------------------------------------------------------------------------- CLI
def test_cli_without_data_says_where_to_get_it(tmp_path, capsys):
    from medrl.cli import main
    from medrl.common.paths import DATA_HELP

    code = main(["demo", "--quick", "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    # one exit-code table for every command (medrl.common.exit_codes): missing data is the data code in
    # demo as in train and audit-rewards, not the usage code
    assert code == Exit.DATA and DATA_HELP in err and "osf.io" in err
    assert not (tmp_path / "o").exists()


def test_cli_data_folder_without_vqa_rad(tmp_path, capsys):
    from medrl.cli import main

    (tmp_path / "data").mkdir()
    code = main(["demo", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "o")])
    # the exit-code table's data code (medrl.common.exit_codes), as train and audit-rewards exit
    assert code == Exit.DATA and "no vqa_rad/ folder" in capsys.readouterr().err


def test_cli_help_teaches_time_report_and_gpu(capsys):
    from medrl.cli import main

    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = capsys.readouterr().out
    for needle in ("under 20 minutes", "under 5 minutes", "demo_out/full/report.html", "--quick",
                   "medrl train --recipe mrpo", "openai:", "Rerun the same command"):
        assert needle in text, needle


def test_judge_images_with_a_text_only_judge_fails_before_any_stage(tmp_path, capsys):
    from medrl.cli import main

    (tmp_path / "data" / "vqa_rad").mkdir(parents=True)
    code = main(["demo", "--quick", "--judge-images", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "o")])
    assert code == 2 and "images" in capsys.readouterr().err and not (tmp_path / "o").exists()
    assert make_config(judge_images=True, judge_image_max_side=512).judge_images is True


def test_folder_from_before_a_new_setting_still_resumes(tmp_path):
    """state.json without judge_images (an older demo) resumes while the setting keeps its default."""
    cfg = make_config(quick=True).to_dict()
    old = {k: v for k, v in cfg.items() if k not in ("judge_images", "judge_image_max_side")}
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "state.json").write_text(json.dumps({"config": old, "stages": {}}))
    from medrl.commands.demo_pipeline.settings import default_settings

    StageRunner(tmp_path / "out", cfg, echo=lambda m: None, defaults=default_settings())
    with pytest.raises(DemoStateMismatch, match="judge_images"):
        StageRunner(tmp_path / "out", {**cfg, "judge_images": True}, echo=lambda m: None, defaults=default_settings())


def test_python_dash_m_medrl_is_the_medrl_command(tmp_path):
    """`python -m medrl ...` runs the same CLI (exit codes and messages included)."""
    import subprocess
    import sys

    from medrl import __version__

    run = subprocess.run([sys.executable, "-m", "medrl", "--version"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == f"medrl {__version__}"
    run = subprocess.run([sys.executable, "-m", "medrl", "demo", "--data-dir", str(tmp_path / "none"),
                          "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    from medrl.common.exit_codes import Exit

    # missing data: the data code of the one exit-code table, as for train and audit-rewards
    assert run.returncode == Exit.DATA and "medrl demo:" in run.stderr


# --------------------------------------------------------------------------- end to end
@pytest.mark.slow
@pytest.mark.timeout(3600)  # < 5 min on 2 idle cores; much longer on a machine shared with other jobs
def test_quick_demo_end_to_end(tmp_path, data_dir, capsys):
    """`medrl demo --quick` on the real data, then a rerun that skips every finished stage."""
    from medrl.cli import main

    out = tmp_path / "quick"
    t0 = time.monotonic()
    assert main(["demo", "--quick", "--data-dir", str(data_dir), "--out", str(out)]) == 0
    first = time.monotonic() - t0
    state = json.loads((out / "state.json").read_text())
    assert all(s["done"] for s in state["stages"].values()), state["stages"]
    for m in MODELS:
        assert (out / "eval" / m / "outputs.jsonl").is_file()
    html = (out / "report.html").read_text()
    assert "small-scale demonstration" in html and "GRPO" in html and "MRPO" in html
    capsys.readouterr()
    t1 = time.monotonic()
    assert main(["demo", "--quick", "--data-dir", str(data_dir), "--out", str(out)]) == 0
    assert "already done" in capsys.readouterr().out
    assert time.monotonic() - t1 < first / 2


def test_finished_runs_drop_their_checkpoints(tmp_path):
    from medrl.commands.demo_pipeline.pipeline import _drop_checkpoints

    for name in ("checkpoint-4", "checkpoint-8", "final"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.safetensors").write_text("x")
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    _drop_checkpoints(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final", "metrics.jsonl"]
