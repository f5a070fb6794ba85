"""Image-only processors for vision-language models whose processor insists on a video processor.

Why: in transformers 5.x ``Qwen2VLProcessor``, ``Qwen2_5_VLProcessor``, ``Qwen3VLProcessor``,
``SmolVLMProcessor`` and ``InternVLProcessor`` require a video processor, and video processors
need torchvision (which has no CPU build in many environments, including ours). Medical VQA uses
still images only, so :func:`image_only` derives a subclass that drops the video processor and
keeps everything else (image placeholder expansion, chat template, ``mm_token_type_ids``): its
``__init__`` takes the parent's other arguments by name (``image_seq_len``, ``image_seq_length``)
so they are saved and reloaded, and SmolVLM's variant starts without ``num2words`` (used only for
video prompts). LLaVA-NeXT and Gemma 3 processors need no video processor and are used as is.

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

    # The subclass __init__ takes the parent's arguments minus the video processor, spelled
    # out (not **kwargs): ProcessorMixin saves and reloads exactly the named init arguments
    # (image_seq_len, image_seq_length, ...), read from the function's code object.
    import inspect

    sig = inspect.signature(parent.__init__)
    names = [n for n, p in sig.parameters.items()
             if n not in ("self", "video_processor") and p.kind == p.POSITIONAL_OR_KEYWORD]
    defaults = {n: None if sig.parameters[n].default is inspect.Parameter.empty else sig.parameters[n].default
                for n in names}
    rest = [n for n in names if n not in ("image_processor", "tokenizer")]
    src = (
        "def __init__(self, " + ", ".join(f"{n}=_defaults[{n!r}]" for n in names) + ", **kwargs):\n"
        "    _allow_without_num2words(parent)\n"
        "    parent.__init__(self, image_processor, tokenizer, None, "
        + "".join(f"{n}={n}, " for n in rest) + "**kwargs)\n"
    )
    scope = {"_defaults": defaults, "parent": parent, "_allow_without_num2words": _allow_without_num2words}
    exec(src, scope)  # noqa: S102 - code built from the parent's own parameter names
    __init__ = scope["__init__"]

    def __call__(self, images=None, text=None, videos=None, **kwargs):
        if videos is not None:
            raise ValueError(f"{type(self).__name__} handles images only; got videos")
        return parent.__call__(self, images=images, text=text, **kwargs)

    members = {"__init__": __init__, "__call__": __call__}
    if "apply_chat_template" in parent.__dict__:
        # SmolVLM's override only fills video defaults from the (absent) video processor.
        from transformers.processing_utils import ProcessorMixin

        def apply_chat_template(self, conversation, chat_template=None, **kwargs):
            return ProcessorMixin.apply_chat_template(self, conversation, chat_template, **kwargs)

        members["apply_chat_template"] = apply_chat_template
    cls = type(
        name,
        (parent,),
        {
            **members,
            "__module__": __name__,
            "__doc__": f"``{parent.__name__}`` without a video processor (images and text only).",
        },
    )
    _CLASSES[name] = cls
    globals()[name] = cls
    return cls


def _no_num2words(*args, **kwargs):
    raise ImportError("video prompts need the `num2words` package (pip install num2words)")


def _allow_without_num2words(parent: type) -> None:
    """``SmolVLMProcessor.__init__`` refuses to start without ``num2words``, which it only uses
    to write video prompts ("{n} frames"); the image-only variant never does, so a stub that
    raises on use lets it start without the package."""
    import sys

    module = sys.modules.get(parent.__module__)
    if module is not None and getattr(module, "num2words", False) is None:
        module.num2words = _no_num2words


def image_only_class(parent_name: str) -> type:
    """The image-only variant of the transformers processor class named ``parent_name``."""
    parent = getattr(transformers, parent_name, None)
    if parent is None:
        raise ImportError(f"this transformers ({transformers.__version__}) has no {parent_name}")
    return image_only(parent)


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
ImageOnlyQwen3VLProcessor = _CLASSES.get("ImageOnlyQwen3VLProcessor")
ImageOnlySmolVLMProcessor = _CLASSES.get("ImageOnlySmolVLMProcessor")
ImageOnlyInternVLProcessor = _CLASSES.get("ImageOnlyInternVLProcessor")
