"""Measured rates of the answer decision on generated attacks (:mod:`medrl.answers.attacks`).

For every reference, :func:`measure` decides each generated attack and counts:

- ``paid_flip`` / ``paid_unknown``: flipping / unknown-content attacks the training decision
  (:func:`medrl.answers.decide`, as the reference judge and the exact mode use it) calls correct
  (target: none);
- ``refused_preserve``: preserving attacks (frames, abbreviations, count formats) it does not call
  correct (target: at most 5%);
- ``override_refused``: preserving attacks the LLM-judge override tier (:func:`medrl.answers.override`)
  calls wrong (target: at most 0.5%);
- ``metric_open``: flipping / unknown attacks that the answer metrics' guard
  (:func:`medrl.rewards.base.answer_rejection`, used by medix_embed, mrpo_answer and armed) does
  not refuse, so the metric (embedding, BERTScore) could pay them above a committed wrong answer
  (target: none; a refused answer earns the metric's minimum);
- ``disagree``: attacks where training (:func:`medrl.rewards.correctness.correctness_column` with
  the reference judge) and evaluation (:func:`medrl.answers.grading_refusal` then the reference
  judge's ``grade``) disagree (target: none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

TARGETS = {"paid_flip": 0.0, "paid_unknown": 0.0, "refused_preserve": 0.05, "override_refused": 0.005,
           "metric_open": 0.0, "disagree": 0.0}


@dataclass
class Rates:
    """Counts per measure, with examples of each failure."""

    n_references: int = 0
    n: dict[str, int] = field(default_factory=dict)
    k: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)

    def rate(self, key: str) -> float | None:
        return self.k.get(key, 0) / self.n[key] if self.n.get(key) else None

    @property
    def total(self) -> int:
        return self.n.get("all", 0)

    @property
    def ok(self) -> bool:
        return all((self.rate(k) or 0.0) <= t + 1e-12 for k, t in TARGETS.items())

    def _count(self, key: str, hit: bool, example: tuple[str, str, str]) -> None:
        self.n[key] = self.n.get(key, 0) + 1
        if hit:
            self.k[key] = self.k.get(key, 0) + 1
            ex = self.examples.setdefault(key, [])
            if len(ex) < 8:
                ex.append(example)

    def to_dict(self) -> dict:
        return {"n_references": self.n_references, "n_variants": self.total,
                "rates": {k: {"rate": self.rate(k), "count": self.k.get(k, 0), "of": self.n.get(k, 0),
                              "target": TARGETS[k]} for k in TARGETS},
                "examples": {k: [list(e) for e in v] for k, v in self.examples.items()}}


def measure(references: Sequence[tuple[str, str | None]], *, per_reference: int = 12, seed: int = 0,
            agreement: bool = True) -> Rates:
    """Rates on ``references`` ((reference, question) pairs, open-ended), ``per_reference``
    generated attacks each (plus a count reference's count formats)."""
    from medrl.answers import Verdict, decide, override
    from medrl.answers.attacks import generate
    from medrl.rewards.base import answer_rejection

    out = Rates(n_references=len(references))
    rows: list[tuple[str, str, str | None]] = []
    for ref, q in references:
        for a in generate(ref, question=q, n=per_reference, seed=seed):
            ex = (ref, a.text, "")
            out.n["all"] = out.n.get("all", 0) + 1
            d = decide(a.text, ref, question=q)
            ex = (ref, a.text, str(d))
            if a.expect == "preserve":
                out._count("refused_preserve", d.verdict is not Verdict.CORRECT, ex)
                o = override(a.text, ref, question=q)
                out._count("override_refused", o.verdict is Verdict.WRONG, (ref, a.text, str(o)))
            else:
                out._count("paid_flip" if a.expect == "flip" else "paid_unknown", d.verdict is Verdict.CORRECT, ex)
                out._count("metric_open", answer_rejection(a.text, ref, question=q) is None, ex)
            rows.append((a.text, ref, q))
    if agreement:
        train, evaluation = _both_paths(rows)
        for (a, ref, _q), t, e in zip(rows, train, evaluation):
            out._count("disagree", t != e, (ref, a, f"training {t}, evaluation {e}"))
    return out


def _both_paths(rows: list[tuple[str, str, str | None]]) -> tuple[list[Any], list[Any]]:
    """The training decision and the evaluation grade of each row, with the reference judge."""
    from medrl.answers import grading_refusal
    from medrl.judges import build_judge, run_sync
    from medrl.rewards.correctness import correctness_column

    judge = build_judge("reference")
    train = correctness_column([a for a, _, _ in rows], [r for _, r, _ in rows], questions=[q for _, _, q in rows],
                               closed=[False] * len(rows), mode="auto", judge=judge)

    async def grade_all():
        import asyncio

        async def one(a, r, q):
            if grading_refusal(r, a, question=q):
                return False
            v = await judge.grade(q or "", r, a, rubric="binary")
            return bool(v.value) if v.scored else None

        return await asyncio.gather(*(one(a, r, q) for a, r, q in rows))

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


def format_rates(rates: Rates, *, examples: int = 4) -> str:
    names = {"paid_flip": "flipping variants paid (training decision)",
             "paid_unknown": "unknown-symbol/word variants paid (training decision)",
             "refused_preserve": "preserving templates/abbreviations/counts refused",
             "override_refused": "preserving variants refused by the LLM-judge override tier",
             "metric_open": "flipping/unknown variants left to a surface metric (medix_embed, mrpo_answer, armed)",
             "disagree": "training and evaluation disagree"}
    lines = [f"generated attacks: {rates.total} variants of {rates.n_references} open-ended references"]
    for key, target in TARGETS.items():
        r = rates.rate(key)
        shown = "   -   " if r is None else f"{100 * r:6.2f}%"
        mark = "ok" if (r or 0.0) <= target + 1e-12 else "OVER TARGET"
        lines.append(f"  {names[key]:<88} {shown} ({rates.k.get(key, 0)} of {rates.n.get(key, 0)}; "
                     f"target <= {100 * target:g}%) {mark}")
        for ref, ans, why in rates.examples.get(key, [])[:examples]:
            lines.append(f"      {ascii(ans)[:70]:<72} for {ref!r}: {why[:90]}")
    return "\n".join(lines)
