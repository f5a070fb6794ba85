"""Generated variants of every class (medrl.answers.generators) as Hypothesis property tests, both
ways: a meaning-preserving variant is correct offline and never refused before an LLM judge; a
flipping or unread one is never paid, offline or before a judge. A completion-structure variant
is read whole first (medrl.answers.completion)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medrl.answers import Verdict, decide, override
from medrl.answers.completion import parse_response
from medrl.answers.generators import CLASSES, class_strategy, class_variants

REFS = [("Right upper lobe", "Where is the nodule?"), ("Pleural effusion", "What is the abnormality?"),
        ("2", "How many kidneys are seen?"), ("0", "How many masses are there?"), ("Axial", "Which plane is this?"),
        ("CT with contrast", "What modality is used?"), ("Liver", "Which organ is enlarged?"),
        ("4th ventricle", "Which ventricle is dilated?"), ("on the right shoulder", "Where is the lesion?"),
        ("2.5cm x 1.7cm x 1.6cm", "What is the size of the mass?"), ("3.4 cm", "How large is the mass?"),
        ("Yes", "Is there a pneumothorax?"), ("bilateral lungs", "Where are the opacities?"),
        ("None", "How many nodules are seen?"), ("first rib", "Which rib is fractured?")]
_N = int(os.environ.get("MEDRL_HYPOTHESIS_EXAMPLES", "0"))
FAST = settings(max_examples=_N or 12, deadline=None, derandomize=not _N,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def decisions(v, ref, question):
    answer = v.text
    if v.completion:
        parsed = parse_response(v.text)
        if parsed.answer_problem is not None:
            return None, None  # no one answer: unscorable in training, wrong in evaluation
        answer = parsed.answer
    return decide(answer, ref, question=question), override(answer, ref, question=question)


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("ref,question", REFS)
@FAST
@given(data=st.data())
def test_every_class_both_ways(name, ref, question, data):
    variants = class_variants(ref, question=question, classes=(name,))
    if not variants:
        return  # the class does not apply to this reference
    v = data.draw(class_strategy(name, ref, question=question))
    d, o = decisions(v, ref, question)
    if v.expect == "preserve":
        assert d is not None and d.verdict is Verdict.CORRECT, (v, d)
        assert o.verdict is not Verdict.WRONG, (v, o)
    else:
        assert d is None or d.verdict is not Verdict.CORRECT, (v, d)
        assert o is None or o.verdict is not Verdict.CORRECT, (v, o)


def test_class_variants_are_deterministic_and_cover_every_class():
    seen = set()
    for ref, question in REFS:
        a = class_variants(ref, question=question, seed=4)
        assert a == class_variants(ref, question=question, seed=4)
        seen |= {(v.family, v.expect) for v in a}
    for name in CLASSES:
        assert (name, "preserve") in seen or name == "relation", name
        assert any(f == name and e != "preserve" for f, e in seen), name
