"""Each method file: its registry name, its typed config (the papers' values, read from the
reward that uses them) that configures the run's rewards, and the refusals of compose()."""

from __future__ import annotations

import pytest

from medrl.methods.armed import ADAPTIVE_REWARDS, ARMed, ARMedConfig
from medrl.methods.base import HOOK_ORDER, MethodConflict, active_method_names, compose, get_method, option_default
from medrl.methods.capo import CAPO
from medrl.methods.medix_r1 import MediXR1
from medrl.methods.mrpo import MRPO
from medrl.methods.stepgrpo import StepGRPO
from medrl.train.recipes import RecipeError, build_reward_funcs, load_recipe, reward_options


def test_registry_names_the_method_classes():
    assert get_method("medix_r1") is MediXR1 and get_method("stepgrpo") is StepGRPO and get_method("armed") is ARMed
    with pytest.raises(KeyError, match="known"):
        get_method("no_such_method")


def test_papers_values_come_from_the_rewards():
    # MediX-R1 Sec. 2.3: cosine threshold 0.8; StepGRPO Eq. 2: alpha 0.1; ARMed Eq. 3, 4, 14 and Table 3;
    # CAPO Eq. 1-3: 0.8 / 0.1 / 0.1, tau 0.3; MRPO Eq. 2 (0.25, 0.5) and Eq. 4 (K_min 4, K_max 10)
    assert MediXR1().config.embed_threshold == pytest.approx(0.8)
    assert StepGRPO().config.alpha == pytest.approx(0.1)
    cfg = ARMed().config
    assert (cfg.lambda1, cfg.lambda2, tuple(cfg.gammas)) == (0.5, 0.2, (0.4, 0.4, 0.2))
    assert (cfg.rho, cfg.max_history, cfg.percentile, cfg.max_delta, cfg.t_max) == (0.8, 2000, 50.0, 0.01, 0.995)
    c = CAPO().config
    assert (c.r_dar, c.r_cdr, c.r_pcr, c.tau) == (0.8, 0.1, 0.1, 0.3)
    m = MRPO().config
    assert (m.lambda1, m.lambda2, m.k_min, m.k_max) == (0.25, 0.5, 4, 10)
    from medrl.rewards.armed import ArmedReward

    assert option_default(ArmedReward, "lambda1") == cfg.lambda1  # written once, in the reward
    with pytest.raises(Exception, match="lambda1"):
        ARMedConfig(lambda1=1.5)  # outside [0, 1]
    with pytest.raises(Exception, match="k_min"):
        MRPO({"k_min": 11})  # above k_max


@pytest.mark.parametrize("recipe, override, reward, option, value", [
    ("armed", "algorithm.armed.lambda1=0.3", "armed", "lambda1", 0.3),
    ("armed", "algorithm.armed.rho=0.7", "armed", "rho", 0.7),
    ("medix_r1", "algorithm.medix_r1.embed_threshold=0.7", "medix_embed", "threshold", 0.7),
    ("stepgrpo", "algorithm.stepgrpo.alpha=0.2", "steprar", "alpha", 0.2),
    ("stepgrpo", "algorithm.stepgrpo.min_reasoning_steps=3", "steprvr", "min_reasoning_steps", 3),
    ("capo", "algorithm.capo.r_dar=0.5", "capo_perception", "r_dar", 0.5),
    ("mrpo", "algorithm.mrpo.k_max=8", "mrpo_length", "k_max", 8),
])
def test_every_config_configures_the_rewards_of_the_run(recipe, override, reward, option, value):
    r = load_recipe(recipe, overrides=[override], check_trl=False)
    opts = dict(zip([x["name"] for x in r.rewards], reward_options(r)))
    assert opts[reward][option] == value
    if reward == "armed":  # the stateful reward object: its adaptive state got the value
        fn = build_reward_funcs(r)[0][[x["name"] for x in r.rewards].index("armed")]
        target = fn.semantic.adapt["cosine"] if option == "rho" else fn
        assert getattr(target, option) == value


def test_a_setting_lives_in_one_place(tmp_path):
    with pytest.raises(RecipeError, match=r"rewards\[1\]\.options\.threshold: set by the medix_r1 method's config: "
                                          r"write it as algorithm\.medix_r1\.embed_threshold"):
        load_recipe("medix_r1", overrides=["rewards=[{name: format}, {name: medix_embed, options: {threshold: 0.7}}]",
                                           "algorithm.log_rewards.answer=null"], check_trl=False)
    # a reward that switches its method on follows the same rule in any recipe
    (tmp_path / "r.yaml").write_text("name: r\nrewards:\n  - {name: medix_embed, options: {threshold: 0.7}}\n")
    with pytest.raises(RecipeError, match="one place per setting"):
        load_recipe(tmp_path / "r.yaml", check_trl=False)
    (tmp_path / "r.yaml").write_text("name: r\nrewards:\n  - {name: medix_embed}\nalgorithm:\n"
                                     "  medix_r1: {embed_threshold: 0.7}\n")
    assert reward_options(load_recipe(tmp_path / "r.yaml", check_trl=False)) == [{"threshold": 0.7}]


def test_compose_refuses_what_cannot_run_together():
    assert [m.name for m in compose(["mrpo", "capo", "armed", "medix_r1"])] == ["mrpo", "capo", "armed", "medix_r1"]
    with pytest.raises(MethodConflict, match="twice"):
        compose(["capo", "capo"])
    with pytest.raises(MethodConflict, match="unknown|known"):
        compose(["mrpoo"])


def test_methods_switched_on_by_the_recipe():
    assert active_method_names({"advantage": "mrpo", "capo": {"t": 50}}) == ["mrpo", "capo"]
    assert "armed" in active_method_names({}, reward_names=[ADAPTIVE_REWARDS[0]])
    assert active_method_names({"stepgrpo": {"alpha": 0.0}}) == ["stepgrpo"]
    assert active_method_names({}, listed=["stepgrpo"]) == ["stepgrpo"]
    assert HOOK_ORDER[0] == "setup" and "advantage_inputs" in HOOK_ORDER
