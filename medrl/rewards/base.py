"""Plumbing shared by the reward callables: columns, parsed answers, typed results.

TRL calls a reward function with ``prompts``, ``completions`` and every dataset column as a
keyword argument (one value per completion, the prompt's row repeated for each rollout), plus
a few extras of its own (``completion_ids``, ``trainer_state``, ...). These helpers read the
columns the rewards need and keep the rule "a row without a reference scores ``None``, never 0
or 1" in one place.

What a reward tells the trainer travels in two typed places, never in attributes left on the
function:

- **its result** (:class:`medrl.types.RewardResult`, re-exported here): the values TRL takes
  (a list), the rows it could not score, and its step outputs (``steps``, ``step_verdicts``);
  a reward that returns a plain list (TRL's callable) has a result with neither;
- **its signature**: a reward that reads a column the trainer fills (the one correctness decision
  ``correct``, CAPO's ``corrupted_correct``) names it as a parameter, as any TRL reward names
  the dataset columns it reads (:func:`reads_column`); the trainer fills such a column only when
  a reward of the run names it. A :class:`Reward` object declares them with ``reads=``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from medrl.answers.completion import completion_text, parse_response
from medrl.types import UNSCORABLE, ParsedResponse, RewardResult


def reward_signature(*columns: str) -> inspect.Signature:
    """TRL's reward signature ``(prompts, completions, *, <columns>=None, **columns)`` naming
    ``columns``: how a reward object declares the trainer-filled columns it reads."""
    p = inspect.Parameter
    return inspect.Signature([p("prompts", p.POSITIONAL_OR_KEYWORD), p("completions", p.POSITIONAL_OR_KEYWORD),
                              *(p(c, p.KEYWORD_ONLY, default=None) for c in columns),
                              p("columns", p.VAR_KEYWORD)])


def reads_column(fn: Any, name: str) -> bool:
    """Whether the reward function ``fn`` names the column ``name`` among its parameters (its
    signature, followed through ``functools.wraps``): the trainer fills a column it computes
    (``correct``, ``corrupted_correct``) only for a run with a reward that reads it."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    param = params.get(name)
    return param is not None and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)


#: help of an option naming a sentence encoder (the rewards that load one share it)
ENCODER_HELP = ("a local folder or a hub id (None: the offline all-MiniLM-L6-v2; a paper's encoder that is not in "
                "the local cache is replaced by it when encoders.substitute allows)")
#: help of a BERTScore ``num_layers`` option
NUM_LAYERS_HELP = "encoder layer whose embeddings BERTScore compares (None: the model's default)"

#: help of reward options, ``{factory: {option: help}}`` (:func:`document_options`)
_OPTION_HELP: dict[Any, dict[str, str]] = {}
#: options a recipe never sets itself: the run passes them (the run's judge)
RUN_OPTIONS = ("judge",)


def document_options(factory: Any, **help: str) -> None:
    """Record the help of the options of the reward factory ``factory`` (its keyword arguments),
    written once, next to the factory: ``medrl recipes show NAME --explain`` prints it. An option
    a method's config sets takes that field's help instead (the method's file is its place)."""
    _OPTION_HELP.setdefault(factory, {}).update({k: " ".join(v.split()) for k, v in help.items()})


def reward_options_of(factory: Any) -> list[str]:
    """The options a recipe may set for the reward ``factory``: its keyword arguments (less
    :data:`RUN_OPTIONS`), or, for a factory that takes ``**options``, the ones documented for it."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        params = ()
    named = [p.name for p in params
             if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in RUN_OPTIONS]
    if any(p.kind == p.VAR_KEYWORD for p in params):
        named += [k for k in _OPTION_HELP.get(factory, {}) if k not in named]
    return named


def option_help(factory: Any) -> dict[str, str]:
    """``{option: help}`` recorded for the reward ``factory`` (:func:`document_options`)."""
    return dict(_OPTION_HELP.get(factory, {}))


class Reward:
    """A named, picklable reward callable with TRL's signature.

    ``Reward(name, batch_fn, reads=(), **options)(prompts, completions, **columns)`` returns
    ``batch_fn(completions, columns, reward=name, **options)`` as a :class:`RewardResult`
    (``batch_fn`` may return :data:`~medrl.types.UNSCORABLE` for a row it cannot score: TRL gets
    None there, the result lists the row). ``reads`` names the trainer-filled columns it reads
    (``correct``, ``corrupted_correct``); they appear in its signature (:func:`reads_column`).
    ``batch_fn`` is a module-level function, so the object pickles (for reward workers in other
    processes) and TRL logs it under ``__name__``.
    """

    def __init__(self, name: str, batch_fn: Callable[..., list], *, reads: Sequence[str] = (), **options: Any):
        self.__name__ = name
        self.batch_fn = batch_fn
        self.options = options
        self.__signature__ = reward_signature(*reads)  # what inspect.signature reports

    def __call__(self, prompts, completions, **columns) -> RewardResult:
        return RewardResult(self.batch_fn(completions, columns, reward=self.__name__, **self.options))

    def __repr__(self) -> str:
        return f"Reward({self.__name__!r}, {self.options})"


def answer_metric(completions: Sequence[Any], columns: dict, *, reward: str,
                  metric: Callable[..., list[float]], **metric_options: Any) -> list[float | None]:
    """Batch function for :class:`Reward`: ``metric(preds, refs, **metric_options)`` on the
    parsed answers vs the ``answer`` column (see :func:`score_answers`)."""
    if "questions" in inspect.signature(metric).parameters:  # the metric runs the guard again: same question
        questions = column(columns, "question", len(completions), reward=reward)
        parsed = parse_all(completions)
        by_answer = {(p.answer, r): q for p, r, q in zip(parsed, column(columns, "answer", len(completions),
                                                                      reward=reward), questions)}
        return score_answers(completions, columns, lambda p, r: metric(
            p, r, questions=[by_answer.get((a, b)) for a, b in zip(p, r)], **metric_options), reward=reward)
    return score_answers(completions, columns, lambda p, r: metric(p, r, **metric_options), reward=reward)


def texts_of(completions: Sequence[Any]) -> list[str]:
    """The text of each TRL completion (string or chat messages), lone surrogates replaced by
    U+FFFD (:func:`medrl.common.text.clean_text`: they crash tokenizers, spaCy and HTTP clients)."""
    from medrl.common.text import clean_text

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
    """Parsed completions, reference answers (``None`` if missing/blank) and scorable rows: a
    reference, and an answer that can be read (a completion with two answer blocks or text after
    its answer has none: :func:`unreadable_rows`)."""
    n = len(completions)
    refs = [reference_text(r) for r in column(kwargs, "answer", n, reward=reward)]
    parsed = parse_all(completions)
    return parsed, refs, [i for i in range(n) if refs[i] is not None and parsed[i].answer_problem is None]


def unreadable_rows(parsed: Sequence[ParsedResponse], refs: Sequence[str | None]) -> list[int]:
    """Rows with a reference whose completion, read whole, has no one answer (more than one
    answer block, an answer inside the reasoning, text after the answer that states another:
    ``ParsedResponse.answer_problem``): an answer reward cannot score them
    (:data:`medrl.types.UNSCORABLE`)."""
    return [i for i, (p, r) in enumerate(zip(parsed, refs)) if r is not None and p.answer_problem is not None]


def answer_rejection(answer: str | None, reference: str | None, *, question: str | None = None) -> str | None:
    """The one guard run before every answer metric: why ``answer`` can never be paid as a
    correct answer to ``reference`` (the decision as text, ``"<reason>: <detail>"``), or None
    (the paper's formula decides).

    It is :func:`medrl.answers.decide` (the one answer decision): refused when the verdict is
    wrong (the shared guard's shapes; polarity, laterality, number/unit, organ, second finding,
    list, another script ...) or undecided because the answer holds the reference *plus*
    something the structure cannot read (an unknown symbol or word, "X-like", "formerly X", an
    ordinal for a count, no number for a count reference: :data:`medrl.answers.SUSPECT`) - a
    surface metric (embedding, BERTScore, ROUGE) would pay the overlap. A rejected answer earns
    what a committed wrong answer earns: each reward documents its value (its formula's minimum)."""
    from medrl.answers import decide

    d = decide(answer, reference, question=question)
    return str(d) if d.refused else None


def scored_text(answer: str | None, reference: str, *, question: str | None = None) -> str:
    """The text an answer metric scores: the answer as the one answer decision reads it
    (:func:`medrl.answers.metric_text`) - the reference itself when the answer is the reference by
    identity (case, spacing, a final full stop, markup wrappers, NFKC letters and digits,
    look-alike letters, the lexicon's identity), else the answer after the decision's listed
    normalisations and rewrites, with text it does not read (an HTML comment, directional marks)
    left out. A surface metric (ROUGE, BLEU, BERTScore, an embedding) would otherwise pay "**MRI**"
    less than "MRI", or pay a reference hidden in a comment; the formulas are unchanged."""
    from medrl.answers import metric_text

    return metric_text(answer, reference, question=question)


def guarded_rows(parsed: Sequence[ParsedResponse], refs: Sequence[str | None], idx: Sequence[int],
                 kwargs: dict, *, reward: str) -> set[int]:
    """Rows (among ``idx``) whose parsed answer :func:`answer_rejection` rejects: they can never
    be correct, so an answer metric must not pay them. The ``question`` column feeds the guard
    when present."""
    questions = column(kwargs, "question", len(parsed), reward=reward)
    return {i for i in idx if answer_rejection(parsed[i].answer, refs[i], question=questions[i]) is not None}


def guard_correct(parsed: Sequence[ParsedResponse], refs: Sequence[str | None], correct: Sequence[bool | None],
                  kwargs: dict, *, reward: str) -> list[bool | None]:
    """``correct`` with None for every row (with a reference) whose completion has no one answer
    (:func:`unreadable_rows`: unscorable, whatever a column or judge said of its first block) and
    False for every row whose answer is certainly wrong (:func:`medrl.answers.override`, the tier
    that may overrule a judge), whatever the judge or the trainer's ``correct`` column said (for
    rewards built on a correctness decision: CAPO R_DAR/R_PCR, StepGRPO StepRAR). The column
    itself already holds the whole decision where no judge decides
    (:mod:`medrl.rewards.correctness`), so an LLM judge's verdict on an answer the offline rules
    only doubt is kept, as docs/judges.md "Two tiers" says."""
    from medrl.answers import Verdict, override

    questions = column(kwargs, "question", len(parsed), reward=reward)
    unreadable = set(unreadable_rows(parsed, refs))
    # an unscorable row stays unscorable (a judge outage; a completion with no one answer)
    return [None if i in unreadable
            else False if c is not None and r is not None and override(p.answer, r, question=q).verdict is Verdict.WRONG
            else c
            for i, (p, r, c, q) in enumerate(zip(parsed, refs, correct, questions))]


def score_answers(
    completions: Sequence[Any],
    kwargs: dict,
    metric: Callable[[list[str], list[str]], list[float]],
    *,
    reward: str,
    guard: bool = True,
) -> list[float | None]:
    """Score each parsed ``<answer>`` against the ``answer`` column with a batch ``metric``.

    A missing/blank reference gives ``None``; a completion with no one answer (two answer
    blocks, text after the answer: :func:`unreadable_rows`) gives :data:`medrl.types.UNSCORABLE`. Guard (project addition; the metric stays the
    paper's): with ``guard`` (default) an answer :func:`answer_rejection` rejects
    (:func:`guarded_rows`; a missing ``<answer>`` block is the empty answer) scores 0.0, the
    metric's minimum, without the metric. An answer that is the reference up to normalisation
    is scored as the reference (:func:`scored_text`).
    ``metric(preds, refs)`` is called once, on the remaining scorable rows only.
    """
    parsed, refs, idx = answer_rows(completions, kwargs, reward=reward)
    out: list[Any] = [None] * len(completions)
    for i in unreadable_rows(parsed, refs):
        out[i] = UNSCORABLE  # no one answer in the completion: nothing to score
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
