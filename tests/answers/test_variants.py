"""Metamorphic tests: answers that keep the reference's meaning must stay correct, answers that
change it must lose - for the reference judge and for every answer-metric reward.

The variants come from :mod:`medrl.answers.variants` (written from meaning classes, independent of
the judge's rules). On every open-ended VQA-RAD test and English SLAKE validate reference:

- the reference judge accepts >= 95% of the preserving variants and <= 1% of the flipping ones
  (rates and the worst failures are printed);
- ``medix_embed``, ``mrpo_answer``, ``armed``, ``capo_accuracy`` and ``steprar`` give no flipping
  variant more than a committed wrong answer of the same record, and the reference itself keeps
  its record's top score.
"""

from __future__ import annotations

import asyncio
import collections

import pytest
from hypothesis import HealthCheck, given, settings

from medrl.answers.variants import Variant, flipping, preserving, variant_strategy, variants

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


# ------------------------------------------------------------------ the generator itself


def _kinds(ref, preserves, **kw):
    return {v.kind: v.text for v in variants(ref, **kw) if v.preserves == preserves}


def test_generator_writes_each_meaning_class():
    f = _kinds("right temporal lobe", False)
    assert f["side_flip"] == "left temporal lobe" and f["side_drop"] == "temporal lobe"
    assert f["negation_colon_no"] == "right temporal lobe: no" and f["negation_non"] == "non-right temporal lobe"
    assert f["negation_strike"] == "~~right temporal lobe~~" and f["negation_cross_mark"].endswith("\u274c")
    assert f["organ_broader"] == "brain" and f["hedge_possibly"] == "possibly right temporal lobe"
    assert f["modality_prefix"] == "CT right temporal lobe" and "script_zh" in f and "script_translit" in f
    p = _kinds("right temporal lobe", True)
    assert p["side_abbrev"] == "R temporal lobe" and p["markup_boxed"] == "\\boxed{right temporal lobe}"
    n = _kinds("3.4 cm", False)
    assert {n["number_point_dropped"], n["number_range"], n["number_unit_inches"], n["number_unit_unconverted"]} == {
        "34 cm", "3-4 cm", "3.4 inches", "3.4 mm"}
    assert _kinds("3.4 cm", True)["unit_converted"] == "34 mm"
    assert _kinds("Chest X-Ray", True)["qualifier_view"] == "Chest X-Ray, PA view"
    assert _kinds("Liver", True)["qualifier_enlarged"] == "Liver, enlarged"
    assert _kinds("Liver", False)["organ_other"] == "Spleen"
    assert _kinds("MRI", True, rng_seed=0)["qualifier_sequence"] in ("MRI, T2-weighted", "MRI, axial")
    assert _kinds("liver and spleen", True)["reorder"] == "spleen and liver"
    assert _kinds("yes", False)["yes_no_flip"] == "no"


def test_generator_respects_the_question_and_shared_heads():
    # a plane question makes "axial" an answer, not a qualifier; a CT question makes "CT X" true
    assert "qualifier_plane" not in _kinds("CT", True, question="In which plane is this image taken?")
    assert "modality_prefix" not in _kinds("Liver", False, question="What organ is shown on this CT?")
    # "lateral and third ventricular X": the adjectives share the head, so no reorder
    assert "reorder" not in _kinds("Lateral and third ventricular hydrocephalus", True)
    # a reference naming both sides is not flipped by swapping them
    assert "side_flip" not in _kinds("Right vs left sided pathology", False)
    # a negative reference is not negated again; a bare number is not negated
    assert not any(k.startswith("negation") for k in _kinds("None", False))
    assert not any(k.startswith("negation") for k in _kinds("2", False))


def test_generator_is_deterministic_and_never_flips_to_the_reference():
    for ref in ("Right lung", "3.4 cm", "Brain Edema, Brain Tumor", "T2", "yes"):
        a, b = variants(ref, rng_seed=3), variants(ref, rng_seed=3)
        assert a == b and all(isinstance(v, Variant) for v in a)
        assert all(v.text.strip().lower() != ref.lower() for v in flipping(ref))
        assert len({v.text for v in a}) == len(a)
    assert preserving("") == [] and variants("   ") == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variant_strategy("Left kidney", question="Where is the mass?"))
def test_hypothesis_strategy_draws_variants(v):
    assert isinstance(v, Variant) and v.text.strip()
    if not v.preserves:
        assert v.text.strip().lower() != "left kidney"


# ------------------------------------------------------------------ the reference judge on real references


def _open_references(data_dir, sources=("vqa_rad:test", "slake:validate")):
    """(reference, question) of every open-ended record, one per distinct reference text."""
    from medrl.data import load_records

    out: dict[str, str] = {}
    for source in sources:
        for r in load_records(source, data_dir=data_dir, open_only=True):  # SLAKE: English only (lang="en")
            out.setdefault(str(r.answer).strip(), r.question)
    return list(out.items())


def judge_rates(pairs, judge=None, seed=0):
    """Accept rates of the reference judge on the variants of ``pairs``; returns
    (preserving rate, flipping rate, failures, per-kind counts)."""
    from medrl.judges import build_judge

    judge = judge or build_judge("reference")

    async def run():
        rows = []
        for ref, q in pairs:
            for v in variants(ref, question=q, rng_seed=seed):
                verdict = await judge.answer_correct(q, ref, v.text)
                rows.append((ref, v, bool(verdict.value)))
        return rows

    rows = asyncio.run(run())
    pres = [r for r in rows if r[1].preserves]
    flip = [r for r in rows if not r[1].preserves]
    failures = [r for r in pres if not r[2]] + [r for r in flip if r[2]]
    per_kind = collections.Counter((v.preserves, v.kind) for _, v, ok in failures if ok != v.preserves)
    return (sum(ok for *_, ok in pres) / max(1, len(pres)), sum(ok for *_, ok in flip) / max(1, len(flip)),
            failures, per_kind, len(pres), len(flip))


def _report(label, rates):
    p, f, failures, per_kind, n_p, n_f = rates
    print(f"\n{label}: preserving accepted {p:.1%} of {n_p}, flipping accepted {f:.1%} of {n_f}")
    print("  failing kinds:", ", ".join(f"{'P' if k[0] else 'F'}:{k[1]} x{n}" for k, n in per_kind.most_common(15)))
    for ref, v, ok in failures[:25]:
        print(f"  {'refused' if v.preserves else 'ACCEPTED'} {v.kind:<24} {ref!r} -> {v.text!r}")


# the fast subset: a fixed slice of the references (every 6th), all their variants
def test_reference_judge_on_a_subset_of_real_references(data_dir):
    pairs = _open_references(data_dir)[::6]
    rates = judge_rates(pairs)
    _report(f"reference judge, {len(pairs)} references", rates)
    assert rates[0] >= 0.95, "reference judge refuses meaning-preserving variants (see the printed failures)"
    assert rates[1] <= 0.01, "reference judge accepts meaning-flipping variants (see the printed failures)"


@pytest.mark.slow
def test_reference_judge_on_every_open_reference(data_dir):
    pairs = _open_references(data_dir)
    rates = judge_rates(pairs)
    _report(f"reference judge, all {len(pairs)} open-ended references", rates)
    assert rates[0] >= 0.95 and rates[1] <= 0.01


# ------------------------------------------------------------------ answer-metric rewards


GUARDED = ("medix_embed", "mrpo_answer", "armed", "capo_accuracy", "steprar")


def _reward_audit(records, judge):
    """The audit's correct, wrong and variant cases (the exploit catalogue is tests/rewards/test_audit.py's)."""
    from medrl.rewards import REWARDS
    from medrl.rewards.audit import build_cases, run_audit

    funcs = [REWARDS.get(name)(**({"missing_key_steps": "zero"} if name == "steprar" else {})) for name in GUARDED]
    cases = [c for c in build_cases(records) if c.kind != "exploit"]
    return run_audit(funcs, records, judge=judge, correctness="auto", answer_rewards=list(GUARDED), cases=cases)


@pytest.fixture(scope="module")
def reward_records(data_dir):
    from medrl.data import load_records
    from medrl.rewards.audit import select_records

    out = []
    for source in ("vqa_rad:test", "slake:validate"):
        out += select_records(load_records(source, data_dir=data_dir, open_only=True), 3)
    return out


def test_answer_rewards_pay_no_flipping_variant(reward_records):
    """No flipping variant earns more than a committed wrong answer of its record from any
    answer-metric reward, and the reference keeps its record's top score."""
    from medrl.judges import build_judge
    from medrl.rewards.audit import format_report

    rep = _reward_audit(reward_records, build_judge("reference"))
    print("\n" + format_report(rep, max_flags=30))
    assert not rep.paid, format_report(rep)
    assert not rep.not_top, format_report(rep)


def test_guard_fixes_the_known_failures():
    """The cases found in real runs: a flipped side and a negation were paid as correct."""
    from medrl.rewards import REWARDS

    def c(a):
        return f"<think>The image shows the brain. The finding is {a}.</think><answer>{a}</answer>"

    rows = [("right temporal lobe", "right temporal lobe"), ("right temporal lobe", "left temporal lobe"),
            ("right temporal lobe", "liver"), ("Hydrocephalus", "Hydrocephalus"), ("Hydrocephalus", "Hydrocephalus: no"),
            ("Hydrocephalus", "Pneumonia")]
    cols = {"answer": [r for r, _ in rows], "question": ["What is abnormal?"] * len(rows)}
    for name in ("medix_embed", "mrpo_answer", "armed"):
        fn = REWARDS.get(name)()
        if hasattr(fn, "frozen"):
            fn.frozen = True
        s = fn(prompts=["q"] * len(rows), completions=[c(a) for _, a in rows], **cols)
        assert s[1] <= s[2] + 1e-9 and s[4] <= s[5] + 1e-9, (name, s)  # flipped = no more than wrong
        assert s[0] > s[2] and s[3] > s[5], (name, s)
