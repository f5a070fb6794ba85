"""Plumbing shared by the reward callables: columns, parsed answers, unscorable rows.

TRL calls a reward function with ``prompts``, ``completions`` and every dataset column as a
keyword argument (one value per completion, the prompt's row repeated for each rollout), plus
a few extras of its own (``completion_ids``, ``trainer_state``, ...). These helpers read the
columns the rewards need and keep the rule "a row without a reference scores ``None``, never 0
or 1" in one place.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from medrl.parsing import completion_text, parse_response
from medrl.types import ParsedResponse


class Reward:
    """A named, picklable reward callable with TRL's signature.

    ``Reward(name, batch_fn, **options)(prompts, completions, **columns)`` returns
    ``batch_fn(completions, columns, reward=name, **options)``; ``batch_fn`` is a module-level
    function, so the object pickles (for reward workers in other processes) and TRL logs it
    under ``__name__``.
    """

    def __init__(self, name: str, batch_fn: Callable[..., list], **options: Any):
        self.__name__ = name
        self.batch_fn = batch_fn
        self.options = options

    def __call__(self, prompts, completions, **columns) -> list[float | None]:
        # batch_fn may return medrl.types.UNSCORABLE for a row it cannot score: TRL gets None,
        # the rows go to self.last_unscorable (the trainer excludes them, algorithm.unscorable)
        from medrl.types import record_unscorable

        return record_unscorable(self, self.batch_fn(completions, columns, reward=self.__name__, **self.options))

    def __repr__(self) -> str:
        return f"Reward({self.__name__!r}, {self.options})"


def answer_metric(completions: Sequence[Any], columns: dict, *, reward: str,
                  metric: Callable[..., list[float]], **metric_options: Any) -> list[float | None]:
    """Batch function for :class:`Reward`: ``metric(preds, refs, **metric_options)`` on the
    parsed answers vs the ``answer`` column (see :func:`score_answers`)."""
    return score_answers(completions, columns, lambda p, r: metric(p, r, **metric_options), reward=reward)


def texts_of(completions: Sequence[Any]) -> list[str]:
    """The text of each TRL completion (string or chat messages), lone surrogates replaced by
    U+FFFD (:func:`medrl.text.clean_text`: they crash tokenizers, spaCy and HTTP clients)."""
    from medrl.text import clean_text

    return [clean_text(completion_text(c)) for c in completions]


def parse_all(completions: Sequence[Any]) -> list[ParsedResponse]:
    return [parse_response(t) for t in texts_of(completions)]


def column(kwargs: dict, name: str, n: int, *, required: bool = False, reward: str = "") -> list:
    """The column ``name`` as a list of ``n`` values; all ``None`` when TRL did not pass it.

    ``required=True`` turns a missing column into a ValueError naming the reward and the column
    (for columns only the trainer can provide, where silently scoring nothing would hide a bug).
    """
    if name not in kwargs or kwargs[name] is None:
        if required:
            raise ValueError(
                f"reward {reward or '?'}: needs the {name!r} column (one value per completion); "
                f"got columns {sorted(kwargs)}"
            )
        return [None] * n
    values = list(kwargs[name])
    if len(values) != n:
        raise ValueError(
            f"reward {reward or '?'}: column {name!r} has {len(values)} values for {n} completions"
        )
    return values


def reference_text(value: Any) -> str | None:
    """A usable reference string, or None when missing/blank (the row is then unscorable)."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:  # NaN from pandas-backed datasets
        return None
    text = value if isinstance(value, str) else str(value)
    text = text.strip()
    return text or None


def answer_rows(completions: Sequence[Any], kwargs: dict, *, reward: str
                ) -> tuple[list[ParsedResponse], list[str | None], list[int]]:
    """Parsed completions, reference answers (``None`` if missing/blank) and scorable rows."""
    n = len(completions)
    refs = [reference_text(r) for r in column(kwargs, "answer", n, reward=reward)]
    parsed = parse_all(completions)
    return parsed, refs, [i for i in range(n) if refs[i] is not None]


def answer_rejection(answer: str | None, reference: str | None, *, question: str | None = None) -> str | None:
    """The one guard run before every answer metric: why ``answer`` can never be a correct
    answer to ``reference`` (a reason), or None (the paper's formula decides).

    In order: the shared shape guard :func:`medrl.answer_guard.guard_answer` (empty, placeholder,
    symbols, injection, padding, hedge, negation, candidate list), then the hard-mismatch check
    :func:`medrl.equivalence.hard_mismatch` (polarity, laterality, number/unit, organ, second
    finding, list, hedge, another script). A rejected answer earns what a committed wrong answer
    earns: each reward documents its value (its formula's minimum for the row)."""
    from medrl.answer_guard import guard_answer

    why = guard_answer(answer, reference, question=question)  # first: fast, and it stops 50k-character padding
    if reference is None:
        return why
    if why is not None:
        # the shape guard reads the raw text: "<b>MRI</b>" looks like a tag list, yet after
        # normalisation (markup, NFKC, confusables) it is the reference, and is not refused
        return None if answer and len(answer) <= 4 * len(reference) + 64 and is_identity(answer, reference) else why
    from medrl.equivalence import hard_mismatch

    return hard_mismatch(reference, answer or "", question=question)


def is_identity(answer: str | None, reference: str | None, *, question: str | None = None) -> bool:
    """True when ``answer`` is ``reference`` up to normalisation: case, spacing, Unicode NFKC,
    look-alike letters, markup (``**X**``, ``<b>X</b>``, ``\\boxed{X}``), or the lexicon's identity
    (:func:`medrl.equivalence.equivalent` with an identity basis)."""
    if not answer or not reference:
        return False
    from medrl.equivalence import equivalent

    return equivalent(reference, answer, question=question).identical


def scored_text(answer: str | None, reference: str, *, question: str | None = None) -> str:
    """The text an answer metric scores: the reference itself when the answer is the reference
    up to normalisation (:func:`is_identity`), else the answer as written. A surface metric
    (ROUGE, BLEU, BERTScore, an embedding) would otherwise pay "**MRI**" or a fullwidth "ＭＲＩ"
    less than "MRI" - a correct answer must keep its full reward. The formulas are unchanged."""
    return reference if is_identity(answer, reference, question=question) else (answer or "")


def guarded_rows(parsed: Sequence[ParsedResponse], refs: Sequence[str | None], idx: Sequence[int],
                 kwargs: dict, *, reward: str) -> set[int]:
    """Rows (among ``idx``) whose parsed answer :func:`answer_rejection` rejects: they can never
    be correct, so an answer metric must not pay them. The ``question`` column feeds the guard
    when present."""
    questions = column(kwargs, "question", len(parsed), reward=reward)
    return {i for i in idx if answer_rejection(parsed[i].answer, refs[i], question=questions[i]) is not None}


def guard_correct(answers: Sequence[str | None], refs: Sequence[str | None], correct: Sequence[bool | None],
                  kwargs: dict, *, reward: str) -> list[bool | None]:
    """``correct`` with False for every row (with a reference) whose answer
    :func:`answer_rejection` rejects, whatever the judge or the trainer's ``correct`` column said
    (for rewards built on a correctness decision: CAPO R_DAR/R_PCR, StepGRPO StepRAR)."""
    questions = column(kwargs, "question", len(answers), reward=reward)
    return [False if r is not None and answer_rejection(a, r, question=q) is not None else c
            for a, r, c, q in zip(answers, refs, correct, questions)]


def score_answers(
    completions: Sequence[Any],
    kwargs: dict,
    metric: Callable[[list[str], list[str]], list[float]],
    *,
    reward: str,
    guard: bool = True,
) -> list[float | None]:
    """Score each parsed ``<answer>`` against the ``answer`` column with a batch ``metric``.

    A missing/blank reference gives ``None``. Guard (project addition; the metric stays the
    paper's): with ``guard`` (default) an answer :func:`answer_rejection` rejects
    (:func:`guarded_rows`; a missing ``<answer>`` block is the empty answer) scores 0.0, the
    metric's minimum, without the metric. An answer that is the reference up to normalisation
    is scored as the reference (:func:`scored_text`).
    ``metric(preds, refs)`` is called once, on the remaining scorable rows only.
    """
    parsed, refs, idx = answer_rows(completions, kwargs, reward=reward)
    out: list[float | None] = [None] * len(completions)
    if guard:
        rejected = guarded_rows(parsed, refs, idx, kwargs, reward=reward)
        for i in rejected:
            out[i] = 0.0
        idx = [i for i in idx if i not in rejected]
    if idx:
        questions = column(kwargs, "question", len(completions), reward=reward)
        scores = metric([scored_text(parsed[i].answer, refs[i], question=questions[i]) for i in idx],
                        [refs[i] for i in idx])
        for i, s in zip(idx, scores):
            out[i] = float(s)
    return out
