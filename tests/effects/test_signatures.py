"""Signature tasks: each plants its paper's failure at the stated share, on a task where the
paper's mechanism can act, and the harness scores what the paper claims. No training here: the
traces, the phantom variants, the per-output scores and the claims table's verdicts."""

from __future__ import annotations

import pytest

from medrl.data.sources import phantom as ph
from medrl.data.sources.phantom import PhantomConfig, phantom_records
from medrl.effects.signatures import SIGNATURES
from medrl.judges.phantom_truth import (answer_of, oracle_answer_correct, oracle_consistent, oracle_step_verdicts,
                                        phantom_params)

HELD = ("CT/heart", "MRI/kidneys", "X-ray/brain", "ultrasound/liver")


def _records(tmp_path, n=120, split="train", **kw):
    return phantom_records(split, n, cache_dir=tmp_path, config=PhantomConfig(image_size=32, **kw))


def test_study_and_plane_questions_have_gold_chains_the_oracle_accepts(tmp_path):
    recs = _records(tmp_path, 40, question_types=("plane", "study"), held_out=HELD)
    assert {r.question_type for r in recs} == {"plane", "study"}
    for r in recs:
        p = phantom_params(r)
        assert oracle_answer_correct(r, r.answer)
        assert all(v.valid for v in oracle_step_verdicts(r, r.extras["gold_steps"]))
        if r.question_type == "study":
            assert r.answer == f"{p['plane']} {p['modality']} of the {p['organ']}"
            # one attribute wrong is a wrong answer, though most of the words are the same
            assert not oracle_answer_correct(r, r.answer.replace(p["organ"], "brain" if p["organ"] != "brain"
                                                                 else "liver"))
    # a plane answer always changes when the modality does (CT's and MRI's first plane are both axial)
    import numpy as np

    rng = np.random.default_rng(0)
    for r in recs:
        p = phantom_params(r)
        q, _ = ph.change_field(p, "modality", rng)
        assert answer_of(q) != answer_of(p)


def test_held_out_pairs_are_asked_only_in_the_test_split(tmp_path):
    train = _records(tmp_path, 160, question_types=("study",), held_out=HELD)
    test = _records(tmp_path, 160, split="test", question_types=("study",), held_out=HELD)
    pairs = lambda rs: {f"{phantom_params(r)['modality']}/{phantom_params(r)['organ']}" for r in rs}  # noqa: E731
    assert not pairs(train) & set(HELD)
    assert set(HELD) <= pairs(test)
    assert sum(bool(phantom_params(r).get("held_out")) for r in test) == pytest.approx(40, abs=4)
    with pytest.raises(ValueError, match="held_out"):
        PhantomConfig(held_out=("CT/elbow",))


def test_cue_wording_suggests_the_answer_at_the_stated_prior(tmp_path):
    train = _records(tmp_path, 300, question_types=("modality", "organ"), cue_prior=0.8, cue_prior_test=0.5)
    test = _records(tmp_path, 300, split="test", question_types=("modality", "organ"), cue_prior=0.8,
                    cue_prior_test=0.5)
    share = lambda rs: sum(not ph.counter_prior(phantom_params(r)) for r in rs) / len(rs)  # noqa: E731
    assert share(train) == pytest.approx(0.8, abs=0.06) and share(test) == pytest.approx(0.5, abs=0.07)
    r = train[0]
    p = phantom_params(r)
    assert ph.CUE_WORDS[p["question_type"]][p["cue"]] in r.question
    # the cue draws from its own stream: the images and answers are those of the plain wording
    plain = _records(tmp_path, 40, question_types=("modality", "organ"))
    assert [x.answer for x in plain] == [x.answer for x in train[:40]]


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_each_signature_plants_its_failure_at_the_stated_share(name, tmp_path):
    sig = SIGNATURES[name]
    cfg = PhantomConfig(image_size=32, **sig.phantom)
    recs = phantom_records("train", 200, cache_dir=tmp_path, config=cfg)
    traces = sig.traces(recs, seed=3, config=cfg)
    again = sig.traces(recs, seed=3, config=cfg)
    assert [t.answer for t in traces] == [t.answer for t in again]  # seeded
    summary = ph.warmup_summary(traces)
    assert summary["planted"], "no failure planted"
    n = len(traces)
    right = [t for t in traces if oracle_answer_correct(t.record, t.answer)]
    if name == "armed":  # near misses: one attribute wrong, most words shared
        miss = [t for t in traces if "near_miss" in t.planted]
        assert len(miss) == round(0.4 * n)
        assert all(not oracle_answer_correct(recs[i], t.answer) for i, t in enumerate(traces) if t in miss)
        assert len(right) == n - len(miss)
    elif name == "capo":
        counter = [i for i, r in enumerate(recs) if ph.counter_prior(phantom_params(r))]
        short = [i for i, t in enumerate(traces) if "shortcut" in t.planted]
        assert set(short) <= set(counter) and len(short) == round(0.75 * len(counter))
        for i in short:  # the shortcut answers what the wording suggests
            p = phantom_params(recs[i])
            assert p["cue"] in traces[i].answer
        bad = [t for t in traces if "inconsistent" in t.planted]
        assert len(bad) == round(0.2 * (n - len(short)))
        assert all(not oracle_consistent(t.reasoning, t.answer) for t in bad)
        assert all(oracle_consistent(t.reasoning, t.answer) for t in traces if not t.planted)
    elif name == "stepgrpo":  # a sparse reward: about a fifth of the traces right throughout
        assert len(right) / n == pytest.approx((1 - sig.share) ** 3, abs=0.06)
    else:  # medix: right answers in other words, wrong tags
        para = [t for t in traces if "paraphrase" in t.planted]
        tags = [t for t in traces if "wrong_tag" in t.planted]
        assert len(para) == round(0.4 * n) and len(tags) == round(0.3 * n)
        assert all(oracle_answer_correct(t.record, t.answer) for t in para)
        assert all(t.answer != t.record.extras["phantom"] and t.answer != answer_of(phantom_params(t.record))
                   for t in para)
        assert all(t.record.modality_tag != recs[0].modality_tag or True for t in tags)
        target = tags[0].target("modality_think_answer")
        assert target.split()[0] != ph.record_from_params(phantom_params(tags[0].record), "x").modality_tag


def test_paraphrase_replaces_whole_values_only():
    from medrl.effects.signatures.medix import paraphrase

    assert paraphrase("axial CT of the liver") == "axial computed tomography of the hepatic parenchyma"
    assert paraphrase("X-ray") == "plain radiograph" and paraphrase("kidneys") == "renal parenchyma"


def test_score_output_reads_what_the_signatures_claim(tmp_path):
    from medrl.effects.metrics import score_output, summarize

    rec = _records(tmp_path, 4, split="test", question_types=("study",), held_out=HELD)[1]
    p = phantom_params(rec)
    gold = "<think>" + " ".join(rec.extras["gold_steps"]) + f"</think><answer>{rec.answer}</answer>"
    s = score_output(rec, gold)
    assert s["correct"] and s["attribute_accuracy"] == 1.0 and s["paraphrased"] is False and not s["valid_wrong"]
    other = "brain" if p["organ"] != "brain" else "liver"
    near = gold.replace(f"the {p['organ']}", f"the {other}")
    s = score_output(rec, near)
    assert not s["correct"] and s["attribute_accuracy"] == pytest.approx(2 / 3)
    from medrl.effects.signatures.medix import paraphrase

    s = score_output(rec, gold.replace(f"<answer>{rec.answer}", f"<answer>{paraphrase(rec.answer)}"))
    assert s["correct"] and s["paraphrased"] is True
    # every step valid, the answer wrong: where a failure goes when it leaves the steps
    wrong_answer = gold.replace(f"<answer>{rec.answer}", f"<answer>{rec.answer.replace(p['organ'], other)}")
    s = score_output(rec, wrong_answer)
    assert s["valid_wrong"] and not s["consistent"]
    summ = summarize([score_output(rec, gold), score_output(rec, near)])
    assert summ["attribute_accuracy"] == pytest.approx((1 + 2 / 3) / 2) and summ["valid_wrong_rate"] == 0.0
    assert summ["paraphrase_kept"] == 0.0 and summ["paraphrase_kept_n"] == 1


def test_verdicts_and_the_paper_gain_check():
    from medrl.effects.analysis import could_detect, verdict
    from medrl.effects.stats import paired_over_seeds

    up = paired_over_seeds([0.5] * 8, [0.6, 0.61, 0.62, 0.6, 0.63, 0.6, 0.59, 0.61])
    assert verdict(up, lower_is_better=False) == "supports the claim"
    assert verdict(up, lower_is_better=True) == "against the claim"
    flat = paired_over_seeds([0.5, 0.52, 0.49, 0.51, 0.5, 0.48, 0.53, 0.5], [0.51, 0.5, 0.5, 0.5, 0.52, 0.49, 0.5, 0.51])
    v = verdict(flat, lower_is_better=False)
    assert v.startswith("no significant difference (detectable ") and v.endswith(" pp)")
    assert could_detect(flat, 0.2) is True and could_detect(flat, 0.001) is False
    assert could_detect(flat, None) is None


def test_claims_rows_and_the_gathered_table(tmp_path):
    import json

    from medrl.effects import make_config
    from medrl.effects.analysis import claim_rows
    from medrl.effects.report import CLAIMS_HEADER, claims_report

    cfg = make_config("quick", signatures=("armed",), noise_sweep=("oracle:0.2",))
    res = {"n": 8, "diff": -0.05, "ci_low": -0.07, "ci_high": -0.03, "mde": 0.02, "t_p": 0.001,
           "wilcoxon_p": 0.0078, "alpha": 0.05}
    a = {"main": {"early_share@sampled": res}, "sweep": [{"judge": "oracle:0.2", "early_share": res}],
         "signatures": {"armed": {"claim": {**res, "diff": 0.01, "t_p": 0.4, "wilcoxon_p": 0.5}}}}
    rows = claim_rows(cfg, a)
    assert [r["paper"].split()[0] for r in rows] == ["MRPO", "MRPO", "ARMed"]
    assert rows[0]["verdict"] == "supports the claim" and rows[0]["could_detect_paper_gain"] is True
    assert rows[1]["judge"] == "oracle:0.2"
    assert rows[2]["verdict"] == "no significant difference (detectable 2.0 pp)"
    assert rows[2]["could_detect_paper_gain"] is False  # 2.0 pp > ARMed's 1.1 pp
    for i, sub in enumerate(("a", "b")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "results.json").write_text(json.dumps({"config": {"profile": sub}, "claims": rows[i::2]}))
    md, html, got = claims_report([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    text = md.read_text()
    assert "claim" in CLAIMS_HEADER[1] and "verdict" in CLAIMS_HEADER and len(got) == 3
    assert "supports the claim" in text and "ARMed" in text and "8 seeds" in text
    assert "<table>" in html.read_text()
    with pytest.raises(FileNotFoundError, match="results.json"):
        claims_report([tmp_path / "nope"], tmp_path / "out")
