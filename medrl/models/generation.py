"""Batched generation on chat prompts with images (evaluation, demos, smoke checks)."""

from __future__ import annotations

import io
from typing import Any, Sequence

from medrl.data.record import DataError


def _open_image(img, max_pixels: int | None = None):
    """An RGB PIL image of at most ``max_pixels`` pixels (default
    :func:`medrl.data.images.default_max_pixels`): a larger one is downscaled here, before the
    processor, so a 12000x12000 scan never reaches it at full size."""
    from PIL import Image

    from medrl.data.images import capped_size, default_max_pixels, open_image

    cap = int(max_pixels or default_max_pixels())
    if isinstance(img, Image.Image):
        img = img.convert("RGB") if img.mode != "RGB" else img
        target = capped_size(img.size, cap)
        return img if target == img.size else img.resize(target, Image.Resampling.BICUBIC, reducing_gap=2.0)
    if isinstance(img, dict) and img.get("path"):  # datasets Image feature with decode=False
        img = img["path"]
    if isinstance(img, dict) and img.get("bytes"):
        img = io.BytesIO(img["bytes"])
    if isinstance(img, (str, bytes, io.IOBase)) or hasattr(img, "__fspath__"):
        try:
            return open_image(img, cap)
        except (OSError, Image.DecompressionBombError) as err:
            raise ValueError(f"cannot read image {img!s}: {err}") from err
    raise TypeError(f"unsupported image value {type(img).__name__}")


class PromptTooLongError(DataError):
    """A generation input whose prompt is longer than the model can take (names the record)."""


def max_prompt_tokens_of(model, max_new_tokens: int = 0) -> int | None:
    """The longest prompt ``model`` can take with ``max_new_tokens`` generated after it: its
    (text) config's ``max_position_embeddings`` minus ``max_new_tokens``; None when unknown."""
    cfg = getattr(model, "config", None)
    for c in (getattr(cfg, "text_config", None), cfg):
        n = getattr(c, "max_position_embeddings", None) if c is not None else None
        if isinstance(n, int) and n > 0:
            return max(1, n - int(max_new_tokens or 0))
    return None


def check_prompt_lengths(tok, texts: Sequence[str], items: Sequence[Any], limit: int | None, offset: int = 0) -> None:
    """Raise :class:`PromptTooLongError` naming the first input whose rendered prompt has more
    than ``limit`` tokens (the text part; image tokens come on top)."""
    if not limit:
        return
    for k, text in enumerate(texts):
        if len(text.encode("utf-8")) <= limit:  # a (byte-level) token covers at least one byte
            continue
        n = len(tok(text, add_special_tokens=False)["input_ids"])
        if n > limit:
            item = items[k]
            rid = getattr(item, "id", None) or (item.get("id") if isinstance(item, dict) else None)
            name = f"record {rid!r}" if rid is not None else f"generation input {offset + k}"
            raise PromptTooLongError(
                f"{name}: prompt is {n:,} tokens, over the limit of {limit:,} (the model's context minus "
                "max_new_tokens, or max_prompt_tokens); shorten or drop the record (--skip-invalid skips "
                "questions over MEDRL_MAX_QUESTION_CHARS at load time)")


def to_chat(item: Any, prompt_style: str = "think_answer", max_pixels: int | None = None) -> tuple[list[dict], list]:
    """One generation input -> ``(messages, images)``.

    Accepted items: a :class:`medrl.data.VQARecord` (prompt built with
    ``medrl.data.prompts.build_prompt(record, prompt_style)``), a dataset row / dict with
    ``prompt`` (messages or text) and ``image`` or ``images``, a list of chat messages (no
    images), or a plain string (one user turn).
    """
    if hasattr(item, "question") and hasattr(item, "images") and not isinstance(item, dict):
        from medrl.data.prompts import build_prompt

        return build_prompt(item, prompt_style), [_open_image(p, max_pixels) for p in item.images]
    if isinstance(item, str):
        return [{"role": "user", "content": [{"type": "text", "text": item}]}], []
    if isinstance(item, list):
        return item, []
    if isinstance(item, dict):
        if "prompt" not in item:
            raise ValueError(f"generation input has no 'prompt' field (keys: {sorted(item)})")
        messages, _ = to_chat(item["prompt"], prompt_style, max_pixels)
        imgs = item.get("images")
        if imgs is None:
            imgs = [item["image"]] if item.get("image") is not None else []
        return messages, [_open_image(i, max_pixels) for i in imgs]
    raise TypeError(f"unsupported generation input {type(item).__name__}")


def _num_image_parts(messages: list[dict]) -> int:
    n = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            n += sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image")
    return n


def _nested_images(processor) -> bool:
    """Idefics3/SmolVLM and Gemma 3 processors take one image list per prompt in a batch (the
    others take a flat list in prompt order)."""
    names = [c.__name__ for c in type(processor).__mro__]
    return any(n.startswith(("SmolVLM", "Idefics", "Gemma3")) for n in names)


def generate(
    model,
    processor,
    prompts_or_records: Sequence[Any],
    max_new_tokens: int = 256,
    temperature: float = 0.0,
    batch_size: int = 8,
    *,
    prompt_style: str = "think_answer",
    top_p: float = 1.0,
    seed: int | None = None,
    progress: bool = True,
    max_pixels: int | None = None,
    max_prompt_tokens: int | None = None,
    generation_kwargs: dict | None = None,
) -> list[str]:
    """Generate one completion per input, in batches; returns the decoded completions.

    Inputs are anything :func:`to_chat` accepts (records, dataset rows, message lists, text).
    ``temperature=0`` is greedy decoding; above 0 samples (with ``top_p``; ``seed`` fixes it).
    The prompt is rendered with the processor's chat template plus the generation prompt; special
    tokens are stripped from the output (the ``<think>``/``<answer>`` tags are ordinary text).

    Guards: images over ``max_pixels`` are downscaled before the processor; a prompt longer than
    ``max_prompt_tokens`` (default: the model's ``max_position_embeddings`` minus
    ``max_new_tokens``) raises :class:`PromptTooLongError` naming the record before anything of
    its batch is generated, instead of minutes of generation on a broken record.
    ``generation_kwargs`` go to ``model.generate`` on top of these (e.g. ``top_k=0`` and
    ``suppress_tokens`` to sample exactly as TRL's GRPO rollouts do).
    """
    import torch
    from tqdm.auto import tqdm

    from medrl.models.loading import prepare_processor

    prepare_processor(processor)
    tok = getattr(processor, "tokenizer", processor)
    items = list(prompts_or_records)
    outputs: list[str] = []
    if seed is not None:
        torch.manual_seed(seed)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    sample = temperature > 0
    gen_kwargs = dict(max_new_tokens=max_new_tokens, do_sample=sample, pad_token_id=tok.pad_token_id)
    if sample:
        gen_kwargs.update(temperature=temperature, top_p=top_p)
    else:  # silence "temperature is set but do_sample=False" from a sampling generation config
        gen_kwargs.update(temperature=None, top_p=None, top_k=None)
    gen_kwargs.update(generation_kwargs or {})
    limit = max_prompt_tokens or max_prompt_tokens_of(model, max_new_tokens)
    batches = range(0, len(items), max(1, batch_size))
    try:
        for start in tqdm(batches, desc="generate", unit="batch", disable=not progress or len(batches) < 2):
            chats = [to_chat(x, prompt_style, max_pixels) for x in items[start : start + batch_size]]
            for i, (messages, imgs) in enumerate(chats):
                if _num_image_parts(messages) != len(imgs):
                    raise ValueError(
                        f"generation input {start + i}: {_num_image_parts(messages)} image "
                        f"placeholders in the prompt but {len(imgs)} images"
                    )
            texts = [
                processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False)
                for m, _ in chats
            ]
            check_prompt_lengths(tok, texts, items[start : start + batch_size], limit, start)
            if _nested_images(processor):
                images = [imgs for _, imgs in chats] if any(imgs for _, imgs in chats) else []
            else:
                images = [img for _, imgs in chats for img in imgs]
            enc = processor(
                text=texts, images=images or None, padding=True, return_tensors="pt"
            )
            enc = {k: v.to(device) if hasattr(v, "to") else v for k, v in enc.items()}
            with torch.no_grad():
                out = model.generate(**enc, **gen_kwargs)
            new = out[:, enc["input_ids"].shape[1] :]
            outputs += tok.batch_decode(new, skip_special_tokens=True)
    finally:
        model.train(was_training)
    return outputs
