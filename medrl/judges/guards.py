"""Answers that no judge may pass: empty, one character, a template placeholder, no letters.

MediX-R1 (003_d5d6a0d73a50ab79.txt, Sec. 2.3 and 4.2 "Reward hacking") reports two exploits: the
embedding reward gave ``<answer>-</answer>`` full marks against "Renal artery", and a Qwen3-4B
judge passed ``The largest organ in the picture is [insert your answer here based on the medical
reasoning provided above].`` against "Lung". Every judge here (the LLM client and the reference
judge) settles such answers as *incorrect* before any call, so no model can be fooled by them.

The rules are the ones of the reward guard :func:`medrl.rewards.medix.answer_guard` (one
source for the placeholder heuristic: :func:`medrl.rewards.medix.is_placeholder`), so a judge
and the R_llm / R_embed rewards never disagree about what is trivial.
"""

from __future__ import annotations


def strip_answer(text: str | None) -> str:
    """Whitespace and full stops stripped from both ends (MediX-R1 "strip '.'")."""
    from medrl.rewards.medix import clean_answer

    return clean_answer(text)


def trivial_answer(text: str | None, reference: str | None = None, *, allow_one_char: bool = False) -> str | None:
    """Why ``text`` can never be a correct answer ("empty", "one character", "placeholder",
    "no letters or digits"), or None.

    A one-character answer is trivial unless it equals a one-character ``reference`` (a count
    such as "2") or ``allow_one_char`` (evaluation of option labels such as "B").
    """
    from medrl.rewards.medix import is_placeholder

    core = strip_answer(text)
    if not core:
        return "empty"
    if len(core) == 1 and not allow_one_char and core.casefold() != strip_answer(reference).casefold():
        return "one character"
    if is_placeholder(core):
        return "placeholder"
    if not any(ch.isalnum() for ch in core):
        return "no letters or digits"
    return None
