"""The phantom source: deterministic records, cached images, disjoint splits, balanced labels,
gold chains the oracle accepts, warm-up traces with a stated share of cascading early errors."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from medrl.data.sources import phantom as ph
from medrl.data.sources.phantom import PhantomConfig, phantom_records, warmup_summary, warmup_traces
from medrl.judges import phantom_truth as truth
from medrl.judges.phantom_truth import oracle_answer_correct, oracle_step_verdicts, parse_step_claims, phantom_params

ALL_TYPES = PhantomConfig(question_types=truth.QUESTION_TYPES)


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_records_are_deterministic_from_the_seed(tmp_path):
    a = phantom_records("train", 12, seed=3, cache_dir=tmp_path / "a")
    b = phantom_records("train", 12, seed=3, cache_dir=tmp_path / "b")
    c = phantom_records("train", 12, seed=4, cache_dir=tmp_path / "c")
    assert [r.to_dict() | {"images": None} for r in a] == [r.to_dict() | {"images": None} for r in b]
    assert [_digest(r.image) for r in a] == [_digest(r.image) for r in b]
    assert [_digest(r.image) for r in a] != [_digest(r.image) for r in c]
    # a prefix of a split is the same records
    assert [r.id for r in phantom_records("train", 5, seed=3, cache_dir=tmp_path / "a")] == [r.id for r in a[:5]]


def test_images_are_drawn_once_and_reused(tmp_path, monkeypatch):
    recs = phantom_records("test", 6, cache_dir=tmp_path)
    files = sorted(Path(recs[0].image).parent.glob("*.png"))
    assert len(files) == 6 and all(Path(r.image).is_file() for r in recs)
    stamps = [f.stat().st_mtime_ns for f in files]
    drawn = []
    monkeypatch.setattr(ph, "_write_image", lambda *a, **k: drawn.append(a))
    again = phantom_records("test", 6, cache_dir=tmp_path)
    assert drawn == [] and [r.image for r in again] == [r.image for r in recs]
    assert [f.stat().st_mtime_ns for f in files] == stamps
    # the default folder is under the medrl cache
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    assert str(ph.default_cache_dir()).startswith(str(tmp_path / "cache"))


def test_train_and_test_are_disjoint(tmp_path):
    train = phantom_records("train", 40, cache_dir=tmp_path)
    test = phantom_records("test", 40, cache_dir=tmp_path)
    assert not {r.id for r in train} & {r.id for r in test}
    assert not {_digest(r.image) for r in train} & {_digest(r.image) for r in test}
    assert not {r.extras["phantom"]["draw_seed"] for r in train} & {r.extras["phantom"]["draw_seed"] for r in test}
    with pytest.raises(ph.DataError, match="unknown split"):
        phantom_records("dev", 1, cache_dir=tmp_path)


def test_labels_are_balanced_per_question_type():
    cfg = PhantomConfig(question_types=truth.QUESTION_TYPES)
    n = len(truth.QUESTION_TYPES)
    params = [ph.make_params("train", i, cfg) for i in range(n * 48)]
    by_type = Counter(p["question_type"] for p in params)
    assert set(by_type.values()) == {48}
    assert Counter(p["modality"] for p in params if p["question_type"] == "modality") == \
        {m: 12 for m in truth.MODALITIES}
    assert Counter(bool(p["count"]) for p in params if p["question_type"] == "finding") == {True: 24, False: 24}
    assert Counter(p["organ"] for p in params if p["question_type"] == "organ") == {o: 12 for o in truth.ORGANS}
    assert Counter(p["side"] for p in params if p["question_type"] == "side") == {"left": 24, "right": 24}
    assert Counter(p["count"] for p in params if p["question_type"] == "count") == {0: 16, 1: 16, 2: 16}
    assert Counter((p["modality"], p["plane"]) for p in params if p["question_type"] == "plane") == \
        {(m, pl): 6 for m in truth.MODALITIES for pl in truth.PLANES[m]}
    assert Counter((p["modality"], p["organ"]) for p in params if p["question_type"] == "study") == \
        {(m, o): 3 for m in truth.MODALITIES for o in truth.ORGANS}
    # the default asks only what a tiny model perceives, and says what it perceives
    assert PhantomConfig().question_types == ("modality", "organ")
    assert "NOT learned" in ph.PERCEPTION["side"] and "NOT learned" in ph.PERCEPTION["count"]
    with pytest.raises(ValueError, match="question_types"):
        PhantomConfig(question_types=("colour",))


def test_record_fields_and_gold_chains_for_every_question_type(tmp_path):
    from medrl.common.modality import MODALITY_TAGS
    from medrl.answers.completion import split_steps

    recs = phantom_records("train", 24, cache_dir=tmp_path, config=PhantomConfig(question_types=truth.QUESTION_TYPES,
                                                                                 size_unit="cm"))
    assert {r.question_type for r in recs} == set(truth.QUESTION_TYPES)
    for r in recs:
        p = r.extras["phantom"]
        assert r.modality_tag in MODALITY_TAGS and r.source == "phantom" and r.open_ended and r.answer_type == "OPEN"
        assert r.key_steps and r.extras["key_step_forms"][0][0] == r.key_steps[0]
        steps = [s.text for s in split_steps(r.gold_reasoning)]
        assert steps == r.extras["gold_steps"], r.gold_reasoning  # medrl's splitter sees the same steps
        verdicts = oracle_step_verdicts(r, steps)
        assert all(v.valid for v in verdicts), (r.gold_reasoning, verdicts)
        assert verdicts[0].answer_contribution == 1  # the chain opens with what the answer depends on
        assert oracle_answer_correct(r, r.answer) is True
        assert phantom_params(r.image) == p  # the PNG carries its parameters
    sizes = [r for r in recs if r.question_type == "size" and r.extras["phantom"]["count"]]
    assert sizes and sizes[0].answer.endswith(" cm")


def test_parameters_reach_a_judge_from_a_path_a_pil_image_and_hf_bytes(tmp_path):
    from PIL import Image

    r = phantom_records("train", 1, cache_dir=tmp_path)[0]
    p = r.extras["phantom"]
    with Image.open(r.image) as im:
        im.load()
        assert phantom_params(im) == p and phantom_params(im.convert("RGB")) == p
    assert phantom_params({"bytes": Path(r.image).read_bytes(), "path": None}) == p
    assert phantom_params({"phantom": p}) == p and phantom_params([None, r.image]) == p
    assert phantom_params("/no/such.png") is None and phantom_params({"modality": "CT"}) is None


def test_parse_step_claims_hand_cases():
    assert parse_step_claims("This is a CT image.") == {"modality": "CT"}
    assert parse_step_claims("On MRI the lesion looks hyperintense.") == \
        {"modality": "MRI", "descriptor": "hyperintense", "presence": "yes"}
    assert parse_step_claims("No focal lesion is seen.") == {"count": "0", "presence": "no"}
    assert parse_step_claims("There are two lesions.") == {"count": "2", "presence": "yes"}
    assert parse_step_claims("It measures 1.8 cm.") == {"size": "18 mm"}
    assert parse_step_claims("It lies on the patient's left side.") == {"side": "left"}
    assert parse_step_claims("It is a lateral view of the upper kidneys.") == \
        {"plane": "lateral", "location": "upper", "organ": "kidneys"}
    assert parse_step_claims("It could be CT or MRI.")["modality"] == "CT|MRI"  # a hedge matches nothing
    assert parse_step_claims("This is not CT but ultrasound.") == {"modality": "ultrasound"}
    assert parse_step_claims("Let me look at the image carefully.") == {}
    assert parse_step_claims("two") == {"count": "2", "presence": "yes"}


def test_warmup_traces_state_their_share_and_cascade(tmp_path):
    from medrl.eval.analysis import first_failure_point, stage_of

    recs = phantom_records("train", 40, cache_dir=tmp_path, config=ALL_TYPES)
    traces = warmup_traces(recs, early_error_share=0.3, seed=1)
    summary = warmup_summary(traces)
    assert summary["early_errors"] == 12 and summary["early_error_share"] == pytest.approx(0.3)
    assert sum(v[0] for v in summary["by_question_type"].values()) == 12
    for t, r in zip(traces, recs):
        verdicts = oracle_step_verdicts(r, list(t.steps))
        assert t.target().startswith("<think>") and t.target().endswith(f"<answer>{t.answer}</answer>")
        assert t.target("modality_think_answer").startswith(r.modality_tag + " <think>")
        assert t.record.gold_reasoning == t.reasoning and t.record.answer == t.answer
        if t.early_error:
            assert not verdicts[0].valid and stage_of(first_failure_point([v.valid for v in verdicts])) == "early"
            assert oracle_answer_correct(r, t.answer) is False  # the error carries into the answer
        else:
            assert all(v.valid for v in verdicts) and oracle_answer_correct(r, t.answer) is True
    assert [t.early_error for t in warmup_traces(recs, early_error_share=0.3, seed=1)] == \
        [t.early_error for t in traces]
    with pytest.raises(ValueError):
        warmup_traces(recs, early_error_share=1.5)


def test_load_records_reads_phantom_splits_like_any_source(tmp_path, monkeypatch):
    from medrl.data import load_records
    from medrl.data.hf import to_hf_dataset

    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path))
    test = load_records("phantom:test", n=8)
    train = load_records("phantom", split="train", n=8)
    assert len(test) == 8 and {r.split for r in test} == {"test"} and {r.split for r in train} == {"train"}
    assert all(str(tmp_path) in r.image for r in test)
    ds = to_hf_dataset(test)
    assert ds[0]["image"].size == (112, 112) and phantom_params(ds[0]["image"]) == test[0].extras["phantom"]


def test_phantom_tokenizer_texts_cover_the_templates():
    texts = ph.phantom_texts(n=200)
    joined = " ".join(texts)
    for word in ("hypodense", "hyperintense", "radiopaque", "hypoechoic", "ultrasound", "X_RAY <think>",
                 "No focal lesion is seen."):
        assert word in joined


def _run_recipe_rewards(names, judge, tmp_path) -> tuple[set, list]:
    """Score 4 phantom records (2 gold traces, 2 with an early error) with each recipe's rewards as
    TRL passes them (the HF dataset's columns); return (reward names run, recipes skipped because
    an encoder is not available offline)."""
    from medrl.data.hf import to_hf_dataset
    from medrl.judges import build_judge
    from medrl.rewards.audit import _call
    from medrl.train.recipes import build_reward_funcs, load_recipe
    from medrl.types import UNSCORABLE

    recs = phantom_records("train", 4, cache_dir=tmp_path)
    traces = warmup_traces(recs, early_error_share=0.5)
    j = build_judge(judge)
    seen, offline = set(), []
    for name in names:
        recipe = load_recipe(name, profile="cpu")
        if not recipe.rewards:
            continue
        style = (recipe.data or {}).get("prompt_style", "think_answer")
        ds = to_hf_dataset(recs, prompt_style=style)
        rows = [ds[i] for i in range(len(ds))]
        cols = {k: [row[k] for row in rows] for k in rows[0] if k != "prompt"}
        comps = [[{"role": "assistant", "content": t.target(style)}] for t in traces]
        cols["corrupted_completions"] = comps  # CAPO's perception reward: the trainer's second pass
        try:
            funcs, _ = build_reward_funcs(recipe, judge=j)
            outs = [(fn.__name__, _call(fn, [r["prompt"] for r in rows], comps, cols)) for fn in funcs]
        except OSError as exc:  # an encoder the offline machine lacks (the recipe layer's business)
            if "HF_HUB_OFFLINE" not in str(exc):
                raise
            offline.append(name)
            continue
        for fname, out in outs:
            assert len(out) == 4 and all(v is None or v is UNSCORABLE or isinstance(v, float) for v in out), \
                (name, fname, out)
            assert any(isinstance(v, float) for v in out), (name, fname, out)
            seen.add(fname)
    return seen, offline


@pytest.mark.parametrize("judge", ["reference", "oracle"])
def test_each_method_family_rewards_run_on_phantom_records(tmp_path, judge):
    """The recipes that load no encoder (fast); MRPO's and the rest in the slow test below."""
    seen, offline = _run_recipe_rewards(
        ["capo", "stepgrpo", "medix_r1_ablation_llm", "armed_ablation_nosemantic"], judge, tmp_path)
    assert not offline
    assert {"capo_accuracy", "capo_consistency", "capo_perception", "steprar", "steprvr", "medix_llm", "format",
            "armed_textual"} <= seen


@pytest.mark.slow
@pytest.mark.parametrize("judge", ["reference", "oracle"])
def test_every_recipe_reward_runs_on_phantom_records(tmp_path, judge):
    import warnings

    from medrl.train.recipes import list_recipes

    seen, offline = _run_recipe_rewards(list_recipes(), judge, tmp_path)
    if offline:
        warnings.warn(f"recipes needing an encoder missing offline, not run: {offline}")
    assert {"mrpo_answer", "mrpo_process", "mrpo_length", "capo_consistency", "steprar", "medix_llm", "medix_embed",
            "armed_semantic", "modality"} <= seen


def test_systematic_warmup_errors_fill_whole_cells_with_one_wrong_value(tmp_path):
    recs = phantom_records("train", 200, cache_dir=tmp_path)
    traces = warmup_traces(recs, early_error_share=0.3, error_mode="systematic", cell_error_rate=0.75, seed=2)
    summary = warmup_summary(traces)
    assert summary["early_errors"] == 60 and summary["error_mode"] == "systematic"
    for cell, (errors, n) in summary["cells"].items():
        wrong = {t.error_value for t in traces if t.early_error and t.record.extras["warmup"]["cell"] == cell}
        assert len(wrong) == 1, (cell, wrong)  # one consistent misreading per cell
        assert errors <= round(0.75 * n) or errors == 1
    for t, r in zip(traces, recs):
        assert oracle_answer_correct(r, t.answer) is (not t.early_error)
    with pytest.raises(ValueError, match="error_mode"):
        warmup_traces(recs, error_mode="sometimes")
    with pytest.raises(ValueError, match="do not fit"):
        warmup_traces(recs, early_error_share=0.9, error_mode="systematic", cell_error_rate=0.5)
