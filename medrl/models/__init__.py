"""Vision-language policies: loading (any Hugging Face VLM, LoRA), tiny offline builders, the
default SmolLM2 LLaVA-style policy, and batched generation.

Heavy libraries are imported lazily: ``import medrl.models`` stays cheap; the names below are
resolved on first use.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "load_policy": "medrl.models.loading",
    "load_processor": "medrl.models.loading",
    "prepare_processor": "medrl.models.loading",
    "LoraSpec": "medrl.models.loading",
    "build_tiny_vlm": "medrl.models.tiny",
    "build_default_policy": "medrl.models.default_policy",
    "generate": "medrl.models.generation",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'medrl.models' has no attribute {name!r}")
