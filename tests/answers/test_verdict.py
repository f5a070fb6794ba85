"""The decision's verdict type: which undecided reasons a surface metric must refuse, and the
monitor's categories."""

from __future__ import annotations

from medrl.answers.verdict import SUSPECT, Decision, Reason, Verdict, correct, reason_of


def test_refused_means_wrong_or_a_suspect_undecided():
    assert Decision(Verdict.WRONG, Reason.POLARITY, "x").refused
    assert Decision(Verdict.UNDECIDED, Reason.UNKNOWN_SYMBOL, "x").refused
    assert not Decision(Verdict.UNDECIDED, Reason.OPEN, "x").refused  # the LLM judge's call, a metric may score it
    assert not correct(Reason.EXACT).refused
    assert Reason.UNKNOWN_WORD in SUSPECT and Reason.OPEN not in SUSPECT


def test_text_form_and_categories():
    d = Decision(Verdict.WRONG, Reason.CANDIDATE_LIST, "two findings")
    assert str(d) == f"{Reason.CANDIDATE_LIST.value}: two findings"
    assert Reason.CANDIDATE_LIST.category == "list" and Reason.POLARITY.category == "negation"
    assert reason_of("candidate list (hedging)") is Reason.CANDIDATE_LIST
