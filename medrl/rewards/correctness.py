"""Is a rollout's answer correct? One decision shared by every method, the trainer, curation and eval.

StepGRPO's StepRAR (StepGRPO Eq. 2: ans = y), CAPO's R_DAR and R_PCR
(CAPO Eq. 2-3: "o_i is correct") and MediX-R1's R_llm
(MediX-R1 Sec. 2.3.1: a strict YES/NO judge) all reward a *correct* final
answer. Those papers decide it by string comparison (closed questions) or a judge (open ones).
Here it is one function, :func:`decide_correct`, in this order:

1. no reference, or a completion with no one answer (two answer blocks, an answer inside the
   reasoning, text after the answer: a :class:`medrl.types.ParsedResponse` with an
   ``answer_problem``) -> ``None`` (unscorable, never a silent 0 or 1);
2-3. the one answer decision: wrong -> ``False``; correct by identity (the listed normalisations
   or the lexicon's identity) -> ``True``; both without any judge request. Where a judge will be
   asked (mode ``"judge"``) only the tier that is certainly wrong refuses
   (:func:`medrl.answers.override`: shapes no wording can make correct, and contradictions of an
   answer read in full); without a judge the whole decision does (:func:`medrl.answers.decide`:
   the guard's shapes, polarity, laterality/location changed or dropped, another organ or
   modality, numbers that differ after unit conversion, a second finding, ...), as in
   docs/judges.md "Two tiers";
4. otherwise the *mode* decides:

   - ``"exact"``: the decision says correct (default-deny: the reference plus allowed
     qualifiers, a listed frame, list items in any order, yes/no by polarity, a count by its
     number) -> ``True``; undecided -> ``False`` (``rule="rouge1"`` also accepts a ROUGE-1
     F >= ``threshold`` for an answer the decision does not refuse);
   - ``"judge"``: the judge's ``answer_correct`` (one request; the record's image goes with
     it, the judge decides whether to send it); an unscored verdict -> ``None``;
   - ``"embedding"``: the decision says correct, or MiniLM cosine of answer and reference >=
     ``embed_threshold`` (0.8, the MediX-R1 R_embed threshold) for an answer it does not refuse
     (:attr:`medrl.answers.Decision.refused`);
   - ``"auto"`` (default): ``"judge"`` for open-ended records when a judge is configured,
     ``"exact"`` for closed ones (yes/no or multiple choice, :func:`is_closed_question`) and
     when there is no judge.

In training, :class:`medrl.train.trainer.MedGRPOTrainer` computes :func:`correctness_column`
once per rollout (and once per CAPO corrupted rollout) with the recipe's
``algorithm.correctness`` mode and the run's judge, and hands it to every reward as the
``correct`` / ``corrupted_correct`` columns, so no judge request is made twice for one rollout.
A reward called without these columns falls back to the same function (``"auto"`` with its own
judge, if it has one), so the decision is the same with or without the trainer. The CAPO
difficulty filter (:mod:`medrl.data.curation.capo`) and evaluation call it too.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from medrl.rewards.base import column, reads_column, reference_text
from medrl.rewards.lexical import rouge1
from medrl.common.text import clean_text
from medrl.types import ParsedResponse

RULES = ("normalized_match", "rouge1")
MODES = ("auto", "exact", "judge", "embedding")
EMBED_THRESHOLD = 0.8  # MediX-R1 Sec. 2.3.2: cos >= 0.8
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_NON_WORD = re.compile(r"[^\w\s]")
_YES_NO = ("yes", "no")


def normalize_answer(text: str | None) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed."""
    t = _NON_WORD.sub(" ", (text or "").lower())
    return " ".join(_ARTICLES.sub(" ", t).split())


#: help of the options of a reward built on the one correctness decision (CAPO's R_DAR and R_PCR, StepRAR)
CORRECTNESS_OPTION_HELP = {
    "rule": ("correctness rule without the trainer's column: normalized_match (the one answer decision) or rouge1 "
             "(ROUGE-1 >= threshold for an answer the decision does not refuse)"),
    "threshold": "ROUGE-1 an answer needs under rule rouge1",
    "use_correct_column": ("read the trainer's one correctness decision (the correct column, algorithm.correctness); "
                           "false: decide with rule and threshold inside the reward"),
}


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise ValueError(f"unknown correctness rule {rule!r}; known: {', '.join(RULES)}")
    return rule


def check_mode(mode: str | None) -> str:
    """``mode`` validated (``None`` means ``"auto"``)."""
    mode = "auto" if mode is None else str(mode).strip().lower()
    if mode not in MODES:
        raise ValueError(f"unknown correctness mode {mode!r}; known: {', '.join(MODES)}")
    return mode


def _field(record: Any, name: str) -> Any:
    return record.get(name) if isinstance(record, dict) else getattr(record, name, None)


def is_closed_question(record: Any = None, *, answer: str | None = None, answer_type: str | None = None,
                       open_ended: bool | None = None, multiple_choice: bool | None = None) -> bool:
    """Is this a closed question, decided by exact match: a yes/no reference or a choice among
    options shown to the model?

    Pass a record (:class:`medrl.data.record.VQARecord` or a dict with ``answer``,
    ``answer_type``, ``open_ended``, ``extras``) or the fields. Closed when the reference is
    yes/no; or the record shows its options (``extras["choices_in_prompt"]`` /
    ``multiple_choice``); or the dataset labels it ``CLOSED`` *and* ``open_ended`` is False
    (VQA-RAD's CLOSED "A or B?" questions with a free-text answer are open-ended, as in
    :func:`medrl.data.record.is_open_ended_answer`). Everything else is open - also a record
    built in code whose ``open_ended`` flag was left at its default.
    """
    if record is not None:
        answer = _field(record, "answer") if answer is None else answer
        answer_type = _field(record, "answer_type") if answer_type is None else answer_type
        open_ended = _field(record, "open_ended") if open_ended is None else open_ended
        extras = _field(record, "extras")
        if multiple_choice is None and isinstance(extras, dict):
            multiple_choice = bool(extras.get("choices_in_prompt"))
    if normalize_answer(str(answer) if answer is not None else "") in _YES_NO or multiple_choice:
        return True
    return str(answer_type or "").strip().upper() == "CLOSED" and open_ended is False


def resolve_mode(mode: str | None, *, closed: bool, has_judge: bool) -> str:
    """The concrete mode (``exact``/``judge``/``embedding``) for one record; see the module doc.

    ``"judge"`` without a judge is a ValueError (a configuration error, found at start)."""
    mode = check_mode(mode)
    if mode == "auto":
        return "judge" if has_judge and not closed else "exact"
    if mode == "judge" and not has_judge:
        raise ValueError("correctness mode 'judge' needs a judge; configure one (e.g. --judge reference) "
                         "or set algorithm.correctness to 'exact' or 'embedding'")
    return mode


_YES_NO_LEAD = re.compile(r"(yes|no)(?:[.!]*|\s*[,.;:!]\s*\S.*)", re.IGNORECASE | re.DOTALL)


def exact_match(pred: str | None, ref: str) -> bool:
    """Near-literal equality, decided without any model.

    Equal after case, articles, spacing and punctuation are removed - except punctuation that
    carries meaning (decimal points, ranges, signs: "3-4 cm" is not "3.4 cm";
    :func:`medrl.answers.equivalence.compare.exact_key`) - provided the
    answer is not much longer than the reference (at most 2x + 8 characters: invisible marks or
    punctuation runs are padding, not a match) and asks no question ("X?") the reference does not.
    For a yes/no reference the answer must be that word alone or followed by a clause after
    punctuation ("Yes, there is a mass" is correct for "yes"; "yes or no", "Yes?", "Yes is ruled
    out" are not exact matches).
    """
    p_raw, r_raw = " ".join((pred or "").split()).strip(), " ".join((ref or "").split()).strip()
    p, r = normalize_answer(p_raw), normalize_answer(r_raw)
    if not p or not r:
        return False
    if "?" in p_raw and "?" not in r_raw:
        return False
    if r in _YES_NO:
        m = _YES_NO_LEAD.fullmatch(p_raw)
        other = _YES_NO[1 - _YES_NO.index(r)]
        return bool(m) and m.group(1).lower() == r and other not in p.split()[1:3]
    from medrl.answers.equivalence.compare import exact_key

    return exact_key(p_raw) == exact_key(r_raw) and len(p_raw) <= 2 * len(r_raw) + 8


def decide_exact(pred: str | None, ref: str | None, *, question: str | None = None,
                 rule: str = "normalized_match", threshold: float = 0.5) -> bool | None:
    """Steps 1-3 of the decision plus the ``"exact"`` mode (no judge, no model)."""
    check_rule(rule)
    pre = _decided(pred, ref, question)
    if pre is not _UNDECIDED:
        return pre
    return _exact_mode(pred, reference_text(ref), question, rule, threshold)


def _exact_mode(pred: str | None, ref: str, question: str | None, rule: str, threshold: float) -> bool:
    """The ``"exact"`` mode after steps 1-3: the one decision (:func:`medrl.answers.decide`) says
    correct, or (``rule="rouge1"``) ROUGE-1 >= ``threshold`` for an answer it does not refuse."""
    from medrl.answers import Verdict, decide

    d = decide(pred, ref, question=question)
    if d.verdict is Verdict.CORRECT:
        return True
    return rule == "rouge1" and not d.refused and rouge1(pred or "", ref) >= threshold


_UNDECIDED = object()


def _decided(pred: str | None, ref: str | None, question: str | None, *, judged: bool = False):
    """Steps 1-3: None (no reference), False (wrong), True (correct by identity), or _UNDECIDED
    (the mode decides). Without a judge the whole decision (:func:`medrl.answers.decide`) may
    refuse; before a judge is asked (``judged``) only what is certainly wrong
    (:func:`medrl.answers.override`, docs/judges.md "Two tiers")."""
    from medrl.answers import Verdict, decide, override

    ref = reference_text(ref)
    if ref is None:
        return None
    d = (override if judged else decide)(pred, ref, question=question)
    if d.verdict is Verdict.WRONG:
        return False
    if d.identical:
        return True
    return _UNDECIDED


def _answer_of(pred: Any) -> tuple[str | None, bool]:
    """(the answer text, readable): a parsed completion (:class:`medrl.types.ParsedResponse`)
    whose answer cannot be read (``answer_problem``: two answers, text after it) is unreadable."""
    if isinstance(pred, ParsedResponse):
        return pred.answer, pred.answer_problem is None
    return pred, True


async def decide_correct_async(pred: str | None, ref: str | None, *, question: str | None = None,
                               mode: str | None = "auto", closed: bool | None = None, judge: Any = None,
                               image: Any = None, rule: str = "normalized_match", threshold: float = 0.5,
                               embed_threshold: float = EMBED_THRESHOLD, embed_model: str | None = None,
                               check: str = "strict") -> bool | None:
    """Is ``pred`` (the parsed ``<answer>`` text) correct for ``ref``? See the module docstring.

    ``closed``: whether the record is a closed question (default: from the reference, see
    :func:`is_closed_question`); ``judge``: any object with ``answer_correct``; ``image``: the
    record's image(s), passed to the judge; ``check``: the judge's prompt
    (:data:`medrl.judges.prompts.ANSWER_CHECKS`; passed on only when not ``"strict"``).
    """
    out = await correctness_column_async(
        [pred], [ref], questions=[question], closed=[closed], images=[image], mode=mode, judge=judge,
        rule=rule, threshold=threshold, embed_threshold=embed_threshold, embed_model=embed_model, check=check)
    return out[0]


def decide_correct(pred: str | None, ref: str | None, **options: Any) -> bool | None:
    """Synchronous :func:`decide_correct_async` (same options)."""
    from medrl.judges.base import run_sync

    return run_sync(decide_correct_async(pred, ref, **options))


async def correctness_column_async(
    preds: Sequence[str | ParsedResponse | None],
    refs: Sequence[str | None],
    *,
    questions: Sequence[str | None] | None = None,
    closed: Sequence[bool | None] | None = None,
    answer_types: Sequence[str | None] | None = None,
    open_ended: Sequence[bool | None] | None = None,
    images: Sequence[Any] | None = None,
    mode: str | None = "auto",
    judge: Any = None,
    rule: str = "normalized_match",
    threshold: float = 0.5,
    embed_threshold: float = EMBED_THRESHOLD,
    embed_model: str | None = None,
    check: str = "strict",
) -> list[bool | None]:
    """:func:`decide_correct` for a batch of rollouts: at most one judge request per row (all
    rows concurrently; the judge bounds concurrency, caches and merges identical requests) and
    one embedding batch. ``preds``: answer texts, or parsed completions (the trainer's; one whose
    answer cannot be read is unscorable). ``closed`` per row, else from ``answer_types`` /
    ``open_ended`` and the reference (:func:`is_closed_question`)."""
    import asyncio

    n = len(preds)
    if check_mode(mode) == "judge":
        resolve_mode(mode, closed=False, has_judge=judge is not None)  # a configuration error, before any row
    check_rule(rule)

    def col(values, name):
        if values is None:
            return [None] * n
        values = list(values)
        if len(values) != n:
            raise ValueError(f"correctness: {name} has {len(values)} values for {n} answers")
        return values

    refs, questions, images = col(refs, "refs"), col(questions, "questions"), col(images, "images")
    closed, answer_types, open_ended = col(closed, "closed"), col(answer_types, "answer_types"), col(open_ended, "open_ended")
    read = [_answer_of(p) for p in preds]
    preds = [clean_text(p) for p, _ok in read]  # lone surrogates -> U+FFFD (they crash encoders and clients)
    out: list[Any] = []
    modes: list[str | None] = []
    for i in range(n):
        if not read[i][1] or reference_text(refs[i]) is None:
            out.append(None)  # no one answer in the completion, or no reference: unscorable
            modes.append(None)
            continue
        c = closed[i]
        if c is None:
            c = is_closed_question(answer=refs[i], answer_type=answer_types[i], open_ended=open_ended[i])
        modes.append(resolve_mode(mode, closed=bool(c), has_judge=judge is not None))
        out.append(_decided(preds[i], refs[i], questions[i], judged=modes[i] == "judge"))
    to_judge, to_embed = [], []
    for i, v in enumerate(out):
        if v is not _UNDECIDED:
            continue
        m = modes[i]
        if m == "exact":
            out[i] = _exact_mode(preds[i], reference_text(refs[i]), questions[i], rule, threshold)
        elif m == "embedding":
            to_embed.append(i)
        else:
            to_judge.append(i)
    if to_embed:
        from medrl.common.embeddings import cosine_pairs
        from medrl.answers.guard import strip_answer

        sims = cosine_pairs([strip_answer(preds[i]) for i in to_embed],
                            [strip_answer(reference_text(refs[i])) for i in to_embed], embed_model)
        from medrl.answers import Verdict, decide

        for i, s in zip(to_embed, sims):
            d = decide(preds[i], reference_text(refs[i]), question=questions[i])
            out[i] = d.verdict is Verdict.CORRECT or (not d.refused and bool(s >= embed_threshold))
    if to_judge:
        from medrl.answers.guard import strip_answer

        kw = {"check": check} if check != "strict" else {}  # a judge without the option keeps working
        verdicts = await asyncio.gather(*(
            judge.answer_correct(questions[i] or "", reference_text(refs[i]), strip_answer(preds[i]), image=images[i],
                                 **kw)
            for i in to_judge))
        for i, v in zip(to_judge, verdicts):
            out[i] = bool(v.value) if v.scored else None
    return out


def correctness_column(preds, refs, **options: Any) -> list[bool | None]:
    """Synchronous :func:`correctness_column_async` (same arguments)."""
    from medrl.judges.base import run_sync

    return run_sync(correctness_column_async(preds, refs, **options))


def uses_correctness(fn: Any) -> bool:
    """Whether a reward function reads the shared ``correct`` column: it names ``correct`` among
    its parameters (:func:`medrl.rewards.base.reads_column`)."""
    return reads_column(fn, "correct")


def uses_corrupted_correctness(fn: Any) -> bool:
    """Whether a reward function reads ``corrupted_correct`` (CAPO R_PCR): it names it."""
    return reads_column(fn, "corrupted_correct")


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
    """Correctness per row for rewards without a judge: the ``column_name`` column when the
    trainer passed it (and ``use_column``), else the ``"exact"`` decision (:func:`decide_exact`,
    guard first; the ``question`` column feeds the guard); None for unscorable rows (a None
    verdict in the column, or no reference)."""
    n = len(preds)
    if use_column and kwargs.get(column_name) is not None:
        return [_verdict(v, column_name, reward) for v in column(kwargs, column_name, n, reward=reward)]
    questions = column(kwargs, "question", n, reward=reward)
    return [decide_exact(p, r, question=q, rule=rule, threshold=threshold)
            for p, r, q in zip(preds, refs, questions)]
