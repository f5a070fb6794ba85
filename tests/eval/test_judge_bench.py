"""`medrl judge-bench`: metrics against hand-worked numbers, resume, label validation, the openai:
path end to end against a local `medrl serve-judge`, the shipped labelled set, known_agreement."""

from __future__ import annotations

import base64
import io
import json
import re

import pytest
from fake_openai import chat_completion
from fastapi import FastAPI, Request  # module level: FastAPI resolves the handler's annotations here
from PIL import Image

from medrl.cli import main
from medrl.eval import judge_bench as jb
from medrl.judges.base import JudgeStats
from medrl.common.jsonl import read_jsonl, write_jsonl
from medrl.types import StepVerdict, Verdict


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Recorded agreements go to a private cache folder, never the user's."""
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "medrl_cache"))


def _answer(i, ref, cand, label, kind="paraphrase", subkind="synonym"):
    return {"type": "answer", "id": f"a{i}", "question": "Q?", "reference": ref, "candidate": cand,
            "label": label, "kind": kind, "subkind": subkind}


def _trace(i, steps, labels, final="x", answer_label=True):
    return {"type": "trace", "id": f"t{i}", "question": "Where?", "reference": "Left kidney", "image": None,
            "gold_reasoning": "CT. Mass in the left kidney.", "steps": steps,
            "step_labels": [{"gold_alignment": g, "answer_contribution": c} for g, c in labels],
            "final_answer": final, "answer_label": answer_label}


# Human labels vs the scripted judge below (hand-worked):
# answers  label: T T F F F T   judge: T F F T F T
#   accuracy 4/6; TP=2 FP=1 FN=1 -> precision 2/3, recall 2/3
#   adversarial a4 (label F) accepted -> 1 of 1; paraphrase recall: a1 T, a2 F -> 1/2
# steps (valid = GA or AC)
#   t1 human (1,0)(1,1)(0,0)  judge (1,0)(0,1)(1,1)
#   t2 human (0,0)(1,1)       judge (0,0)(0,0)
#   GA    human 1 1 0 0 1  judge 1 0 1 0 0 -> agree 2/5; p_h=3/5 p_j=2/5; pe=.6*.4+.4*.6=.48;
#         kappa=(.4-.48)/(1-.48) = -0.153846...
#   AC    human 0 1 0 0 1  judge 0 1 1 0 0 -> agree 3/5; p_h=2/5 p_j=2/5; pe=.4*.4+.6*.6=.52;
#         kappa=(.6-.52)/.48 = 0.1666...
#   valid human 1 1 0 0 1  judge 1 1 1 0 0 -> agree 3/5; p_h=3/5 p_j=3/5; pe=.36+.16=.52; kappa=1/6
#   FFP   t1 human 3, judge None (differ); t2 human 1, judge 1 (same) -> 1/2
ANSWERS = [
    _answer(1, "Pneumothorax", "collapsed lung", True),
    _answer(2, "Myocardial infarction", "heart attack", True),
    _answer(3, "Left kidney", "right kidney", False, "near_miss", "side"),
    _answer(4, "Pneumonia", "pneumonia, edema, mass", False, "adversarial", "list"),
    _answer(5, "C5", "C6", False, "near_miss", "level"),
    _answer(6, "Liver", "the liver", True, "exact", "article"),
]
TRACES = [
    _trace(1, ["This is a CT.", "A mass is in the left kidney.", "I will think."], [(1, 0), (1, 1), (0, 0)],
           final="left kidney", answer_label=True),
    _trace(2, ["Let me look.", "The left kidney has a mass."], [(0, 0), (1, 1)], final="right kidney",
           answer_label=False),
]
SCRIPT_ANSWERS = {"collapsed lung": True, "heart attack": False, "right kidney": False,
                  "pneumonia, edema, mass": True, "C6": False, "the liver": True, "left kidney": True}
SCRIPT_STEPS = {"t1": [(1, 0), (0, 1), (1, 1)], "t2": [(0, 0), (0, 0)]}


class ScriptedJudge:
    """A judge whose verdicts are fixed in advance (counts its calls like a real one)."""

    name = "scripted"
    images = False

    def __init__(self, unscored=()):
        self.stats = JudgeStats()
        self.unscored = set(unscored)

    async def answer_correct(self, question, reference, prediction, *, image=None):
        self.stats.calls += 1
        if prediction in self.unscored:
            return Verdict.unscored("scripted outage")
        return Verdict.ok(SCRIPT_ANSWERS[prediction])

    async def verify_steps(self, question, reference, steps, *, gold_reasoning=None, evidence=None, image=None):
        self.stats.calls += 1
        key = "t1" if steps[0] == "This is a CT." else "t2"
        return Verdict.ok([StepVerdict(g, c) for g, c in SCRIPT_STEPS[key]])


@pytest.fixture
def labels(tmp_path):
    p = tmp_path / "labels.jsonl"
    write_jsonl(p, [{"type": "meta", "name": "tiny"}] + ANSWERS + TRACES)
    return p


def test_metrics_match_hand_worked_numbers(labels, tmp_path):
    m = jb.run_bench([ScriptedJudge()], tmp_path / "out", labels=labels, progress=False, record=False)
    j = m["judges"]["scripted"]
    a, s = j["answers"], j["steps"]
    assert a["accuracy"] == pytest.approx(4 / 6)
    assert a["precision"] == pytest.approx(2 / 3) and a["recall"] == pytest.approx(2 / 3)
    assert a["adversarial_accepted"] == 1 and a["adversarial_accepted_ids"] == ["a4"]
    assert a["paraphrase_accepted"] == pytest.approx(0.5) and a["near_miss_rejected"] == 1.0
    assert a["by_kind"]["near_miss"]["accuracy"] == 1.0 and a["by_subkind"]["list"]["accepted"] == 1
    assert s["steps"] == 5
    assert s["gold_alignment"]["agreement"] == pytest.approx(0.4)
    assert s["gold_alignment"]["kappa"] == pytest.approx((0.4 - 0.48) / 0.52)
    assert s["answer_contribution"]["kappa"] == pytest.approx(0.08 / 0.48)
    assert s["valid"]["agreement"] == pytest.approx(0.6) and s["valid"]["kappa"] == pytest.approx(1 / 6)
    assert s["ffp_agreement"] == pytest.approx(0.5)
    assert s["final_answer_accuracy"] == 1.0  # "left kidney" judged True (label True), "right kidney" False (False)
    assert j["summary"]["step_validity_kappa"] == pytest.approx(1 / 6)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "Judges side by side" in md and "1 of 1" in md and (tmp_path / "out" / "report.html").exists()
    saved = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert saved["n_answers"] == 6 and saved["n_traces"] == 2


def test_kappa_undefined_is_none_not_nan():
    assert jb.kappa([1, 1, 1], [1, 1, 1]) is None and jb.kappa([], []) is None
    assert jb.kappa([1, 0], [1, 0]) == pytest.approx(1.0)


def test_unscored_items_are_counted_not_scored_and_retried(labels, tmp_path):
    m = jb.run_bench([ScriptedJudge(unscored={"heart attack"})], tmp_path / "o", labels=labels,
                     progress=False, record=False)
    a = m["judges"]["scripted"]["answers"]
    assert a["unscored"] == 1 and a["scored"] == 5
    assert a["accuracy"] == pytest.approx(4 / 5)  # the outage is neither right nor wrong
    healthy = ScriptedJudge()
    m = jb.run_bench([healthy], tmp_path / "o", labels=labels, progress=False, record=False)
    assert healthy.stats.calls == 1 and m["judges"]["scripted"]["answers"]["unscored"] == 0


def test_resume_skips_done_items_and_rejudges_edited_ones(labels, tmp_path):
    out = tmp_path / "out"
    first = ScriptedJudge()
    jb.run_bench([first], out, labels=labels, progress=False, record=False)
    assert first.stats.calls == 6 + 2 + 2  # answers, step verifications, trace final answers
    again = ScriptedJudge()
    m = jb.run_bench([again], out, labels=labels, progress=False, record=False)
    assert again.stats.calls == 0
    assert m["judges"]["scripted"]["judge_stats"]["calls"] == 10  # summed over both runs
    rows = read_jsonl(labels)
    rows[3]["candidate"] = "C6"  # a3 now asks something else: judged again; a relabel alone is not
    rows[1]["label"] = False
    write_jsonl(labels, rows)
    third = ScriptedJudge()
    m = jb.run_bench([third], out, labels=labels, progress=False, record=False)
    assert third.stats.calls == 1
    # a1 relabelled False while the saved verdict is True: one more disagreement, 3 of 6 right
    assert m["judges"]["scripted"]["answers"]["accuracy"] == pytest.approx(3 / 6)


@pytest.mark.parametrize("bad, message", [
    ({"type": "answer", "id": "x", "question": "q", "reference": "r", "candidate": "c", "kind": "paraphrase"},
     "missing field 'label'"),
    ({"type": "answer", "id": "x", "question": "q", "reference": "r", "candidate": "c", "label": "yes",
      "kind": "paraphrase"}, "field 'label' must be bool"),
    ({"type": "answer", "id": "x", "question": "q", "reference": "r", "candidate": "c", "label": True,
      "kind": "close"}, "field 'kind' must be one of"),
    ({"type": "trace", "id": "x", "question": "q", "reference": "r", "steps": ["a", "b"],
      "step_labels": [{"gold_alignment": 1, "answer_contribution": 0}]}, "2 steps but 1 step_labels"),
    ({"type": "trace", "id": "x", "question": "q", "reference": "r", "steps": ["a"],
      "step_labels": [{"gold_alignment": 2, "answer_contribution": 0}]}, "step_labels[0].gold_alignment"),
    ({"type": "thing", "id": "x", "question": "q", "reference": "r"}, "field 'type' must be"),
])
def test_bad_labels_name_file_line_and_field(tmp_path, bad, message):
    p = tmp_path / "bad.jsonl"
    write_jsonl(p, [ANSWERS[0], bad])
    with pytest.raises(jb.LabelError) as e:
        jb.load_labels(p)
    assert message in str(e.value) and f"{p}:2" in str(e.value)


def test_duplicate_ids_rejected(tmp_path):
    p = tmp_path / "dup.jsonl"
    write_jsonl(p, [ANSWERS[0], ANSWERS[0]])
    with pytest.raises(jb.LabelError, match="duplicate id"):
        jb.load_labels(p)


def test_shipped_set_is_valid_and_from_training_splits():
    answers, traces = jb.load_labels(jb.default_labels())
    assert len(answers) >= 150 and len(traces) >= 30
    for it in answers + traces:
        src = it["source"]
        assert src["split"] == "train" and src["dataset"] in ("vqa_rad", "slake") and src["image"]
    kinds = {a["kind"] for a in answers}
    assert kinds == set(jb.ANSWER_KINDS)
    subs = {a["subkind"] for a in answers}
    assert {"abbreviation", "synonym", "spelling", "lay_term", "side", "sub_location", "level", "grade",
            "negation", "organ", "modality", "list", "hedge", "padding", "placeholder", "injection"} <= subs
    assert all(a["label"] is False for a in answers if a["kind"] in ("adversarial", "near_miss", "wrong"))


def test_shipped_items_come_from_real_training_records(data_dir):
    """Every item names a real training-split record (question and reference as the dataset has
    them) and its image; no test or validation record is used."""
    from medrl.data import load_records

    answers, traces = jb.load_labels(jb.default_labels())
    train = {r.id: r for ds in ("vqa_rad", "slake") for r in load_records(ds, split="train", data_dir=data_dir)}
    for it in answers + traces:
        rec = train.get(it["source"]["record_id"])
        assert rec is not None, f"{it['id']}: {it['source']['record_id']} is not a training record"
        assert rec.question == it["question"] and rec.answer == it["reference"], it["id"]
        assert (data_dir / it["source"]["image"]).is_file(), it["source"]["image"]


def test_reference_on_shipped_set_via_cli(tmp_path, capsys):
    rc = main(["judge-bench", "--judge", "reference", "--no-embeddings", "--out", str(tmp_path / "ref"), "--quiet"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0 and "answer accuracy" in out and "step validity kappa" in out
    m = json.loads((tmp_path / "ref" / "metrics.json").read_text())
    s = m["judges"]["reference"]["summary"]  # the frozen split (the headline)
    assert s["split"] == "frozen" and s["n_answers"] >= 100 and s["n_steps"] > 50 and s["answer_accuracy"] is not None
    assert m["judges"]["reference"]["summary_all"]["n_answers"] >= 150
    assert "FROZEN split" in out and "upper bound" in out
    info = jb.known_agreement("reference")  # recorded in the (private) cache folder
    assert info["source"] == "user" and info["answer_accuracy"] == s["answer_accuracy"]


def test_openai_path_end_to_end_against_serve_judge(labels, tmp_path, capsys):
    from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread

    with serve_in_thread(create_app(ReferenceBackend(use_embeddings=False))) as url:
        args = ["judge-bench", "--judge", "openai:medrl-reference", "--judge-base-url", url, "--labels", str(labels),
                "--out", str(tmp_path / "served"), "--quiet", "--no-record"]
        assert main(args) == 0
        served = json.loads((tmp_path / "served" / "metrics.json").read_text())["judges"]["openai:medrl-reference"]
        n_calls = served["judge_stats"]["calls"]  # the client's answer guard may settle a list without a call
        # the client's shared refusal and identity checks settle some items without a call
        assert 1 <= n_calls <= 10 and served["judge_stats"]["input_tokens"] > 0
        assert served["answers"]["unscored"] == 0 and served["steps"]["unscored_traces"] == 0
        assert main(args) == 0  # rerun: every verdict is already saved, nothing is asked again
        again = json.loads((tmp_path / "served" / "metrics.json").read_text())["judges"]["openai:medrl-reference"]
        assert again["judge_stats"]["calls"] == n_calls
        # a fresh folder sharing the judge cache file: verdicts come from the cache
        cache = tmp_path / "served" / "cache" / "openai_medrl-reference.sqlite"
        assert main(args[:-4] + ["--out", str(tmp_path / "fresh"), "--judge-cache", str(cache), "--quiet",
                                 "--no-record"]) == 0
        fresh = json.loads((tmp_path / "fresh" / "metrics.json").read_text())["judges"]["openai:medrl-reference"]
        assert fresh["judge_stats"]["calls"] == 0 and fresh["judge_stats"]["cache_hits"] == n_calls
    direct = jb.run_bench(["reference"], tmp_path / "direct", labels=labels, progress=False, record=False,
                          judge_options={"use_embeddings": False})["judges"]["reference"]
    # the served reference judge and the in-process one give the same verdicts
    assert served["summary"]["answer_accuracy"] == direct["summary"]["answer_accuracy"]
    assert served["steps"]["per_trace"] == direct["steps"]["per_trace"]


def test_known_agreement_and_report_sentence(labels, tmp_path):
    assert jb.known_agreement("openai:never-measured") is None
    assert "has not been measured" in jb.describe_agreement("openai:never-measured")
    jb.run_bench([ScriptedJudge()], tmp_path / "o", labels=labels, progress=False, record=True)
    info = jb.known_agreement("scripted")
    assert info["source"] == "user" and info["answer_accuracy"] == pytest.approx(4 / 6)
    assert info["labels"] == "labels.jsonl" and info["measured"]
    text = jb.describe_agreement("scripted")
    assert "Judge: scripted" in text and "answer accuracy 67%" in text and "adversarial answers accepted 1 of 1" in text


def test_shipped_agreement_file_names_the_reference_judge(monkeypatch, tmp_path):
    from medrl.judges.labels import JUDGE_AGREEMENT

    if not JUDGE_AGREEMENT.exists():
        pytest.skip("judge_agreement.json not written yet")
    info = jb.known_agreement("reference")
    assert info is not None and info["source"] == "shipped" and info["labels"] == "judge_dev.jsonl"
    assert 0 <= info["answer_accuracy"] <= 1


def test_eval_report_states_judge_agreement(tmp_path, labels):
    from medrl.eval.workflows import eval_report

    jb.run_bench([ScriptedJudge()], tmp_path / "o", labels=labels, progress=False, record=True)
    metrics = {"config": {"model": "m", "judge": "scripted", "rubrics": ["binary"]}, "datasets": {}, "macro": {}}
    try:
        md, _ = eval_report(tmp_path / "ev", [], metrics)
    except (KeyError, ValueError, TypeError) as exc:  # the report needs more than this minimal metrics dict
        pytest.skip(f"eval_report needs a fuller metrics dict: {exc}")
    assert "Measured against human labels" in md.read_text()


def test_images_resolved_against_data_root_and_missing_ones_named(tmp_path):
    class ImageJudge(ScriptedJudge):
        images = supports_images = True

        def __init__(self):
            super().__init__()
            self.seen = []

        async def verify_steps(self, question, reference, steps, **kw):
            self.seen.append(kw.get("image"))
            return await super().verify_steps(question, reference, steps)

    root = tmp_path / "data"
    (root / "imgs").mkdir(parents=True)
    (root / "imgs" / "a.jpg").write_bytes(b"jpg")
    t = dict(TRACES[0], image="imgs/a.jpg")
    p = tmp_path / "l.jsonl"
    write_jsonl(p, [t])
    j = ImageJudge()
    jb.run_bench([j], tmp_path / "o", labels=p, data_root=root, progress=False, record=False)
    assert j.seen == [[str(root / "imgs" / "a.jpg")]]
    write_jsonl(p, [dict(t, image="imgs/missing.jpg")])
    with pytest.raises(FileNotFoundError, match="missing.jpg"):
        jb.run_bench([ImageJudge()], tmp_path / "o2", labels=p, data_root=root, progress=False, record=False)


@pytest.mark.slow
def test_reference_default_options_on_shipped_set(tmp_path, capsys):
    """`medrl judge-bench --judge reference` exactly as a user runs it (MiniLM embeddings on)."""
    assert main(["judge-bench", "--judge", "reference", "--out", str(tmp_path / "ref"), "--quiet", "--no-record"]) == 0
    out = capsys.readouterr().out
    print(out)
    assert "answer accuracy" in out and "adversarial accepted" in out


def test_openai_judge_images_arrive_with_every_request(tmp_path):
    """--judge-images: each item's image (resolved under --data-root) goes with the request,
    downscaled to --judge-image-size, as a base64 JPEG image_url part."""
    from medrl.judges.server import serve_in_thread

    app = FastAPI()
    bodies = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        bodies.append(body)
        content = body["messages"][-1]["content"]
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        n = len(re.findall(r"^\[\d+\]", text, re.MULTILINE))
        reply = ('{"steps": [' + ",".join(f'{{"step": {k}, "gold_alignment": 1, "answer_contribution": 0}}'
                                          for k in range(1, n + 1)) + "]}") if "TASK: verify_steps" in text else "YES"
        return chat_completion(reply, body["model"])

    root = tmp_path / "data"
    (root / "imgs").mkdir(parents=True)
    Image.new("RGB", (1000, 600), (90, 90, 90)).save(root / "imgs" / "scan.jpg")
    answer = dict(ANSWERS[0], source={"dataset": "vqa_rad", "split": "train", "image": "imgs/scan.jpg"})
    p = tmp_path / "l.jsonl"
    write_jsonl(p, [answer, dict(TRACES[0], image="imgs/scan.jpg")])
    with serve_in_thread(app) as url:
        rc = main(["judge-bench", "--judge", "openai:vlm", "--judge-base-url", url, "--judge-images",
                   "--judge-image-size", "256", "--data-root", str(root), "--labels", str(p),
                   "--out", str(tmp_path / "o"), "--quiet", "--no-record"])
    assert rc == 0
    sizes = []
    for b in bodies:
        content = b["messages"][-1]["content"]
        parts = [x for x in content if isinstance(content, list) and x.get("type") == "image_url"]
        for part in parts:
            url_ = part["image_url"]["url"]
            assert url_.startswith("data:image/jpeg;base64,")
            sizes.append(Image.open(io.BytesIO(base64.b64decode(url_.split(",", 1)[1]))).size)
    # every request carried the image (the trace's steps and final answer; the answer item "collapsed
    # lung" for "Pneumothorax" is the lexicon's identity, settled by the client without a request)
    assert len(sizes) >= 2 and len(sizes) == len(bodies) and all(max(s) <= 256 for s in sizes)
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())["judges"]["openai:vlm"]
    assert m["answers"]["scored"] == 1 and m["steps"]["scored_traces"] == 1


# ------------------------------------------------------------------ dev / frozen split


def test_shipped_set_is_split_by_source_record():
    """Every shipped item carries its split; the split is split_for(its source record), so all
    items of one record share it, and both splits hold answers and traces."""
    from medrl.judges.labels import JUDGE_DEV

    answers, traces = jb.load_labels(JUDGE_DEV)
    by_record: dict[str, set] = {}
    for it in answers + traces:
        assert it["split"] in jb.SPLITS, it["id"]
        rid = it["source"]["record_id"]
        assert it["split"] == jb.split_for(rid), it["id"]
        by_record.setdefault(rid, set()).add(it["split"])
    assert all(len(s) == 1 for s in by_record.values())
    for items in (answers, traces):
        counts = {s: sum(it["split"] == s for it in items) for s in jb.SPLITS}
        assert min(counts.values()) >= len(items) // 4, counts


def test_bad_split_value_is_named(tmp_path):
    p = tmp_path / "l.jsonl"
    write_jsonl(p, [dict(ANSWERS[0], split="test")])
    with pytest.raises(jb.LabelError, match="split"):
        jb.load_labels(p)


def test_frozen_split_is_the_headline(tmp_path):
    """With split labels, `summary` is the frozen split's (hand-worked: a1, a2 frozen -> 1 right of
    2), the dev split and all items are reported beside it, and the recorded agreement and the
    report sentence quote the frozen split and call the dev figure an upper bound."""
    split = {"a1": "frozen", "a2": "frozen", "t1": "frozen"}
    items = [dict(x, split=split.get(x["id"], "dev")) for x in ANSWERS + TRACES]
    p = tmp_path / "split.jsonl"
    write_jsonl(p, items)
    m = jb.run_bench([ScriptedJudge()], tmp_path / "o", labels=p, progress=False, record=True)
    j = m["judges"]["scripted"]
    assert j["summary"]["split"] == "frozen" and j["summary"]["n_answers"] == 2
    assert j["summary"]["answer_accuracy"] == pytest.approx(
        sum(SCRIPT_ANSWERS[a["candidate"]] == a["label"] for a in ANSWERS if a["id"] in split) / 2)
    assert j["splits"]["dev"]["summary"]["n_answers"] == len(ANSWERS) - 2
    assert j["summary_all"]["answer_accuracy"] == pytest.approx(4 / 6)
    info = jb.known_agreement("scripted")
    assert info["split"] == "frozen" and info["dev"]["n_answers"] == len(ANSWERS) - 2
    text = jb.describe_agreement("scripted")
    assert "frozen split" in text and "upper bound" in text and "dev split" in text
    help_text = jb.agreement_help("scripted")
    assert "frozen split" in help_text and "upper bound" in help_text and "%%" in help_text
    md = (tmp_path / "o" / "report.md").read_text()
    assert "frozen split (headline)" in md and "Dev split" in md


def test_eval_help_quotes_the_frozen_split(capsys):
    """`medrl eval --help` quotes the reference judge's frozen-split figures (shipped file) and
    names the dev-split figure an upper bound."""
    info = jb.known_agreement("reference")
    if info is None or info.get("split") != "frozen":
        pytest.skip("no frozen-split agreement recorded for the reference judge")
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "frozen split" in out and "upper bound" in out


def test_answer_checks_side_by_side(tmp_path):
    """--answer-check strict medix: each judge under both answer prompts. MediX-R1's prompt shows
    no question, so the reference judge decides without it: "fourth and fifth ribs" for "4th and
    5th" (the question asks which ribs) is accepted under the strict prompt only (shipped item a026)."""
    item = {"type": "answer", "id": "a026", "split": "frozen", "question": "Which ribs are located near the "
            "abnormality seen in this image?", "reference": "4th and 5th", "candidate": "fourth and fifth ribs",
            "label": True, "kind": "paraphrase"}
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps(item) + "\n")
    out = tmp_path / "out"
    assert main(["judge-bench", "--judge", "reference", "--no-embeddings", "--labels", str(labels),
                 "--answer-check", "strict", "medix", "--out", str(out), "--quiet", "--no-record"]) == 0
    m = json.loads((out / "metrics.json").read_text())["judges"]
    assert m["reference"]["answers"]["accuracy"] == 1.0
    assert m["reference [answer_check=medix]"]["answers"]["accuracy"] == 0.0
    with pytest.raises(ValueError, match="answer check"):
        jb.run_bench(["reference"], tmp_path / "bad", labels=labels, progress=False, record=False,
                     answer_checks=("lenient",))
