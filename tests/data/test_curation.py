"""Curation tools with a deterministic fake judge and sampler: CAPO mixed-difficulty filter,
ARMed exemplars and refinement, StepGRPO key steps, reference evidence; resume after an
interruption redoes nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from medrl.data import VQARecord, read_jsonl
from medrl.data.curation.capo import difficulty_level, mixed_difficulty_filter
from medrl.data.curation.evidence import add_evidence, evidence_key_steps
from medrl.data.curation.exemplars import answer_groups, knowledge_exemplars
from medrl.data.curation.key_steps import equivalent_forms, extract_key_steps
from medrl.data.curation.refine import refine_vqa
from medrl.judges.base import JudgeStats
from medrl.types import Verdict


def R(rid, q="What is shown?", a="mass", **kw):
    return VQARecord(id=rid, images=[], question=q, answer=a, **kw)


class FakeJudge:
    """Deterministic judge: correctness = exact match; audits and key steps keyed by the text."""

    name = "fake"

    def __init__(self, audits=None, key_steps=None):
        self.stats = JudgeStats()
        self.calls: list[tuple] = []
        self.audits = audits or {}
        self.key_steps = key_steps or {}

    async def answer_correct(self, question, reference, prediction, *, image=None):
        self.calls.append(("answer_correct", prediction))
        if prediction in ("???", "outage"):
            return Verdict.unscored("judge could not parse")
        return Verdict.ok(prediction.strip().lower() == reference.strip().lower())

    async def audit_vqa(self, question, answer, *, answer_type=None):
        self.calls.append(("audit", question))
        v = self.audits.get(question)
        return Verdict.unscored("outage") if v is None else Verdict.ok(v, raw=json.dumps(v))

    async def extract_key_steps(self, question, answer, reasoning):
        self.calls.append(("key_steps", question))
        v = self.key_steps.get(question)
        return Verdict.unscored("timeout") if v is None else Verdict.ok(v)


# ----------------------------------------------------------------------------- CAPO


class FakeSampler:
    """Record i gets `plan[id]` correct answers out of n; raises after `fail_after` records."""

    def __init__(self, plan, fail_after=None):
        self.plan, self.fail_after, self.seen = plan, fail_after, []

    def __call__(self, record, n, temperature):
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.seen.append(record.id)
        k = self.plan[record.id]
        good = f"<think>It is visible.</think><answer>{record.answer}</answer>"
        return [good] * k + ["<think>Guess.</think><answer>wrong</answer>"] * (n - k)


def test_capo_keeps_mixed_difficulty_and_resumes(tmp_path):
    recs = [R("all", a="mass"), R("none", a="cyst"), R("mixed", a="edema"), R("mostly", a="liver")]
    plan = {"all": 10, "none": 0, "mixed": 3, "mostly": 8}
    log = tmp_path / "capo.jsonl"
    judge = FakeJudge()
    with pytest.raises(KeyboardInterrupt):
        mixed_difficulty_filter(recs, FakeSampler(plan, fail_after=2), judge, results_path=log, show_progress=False)
    assert [json.loads(l)["id"] for l in log.read_text().splitlines()] == ["all", "none"]
    sampler = FakeSampler(plan)
    kept, summary = mixed_difficulty_filter(recs, sampler, judge, results_path=log, show_progress=False)
    assert sampler.seen == ["mixed", "mostly"]  # nothing redone
    assert [r.id for r in kept] == ["mixed", "mostly"]
    assert summary == {"total": 4, "kept": 2, "all_correct": 1, "all_wrong": 1, "undecided": 0, "unscored_samples": 0, "resumed": 2}
    capo = kept[0].extras["capo"]
    assert (capo["correct"], capo["wrong"], capo["pass_rate"], capo["difficulty"]) == (3, 7, 0.3, 3)
    assert kept[1].extras["capo"]["difficulty"] == 1  # 8/10 >= 2/3
    # the training decision: exact matches are settled without the judge; the 0 + 10 + 7 + 2
    # wrong samples of the four records each cost one request, on the parsed <answer>
    assert sum(c[0] == "answer_correct" for c in judge.calls) == 19
    assert ("answer_correct", "wrong") in judge.calls


def test_capo_unscored_never_counts_and_callable_check():
    recs = [R("u", a="mass"), R("v", a="mass")]

    def sample(record, n, temperature):
        assert (n, temperature) == (4, 0.9)
        if record.id == "u":
            return ["<answer>mass</answer>"] * 2 + ["<answer>outage</answer>"] * 2
        return [f"<answer>{a}</answer>" for a in ("mass", "liver", "outage", "liver")]

    kept, summary = mixed_difficulty_filter(recs, sample, FakeJudge(), n=4, show_progress=False)
    # "u": 2 correct, 0 wrong, 2 unscored -> undecided, not kept
    assert [r.id for r in kept] == ["v"] and summary["undecided"] == 1 and summary["unscored_samples"] == 3
    assert kept[0].extras["capo"]["pass_rate"] == pytest.approx(1 / 3)

    def check(record, response):
        return None if "outage" in response else f">{record.answer}<" in response

    kept2, _ = mixed_difficulty_filter(recs, sample, check, n=4, show_progress=False)
    assert [r.id for r in kept2] == ["v"]


def test_difficulty_levels():
    assert [difficulty_level(p) for p in (0.1, 1 / 3, 0.5, 2 / 3, 0.9)] == [3, 2, 2, 1, 1]


# ----------------------------------------------------------------------------- ARMed exemplars


def fake_encode(texts):
    """Deterministic bag-of-characters embedding (normalised)."""
    out = np.zeros((len(texts), 26))
    for i, t in enumerate(texts):
        for ch in t.lower():
            if "a" <= ch <= "z":
                out[i, ord(ch) - 97] += 1
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def _exemplar_records():
    recs = []
    qs_mass = ["What is in the liver?", "What lesion is in the liver?", "What is seen in the lung apex?",
               "What abnormality is at the lung apex?", "What is shown in the kidney?", "What is in the liver?"]
    recs += [R(f"m{i}", q=q, a="Mass") for i, q in enumerate(qs_mass)]
    recs += [R(f"e{i}", q=q, a="edema ") for i, q in enumerate(["What fills the alveoli?", "What is around the tumor?",
                                                                  "What surrounds the lesion?", "Which fluid is seen?"])]
    recs += [R("rare", q="Which bone is broken?", a="femur")]
    return recs


def test_answer_groups_threshold():
    high, low = answer_groups(_exemplar_records(), min_count=3)
    assert set(high) == {"mass", "edema"} and len(high["mass"]) == 6 and low == [10]
    high, _ = answer_groups(_exemplar_records(), min_count=4)  # "more than a threshold": 4 edema is not > 4
    assert set(high) == {"mass"}


def test_knowledge_exemplars_nearest_to_centroid_deterministic(tmp_path):
    recs = _exemplar_records()
    out, summary = knowledge_exemplars(recs, min_count=3, clusters_per_group=2, seed=0, encode=fake_encode, show_progress=False)
    out2, _ = knowledge_exemplars(recs, min_count=3, clusters_per_group=2, seed=0, encode=fake_encode, show_progress=False)
    assert [r.id for r in out] == [r.id for r in out2]
    high = [r for r in out if r.extras["knowledge"]["frequency"] == "high"]
    assert summary["high_frequency_groups"] == 2 and summary["high_frequency_exemplars"] == 4 == len(high)
    assert [r.id for r in out if r.extras["knowledge"]["frequency"] == "low"] == ["rare"]
    # each pick is the member nearest its K-Means centroid (checked against sklearn directly)
    from sklearn.cluster import KMeans

    mass = [r for r in recs if r.answer == "Mass"][:5]  # the 6th duplicates the 1st question
    X = fake_encode([r.question for r in mass])
    km = KMeans(n_clusters=2, random_state=0, n_init=10).fit(X)
    expect = sorted(mass[int(np.flatnonzero(km.labels_ == c)[np.argmin(np.linalg.norm(X[km.labels_ == c] - km.cluster_centers_[c], axis=1))])].id
                    for c in range(2))
    assert sorted(r.id for r in high if r.extras["knowledge"]["group"] == "mass") == expect


def test_knowledge_exemplars_resume_by_group(tmp_path):
    recs = _exemplar_records()
    log = tmp_path / "ex.jsonl"
    calls = []

    def enc(texts):
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return fake_encode(texts)

    with pytest.raises(KeyboardInterrupt):
        knowledge_exemplars(recs, min_count=3, clusters_per_group=2, encode=enc, results_path=log, show_progress=False)
    assert len(log.read_text().splitlines()) == 1
    calls.clear()
    out, _ = knowledge_exemplars(recs, min_count=3, clusters_per_group=2, encode=fake_encode_counted(calls), results_path=log, show_progress=False)
    assert calls == [6]  # only the unfinished group ("mass") was embedded again
    full, _ = knowledge_exemplars(recs, min_count=3, clusters_per_group=2, encode=fake_encode, show_progress=False)
    assert [r.id for r in out] == [r.id for r in full]
    with pytest.raises(ValueError, match="another run"):
        knowledge_exemplars(recs, min_count=3, clusters_per_group=2, seed=1, encode=fake_encode, results_path=log, show_progress=False)


def fake_encode_counted(calls):
    def enc(texts):
        calls.append(len(texts))
        return fake_encode(texts)

    return enc


# ----------------------------------------------------------------------------- ARMed refinement


def test_refine_vqa_statuses_audit_log_and_resume(tmp_path):
    audits = {
        "ok?": {"status": "consistent", "new_q": "", "new_a": "", "notes": "fine"},
        "vague?": {"status": "needs_fix", "new_q": "Identify the lesion in the left lobe.", "new_a": "a mass", "notes": "too vague"},
        "junk?": {"status": "drop", "new_q": "", "new_a": "", "notes": "incoherent"},
        "weird?": {"status": "maybe"},
    }
    recs = [R("1", q="ok?"), R("2", q="vague?"), R("3", q="junk?"), R("4", q="down?"), R("5", q="weird?")]
    log = tmp_path / "audit.jsonl"
    judge = FakeJudge(audits)
    out, counts = refine_vqa(recs, judge, audit_log=log, show_progress=False)
    assert [r.id for r in out] == ["1", "2", "4", "5"]
    assert counts == {"consistent": 1, "needs_fix": 1, "drop": 1, "unscored": 2, "resumed": 0, "kept": 4}
    assert out[1].question == "Identify the lesion in the left lobe." and out[1].answer == "mass"
    assert out[1].extras["original_question"] == "vague?"
    assert out[2].extras["refine_status"] == "unscored" and out[2].question == "down?"  # never treated as consistent
    rows = [json.loads(l) for l in log.read_text().splitlines()]
    assert [r["status"] for r in rows] == ["consistent", "needs_fix", "drop", "unscored", "unscored"]
    assert rows[3]["error"] == "outage" and "malformed" in rows[4]["error"] and rows[1]["notes"] == "too vague"
    n_calls = len(judge.calls)
    out2, counts2 = refine_vqa(recs, judge, audit_log=log, on_unscored="drop", allow_answer_change=True, show_progress=False)
    assert len(judge.calls) == n_calls and counts2["resumed"] == 5  # all from the log
    assert [r.id for r in out2] == ["1", "2"] and out2[1].answer == "a mass"


def test_refine_interrupted_keeps_finished_rows(tmp_path):
    class Flaky(FakeJudge):
        async def audit_vqa(self, question, answer, *, answer_type=None):
            if question == "boom?":
                raise KeyboardInterrupt
            return await super().audit_vqa(question, answer, answer_type=answer_type)

    audits = {q: {"status": "consistent", "new_q": "", "new_a": "", "notes": ""} for q in ("a?", "b?", "boom?")}
    recs = [R("1", q="a?"), R("2", q="b?"), R("3", q="boom?")]
    log = tmp_path / "audit.jsonl"
    with pytest.raises(KeyboardInterrupt):
        refine_vqa(recs, Flaky(audits), audit_log=log, concurrency=1, show_progress=False)
    assert len(log.read_text().splitlines()) == 2
    judge = FakeJudge(audits)
    _, counts = refine_vqa(recs, judge, audit_log=log, show_progress=False)
    assert judge.calls == [("audit", "boom?")] and counts["resumed"] == 2


# ----------------------------------------------------------------------------- key steps, evidence


def test_extract_key_steps_with_forms_and_evidence_fallback(tmp_path):
    judge = FakeJudge(key_steps={"gold?": ["CT scan", "left kidney", " ", "ct scan"], "fail?": None})
    recs = [R("g", q="gold?", gold_reasoning="The CT scan shows the left kidney."),
            R("f", q="fail?", gold_reasoning="Some reasoning."),
            R("n", q="none?", a="Cyst", modality="MRI", modality_tag="MRI_SCAN", organ="Abdomen")]
    log = tmp_path / "ks.jsonl"
    out, counts = extract_key_steps(recs, judge, results_path=log, show_progress=False)
    assert counts == {"judged": 1, "from_evidence": 1, "unscored": 1, "skipped": 0, "resumed": 0,
                      "steps_not_in_reasoning": 0}
    assert out[0].key_steps == ["CT scan", "left kidney"]
    forms = out[0].extras["key_step_forms"][0]
    assert forms[0] == "CT scan" and "computed tomography" in forms  # lexicon synonyms (medrl.answers.clinical)
    assert "ct scan" not in forms  # case-only variants are not repeated
    assert out[1].key_steps is None and out[1].extras["key_steps_source"] == "unscored"
    assert out[2].key_steps == ["MRI", "Abdomen", "Cyst"] and out[2].extras["key_steps_source"] == "evidence"
    assert [c[1] for c in judge.calls] == ["gold?", "fail?"]  # no judge call without gold reasoning
    _, counts2 = extract_key_steps(recs, judge, results_path=log, show_progress=False)
    assert counts2["resumed"] == 2 and len(judge.calls) == 2


def test_equivalent_forms():
    assert equivalent_forms("X-Ray")[:3] == ["X-Ray", "x ray", "xray"]
    assert "ct of the chest" in equivalent_forms("computed tomography of the chest")
    assert "two kidneys" in equivalent_forms("2 kidneys") and "2 kidneys" in equivalent_forms("two kidneys")


def test_add_evidence():
    recs = [R("a", a="Liver", modality="CT", organ="Abdomen", extras={"detected_organs": ["Liver", "Spleen"]}),
            R("b", gold_reasoning="Expert text.")]
    out, summary = add_evidence(recs)
    assert summary == {"records": 2, "with_gold": 1, "evidence_added": 1, "key_steps_added": 1}
    assert out[0].extras["evidence"]["findings"] == ["Liver", "Spleen"] and out[0].key_steps == ["CT", "Abdomen", "Liver"]
    assert out[1] is recs[1]
    assert evidence_key_steps(R("c", a="no", modality="X-Ray")) == ["X-Ray", "no"]


def test_curated_records_round_trip(tmp_path):
    from medrl.data import write_jsonl

    out, _ = add_evidence([R("a", a="Liver", modality="CT", organ="Abdomen")])
    assert read_jsonl(write_jsonl(out, tmp_path / "o.jsonl")) == out
