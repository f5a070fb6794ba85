"""Help on every key of a recipe: the schema's fields and every method's config have help text,
``medrl recipes show NAME --explain`` prints it, and an error about a key carries it."""

from __future__ import annotations

import pytest

from medrl.train.recipe_help import explain, fields_without_help, model_fields, trl_help
from medrl.train.recipes import RecipeError, load_recipe


def test_every_field_of_the_recipe_schema_and_of_each_method_config_has_help():
    from medrl.train.recipe_schema import recipe_model

    keys = [k for k, _, _ in model_fields(recipe_model())]
    # the walk reaches the methods' sections and the nested sections
    assert {"algorithm.mrpo.tau", "algorithm.capo.r_dar", "algorithm.armed.rho", "algorithm.medix_r1.embed_threshold",
            "algorithm.stepgrpo.alpha", "data.prompt_style", "monitor.window", "algorithm.log_rewards.answer"} <= set(keys)
    assert fields_without_help() == []


def test_a_field_without_help_is_found(tmp_path):
    plugin = tmp_path / "nohelp.py"
    plugin.write_text("from medrl.methods import Method, MethodConfig\n\n\nclass Cfg(MethodConfig):\n    k: int = 1\n\n\n"
                      "class NoHelp(Method):\n    name = 'nohelp'\n    section = 'nohelp'\n    Config = Cfg\n")
    assert fields_without_help([f"{plugin}:NoHelp"]) == ["algorithm.nohelp.k"]


def test_explain_prints_each_key_with_its_value_and_help():
    lines = explain(load_recipe("capo_ablation_tau01", check_trl=False))
    text = "\n".join(lines)
    assert "  capo: (on)" in lines and "    tau = 0.1" in lines
    assert "R_PCR pays when R_DAR(o) - R_DAR(o~) > tau" in text  # the method config's help
    assert "    tau = 0.1  (from algorithm.capo.tau)" in lines  # where the reward option comes from
    assert "  beta = 0.01" in lines and trl_help("GRPOConfig")["beta"].split(".")[0] in text  # TRL's help
    assert "(off: armed, medix_r1, mrpo, stepgrpo" in text


def test_recipes_command_shows_and_explains(capsys):
    from medrl.cli import main

    assert main(["recipes", "show", "mrpo", "--explain", "--set", "algorithm.mrpo.strategy=soft"]) == 0
    out = capsys.readouterr().out
    assert "    strategy = soft" in out and "scaled by 0.5" in out
    assert main(["recipes", "show", "mrpo"]) == 0
    assert "advantage: mrpo" in capsys.readouterr().out
    assert main(["recipes", "list"]) == 0
    assert "combined" in capsys.readouterr().out


@pytest.mark.parametrize("override, match", [
    ("algorithm.mrpo.shaping=cubic", r"algorithm\.mrpo\.shaping: Input should be .*\[shaping: MRPO App\. D\.2"),
    ("algorithm.mrpo.shapng=linear", r"did you mean 'shaping'\? \(shaping: MRPO App\. D\.2"),
    ("data.limit=0", r"data\.limit: .*\[limit: train on the first N records only"),
])
def test_an_error_about_a_key_carries_its_help(override, match):
    with pytest.raises(RecipeError, match=match):
        load_recipe("mrpo", overrides=[override], check_trl=False)


def test_every_reward_option_monitor_and_dynamic_sampling_setting_and_stage_has_help():
    """fields_without_help also walks every registered reward's options, the settings of the
    monitor and of dynamic sampling, and the registered stage kinds."""
    import dataclasses

    from medrl.rewards import REWARDS
    from medrl.rewards.base import reward_options_of
    from medrl.train.dynamic_sampling import DynamicSamplingConfig
    from medrl.train.monitor.config import MonitorConfig
    from medrl.train.recipe_help import dataclass_help, reward_option_help

    assert fields_without_help() == []
    assert sum(len(reward_options_of(REWARDS.get(n))) for n in REWARDS.names()) >= 49
    assert all(reward_option_help(n, REWARDS.get(n)).get(o) for n in REWARDS.names()
               for o in reward_options_of(REWARDS.get(n)))
    assert len(dataclasses.fields(MonitorConfig)) >= 27 and all(dataclass_help(MonitorConfig).values())
    assert set(dataclass_help(DynamicSamplingConfig)) == {"enabled", "max_rounds", "mean_band"}


def test_explain_prints_every_reward_option_and_the_monitor_and_dynamic_sampling_settings():
    text = "\n".join(explain(load_recipe("stepgrpo", check_trl=False)))
    # a reward option the recipe leaves at its default is shown with the default and its help
    assert "    missing_key_steps = none  (default)" in text and "a record without key steps" in text
    # the monitor's settings, and dynamic sampling's, each with its help
    assert "    probe_gap_max = 0.3  (default)" in text and "training correctness exceeds the probe" in text
    assert "    max_rounds = 4  (default)" in text
    # the stage kinds, each with its help
    assert "  key_steps (key_steps)" in text and "the judge pre-extracts each record's key steps" in text


def test_demo_settings_have_help():
    import dataclasses

    from medrl.commands.demo_pipeline.settings import DemoConfig, settings_help

    helps = settings_help()
    assert set(helps) == {f.name for f in dataclasses.fields(DemoConfig)} and all(helps.values())
