"""Measured rates of the answer decision on generated variants, offline and before an LLM judge.

The variants are the generated attacks of :mod:`medrl.answers.attacks` (random symbols and words,
frames, count formats, abbreviations) and the generated classes of :mod:`medrl.answers.generators`
(completion structures, modal and tense frames, relation words, zero-count decorations,
ordinal/cardinal pairs, clinician shorthand and frames, Unicode compatibility characters). For
every reference, :func:`measure` decides each variant the way training and evaluation do and
counts:

- ``paid_flip`` / ``paid_unknown``: flipping / unknown-content variants the offline decision
  (:func:`medrl.answers.decide`, as the reference judge and the exact mode use it) calls correct
  (target: none);
- ``paid_before_judge``: flipping / unknown variants the tier that is settled before an LLM judge
  is asked (:func:`medrl.answers.override`) calls correct (target: none);
- ``refused_offline``: preserving variants the offline decision does not call correct (target: at
  most 15% - the offline judge leaves free wording to an LLM judge, but a listed wording of the
  right answer must be read);
- ``refused_before_judge``: preserving variants refused before an LLM judge is asked
  (:func:`medrl.answers.override` says wrong; target: at most 0.5%);
- ``metric_open``: flipping / unknown variants that the answer metrics' guard
  (:func:`medrl.rewards.base.answer_rejection`, used by medix_embed, mrpo_answer and armed) does
  not refuse, so the metric (embedding, BERTScore) could pay them above a committed wrong answer
  (target: none; a refused answer earns the metric's minimum);
- ``disagree``: variants that one of training (:func:`medrl.rewards.correctness.correctness_column`
  with the reference judge) and evaluation (:func:`medrl.answers.grading_refusal` then the
  reference judge's ``grade``) pays and the other does not (target: none).

A completion-structure variant is a whole completion: it is read whole first
(:func:`medrl.answers.completion.parse_response`); one with no one answer is unscorable for
training and wrong for evaluation (never paid; a preserving one so read is refused everywhere).
Every count is also kept per class (``by_family``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

#: target share per measure; None: reported, not a target
TARGETS: dict[str, float | None] = {"paid_flip": 0.0, "paid_unknown": 0.0, "paid_before_judge": 0.0,
                                    "refused_offline": 0.15, "refused_before_judge": 0.005, "metric_open": 0.0,
                                    "disagree": 0.0}


@dataclass
class Rates:
    """Counts per measure, with examples of each failure, overall and per variant family."""

    n_references: int = 0
    n: dict[str, int] = field(default_factory=dict)
    k: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    by_family: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # family -> key -> [hits, of]

    def rate(self, key: str) -> float | None:
        return self.k.get(key, 0) / self.n[key] if self.n.get(key) else None

    @property
    def total(self) -> int:
        return self.n.get("all", 0)

    @property
    def ok(self) -> bool:
        return all(t is None or (self.rate(k) or 0.0) <= t + 1e-12 for k, t in TARGETS.items())

    def _count(self, key: str, hit: bool, example: tuple[str, str, str], family: str | None = None) -> None:
        self.n[key] = self.n.get(key, 0) + 1
        if family is not None:
            cell = self.by_family.setdefault(family, {}).setdefault(key, [0, 0])
            cell[0] += int(hit)
            cell[1] += 1
        if hit:
            self.k[key] = self.k.get(key, 0) + 1
            ex = self.examples.setdefault(key, [])
            if len(ex) < 8:
                ex.append(example)

    def to_dict(self) -> dict:
        return {"n_references": self.n_references, "n_variants": self.total,
                "rates": {k: {"rate": self.rate(k), "count": self.k.get(k, 0), "of": self.n.get(k, 0),
                              "target": TARGETS[k]} for k in TARGETS},
                "by_family": self.by_family,
                "examples": {k: [list(e) for e in v] for k, v in self.examples.items()}}


@dataclass(frozen=True)
class _Row:
    text: str
    reference: str
    question: str | None
    family: str
    expect: str
    completion: bool = False


def variants_of(reference: str, question: str | None, *, per_reference: int, seed: int,
                classes: tuple[str, ...] | None = None) -> list[_Row]:
    """The generated attacks and class variants of one reference (``classes``: the generated
    classes, default every one of :data:`medrl.answers.generators.CLASSES`; ``per_reference`` 0:
    no attacks). A yes/no reference gets the yes/no polarity class only: the other classes are
    written for open answers."""
    from medrl.answers.attacks import generate
    from medrl.answers.generators import CLASSES, class_variants
    from medrl.answers.guard import is_yes_no

    if is_yes_no(reference):
        return [_Row(v.text, reference, question, v.family, v.expect, v.completion)
                for v in class_variants(reference, question=question, seed=seed,
                                        classes=tuple(c for c in classes or CLASSES if c == "yes_no"))]
    rows = [_Row(a.text, reference, question, a.family, a.expect)
            for a in generate(reference, question=question, n=per_reference, seed=seed)] if per_reference else []
    rows += [_Row(v.text, reference, question, v.family, v.expect, v.completion)
             for v in class_variants(reference, question=question, seed=seed, classes=classes or CLASSES)]
    return rows


def _decisions(row: _Row):
    """(offline decision, before-judge decision, the answer text) of one variant; None, None
    for a completion with no one answer."""
    from medrl.answers import decide, override
    from medrl.answers.completion import parse_response

    answer = row.text
    if row.completion:
        parsed = parse_response(row.text)
        if parsed.answer_problem is not None:
            return None, None, None
        answer = parsed.answer
    return (decide(answer, row.reference, question=row.question),
            override(answer, row.reference, question=row.question), answer)


def measure(references: Sequence[tuple[str, str | None]], *, per_reference: int = 12, seed: int = 0,
            agreement: bool = True, classes: tuple[str, ...] | None = None) -> Rates:
    """Rates on ``references`` ((reference, question) pairs: open-ended ones, and yes/no ones for
    the yes/no polarity class): ``per_reference`` generated attacks each (plus a count
    reference's count formats) and every generated class (or ``classes``)."""
    from medrl.answers import Verdict
    from medrl.rewards.base import answer_rejection

    out = Rates(n_references=len(references))
    rows = [r for ref, q in references
            for r in variants_of(ref, q, per_reference=per_reference, seed=seed, classes=classes)]
    for row in rows:
        out.n["all"] = out.n.get("all", 0) + 1
        d, o, answer = _decisions(row)
        why = "no one answer in the completion" if d is None else str(d)
        ex, fam = (row.reference, row.text, why), row.family
        if row.expect == "preserve":
            out._count("refused_offline", d is None or d.verdict is not Verdict.CORRECT, ex, fam)
            out._count("refused_before_judge", o is None or o.verdict is Verdict.WRONG,
                       (row.reference, row.text, "no one answer" if o is None else str(o)), fam)
        else:
            key = "paid_flip" if row.expect == "flip" else "paid_unknown"
            out._count(key, d is not None and d.verdict is Verdict.CORRECT, ex, fam)
            out._count("paid_before_judge", o is not None and o.verdict is Verdict.CORRECT,
                       (row.reference, row.text, str(o)), fam)
            out._count("metric_open", d is not None and answer_rejection(answer, row.reference,
                                                                         question=row.question) is None, ex, fam)
    if agreement:
        train, evaluation = _both_paths(rows)
        for row, t, e in zip(rows, train, evaluation):
            out._count("disagree", (t is True) != (e is True), (row.reference, row.text,
                                                                 f"training {t}, evaluation {e}"), row.family)
    return out


def _both_paths(rows: Sequence[_Row]) -> tuple[list[Any], list[Any]]:
    """The training decision and the evaluation grade of each row, with the reference judge:
    training reads the completion as the trainer does (a parsed completion; an answer text is
    wrapped in one), evaluation grades what the judge may see (``prediction_text``)."""
    from medrl.answers import grading_refusal
    from medrl.answers.completion import parse_response, prediction_text
    from medrl.judges import build_judge, run_sync
    from medrl.rewards.correctness import correctness_column

    judge = build_judge("reference")
    texts = [r.text if r.completion else f"<think>reasoning</think><answer>{r.text}</answer>" for r in rows]
    train = correctness_column([parse_response(t) for t in texts], [r.reference for r in rows],
                               questions=[r.question for r in rows], closed=[False] * len(rows), mode="auto",
                               judge=judge)

    async def grade_all():
        import asyncio

        async def one(text, r, q):
            a = prediction_text(text)
            if grading_refusal(r, a, question=q):
                return False
            v = await judge.grade(q or "", r, a, rubric="binary")
            return bool(v.value) if v.scored else None

        return await asyncio.gather(*(one(t, r.reference, r.question) for t, r in zip(texts, rows)))

    return [None if t is None else bool(t) for t in train], list(run_sync(grade_all()))


def open_references(records: Sequence[Any]) -> list[tuple[str, str | None]]:
    """(reference, question) of the open-ended records (:func:`medrl.rewards.correctness.is_closed_question`)."""
    from medrl.rewards.correctness import is_closed_question

    out = []
    for r in records:
        if not is_closed_question(r):
            ans = r.get("answer") if isinstance(r, dict) else getattr(r, "answer", None)
            q = r.get("question") if isinstance(r, dict) else getattr(r, "question", None)
            if ans and str(ans).strip():
                out.append((str(ans).strip(), q))
    return out


def yes_no_references(records: Sequence[Any]) -> list[tuple[str, str | None]]:
    """(reference, question) of the records whose reference is a bare yes or no: the yes/no
    polarity class is measured on them ("None seen" is a no, "Not absent" a yes)."""
    from medrl.answers.guard import is_yes_no

    out = []
    for r in records:
        ans = r.get("answer") if isinstance(r, dict) else getattr(r, "answer", None)
        q = r.get("question") if isinstance(r, dict) else getattr(r, "question", None)
        if ans and is_yes_no(str(ans)) and q:
            out.append((str(ans).strip(), q))
    return out


_NAMES = {"paid_flip": "flipping variants paid offline (the training decision)",
          "paid_unknown": "unknown-symbol/word variants paid offline",
          "paid_before_judge": "flipping/unknown variants paid before an LLM judge is asked",
          "refused_offline": "meaning-preserving variants refused offline",
          "refused_before_judge": "meaning-preserving variants refused before an LLM judge is asked",
          "metric_open": "flipping/unknown variants left to a surface metric (medix_embed, mrpo_answer, armed)",
          "disagree": "training and evaluation disagree (one pays, the other does not)"}


def format_rates(rates: Rates, *, examples: int = 4, title: str = "") -> str:
    """The rates as text: one line per measure with its target, examples of each failure, and
    the preserving/flipping counts per variant class."""
    lines = [f"generated attacks{f' ({title})' if title else ''}: {rates.total} variants of "
             f"{rates.n_references} references"]
    for key, target in TARGETS.items():
        r = rates.rate(key)
        shown = "   -   " if r is None else f"{100 * r:6.2f}%"
        if target is None:
            mark = "(stated, no target)"
        else:
            mark = ("ok" if (r or 0.0) <= target + 1e-12 else "OVER TARGET") + f"; target <= {100 * target:g}%"
        lines.append(f"  {_NAMES[key]:<90} {shown} ({rates.k.get(key, 0)} of {rates.n.get(key, 0)}) {mark}")
        for ref, ans, why in rates.examples.get(key, [])[:examples]:
            lines.append(f"      {ascii(ans)[:70]:<72} for {ref!r}: {why[:90]}")
    if rates.by_family:
        lines.append("  per class: preserving refused offline / before a judge; flipping+unknown paid offline / before a judge")
        for fam in sorted(rates.by_family):
            cells = rates.by_family[fam]

            def cell(*keys):
                hit = sum(cells.get(k, [0, 0])[0] for k in keys)
                of = sum(cells.get(k, [0, 0])[1] for k in keys)
                return f"{hit}/{of}" if of else "-"

            lines.append(f"    {fam:<14} refused {cell('refused_offline'):>9} / {cell('refused_before_judge'):>9}   "
                         f"paid {cell('paid_flip', 'paid_unknown'):>9} / {cell('paid_before_judge'):>9}")
    return "\n".join(lines)
