"""A config means what it says: a key given twice at any depth of a recipe, a profile or a
``--set`` value is refused with its line; ``--set grpo={}`` does not silently drop the recipe's
section; values the trainer would reject are refused before any model loads."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from medrl.common.strict_yaml import DuplicateKeyError, load

keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.text(alphabet="xyz ", max_size=5).map(str.strip),
                    st.floats(allow_nan=False, allow_infinity=False, width=32))
trees = st.recursive(st.dictionaries(keys, scalars, max_size=4),
                     lambda inner: st.dictionaries(keys, st.one_of(scalars, inner), min_size=1, max_size=4),
                     max_leaves=12)


def _paths(tree, prefix=()):
    """Every mapping in ``tree`` (as a key path)."""
    yield prefix
    for k, v in tree.items():
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))


@settings(max_examples=60, deadline=None)
@given(trees)
def test_files_without_duplicates_read_as_yaml_reads_them(tree):
    text = yaml.safe_dump(tree, sort_keys=False)
    assert load(text) == yaml.safe_load(text)


@settings(max_examples=60, deadline=None)
@given(trees.filter(bool), st.data())
def test_a_key_given_twice_at_any_depth_is_refused_with_its_line(tree, data):
    """Append a second copy of one key inside one mapping of the file: refused, naming the key
    and the line of each copy."""
    path = data.draw(st.sampled_from([p for p in _paths(tree) if _at(tree, p)]))
    node = _at(tree, path)
    key = data.draw(st.sampled_from(sorted(node)))
    lines = yaml.safe_dump(tree, sort_keys=False, default_flow_style=False).splitlines()
    indent = "  " * len(path)
    # the mapping's lines end where the indentation drops below its own
    start = _line_of(lines, path)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(indent) or
                (len(lines[i]) - len(lines[i].lstrip())) < len(indent)), len(lines))
    first = next(i for i in range(start, end) if lines[i] == f"{indent}{_key(key)}:" or
                 lines[i].startswith(f"{indent}{_key(key)}: ") or lines[i] == f"{indent}{_key(key)}: {{}}")
    dup = lines[:end] + [f"{indent}{_key(key)}: 1"] + lines[end:]
    with pytest.raises(DuplicateKeyError, match=rf"line {end + 1}: the key {key!r} is given twice .*first at "
                                                rf"line {first + 1}\)"):
        load("\n".join(dup) + "\n")


def _at(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def _key(k) -> str:
    return k  # the generated keys are plain YAML scalars (letters a-h and "_"), written as they are


def _line_of(lines, path) -> int:
    """Index of the first line inside the mapping at ``path`` (0 for the top level)."""
    i = 0
    for depth, k in enumerate(path):
        i = next(j for j in range(i, len(lines)) if lines[j] == f"{'  ' * depth}{_key(k)}:")
        i += 1
    return i


# ------------------------------------------------------------------ recipes


def _recipe(tmp_path, text: str):
    p = tmp_path / "mine.yaml"
    p.write_text(text)
    return p


def test_a_recipe_with_a_second_grpo_section_is_refused_naming_the_line(tmp_path):
    from medrl.train.recipes import RecipeError, load_recipe

    text = "name: mine\nrewards:\n  - name: format\ngrpo:\n  learning_rate: 1.0e-6\n  beta: 0.04\n"
    with pytest.raises(RecipeError, match=r"mine.yaml.*line 7.*'grpo' is given twice.*first at line 4"):
        load_recipe(_recipe(tmp_path, text + "grpo:\n  temperature: 0.9\n"))
    with pytest.raises(RecipeError, match=r"line 6.*'learning_rate' is given twice.*first at line 5"):
        load_recipe(_recipe(tmp_path, text.replace("  beta: 0.04\n", "  learning_rate: 2.0e-6\n")))
    assert load_recipe(_recipe(tmp_path, text)).grpo["learning_rate"] == 1e-6


def test_set_of_a_whole_section_is_refused_unless_it_says_replace(tmp_path):
    from medrl.train.recipes import RecipeError, load_recipe

    with pytest.raises(RecipeError, match=r"would replace the whole grpo section and drop its \d+ values .*!replace"):
        load_recipe("grpo", overrides=["grpo={}"])
    with pytest.raises(RecipeError, match="would replace the whole algorithm.mrpo section"):
        load_recipe("mrpo", overrides=["algorithm.mrpo={tau: 0.5}"])
    with pytest.raises(RecipeError, match="given twice"):
        load_recipe("grpo", overrides=["grpo.learning_rate={a: 1, a: 2}"])
    kept = load_recipe("grpo", overrides=["grpo=!replace {learning_rate: 1.0e-6}"]).grpo
    assert kept["learning_rate"] == 1e-6 and "beta" not in kept  # replaced on purpose
    assert load_recipe("grpo", overrides=["grpo.beta=0.0"]).grpo["beta"] == 0.0


@pytest.mark.parametrize("argv, said", [
    (["--set", "grpo.seed=-1"], "grpo.seed: -1 is not a seed the trainer takes"),
    (["--set", f"grpo.seed={2 ** 32}"], "grpo.seed: 4294967296 is not a seed"),
    (["--set", "grpo.data_seed=-3"], "grpo.data_seed: -3"),
])
def test_values_the_trainer_rejects_are_refused_by_the_preflight(argv, said, capsys):
    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    assert main(["train", "--recipe", "grpo", "--dry-run", *argv]) == Exit.USAGE
    err = capsys.readouterr().err
    assert said in err and "preflight: FAILED (exit 2)" in err
    assert main(["train", "--recipe", "grpo", "--dry-run", "--set", f"grpo.seed={2 ** 32 - 1}", "--data-dir",
                 "/nonexistent"]) != Exit.USAGE  # the largest seed passes this check


@pytest.mark.parametrize("command", ["train", "eval"])
def test_limit_below_one_is_refused(command, capsys):
    from medrl.cli import main

    args = ["--recipe", "grpo", "--dry-run"] if command == "train" else ["--model", "tiny", "--data", "vqa_rad"]
    with pytest.raises(SystemExit) as exc:
        main([command, *args, "--limit", "-5"])
    assert exc.value.code == 2
    assert "--limit: expected a whole number of records >= 1, got '-5'" in capsys.readouterr().err


# ------------------------------------------------------------------ alias bombs and unsafe tags
def _bomb(levels: int = 9, flow: bool = False) -> str:
    """Nine levels of nine aliases ("billion laughs"): 9^9 values once expanded."""
    names = "abcdefghijk"[:levels]
    parts = [f"&{names[0]} [" + ", ".join(["lol"] * 9) + "]"]
    parts += [f"&{c} [" + ", ".join([f"*{names[i]}"] * 9) + "]" for i, c in enumerate(names[1:])]
    if flow:
        return "[" + ", ".join(parts) + "]"
    return "".join(f"{c}: {p}\n" for c, p in zip(names, parts))


def test_an_alias_bomb_is_refused_in_bounded_time_naming_the_file():
    import time

    from medrl.common.strict_yaml import YAMLBudgetError

    t = time.monotonic()
    with pytest.raises(YAMLBudgetError, match=r"bomb.yaml: the YAML expands to more than 100,000 values"):
        load(_bomb(), name="bomb.yaml")
    with pytest.raises(YAMLBudgetError, match="recursive alias"):
        load("a: &a [1, *a]\n")
    with pytest.raises(YAMLBudgetError, match="nested too deeply"):
        load("[" * 5000 + "]" * 5000)
    with pytest.raises(YAMLBudgetError, match="characters of YAML"):
        load("a: 1\n", max_chars=3)
    assert time.monotonic() - t < 2.0
    # aliases a config really uses stay fine, shared as yaml.safe_load shares them
    small = load(_bomb(levels=3))
    assert small == yaml.safe_load(_bomb(levels=3)) and len(small["c"]) == 9


def test_alias_bombs_in_set_and_a_recipe_file_are_refused_fast(tmp_path, capsys):
    import time

    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    t = time.monotonic()
    assert main(["train", "--recipe", "grpo", "--dry-run", "--set", f"grpo.seed={_bomb(flow=True)}"]) == Exit.USAGE
    assert "expands to more than 100,000 values" in capsys.readouterr().err
    recipe = _recipe(tmp_path, "name: mine\nrewards:\n  - name: format\n" + _bomb().replace("a: &a", "x: &a", 1))
    assert main(["train", "--recipe", str(recipe), "--dry-run"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert f"{recipe}" in err and "expands to more than" in err and "Traceback" not in err
    assert time.monotonic() - t < 4.0  # the recipe loads twice, with the CLI's own start-up


@pytest.mark.parametrize("content, said", [
    (_bomb(), "expands to more than 100,000 values"),
    ("recipe: !!python/object/apply:os.system ['touch PWNED']\n", "could not determine a constructor"),
    ("recipe: {a: 1\n", "not a readable settings file"),
    (b"\xff\xfe garbage", "cannot be read"),
    ("- just\n- a list\n", "expected a YAML mapping"),
])
def test_a_run_folder_whose_config_yaml_cannot_be_read_gets_one_line_naming_it(tmp_path, capsys, monkeypatch,
                                                                                content, said):
    """Resuming (or dry-running against) a run folder reads its config.yaml first: a bomb, a
    python tag (never run), broken YAML, bytes that are no text and a list are one line naming
    the file and exit 2, in bounded time, not a traceback or a hang."""
    import time

    from medrl.cli import main
    from medrl.common.exit_codes import Exit

    from PIL import Image

    monkeypatch.chdir(tmp_path)
    Image.new("RGB", (16, 16)).save(tmp_path / "ct.png")
    (tmp_path / "d.jsonl").write_text('{"id": "a", "images": ["ct.png"], "question": "Which organ?", "answer": "liver"}\n')
    run = tmp_path / "run"
    (run / "checkpoint-1").mkdir(parents=True)
    cfg = run / "config.yaml"
    cfg.write_bytes(content if isinstance(content, bytes) else content.encode())
    t = time.monotonic()
    for extra in ([], ["--dry-run"]):
        code = main(["train", "--recipe", "grpo", "--model", "tiny", "--out", str(run), "--data",
                     f"jsonl:{tmp_path / 'd.jsonl'}", "--set", "data.require_gold_reasoning=false", *extra])
        err = capsys.readouterr().err
        assert code == Exit.USAGE, err
        assert f"{cfg}" in err and said in err and "Traceback" not in err
    assert time.monotonic() - t < 4.0
    assert not (tmp_path / "PWNED").exists() and not (run / "PWNED").exists()
