"""Is a parsed answer correct? The rule shared by StepGRPO's StepRAR and CAPO's R_DAR.

Both papers reward a *correct* final answer (StepGRPO 004_e0b907c1e61319f8.txt Eq. 2:
ans = y; CAPO 002_37d042df30c2f660.txt Eq. 2: "o_i is correct") and were run on
closed/multiple-choice questions, where correctness is a string comparison. For open-ended
medical answers the decision is ours, in this order:

1. a ``correct`` column, when the trainer supplies one (e.g. verdicts of an answer-correctness
   judge): truthy/falsy per row; ``None`` in it means the judge could not decide and the row
   is unscorable;
2. otherwise a heuristic on the parsed ``<answer>`` and the reference (``rule``):
   - ``"normalized_match"`` (default): equal after :func:`normalize_answer` (lower case,
     punctuation dropped, articles a/an/the dropped, whitespace collapsed);
   - ``"rouge1"``: ROUGE-1 F >= ``threshold`` (default 0.5), or a normalised match.
   For yes/no references both rules compare only the first word of the answer
   ("Yes, there is a mass" is correct for "yes").
"""

from __future__ import annotations

import re

from medrl.rewards.base import column
from medrl.rewards.lexical import rouge1

RULES = ("normalized_match", "rouge1")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_NON_WORD = re.compile(r"[^\w\s]")


def normalize_answer(text: str | None) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed."""
    t = _NON_WORD.sub(" ", (text or "").lower())
    return " ".join(_ARTICLES.sub(" ", t).split())


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise ValueError(f"unknown correctness rule {rule!r}; known: {', '.join(RULES)}")
    return rule


def heuristic_correct(pred: str | None, ref: str, rule: str = "normalized_match",
                      threshold: float = 0.5) -> bool:
    """Heuristic correctness of ``pred`` against ``ref`` (see the module docstring)."""
    check_rule(rule)
    p, r = normalize_answer(pred), normalize_answer(ref)
    if not p or not r:
        return False
    if r in ("yes", "no"):
        return p.split()[0] == r
    if p == r:
        return True
    return rule == "rouge1" and rouge1(pred or "", ref) >= threshold


def _verdict(value, column_name: str, reward: str) -> bool | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, (bool, int, float)) or type(value).__name__.startswith(("bool", "int", "float")):
        return bool(value)
    raise ValueError(f"reward {reward or '?'}: column {column_name!r} holds {value!r}; "
                     "expected a bool (or 0/1, or None for an undecided verdict)")


def batch_correct(preds: list[str | None], refs: list[str | None], kwargs: dict, *,
                  column_name: str = "correct", use_column: bool = True,
                  rule: str = "normalized_match", threshold: float = 0.5,
                  reward: str = "") -> list[bool | None]:
    """Correctness per row: the ``column_name`` column when TRL passed it (and ``use_column``),
    else :func:`heuristic_correct`; None for unscorable rows (a None verdict in the column, or
    no reference when the heuristic decides)."""
    n = len(preds)
    if use_column and kwargs.get(column_name) is not None:
        return [_verdict(v, column_name, reward) for v in column(kwargs, column_name, n, reward=reward)]
    return [None if r is None else heuristic_correct(p, r, rule, threshold)
            for p, r in zip(preds, refs)]
