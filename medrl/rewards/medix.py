"""MediX-R1 rewards (MediX-R1 paper, Sec. 2.3, 4.2 and App. A.9).

Composite (Sec. 2.3): r = 0.10 * R_format + 0.5175 * R_llm + 0.3375 * R_embed + 0.045 * R_modality
(= 0.1 format + 0.9 x (0.575, 0.375, 0.05) over the non-format terms). In training these are
four TRL rewards with :data:`MEDIX_WEIGHTS` as weights (``format``, ``medix_llm`` from
:mod:`medrl.rewards.judged`, ``medix_embed``, ``modality``); :func:`composite_reward` computes
the same sum from component values.

Answer guards (App. A.9 code, Sec. 4.2 exploits) of R_embed, :func:`answer_guard`, built on the
project's one guard before every answer metric :func:`medrl.rewards.base.answer_rejection`
(shape guard, then hard mismatch); they decide a row without the embedding where they can:

- the answer is the parsed ``<answer>`` text (a response with no ``<answer>`` block scores 0;
  the paper's code falls back to the whole response, which would let an unformatted response be
  judged); answer and reference are stripped of whitespace and of '.' at both ends;
- empty or one-character answer -> 0 (``<answer>-</answer>`` against "Renal artery"). Project
  change: a one-character answer equal to a one-character reference ("2" for "How many ...?")
  is an exact match, not an exploit, and gets 1;
- exact match -> 1 (project: compared case-insensitively with whitespace runs collapsed; the
  paper compares raw strings, and a judge accepts a case change anyway);
- heuristic placeholder guard (project addition, Sec. 4.2 "LLM judge exploit"): template text
  such as "[insert your answer here ...]", "<your answer>" or "your answer here" -> 0;
- heuristic: an answer with no letter or digit at all ("--", "?!") -> 0;
- project guards (:func:`medrl.rewards.base.answer_rejection`): injections, padding far beyond
  the reference, hedges, negations of the reference in any form, candidate lists, and hard
  mismatches (another side, a dropped side, another number or unit, another organ, a second
  finding) -> 0, what a committed wrong answer earns (a list of the reference's own items in
  another order is left to the scorer). Without this, the embedding pays "left temporal lobe"
  for "right temporal lobe" and "Hydrocephalus: no" for "Hydrocephalus" (cosine >= 0.8).

R_embed (Sec. 2.3.2, 4.2 "Embedding gating"): after the guards, 0 if the answer is shorter
than ``min_chars`` characters or ``min_words`` words, or if more than ``max_nonalnum_ratio`` of
its non-space characters are neither letters nor digits; otherwise punctuation is replaced by
spaces in both texts and R_embed = 1 if cos(e_pred, e_ref) >= 0.8 else 0.
"""

from __future__ import annotations

import string

from medrl.answers.guard import guard_answer, is_placeholder, match_key  # noqa: F401
from medrl.answers.guard import strip_answer as clean_answer
from medrl.rewards import REWARDS
from medrl.rewards.base import (ENCODER_HELP, Reward, answer_rejection, answer_rows, column,  # noqa: F401
                               document_options, unreadable_rows)
from medrl.types import UNSCORABLE

MEDIX_WEIGHTS = {"format": 0.10, "llm": 0.5175, "embed": 0.3375, "modality": 0.045}

_PUNCT_TABLE = str.maketrans({c: " " for c in string.punctuation})


def answer_guard(pred: str | None, ref: str, *, question: str | None = None) -> float | None:
    """The MediX-R1 reward guard (App. A.9 code order): 0.0 / 1.0 when it decides, None when a
    scorer (judge, embedding) must decide.

    1. no answer / empty after ``strip().strip('.')`` -> 0; one character -> 0 unless it equals a
       one-character reference (App. A.9: ``len(pred) <= 1`` -> 0; project change for counts);
    2. every other rule of the shared guard :func:`medrl.rewards.base.answer_rejection`
       (placeholder, symbols only, hidden characters, padding, injection, hedge, negation of the
       reference, candidate list, hard mismatch) -> 0 (the guard never rejects the reference's
       own text, so running it before the exact match only catches an "equal" answer carrying
       padding or hidden marks);
    3. correct by identity -> 1 (project: the paper's exact match, widened to the listed
       normalisations - case, spacing, NFKC letters and digits, look-alike letters, markup - and
       the lexicon's identity, :func:`medrl.answers.decide`, which the embedding would otherwise
       pay less); undecided because the answer holds the reference plus
       an unknown symbol or word ("X-like", "consider X", "X WNL") -> 0, like a wrong answer.
    """
    from medrl.answers import decide

    p, r = clean_answer(pred), clean_answer(ref)
    if not p:
        return 0.0
    d = decide(p, r, question=question)  # the one answer decision (answer_rejection's refusals)
    if d.refused:
        return 0.0
    if d.identical:
        return 1.0
    return None


def nonalnum_ratio(text: str) -> float:
    """Share of the non-space characters that are neither letters nor digits (0.0 if none)."""
    chars = [c for c in text if not c.isspace()]
    return sum(1 for c in chars if not c.isalnum()) / len(chars) if chars else 0.0


def embedding_gate(pred: str, min_chars: int = 2, min_words: int = 1,
                   max_nonalnum_ratio: float = 0.5) -> bool:
    """Heuristic gate (Sec. 4.2 (ii)): True when ``pred`` may be scored by embedding similarity."""
    p = clean_answer(pred)
    return (len(p) >= min_chars and len(p.split()) >= min_words
            and nonalnum_ratio(p) <= max_nonalnum_ratio)


def strip_punctuation(text: str) -> str:
    """ASCII punctuation replaced by spaces, whitespace collapsed (done before embedding)."""
    return " ".join(text.translate(_PUNCT_TABLE).split())


def embed_rewards(preds: list[str | None], refs: list[str], threshold: float = 0.8,
                  model: str | None = None, min_chars: int = 2, min_words: int = 1,
                  max_nonalnum_ratio: float = 0.5, questions: list[str | None] | None = None) -> list[float]:
    """R_embed for a batch: guards, gate, then 1.0 if cosine >= ``threshold`` else 0.0."""
    from medrl.answers import metric_text
    from medrl.common.embeddings import cosine_pairs

    qs = questions if questions is not None else [None] * len(preds)
    out: list[float | None] = [answer_guard(p, r, question=q) for p, r, q in zip(preds, refs, qs)]
    todo = []
    for i, (p, r) in enumerate(zip(preds, refs)):
        if out[i] is None:  # the answer as the decision reads it: markup and comments are never embedded
            a = strip_punctuation(clean_answer(metric_text(p, r, question=qs[i])))
            b = strip_punctuation(clean_answer(r))
            if not embedding_gate(p, min_chars, min_words, max_nonalnum_ratio) or not a or not b:
                out[i] = 0.0
            else:
                todo.append((i, a, b))
    if todo:
        sims = cosine_pairs([a for _, a, _ in todo], [b for _, _, b in todo], model)
        for (i, _, _), s in zip(todo, sims):
            out[i] = 1.0 if s >= threshold else 0.0
    return [float(v) for v in out]


def composite_reward(r_format: float | None, r_llm: float | None, r_embed: float | None,
                     r_modality: float | None, weights: dict = MEDIX_WEIGHTS) -> float | None:
    """MediX-R1 composite: w_fmt*R_format + w_llm*R_llm + w_emb*R_embed + w_mod*R_modality.

    None when any component is None (unscorable). Weights default to 0.10/0.5175/0.3375/0.045.
    """
    parts = {"format": r_format, "llm": r_llm, "embed": r_embed, "modality": r_modality}
    if any(v is None for v in parts.values()):
        return None
    return sum(weights[k] * float(v) for k, v in parts.items())


def embed_batch(completions, columns, *, reward="medix_embed", **options) -> list[float | None]:
    """Batch function of the ``medix_embed`` reward (parsed answers, ``None`` without a reference)."""
    parsed, refs, idx = answer_rows(completions, columns, reward=reward)
    questions = column(columns, "question", len(completions), reward=reward)
    out: list = [None] * len(completions)
    for i in unreadable_rows(parsed, refs):
        out[i] = UNSCORABLE  # the completion has no one answer (two answer blocks, text after it)
    scores = embed_rewards([parsed[i].answer for i in idx], [refs[i] for i in idx], **options,
                           questions=[questions[i] for i in idx])
    for i, s in zip(idx, scores):
        out[i] = s
    return out


@REWARDS.register("medix_embed")
def make_medix_embed(*, threshold: float = 0.8, model: str | None = None, min_chars: int = 2,
                     min_words: int = 1, max_nonalnum_ratio: float = 0.5) -> Reward:
    """R_embed (Sec. 2.3.2) of the parsed ``<answer>`` vs ``answer``; ``None`` without a reference."""
    return Reward("medix_embed", embed_batch, threshold=threshold, model=model, min_chars=min_chars,
                  min_words=min_words, max_nonalnum_ratio=max_nonalnum_ratio)


document_options(
    make_medix_embed,
    threshold="MediX-R1 Sec. 2.3.2: R_embed is 1 when the cosine of answer and reference reaches this",
    model=f"R_embed's sentence encoder (the paper: MedEmbed-large): {ENCODER_HELP}",
    min_chars="MediX-R1 Sec. 4.2 (ii) gate: an answer shorter than this many characters scores 0 without the encoder",
    min_words="gate: an answer with fewer words scores 0 without the encoder",
    max_nonalnum_ratio="gate: an answer whose share of non-alphanumeric characters exceeds this scores 0")
