"""Model-backed rewards on the offline MiniLM: BERTScore, cosine, HSS, MRPO R_ans, ARMed
callables, MediX-R1 R_embed, StepRAR embedding matching. The models load once per session
(the loaders are cached); the fixture only makes the first load happen up front."""

import json

import pytest

from medrl.rewards import REWARDS
from medrl.rewards.hss import hss, hss_batch
from medrl.rewards.semantic import bertscore_f1, embedding_cosine, load_bertscorer
from medrl.rewards.stepgrpo import key_step_ratio


@pytest.fixture(scope="module", autouse=True)
def models():
    from medrl.common.embeddings import load_encoder

    load_bertscorer()
    load_encoder()


def resp(answer, prefix=""):
    return f"{prefix}<think>The chest X-ray shows an opacity.</think><answer>{answer}</answer>"


def test_hss_eq15_by_hand():
    # 0.25 * 0.5 + 0.25 * 0.8 + 0.10 * 0.9 + 0.40 * 0.6 = 0.125 + 0.2 + 0.09 + 0.24 = 0.655
    assert hss(0.5, 0.8, 0.9, 0.6) == pytest.approx(0.655)


def test_bertscore_and_cosine():
    bs = bertscore_f1(["left lung", "renal artery", "", "liver"], ["left lung", "banana bread", "x", ""])
    assert bs[0] == pytest.approx(1.0, abs=1e-4)
    assert bs[1] < bs[0]
    assert bs[2] == 0.0 and bs[3] == 0.0
    cs = embedding_cosine(["left lung", "renal artery", ""], ["left lung", "banana bread", "x"])
    assert cs[0] == pytest.approx(1.0, abs=1e-4)
    assert cs[1] < 0.5 and cs[2] == 0.0
    with pytest.raises(ValueError):
        bertscore_f1(["a"], ["a", "b"])


def test_hss_batch_combines_its_parts():
    rows = hss_batch(["Left lung.", "right kidney"], ["left lung", "left lung"])
    assert set(rows[0]) == {"bleu1", "rouge1", "bertscore", "cosine", "hss"}
    assert rows[0]["bleu1"] == 1.0 and rows[0]["rouge1"] == 1.0
    for r in rows:
        assert r["hss"] == pytest.approx(hss(r["bleu1"], r["rouge1"], r["bertscore"], r["cosine"]))
    assert rows[0]["hss"] > rows[1]["hss"]


def test_semantic_callables():
    comps = [resp("left lung"), resp("left lung"), "no answer"]
    answers = ["left lung", None, "left lung"]
    for name in ["bertscore", "embedding_cosine", "hss", "mrpo_answer", "armed_semantic"]:
        out = REWARDS.get(name)()(["p"] * 3, comps, answer=answers)
        # exact match ~1 (R_ans: 0.25 * (1 + 1) + 0.5 * 1); no reference None; no answer 0
        assert out[0] == pytest.approx(1.0, abs=1e-3), name
        assert out[1] is None and out[2] == 0.0, name


def test_armed_adaptive_semantic_state_round_trip():
    # answers the shared guard lets through (a side flip or another organ would score 0 before
    # the metric and stay out of the adaptive statistics; so would a more specific place such as
    # "left lung, upper zone", which a surface metric cannot check)
    comps = [resp(a) for a in ["left lung", "lung, left", "left lung, enlarged", "the lung on the left"]]
    ans = ["left lung"] * 4
    a = REWARDS.get("armed_adaptive_semantic")(initial_threshold=0.5)
    b = REWARDS.get("armed_adaptive_semantic")(initial_threshold=0.5)
    first = a(["p"] * 4, comps, answer=ans)
    # Eq. 13 from the adapted parts: 0.2 * Adapt(BERTScore) + 0.8 * Adapt(Cos)
    for i, v in enumerate(first):
        assert v == pytest.approx(0.2 * a.last_adapted["bertscore"][i] + 0.8 * a.last_adapted["cosine"][i])
    assert a.adapt["bertscore"].threshold == pytest.approx(0.51)  # moved by at most 0.01
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b(["p"] * 4, comps, answer=ans) == a(["p"] * 4, comps, answer=ans)
    assert b.state_dict() == a.state_dict()


def test_armed_total_eq14_and_logging():
    fn = REWARDS.get("armed")()
    logged = {}
    comps = [resp("left lung"), "left lung", resp("heart")]
    out = fn(["p"] * 3, comps, answer=["left lung", "left lung", None],
             log_metric=lambda k, v: logged.__setitem__(k, v))
    adapted = fn.semantic.last_adapted
    # row 0: R_c = 1 (exact), R_f = 1; row 1: no <answer> -> the answer guard gives R_c = R_as = 0
    # (and keeps it out of the adaptive statistics), R_f = 0; row 2: no reference
    r_as0 = 0.2 * adapted["bertscore"][0] + 0.8 * adapted["cosine"][0]
    assert len(adapted["bertscore"]) == 1
    assert out[0] == pytest.approx(0.4 * 1 + 0.4 * r_as0 + 0.2 * 1)
    assert out[1] == 0.0
    assert out[2] is None
    assert "armed/bertscore_threshold" in logged and "armed/cosine_adaptive_mean" in logged
    state = fn.state_dict()
    fn.frozen = True
    fn(["p"], comps[:1], answer=["left lung"])
    assert fn.state_dict() == state


def test_medix_embed_scored_by_cosine():
    comps = [resp(a, "<X_RAY>") for a in ["Left lung", "pneumonia", "-"]]
    refs = ["left lung", "renal artery", "Renal artery"]
    # exact match by the guard -> 1; unrelated -> cos < 0.8 -> 0; exploit -> 0
    assert REWARDS.get("medix_embed")()(["p"] * 3, comps, answer=refs) == [1.0, 0.0, 0.0]
    # threshold -1 accepts any cosine, yet the gate still rejects "-"
    assert REWARDS.get("medix_embed")(threshold=-1.0)(["p"] * 3, comps, answer=refs) == [1.0, 1.0, 0.0]


def test_steprar_embedding_matching():
    reasoning = "The CT shows a mass in the left kidney. It enhances after contrast."
    assert key_step_ratio(reasoning, ["The CT shows a mass in the left kidney."], mode="embedding") == 1.0
    assert key_step_ratio(reasoning, ["The CT shows a mass in the left kidney.", "fractured femur"],
                          mode="embedding") == 0.5
    assert key_step_ratio(reasoning, ["It enhances after contrast."], mode="embedding", threshold=1.01) == 0.0


@pytest.mark.parametrize("name", ["medix_embed", "mrpo_answer", "armed", "armed_adaptive_semantic", "armed_semantic",
                                  "armed_textual", "bertscore", "embedding_cosine"])
def test_a_reference_hidden_in_markup_earns_nothing(name):
    """The embedding and semantic rewards score the answer as the one answer decision reads it
    (medrl.answers.metric_text): an HTML comment is removed before anything is embedded, so
    "<!-- X --> W" earns what the committed wrong answer "W" earns, and "<!-- X --> X" what X earns."""
    ref, wrong = "Pneumothorax", "Fracture"
    completions = [resp(f"<!-- {ref} --> {wrong}"), resp(f"{wrong} <!-- {ref} -->"), resp(wrong),
                   resp(f"<!-- {ref} --> {ref}"), resp(ref)]
    cols = {"answer": [ref] * len(completions), "question": ["What is the abnormality?"] * len(completions)}
    fn = REWARDS.get(name)()
    call = getattr(fn, "sync", None) or fn
    got = call(prompts=[""] * len(completions), completions=completions, **cols)
    if name == "armed_adaptive_semantic":  # adaptive: the thresholds move with the batch; compare within it
        assert got[0] == pytest.approx(got[2]) and got[1] == pytest.approx(got[2]) and got[3] == pytest.approx(got[4])
        return
    assert got[0] == pytest.approx(got[2]) and got[1] == pytest.approx(got[2]), got  # the hidden reference pays nothing
    assert got[3] == pytest.approx(got[4]) and got[4] > got[2], got
