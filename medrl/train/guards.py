"""Run-time guards on what TRL hands the rewards.

TRL's GRPOTrainer (>= 1.x, transformers >= 5) decodes completions with
``trl.chat_template_utils.parse_response`` whenever the tokenizer defines a
``response_template`` (or a legacy ``response_schema``); the parsed message's ``content`` can
then lose the ``<think>...</think>`` block (moved to a ``thinking``/``reasoning_content`` field,
or dropped). Every step-wise reward here (MRPO Eq. 3/7 step alignment, StepGRPO, CAPO
consistency, the format rewards) reads the reasoning from ``content``, so a run on such a
tokenizer would silently score no reasoning. :func:`check_reasoning_kept` fails loudly instead.
"""

from __future__ import annotations

from typing import Any, Sequence

REASONING_KEYS = ("thinking", "reasoning_content", "reasoning")
THINK_OPEN = "<think>"


def uses_parsed_content(tokenizer: Any) -> bool:
    """Whether TRL will parse completions with the tokenizer's response template/schema."""
    return any(getattr(tokenizer, a, None) is not None for a in ("response_template", "response_schema"))


def _message(completion) -> dict | None:
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return completion[-1]
    return None


def check_reasoning_kept(completions: Sequence[Any], completion_ids: Sequence[Sequence[int]] | None = None,
                         tokenizer: Any = None) -> None:
    """Raise RuntimeError when a parsed completion lost the ``<think>`` block its tokens hold.

    Lost means: the message's ``content`` has no ``<think>`` while a reasoning field
    (``thinking``/``reasoning_content``/``reasoning``) is filled, or while the decoded tokens
    (``completion_ids`` with ``tokenizer``) contain one. Plain-string completions pass.
    """
    for i, comp in enumerate(completions):
        msg = _message(comp)
        if msg is None:
            continue
        content = msg.get("content")
        text = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in (content or []) if isinstance(p, dict) and isinstance(p.get("text"), str))
        if THINK_OPEN in text:
            continue
        split_off = next((k for k in REASONING_KEYS if msg.get(k)), None)
        in_tokens = False
        if split_off is None and completion_ids is not None and tokenizer is not None:
            decoded = tokenizer.decode(list(completion_ids[i]), skip_special_tokens=False)
            in_tokens = THINK_OPEN in decoded
        if split_off or in_tokens:
            where = f"the {split_off!r} field" if split_off else "the generated tokens but not the parsed content"
            raise RuntimeError(
                f"completion {i}: TRL parsed it with the tokenizer's response template/schema and the "
                f"<think> reasoning block ended up in {where}; step-wise rewards read the reasoning from "
                "`content` and would score none. Remove the template before training "
                "(processor.tokenizer.response_template = None; response_schema = None) or use a tokenizer "
                "without one.")
