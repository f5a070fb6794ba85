"""MediX-R1 rewards (003_d5d6a0d73a50ab79.txt Sec. 2.3, 4.2, App. A.9): guards, gate, composite.

The embedding-scored path (cosine >= 0.8) is in test_rewards_semantic.py.
"""

import pytest

from medrl.rewards import REWARDS
from medrl.rewards.medix import (
    MEDIX_WEIGHTS,
    answer_guard,
    composite_reward,
    embedding_gate,
    is_placeholder,
    nonalnum_ratio,
    strip_punctuation,
)

PLACEHOLDER = ("The largest organ in the picture is [insert your answer here based on the medical "
               "reasoning provided above].")


def test_paper_exploits_are_zero():
    # Sec. 4.2: "<answer>-</answer>" against "Renal artery" (one character)
    assert answer_guard("-", "Renal artery") == 0.0
    # Sec. 4.2: the placeholder judged correct against "Lung"
    assert is_placeholder(PLACEHOLDER)
    assert answer_guard(PLACEHOLDER, "Lung") == 0.0
    for text in ["<your answer>", "{answer}", "Your answer here", "insert the final answer", "--", "?!", "..."]:
        assert answer_guard(text, "Renal artery") == 0.0, text


def test_guard_decided_and_undecided_cases():
    assert answer_guard(None, "lung") == 0.0       # no <answer> block
    assert answer_guard("  ", "lung") == 0.0       # empty
    assert answer_guard("Renal artery.", "renal artery") == 1.0  # '.' stripped, case ignored
    assert answer_guard("2", "2") == 1.0           # one-character exact match is not an exploit
    assert answer_guard("3", "2") == 0.0
    assert answer_guard("lung tissue", "lung") is None  # the judge / embedding decides
    assert answer_guard("left temporal lobe", "right temporal lobe") == 0.0  # side flipped
    assert answer_guard("Hydrocephalus: no", "Hydrocephalus") == 0.0  # negation after a colon
    assert answer_guard("**Hydrocephalus**", "hydrocephalus") == 1.0  # the reference up to markup
    assert not is_placeholder("left lower lobe [arrow]")


def test_embedding_gate_and_punctuation():
    assert nonalnum_ratio("C5-C6") == pytest.approx(1 / 5)
    # "(L)-?" has 5 non-space characters, 4 of them punctuation: 0.8 > 0.5
    assert nonalnum_ratio("(L)-?") == pytest.approx(0.8)
    assert embedding_gate("C5-C6") and not embedding_gate("(L)-?")
    assert not embedding_gate("a")  # below min_chars = 2
    assert not embedding_gate("lung", min_words=2)
    assert strip_punctuation("left-sided, lung.") == "left sided lung"


def test_composite_weights_and_hand_sum():
    assert sum(MEDIX_WEIGHTS.values()) == pytest.approx(1.0)
    # 0.1 + 0.9 * (0.575, 0.375, 0.05) = 0.10, 0.5175, 0.3375, 0.045
    assert MEDIX_WEIGHTS["llm"] == pytest.approx(0.9 * 0.575)
    # format 1, llm 1, embed 0, modality 1: 0.10 + 0.5175 + 0 + 0.045 = 0.6625
    assert composite_reward(1, 1, 0, 1) == pytest.approx(0.6625)
    # format 0, llm 1, embed 1, modality 0: 0.5175 + 0.3375 = 0.855
    assert composite_reward(0, 1, 1, 0) == pytest.approx(0.855)
    assert composite_reward(1, 1, 1, 1) == pytest.approx(1.0)
    assert composite_reward(1, None, 1, 1) is None


def test_medix_embed_callable_guards_without_model():
    # Every row here is decided by the guards or the gate, so no encoder is loaded.
    fn = REWARDS.get("medix_embed")()
    assert fn.__name__ == "medix_embed"
    comps = [f"<X_RAY><think>t</think><answer>{a}</answer>" for a in
             ["-", PLACEHOLDER, "Renal artery.", "(L)-?", "x"]] + ["no answer block"]
    refs = ["Renal artery", "Lung", "renal artery", "lung", None, "lung"]
    assert fn(["p"] * 6, comps, answer=refs) == [0.0, 0.0, 1.0, 0.0, None, 0.0]


def test_embed_threshold_is_inclusive(monkeypatch):
    # Sec. 2.3.2 (003_d5d6a0d73a50ab79.txt line 88): R_embed = I[cos >= tau], tau = 0.8; App. A.9
    # code: float(similarity >= threshold). A cosine of exactly 0.8 scores 1, just below scores 0.
    import medrl.common.embeddings
    from medrl.rewards.medix import embed_rewards

    seen = []

    def fake_cosine_pairs(a, b, model=None):
        seen.append((list(a), list(b)))
        return [0.8, 0.7999999, 0.95][:len(a)]

    monkeypatch.setattr(medrl.common.embeddings, "cosine_pairs", fake_cosine_pairs)
    out = embed_rewards(["pleural effusion", "left-sided mass", "pneumonia"],
                        ["effusion", "mass, left", "lung infection"])
    assert out == [1.0, 0.0, 1.0]
    # punctuation is stripped before embedding (Sec. 4.2 (ii)), one batched call
    # "pneumonia" is "lung infection" by the lexicon's identity: 1 without the embedding
    assert seen == [(["pleural effusion", "left sided mass"], ["effusion", "mass left"])]


def test_medix_guard_rejects_issue10_exploits_and_keeps_reordered_lists():
    from medrl.rewards.medix import answer_guard as guard

    ref = "Pleural effusion"
    for exploit in ["Pleural effusion, nodules, mass", "nodules or effusion", "no pleural effusion",
                    "Pleural effusion " * 3000, "pleural effusion is ruled out", "perhaps a pleural effusion"]:
        assert guard(exploit, ref) == 0.0, exploit
    assert guard("Pleural effusion" + "\u0301" * 50000, ref) == 0.0  # padding before the exact-match 1.0
    assert guard("Yes?", "Yes") == 0.0
    assert guard("spleen, liver", "Liver, spleen") is None       # same items, another order: the scorer decides
    assert guard("Fluid in the pleural space", ref) == 1.0       # the lexicon's identity: the reference itself
    assert guard("effusion in the pleura", ref) is None          # a paraphrase goes to the judge / embedding
