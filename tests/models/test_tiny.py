"""The tiny builder's vision tower size: defaults unchanged, a larger tower builds and runs, and a
tokenizer trained on the phantom templates keeps their words whole."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_default_tower_is_unchanged_and_its_size_can_be_set():
    from medrl.models.families import get_family
    from medrl.models.tiny import _train_tokenizer, set_vision_size

    fam = get_family("qwen2_5_vl")
    tok = _train_tokenizer(["a b c"] * 4, 300, fam)
    ids = {t: tok.convert_tokens_to_ids(t) for t in fam.specials}
    config, _ = fam.build(tok, ids, 64, 2, 56)
    set_vision_size(config)  # nothing asked: nothing changes
    vc = config.vision_config
    assert (vc.depth, vc.hidden_size, vc.intermediate_size) == (2, 32, 64)
    set_vision_size(config, depth=3, width=64)
    assert (vc.depth, vc.hidden_size, vc.intermediate_size, vc.fullatt_block_indexes) == (3, 64, 128, [2])
    with pytest.raises(ValueError, match="multiple of 16"):
        set_vision_size(config, width=40)
    with pytest.raises(ValueError, match="vision_depth"):
        set_vision_size(config, depth=0)


def test_phantom_tiny_model_with_a_larger_tower_reads_a_phantom(tmp_path):
    import torch

    from medrl.data.prompts import build_prompt
    from medrl.data.sources.phantom import phantom_records
    from medrl.models.tiny import build_phantom_tiny_vlm
    from medrl.models import load_policy

    rec = phantom_records("train", 1, cache_dir=tmp_path / "ph")[0]
    path = build_phantom_tiny_vlm(tmp_path / "m", vision_depth=3, vision_width=48, image_size=56)
    vc = json.loads((path / "config.json").read_text())["vision_config"]
    assert (vc["depth"], vc["hidden_size"]) == (3, 48)
    model, processor = load_policy(str(path))
    assert processor.tokenizer.tokenize(" hypoechoic")[0] == "Ġhypoechoic"  # phantom words stay whole
    from PIL import Image

    text = processor.apply_chat_template(build_prompt(rec) + [
        {"role": "assistant", "content": [{"type": "text", "text": "<think>x</think><answer>CT</answer>"}]}],
        tokenize=False)
    enc = processor(text=[text], images=[Image.open(rec.image).convert("RGB")], return_tensors="pt")
    out = model(**enc, labels=enc["input_ids"])
    assert torch.isfinite(out.loss)
