"""The oracle judge: exact verdicts against hand-worked phantom cases, its noise rate and
determinism, its spec strings, and that the rewards reach it the way they reach every judge."""

from __future__ import annotations

import pytest

from medrl.judges.phantom_truth import oracle_answer_correct, oracle_step_verdicts
from medrl.judges import Judge, build_judge, run_sync
from medrl.judges.oracle import OracleJudge, parse_oracle_spec

# A CT image of the liver with one 18 mm lesion on the patient's right, asked for the main finding.
CT_LIVER = {"id": "hand-1", "question_type": "finding", "modality": "CT", "plane": "axial", "organ": "liver",
            "count": 1, "side": "right", "location": "upper", "size_mm": 18.0, "size_unit": "mm"}
GOLD = ["A focal lesion is present.", "This is a CT image.", "On CT the lesion looks hypodense.",
        "It lies in the liver.", "So the finding is a hypodense lesion."]


def _pairs(verdicts):
    return [(v.gold_alignment, v.answer_contribution) for v in verdicts]


def test_gold_chain_is_all_valid_and_its_steps_score_by_hand():
    # organ is not something the finding depends on: aligned, not contributing
    assert _pairs(oracle_step_verdicts(CT_LIVER, GOLD)) == [(1, 1), (1, 1), (1, 1), (1, 0), (1, 1)]
    assert oracle_answer_correct(CT_LIVER, "hypodense lesion") is True
    assert oracle_answer_correct(CT_LIVER, "a hypodense lesion in the liver") is True
    assert oracle_answer_correct(CT_LIVER, "hypodense lesion in the brain") is False  # a wrong extra claim
    assert oracle_answer_correct(CT_LIVER, "lesion") is False  # the look (which carries the modality) is asked
    assert oracle_answer_correct(CT_LIVER, "hypodense or hyperintense lesion") is False  # a hedge
    assert oracle_answer_correct(CT_LIVER, "no lesion") is False
    assert oracle_answer_correct(CT_LIVER, "") is False
    assert oracle_answer_correct({"modality": "CT"}, "CT") is None  # no phantom parameters: not applicable


def test_a_wrong_step_cascades_into_the_later_steps_and_the_answer():
    steps = ["A focal lesion is present.", "This is an MRI image.", "On MRI the lesion looks hyperintense.",
             "It lies in the liver.", "So the finding is a hyperintense lesion."]
    assert _pairs(oracle_step_verdicts(CT_LIVER, steps)) == [(1, 1), (0, 0), (0, 0), (1, 0), (0, 0)]
    assert oracle_answer_correct(CT_LIVER, "hyperintense lesion") is False
    # a missed lesion in the first step
    missed = ["No focal lesion is seen.", "This is a CT image.", "The liver looks normal.", "So there is no lesion."]
    assert _pairs(oracle_step_verdicts(CT_LIVER, missed)) == [(0, 0), (1, 1), (0, 0), (0, 0)]


def test_meta_commentary_empty_steps_and_repeats_score_zero():
    steps = ["Let me look at the image carefully.", "A focal lesion is present.", "A focal lesion is present.",
             "There is a lesion.", "   ", "This is a CT image.", "So the finding is a hypodense lesion.",
             "So the finding is a hypodense lesion."]
    assert _pairs(oracle_step_verdicts(CT_LIVER, steps)) == [(0, 0), (1, 1), (0, 0), (0, 0), (0, 0), (1, 1), (1, 1),
                                                               (0, 0)]
    # the conclusion that restates an earlier claim as the answer is not a repeat - once
    modality = dict(CT_LIVER, question_type="modality")
    assert _pairs(oracle_step_verdicts(modality, ["This is a CT scan.", "So the modality is CT.",
                                                   "The modality is CT."])) == [(1, 1), (1, 1), (0, 0)]


def test_other_question_types_by_hand():
    side = dict(CT_LIVER, question_type="side")
    assert oracle_answer_correct(side, "right") and not oracle_answer_correct(side, "left")
    assert _pairs(oracle_step_verdicts(side, ["It lies on the patient's left side.", "It is in the liver."])) == \
        [(0, 0), (1, 0)]
    count = dict(CT_LIVER, question_type="count", count=2)
    assert oracle_answer_correct(count, "two") and oracle_answer_correct(count, "2 lesions")
    assert not oracle_answer_correct(count, "one")
    size = dict(CT_LIVER, question_type="size")
    assert oracle_answer_correct(size, "18 mm") and oracle_answer_correct(size, "1.8 cm")
    assert not oracle_answer_correct(size, "24 mm") and not oracle_answer_correct(size, "18")
    empty = dict(CT_LIVER, count=0, side=None, location=None, size_mm=None)
    assert oracle_answer_correct(empty, "no lesion") and not oracle_answer_correct(empty, "hypodense lesion")
    assert oracle_answer_correct(dict(empty, question_type="count"), "none")
    organ = dict(CT_LIVER, question_type="organ")
    assert oracle_answer_correct(organ, "the liver") and not oracle_answer_correct(organ, "kidneys")


def test_the_judge_protocol_answers_exactly_without_noise():
    j = OracleJudge()
    assert isinstance(j, Judge) and j.name == "oracle"
    ev = {"phantom": CT_LIVER}
    assert run_sync(j.answer_correct("q", "hypodense lesion", "hypodense lesion", evidence=ev)).value is True
    v = run_sync(j.verify_steps("q", "hypodense lesion", GOLD, evidence=ev))
    assert v.scored and _pairs(v.value) == _pairs(oracle_step_verdicts(CT_LIVER, GOLD))
    assert run_sync(j.grade("q", "ref", "hypodense lesion", evidence=ev)).value == 1.0
    assert run_sync(j.grade("q", "ref", "hypodense lesion in the brain", rubric="report", evidence=ev)).value == 3
    assert run_sync(j.consistency("q", " ".join(GOLD), "hypodense lesion")).value is True
    assert run_sync(j.consistency("q", " ".join(GOLD), "no lesion")).value is False
    assert run_sync(j.extract_key_steps("q", "a", " ".join(GOLD))).value == \
        ["focal lesion", "CT", "hypodense", "liver"]
    assert run_sync(j.audit_vqa("q", "a")).value["status"] == "consistent"
    # no parameters: unscored, never guessed from the reference text
    miss = run_sync(j.answer_correct("q", "hypodense lesion", "hypodense lesion"))
    assert not miss.scored and "phantom" in miss.error
    assert not run_sync(j.verify_steps("q", "r", GOLD, evidence={"answer": "r"})).scored


def test_noise_flips_each_verdict_at_its_rate_and_is_deterministic():
    from scipy.stats import binom

    j = OracleJudge(epsilon=0.2, seed=7)
    ev = {"phantom": CT_LIVER}
    exact = _pairs(oracle_step_verdicts(CT_LIVER, GOLD))

    async def rollouts():  # 1,000 rollouts x 5 steps x 2 fields = 10,000 verdicts
        return [await j.verify_steps("q", "r", GOLD[:4] + [f"So the finding is a hypodense lesion, case {i}."],
                                     evidence=ev) for i in range(1000)]

    flips = sum(a != b for v in run_sync(rollouts()) for e, g in zip(exact, _pairs(v.value)) for a, b in zip(e, g))
    n = 10_000
    lo, hi = binom.interval(0.999, n, 0.2)
    assert lo <= flips <= hi, flips
    assert j.noise_counts["alignment"][0] == 5000 and sum(c[1] for c in j.noise_counts.values()) == flips
    # reruns agree; another seed gives other flips; epsilon 0 never flips
    again = OracleJudge(epsilon=0.2, seed=7)
    assert [again.flip("answer", "x", i) for i in range(200)] == [j.flip("answer", "x", i) for i in range(200)]
    assert [OracleJudge(0.2, seed=8).flip("answer", "x", i) for i in range(200)] != \
        [j.flip("answer", "x", i) for i in range(200)]
    assert not any(OracleJudge(0.0).flip("answer", "x", i) for i in range(200))

    async def answers_of():
        return [(await j.answer_correct("q", "r", f"hypodense lesion {i}", evidence=ev)).value for i in range(2000)]

    answers = run_sync(answers_of())
    lo, hi = binom.interval(0.999, 2000, 0.2)
    assert lo <= answers.count(False) <= hi


def test_spec_strings_through_the_factory():
    assert build_judge("oracle").epsilon == 0.0
    j = build_judge("oracle:0.2")
    assert isinstance(j, OracleJudge) and j.epsilon == 0.2 and j.name == "oracle:0.2"
    assert parse_oracle_spec("ORACLE:0.1") == 0.1
    for bad in ("oracle:x", "oracle:1.5", "oracle:-0.1"):
        with pytest.raises(ValueError, match="oracle"):
            build_judge(bad)
    with pytest.raises(ValueError, match="oracle"):
        build_judge("nosuch")


def test_rewards_reach_the_oracle_through_the_dataset_image(tmp_path):
    """MRPO's process reward calls the judge as TRL calls it: columns of the HF dataset (the image
    decoded to PIL); the oracle reads the parameters stored with the image."""
    from medrl.data.hf import to_hf_dataset
    from medrl.data.sources.phantom import phantom_records, warmup_traces
    from medrl.rewards.judged import make_mrpo_process

    recs = phantom_records("train", 4, cache_dir=tmp_path)
    traces = warmup_traces(recs, early_error_share=0.5)
    ds = to_hf_dataset(recs)
    rows = [ds[i] for i in range(len(ds))]
    cols = {k: [row[k] for row in rows] for k in rows[0] if k != "prompt"}
    fn = make_mrpo_process(judge=build_judge("oracle"))
    texts = [t.target() for t in traces]
    out = run_sync(fn([r["prompt"] for r in rows], [[{"role": "assistant", "content": x}] for x in texts], **cols))
    for r, t, score, verdicts in zip(recs, traces, out, fn.last_step_verdicts):
        exact = oracle_step_verdicts(r, list(t.steps))
        assert _pairs(verdicts) == _pairs(exact)
        assert score == pytest.approx(sum(v.valid for v in exact) / len(exact))
        assert (score == 1.0) != t.early_error
