"""An unusable ``--out`` is one line and exit 2 for every command that has one (it used to be a raw
traceback), and ``--out`` inside another run's folder - its checkpoints, ``final/``, or the run
folder itself for eval - is refused unless ``--overwrite`` says so."""

from __future__ import annotations

import json

import pytest

from medrl.cli import main

#: each command with an --out, as the smallest command line that parses (the check runs first)
COMMANDS = {
    "train": ["train", "--recipe", "grpo", "--dry-run"],
    "sft": ["sft", "--model", "tiny"],
    "eval": ["eval", "--model", "tiny", "--data", "vqa_rad:test"],
    "demo": ["demo"],
    "bench effects": ["bench", "effects"],
    "analyze": ["analyze", "nowhere"],
    "judge-bench": ["judge-bench", "--judge", "reference"],
    "build-model": ["build-model", "tiny"],
}
#: data subcommands write a file
FILE_COMMANDS = {"data convert": ["data", "convert", "--dataset", "vqa_rad"],
                 "data corrupt": ["data", "corrupt", "--image", "x.png"]}


def _one_line(capsys, code, expect) -> None:
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err and expect in err, err


@pytest.fixture()
def paths(tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    return {"300-character name": (str(tmp_path / ("x" * 300)), "file systems take at most 255"),
            "an existing file": (str(f), "is a file"),
            "a path under a file": (str(f / "sub"), "which is a file, not a folder"),
            "/dev/null": ("/dev/null", "not a folder")}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", ["300-character name", "an existing file", "a path under a file", "/dev/null"])
def test_an_unusable_out_is_one_line(command, case, paths, capsys):
    out, expect = paths[case]
    _one_line(capsys, main([*COMMANDS[command], "--out", out]), expect)


@pytest.mark.parametrize("command", list(FILE_COMMANDS))
def test_a_file_out_that_cannot_be_a_file(command, tmp_path, capsys):
    f = tmp_path / "a_file"
    f.write_text("x")
    for out, expect in ((tmp_path, "is a folder"), (f / "sub.jsonl", "which is a file"), ("/dev/null", "not a regular"),
                        (tmp_path / ("y" * 300), "at most 255")):
        _one_line(capsys, main([*FILE_COMMANDS[command], "--out", str(out)]), expect)


@pytest.fixture()
def run(tmp_path):
    """A finished training run: config.yaml, checkpoint-2/, final/ (a model folder)."""
    r = tmp_path / "runs" / "mrpo"
    (r / "checkpoint-2").mkdir(parents=True)
    (r / "config.yaml").write_text("recipe: {name: mrpo}\n")
    (r / "metrics.jsonl").write_text("{}\n")
    final = r / "final"
    final.mkdir()
    (final / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    (final / "model.safetensors").write_bytes(b"")
    return r


def test_out_inside_another_run_is_refused(run, tmp_path, capsys):
    _one_line(capsys, main(["train", "--recipe", "grpo", "--dry-run", "--out", str(run / "checkpoint-2")]),
              f"lies inside the training run {run}")
    _one_line(capsys, main(["train", "--recipe", "grpo", "--dry-run", "--out", str(run / "final" / "x")]),
              "lies inside the model folder")
    _one_line(capsys, main(["eval", "--model", "tiny", "--data", "vqa_rad:test", "--out", str(run)]),
              "is a training run: eval there would mix its files into it")
    _one_line(capsys, main(["eval", "--model", "tiny", "--data", "vqa_rad:test", "--out", str(run / "final")]),
              "is a model folder: an eval there would replace its config.json")
    _one_line(capsys, main(["sft", "--model", "tiny", "--out", str(run / "stages" / "01_sft")]),
              "lies inside the training run")
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint-2", "config.yaml", "final", "metrics.jsonl"]


def test_out_over_the_model_it_reads_is_refused_even_with_overwrite(run, capsys):
    from medrl.commands.run_folder import other_run_problem

    why = other_run_problem(run / "final", "train", model=str(run / "final"), overwrite=True)
    assert why is not None and "would write over the model it reads" in why
    assert "would write over" in other_run_problem(run, "train", model=str(run / "final"), overwrite=True)


def test_overwrite_names_it_and_own_kinds_resume(run, tmp_path):
    from medrl.commands.run_folder import other_run_problem

    assert other_run_problem(run / "checkpoint-2", "train", overwrite=True) is None
    assert other_run_problem(run, "train") is None  # the run itself: resume rules decide
    ev = tmp_path / "evals" / "mrpo"
    ev.mkdir(parents=True)
    (ev / "config.json").write_text("{}")
    (ev / "outputs.jsonl").write_text("")
    assert other_run_problem(ev, "eval") is None  # an eval folder resumes
    assert "is a eval folder" in other_run_problem(ev, "train")
    assert other_run_problem(run / "credit", "analyze") is None  # reports go into run folders by design
    assert other_run_problem(tmp_path / "new", "train") is None


def test_a_folder_written_by_a_command_is_known_by_its_lock(tmp_path):
    from medrl.commands.run_folder import folder_kind
    from medrl.common.runlock import run_lock

    ev = tmp_path / "ev"
    with run_lock(ev, "medrl eval"):  # an eval that has written nothing yet
        assert folder_kind(ev) == "eval" and folder_kind(tmp_path) is None
