"""Offline builder for tiny vision-language models of every supported family (tests, demos, CI).

The default family is Qwen2.5-VL: ``Qwen2_5_VLForConditionalGeneration`` built from a config with
random weights (well under a million parameters at the defaults), a small vision tower on small
images (at most ``image_size`` x ``image_size`` pixels, so at most ``(image_size / 28) ** 2``
image tokens), a byte-level BPE tokenizer trained with ``tokenizers`` on the given texts, and the
image-only processor of :mod:`medrl.models.processors`. The other families (Qwen2-VL, Qwen3-VL,
InternVL3, LLaVA-NeXT, SmolVLM2, Gemma 3) are described in :mod:`medrl.models.families`. A tiny
model knows nothing about medicine; it exists so that every code path (generation, rewards,
GRPO, SFT, evaluation) runs end to end in seconds, offline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterable

from medrl.models.families import FORMAT_TOKENS, QWEN_SPECIALS, QWEN_TEMPLATE  # noqa: F401

# Qwen-style special tokens of the default family (same strings as the Qwen2/2.5-VL vocabularies);
# the rollout format's tags (FORMAT_TOKENS) are whole, non-special tokens in every family.
PAD_TOKEN, IM_START, IM_END, VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD = QWEN_SPECIALS
SPECIAL_TOKENS = list(QWEN_SPECIALS)
CHAT_TEMPLATE = QWEN_TEMPLATE  # Qwen's ChatML layout with Qwen's vision placeholders

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


def _train_tokenizer(texts: list[str], vocab_size: int, family=None):
    """Byte-level BPE trained by ``tokenizers`` (no unknown tokens: all 256 bytes are in it),
    with the family's special tokens first, its token attributes (``image_token`` ...) and its
    chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from medrl.models.families import get_family

    fam = family or get_family("qwen2_5_vl")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(fam.specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in FORMAT_TOKENS])
    extra = {"bos_token": fam.bos} if fam.bos else {}
    if "<unk>" in fam.specials:
        extra["unk_token"] = "<unk>"
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=fam.eos,
        pad_token=fam.pad,
        padding_side="left",
        chat_template=fam.chat_template,
        # The processors look these up by attribute (image_token, boi_token, ...).
        extra_special_tokens=dict(fam.token_attrs),
        **extra,
    )
    return fast


def build_tiny_vlm(
    out_dir: str | Path,
    texts: Iterable[str] | None = None,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
    *,
    image_size: int | None = None,
    vocab_size: int = 2048,
    family: str = "qwen2_5_vl",
    vision_depth: int | None = None,
    vision_width: int | None = None,
) -> Path:
    """Build and save a tiny random model of ``family`` with a trained tokenizer; return the folder.

    Args:
        out_dir: folder to write (created; existing model files in it are overwritten).
        texts: text to train the BPE tokenizer on (e.g. the questions and answers of a data
            set); the built-in medical sentences and the format tags are always added.
        hidden_size: language model width (4 heads of ``hidden_size // 4``; must be divisible
            by 16 so the multimodal rotary sections split evenly).
        num_layers: language model layers.
        seed: torch seed for the random weights (same seed and texts -> same model).
        image_size: largest image side in pixels (None: the family's default, a few image
            tokens; must be a multiple of the family's step, e.g. 28 for Qwen2.5-VL: 56 -> 4
            image tokens, 112 -> 16).
        vocab_size: BPE vocabulary size target (smaller if the texts are too short).
        family: one of :data:`medrl.models.families.FAMILY_NAMES` (model class, special tokens,
            processor and chat template of that family; see :mod:`medrl.models.families`).
        vision_depth: vision tower blocks (None: the family's tiny default, 2).
        vision_width: vision tower width (None: the default, 32; a multiple of 16; its MLP is
            twice as wide and it keeps 2 attention heads). A tiny tower sees global looks
            (modality, a bright blob) but may not resolve position or count: widen/deepen it
            for those.

    The folder loads offline with :func:`medrl.models.load_policy`, with TRL's trainers given
    the path (after ``import medrl.models``) and, for image-only processors, with plain
    ``AutoProcessor`` / ``AutoModelForImageTextToText`` given ``trust_remote_code=True``
    (processor code shipped as ``processing_medrl.py``).
    """
    import torch
    import transformers

    from medrl.models import processors
    from medrl.models.families import get_family

    fam = get_family(family)
    image_size = fam.image_size if image_size is None else image_size
    if hidden_size % 16 or hidden_size < 16:
        raise ValueError(f"build_tiny_vlm: hidden_size must be a multiple of 16, got {hidden_size}")
    if image_size % fam.image_step or image_size < fam.image_step:
        raise ValueError(f"build_tiny_vlm: image_size for {family} must be a positive multiple of "
                         f"{fam.image_step}, got {image_size}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    corpus = list(DEFAULT_TEXTS) + [t for t in (texts or []) if isinstance(t, str) and t.strip()]
    tokenizer = _train_tokenizer(corpus, vocab_size, fam)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in fam.specials}
    config, processor = fam.build(tokenizer, ids, hidden_size, num_layers, image_size)
    set_vision_size(config, depth=vision_depth, width=vision_width)

    torch.manual_seed(seed)
    model = getattr(transformers, fam.model_class)(config)
    gen = model.generation_config
    gen.eos_token_id = [ids[fam.eos]] + [ids[t] for t in fam.extra_eos]
    gen.pad_token_id = ids[fam.pad]
    gen.bos_token_id = ids[fam.bos] if fam.bos else None
    gen.do_sample = False
    model.save_pretrained(out)
    processor.save_pretrained(out)
    name = type(processor).__name__
    if name in processors._CLASSES:
        ship_processor_code(out, name)
    return out


#: Per family layout of the tower's config: (depth field, width field, MLP field or None).
_VISION_FIELDS = {"qwen2_vl": ("depth", "embed_dim", None)}
_VISION_DEFAULT = ("depth", "hidden_size", "intermediate_size")  # Qwen2.5-VL, Qwen3-VL
_VISION_HF = ("num_hidden_layers", "hidden_size", "intermediate_size")  # SigLIP/CLIP/InternViT towers


def set_vision_size(config, *, depth: int | None = None, width: int | None = None) -> None:
    """Resize the vision tower of a tiny model's ``config`` in place (before the model is built).

    ``depth``: blocks; ``width``: hidden size (a multiple of 16; the MLP is set to twice the
    width, the head count is kept). None leaves a setting as the family built it. Qwen2.5-VL's
    full-attention block moves to the last block when the depth changes.
    """
    if depth is None and width is None:
        return
    vc = config.vision_config
    if hasattr(vc, "depth"):
        depth_f, width_f, mlp_f = _VISION_FIELDS.get(getattr(config, "model_type", ""), _VISION_DEFAULT)
    else:
        depth_f, width_f, mlp_f = _VISION_HF
    if depth is not None:
        if int(depth) < 1:
            raise ValueError(f"build_tiny_vlm: vision_depth must be >= 1, got {depth}")
        setattr(vc, depth_f, int(depth))
        if hasattr(vc, "fullatt_block_indexes"):
            vc.fullatt_block_indexes = [int(depth) - 1]
        if hasattr(vc, "deepstack_visual_indexes"):
            vc.deepstack_visual_indexes = [i for i in vc.deepstack_visual_indexes if i < int(depth)] or [0]
    if width is not None:
        if int(width) < 16 or int(width) % 16:
            raise ValueError(f"build_tiny_vlm: vision_width must be a positive multiple of 16, got {width}")
        setattr(vc, width_f, int(width))
        if mlp_f and hasattr(vc, mlp_f):
            setattr(vc, mlp_f, 2 * int(width))
        if hasattr(vc, "projection_dim"):
            vc.projection_dim = int(width)


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


def build_phantom_tiny_vlm(out_dir: str | Path, *, config: Any = None, **kw: Any) -> Path:
    """A tiny random VLM (:func:`build_tiny_vlm`) whose tokenizer is trained on the phantom
    texts (:func:`medrl.data.sources.phantom.phantom_texts`), so phantom questions, steps and
    answers are a few tokens each. ``config``: a :class:`~medrl.data.sources.phantom.PhantomConfig`
    (default one). ``kw`` goes to the builder (``hidden_size``, ``num_layers``, ``vision_depth``,
    ``vision_width``, ``image_size`` (default the config's), ``seed``, ``family``...)."""
    from medrl.data.sources.phantom import PhantomConfig, phantom_texts

    cfg = config or PhantomConfig()
    kw.setdefault("image_size", cfg.image_size)
    return build_tiny_vlm(out_dir, texts=phantom_texts(cfg), **kw)
