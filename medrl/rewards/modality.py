"""Modality recognition reward (MediX-R1 003_d5d6a0d73a50ab79.txt Sec. 2.3.4 and App. A.9).

The policy writes one of the 16 modality tags before ``<think>`` (the paper's prompt spells
them ``<CT_SCAN>``); R_modality = 1 when that text equals the record's tag, case-insensitively,
else 0. The text before ``<think>`` must be the tag alone: surrounding angle/square brackets and
whitespace are ignored, anything else ("Modality: CT_SCAN") fails, as in the paper's code.
The record's tag comes from the ``modality_tag`` column, normalised with
:func:`medrl.modality.modality_to_tag`; when that column is empty the raw ``modality`` column is
mapped instead. A record with no known tag is unscorable (``None``).
"""

from __future__ import annotations

from medrl.modality import MODALITY_TAGS, modality_to_tag
from medrl.rewards import REWARDS
from medrl.rewards.base import Reward, column, parse_all

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


def modality_batch(completions, columns, *, reward="modality") -> list[float | None]:
    n = len(completions)
    tags = column(columns, "modality_tag", n, reward=reward)
    raw = column(columns, "modality", n, reward=reward)
    out: list[float | None] = []
    for p, tag, mod in zip(parse_all(completions), tags, raw):
        ref = modality_to_tag(tag) or modality_to_tag(mod)
        out.append(None if ref is None else modality_reward(p.modality, ref))
    return out


@REWARDS.register("modality")
def make_modality() -> Reward:
    """Factory for the modality reward (no options); ``None`` for rows without a tag."""
    return Reward("modality", modality_batch)
