"""Answer correctness of the reference judge (MediX-R1 Sec. 2.3 LLM-judge criterion; MRPO App. H.1).

One call to the one answer decision (:func:`medrl.answers.decide`, built on the default-deny
answer equivalence :func:`medrl.answers.equivalence.equivalent`; the order is in its docstring and in
``docs/judges.md``, "The one answer decision"): correct only when the structure accounts for every
word of the answer. What the decision leaves undecided is *not correct* here, with the reason - an LLM
judge decides such answers; this offline judge does not guess.

There is no token-F1 or MiniLM-cosine fallback: a cosine pays meaning-changing variants ("left
temporal lobe" for "right temporal lobe" has cosine > 0.9). The embedding reward
(MediX-R1 R_embed) is a separate reward with its own guard.
"""

from __future__ import annotations

from typing import Sequence



def _f1(p: Sequence[str], r: Sequence[str]) -> float:
    """Token-set F1 of two word lists (used by the report rubric)."""
    ps, rs = set(p), set(r)
    common = len(ps & rs)
    if not common:
        return 0.0
    prec, rec = common / len(ps), common / len(rs)
    return 2 * prec * rec / (prec + rec)


def answer_correct(question: str, reference: str, prediction: str, *, allow_one_char: bool = False
                   ) -> tuple[bool, str]:
    """Whether ``prediction`` answers ``question`` as ``reference`` does, and why.

    ``allow_one_char``: a one-character letter/digit may be the reference's option label
    (MediX-R1 App. A.2 evaluation, :func:`medrl.answers.option_label_match`); otherwise it is judged like
    any answer. Raises ValueError on an empty reference.
    """
    from medrl.answers import Verdict, decide

    if not (reference or "").strip():
        raise ValueError("reference answer is empty")
    d = decide(prediction, reference, question=question, multiple_choice=allow_one_char)  # the one decision
    if d.verdict is Verdict.UNDECIDED:
        return False, f"not settled by the answer structure ({d}); counted as not correct"
    return d.verdict is Verdict.CORRECT, str(d)
