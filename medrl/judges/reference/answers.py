"""Answer correctness of the reference judge (MediX-R1 Sec. 2.3 LLM-judge criterion; MRPO App. H.1).

One call to the shared, default-deny answer equivalence (:func:`medrl.equivalence.equivalent`;
the structure and the guard order are in its docstring and in ``docs/judges.md``, "Answer
equivalence"): correct only when the structure accounts for every word of the answer. What the
structure cannot settle (``verdict is None``) is *not correct* here, with the reason - an LLM
judge decides such answers; this offline judge does not guess.

There is no token-F1 or MiniLM-cosine fallback: a cosine pays meaning-changing variants ("left
temporal lobe" for "right temporal lobe" has cosine > 0.9). The embedding reward
(MediX-R1 R_embed) is a separate reward with its own guard.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from medrl.answer_guard import strip_answer
from medrl.clinical.lexicon import canonical_text


def _f1(p: Sequence[str], r: Sequence[str]) -> float:
    """Token-set F1 of two word lists (used by the report rubric)."""
    ps, rs = set(p), set(r)
    common = len(ps & rs)
    if not common:
        return 0.0
    prec, rec = common / len(ps), common / len(rs)
    return 2 * prec * rec / (prec + rec)


def _option_match(label: str, reference: str) -> bool:
    """A one-character answer against the reference: the same character, or the reference's
    option label ("B" for "B", "Option B", "(B) Pneumonia", "B. Pneumonia")."""
    ref = strip_answer(reference)
    if label.casefold() == ref.casefold() or canonical_text(label) == canonical_text(ref):
        return True
    m = re.match(r"^\(?\s*(?:option\s+)?([A-Za-z0-9])\s*[).:]?(?:\s|$)", ref, re.IGNORECASE)
    return bool(m) and m.group(1).casefold() == label.casefold()


def answer_correct(question: str, reference: str, prediction: str, *, allow_one_char: bool = False,
                   **_unused: Any) -> tuple[bool, str]:
    """Whether ``prediction`` answers ``question`` as ``reference`` does, and why.

    ``allow_one_char``: a one-character letter/digit may be the reference's option label
    (MediX-R1 App. A.2 evaluation, :func:`_option_match`); otherwise it is judged like any answer. Other keywords (the judge's former
    ``f1_threshold``, ``embed_threshold``, ``cosine``) are accepted and not used. Raises
    ValueError on an empty reference.
    """
    from medrl.equivalence import equivalent

    if not (reference or "").strip():
        raise ValueError("reference answer is empty")
    core = strip_answer(prediction)
    if allow_one_char and len(core) == 1 and core.isalnum() and _option_match(core, reference):
        return True, "option label"
    eq = equivalent(reference, prediction, question=question)
    if eq.verdict is None:
        return False, f"not settled by the answer structure ({eq.reason}); counted as not correct"
    return eq.verdict, eq.reason
