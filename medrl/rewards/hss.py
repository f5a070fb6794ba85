"""Hybrid Semantic Score (ARMed Eq. 15), an evaluation metric.

HSS = 0.25 * BLEU-1 + 0.25 * ROUGE-1 + 0.10 * BERTScore + 0.40 * CosineSimilarity,
with the metrics of :mod:`medrl.rewards.lexical` and :mod:`medrl.rewards.semantic`.
"""

from __future__ import annotations

from typing import Sequence

from medrl.rewards import REWARDS
from medrl.rewards.base import ENCODER_HELP, Reward, answer_metric, document_options
from medrl.rewards.lexical import bleu1 as _bleu1
from medrl.rewards.lexical import rouge1 as _rouge1
from medrl.rewards.semantic import bertscore_f1, embedding_cosine

HSS_WEIGHTS = {"bleu1": 0.25, "rouge1": 0.25, "bertscore": 0.10, "cosine": 0.40}


def hss(bleu1: float, rouge1: float, bertscore: float, cos: float) -> float:
    """ARMed Eq. 15: 0.25*BLEU-1 + 0.25*ROUGE-1 + 0.10*BERTScore + 0.40*Cos."""
    w = HSS_WEIGHTS
    return w["bleu1"] * bleu1 + w["rouge1"] * rouge1 + w["bertscore"] * bertscore + w["cosine"] * cos


def hss_batch(preds: Sequence[str], refs: Sequence[str], model: str | None = None,
              bertscore_model: str | None = None) -> list[dict]:
    """Per pair: ``{"bleu1", "rouge1", "bertscore", "cosine", "hss"}``.

    ``model`` is the sentence encoder for the cosine, ``bertscore_model`` the BERTScore model
    (both default to the offline MiniLM).
    """
    preds, refs = list(preds), list(refs)
    bs = bertscore_f1(preds, refs, bertscore_model)
    cs = embedding_cosine(preds, refs, model)
    rows = []
    for p, r, b, c in zip(preds, refs, bs, cs):
        row = {"bleu1": _bleu1(p, r), "rouge1": _rouge1(p, r), "bertscore": b, "cosine": c}
        row["hss"] = hss(row["bleu1"], row["rouge1"], b, c)
        rows.append(row)
    return rows


def hss_scores(preds, refs, model=None, bertscore_model=None) -> list[float]:
    return [row["hss"] for row in hss_batch(preds, refs, model, bertscore_model)]


@REWARDS.register("hss")
def make_hss(*, model: str | None = None, bertscore_model: str | None = None) -> Reward:
    """HSS of the parsed ``<answer>`` vs ``answer`` (usable as a reward or a metric)."""
    return Reward("hss", answer_metric, metric=hss_scores, model=model, bertscore_model=bertscore_model)


document_options(make_hss, model=f"HSS's sentence encoder for the cosine part: {ENCODER_HELP}",
                 bertscore_model="HSS's BERTScore encoder (None: the offline all-MiniLM-L6-v2)")
