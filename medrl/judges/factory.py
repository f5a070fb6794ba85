"""``build_judge(spec)``: one entry point from a recipe string to a judge.

Specs: ``"reference"`` (offline heuristic judge) or ``"openai:<model>"`` (any OpenAI-compatible
endpoint: ``base_url=None`` means api.openai.com, else a vLLM server or ``medrl serve-judge``).
:func:`shared_judge` memoises judges by spec and options, so several reward functions of one run
share one client, one cache and one set of statistics.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from medrl.judges.base import Judge

_SHARED: dict[str, Any] = {}
_SHARED_LOCK = threading.Lock()


def build_judge(
    spec: str | Judge,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    cache_path: str | os.PathLike | None = None,
    concurrency: int = 16,
    images: bool = False,
    image_max_side: int | None = None,
    **kw: Any,
) -> Judge:
    """A judge from ``spec``; a judge object passes through unchanged.

    ``images=True`` makes the judge send each item's image with answer-correctness, binary-grade
    and step requests (downscaled to ``image_max_side`` px, default 768, JPEG). The reference
    judge reads text only, so ``images=True`` with it is an error here, at start.

    Extra keywords go to the judge class (:class:`~medrl.judges.openai_judge.OpenAIJudge`:
    timeout, max_retries, temperature, max_tokens, answer_format, multimodal, ...;
    :class:`~medrl.judges.reference.ReferenceJudge`: use_embeddings, embedding_model).
    """
    if not isinstance(spec, str):
        if all(hasattr(spec, m) for m in ("answer_correct", "verify_steps", "consistency")):
            if images and not getattr(spec, "images", False):
                from medrl.judges.base import require_image_support

                require_image_support(spec, probe=False)
            return spec
        raise TypeError(f"judge spec must be a string or a judge object, got {type(spec).__name__}")
    kind, _, model = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "reference":
        from medrl.judges.reference import ReferenceJudge

        if images:
            raise ValueError("judge 'reference' reads text only and cannot judge images; use an "
                             "'openai:<model>' judge on a vision-language endpoint, or turn judge images off "
                             "(drop --judge-images / set judge.images: false)")
        return ReferenceJudge(**kw)
    if kind == "oracle":  # exact phantom judge, "oracle:EPS" flips each verdict with probability EPS
        from medrl.judges.oracle import OracleJudge, parse_oracle_spec

        return OracleJudge(parse_oracle_spec(spec), seed=int(kw.get("seed", 0)))
    if kind == "openai":
        if not model.strip():
            raise ValueError(f"judge spec {spec!r}: give a model, e.g. 'openai:gpt-5-mini'")
        from medrl.judges.openai_judge import OpenAIJudge

        if image_max_side is not None:
            kw["image_max_side"] = image_max_side
        return OpenAIJudge(model.strip(), base_url=base_url, api_key_env=api_key_env, cache_path=cache_path,
                           concurrency=concurrency, images=images, **kw)
    raise ValueError(f"unknown judge spec {spec!r}: use 'reference', 'oracle[:EPS]' or 'openai:<model>'")


def resolve_images(spec: str | Judge, setting: Any) -> bool:
    """A recipe's ``judge.images`` (true | false | auto) or ``--judge-images`` for ``spec``:
    "auto" is on for an ``openai:`` judge and off for the text-only reference judge (MRPO's
    recipe uses it: its judge sees the image, MRPO App. H.1-H.2)."""
    if setting is None or setting is False:
        return False
    if setting is True:
        return True
    if isinstance(setting, str) and setting.strip().lower() == "auto":
        if isinstance(spec, str):
            return spec.strip().lower().startswith("openai:")
        return bool(getattr(spec, "supports_images", False))
    if isinstance(setting, str) and setting.strip().lower() in ("true", "yes", "on", "false", "no", "off"):
        return setting.strip().lower() in ("true", "yes", "on")
    raise ValueError(f"judge images must be true, false or auto, got {setting!r}")


def shared_judge(spec: str | Judge, **options: Any) -> Judge:
    """Like :func:`build_judge`, but one instance per (spec, options) in this process."""
    if not isinstance(spec, str):
        return build_judge(spec)
    key = json.dumps([spec, options], sort_keys=True, default=str)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = build_judge(spec, **options)
        return _SHARED[key]
