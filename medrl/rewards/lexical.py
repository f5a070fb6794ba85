"""Lexical overlap of the parsed answer with the reference: ROUGE-1 F and BLEU-1.

Used by MRPO Eq. 2, ARMed Eq. 3 and HSS Eq. 15
of ARMed. Both metrics see the same tokens: rouge-score's default tokenizer
(lower-case; every character other than a-z/0-9 is a separator, so punctuation is dropped and
"T1-weighted" gives "t1", "weighted"; no stemming). Dropping punctuation matters here because
answers are one to three words: "Left lung." must score 1.0 against "left lung".

- ROUGE-1: ``rouge_score.rouge_scorer.RougeScorer(["rouge1"])`` F-measure, in [0, 1].
- BLEU-1: sacrebleu sentence BLEU with ``max_ngram_order=1`` on the tokens above, no smoothing
  (with unigrams only a zero count simply gives 0) and the standard brevity penalty
  ``exp(1 - len(ref)/len(pred))`` when the prediction is shorter; divided by 100 so it lies in
  [0, 1]. So BLEU-1 = BP * clipped unigram precision; an exact match of any length is 1.0.

Either metric is 0.0 when the prediction or the reference has no tokens.
"""

from __future__ import annotations

import functools

from medrl.rewards import REWARDS
from medrl.rewards.base import Reward, answer_metric


@functools.lru_cache(maxsize=1)
def _rouge_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer=False)


@functools.lru_cache(maxsize=1)
def _bleu1():
    from sacrebleu.metrics import BLEU

    return BLEU(max_ngram_order=1, tokenize="none", smooth_method="none", effective_order=True)


def tokens(text: str) -> list[str]:
    """The shared lexical tokens: lower-case alphanumeric runs (rouge-score's tokenizer)."""
    return _tokenizer().tokenize(text or "")


def rouge1(pred: str, ref: str) -> float:
    """ROUGE-1 F-measure of ``pred`` against ``ref`` (lower-cased, punctuation dropped)."""
    if not tokens(pred) or not tokens(ref):
        return 0.0
    return float(_rouge_scorer().score(ref, pred)["rouge1"].fmeasure)


def bleu1(pred: str, ref: str) -> float:
    """BLEU-1 in [0, 1]: brevity penalty x clipped unigram precision (see module docstring)."""
    p, r = tokens(pred), tokens(ref)
    if not p or not r:
        return 0.0
    score = _bleu1().sentence_score(" ".join(p), [" ".join(r)]).score / 100.0
    return float(min(1.0, max(0.0, score)))


def rouge1_batch(preds, refs) -> list[float]:
    return [rouge1(p, r) for p, r in zip(preds, refs)]


def bleu1_batch(preds, refs) -> list[float]:
    return [bleu1(p, r) for p, r in zip(preds, refs)]


@REWARDS.register("rouge1")
def make_rouge1() -> Reward:
    """ROUGE-1 F of the parsed ``<answer>`` vs the ``answer`` column (no options)."""
    return Reward("rouge1", answer_metric, metric=rouge1_batch)


@REWARDS.register("bleu1")
def make_bleu1() -> Reward:
    """BLEU-1 of the parsed ``<answer>`` vs the ``answer`` column (no options)."""
    return Reward("bleu1", answer_metric, metric=bleu1_batch)


def exact_match(pred: str, ref: str) -> float:
    """1.0 when ``pred`` has exactly the reference's tokens (lower-cased, punctuation dropped,
    :func:`tokens`), else 0.0: the brittle string match MediX-R1 (003, Sec. 1) argues against, which
    pays a right answer only in the reference's own words."""
    p, r = tokens(pred), tokens(ref)
    return float(bool(r) and p == r)


def exact_match_reward(prompts=None, completions=(), **kwargs) -> list:
    """TRL reward: :func:`exact_match` of the parsed ``<answer>`` and the ``answer`` column, the
    answer's own words (no equivalence mapping: the shared answer decision would pay "computed
    tomography" for "CT", which is what an exact match does not). A missing reference gives None;
    a completion with no one answer (two answer blocks, text after it) is
    :data:`medrl.types.UNSCORABLE`; a missing answer block scores 0."""
    from medrl.rewards.base import answer_rows, unreadable_rows
    from medrl.types import UNSCORABLE

    parsed, refs, idx = answer_rows(completions, kwargs, reward="exact_match")
    out: list = [None] * len(completions)
    for i in unreadable_rows(parsed, refs):
        out[i] = UNSCORABLE
    for i in idx:
        out[i] = exact_match(parsed[i].answer or "", refs[i])
    return out


@REWARDS.register("exact_match")
def make_exact_match():
    """Exact match of the parsed ``<answer>`` with the ``answer`` column, word for word after
    lower-casing and dropping punctuation (no options): the baseline an open-ended reward is
    compared with (MediX-R1 Sec. 1: it under-rewards a right answer in other words)."""
    exact_match_reward.__name__ = "exact_match"
    return exact_match_reward
