"""The phantom world's truth read from the judges layer (no data import): a step's claims, the
answer's correctness and the step verdicts, on parameters written by hand."""

from __future__ import annotations

import pytest

from medrl.judges import phantom_truth as pt

P = {"question_type": "modality", "modality": "CT", "plane": "axial", "organ": "liver", "count": 1,
     "side": "left", "location": "upper", "size_mm": 22.0, "size_unit": "mm"}


def test_claims_read_from_a_step():
    c = pt.parse_step_claims("This is an axial CT image of the liver.")
    assert c["modality"] == "CT" and c["plane"] == "axial" and c["organ"] == "liver"
    assert pt.parse_step_claims("The lesion measures 2.2 cm.") == {"size": "22 mm", "presence": "yes"}  # pint: cm -> mm


def test_answer_and_steps_against_the_parameters():
    assert pt.oracle_answer_correct(P, "CT") is True
    assert pt.oracle_answer_correct(P, "MRI") is False
    v = pt.oracle_step_verdicts(P, ["This is an axial CT image of the liver.", "This is an MRI image."])
    assert [bool(x.valid) for x in v] == [True, False]


def test_a_record_without_parameters_cannot_be_judged():
    class Rec:
        id, extras = "r1", {}

    assert pt.phantom_params(Rec()) is None
    assert pt.oracle_answer_correct(Rec(), "CT") is None  # not applicable, never a guess
    with pytest.raises(pt.PhantomTruthError, match="no phantom parameters"):
        pt.oracle_step_verdicts(Rec(), ["This is a CT image."])
