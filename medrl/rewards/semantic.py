"""Semantic similarity of the parsed answer with the reference: BERTScore F1 and embedding cosine.

Used by MRPO Eq. 2 (BiomedBERT there), ARMed Eq. 4/13 and HSS Eq. 15
of ARMed (PubMedBERT for BERTScore, BioBERT-STS for cosine). The recipes name
those models (:data:`medrl.common.embeddings.PAPER_ENCODERS`); the default here, and the offline/CPU
substitute, is the offline all-MiniLM-L6-v2 (:func:`medrl.common.embeddings.resolve_model`); any local
folder or hub id can be passed as ``model``.

- BERTScore: ``bert_score.BERTScorer(model_type=<path>, num_layers=...)`` F1, no IDF. Layers:
  ``num_layers`` if given, bert-score's own table for the hub ids it knows, else the model's
  last layer (6 for MiniLM). Raw scores are not rescaled (they crowd near the top of the range:
  the "reward collapse" ARMed addresses); pass ``baseline_path`` (bert-score's CSV format:
  ``LAYER,P,R,F`` rows) to rescale. Scorers are loaded lazily and cached per configuration.
  Scores are clipped at 1.0 (float rounding gives 1.0000002 for identical strings).
- Cosine: :func:`medrl.common.embeddings.cosine_pairs` on L2-normalised sentence embeddings, in
  [-1, 1], not clipped.

An empty prediction or reference scores 0.0 without running the model.

The registered ``bertscore`` and ``embedding_cosine`` rewards score the answer as the one answer
decision reads it (:func:`read_answers`, :func:`medrl.answers.metric_text`): markup is unwrapped
and an HTML comment removed before anything is embedded, so "<!-- X --> W" is scored as "W".
"""

from __future__ import annotations

import functools
from typing import Sequence

from medrl.rewards import REWARDS
from medrl.rewards.base import ENCODER_HELP, NUM_LAYERS_HELP, Reward, answer_metric, document_options


def _num_layers_of(model_path: str) -> int | None:
    import bert_score.utils

    if model_path in bert_score.utils.model2layers:
        return None  # bert-score knows the best layer for its own model ids
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(model_path).num_hidden_layers)


@functools.lru_cache(maxsize=4)
def load_bertscorer(model: str | None = None, num_layers: int | None = None,
                    baseline_path: str | None = None):
    """A cached ``bert_score.BERTScorer`` for ``model`` (default: offline MiniLM, 6 layers)."""
    from medrl.common.embeddings import resolve_model

    path = resolve_model(model)  # first: an offline miss fails before the slow import
    from bert_score import BERTScorer

    if num_layers is None:
        num_layers = _num_layers_of(path)
    return BERTScorer(
        model_type=path,
        num_layers=num_layers,
        lang="en" if baseline_path else None,
        rescale_with_baseline=bool(baseline_path),
        baseline_path=baseline_path,
    )


def _nonempty(preds: Sequence[str], refs: Sequence[str]) -> list[int]:
    if len(preds) != len(refs):
        raise ValueError(f"{len(preds)} predictions vs {len(refs)} references")
    return [i for i, (p, r) in enumerate(zip(preds, refs)) if (p or "").strip() and (r or "").strip()]


def bertscore_f1(preds: Sequence[str], refs: Sequence[str], model: str | None = None, *,
                 num_layers: int | None = None, baseline_path: str | None = None) -> list[float]:
    """BERTScore F1 of ``preds[i]`` against ``refs[i]`` (0.0 where either is empty)."""
    idx = _nonempty(preds, refs)
    out = [0.0] * len(preds)
    if idx:
        scorer = load_bertscorer(model, num_layers, baseline_path)
        _, _, f1 = scorer.score([preds[i] for i in idx], [refs[i] for i in idx])
        for i, f in zip(idx, f1.tolist()):
            out[i] = min(1.0, float(f))
    return out


def embedding_cosine(preds: Sequence[str], refs: Sequence[str], model: str | None = None) -> list[float]:
    """Cosine similarity of sentence embeddings of ``preds[i]`` and ``refs[i]`` (0.0 if empty)."""
    from medrl.common.embeddings import cosine_pairs

    idx = _nonempty(preds, refs)
    out = [0.0] * len(preds)
    if idx:
        for i, c in zip(idx, cosine_pairs([preds[i] for i in idx], [refs[i] for i in idx], model)):
            out[i] = float(c)
    return out


def read_answers(preds: Sequence[str], refs: Sequence[str], questions: Sequence[str | None] | None = None
                 ) -> list[str]:
    """Each answer as the one answer decision reads it (:func:`medrl.answers.metric_text`): the
    reference when it is the reference by identity, else the answer with its markup unwrapped and
    its HTML comments removed. What a metric embeds is what the decision read, never hidden text."""
    from medrl.answers import metric_text

    qs = list(questions) if questions is not None else [None] * len(preds)
    return [metric_text(p, r, question=q) for p, r, q in zip(preds, refs, qs)]


def read_bertscore(preds: Sequence[str], refs: Sequence[str], model: str | None = None, *,
                   questions: Sequence[str | None] | None = None, **options) -> list[float]:
    """:func:`bertscore_f1` of the answers as the decision reads them (:func:`read_answers`)."""
    return bertscore_f1(read_answers(preds, refs, questions), refs, model, **options)


def read_cosine(preds: Sequence[str], refs: Sequence[str], model: str | None = None, *,
                questions: Sequence[str | None] | None = None) -> list[float]:
    """:func:`embedding_cosine` of the answers as the decision reads them (:func:`read_answers`)."""
    return embedding_cosine(read_answers(preds, refs, questions), refs, model)


@REWARDS.register("bertscore")
def make_bertscore(*, model: str | None = None, num_layers: int | None = None,
                   baseline_path: str | None = None) -> Reward:
    """BERTScore F1 of the parsed ``<answer>`` (as the decision reads it) vs ``answer``; options as
    :func:`bertscore_f1`."""
    return Reward("bertscore", answer_metric, metric=read_bertscore, model=model,
                  num_layers=num_layers, baseline_path=baseline_path)


document_options(
    make_bertscore, model="BERTScore encoder: a local folder or a hub id (None: the offline all-MiniLM-L6-v2)",
    num_layers=NUM_LAYERS_HELP,
    baseline_path="a BERTScore baseline file: rescale F1 with it (rescale_with_baseline); None: raw F1")


@REWARDS.register("embedding_cosine")
def make_embedding_cosine(*, model: str | None = None) -> Reward:
    """Embedding cosine of the parsed ``<answer>`` (as the decision reads it) vs ``answer``;
    ``model``: encoder path/id."""
    return Reward("embedding_cosine", answer_metric, metric=read_cosine, model=model)


document_options(make_embedding_cosine, model=f"sentence encoder: {ENCODER_HELP}")
