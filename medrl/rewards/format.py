"""Format reward (MediX-R1 Sec. 2.3.3 and App. A.9; ARMed
"Format Reward", R_f in Eq. 14).

R_format = 1 if, from the first ``<think>``, the response is exactly
``<think>...</think> <answer>...</answer>`` (see :func:`medrl.answers.completion.is_well_formed`), else 0.

Guard (project addition): the answer block must come after the reasoning block - a stray
``<answer>`` (or any think/answer tag) before the first ``<think>`` gives 0, so a policy cannot
state an answer first and reason afterwards. The optional modality tag before ``<think>`` is
plain text and stays allowed.
"""

from __future__ import annotations

from medrl.answers.completion import parse_response
from medrl.rewards import REWARDS
from medrl.rewards.base import Reward, texts_of


def format_reward(text: str) -> float:
    """1.0 when ``text`` is well formed (``parse_response(text).well_formed``), else 0.0."""
    return 1.0 if parse_response(text).well_formed else 0.0


def format_batch(completions, columns, *, reward="format") -> list[float]:
    return [format_reward(t) for t in texts_of(completions)]


@REWARDS.register("format")
def make_format() -> Reward:
    """Factory for the format reward (no options). Every row is scorable."""
    return Reward("format", format_batch)
