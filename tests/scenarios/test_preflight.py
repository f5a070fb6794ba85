"""``medrl train --dry-run`` is a real preflight: what would make training fail makes it fail,
with training's exit code, and a failed preflight or start leaves the run folder as it was."""

from __future__ import annotations

import json
import socket

import pytest

from medrl.common.exit_codes import Exit

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


def _dry(*extra: str, recipe: str = "mrpo") -> list[str]:
    return ["train", "--recipe", recipe, "--profile", "cpu", "--dry-run", *extra]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


@pytest.mark.parametrize("extra, code", [
    (["--data", "vqa_radd"], Exit.DATA),  # a misspelt dataset
    (["--data-dir", "{tmp}/nowhere"], Exit.DATA),  # a missing data folder
    (["--set", "data.require_gold_reasoning=true"], Exit.DATA),  # VQA-RAD has no MedThink rationales
    (["--set", "grpo.temperature=-1"], Exit.USAGE),
    (["--set", "grpo.temperature=0"], Exit.USAGE),
    (["--set", "grpo.learning_rate=-1e-6"], Exit.USAGE),
    (["--set", "grpo.num_generations=1"], Exit.USAGE),
    (["--set", "batch.global_prompts=0"], Exit.USAGE),
    (["--reward", "{tmp}/mine.py:no_such_function"], Exit.USAGE),
    (["--judge-max-unscored", "1.5"], Exit.USAGE),
])
def test_dry_run_refuses_what_training_would_with_its_exit_code(extra, code, tmp_path, data_dir, capsys):
    from medrl.cli import main

    (tmp_path / "mine.py").write_text("def mine(prompts, completions, **kw):\n    return [0.0] * len(completions)\n")
    out = tmp_path / "run"
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    if "--data-dir" not in extra:
        extra += ["--data-dir", str(data_dir)]
    assert main(_dry(*extra, "--out", str(out))) == code
    assert not out.exists()  # nothing written: no config.yaml, no lock file


def test_dry_run_loads_data_through_every_filter(tmp_path, capsys):
    from PIL import Image

    from medrl.cli import main

    Image.new("RGB", (8, 8)).save(tmp_path / "img.png")
    rows = [{"id": f"r{i}", "question": "Is there a fracture?", "answer": "yes", "images": ["img.png"]}
            for i in range(3)]
    (tmp_path / "closed.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code = main(_dry("--data", f"jsonl:{tmp_path / 'closed.jsonl'}", "--set", "data.open_only=true"))
    assert code == Exit.DATA, capsys.readouterr()
    err = capsys.readouterr().err
    assert "preflight: FAILED (exit 4)" in err
    assert "--skip-invalid" not in err  # train has no such option; its hints name none


def test_dry_run_probes_the_judge_without_the_cache(tmp_path, data_dir, capsys):
    from medrl.cli import main

    out = tmp_path / "run"
    code = main(_dry("--data-dir", str(data_dir), "--judge", "openai:some-model", "--judge-base-url",
                     f"http://127.0.0.1:{_free_port()}/v1", "--judge-timeout", "0.5", "--judge-retry-budget", "1",
                     "--judge-cache", str(tmp_path / "cache.sqlite"), "--out", str(out)))
    err = capsys.readouterr().err
    assert code == Exit.JUDGE == 9, err
    assert "judge openai:some-model could not score its probe" in err and "connection" in err.lower()
    assert not out.exists()


def test_custom_reward_file_passes_preflight_and_writes_config(tmp_path, data_dir, monkeypatch, capsys):
    from medrl.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def mine(prompts, completions, **kw):\n    return [0.0] * len(completions)\n")
    out = tmp_path / "run"
    assert main(_dry("--data-dir", str(data_dir), "--reward", "./mine.py:mine", "--out", str(out))) == 0
    printed = capsys.readouterr().out
    assert "./mine.py:mine" in printed and "preflight: OK" in printed
    assert sorted(p.name for p in out.iterdir()) == ["config.yaml"]  # no lock file


def test_recipe_names_ignore_case_and_typos_get_did_you_mean(data_dir, capsys):
    from medrl.cli import main

    assert main(_dry("--data-dir", str(data_dir), recipe="MRPO")) == 0
    capsys.readouterr()
    assert main(_dry("--data-dir", str(data_dir), recipe="mrp0")) == Exit.USAGE
    assert "unknown recipe 'mrp0'; did you mean 'mrpo'?" in capsys.readouterr().err


def test_failed_start_leaves_no_config_and_no_lock(tmp_path, capsys):
    from medrl.cli import main

    out = tmp_path / "run"
    code = main(["train", "--recipe", "grpo", "--profile", "cpu", "--model", "tiny", "--data", "vqa_rad",
                 "--data-dir", str(tmp_path / "nowhere"), "--out", str(out)])
    assert code == Exit.DATA
    assert not out.exists()
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["train", "--recipe", "grpo", "--profile", "cpu", "--model", "tiny", "--data", "vqa_rad",
                 "--data-dir", str(tmp_path / "nowhere"), "--out", str(out)]) == Exit.DATA
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_data_error_hints_name_only_options_the_command_has(tmp_path, capsys):
    from medrl.cli import main
    from medrl.common.exit_codes import command_hint

    msg = "x.jsonl: record 'a': no image (line 1) (use --skip-invalid / skip_invalid=True to skip such records)"
    assert command_hint(msg, "eval") == msg  # eval has --skip-invalid
    for command in ("train", "sft", "audit-rewards"):
        assert "--skip-invalid" not in command_hint(msg, command).replace(f"`medrl {command}` has no --skip-invalid",
                                                                           "")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "Is there a fracture?", "answer": "yes", "images": []}\n')
    code = main(["audit-rewards", "--recipe", "grpo", "--data", f"jsonl:{bad}", "--n", "1"])
    err = capsys.readouterr().err
    assert code == Exit.DATA and "record 'a'" in err
    assert "use --skip-invalid" not in err
