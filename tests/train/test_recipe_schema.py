"""Recipe checks added with the methods: the ``methods`` list, range checks naming the field,
defaults taken from the methods' typed configs."""

from __future__ import annotations

import pytest

from medrl.train.recipes import RecipeError, load_recipe, resolve_algorithm


@pytest.mark.parametrize("override, match", [
    ("grpo.temperature=0", r"grpo\.temperature: must be > 0, got 0"),
    ("grpo.temperature=-0.5", r"grpo\.temperature: must be > 0"),
    ("grpo.learning_rate=0", r"grpo\.learning_rate: must be > 0"),
    ("grpo.num_generations=1", r"grpo\.num_generations: must be >= 2"),
    ("grpo.per_device_train_batch_size=0", r"grpo\.per_device_train_batch_size: must be > 0"),
    ("batch.global_prompts=0", r"batch\.global_prompts: Input should be greater than 0"),
    ("sft.learning_rate=-1", r"sft\.learning_rate: must be > 0"),
])
def test_out_of_range_values_are_refused_naming_the_field(override, match):
    with pytest.raises(RecipeError, match=match):
        load_recipe("mrpo", overrides=[override])


def test_reward_weights_must_be_numbers_with_one_non_zero(tmp_path):
    base = "name: w\nrewards:\n  - {name: format, weight: %s}\n  - {name: modality, weight: %s}\n"
    (tmp_path / "bool.yaml").write_text(base % ("true", "0.5"))
    with pytest.raises(RecipeError, match=r"rewards\[0\]\.weight: .*must be a number, not a boolean"):
        load_recipe(tmp_path / "bool.yaml")
    (tmp_path / "zero.yaml").write_text(base % ("0", "0.0"))
    with pytest.raises(RecipeError, match="rewards: every reward weight is 0"):
        load_recipe(tmp_path / "zero.yaml")
    (tmp_path / "ok.yaml").write_text(base % ("0", "1"))
    assert [r["weight"] for r in load_recipe(tmp_path / "ok.yaml").rewards] == [0.0, 1.0]


def test_methods_list_is_checked_and_selects_the_advantage(tmp_path):
    from medrl.methods.capo import CAPOConfig

    (tmp_path / "mine.yaml").write_text("name: mine\nmethods: [mrpo, capo]\nrewards:\n  - {name: mrpo_answer}\n"
                                        "  - {name: mrpo_process}\n  - {name: capo_perception}\n")
    r = load_recipe(tmp_path / "mine.yaml")
    assert r.methods == ["mrpo", "capo"] and r.algorithm["advantage"] == "mrpo"
    assert r.algorithm["capo"] == CAPOConfig().model_dump()  # listed: on, with its defaults
    assert r.algorithm["capo"]["t"] == 100 and r.algorithm["capo"]["r_dar"] == 0.8
    with pytest.raises(RecipeError, match=r"methods\[1\]: unknown method 'capoo'; did you mean 'capo'"):
        load_recipe("capo", overrides=["methods=[mrpo, capoo]"])
    with pytest.raises(RecipeError, match="listed twice"):
        load_recipe("capo", overrides=["methods=[capo, capo]"])
    with pytest.raises(RecipeError, match="algorithm.advantage: 'grpo', but the method providing 'mrpo' is on"):
        load_recipe("combined", overrides=["algorithm.advantage=grpo"])
    with pytest.raises(RecipeError, match="algorithm.advantage: 'mrpo': it takes its inputs from the method 'mrpo'"):
        load_recipe("capo", overrides=["methods=[capo]", "algorithm.advantage=mrpo"])


def test_the_algorithm_form_keeps_working_and_defaults_come_from_the_typed_configs():
    from medrl.methods.capo import CAPOConfig
    from medrl.methods.mrpo import MRPOConfig

    alg = resolve_algorithm({"capo": True})  # a section switches its method on, with its defaults
    assert alg["mrpo"] is None and alg["capo"] == CAPOConfig().model_dump()
    assert alg["advantage"] == "grpo" and alg["unscorable"] == "exclude"
    alg = resolve_algorithm({"advantage": "mrpo"})  # naming the estimator switches its method on
    assert alg["mrpo"] == MRPOConfig().model_dump() and alg["capo"] is None
    # a section of a method that provides the estimator only configures it: the advantage is the
    # run's choice (the effects harness sets algorithm.mrpo.* on every recipe it runs)
    grpo = load_recipe("grpo", overrides=["algorithm.mrpo.tau=0.9"], check_trl=False)
    assert grpo.algorithm["advantage"] == "grpo" and grpo.algorithm["mrpo"]["tau"] == 0.9
    from medrl.train.recipes import run_methods

    assert run_methods(grpo) == []
    mrpo = load_recipe("mrpo")
    assert mrpo.methods == [] and mrpo.algorithm["advantage"] == "mrpo"
    assert mrpo.algorithm["mrpo"]["tau"] == MRPOConfig.model_fields["tau"].default


def test_dry_run_lines_list_the_methods_in_hook_order_with_their_configs():
    from medrl.train.recipe_help import describe_methods

    lines = describe_methods(load_recipe("combined", check_trl=False))
    assert [ln.split()[0] for ln in lines[1:]] == ["mrpo", "capo", "armed", "medix_r1"]
    assert "algorithm.mrpo: tau=0.6" in lines[1] and "configures rewards mrpo_answer, mrpo_process" in lines[1]
    assert ("algorithm.medix_r1: embed_threshold=0.8, kl_clamp=None, mean_band=None, best_checkpoint=None; "
            "configures rewards format, modality") in lines[4]
    assert describe_methods(load_recipe("grpo", check_trl=False))[0].endswith("none (TRL's GRPO with the recipe's rewards)")


def test_yaml_no_for_a_string_field_is_the_string_no():
    """YAML 1.1 reads `no` as False; a TRL field typed str (the save/eval strategies) means "no",
    while a bool field keeps its bool."""
    from medrl.train.recipes import load_recipe

    r = load_recipe("grpo", overrides=["grpo.save_strategy=no", "grpo.use_vllm=no"])
    assert r.grpo["save_strategy"] == "no" and r.grpo["use_vllm"] is False
