"""Tiny offline builds of every vision-language family the papers train (tests, CI, smoke runs).

Each family is its real transformers model class built from a small config with random
weights, a byte-level BPE tokenizer trained offline with the family's special tokens and token
attributes, the family's real processor class (the image-only subclass of
:mod:`medrl.models.processors` where the stock one demands a video processor), a PIL ("slow")
image processor (the fast ones need torchvision) and a chat template in the family's layout.

==============  ==========================================  =====================================
family          model class (papers)                        chat layout / image placeholder
==============  ==========================================  =====================================
qwen2_vl        Qwen2VLForConditionalGeneration (StepGRPO)  ChatML, <|vision_start|><|image_pad|>..
qwen2_5_vl      Qwen2_5_VLForConditionalGeneration (all)    ChatML, same
qwen3_vl        Qwen3VLForConditionalGeneration (MRPO,      ChatML, same (16 px patches,
                MediX-R1)                                   DeepStack, interleaved M-RoPE)
internvl        InternVLForConditionalGeneration (InternVL3 ChatML, <IMG_CONTEXT> -> <img>..</img>
                -hf layout; MRPO, ARMed)
llava_next      LlavaNextForConditionalGeneration (CAPO)    Mistral [INST] .. [/INST], <image>
smolvlm         SmolVLMForConditionalGeneration (MediX-R1)  User:/Assistant:<end_of_utterance>
gemma3          Gemma3ForConditionalGeneration (MedGemma)   <start_of_turn>user/model, <start_of_image>
==============  ==========================================  =====================================

The chat templates follow each family's turn layout but add no default system message and
wrap assistant turns in ``{% generation %}`` (assistant-only SFT loss); families without a
system role put it in front of the first user turn, as their own templates do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from medrl.models.chat_template import chatml_template, turn_template

FORMAT_TOKENS = ["<think>", "</think>", "<answer>", "</answer>"]


@dataclass(frozen=True)
class Family:
    """How to build one family's tiny model: tokens, template and a config/processor builder."""

    name: str
    model_class: str
    specials: tuple[str, ...]  # special tokens (first ids of the vocabulary)
    eos: str  # end of an assistant turn (generation stops here)
    pad: str
    chat_template: str
    build: Callable  # (tokenizer, ids, hidden, layers, image_size) -> (config, processor)
    bos: str | None = None
    token_attrs: dict = field(default_factory=dict)  # tokenizer attributes the processor reads
    extra_eos: tuple[str, ...] = ()  # more stop tokens for generation_config
    image_size: int = 56  # default largest image side (pixels)
    image_step: int = 28  # image_size must be a multiple of this
    papers: str = ""


# ------------------------------------------------------------------------------------ Qwen


QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>")
QWEN_ATTRS = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
              "vision_start_token": "<|vision_start|>", "vision_end_token": "<|vision_end|>"}
QWEN_TEMPLATE = chatml_template("<|vision_start|><|image_pad|><|vision_end|>")


def _mrope(head_dim: int) -> list[int]:
    half = head_dim // 2  # rotary frequencies, split over (temporal, height, width)
    return [half - 2 * (half // 3), half // 3, half // 3]


def _qwen_text(tok, ids, hidden, layers, **extra) -> dict:
    return dict(
        vocab_size=len(tok), hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        bos_token_id=None, eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=True, **extra,
    )


def _qwen_ids(ids) -> dict:
    return dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])


def _qwen_image_processor(patch: int, image_size: int):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    unit = patch * 2
    return Qwen2VLImageProcessorPil(size={"shortest_edge": unit * unit, "longest_edge": image_size * image_size},
                                    patch_size=patch, merge_size=2, temporal_patch_size=2)


def _build_qwen2_vl(tok, ids, hidden, layers, image_size):
    from transformers import Qwen2VLConfig

    from medrl.models import processors

    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": _mrope(hidden // 4)}
    config = Qwen2VLConfig(
        text_config=_qwen_text(tok, ids, hidden, layers, rope_parameters=rope),
        vision_config=dict(depth=2, embed_dim=32, hidden_size=hidden, mlp_ratio=2, num_heads=2,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2),
        tie_word_embeddings=True, **_qwen_ids(ids),
    )
    proc = processors.image_only_class("Qwen2VLProcessor")(
        image_processor=_qwen_image_processor(14, image_size), tokenizer=tok, chat_template=QWEN_TEMPLATE)
    return config, proc


def _build_qwen2_5_vl(tok, ids, hidden, layers, image_size):
    from transformers import Qwen2_5_VLConfig

    from medrl.models import processors

    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": _mrope(hidden // 4)}
    config = Qwen2_5_VLConfig(
        text_config=_qwen_text(tok, ids, hidden, layers, rope_parameters=rope),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                           fullatt_block_indexes=[1]),
        tie_word_embeddings=True, **_qwen_ids(ids),
    )
    proc = processors.image_only_class("Qwen2_5_VLProcessor")(
        image_processor=_qwen_image_processor(14, image_size), tokenizer=tok, chat_template=QWEN_TEMPLATE)
    return config, proc


def _build_qwen3_vl(tok, ids, hidden, layers, image_size):
    from transformers import Qwen3VLConfig

    from medrl.models import processors

    head_dim = hidden // 4
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": _mrope(head_dim),
            "mrope_interleaved": True}
    config = Qwen3VLConfig(
        text_config=_qwen_text(tok, ids, hidden, layers, head_dim=head_dim, rope_parameters=rope),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden,
                           patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                           num_position_embeddings=16, deepstack_visual_indexes=[0]),
        tie_word_embeddings=True, **_qwen_ids(ids),
    )
    proc = processors.image_only_class("Qwen3VLProcessor")(
        image_processor=_qwen_image_processor(16, image_size), tokenizer=tok, chat_template=QWEN_TEMPLATE)
    return config, proc


# ------------------------------------------------------------------------------------ InternVL


def _build_internvl(tok, ids, hidden, layers, image_size):
    from transformers import InternVLConfig
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    from medrl.models import processors

    seq = (image_size // 14) ** 2 // 4  # pixel shuffle with downsample_ratio 0.5
    config = InternVLConfig(
        vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                           image_size=[image_size, image_size], patch_size=[14, 14]),
        text_config=dict(model_type="qwen2", **_qwen_text(tok, ids, hidden, layers)),
        image_token_id=ids["<IMG_CONTEXT>"], image_seq_length=seq, downsample_ratio=0.5,
        tie_word_embeddings=True,
    )
    # InternVL tiles images into up to 12 crops (+ a thumbnail); one tile keeps the tiny model fast.
    image_processor = GotOcr2ImageProcessorPil(size={"height": image_size, "width": image_size},
                                               crop_to_patches=False, min_patches=1, max_patches=1)
    proc = processors.image_only_class("InternVLProcessor")(
        image_processor=image_processor, tokenizer=tok, image_seq_length=seq, chat_template=INTERNVL_TEMPLATE)
    return config, proc


INTERNVL_TEMPLATE = chatml_template("<IMG_CONTEXT>\n")


# ------------------------------------------------------------------------------------ LLaVA-NeXT


LLAVA_NEXT_TEMPLATE = turn_template(
    "<image>\n", prefix={"user": "[INST] ", "assistant": " "}, suffix={"user": " [/INST]", "assistant": "</s>"},
    bos="<s>", merge_system=True,
)


def _build_llava_next(tok, ids, hidden, layers, image_size):
    from transformers import LlavaNextConfig, LlavaNextProcessor
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    tile = image_size // 2  # one tile of the any-resolution grid; the base view has the same size
    pinpoints = [[tile, tile], [tile, 2 * tile], [2 * tile, tile], [2 * tile, 2 * tile]]
    config = LlavaNextConfig(
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=2, image_size=tile, patch_size=14,
                           projection_dim=32),
        text_config=dict(model_type="mistral", vocab_size=len(tok), hidden_size=hidden,
                         intermediate_size=hidden * 2, num_hidden_layers=layers, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=4096, sliding_window=None,
                         bos_token_id=ids["<s>"], eos_token_id=ids["</s>"], pad_token_id=ids["<pad>"]),
        image_token_index=ids["<image>"], image_grid_pinpoints=pinpoints,
        image_seq_length=(tile // 14) ** 2, vision_feature_select_strategy="default", vision_feature_layer=-2,
    )
    image_processor = LlavaNextImageProcessorPil(
        size={"shortest_edge": tile}, crop_size={"height": tile, "width": tile}, image_grid_pinpoints=pinpoints)
    proc = LlavaNextProcessor(image_processor=image_processor, tokenizer=tok, patch_size=14,
                              vision_feature_select_strategy="default", num_additional_image_tokens=1,
                              image_token="<image>", chat_template=LLAVA_NEXT_TEMPLATE)
    return config, proc


# ------------------------------------------------------------------------------------ SmolVLM


SMOLVLM_TEMPLATE = turn_template(
    "<image>", prefix={"system": "System: ", "user": "User:", "assistant": "Assistant:"},
    suffix={"system": "<end_of_utterance>\n", "user": "<end_of_utterance>\n", "assistant": "<end_of_utterance>"},
    bos="<|im_start|>", after_assistant="\n",
)


def _build_smolvlm(tok, ids, hidden, layers, image_size):
    from transformers import SmolVLMConfig
    from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil

    from medrl.models import processors

    patch = image_size // 4  # 4 x 4 patches, pixel shuffle by 2 -> 4 image tokens
    seq = (image_size // patch) ** 2 // 4
    config = SmolVLMConfig(
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=image_size, patch_size=patch),
        text_config=dict(model_type="llama", vocab_size=len(tok), hidden_size=hidden,
                         intermediate_size=hidden * 2, num_hidden_layers=layers, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True,
                         bos_token_id=ids["<|im_start|>"], eos_token_id=ids["<end_of_utterance>"],
                         pad_token_id=ids["<|endoftext|>"]),
        image_token_id=ids["<image>"], scale_factor=2, tie_word_embeddings=True,
        pad_token_id=ids["<|endoftext|>"],
    )
    image_processor = SmolVLMImageProcessorPil(
        do_image_splitting=False, size={"longest_edge": image_size}, max_image_size={"longest_edge": image_size})
    proc = processors.image_only_class("SmolVLMProcessor")(
        image_processor=image_processor, tokenizer=tok, image_seq_len=seq, chat_template=SMOLVLM_TEMPLATE)
    return config, proc


# ------------------------------------------------------------------------------------ Gemma 3


GEMMA3_TEMPLATE = turn_template(
    "<start_of_image>", prefix={"user": "<start_of_turn>user\n", "assistant": "<start_of_turn>model\n"},
    suffix={"user": "<end_of_turn>\n", "assistant": "<end_of_turn>"}, bos="<bos>", after_assistant="\n",
    merge_system=True,
)


def _build_gemma3(tok, ids, hidden, layers, image_size):
    from transformers import Gemma3Config, Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    head_dim = hidden // 4
    config = Gemma3Config(
        text_config=dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=hidden * 2,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=head_dim, query_pre_attn_scalar=head_dim, sliding_window=64,
                         layer_types=["sliding_attention"] * (layers - 1) + ["full_attention"],
                         max_position_embeddings=4096, bos_token_id=ids["<bos>"],
                         eos_token_id=[ids["<end_of_turn>"], ids["<eos>"]], pad_token_id=ids["<pad>"]),
        vision_config=dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=2, image_size=image_size, patch_size=14,
                           vision_use_head=False),
        mm_tokens_per_image=4, boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
    )
    image_processor = Gemma3ImageProcessorPil(size={"height": image_size, "width": image_size},
                                              do_pan_and_scan=False)
    proc = Gemma3Processor(image_processor=image_processor, tokenizer=tok, image_seq_length=4,
                           chat_template=GEMMA3_TEMPLATE)
    return config, proc


# ------------------------------------------------------------------------------------ registry


FAMILIES: dict[str, Family] = {
    "qwen2_vl": Family(
        "qwen2_vl", "Qwen2VLForConditionalGeneration", QWEN_SPECIALS, "<|im_end|>", "<|endoftext|>",
        QWEN_TEMPLATE, _build_qwen2_vl, token_attrs=QWEN_ATTRS, extra_eos=("<|endoftext|>",),
        papers="StepGRPO"),
    "qwen2_5_vl": Family(
        "qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration", QWEN_SPECIALS, "<|im_end|>", "<|endoftext|>",
        QWEN_TEMPLATE, _build_qwen2_5_vl, token_attrs=QWEN_ATTRS, extra_eos=("<|endoftext|>",),
        papers="MRPO, ARMed, CAPO, MediX-R1, StepGRPO"),
    "qwen3_vl": Family(
        "qwen3_vl", "Qwen3VLForConditionalGeneration", QWEN_SPECIALS, "<|im_end|>", "<|endoftext|>",
        QWEN_TEMPLATE, _build_qwen3_vl, token_attrs=QWEN_ATTRS, extra_eos=("<|endoftext|>",),
        image_size=64, image_step=32, papers="MRPO, MediX-R1"),
    "internvl": Family(
        "internvl", "InternVLForConditionalGeneration",
        ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>"),
        "<|im_end|>", "<|endoftext|>", INTERNVL_TEMPLATE, _build_internvl,
        token_attrs={"start_image_token": "<img>", "end_image_token": "</img>",
                     "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"},
        extra_eos=("<|endoftext|>",), papers="MRPO, ARMed (InternVL3)"),
    "llava_next": Family(
        "llava_next", "LlavaNextForConditionalGeneration", ("<unk>", "<s>", "</s>", "<pad>", "<image>"),
        "</s>", "<pad>", LLAVA_NEXT_TEMPLATE, _build_llava_next, bos="<s>",
        token_attrs={"image_token": "<image>"}, papers="CAPO (LLaVA-v1.6)"),
    "smolvlm": Family(
        "smolvlm", "SmolVLMForConditionalGeneration",
        ("<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>",
         "<global-img>", "<video>"),
        "<end_of_utterance>", "<|endoftext|>", SMOLVLM_TEMPLATE, _build_smolvlm, bos="<|im_start|>",
        token_attrs={"image_token": "<image>", "fake_image_token": "<fake_token_around_image>",
                     "global_image_token": "<global-img>", "end_of_utterance_token": "<end_of_utterance>",
                     "video_token": "<video>"},
        image_size=32, image_step=16, papers="MediX-R1 (SmolVLM2)"),
    "gemma3": Family(
        "gemma3", "Gemma3ForConditionalGeneration",
        ("<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>",
         "<image_soft_token>"),
        "<end_of_turn>", "<pad>", GEMMA3_TEMPLATE, _build_gemma3, bos="<bos>",
        token_attrs={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                     "image_token": "<image_soft_token>"},
        extra_eos=("<eos>",), papers="MedGemma (baseline)"),
}

FAMILY_NAMES = tuple(FAMILIES)


def get_family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown model family {name!r}; choose one of {', '.join(FAMILIES)}") from None
