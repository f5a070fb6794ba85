"""The walkthrough of docs/architecture.md, run exactly as printed: a method written outside medrl
(its own package in a temporary folder), configured from a YAML recipe, runs its own training
stage and then trains one step on the synthetic ``phantom`` data with no file of medrl changed and
without ``../shared/data``; and the same method found through a ``medrl.methods`` entry point."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def walkthrough() -> dict[str, str]:
    """``{file name or 'commands': text}`` of the doc's walkthrough blocks."""
    blocks = dict(re.findall(r"<!-- walkthrough:(\S+) -->\n```\w*\n(.*?)```\n<!-- walkthrough:end -->", DOC.read_text(),
                             re.S))
    assert set(blocks) == {"my_pkg/my_method.py", "length_penalty.yaml", "commands"}, sorted(blocks)
    return blocks


def medrl_tree() -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in (ROOT / "medrl").rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The user's folder: the walkthrough's files written there, on sys.path (PYTHONPATH=$PWD),
    the current directory; medrl's registries are restored afterwards."""
    from medrl.methods import METHODS, STAGES
    from medrl.rewards import REWARDS

    for name, text in walkthrough().items():
        if name != "commands":
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
    (tmp_path / "my_pkg" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for registry in (METHODS, REWARDS, STAGES):
        registry.names()  # loaded before the snapshot
        monkeypatch.setattr(registry, "_items", dict(registry._items))
    yield tmp_path
    for mod in [m for m in sys.modules if m == "my_pkg" or m.startswith("my_pkg.")]:
        del sys.modules[mod]


def test_the_walkthrough_trains_one_step_on_phantom(folder, capsys, monkeypatch):
    from medrl.cli import main

    monkeypatch.delenv("MEDRL_DATA_DIR", raising=False)
    before = medrl_tree()
    commands = [ln for ln in walkthrough()["commands"].splitlines() if ln.startswith("medrl ")]
    assert len(commands) == 2
    assert main(shlex.split(commands[0])[1:]) == 0  # recipes show ... --explain
    explained = capsys.readouterr().out
    assert "  length_penalty: (on)" in explained and "reasoning words allowed before the penalty" in explained
    assert "    max_words = 20  (from algorithm.length_penalty.max_words)" in explained
    assert "  short_questions (short_questions) {'max_words': 40}" in explained  # the plugin's stage ...
    assert "keep the training records whose question has at most max_words words" in explained  # ... its help
    assert main(shlex.split(commands[1])[1:]) == 0  # train ... --max-steps 1
    run = folder / "runs" / "lp"
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["recipe"]["algorithm"]["length_penalty"] == {"max_words": 20, "penalty": 0.25}
    stage = run / "stages" / "01_short_questions"
    assert (stage / "DONE").is_file() and (stage / "kept.txt").read_text().endswith(" records\n")  # the stage ran
    assert int((stage / "kept.txt").read_text().split()[0]) > 0
    rows = [json.loads(ln) for ln in (run / "stages" / "02_rl" / "metrics.jsonl").read_text().splitlines()]
    logged = {k for r in rows for k in r}
    assert {"rewards/length_penalty/mean", "length_penalty/over_share"} <= logged
    assert max(r.get("step", 0) for r in rows) == 1
    assert medrl_tree() == before  # no file of medrl changed


def test_an_option_the_plugin_stage_does_not_take_is_refused(folder):
    from medrl.train.recipes import RecipeError, load_recipe

    text = (folder / "length_penalty.yaml").read_text().replace("{max_words: 40}", "{max_wrds: 40}")
    (folder / "typo.yaml").write_text(text)
    with pytest.raises(RecipeError, match=r"stages\[0\]\.options\.max_wrds: unknown option 'max_wrds'; did you mean "
                                          r"'max_words'\?"):
        load_recipe("typo.yaml", check_trl=False)


def test_a_typo_in_the_plugin_section_is_refused_with_the_field_and_its_help(folder):
    from medrl.train.recipes import RecipeError, load_recipe

    with pytest.raises(RecipeError, match=r"algorithm\.length_penalty\.max_wrds: unknown key 'max_wrds'; did you mean "
                                          r"'max_words'\? \(max_words: reasoning words allowed"):
        load_recipe("length_penalty.yaml", overrides=["algorithm.length_penalty.max_wrds=5"], check_trl=False)


def test_the_method_found_through_an_entry_point(folder, monkeypatch):
    """Installed with ``[project.entry-points."medrl.methods"] length_penalty = ...``, the recipe
    names it ``length_penalty``; a broken entry point is an error naming it, not a gap."""
    from medrl.methods import METHODS
    from medrl.train.recipes import load_recipe

    info = folder / "my_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[medrl.methods]\nlength_penalty = my_pkg.my_method:LengthPenalty\n"
                                           "broken = my_pkg.no_such_module:Nothing\n")
    monkeypatch.setattr(METHODS, "_loaded", False)  # read the entry points again
    monkeypatch.setattr(METHODS, "_broken", {})
    text = (folder / "length_penalty.yaml").read_text().replace("[my_pkg.my_method:LengthPenalty]", "[length_penalty]")
    (folder / "installed.yaml").write_text(text)
    recipe = load_recipe("installed.yaml", check_trl=False)
    assert recipe.methods == ["length_penalty"] and recipe.algorithm["length_penalty"]["max_words"] == 20
    assert METHODS.get("length_penalty").__module__ == "my_pkg.my_method"
    with pytest.raises(KeyError, match=r"method 'broken': entry point broken = 'my_pkg.no_such_module:Nothing' "
                                       r"\(group medrl.methods\) failed to load: ModuleNotFoundError"):
        METHODS.get("broken")
