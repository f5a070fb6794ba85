"""A researcher's first hour, each failing input from the report turned into a test: no network,
a model-name typo, a multi-stage run folder, a ./data folder that hid the real data, a custom
reward, resuming a finished run, one exit-code table, model cards that name the base model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")

BLOCK_SOCKETS = """
import socket
def _blocked(*a, **k):
    raise OSError("network blocked by the test")
socket.socket.connect = _blocked
socket.socket.connect_ex = _blocked
socket.create_connection = _blocked
socket.getaddrinfo = _blocked
"""


def _no_network_env(tmp_path: Path) -> dict:
    """Environment of a process with the network variables unset and every socket refused."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCK_SOCKETS)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


# ------------------------------------------------------------------ offline first


def test_model_typo_without_network_fails_fast_with_clear_message(tmp_path):
    env = _no_network_env(tmp_path)
    (tmp_path / "runs").mkdir()  # a runs/ folder exists: runs/nope is a missing folder, not a hub id
    start = time.monotonic()
    proc = subprocess.run([PY, "-m", "medrl", "eval", "--model", "runs/nope", "--data", "vqa_rad:test",
                           "--out", str(tmp_path / "ev")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    elapsed = time.monotonic() - start
    assert proc.returncode == 5, proc.stderr
    assert "no model folder or cached hub id 'runs/nope'" in proc.stderr
    assert "Traceback" not in proc.stderr and "Retry" not in proc.stderr
    assert elapsed < 10, elapsed  # interpreter start included; the check itself is timed below
    # the same typo without a local runs/ folder: a hub id, not cached, hub unreachable
    proc = subprocess.run([PY, "-m", "medrl", "eval", "--model", "nobody/nope", "--data", "vqa_rad:test",
                           "--out", str(tmp_path / "ev")], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 5 and "no model folder or cached hub id 'nobody/nope'" in proc.stderr
    assert proc.stderr.count("cannot be reached") == 1  # said once


def test_model_check_in_process_takes_under_two_seconds(tmp_path, monkeypatch):
    from medrl.common.exit_codes import ModelNotFoundError
    from medrl.models.loading import resolve_model_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    start = time.monotonic()
    with pytest.raises(ModelNotFoundError, match="no model folder or cached hub id 'runs/nope'"):
        resolve_model_path("runs/nope")
    with pytest.raises(ModelNotFoundError, match="no model folder or cached hub id 'nobody/nope'"):
        resolve_model_path("nobody/nope")  # HF_HUB_OFFLINE=1 in the tests: must be cached
    assert time.monotonic() - start < 2.0


def test_unreachable_hub_switches_to_offline_once(monkeypatch):
    import socket

    from medrl.models import loading

    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(loading, "_HUB_STATE", {})

    def refuse(*a, **k):
        raise OSError("no network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    said = []
    start = time.monotonic()
    assert loading.offline_first(said.append) is True
    assert loading.offline_first(said.append) is True
    assert time.monotonic() - start < 3
    assert len(said) == 1 and "cannot be reached" in said[0] and os.environ["HF_HUB_OFFLINE"] == "1"


@pytest.mark.slow
def test_audit_rewards_mrpo_without_network_succeeds(tmp_path, data_dir):
    env = _no_network_env(tmp_path)
    env["MEDRL_DATA_DIR"] = str(data_dir)
    proc = subprocess.run([PY, "-m", "medrl", "audit-rewards", "--recipe", "mrpo", "--n", "2"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "mrpo_answer" in proc.stdout and "Traceback" not in proc.stderr
    assert proc.stderr.count("cannot be reached") == 1


# ------------------------------------------------------------------ run folders as --model


def _fake_model(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    return folder


def test_multi_stage_run_folder_resolves_to_its_last_stage(tmp_path):
    from medrl.common.exit_codes import ModelNotFoundError
    from medrl.models.loading import resolve_model_path

    run = tmp_path / "runs" / "armed"
    stages = run / "stages"
    for i, name in enumerate(["armed_i", "knowledge", "armed_a", "armed_r"], 1):
        (stages / f"{i:02d}_{name}").mkdir(parents=True)
    with pytest.raises(ModelNotFoundError, match="no finished stage yet"):
        resolve_model_path(run)
    first = _fake_model(stages / "01_armed_i" / "final")
    (stages / "01_armed_i" / "DONE").write_text(str(first))
    (stages / "02_knowledge" / "DONE").write_text(str(first))  # knowledge injection passes the model on
    assert resolve_model_path(run) == str(first)  # the last finished stage, with a warning
    last = _fake_model(stages / "04_armed_r" / "final")
    (stages / "04_armed_r" / "DONE").write_text(str(last))
    assert resolve_model_path(run) == str(last)
    single = tmp_path / "runs" / "mrpo"
    _fake_model(single / "final")
    assert resolve_model_path(single) == str(single / "final")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="no model in it"):
        resolve_model_path(tmp_path / "empty")


# ------------------------------------------------------------------ data lookup


def test_local_data_folder_does_not_hide_shared_data(tmp_path, monkeypatch, data_dir):
    from medrl.data import load_records
    from medrl.data.registry import DataNotFoundError

    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)  # what `medrl data convert --out data/x.jsonl` creates
    (project / "data" / "x.jsonl").write_text("")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(data_dir)
    monkeypatch.chdir(project)
    monkeypatch.delenv("MEDRL_DATA_DIR", raising=False)
    assert len(load_records("vqa_rad:test", validate=False)) > 0
    with pytest.raises(DataNotFoundError) as err:
        load_records("pathvqa:test", validate=False)
    msg = str(err.value)
    assert "pathvqa not found; looked in:" in msg
    assert f"{project / 'data'} (no pathvqa in it)" in msg and "(no pathvqa in it)" in msg.split(";")[1]


def test_missing_dataset_exit_code_and_message(tmp_path, monkeypatch, capsys):
    from medrl.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDRL_DATA_DIR", raising=False)
    code = main(["audit-rewards", "--recipe", "grpo", "--data-dir", str(tmp_path / "nowhere"), "--n", "2"])
    err = capsys.readouterr().err
    assert code in (2, 4) and "vqa_rad not found; looked in:" in err and "nowhere (no such folder)" in err


# ------------------------------------------------------------------ custom rewards

MY_REWARDS = '''
def has_answer(prompts, completions, **kwargs):
    out = []
    for c in completions:
        text = c if isinstance(c, str) else c[0]["content"]
        out.append(1.0 if "<answer>" in text else 0.0)
    return out

async def answer_is_reference(prompts, completions, answer=None, **kwargs):
    out = []
    for c, ref in zip(completions, answer or [None] * len(completions)):
        text = c if isinstance(c, str) else c[0]["content"]
        out.append(None if ref is None else float(str(ref).lower() in text.lower()))
    return out
'''


def test_custom_rewards_by_file_and_module_in_recipe_and_audit(tmp_path, monkeypatch, capsys):
    import asyncio

    from medrl.cli import main
    from medrl.train.recipes import RecipeError, build_reward_funcs, load_recipe

    (tmp_path / "my_rewards.py").write_text(MY_REWARDS)
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "rewards.py").write_text(MY_REWARDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(f"name: mine\nrewards:\n  - {{name: '{tmp_path}/my_rewards.py:has_answer', weight: 0.5}}\n"
                      "  - {name: 'mypkg.rewards:answer_is_reference'}\n  - {name: format, weight: 0.1}\n")
    r = load_recipe(recipe)
    funcs, weights = build_reward_funcs(r)
    assert [f.__name__ for f in funcs] == [f"{tmp_path}/my_rewards.py:has_answer", "mypkg.rewards:answer_is_reference",
                                           "format"] and weights == [0.5, 1.0, 0.1]
    comps = [[{"role": "assistant", "content": "<think>x</think><answer>Liver</answer>"}]]
    assert funcs[0](prompts=["q"], completions=comps) == [1.0]
    assert asyncio.run(funcs[1](prompts=["q"], completions=comps, answer=["liver"])) == [1.0]
    # --reward adds one on the command line; a bad path is a clear error naming it
    r2 = load_recipe("grpo", rewards=[f"{tmp_path}/my_rewards.py:has_answer=0.2"])
    assert r2.rewards[-1]["weight"] == 0.2
    bad = load_recipe("grpo", rewards=[f"{tmp_path}/my_rewards.py:no_such_fn"])
    with pytest.raises(RecipeError, match="has no attribute 'no_such_fn'"):
        build_reward_funcs(bad)
    # audit-rewards runs them (sync and async)
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "img.png")
    data = tmp_path / "recs.jsonl"
    rec = {"question": "Which organ is enlarged?", "answer": "Liver", "images": ["img.png"]}
    data.write_text("\n".join(json.dumps({**rec, "id": f"r{i}"}) for i in range(2)) + "\n")
    assert main(["audit-rewards", "--recipe", str(recipe), "--data", f"jsonl:{data}", "--n", "2",
                 "--set", "algorithm.correctness=exact", "--reward", "mypkg.rewards:has_answer=0.2"]) == 0
    out = capsys.readouterr().out
    assert "mypkg.rewards:answer_is_reference" in out and "my_rewards.py:has_answer" in out
    assert "mypkg.rewards:has_answer" in out


# ------------------------------------------------------------------ resume of a finished run


def test_resume_of_finished_run_says_finished(tmp_path, capsys):
    from medrl.cli import main

    run = tmp_path / "run"
    _fake_model(run / "final")
    ckpt = run / "checkpoint-2"
    ckpt.mkdir()
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 2, "max_steps": 2}))
    args = ["train", "--recipe", "grpo", "--profile", "cpu", "--model", "tiny", "--data", "vqa_rad",
            "--out", str(run), "--resume"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "is finished" in out and "nothing to resume" in out
    assert not (run / "config.yaml").exists()  # nothing rewritten, no step trained
    # asking for more steps than were trained is not "finished"
    from medrl.train.pipeline import finished_run
    from medrl.train.recipes import load_recipe

    assert finished_run(load_recipe("grpo", profile="cpu"), run) == run / "final"
    assert finished_run(load_recipe("grpo", profile="cpu", overrides=["grpo.max_steps=5"]), run) is None


# ------------------------------------------------------------------ exit codes and model cards


def test_one_exit_code_table_shared_by_commands_and_documented(tmp_path, capsys):
    from medrl.cli import main
    from medrl.data.record import DataError
    from medrl.common.exit_codes import TABLE, Exit, for_error
    from medrl.judges.base import JudgeAuthError

    assert for_error(DataError("x.jsonl line 3: no question"))[0] == Exit.DATA
    assert for_error(JudgeAuthError("401"))[0] == Exit.JUDGE_AUTH
    assert for_error(KeyboardInterrupt())[0] == Exit.INTERRUPTED == 130
    assert for_error(RuntimeError("a bug")) is None  # unknown errors keep their traceback
    assert main(["train", "--recipe", "mrpo", "--set", "data.limt=4", "--dry-run"]) == Exit.USAGE
    doc = (REPO / "docs" / "first-hour.md").read_text()
    for code, _ in TABLE:
        assert f"| {int(code)} |" in doc, code


def test_model_card_names_base_model_and_method(tmp_path):
    from medrl.train.model_card import write_model_card

    base = tmp_path / "warmup" / "final"
    base.mkdir(parents=True)
    (base / "config.json").write_text(json.dumps({"_name_or_path": "Qwen/Qwen2.5-VL-3B-Instruct"}))
    write_model_card([tmp_path], base_model=base, method="mrpo (RL, TRL GRPOTrainer)",
                     recipe="mrpo", paper="MRPO (Jung et al. 2026, arXiv 2606.31825)", steps=2)
    card = (tmp_path / "README.md").read_text()
    assert "None" not in card and "base_model: Qwen/Qwen2.5-VL-3B-Instruct" in card
    assert "fine-tuned version of a local fine-tune of `Qwen/Qwen2.5-VL-3B-Instruct`" in card and "**mrpo" in card
    assert str(tmp_path) not in card  # a local path never reaches a card meant for the Hub
