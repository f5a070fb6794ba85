"""Image-only processors for vision-language models whose processor insists on a video processor.

Why: in transformers 5.x ``Qwen2VLProcessor``, ``Qwen2_5_VLProcessor``, ``Qwen3VLProcessor``,
``SmolVLMProcessor`` and ``InternVLProcessor`` require a video processor, and video processors
need torchvision (which has no CPU build in many environments, including ours). Medical VQA uses
still images only, so :func:`image_only` derives a subclass that drops the video processor and
keeps everything else (image placeholder expansion, chat template, ``mm_token_type_ids``).

This file is self-contained (it imports only ``transformers``): :mod:`medrl.models.tiny` copies
it into saved model folders as ``processing_medrl.py`` with an ``auto_map`` entry, so
``AutoProcessor.from_pretrained(folder, trust_remote_code=True)`` works without medrl. Importing
this module registers the classes with ``AutoProcessor`` so saved folders also load by class
name without ``trust_remote_code``.
"""

from __future__ import annotations

import transformers
from transformers import AutoProcessor, PretrainedConfig

# Parent processors whose image-only variants are predefined (and registered).
IMAGE_ONLY_PARENTS = (
    "Qwen2VLProcessor",
    "Qwen2_5_VLProcessor",
    "Qwen3VLProcessor",
    "SmolVLMProcessor",
    "InternVLProcessor",
)

_CLASSES: dict[str, type] = {}


def image_only(parent: type) -> type:
    """A subclass of processor class ``parent`` without the video processor (images + text).

    The parents pass ``(image_processor, tokenizer, video_processor)`` positionally to
    ``ProcessorMixin.__init__``, which pairs them with ``get_attributes()`` -- derived from the
    *subclass* signature ``(image_processor, tokenizer)`` -- so the trailing ``None`` for the
    video processor is dropped and never saved or loaded.
    """
    name = f"ImageOnly{parent.__name__}"
    if name in _CLASSES:
        return _CLASSES[name]

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        parent.__init__(
            self, image_processor, tokenizer, None, chat_template=chat_template, **kwargs
        )

    def __call__(self, images=None, text=None, videos=None, **kwargs):
        if videos is not None:
            raise ValueError(f"{type(self).__name__} handles images only; got videos")
        return parent.__call__(self, images=images, text=text, **kwargs)

    cls = type(
        name,
        (parent,),
        {
            "__init__": __init__,
            "__call__": __call__,
            "__module__": __name__,
            "__doc__": f"``{parent.__name__}`` without a video processor (images and text only).",
        },
    )
    _CLASSES[name] = cls
    globals()[name] = cls
    return cls


def register() -> None:
    """Make ``AutoProcessor`` resolve the ``processor_class`` names of the image-only classes.

    ``AutoProcessor`` finds registered processors by class name, but registering needs a config
    class as key; a private key class per processor keeps the real models' mappings untouched.
    """
    for parent_name in IMAGE_ONLY_PARENTS:
        parent = getattr(transformers, parent_name, None)
        if parent is None:  # older/newer transformers without this model
            continue
        cls = image_only(parent)
        key = type(
            f"_{cls.__name__}Key",
            (PretrainedConfig,),
            {"model_type": f"medrl_key_{cls.__name__.lower()}", "__module__": __name__},
        )
        AutoProcessor.register(key, cls, exist_ok=True)


register()
ImageOnlyQwen2VLProcessor = _CLASSES.get("ImageOnlyQwen2VLProcessor")
ImageOnlyQwen2_5_VLProcessor = _CLASSES.get("ImageOnlyQwen2_5_VLProcessor")
