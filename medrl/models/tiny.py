"""Offline builder for tiny Qwen2.5-VL-architecture models (tests, demos, CI).

The model is ``Qwen2_5_VLForConditionalGeneration`` built from a config with random weights
(well under a million parameters at the defaults), a small vision tower on small images (at most
``image_size`` x ``image_size`` pixels, so at most ``(image_size / 28) ** 2`` image tokens), a
byte-level BPE tokenizer trained with ``tokenizers`` on the given texts, and the image-only
processor of :mod:`medrl.models.processors`. It knows nothing about medicine; it exists so that
every code path (generation, rewards, GRPO, SFT, evaluation) runs end to end in seconds, offline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterable

from medrl.models.chat_template import chatml_template

# Qwen-style special tokens (same strings as the Qwen2/2.5-VL vocabularies).
PAD_TOKEN = "<|endoftext|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
VISION_START, VISION_END = "<|vision_start|>", "<|vision_end|>"
IMAGE_PAD, VIDEO_PAD = "<|image_pad|>", "<|video_pad|>"
SPECIAL_TOKENS = [PAD_TOKEN, IM_START, IM_END, VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD]
# The rollout format's tags are whole tokens (not special: decoding keeps them).
FORMAT_TOKENS = ["<think>", "</think>", "<answer>", "</answer>"]

# Qwen's ChatML layout with Qwen's vision placeholders (see medrl.models.chat_template).
CHAT_TEMPLATE = chatml_template("<|vision_start|><|image_pad|><|vision_end|>")

# A small built-in corpus (our own sentences) so the tokenizer has sensible merges for the
# words that appear in medical VQA prompts and answers.
DEFAULT_TEXTS = [
    "You are a careful medical assistant. Look at the image and answer the question.",
    "Think step by step inside <think> </think> and give the final answer inside <answer> </answer>.",
    "<think>The image is an axial CT of the chest. The left lung shows a rounded opacity.</think>"
    "<answer>yes</answer>",
    "<think>This is a frontal chest x-ray. The heart size is normal and the lungs are clear."
    "</think><answer>no</answer>",
    "<think>The MRI of the brain shows a hyperintense lesion in the right temporal lobe.</think>"
    "<answer>right temporal lobe</answer>",
    "Is there evidence of a pneumothorax on this radiograph?",
    "Which organ is abnormal in this image? The liver contains a hypodense mass.",
    "What imaging modality was used? CT, MRI, X-ray, ultrasound, or pathology slide.",
    "Is the abnormality located in the left or the right kidney?",
    "The gallbladder is distended with a thickened wall, consistent with cholecystitis.",
    "There is a small pleural effusion at the right costophrenic angle.",
    "The ventricles are enlarged, which suggests hydrocephalus.",
    "The histology slide shows glands lined by atypical columnar cells.",
    "No fracture is seen; the cortical outline of the femur is intact.",
    "Cardiomegaly is present with a cardiothoracic ratio above one half.",
    "The spleen is enlarged and the pancreas appears normal.",
    "Are the lungs hyperinflated? Yes, the diaphragm is flattened.",
    "What is the plane of this image? Axial, coronal or sagittal.",
    "The mass enhances after contrast and compresses the adjacent bowel.",
    "Answer: yes. Answer: no. The answer is the left lung.",
    "Modality: CT. Organ: chest. Finding: nodule. Location: upper lobe.",
    "Step 1: identify the modality. Step 2: locate the organ. Step 3: describe the finding.",
    "The colon, the small bowel, the bladder and the prostate are visible on the pelvic scan.",
    "Edema, hemorrhage, infarction, calcification, consolidation and atelectasis.",
]


def _train_tokenizer(texts: list[str], vocab_size: int):
    """Byte-level BPE trained by ``tokenizers`` (no unknown tokens: all 256 bytes are in it)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in FORMAT_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
        # The Qwen processors look these up by attribute.
        extra_special_tokens={"image_token": IMAGE_PAD, "video_token": VIDEO_PAD},
    )
    return fast


def build_tiny_vlm(
    out_dir: str | Path,
    texts: Iterable[str] | None = None,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
    *,
    image_size: int = 56,
    vocab_size: int = 2048,
) -> Path:
    """Build and save a tiny random Qwen2.5-VL model with a trained tokenizer; return the folder.

    Args:
        out_dir: folder to write (created; existing model files in it are overwritten).
        texts: text to train the BPE tokenizer on (e.g. the questions and answers of a data
            set); the built-in medical sentences and the format tags are always added.
        hidden_size: language model width (4 heads of ``hidden_size // 4``; must be divisible
            by 16 so the multimodal rotary sections split evenly).
        num_layers: language model layers (the vision tower has 2 blocks of width 32).
        seed: torch seed for the random weights (same seed and texts -> same model).
        image_size: largest image side in pixels after resizing (multiple of 28); images are
            resized to at most ``image_size**2`` pixels, giving at most ``(image_size/28)**2``
            image tokens (56 -> 4 tokens, 112 -> 16 tokens).
        vocab_size: BPE vocabulary size target (smaller if the texts are too short).

    The folder loads offline with :func:`medrl.models.load_policy`, with TRL's trainers given
    the path (after ``import medrl.models``) and with plain ``AutoProcessor`` /
    ``AutoModelForImageTextToText`` given ``trust_remote_code=True`` (processor code shipped as
    ``processing_medrl.py``).
    """
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    from medrl.models import processors

    if hidden_size % 16:
        raise ValueError(f"build_tiny_vlm: hidden_size must be a multiple of 16, got {hidden_size}")
    if image_size % 28 or image_size < 28:
        raise ValueError(f"build_tiny_vlm: image_size must be a positive multiple of 28, got {image_size}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    corpus = list(DEFAULT_TEXTS) + [t for t in (texts or []) if isinstance(t, str) and t.strip()]
    tokenizer = _train_tokenizer(corpus, vocab_size)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}

    head_dim = hidden_size // 4
    half = head_dim // 2  # rotary frequencies, split over (temporal, height, width)
    mrope = [half - 2 * (half // 3), half // 3, half // 3]
    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=hidden_size,
            intermediate_size=hidden_size * 2,
            num_hidden_layers=num_layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope},
            bos_token_id=None,
            eos_token_id=ids[IM_END],
            pad_token_id=ids[PAD_TOKEN],
            tie_word_embeddings=True,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=hidden_size,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=56,
            fullatt_block_indexes=[1],
        ),
        image_token_id=ids[IMAGE_PAD],
        video_token_id=ids[VIDEO_PAD],
        vision_start_token_id=ids[VISION_START],
        vision_end_token_id=ids[VISION_END],
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = [ids[IM_END], ids[PAD_TOKEN]]
    model.generation_config.pad_token_id = ids[PAD_TOKEN]
    model.generation_config.bos_token_id = None
    model.generation_config.do_sample = False

    image_processor = Qwen2VLImageProcessorPil(
        size={"shortest_edge": 28 * 28, "longest_edge": image_size * image_size},
        patch_size=14,
        merge_size=2,
        temporal_patch_size=2,
    )
    processor = processors.ImageOnlyQwen2_5_VLProcessor(
        image_processor=image_processor, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    ship_processor_code(out, "ImageOnlyQwen2_5_VLProcessor")
    return out


def ship_processor_code(out: Path, class_name: str) -> None:
    """Copy the processor module into ``out`` and point ``auto_map`` at it (trust_remote_code)."""
    from medrl.models import processors

    shutil.copyfile(processors.__file__, out / "processing_medrl.py")
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        path = out / name
        if not path.is_file():
            continue
        cfg = json.loads(path.read_text())
        if name == "processor_config.json" or "processor_class" in cfg:
            cfg["processor_class"] = class_name
            cfg.setdefault("auto_map", {})["AutoProcessor"] = f"processing_medrl.{class_name}"
            path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
