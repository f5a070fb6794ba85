"""The default policy: SmolLM2-135M-Instruct (GGUF) inside a LLaVA-style VLM. Slow: dequantising
the GGUF and building the 143M-parameter model takes about a minute or two on 2 CPU cores."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def test_default_policy_matches_gguf_and_sees_images(tmp_path):
    from PIL import Image

    from medrl.models import build_default_policy, generate, load_policy
    from medrl.models.default_policy import load_smollm2

    try:
        lm, tok = load_smollm2()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    prompt = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    enc = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        ref = lm(**enc).logits
    vocab = ref.shape[-1]

    path = build_default_policy(tmp_path / "default", base=(lm, tok))
    meta = json.loads((path / "medrl_policy.json").read_text())
    assert meta["num_image_tokens"] == 49 and meta["train_in_full"] == ["vision_tower", "multi_modal_projector"]
    cfg = json.loads((path / "config.json").read_text())
    assert "quantization_config" not in cfg["text_config"]

    model, processor = load_policy(path)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(143e6, rel=0.02)
    with torch.no_grad():
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    assert out.shape[-1] == vocab + 1  # + <image>
    assert torch.allclose(out[..., :vocab], ref, atol=1e-4)

    # an image (grayscale, like most scans) becomes 49 placeholder tokens and reaches the logits
    img = Image.fromarray((np.random.RandomState(0).rand(300, 200) * 255).astype("uint8"), mode="L")
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe the image."}]}]
    text = processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    batch = processor(text=[text], images=[img], return_tensors="pt")
    assert int((batch["input_ids"] == model.config.image_token_index).sum()) == 49
    with torch.no_grad():
        a = model(**batch).logits[0, -1]
        batch["pixel_values"] = torch.zeros_like(batch["pixel_values"])
        b = model(**batch).logits[0, -1]
    assert not torch.allclose(a, b)

    # real language ability: a text question gets a sensible answer
    answer = generate(model, processor, ["What is the capital of France?"], max_new_tokens=12, progress=False)[0]
    assert "Paris" in answer

    # LoRA: language-model adapters, and the untrained vision tower + projector trained in full
    lora_model, _ = load_policy(path, lora=True)
    names = [n for n, p in lora_model.named_parameters() if p.requires_grad]
    assert any("lora_A" in n and "language_model" in n for n in names)
    assert any("vision_tower" in n and "lora_" not in n for n in names)
    assert any("multi_modal_projector" in n and "lora_" not in n for n in names)
