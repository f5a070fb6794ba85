"""StepGRPO rule-based step rewards (004_e0b907c1e61319f8.txt Sec. 3.2, Eq. 2-3).

StepRAR, Eq. 2 (alpha = 0.1), with k = |v_match| / |v| the share of key steps v found in the
reasoning by soft matching:

    r_auc = 1 + alpha * k   if the answer is correct (ans = y)
            alpha * k       if an answer is given but wrong
            0               if there is no answer

StepRVR, Eq. 3: r_val = 1 if the reasoning is complete (delta_c) and logical (delta_l), else 0.
The reward is r = r_auc + r_val (two TRL rewards with weight 1: ``steprar`` and ``steprvr``).

Key steps come in the ``key_steps`` column: a list whose items are either a string or a list
of equivalent forms of one key step (the paper augments each step into equivalent forms; a step
matches when any form does). A row whose key steps are missing/empty is unscorable by default
(``missing_key_steps="none"``); ``"zero"`` scores it with k = 0.

Soft matching (the paper gives no algorithm; each mode is a project heuristic), all on the
``<think>`` text after :func:`medrl.rewards.correctness.normalize_answer`:

- ``"substring"`` (default): the normalised form occurs in the normalised reasoning as whole
  words;
- ``"fuzzy"``: the best difflib ``SequenceMatcher`` ratio between the form and any window of
  the reasoning with the form's word count (+-1 word) is >= ``match_threshold`` (default 0.85);
- ``"embedding"``: the cosine between the form and its closest reasoning step
  (:func:`medrl.parsing.split_steps`) is >= ``match_threshold`` (default 0.7), with the
  sentence encoder of :mod:`medrl.embeddings`.

Correctness of the answer: :mod:`medrl.rewards.correctness` (a ``correct`` column if given,
else a normalised-match heuristic; ``rule="rouge1"`` adds ROUGE-1 >= ``threshold``).
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Sequence

from medrl.parsing import parse_response, split_steps
from medrl.rewards import REWARDS
from medrl.rewards.base import Reward, column, parse_all, reference_text, texts_of
from medrl.rewards.correctness import batch_correct, check_rule, normalize_answer

MATCH_MODES = ("substring", "fuzzy", "embedding")
DEFAULT_MATCH_THRESHOLD = {"substring": None, "fuzzy": 0.85, "embedding": 0.7}


def accuracy_reward(answered: bool, correct: bool, k: float, alpha: float = 0.1) -> float:
    """StepRAR, Eq. 2: 1 + alpha*k if correct, alpha*k if answered but wrong, 0 if no answer."""
    if not answered:
        return 0.0
    return (1.0 if correct else 0.0) + alpha * k


def key_step_forms(step: Any) -> list[str]:
    """The non-empty equivalent forms of one key step (a string or a list of strings)."""
    forms = [step] if isinstance(step, str) else list(step or [])
    return [f for f in forms if isinstance(f, str) and normalize_answer(f)]


def _substring(form: str, reasoning_norm: str) -> bool:
    return f" {normalize_answer(form)} " in f" {reasoning_norm} "


def _fuzzy(form: str, reasoning_norm: str, threshold: float) -> bool:
    f = normalize_answer(form)
    if _substring(form, reasoning_norm):
        return True
    words, n = reasoning_norm.split(), len(f.split())
    for size in {max(1, n - 1), n, n + 1}:
        for i in range(max(1, len(words) - size + 1)):
            window = " ".join(words[i:i + size])
            if difflib.SequenceMatcher(None, f, window).ratio() >= threshold:
                return True
    return False


def _embedding_matched(forms_per_step: list[list[str]], steps: list[str], threshold: float,
                       model: str | None) -> int:
    from medrl.embeddings import encode

    flat = [f for forms in forms_per_step for f in forms]
    if not flat or not steps:
        return 0
    emb = encode(flat + steps, model)
    sims = emb[: len(flat)] @ emb[len(flat):].T  # cosine: rows are L2-normalised
    best = iter(sims.max(axis=1).tolist())
    return sum(1 for forms in forms_per_step if max(next(best) for _ in forms) >= threshold)


def key_step_ratio(reasoning: str | None, key_steps: Sequence[Any], mode: str = "substring",
                   threshold: float | None = None, model: str | None = None) -> float:
    """k = |v_match| / |v| (StepGRPO Sec. 3.2) for one reasoning text; 0.0 without reasoning.

    ``key_steps`` items are strings or lists of equivalent forms; items with no usable form
    still count in |v|. Raises ValueError for an empty ``key_steps`` or an unknown ``mode``.
    """
    if mode not in MATCH_MODES:
        raise ValueError(f"unknown key-step match mode {mode!r}; known: {', '.join(MATCH_MODES)}")
    if not key_steps:
        raise ValueError("key_step_ratio: key_steps is empty")
    thr = DEFAULT_MATCH_THRESHOLD[mode] if threshold is None else threshold
    forms_per_step = [key_step_forms(s) for s in key_steps]
    if not reasoning or not reasoning.strip():
        return 0.0
    if mode == "embedding":
        usable = [f for f in forms_per_step if f]
        matched = _embedding_matched(usable, [s.text for s in split_steps(reasoning)], thr, model)
    else:
        norm = normalize_answer(reasoning)
        test = (lambda f: _substring(f, norm)) if mode == "substring" else (lambda f: _fuzzy(f, norm, thr))
        matched = sum(1 for forms in forms_per_step if any(test(f) for f in forms))
    return matched / len(forms_per_step)


# Heuristic cues of a background / image-description step (StepRVR completeness): words that
# describe what the image shows or restate what the question asks.
DESCRIPTION_CUES = re.compile(
    r"""\b(?:image|images|picture|scan|film|radiograph\w*|x-?ray|ct|mri|mr|ultrasound|sonogra\w*
      |view|slice|section|projection|modality|shows?|showing|shown|demonstrat\w*|reveal\w*
      |visible|seen|appear\w*|depict\w*|display\w*|observ\w*|there\s+(?:is|are)|question
      |asks?|asked|asking)\b""",
    re.IGNORECASE | re.VERBOSE,
)


def validity_parts(text: str, min_reasoning_steps: int = 2, background_window: int = 2) -> dict:
    """Heuristic StepRVR checks (Eq. 3) on one response; the paper gives no detector.

    - ``background``: index of the first reasoning step (:func:`medrl.parsing.split_steps` of
      the ``<think>`` text) containing a :data:`DESCRIPTION_CUES` word, or None;
    - completeness (``complete``): a background step, at least ``min_reasoning_steps`` other
      steps, and a non-empty ``<answer>``;
    - logic (``logical``): the background step is among the first ``background_window`` steps
      and at least ``min_reasoning_steps`` steps follow it (background before the solution
      steps), and the answer block comes after the reasoning with nothing after it (the strict
      format check), so the answer appears only once the steps are done.
    """
    parsed = parse_response(text)
    steps = [s.text for s in split_steps(parsed.reasoning or "")]
    background = next((i for i, s in enumerate(steps) if DESCRIPTION_CUES.search(s)), None)
    answered = bool((parsed.answer or "").strip())
    complete = background is not None and len(steps) - 1 >= min_reasoning_steps and answered
    logical = (background is not None and background < background_window
               and len(steps) - background - 1 >= min_reasoning_steps and parsed.well_formed)
    return {"steps": len(steps), "background": background, "answered": answered,
            "complete": complete, "logical": logical}


def validity_reward(text: str, min_reasoning_steps: int = 2, background_window: int = 2) -> float:
    """StepRVR, Eq. 3: 1.0 if the response is complete and logical (heuristic), else 0.0."""
    p = validity_parts(text, min_reasoning_steps, background_window)
    return 1.0 if p["complete"] and p["logical"] else 0.0


def steprar_batch(completions, columns, *, reward="steprar", alpha=0.1, match="substring",
                  match_threshold=None, model=None, rule="normalized_match", threshold=0.5,
                  use_correct_column=True, missing_key_steps="none") -> list[float | None]:
    """Batch function of the ``steprar`` reward (options: see :func:`make_steprar`)."""
    n = len(completions)
    parsed = parse_all(completions)
    refs = [reference_text(r) for r in column(columns, "answer", n, reward=reward)]
    keys = column(columns, "key_steps", n, reward=reward)
    correct = batch_correct([p.answer for p in parsed], refs, columns, use_column=use_correct_column,
                            rule=rule, threshold=threshold, reward=reward)
    out: list[float | None] = []
    for p, ks, ok in zip(parsed, keys, correct):
        ks = [ks] if isinstance(ks, str) else list(ks or [])
        if ok is None or (not ks and missing_key_steps == "none"):
            out.append(None)
            continue
        k = key_step_ratio(p.reasoning, ks, match, match_threshold, model) if ks else 0.0
        out.append(accuracy_reward(bool((p.answer or "").strip()), ok, k, alpha))
    return out


def steprvr_batch(completions, columns, *, reward="steprvr", min_reasoning_steps=2,
                  background_window=2) -> list[float]:
    return [validity_reward(t, min_reasoning_steps, background_window) for t in texts_of(completions)]


@REWARDS.register("steprar")
def make_steprar(*, alpha: float = 0.1, match: str = "substring",
                 match_threshold: float | None = None, model: str | None = None,
                 rule: str = "normalized_match", threshold: float = 0.5,
                 use_correct_column: bool = True, missing_key_steps: str = "none") -> Reward:
    """StepRAR (Eq. 2). Options: ``alpha``; key-step ``match`` mode and ``match_threshold``;
    ``model`` (embedding matching); correctness ``rule``/``threshold``/``use_correct_column``;
    ``missing_key_steps`` "none" (row unscorable) or "zero" (k = 0)."""
    check_rule(rule)
    if match not in MATCH_MODES:
        raise ValueError(f"steprar: unknown match mode {match!r}; known: {', '.join(MATCH_MODES)}")
    if missing_key_steps not in ("none", "zero"):
        raise ValueError(f"steprar: missing_key_steps is 'none' or 'zero', got {missing_key_steps!r}")
    return Reward("steprar", steprar_batch, alpha=alpha, match=match, match_threshold=match_threshold,
                  model=model, rule=rule, threshold=threshold, use_correct_column=use_correct_column,
                  missing_key_steps=missing_key_steps)


@REWARDS.register("steprvr")
def make_steprvr(*, min_reasoning_steps: int = 2, background_window: int = 2) -> Reward:
    """StepRVR (Eq. 3), heuristic completeness/logic checks; every row is scorable."""
    return Reward("steprvr", steprvr_batch, min_reasoning_steps=min_reasoning_steps,
                  background_window=background_window)
