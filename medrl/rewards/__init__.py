"""Reward functions for the five methods, one module per family, behind one registry.

Every reward is a callable with TRL's signature ``fn(prompts, completions, **columns) ->
list[float | None]`` and a ``__name__``; ``None`` marks a row that cannot be scored (for
example, the reference answer is missing) and TRL leaves it out. medrl's rewards return that list
as a :class:`medrl.types.RewardResult`, which also carries the rows they could not score and their
step outputs (the trainer reads those there); each option's help is written next to its factory
(:func:`medrl.rewards.base.document_options`). Under each callable sit plain
functions of numbers or strings (``rouge1(pred, ref)``, ``length_reward(num_steps)``, ...) that
the callables wrap and the tests check against hand-worked values.

``REWARDS`` maps a name to a *factory* ``make(**options) -> reward_fn`` so a recipe can say::

    rewards:
      - {name: rouge1, weight: 0.25}
      - {name: armed, options: {initial_threshold: 0.5}}

Names (``REWARDS.names()``): ``format``, ``modality``, ``rouge1``, ``bleu1``, ``bertscore``,
``embedding_cosine``, ``hss``, ``mrpo_answer``, ``mrpo_length``, ``armed_textual``,
``armed_semantic``, ``armed_adaptive_semantic``, ``armed``, ``medix_embed``, ``steprar``,
``steprvr``, ``capo_accuracy``, ``capo_perception``; the judged ones (``medix_llm``,
``mrpo_process``, ``capo_consistency``) live in :mod:`medrl.rewards.judged`.

Importing this package is instant: modules load on the first registry lookup and import their
heavy libraries (torch, bert-score, rouge-score) only when a score is computed.
"""

from __future__ import annotations

from medrl.common.registry import Registry

_MODULES = [
    "medrl.rewards.format",
    "medrl.rewards.modality",
    "medrl.rewards.lexical",
    "medrl.rewards.semantic",
    "medrl.rewards.hss",
    "medrl.rewards.mrpo",
    "medrl.rewards.armed",
    "medrl.rewards.medix",
    "medrl.rewards.stepgrpo",
    "medrl.rewards.capo",
    "medrl.rewards.judged",
]

REWARDS = Registry("reward", modules=_MODULES)

__all__ = ["REWARDS"]
