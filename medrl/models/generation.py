"""Batched generation on chat prompts with images (evaluation, demos, smoke checks)."""

from __future__ import annotations

from typing import Any, Sequence


def _open_image(img):
    from PIL import Image

    if isinstance(img, Image.Image):
        return img.convert("RGB") if img.mode != "RGB" else img
    if isinstance(img, dict) and img.get("path"):  # datasets Image feature with decode=False
        img = img["path"]
    if isinstance(img, (str, bytes)) or hasattr(img, "__fspath__"):
        try:
            with Image.open(img) as im:
                return im.convert("RGB")
        except OSError as err:
            raise ValueError(f"cannot read image {img!s}: {err}") from err
    raise TypeError(f"unsupported image value {type(img).__name__}")


def to_chat(item: Any, prompt_style: str = "think_answer") -> tuple[list[dict], list]:
    """One generation input -> ``(messages, images)``.

    Accepted items: a :class:`medrl.data.VQARecord` (prompt built with
    ``medrl.data.prompts.build_prompt(record, prompt_style)``), a dataset row / dict with
    ``prompt`` (messages or text) and ``image`` or ``images``, a list of chat messages (no
    images), or a plain string (one user turn).
    """
    if hasattr(item, "question") and hasattr(item, "images") and not isinstance(item, dict):
        from medrl.data.prompts import build_prompt

        return build_prompt(item, prompt_style), [_open_image(p) for p in item.images]
    if isinstance(item, str):
        return [{"role": "user", "content": [{"type": "text", "text": item}]}], []
    if isinstance(item, list):
        return item, []
    if isinstance(item, dict):
        if "prompt" not in item:
            raise ValueError(f"generation input has no 'prompt' field (keys: {sorted(item)})")
        messages, _ = to_chat(item["prompt"], prompt_style)
        imgs = item.get("images")
        if imgs is None:
            imgs = [item["image"]] if item.get("image") is not None else []
        return messages, [_open_image(i) for i in imgs]
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
) -> list[str]:
    """Generate one completion per input, in batches; returns the decoded completions.

    Inputs are anything :func:`to_chat` accepts (records, dataset rows, message lists, text).
    ``temperature=0`` is greedy decoding; above 0 samples (with ``top_p``; ``seed`` fixes it).
    The prompt is rendered with the processor's chat template plus the generation prompt; special
    tokens are stripped from the output (the ``<think>``/``<answer>`` tags are ordinary text).
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
    batches = range(0, len(items), max(1, batch_size))
    try:
        for start in tqdm(batches, desc="generate", unit="batch", disable=not progress or len(batches) < 2):
            chats = [to_chat(x, prompt_style) for x in items[start : start + batch_size]]
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
