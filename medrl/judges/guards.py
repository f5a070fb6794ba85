"""Answers that no judge may pass (kept for imports): the rules live in :mod:`medrl.answer_guard`.

:func:`trivial_answer` is :func:`medrl.answer_guard.guard_answer` under its old name, so every
judge, reward and evaluation path shares one guard.
"""

from __future__ import annotations

from medrl.answer_guard import guard_answer, strip_answer

__all__ = ["guard_answer", "strip_answer", "trivial_answer"]


def trivial_answer(text: str | None, reference: str | None = None, *, allow_one_char: bool = False,
                   question: str | None = None, long_form: bool = False) -> str | None:
    """Why ``text`` can never be a correct answer to ``reference``, or None (see :func:`guard_answer`)."""
    return guard_answer(text, reference, question=question, allow_one_char=allow_one_char, long_form=long_form)
