"""Time of the answer decision (medrl.answers.decide) on long answers: linear, under 50 ms at the cap.

A rollout's answer is read up to the answer cap (20,000 characters, medrl.answers.completion.
MAX_TEXT_CHARS). Every decision must stay linear in the answer: an answer built to make a regular
expression backtrack ("*a *a *a ...", "<s><s>...", "~~a~~a...") must cost no more per character
than plain text. This script builds, for each reference kind (a count, a measure, a zero count, a
finding, a yes/no answer, and a long reference that lets a 20,000-character answer through the
padding check so that every step parses it), answers from repeated units (emphasis, strikethrough,
tags, markup, numbers, lists, negations, frames, hidden characters, completions with many answer
blocks), and prints per family the time of one decision at a quarter of the cap and at the cap and
their ratio (linear is about 4, quadratic about 16), measured in this run on answers no cache has
seen (the reference is read once, as in training).
The last line is the slowest decision at the cap.

Run: .venv/bin/python benchmarks/answer_decision.py [--smoke]   (--smoke: a 2,000-character cap,
a few families, seconds; the test suite runs it)
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: reference kinds: short ones are refused as padding before anything parses a long answer; the
#: long one (a report-like reference) lets the answer through, so every step reads it
REFERENCES = {
    "count": ("2", "How many kidneys are seen?"),
    "measure": ("3.4 cm", "How large is the mass?"),
    "zero": ("0", "How many masses are there?"),
    "finding": ("Right upper lobe pneumonia", "What is the abnormality?"),
    "yes/no": ("Yes", "Is there a pneumothorax?"),
    "long": (("the liver is enlarged with a 3.4 cm mass in the right lobe and no ascites; " * 70).strip(),
             "Describe the findings."),
}
#: answer families: a unit repeated to the wanted length (each aims at a parser step)
FAMILIES = {
    "plain words": "the liver is normal and ",
    "emphasis *a": "*a ",
    "emphasis **a": "**a ",
    "underscores": "_a ",
    "strikethrough ~~": "~~a ",
    "strike tags": "<s>a ",
    "html tags": "<b>a ",
    "latex": "\\boxed{a ",
    "dollars": "$a ",
    "backticks": "`a ",
    "comments": "<!--a ",
    "parentheses": "(a ",
    "negations": "no ",
    "numbers": "1 ",
    "dimensions": "2 x ",
    "measures": "3.4 cm ",
    "list": "a, ",
    "frames": "the answer is ",
    "sides": "L ",
    "ordinals": "4th ",
    "hidden": "a\u200b",
    "marks": "\u2714 ",
    "unicode": "\uff41 ",
    "answer blocks": "<answer>a</answer>",
}
SMOKE_FAMILIES = ("plain words", "emphasis *a", "strike tags", "negations", "answer blocks")
CAP = 20_000


_SEEN = [0]


def _fresh() -> str:
    """A word never used before (letters only), put before an answer so that no cache of the
    answer package has seen it; the reference stays cached, as in training (one reference, many
    rollouts)."""
    _SEEN[0] += 1
    n, word = _SEEN[0], ""
    while n:
        n, r = divmod(n, 26)
        word += "abcdefghijklmnopqrstuvwxyz"[r]
    return "zq" + word


def answer_of(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def decision_time(answer: str, reference: str, question: str | None, repeats: int = 3) -> float:
    """Best of ``repeats`` timings of one :func:`medrl.answers.decide` call on an answer no cache has
    seen, in seconds. The garbage collector is off while timing (a collection is no cost of the
    decision)."""
    from medrl.answers import decide
    from medrl.answers.completion import parse_response

    best = float("inf")
    completion = "<answer>" in answer
    for _ in range(repeats):
        text = f"{_fresh()} {answer}"[:len(answer)]
        gc.disable()
        try:
            t0 = time.perf_counter()
            if completion:
                parsed = parse_response(f"<think>r</think><answer>{text}</answer>")
                decide(parsed.answer, reference, question=question)
            else:
                decide(text, reference, question=question)
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    return best


def run(cap: int, families: dict[str, str], references: dict, repeats: int) -> tuple[list[tuple], tuple]:
    """Rows (reference kind, family, ms at cap/4, ms at cap, ratio) and the slowest row."""
    import medrl.answers  # noqa: F401  (imports, and the lexicon and spaCy load, are not timed)
    from medrl.answers import decide

    decide("warm up", "Liver", question="Which organ?")
    for ref, question in references.values():  # each reference read once, as in training
        decide("warm up", ref, question=question)
    rows = []
    for kind, (ref, question) in references.items():
        for name, unit in families.items():
            small = decision_time(answer_of(unit, cap // 4), ref, question, repeats)
            large = decision_time(answer_of(unit, cap), ref, question, repeats)
            rows.append((kind, name, 1000 * small, 1000 * large, large / max(small, 1e-9)))
    return rows, max(rows, key=lambda r: r[3])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="a 2,000-character cap and a few families (seconds)")
    p.add_argument("--repeats", type=int, default=3, help="timings per decision; the best is kept (default 3)")
    args = p.parse_args(argv)
    cap = 2_000 if args.smoke else CAP
    families = {k: FAMILIES[k] for k in SMOKE_FAMILIES} if args.smoke else FAMILIES
    references = REFERENCES
    if args.smoke:  # a shorter long reference: the 2,000-character answer still passes the padding check
        long_ref, long_q = REFERENCES["long"]
        references = {"count": REFERENCES["count"], "long": (long_ref[:800].rsplit(";", 1)[0], long_q)}
    rows, slowest = run(cap, families, references, args.repeats)
    print(f"answer decision time (medrl.answers.decide), answers of {cap // 4:,} and {cap:,} characters")
    print(f"{'reference':<10} {'answer family':<18} {'ms at cap/4':>11} {'ms at cap':>10} {'ratio':>6}")
    for kind, name, small, large, ratio in rows:
        print(f"{kind:<10} {name:<18} {small:11.2f} {large:10.2f} {ratio:6.1f}")
    print(f"ratio cap / (cap/4): linear is about 4, quadratic about 16; largest here "
          f"{max(r[4] for r in rows if r[3] >= 1.0) if any(r[3] >= 1.0 for r in rows) else float('nan'):.1f} "
          f"(rows of at least 1 ms)")
    print(f"slowest decision at the cap ({cap:,} characters): {slowest[3]:.1f} ms "
          f"({slowest[0]} reference, {slowest[1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
