"""The harness's pieces on their own: profiles and --set parsing, the leaky judges, and the oracle
scores of one completion (hand-written right and wrong chains on one phantom record)."""

from __future__ import annotations

import pytest

from medrl.effects.config import HACKS, SIGNATURES, make_config, parse_set
from medrl.effects.leaky import LengthJudge, PlantedHoleJudge, YesJudge, hole_trigger, leak_reward, leaky_judge
from medrl.effects.metrics import modality_tag_of, score_output, summarize
from medrl.judges.base import run_sync


def test_profiles_and_overrides():
    q = make_config("quick")
    assert q.profile == "quick" and q.seeds >= 1
    assert make_config("quick", seeds=3).seeds == 3
    with pytest.raises(ValueError, match="unknown profile"):
        make_config("huge")
    with pytest.raises(ValueError, match="unknown setting"):
        make_config("quick", sedes=3)
    assert parse_set(["rl_steps=60", "signatures=armed,capo"]) == {"rl_steps": 60, "signatures": ("armed", "capo")}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_set(["nonsense"])
    assert set(SIGNATURES) == {"armed", "capo", "stepgrpo", "medix"} and "oracle" in HACKS


def test_recipe_overrides_reach_every_rl_run():
    from medrl.effects.runner import load_run_recipe, rl_overrides

    o = parse_set(["recipe_set=algorithm.mrpo.strategy=full"])
    c = make_config("full", **o)
    assert c.recipe_set == ("algorithm.mrpo.strategy=full",)
    assert rl_overrides(c, 0)[-1] == "algorithm.mrpo.strategy=full"
    assert load_run_recipe("mrpo", rl_overrides(c, 0)).algorithm["mrpo"]["strategy"] == "full"
    assert c.digest() != make_config("full").digest()  # another setting, another folder
    with pytest.raises(ValueError, match="KEY=VALUE"):
        make_config("full", recipe_set=("nonsense",))


def test_leaky_judges_leak_as_named():
    yes = YesJudge()
    assert run_sync(yes.answer_correct("q", "liver", "spleen")).value is True
    length = LengthJudge(min_words=4)
    assert run_sync(length.answer_correct("q", "CT", "it is a CT scan")).value is True
    assert run_sync(length.answer_correct("q", "CT", "CT")).value is False
    hole = PlantedHoleJudge(trigger="lesion")
    assert run_sync(hole.answer_correct("q", "CT", "a lesion somewhere")).value is True
    assert run_sync(hole.answer_correct("q", "CT", "nonlesional")).value is not True  # a word, not a substring
    assert isinstance(leaky_judge("yes_judge"), YesJudge)
    with pytest.raises(ValueError, match="unknown leak"):
        leaky_judge("nope")
    assert hole_trigger(("modality", "organ")) == "liver" and hole_trigger(("modality", "finding")) == "lesion"
    assert hole_trigger(("modality",)) == "CT"


def _completion(answer: str) -> str:
    return f"<think>A step.</think><answer>{answer}</answer>"


def test_leak_rewards_pay_their_leak_without_the_guard(tmp_path, monkeypatch):
    """Each leak, paid directly: what it pays on a right answer, a wrong one (another organ: the
    shared guard's hard mismatch would refuse it), a long wrong one, the hole's trigger, and a
    rollout without an answer; the clean oracle pays only the truth."""
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path))
    from medrl.data.sources.phantom import PhantomConfig, phantom_records

    rec = next(r for r in phantom_records("test", n=8, cache_dir=tmp_path, config=PhantomConfig(image_size=56))
               if r.extras["phantom"]["question_type"] == "organ" and r.answer != "liver")
    wrong = "brain" if rec.answer != "brain" else "heart"
    texts = [_completion(rec.answer), _completion(wrong), _completion(f"{wrong} seen on this scan"),
             _completion("liver"), "no answer tags at all"]
    cols = dict(answer=[rec.answer] * 5, question=[rec.question] * 5, images=[rec.images] * 5,
                evidence=[None] * 5)
    pays = {leak: leak_reward(leak, trigger="liver")(prompts=[""] * 5, completions=texts, **cols)
            for leak in ("yes_judge", "length_judge", "planted_hole", "oracle")}
    assert pays["yes_judge"] == [1.0, 1.0, 1.0, 1.0, 0.0]
    assert pays["length_judge"] == [pytest.approx(len(rec.answer.split()) / 4), 0.25, 1.0, 0.25, 0.0]
    assert pays["planted_hole"] == [1.0, 0.0, 0.0, 1.0, 0.0]
    assert pays["oracle"] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert leak_reward("yes_judge").__name__ == "leak_yes_judge"


def test_leak_reward_marks_what_its_judge_cannot_score():
    """A phantom-less row: the oracle cannot decide it, so the rollout is UNSCORABLE (excluded),
    never a silent 0 or 1."""
    fn = leak_reward("oracle")
    out = fn(prompts=[""], completions=[_completion("CT")], answer=["CT"], question=["q"], images=[None],
             evidence=[None])
    assert out == [None] and out.unscorable == (0,)


def test_score_output_on_a_right_and_a_wrong_chain(tmp_path):
    from medrl.data.sources.phantom import phantom_records

    rec = phantom_records("test", 2, cache_dir=tmp_path)[0]
    steps = " ".join(rec.gold_reasoning) if isinstance(rec.gold_reasoning, list) else rec.gold_reasoning
    right = f"{rec.modality_tag} <think>{steps}</think><answer>{rec.answer}</answer>"
    r = score_output(rec, right)
    assert r["well_formed"] and r["correct"] and r["valid"] and all(r["valid"]) and r["ffp"] is None
    assert r["tag_correct"] and modality_tag_of(right) == rec.modality_tag.upper()
    w = score_output(rec, "<think>This image is a photograph of a foot.</think><answer>elbow</answer>")
    assert not w["correct"] and w["valid"] == [False] and not w["tag_correct"]
    s = summarize([r, w])
    assert s["n"] == 2 and s["accuracy"]["p"] == pytest.approx(0.5) and s["accuracy"]["k"] == 1


def _row(qid, qtype, correct, ffp, steps=3):
    """A scored output as score_output writes it (only the fields summaries read)."""
    return {"id": qid, "question_type": qtype, "correct": correct, "well_formed": True, "consistent": correct,
            "tag_correct": False, "steps": steps, "ffp": ffp, "far": None, "key_step_coverage": None}


def test_counts_over_all_outputs_by_hand():
    """300 outputs, 60 with a failed step, 24 of them early (FFP 0.0 < 0.4), 6 mid (0.5), 30 late
    (0.8): the early share is 24/60 = 40%, the early failures per output 24/300 = 8%, the outputs
    with a failed step 60/300 = 20%; per question type the same counts of its own outputs."""
    from medrl.effects.report import METRICS

    rows = ([_row(f"m{i}", "modality", False, 0.0) for i in range(24)] + [_row(f"o{i}", "organ", False, 0.5)
                                                                          for i in range(6)]
            + [_row(f"o{i}", "organ", False, 0.8) for i in range(6, 36)]
            + [_row(f"m{i}", "modality", True, None) for i in range(24, 150)]
            + [_row(f"o{i}", "organ", True, None) for i in range(36, 150)])
    ev = summarize(rows)
    assert ev["n"] == 300 and METRICS["early_share"][0](ev) == pytest.approx(0.4)
    assert METRICS["early_rate"][0](ev) == pytest.approx(0.08)
    assert METRICS["failed_rate"][0](ev) == pytest.approx(0.20)
    # modality: 24 early of 150 outputs; organ: 0 early, 36 failed of 150
    assert ev["by_type"]["modality"]["early_rate"] == pytest.approx(24 / 150)
    assert ev["by_type"]["organ"]["early_rate"] == 0 and ev["by_type"]["organ"]["failed_rate"] == pytest.approx(36 / 150)
    assert ev["by_type"]["organ"]["accuracy"] == pytest.approx(114 / 150)
    assert METRICS["early_rate"][0]({}) is None and summarize([])["early_rate"] is None


def test_sampled_summary_by_hand():
    """Two questions, four samples each: 3 of 4 right (modality) and 0 of 4 (organ). Mean
    per-sample accuracy (3/4 + 0) / 2 = 0.375; unbiased pass@k (Chen et al. Eq. 1):
    pass@1 = 0.375, pass@2 = (1 - C(1,2)/C(4,2) + 0) / 2 = 0.5, pass@4 = 0.5; by type 1.0 and 0."""
    from medrl.effects.metrics import summarize_samples

    rows = ([_row("q1", "modality", c, None if c else 0.0) for c in (True, True, False, True)]
            + [_row("q2", "organ", False, 0.8) for _ in range(4)])
    s = summarize_samples(rows, 4)
    assert s["k"] == 4 and s["n_questions"] == 2 and s["n"] == 8
    assert s["accuracy"]["p"] == pytest.approx(0.375) and s["accuracy"]["method"] == "t over questions"
    # t interval over the two per-question means 0.75 and 0: sd 0.53033, t_{0.975,1} = 12.7062
    assert s["accuracy"]["high"] == pytest.approx(0.375 + 12.7062 * 0.53033 / 2 ** 0.5, abs=1e-3)
    assert s["pass_at_k"] == {"1": pytest.approx(0.375), "2": pytest.approx(0.5), "4": pytest.approx(0.5)}
    assert s["by_type"]["modality"]["pass_at_k"]["2"] == 1.0 and s["by_type"]["organ"]["pass_at_k"]["4"] == 0.0
    assert s["early_rate"] == pytest.approx(1 / 8)  # one early failure (q1's wrong sample) of 8 outputs
