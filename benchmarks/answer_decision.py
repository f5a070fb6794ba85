"""CPU time of the answer decision (medrl.answers.decide) on long answers: linear, at most 100 ms at the caps.

A rollout's answer is read up to the answer cap (20,000 characters, medrl.answers.completion.
MAX_TEXT_CHARS), against a reference of up to 5,400 characters (a report). Every decision must
stay linear in the answer: an answer built to make a regular expression backtrack ("*a *a *a
...", "<s><s>...", "~~a~~a...") must cost no more per character than plain text. This script
builds, for each reference kind (a count, a measure, a zero count, a finding, a yes/no answer, and
a long reference that lets a 20,000-character answer through the padding check so that every step
parses it), answers from repeated units (emphasis, strikethrough, tags, markup, numbers, lists,
negations, frames, hidden characters, completions with many answer blocks), and prints per family
the CPU time of one decision at a quarter of the cap and at the cap and their ratio (linear is
about 4, quadratic about 16), measured in this run on answers no cache has seen (the reference is
read once, as in training).

Then answers built from the reference itself, against report-like references of 1,000 to 5,400
characters (:func:`report`: distinct clinical sentences, numbers and sides): the reference
repeated, its sentences reordered, every sentence negated, its sides swapped, and all of these
at once without saying a sentence twice ("mixed": the reference, its negation, its sides swapped
and that negated); and "other sentences", a report of the same kind that repeats nothing, which
no early check refuses, so every step of the decision reads all of it. The last lines give the
slowest decision at the cap of each part, against the 100 ms target.

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
#: the longest reference the target covers, and the report lengths the answers are built from
REFERENCE_CAP = 5_400
REPORT_LENGTHS = (1_000, 2_500, 4_900, REFERENCE_CAP)
#: answers built from the reference itself (medrl.answers.decide must read each at the cap in 100 ms), and
#: "other sentences": a report of the same kind that repeats nothing, so that every step reads all of it
FROM_REFERENCE = ("repeated", "reordered", "negated", "sides swapped", "mixed", "other sentences")
TARGET_MS = 100.0
_ORGANS = ("liver", "spleen", "left kidney", "right kidney", "pancreas", "gallbladder", "right lung", "left lung",
           "heart", "aorta", "bladder", "stomach", "right adrenal gland", "left adrenal gland", "colon", "small bowel")
_FINDS = ("a {s} cm hypodense lesion", "a {s} cm nodule", "mild wall thickening", "a {s} cm cyst",
          "no focal abnormality", "a small calcification", "an ill-defined opacity measuring {s} cm",
          "no acute abnormality", "diffuse fatty infiltration", "a {s} x {t} cm mass")


def report(length: int, seed: int = 0) -> str:
    """A report-like reference of about ``length`` characters: distinct sentences naming an organ
    (some with a side) and a finding (some with sizes), deterministic in ``seed``."""
    import random

    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(" ".join(out)) < length:
        size = lambda: round(rng.uniform(0.5, 9.9), 1)  # noqa: E731
        sentence = f"The {rng.choice(_ORGANS)} shows {rng.choice(_FINDS).format(s=size(), t=size())}."
        if sentence not in seen:
            seen.add(sentence)
            out.append(sentence)
    return " ".join(out)[:length].rsplit(".", 1)[0] + "."


def varied_report(length: int, seed: int = 0) -> str:
    """About ``length`` characters of distinct sentences over the clinical lexicon's whole
    vocabulary (no word said far more often than in a report), so no early check refuses it."""
    import random

    from medrl.answers.clinical.lexicon import load_lexicon

    rng = random.Random(seed)
    terms = sorted({v for v, _c, _k in load_lexicon() if v.replace(" ", "").isalpha()})
    out: list[str] = []
    while len(" ".join(out)) < length:
        a, b = rng.sample(terms, 2)
        out.append(f"{a.capitalize()} {rng.choice(['near', 'beside', 'above', 'below', 'with'])} {b} "
                   f"measures {round(rng.uniform(0.5, 9.9), 1)} cm on the {rng.choice(['left', 'right'])}.")
    return " ".join(out)[:length]


def _sentences(text: str) -> list[str]:
    import re

    return [s for s in re.split(r"(?<=\.)\s+", text) if s]


def _negated(text: str) -> str:
    return " ".join("No " + s[0].lower() + s[1:] for s in _sentences(text))


def _swapped(text: str) -> str:
    import re

    return re.sub(r"\b(left|right)\b", lambda m: "right" if m.group(1) == "left" else "left", text)


def built_from(reference: str, family: str, length: int) -> str:
    """An answer of ``length`` characters built from ``reference`` itself (:data:`FROM_REFERENCE`)."""
    parts = {"repeated": lambda: reference,
             "reordered": lambda: " ".join(reversed(_sentences(reference))),
             "negated": lambda: _negated(reference),
             "sides swapped": lambda: _swapped(reference),
             "mixed": lambda: " ".join([reference, _negated(reference), _swapped(reference),
                                        _negated(_swapped(reference))]),
             "other sentences": lambda: varied_report(length + 200, seed=1 + len(reference))}[family]()
    return answer_of(parts + " ", length).strip()


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
    seen, in seconds of CPU (the process's, so other work on a shared machine is not counted). The
    garbage collector is off while timing (a collection is no cost of the decision)."""
    from medrl.answers import decide
    from medrl.answers.completion import parse_response

    best = float("inf")
    completion = "<answer>" in answer
    for _ in range(repeats):
        text = f"{_fresh()} {answer}"[:len(answer)]
        gc.disable()
        try:
            t0 = time.process_time()
            if completion:
                parsed = parse_response(f"<think>r</think><answer>{text}</answer>")
                decide(parsed.answer, reference, question=question)
            else:
                decide(text, reference, question=question)
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
    return best


def reading_time(answer: str, reference: str, question: str | None, repeats: int = 3) -> float:
    """Best of ``repeats`` CPU timings of the steps that read an answer - the listed rewrites, the
    claims (:mod:`medrl.answers.compose`), the hard mismatch (the structure reader, NegEx, the
    guard) and the equivalence - called directly, so that an early refusal of the decision does not
    hide how they scale (:func:`decision_time` times the decision)."""
    from medrl.answers.compose import claims
    from medrl.answers.decide import rewrite
    from medrl.answers.equivalence import equivalent, hard_mismatch

    best = float("inf")
    for _ in range(repeats):
        text = f"{_fresh()} {answer}"[:len(answer)]
        gc.disable()
        try:
            t0 = time.process_time()
            claims(rewrite(text, reference, question))
            hard_mismatch(reference, text, question=question)
            equivalent(reference, text, question=question)
            best = min(best, time.process_time() - t0)
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


def run_from_reference(cap: int, lengths: tuple[int, ...], families: tuple[str, ...], repeats: int
                       ) -> tuple[list[tuple], tuple]:
    """Rows (reference length, family, ms at cap/4, ms at the longest answer the structure reads,
    ms at cap, that length, the decision at the cap) of answers built from report references, and
    the slowest row. The longest answer read is ``READ_FACTOR`` x the reference + ``READ_SLACK``
    characters (:mod:`medrl.answers.decide`): a longer one is left to an LLM judge unread, so a
    decision is slowest just below it."""
    from medrl.answers import decide
    from medrl.answers.decide import READ_FACTOR, READ_SLACK

    question = "Describe the findings."
    rows = []
    for length in lengths:
        ref = report(length)
        decide("warm up", ref, question=question)  # the reference is read once, as in training
        read_limit = min(cap, READ_FACTOR * len(ref) + READ_SLACK)
        for family in families:
            small = decision_time(built_from(ref, family, cap // 4), ref, question, repeats)
            limit = decision_time(built_from(ref, family, read_limit), ref, question, repeats)
            large = decision_time(built_from(ref, family, cap), ref, question, repeats)
            verdict = decide(built_from(ref, family, cap), ref, question=question)
            rows.append((len(ref), family, 1000 * small, 1000 * limit, 1000 * large, read_limit,
                         f"{verdict.verdict.value}/{verdict.reason.value}"))
    return rows, max(rows, key=lambda r: max(r[3], r[4]))


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
    print(f"answer decision CPU time (medrl.answers.decide), answers of {cap // 4:,} and {cap:,} characters")
    print(f"{'reference':<10} {'answer family':<18} {'ms at cap/4':>11} {'ms at cap':>10} {'ratio':>6}")
    for kind, name, small, large, ratio in rows:
        print(f"{kind:<10} {name:<18} {small:11.2f} {large:10.2f} {ratio:6.1f}")
    print(f"ratio cap / (cap/4): linear is about 4, quadratic about 16; largest here "
          f"{max(r[4] for r in rows if r[3] >= 1.0) if any(r[3] >= 1.0 for r in rows) else float('nan'):.1f} "
          f"(rows of at least 1 ms)")
    print(f"slowest decision at the cap ({cap:,} characters): {slowest[3]:.1f} ms "
          f"({slowest[0]} reference, {slowest[1]})")
    lengths = (400, 520) if args.smoke else REPORT_LENGTHS  # (smoke: the 2,000-character answer passes the length check at 520)
    from_ref = ("mixed",) if args.smoke else FROM_REFERENCE
    rows2, slowest2 = run_from_reference(cap, lengths, from_ref, args.repeats)
    print(f"\nanswers built from the reference (report-like references of {lengths[0]:,} to {lengths[-1]:,} characters)")
    print(f"{'reference':<10} {'answer family':<16} {'ms at cap/4':>11} {'ms at read limit':>16} {'ms at cap':>10}"
          f"  {'read limit':>10}  decision at the cap")
    for length, name, small, limit, large, read_limit, verdict in rows2:
        print(f"{length:<10,} {name:<16} {small:11.2f} {limit:16.2f} {large:10.2f}  {read_limit:10,}  {verdict}")
    worst = max(slowest2[3], slowest2[4])
    print(f"slowest decision on an answer built from the reference, up to the cap ({cap:,} characters): {worst:.1f} ms "
          f"({slowest2[0]:,}-character reference, {slowest2[1]}); target {TARGET_MS:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
