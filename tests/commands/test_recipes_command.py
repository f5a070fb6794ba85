"""`medrl recipes` alone lists the recipes (the README says so; it used to exit 2), `recipes show`
names the same methods in its header and its YAML, and `data corrupt` on a file that is not an
image is one line (exit 4), not a traceback."""

from __future__ import annotations

import yaml

from medrl.cli import main


def test_recipes_alone_lists_the_recipes(capsys):
    assert main(["recipes"]) == 0
    listed = capsys.readouterr().out
    assert main(["recipes", "list"]) == 0
    assert listed == capsys.readouterr().out and "mrpo" in listed and "combined" in listed


def test_show_names_the_same_methods_in_its_header_and_its_yaml(capsys):
    assert main(["recipes", "show", "mrpo"]) == 0
    out = capsys.readouterr().out
    header = [line for line in out.splitlines() if line.startswith("#")]
    shown = yaml.safe_load("\n".join(line for line in out.splitlines() if not line.startswith("#")))
    assert shown["methods"] == ["mrpo"] and any(line.startswith("#   mrpo (") for line in header)
    assert main(["recipes", "show", "grpo"]) == 0
    out = capsys.readouterr().out
    assert "none (TRL's GRPO" in out and yaml.safe_load(
        "\n".join(x for x in out.splitlines() if not x.startswith("#")))["methods"] == []


def test_data_corrupt_on_a_non_image_is_one_line(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("not an image")
    assert main(["data", "corrupt", "--image", str(bad), "--out", str(tmp_path / "x.png")]) == 4
    err = capsys.readouterr().err.strip()
    assert "not a readable image" in err and str(bad) in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x.png").exists()
