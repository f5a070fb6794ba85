"""Teacher rollouts for tests, benchmarks and smoke runs on untrained tiny policies.

A freshly built tiny policy samples random tokens and never the ``<think>/<answer>`` format, so
every rollout of a group gets the same reward, every advantage is 0 and nothing can be learned
or measured. :func:`install_teacher` makes a GRPO trainer replace some rollouts of every group
with a fixed, well-formed completion written from the record (by default
:func:`medrl.data.prompts.format_target`), *after* the policy's own generation has run. Rewards,
advantages, loss and optimizer steps stay the real ones. Never use this for real training.
"""

from __future__ import annotations

from typing import Callable, Sequence


def install_teacher(
    trainer,
    records: Sequence,
    text_fn: Callable | None = None,
    *,
    every: int = 2,
    prompt_style: str = "think_answer",
    replace_all: bool = False,
):
    """Patch ``trainer._generate_single_turn``: rollout ``i`` with ``i % every == every - 1``
    (all rollouts when ``replace_all``) becomes ``text_fn(record)`` + EOS. The record is found
    by its question in the decoded prompt. With ``replace_all`` the policy is not sampled at all
    (fixed batches for exact comparisons). Returns the trainer."""
    from medrl.data.prompts import format_target

    text_fn = text_fn or (lambda rec: format_target(rec, prompt_style))
    tok = trainer._tokenizer
    eos = trainer.eos_token_ids[0] if getattr(trainer, "eos_token_ids", None) else tok.eos_token_id
    orig = trainer._generate_single_turn
    limit = trainer.max_completion_length

    def find(prompt_ids):
        text = tok.decode(prompt_ids)
        hits = [r for r in records if r.question in text]
        if not hits:
            raise KeyError("teacher: no record's question occurs in the prompt")
        return max(hits, key=lambda r: len(r.question))

    def generate(prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs):
        if replace_all:
            ids = [[] for _ in prompt_ids]
        else:
            ids, _ = orig(prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs)
        out = []
        for i, (p, c) in enumerate(zip(prompt_ids, ids)):
            if replace_all or i % every == every - 1:
                t = tok(text_fn(find(p)), add_special_tokens=False)["input_ids"][: limit - 1]
                c = t + [eos]
            out.append(list(c))
        return out, None  # sampling log-probs no longer match the replaced ids (HF generation only)

    trainer._generate_single_turn = generate
    return trainer
