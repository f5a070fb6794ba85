"""The answer decision is linear in the answer (benchmarks/answer_decision.py prints the times).

Checks that would catch a quadratic path without a clock limit: (1) for a short reference, an
answer near the 20,000-character cap is refused as padding before anything parses it - the
structure reader is never called (an operation count); (2) for a long reference, which lets long
answers through, each reading step costs about 4 times as much on an answer 4 times longer (a
ratio measured in one run; quadratic would be about 16) for every family of answers built to make
a regular expression backtrack; (3) an answer at the cap built from a 5,400-character reference
(repeated, reordered, negated, sides swapped) is decided before the structure reads it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from medrl.answers import Reason, decide

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "answer_decision.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("answer_decision_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", ["count", "measure", "zero", "finding", "yes/no"])
def test_an_answer_at_the_cap_is_refused_before_it_is_parsed(bench, kind, monkeypatch):
    from medrl.answers.equivalence import structure

    ref, question = bench.REFERENCES[kind]
    calls = []
    monkeypatch.setattr(structure, "read", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(AssertionError))
    for name, unit in bench.FAMILIES.items():
        if "<answer>" in unit:
            continue
        d = decide(bench.answer_of(unit, 20_000) + name, ref, question=question)
        assert d.reason is Reason.PADDED, (name, d)
    assert calls == []  # no answer was read into its structure


def test_every_family_is_read_in_linear_time_for_a_long_reference(bench):
    """The reading steps (the listed rewrites, the claims, the hard mismatch - the structure reader,
    NegEx and the guard -, the equivalence) on each family, timed directly: the decision itself
    refuses most of these answers before it reads them (a word said over and over), which must not
    hide a quadratic reader."""
    long_ref, question = bench.REFERENCES["long"]
    ref = long_ref[:1_300].rsplit(";", 1)[0]  # lets a 4,000-character answer through the padding check
    bench.reading_time("warm up", ref, question)
    ratios = {}
    for name, unit in bench.FAMILIES.items():
        small = bench.reading_time(bench.answer_of(unit, 1_000), ref, question, repeats=2)
        large = bench.reading_time(bench.answer_of(unit, 4_000), ref, question, repeats=2)
        if large > 2e-3:  # below 2 ms a ratio is noise; such a family is no quadratic risk at this size
            ratios[name] = large / max(small, 1e-9)
    assert ratios, "no family took long enough to measure"
    assert max(ratios.values()) < 10, ratios  # linear: about 4; quadratic: about 16


@pytest.mark.parametrize("family", ["repeated", "reordered", "negated", "sides swapped", "mixed"])
def test_an_answer_built_from_a_report_is_decided_before_it_is_read(bench, family, monkeypatch):
    """At the cap, an answer built from a 5,400-character reference - repeated, reordered,
    negated, sides swapped, all at once - is refused as padding or left to an LLM judge unread:
    the structure reader is never called (an operation count, no clock)."""
    from medrl.answers.equivalence import structure

    ref = bench.report(bench.REFERENCE_CAP)
    answer = bench.built_from(ref, family, bench.CAP)
    calls = []
    monkeypatch.setattr(structure, "read", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(AssertionError))
    d = decide(answer, ref, question="Describe the findings.")
    assert d.reason in (Reason.PADDED, Reason.LONG_ANSWER), (family, d)
    assert calls == []
