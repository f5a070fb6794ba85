"""Generated attacks (medrl.answers.attacks) as Hypothesis property tests, and the training and
evaluation paths agreeing on generated variants (a small, still generated run; the 10,000-variant
run is `medrl audit-rewards --generated-only`, recorded in docs/judges.md)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medrl.answers import Reason, Verdict, decide, override
from medrl.answers.attacks import attack_strategy, generate, unicode_insertion
from medrl.rewards.base import answer_rejection

REFS = [("Right upper lobe", "Where is the nodule?"), ("Pleural effusion", "What is the abnormality?"),
        ("2", "How many kidneys are seen?"), ("0", "How many masses are there?"), ("Axial", "Which plane is this?"),
        ("CT with contrast", "What modality is used?"), ("Liver", "Which organ is enlarged?")]
# derandomized: the default run is the same draw every time (a CI run never fails by chance);
# MEDRL_HYPOTHESIS_EXAMPLES=2000 searches further with fresh draws
_N = int(os.environ.get("MEDRL_HYPOTHESIS_EXAMPLES", "0"))
FAST = settings(max_examples=_N or 30, deadline=None, derandomize=not _N,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.parametrize("ref,question", REFS)
@FAST
@given(data=st.data())
def test_an_unknown_symbol_never_makes_an_answer_correct(ref, question, data):
    text = data.draw(unicode_insertion(ref))
    d = decide(text, ref, question=question)
    assert d.verdict is not Verdict.CORRECT, (text, d)
    assert answer_rejection(text, ref, question=question) is not None, (text, d)


@pytest.mark.parametrize("ref,question", REFS)
@FAST
@given(data=st.data())
def test_generated_attacks_keep_their_meaning(ref, question, data):
    a = data.draw(attack_strategy(ref, question=question))
    d = decide(a.text, ref, question=question)
    if a.expect == "preserve":
        assert d.verdict is Verdict.CORRECT, (a, d)
        assert override(a.text, ref, question=question).verdict is not Verdict.WRONG, a
    else:
        assert d.verdict is not Verdict.CORRECT, (a, d)


@FAST
@given(word=st.sampled_from(["like", "consider", "formerly", "wnl", "ventricular", "girsle"]),
       ref=st.sampled_from([r for r, _ in REFS if not r.isdigit()]))
def test_an_unknown_word_never_turns_a_wrong_answer_correct(word, ref):
    for text in (f"{word} {ref}", f"{ref} {word}", f"{word} Spleen"):
        assert decide(text, ref).verdict is not Verdict.CORRECT, text


def test_training_and_evaluation_agree_on_generated_variants():
    from medrl.rewards.attack_rates import measure

    rates = measure(REFS, per_reference=10, seed=3)
    assert rates.total >= 200
    assert rates.rate("disagree") == 0.0, rates.examples.get("disagree")
    assert rates.rate("paid_flip") == 0.0 and rates.rate("paid_unknown") == 0.0, rates.examples
    assert rates.rate("paid_before_judge") == 0.0, rates.examples.get("paid_before_judge")
    assert rates.rate("refused_offline") <= 0.05, rates.examples.get("refused_offline")
    assert rates.rate("refused_before_judge") <= 0.005, rates.examples.get("refused_before_judge")
    assert set(rates.by_family) >= {"completion", "modal", "relation", "zero", "ordinal", "shorthand", "unicode"}


def test_generate_is_deterministic_and_covers_every_family():
    a = generate("Right upper lobe", n=40, seed=1)
    assert a == generate("Right upper lobe", n=40, seed=1)
    assert {x.family for x in a} >= {"symbol", "word", "frame", "consistent", "abbreviation"}
    assert {x.family for x in generate("2", question="How many kidneys?", n=4)} >= {"number"}


@pytest.mark.parametrize("text", ["CT with c\u00f2ntrast", "CT with co\u0300ntrast", "CT wi\u0163h contrast"])
def test_a_mark_composed_into_a_letter_is_an_unknown_symbol(text):
    """NFKC composes an inserted combining mark into its letter and the word reader splits the
    word there; the letter must still make the answer undecided and refused for surface metrics."""
    d = decide(text, "CT with contrast", question="What modality is used?")
    assert d.verdict is Verdict.UNDECIDED and d.reason is Reason.UNKNOWN_SYMBOL, d
    assert answer_rejection(text, "CT with contrast", question="What modality is used?") is not None
