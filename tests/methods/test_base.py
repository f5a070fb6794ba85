"""The method registry, composition rules and the typed batch (medrl.methods.base)."""

from __future__ import annotations

import dataclasses

import pytest

from medrl.methods import METHODS, MedBatch, Method, MethodConflict, active_method_names, compose


def test_every_paper_has_a_registered_method_with_a_typed_config_section():
    assert METHODS.names() == ["armed", "capo", "medix_r1", "mrpo", "stepgrpo"]
    for name in METHODS.names():
        cls = METHODS.get(name)
        assert cls.name == name and cls.paper and cls.section == name
        for field_name, f in cls.Config.model_fields.items():
            assert f.description, f"{name}.{field_name} has no help text"
        for reward in cls.rewards:  # every bound option names a field of the config
            assert set(cls.bound_options(reward).values()) <= set(cls.Config.model_fields), (name, reward)


def test_the_estimator_a_method_provides_is_looked_up_like_any_other():
    from medrl.advantages import ADVANTAGES, get_advantage_fn

    providers = {METHODS.get(n).advantage for n in METHODS.names()} - {None}
    assert providers == {"mrpo"} and providers <= set(ADVANTAGES.names())
    assert get_advantage_fn("mrpo") is ADVANTAGES.get("mrpo")


def test_compose_keeps_the_recipe_order_and_reads_the_configs():
    methods = compose(["capo", "mrpo", "armed"], {"mrpo": {"tau": 0.5}, "capo": {"t": 50}})
    assert [m.name for m in methods] == ["capo", "mrpo", "armed"]
    assert methods[1].config.tau == 0.5 and methods[1].config.shaping == "exponential"
    assert methods[0].config.t == 50 and methods[0].config.kind == "diffusion"


class OtherTokenCredit(Method):
    name = "other_credit"
    advantage = "other"


@pytest.mark.parametrize("names, match", [
    (["mrpo", OtherTokenCredit], r"\['mrpo', 'other_credit'\] both provide the advantage estimator"),
    (["mrpo", "mrpo"], "listed twice"),
    (["mrpp"], "unknown method 'mrpp'"),
    ([object()], "is not a medrl.methods.Method"),
])
def test_impossible_combinations_are_refused_with_the_reason(names, match):
    with pytest.raises(MethodConflict, match=match):
        compose(names)


def test_methods_follow_the_algorithm_section_when_the_recipe_lists_none():
    assert active_method_names({"advantage": "grpo", "capo": None}) == []
    assert active_method_names({"advantage": "mrpo", "capo": {"t": 100}}) == ["mrpo", "capo"]
    assert active_method_names({"advantage": "grpo"}, reward_names=["armed"]) == ["armed"]
    assert active_method_names({"advantage": "mrpo"}, ["capo"]) == ["capo"]  # a list is taken as it is


def test_batch_columns_are_the_names_the_rewards_read():
    from medrl.rewards.capo import CORRUPTED_COMPLETIONS

    fields = {f.name for f in dataclasses.fields(MedBatch)}
    assert set(MedBatch.COLUMNS) <= fields and CORRUPTED_COMPLETIONS in MedBatch.COLUMNS
    b = MedBatch(inputs=[{}, {}], corrupted_completions=["a", "b"], correct=[True, None])
    b.columns["majority"] = ["x", "y"]
    assert b.reward_columns() == {"corrupted_completions": ["a", "b"], "correct": [True, None],
                                  "majority": ["x", "y"]}
    b.columns["short"] = ["x"]
    with pytest.raises(ValueError, match="'short' has 1 values for 2 rows"):
        b.reward_columns()


def test_step_valid_reads_the_verdicts():
    from types import SimpleNamespace as V

    b = MedBatch(inputs=[{}] * 3, step_verdicts=[[V(valid=True), V(valid=False)], None, []])
    assert b.step_valid == [[True, False], None, []]
