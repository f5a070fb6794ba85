"""Each method file: its registry name, its typed config (the papers' values, read from the
reward that uses them), the TRL options of the baselines, and the refusals of compose()."""

from __future__ import annotations

import pytest

from medrl.methods.armed import ADAPTIVE_REWARDS, ARMed, ARMedConfig
from medrl.methods.base import HOOK_ORDER, MethodConflict, active_method_names, compose, get_method, option_default
from medrl.methods.baselines import DAPO, GSPO, Baseline
from medrl.methods.medix_r1 import MediXR1
from medrl.methods.stepgrpo import StepGRPO


def test_registry_names_the_method_classes():
    assert get_method("medix_r1") is MediXR1 and get_method("stepgrpo") is StepGRPO and get_method("armed") is ARMed
    with pytest.raises(KeyError, match="known"):
        get_method("no_such_method")


def test_papers_values_come_from_the_rewards():
    # MediX-R1 Sec. 2.3: cosine threshold 0.8; StepGRPO Eq. 2: alpha 0.1; ARMed Eq. 3, 4, 14
    assert MediXR1().config.embed_threshold == pytest.approx(0.8)
    assert StepGRPO().config.alpha == pytest.approx(0.1)
    cfg = ARMed().config
    assert (cfg.lambda1, cfg.lambda2, tuple(cfg.gammas)) == (0.5, 0.2, (0.4, 0.4, 0.2))
    from medrl.rewards.armed import ArmedReward

    assert option_default(ArmedReward, "lambda1") == cfg.lambda1  # written once, in the reward
    with pytest.raises(Exception, match="lambda1"):
        ARMedConfig(lambda1=1.5)  # outside [0, 1]


def test_baselines_are_trl_options_only():
    assert issubclass(DAPO, Baseline) and issubclass(GSPO, Baseline)
    assert DAPO().grpo_options() == {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.0,
                                     "mask_truncated_completions": True}
    assert GSPO().grpo_options()["importance_sampling_level"] == "sequence"


def test_compose_refuses_what_cannot_run_together():
    assert [m.name for m in compose(["mrpo", "capo", "armed", "medix_r1"])] == ["mrpo", "capo", "armed", "medix_r1"]
    with pytest.raises(MethodConflict, match="twice"):
        compose(["capo", "capo"])
    with pytest.raises(MethodConflict, match="unknown|known"):
        compose(["mrpoo"])


def test_methods_switched_on_by_the_recipe():
    assert active_method_names({"advantage": "mrpo", "capo": {"tau": 0.3}}) == ["mrpo", "capo"]
    assert "armed" in active_method_names({}, reward_names=[ADAPTIVE_REWARDS[0]])
    assert active_method_names({}, listed=["stepgrpo"]) == ["stepgrpo"]
    assert HOOK_ORDER[0] == "setup" and "token_advantages" in HOOK_ORDER
