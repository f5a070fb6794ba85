"""medrl.train.recipe_schema directly: every refused value named by its dotted key and reason,
"did you mean" hints, option checks against a function's signature, and type coercion."""

from __future__ import annotations

import pytest

from medrl.train import option_checks as O
from medrl.train import recipe_schema as S

BASE = {"rewards": [{"name": "format"}]}


def problems(raw):
    with pytest.raises(S.SchemaError) as e:
        S.validate_tree(raw)
    return e.value.problems


def test_dotted_keys_and_hints():
    assert S.dotted(("rewards", 2, "weight")) == "rewards[2].weight"
    assert S.dotted(("algorithm", "mrpo", "shaping")) == "algorithm.mrpo.shaping"
    assert S.did_you_mean("shapng", ["shaping", "scale"]) == "; did you mean 'shaping'?"
    assert S.did_you_mean("zzz", ["data"]) == ""


@pytest.mark.parametrize("raw, key, message", [
    ({**BASE, "daat": {}}, "daat", "unknown key 'daat'; did you mean 'data'?"),
    ({**BASE, "algorithm": {"mrpo": {"shapng": "x"}}}, "algorithm.mrpo.shapng",
     "unknown key 'shapng'; did you mean 'shaping'?"),
    ({"rewards": [{"name": "format", "weight": float("nan")}]}, "rewards[0].weight",
     "must be a finite number (NaN and infinity are refused), got nan"),
    ({"rewards": [{"name": "format", "weight": True}]}, "rewards[0].weight",
     "a reward weight must be a number, not a boolean (True)"),
    ({"rewards": [{"name": "formt"}]}, "rewards[0].name", "unknown reward 'formt'; did you mean 'format'?"),
    ({**BASE, "data": {"prompt_style": "xml"}}, "data.prompt_style", "got 'xml'"),
    ({**BASE, "algorithm": {"log_rewards": {"answer": "nope"}}}, "algorithm.log_rewards.answer",
     "'nope' is not among the recipe's rewards ['format']"),
    ({**BASE, "stages": [{"kind": "rl", "options": {"a": 1}}]}, "stages[0].options.a",
     "a 'rl' stage takes no options (its settings are the recipe's grpo section)"),
    ({}, "", "a recipe needs 'rewards' (RL) or an 'sft' section"),
])
def test_refused_values_name_the_key_and_the_reason(raw, key, message):
    found = dict(problems(raw))
    assert key in found, found
    assert message in found[key]


def test_schema_error_message_joins_every_problem():
    err = S.SchemaError([("a.b", "bad"), ("", "global")])
    assert str(err) == "a.b: bad; global" and err.problems == [("a.b", "bad"), ("", "global")]


def test_defaults_and_shorthands():
    m = S.validate_tree({**BASE, "algorithm": {"capo": True}, "sft": None})
    assert m.algorithm.capo is not None  # `capo: true` = CAPO with its config's defaults
    assert m.sft == {}  # an empty YAML section
    assert m.algorithm.advantage == "grpo" and m.batch.updates_per_rollout == 1
    assert S.validate_tree({**BASE, "algorithm": {"capo": False}}).algorithm.capo is None


def test_call_options_against_a_signature():
    def factory(a: int, b: float = 1.0, judge=None):
        return None

    found = O.check_call_options(factory, {"a": "x", "c": 1, "judge": "j"}, "rewards[0].options", skip=("judge",))
    assert found[0][0] == "rewards[0].options.a" and found[0][1].startswith("expected int, got 'x'")
    assert found[1] == ("rewards[0].options.c", "unknown option 'c'; allowed: a, b")
    assert O.check_call_options(lambda **kw: None, {"anything": 1}, "w") == []


def test_type_problem_and_coerce():
    assert O.type_problem(int, 3) is None and O.type_problem(None, object()) is None
    assert O.type_problem(float, float("inf")).startswith("must be a finite number")
    assert O.type_problem(int, "x").startswith("expected int, got 'x'")
    assert O.coerce(float, "1e-6") == 1e-06 and O.coerce(bool, "true") is True
    assert O.coerce(int, "abc") == "abc" and O.coerce(str, "5") == "5"  # left as written


def test_grpo_section_checked_against_trl_fields():
    out, found = O.check_trl_section({"beta": "0.04", "learning_rat": 1e-6, "num_generations": [8]},
                                     "GRPOConfig", "grpo")
    assert out == {"beta": 0.04}  # coerced from the YAML string
    keys = dict(found)
    assert keys["grpo.learning_rat"].startswith("not a field of trl.GRPOConfig; did you mean 'learning_rate'")
    assert keys["grpo.num_generations"].startswith("expected")
    _, found = O.check_trl_section({"seed": 1}, "GRPOConfig", "grpo", forbidden={"seed": "set by medrl"})
    assert found == [("grpo.seed", "set by medrl")]
