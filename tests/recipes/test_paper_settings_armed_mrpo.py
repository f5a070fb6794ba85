"""ARMed's and MRPO's training data as the papers ran them (issue 13): ARMed on open and closed
questions, knowledge injection keeping only chains of thought whose answer is accepted, VQA
refinement as an opt-in stage, the two ablation recipes; MRPO's require_gold_reasoning and the
guard against TRL's parsed-content path dropping <think>."""

from __future__ import annotations

import json
import logging

import pytest

from medrl.data import DataError
from medrl.data.record import VQARecord, write_jsonl
from medrl.train.recipes import build_reward_funcs, load_recipe


def rec(i, answer, question="What is shown?", gold=None, answer_type="OPEN"):
    return VQARecord(id=f"r{i}", images=[], question=question, answer=answer, gold_reasoning=gold,
                     answer_type=answer_type, open_ended=answer_type == "OPEN")


# ---------------------------------------------------------------------------------------- ARMed


def open_and_closed_jsonl(tmp_path):
    """A jsonl source with one open question and one yes/no (closed) question, both with gold
    reasoning (so MRPO's require_gold_reasoning keeps them)."""
    path = tmp_path / "open_closed.jsonl"
    write_jsonl([with_image(r, tmp_path) for r in (
        rec(1, "pneumonia", gold="Opacity. Fever."),
        rec(2, "yes", "Is there a fracture?", gold="The cortex is broken.", answer_type="CLOSED"))], path)
    return f"jsonl:{path}"


def test_armed_trains_on_open_and_closed_and_refine_is_opt_in(tmp_path):
    from medrl.train.pipeline import load_training_records, pipeline_stages

    r = load_recipe("armed")
    src = open_and_closed_jsonl(tmp_path)
    # ARMed keeps the closed (yes/no) question; MRPO (open questions only, Sec. 5.1) drops it
    assert [x.id for x in load_training_records(r, src)] == ["r1", "r2"]
    assert [x.id for x in load_training_records(load_recipe("mrpo"), src)] == ["r1"]
    assert [s["kind"] for s in pipeline_stages(r)] == ["rl", "knowledge_injection", "sft", "rl"]
    on = load_recipe("armed", overrides=["data.refine=true"])
    assert [s["kind"] for s in pipeline_stages(on)] == ["refine", "rl", "knowledge_injection", "sft", "rl"]
    single = load_recipe("grpo", overrides=["data.refine=true"])
    assert [s["kind"] for s in pipeline_stages(single)] == ["refine", "rl"]


def test_union_of_datasets_open_and_closed(data_dir):
    from medrl.train.pipeline import load_training_records

    report = {}
    recs = load_training_records(load_recipe("armed"), "vqa_rad:test+slake:validate", data_dir=str(data_dir),
                                 report=report)
    assert {r.source for r in recs} == {"vqa_rad", "slake"}
    assert {r.open_ended for r in recs} == {True, False}  # ARMed: open and closed questions
    assert len(load_training_records(load_recipe("armed"), "vqa_rad:test+slake:validate", data_dir=str(data_dir),
                                     limit=5)) == 5


def test_refine_stage_runs_the_audit(tmp_path):
    from medrl.judges import build_judge
    from medrl.train.pipeline import refine_stage

    recs = [rec(1, "yes", "Is there a fracture?", answer_type="CLOSED"), rec(2, "left kidney", "Where is the mass?")]
    out = refine_stage(recs, build_judge("reference"), tmp_path, show_progress=False)
    assert [r.id for r in out] == ["r1", "r2"]
    assert (tmp_path / "audit.jsonl").is_file() and (tmp_path / "records.jsonl").is_file()
    assert sum(json.loads((tmp_path / "summary.json").read_text()).values()) >= 2


def test_knowledge_injection_keeps_only_accepted_chains(tmp_path, monkeypatch, caplog):
    import medrl.data.curation.exemplars as exemplars
    import medrl.models as models
    from medrl.methods.armed import knowledge_injection

    recs = [rec(1, "pneumonia"), rec(2, "left kidney"), rec(3, "yes", "Is it normal?", answer_type="CLOSED"),
            rec(4, "edema")]
    texts = ["<think>Opacity with fever.</think><answer>Pneumonia</answer>",          # accepted
             "<think>The mass is on the right.</think><answer>right kidney</answer>",  # another answer
             "<think>Nothing abnormal is seen.</think><answer>Yes</answer>",           # accepted
             "<think>Unsure.</think><answer>edema, effusion, mass</answer>"]          # a list: guarded
    monkeypatch.setattr(exemplars, "knowledge_exemplars", lambda records, **k: (list(records), {"chosen": 4}))
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: (None, None))
    monkeypatch.setattr(models, "generate", lambda *a, **k: list(texts))
    with caplog.at_level(logging.INFO, logger="medrl.methods.armed"):
        out = knowledge_injection("m", recs, tmp_path / "k")
    assert [r.id for r in out] == ["r1", "r3"]
    assert out[0].gold_reasoning == "Opacity with fever." and out[0].answer == "pneumonia"
    summary = json.loads((tmp_path / "k" / "summary.json").read_text())["chains_of_thought"]
    assert summary["generated"] == 4 and summary["kept"] == 2 and summary["rejected"] == 2
    assert any("kept 2 of 4 chains of thought" in m for m in caplog.messages)
    # opting out keeps every chain (the previous behaviour)
    assert len(knowledge_injection("m", recs, tmp_path / "all", require_correct=False)) == 4


def test_empty_knowledge_set_skips_sft(tmp_path, monkeypatch):
    import medrl.train.pipeline as pipeline

    recipe = load_recipe("armed", profile="cpu")
    calls = []
    monkeypatch.setattr(pipeline, "train_rl", lambda *a, **k: calls.append("rl") or pipeline.RLResult(None, tmp_path,
                                                                                                     tmp_path / "rl"))
    import medrl.methods.armed as armed

    monkeypatch.setattr(armed, "knowledge_injection", lambda *a, **k: [])  # the stage ARMed's file registers
    monkeypatch.setattr(pipeline, "train_sft_stage", lambda *a, **k: calls.append("sft"))
    final = pipeline.run_recipe(recipe, tmp_path / "m0", [rec(1, "a")], tmp_path / "run")
    assert calls == ["rl", "rl"] and final == tmp_path / "rl"


@pytest.mark.parametrize("name, rewards", [
    ("armed_ablation_raw", {"armed_textual": 0.4, "armed_semantic": 0.4, "format": 0.2}),
    ("armed_ablation_nosemantic", {"armed_textual": 1.0}),  # Fig. 4: textual correctness only
])
def test_armed_ablation_recipes(name, rewards, tmp_path):
    from medrl.train.pipeline import load_training_records, pipeline_stages
    from medrl.train.recipes import build_grpo_config

    r = load_recipe(name, profile="cpu")
    funcs, weights = build_reward_funcs(r)
    assert dict(zip([f.__name__ for f in funcs], weights)) == rewards
    # ARMed's training data (open and closed questions), one RL stage
    assert [x.id for x in load_training_records(r, open_and_closed_jsonl(tmp_path))] == ["r1", "r2"]
    assert not pipeline_stages(r)
    # the group size TRL gets: 2 under the cpu profile, the paper's 8 otherwise
    assert build_grpo_config(r, tmp_path / "cpu", use_cpu=True).num_generations == 2
    assert build_grpo_config(load_recipe(name), tmp_path / "full", use_cpu=True).num_generations == 8


# ---------------------------------------------------------------------------------------- MRPO


def with_image(r, tmp_path):
    from dataclasses import replace

    from PIL import Image

    img = tmp_path / "img.png"
    if not img.is_file():
        Image.new("RGB", (8, 8)).save(img)
    return replace(r, images=[str(img)])


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "d.jsonl"
    write_jsonl([with_image(r, tmp_path) for r in (rec(1, "pneumonia", gold="Opacity. Fever."), rec(2, "edema"),
                                                   rec(3, "mass"))], path)
    return f"jsonl:{path}"


def test_require_gold_reasoning_keeps_matched_records(jsonl, caplog):
    from medrl.train.pipeline import load_training_records

    r = load_recipe("mrpo")
    assert r.data["require_gold_reasoning"] is True
    report = {}
    with caplog.at_level(logging.INFO, logger="medrl.train.pipeline"):
        out = load_training_records(r, jsonl, report=report)
    assert [x.id for x in out] == ["r1"]
    assert report["gold_reasoning"] == {"required": True, "matched": 1, "unmatched": 2}
    assert any("1 of 3 records matched, 2 unmatched" in m for m in caplog.messages)


def test_evidence_only_warning_and_no_match_error(jsonl, tmp_path, caplog):
    from medrl.train.pipeline import load_training_records

    with caplog.at_level(logging.WARNING, logger="medrl.train.pipeline"):
        out = load_training_records(load_recipe("mrpo", profile="cpu"), jsonl)
    assert len(out) == 3
    assert any("mrpo_process: 2 of 3 training records have no gold reasoning" in m for m in caplog.messages)
    path = tmp_path / "none.jsonl"
    write_jsonl([with_image(rec(2, "edema"), tmp_path)], path)
    with pytest.raises(DataError, match="require_gold_reasoning.*rationales"):
        load_training_records(load_recipe("mrpo"), f"jsonl:{path}")


def test_rationales_files_are_joined_in_order(jsonl, tmp_path):
    from medrl.train.pipeline import load_training_records

    a, b = tmp_path / "r_rad.json", tmp_path / "r_other.json"
    a.write_text(json.dumps({"q2": {"image": "img.png", "question": "What is shown?", "answer": "edema",
                                    "solution": "Fluid in the interstitium."}}))
    b.write_text(json.dumps({"q3": {"image": "img.png", "question": "What is shown?", "answer": "mass",
                                    "solution": "A round lesion."}}))
    report = {}
    out = load_training_records(load_recipe("mrpo", overrides=[f"data.rationales=[{a}, {b}]"]), jsonl, report=report)
    assert [(r.id, r.gold_reasoning) for r in out] == [("r1", "Opacity. Fever."), ("r2", "Fluid in the interstitium."),
                                                       ("r3", "A round lesion.")]
    assert report["gold_reasoning"] == {"required": True, "matched": 3, "unmatched": 0}
    assert [m["matched"] for m in report["medthink"]] == [1, 1]


class _Tok:
    response_template = "{...}"

    def decode(self, ids, skip_special_tokens=False):
        return "<think>a</think><answer>b</answer>" if ids and ids[0] == 1 else "<answer>b</answer>"


def test_parsed_content_guard():
    from medrl.train.guards import check_reasoning_kept, uses_parsed_content

    assert uses_parsed_content(_Tok()) and not uses_parsed_content(object())
    ok = [[{"role": "assistant", "content": "<think>a</think><answer>b</answer>"}], "<answer>b</answer>"]
    check_reasoning_kept(ok)
    with pytest.raises(RuntimeError, match="'thinking' field"):
        check_reasoning_kept([[{"role": "assistant", "content": "<answer>b</answer>", "thinking": "a"}]])
    with pytest.raises(RuntimeError, match="generated tokens"):
        check_reasoning_kept([[{"role": "assistant", "content": "<answer>b</answer>"}]], [[1, 2]], _Tok())
    # a rollout that never wrote <think> is the policy's problem, not the parser's
    check_reasoning_kept([[{"role": "assistant", "content": "<answer>b</answer>"}]], [[0, 2]], _Tok())


@pytest.mark.parametrize("name", ["grpo", "gdpo", "dr_grpo"])
def test_mrpo_baselines_share_mrpo_settings(name, tmp_path):
    """MRPO App. C.2 (2nd paragraph): every RL method of Table 2 is trained "under identical
    settings"; Train_MRPO.sh's 512 completion tokens and 802,816-pixel image cap included."""
    from medrl.train.recipes import build_grpo_config

    mrpo, base = load_recipe("mrpo"), load_recipe(name)
    assert base.grpo["max_completion_length"] == mrpo.grpo["max_completion_length"] == 512
    assert base.data["max_pixels"] == mrpo.data["max_pixels"] == 802_816
    assert build_grpo_config(base, tmp_path, use_cpu=True).max_completion_length == 512
    shared = ("num_generations", "learning_rate", "beta", "epsilon", "num_train_epochs", "temperature",
              "use_bias_correction_kl")
    assert {k: base.grpo[k] for k in shared} == {k: mrpo.grpo[k] for k in shared}
    assert base.batch == mrpo.batch and base.data["open_only"] and base.data["require_gold_reasoning"]
