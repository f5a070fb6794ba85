"""Fixtures shared by the trainer tests of this folder."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    """A tiny one-layer Qwen2 text policy with a tokenizer trained on medrl's default texts,
    saved to a folder (one per test module)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from medrl.models.tiny import DEFAULT_TEXTS, _train_tokenizer

    root = tmp_path_factory.mktemp("policy")
    tok = _train_tokenizer(DEFAULT_TEXTS, 400)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                         max_position_embeddings=256, pad_token_id=tok.pad_token_id,
                                         eos_token_id=tok.eos_token_id, tie_word_embeddings=True))
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(root)
    tok.save_pretrained(root)
    return root
