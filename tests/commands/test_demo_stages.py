"""medrl.commands.demo_pipeline.stages: finished stages are skipped, wall time adds up over
attempts, and a folder made with other settings is refused naming what changed."""

from __future__ import annotations

import json
import time

import pytest

from medrl.commands.demo_pipeline.stages import DemoStateMismatch, StageRunner, fmt_secs


def quiet(msgs):
    return msgs.append


def test_fmt_secs():
    assert fmt_secs(59.4) == "59s" and fmt_secs(60) == "1m00s" and fmt_secs(754.6) == "12m35s"


def test_stage_runs_once_then_is_skipped_with_its_result(tmp_path):
    msgs = []
    r = StageRunner(tmp_path / "d", {"seed": 0}, echo=quiet(msgs))
    calls = []
    assert r.run(1, 2, "sft", "Warm-up", lambda: calls.append(1) or {"acc": 0.5}) == {"acc": 0.5}
    state = json.loads((tmp_path / "d" / "state.json").read_text())
    assert state["config"] == {"seed": 0}
    assert state["stages"]["sft"]["done"] and state["stages"]["sft"]["attempts"] == 1
    again = StageRunner(tmp_path / "d", {"seed": 0}, echo=quiet(msgs))
    assert again.run(1, 2, "sft", "Warm-up", lambda: calls.append(2)) == {"acc": 0.5}
    assert calls == [1] and "[1/2] Warm-up: already done" in msgs[-1]
    # the stage's own check says its outputs are gone: it runs again
    assert again.run(1, 2, "sft", "Warm-up", lambda: "redo", is_done=lambda: False) == "redo"
    assert again.info("sft")["attempts"] == 2


def test_interrupted_stage_keeps_its_time_and_reruns(tmp_path):
    r = StageRunner(tmp_path, {}, echo=lambda m: None)

    def boom():
        time.sleep(0.03)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        r.run(1, 1, "rl", "RL", boom)
    info = json.loads((tmp_path / "state.json").read_text())["stages"]["rl"]
    assert info["done"] is False and info["attempts"] == 1 and info["seconds"] >= 0.02
    msgs = []
    r2 = StageRunner(tmp_path, {}, echo=quiet(msgs))
    r2.run(1, 1, "rl", "RL", lambda: None)
    assert "\n[1/1] RL (resuming)" in msgs
    assert r2.info("rl")["done"] and r2.info("rl")["attempts"] == 2
    assert r2.info("rl")["seconds"] >= info["seconds"]  # time of the attempts adds up


def test_other_settings_are_refused_naming_each_change(tmp_path):
    StageRunner(tmp_path, {"seed": 0, "steps": 10}, echo=lambda m: None)
    with pytest.raises(DemoStateMismatch, match=r"other settings \(seed: 0 -> 1, steps: 10 -> 20\)"):
        StageRunner(tmp_path, {"seed": 1, "steps": 20}, echo=lambda m: None)
    # a setting added later, left at its default, matches the old folder
    r = StageRunner(tmp_path, {"seed": 0, "steps": 10, "new": "x"}, echo=lambda m: None, defaults={"new": "x"})
    assert r.state["config"]["new"] == "x"


def test_broken_state_file_and_overwrite_of_a_foreign_folder(tmp_path):
    (tmp_path / "state.json").write_text("{oops")
    with pytest.raises(DemoStateMismatch, match="not valid JSON"):
        StageRunner(tmp_path, {}, echo=lambda m: None)
    StageRunner(tmp_path, {"a": 1}, overwrite=True, echo=lambda m: None)  # a demo folder: cleared
    assert json.loads((tmp_path / "state.json").read_text()) == {"config": {"a": 1}, "stages": {}}
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("x")
    with pytest.raises(DemoStateMismatch, match="holds no state.json: not removing a folder"):
        StageRunner(foreign, {}, overwrite=True, echo=lambda m: None)
    assert (foreign / "thesis.tex").exists()


def test_seconds_per_stage(tmp_path):
    r = StageRunner(tmp_path, {}, echo=lambda m: None)
    r.run(1, 1, "a", "A", lambda: None)
    assert set(r.seconds()) == {"a"} and set(r.seconds("cpu_seconds")) == {"a"}
