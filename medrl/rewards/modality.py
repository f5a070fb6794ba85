"""Modality recognition reward (MediX-R1 Sec. 2.3.4 and App. A.9).

The policy writes one of the 16 modality tags before ``<think>`` (the paper's prompt spells
them ``<CT_SCAN>``); R_modality = 1 when that text equals the record's tag, case-insensitively,
else 0. The text before ``<think>`` must be the tag alone: surrounding angle/square brackets and
whitespace are ignored, anything else ("Modality: CT_SCAN") fails, as in the paper's code.
The record's tag comes from the ``modality_tag`` column, normalised with
:func:`medrl.common.modality.modality_to_tag`; when that column is empty the raw ``modality`` column is
mapped instead, and then the keyword heuristic :func:`medrl.common.modality.infer_modality_tag` runs on
the ``question`` column (loaders such as PMC-VQA already apply it with the caption and file
names). A record still without a tag scores 0.0 for every rollout - the term then adds nothing
to the group's advantages - and is counted (``counts`` attribute, a log line, and
``modality/untagged_frac`` in the training metrics): a missing tag never excludes a rollout.
"""

from __future__ import annotations

import logging

from medrl.common.modality import MODALITY_TAGS, infer_modality_tag, modality_to_tag
from medrl.rewards import REWARDS
from medrl.rewards.base import Reward, column, parse_all

log = logging.getLogger(__name__)
_TAGS = {t.upper() for t in MODALITY_TAGS}


def predicted_tag(prefix: str | None) -> str | None:
    """The tag the response states before ``<think>`` (upper case), or None if it is not a tag."""
    if not prefix:
        return None
    tag = prefix.strip().strip("<>[]").strip().upper()
    return tag if tag in _TAGS else None


def modality_reward(prefix: str | None, reference_tag: str) -> float:
    """1.0 when the text before ``<think>`` is ``reference_tag`` (case-insensitive), else 0.0."""
    ref = modality_to_tag(reference_tag)
    if ref is None:
        raise ValueError(f"modality_reward: {reference_tag!r} is not a MediX-R1 modality tag")
    return 1.0 if predicted_tag(prefix) == ref else 0.0


def reference_tag(tag, modality, question) -> str | None:
    """The record's tag: ``modality_tag`` column, else ``modality`` name, else the heuristic."""
    return modality_to_tag(tag) or modality_to_tag(modality) or infer_modality_tag(question)[0]


def modality_batch(completions, columns, *, reward="modality", counts=None) -> list[float]:
    n = len(completions)
    tags = column(columns, "modality_tag", n, reward=reward)
    raw = column(columns, "modality", n, reward=reward)
    questions = column(columns, "question", n, reward=reward)
    out: list[float] = []
    untagged = 0
    for p, tag, mod, q in zip(parse_all(completions), tags, raw, questions):
        ref = reference_tag(tag, mod, q)
        if ref is None:
            untagged += 1
            out.append(0.0)
        else:
            out.append(modality_reward(p.modality, ref))
    log_metric = columns.get("log_metric")
    if callable(log_metric) and n:  # TRL's reward-function logging hook (TensorBoard/metrics.jsonl)
        log_metric("modality/untagged_frac", untagged / n)
    if counts is not None:
        counts["rollouts"] += n
        counts["untagged"] += untagged
        if untagged:
            log.info("modality: %d of %d rollouts have no modality tag -> 0.0 (%d of %d so far)",
                     untagged, n, counts["untagged"], counts["rollouts"])
    return out


@REWARDS.register("modality")
def make_modality() -> Reward:
    """Factory for the modality reward (no options). Rows without a tag (column, dataset name or
    keyword heuristic) score 0.0 and are counted in ``fn.counts["untagged"]``; never ``None``."""
    counts = {"rollouts": 0, "untagged": 0}
    fn = Reward("modality", modality_batch, counts=counts)
    fn.counts = counts
    return fn
