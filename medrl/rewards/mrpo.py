"""MRPO rewards (MRPO paper, Sec. 4.1): answer, length and total.

- Answer reward, Eq. 2: R_ans = lambda1 * (ROUGE-1 + BLEU-1) + lambda2 * BERTScore,
  lambda1 = 0.25, lambda2 = 0.5 (so R_ans lies in [0, 1]). Guard (project, not in the paper):
  :func:`medrl.rewards.base.answer_rejection` runs first and a rejected answer (empty,
  placeholder, list, hedge, negation, padding, injection, or a hard mismatch: another side,
  number, unit or organ, a second finding) scores 0, Eq. 2's minimum, before any metric.
- Length reward, Eq. 4, for K sentence-level reasoning steps:
  R_len = -(K_min - K) / K_min if K < K_min; -(K - K_max) / K_max if K > K_max; else 0;
  K_min = 4, K_max = 10.
- Total, Eq. 5: R_tot = R_ans + (1/K) * sum_k R_proc(r_k) + R_len, where R_proc(r_k) = 1 for a
  valid step (Eq. 3; judged, see :mod:`medrl.rewards.judged`). With K = 0 the process term is 0.

In training the three terms are three TRL reward functions with weight 1 each (``mrpo_answer``,
``mrpo_process`` from the judges, ``mrpo_length``): their weighted sum is Eq. 5. Steps come from
:func:`medrl.answers.completion.split_steps` on the ``<think>`` text; no ``<think>`` block means K = 0.
The option ``splitter: released`` (on ``mrpo_length`` and ``mrpo_process`` alike) counts and
judges the steps of MRPO's released splitter (:func:`medrl.answers.completion.released_split_steps`:
nltk's ``sent_tokenize``, or the released regex fallback without punkt data, then "1." fragments
merged with the next sentence).
"""

from __future__ import annotations

from typing import Sequence

from medrl.answers.completion import split_steps
from medrl.rewards import REWARDS
from medrl.rewards.base import (ENCODER_HELP, NUM_LAYERS_HELP, Reward, answer_metric, answer_rejection,
                               document_options, parse_all)
from medrl.rewards.lexical import bleu1, rouge1
from medrl.rewards.semantic import bertscore_f1

K_MIN, K_MAX = 4, 10


def answer_reward(rouge1: float, bleu1: float, bertscore: float,
                  lambda1: float = 0.25, lambda2: float = 0.5) -> float:
    """MRPO Eq. 2: lambda1 * (ROUGE-1 + BLEU-1) + lambda2 * BERTScore."""
    return lambda1 * (rouge1 + bleu1) + lambda2 * bertscore


def length_reward(num_steps: int, k_min: int = K_MIN, k_max: int = K_MAX) -> float:
    """MRPO Eq. 4: linear penalty for a step count outside [k_min, k_max]."""
    if not 0 < k_min <= k_max:
        raise ValueError(f"length_reward: need 0 < k_min <= k_max, got {k_min}, {k_max}")
    if num_steps < k_min:
        return -(k_min - num_steps) / k_min
    if num_steps > k_max:
        return -(num_steps - k_max) / k_max
    return 0.0


def process_reward(step_valid: Sequence[bool]) -> float:
    """The process term of Eq. 5: (1/K) * sum_k R_proc(r_k); 0.0 when K = 0."""
    return sum(1.0 for v in step_valid if v) / len(step_valid) if step_valid else 0.0


def total_reward(r_ans: float, step_valid: Sequence[bool], r_len: float) -> float:
    """MRPO Eq. 5: R_ans + mean_k R_proc(r_k) + R_len (``step_valid[k]`` = R_proc(r_k) == 1)."""
    return r_ans + process_reward(step_valid) + r_len


def answer_rewards(preds: Sequence[str], refs: Sequence[str], model: str | None = None,
                   num_layers: int | None = None, lambda1: float = 0.25,
                   lambda2: float = 0.5, questions: Sequence[str | None] | None = None) -> list[float]:
    """Eq. 2 for a batch of (answer, reference) pairs (one batched BERTScore call), after the guard.

    Guard (project addition, in the manner of MediX-R1's App. A.9 guard): an answer that
    :func:`medrl.rewards.base.answer_rejection` rejects (empty, one character, placeholder,
    symbols, injection, padding, hedge, negation of the reference, candidate list, hard mismatch)
    scores 0 before any metric, so no exploit earns more than a committed wrong answer's
    lexical/BERTScore overlap. (The TRL reward also passes the question to the guard.)
    An answer equal to the reference after normalisation keeps Eq. 2 (its value near 1); any
    other answer is scored as the decision reads it (:func:`medrl.answers.metric_text`: "<!-- X
    --> W" is scored as "W").
    """
    from medrl.answers import metric_text

    out = [0.0] * len(preds)
    qs = list(questions) if questions is not None else [None] * len(preds)
    todo = [i for i, (p, r) in enumerate(zip(preds, refs)) if answer_rejection(p, r, question=qs[i]) is None]
    if todo:  # the answer as the decision reads it (markup and HTML comments are never scored as content)
        ps = [metric_text(preds[i], refs[i], question=qs[i]) for i in todo]
        rs = [refs[i] for i in todo]
        bs = bertscore_f1(ps, rs, model, num_layers=num_layers)
        for i, p, r, b in zip(todo, ps, rs, bs):
            out[i] = answer_reward(rouge1(p, r), bleu1(p, r), b, lambda1, lambda2)
    return out


def length_batch(completions, columns, *, reward="mrpo_length", k_min=K_MIN, k_max=K_MAX,
                 splitter="medrl") -> list[float]:
    return [length_reward(len(split_steps(p.reasoning or "", splitter)), k_min, k_max)
            for p in parse_all(completions)]


@REWARDS.register("mrpo_answer")
def make_mrpo_answer(*, model: str | None = None, num_layers: int | None = None,
                     lambda1: float = 0.25, lambda2: float = 0.5) -> Reward:
    """R_ans (Eq. 2) of the parsed ``<answer>`` vs ``answer``; ``model``: BERTScore model."""
    return Reward("mrpo_answer", answer_metric, metric=answer_rewards, model=model,
                  num_layers=num_layers, lambda1=lambda1, lambda2=lambda2)


document_options(
    make_mrpo_answer, model=f"BERTScore encoder of R_ans (Eq. 2): {ENCODER_HELP}", num_layers=NUM_LAYERS_HELP,
    lambda1="MRPO Eq. 2: weight of ROUGE-1 + BLEU-1 in R_ans", lambda2="MRPO Eq. 2: weight of BERTScore in R_ans")


@REWARDS.register("mrpo_length")
def make_mrpo_length(*, k_min: int = K_MIN, k_max: int = K_MAX, splitter: str = "medrl") -> Reward:
    """R_len (Eq. 4) from the number of sentence steps in ``<think>``; every row is scorable.
    ``splitter``: "medrl" or "released" (MRPO's released splitter; module docstring)."""
    length_reward(k_min, k_min, k_max)  # validates the options now, not at the first batch
    split_steps("", splitter)
    return Reward("mrpo_length", length_batch, k_min=k_min, k_max=k_max, splitter=splitter)


document_options(make_mrpo_length, k_min="MRPO Eq. 4: fewest reasoning steps before the length reward turns negative",
                 k_max="MRPO Eq. 4: most reasoning steps before the length reward turns negative",
                 splitter="how <think> is cut into steps: 'medrl' (medrl's sentence splitter) or 'released' (MRPO's "
                          "released code: nltk's sent_tokenize where its punkt data is installed, else its regex "
                          "fallback, then '1.' fragments merged with the next sentence)")
