"""End to end on real VQA-RAD: tiny Qwen2.5-VL-architecture model + the reference judge through
the ``medrl eval`` CLI, interrupted and resumed, then ``medrl analyze`` on the outputs.

The default test uses the first 8 of the 200 open-ended test records to stay fast; the slow
test runs all 200 (the CLI default)."""

import json

import pytest

from medrl.cli import main


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from medrl.models import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "model", hidden_size=32, num_layers=1)


def _eval_args(model, data_dir, out, limit):
    args = ["eval", "--model", str(model), "--data", "vqa_rad:test", "--judge", "reference",
            "--data-dir", str(data_dir), "--out", str(out), "--max-new-tokens", "16", "--batch-size", "4",
            "--bootstrap", "200"]
    return args + (["--limit", str(limit)] if limit else [])


def test_open_test_split_has_200_records(data_dir):
    from medrl.data import load_records

    assert len(load_records("vqa_rad", split="test", data_dir=data_dir, open_only=True)) == 200


def test_eval_interrupt_resume_and_analyze(tiny_model, data_dir, tmp_path, monkeypatch):
    import medrl.eval.runner as runner

    real_build = runner.build_generate_fn
    calls: list[list[str]] = []

    def counting_build(*a, fail_after=None, **kw):
        gen = real_build(*a, **kw)

        def wrapped(records):
            if fail_after is not None and sum(map(len, calls)) >= fail_after:
                raise KeyboardInterrupt  # like Ctrl-C after the first batch
            calls.append([r.id for r in records])
            return gen(records)

        return wrapped

    out = tmp_path / "ev"
    monkeypatch.setattr(runner, "build_generate_fn", lambda *a, **kw: counting_build(*a, fail_after=4, **kw))
    assert main(_eval_args(tiny_model, data_dir, out, 8)) == 130  # interrupted
    assert len(calls) == 1 and len((out / "generations.jsonl").read_text().splitlines()) == 4
    first = set(calls[0])
    monkeypatch.setattr(runner, "build_generate_fn", lambda *a, **kw: counting_build(*a, **kw))
    assert main(_eval_args(tiny_model, data_dir, out, 8)) == 0
    regenerated = {i for batch in calls[1:] for i in batch}
    assert len(regenerated) == 4 and not (regenerated & first)  # finished records were not redone

    rows = [json.loads(l) for l in (out / "outputs.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["dataset"] == "vqa_rad:test" for r in rows)
    for r in rows:
        assert set(r["scores"]) >= {"judge_binary", "rouge1", "bleu1", "bertscore", "cosine", "hss"}
        assert r["output"] is not None and "steps" in r
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["datasets"]["vqa_rad:test"]["n"] == 8
    assert (out / "report.html").exists() and (out / "report.md").exists()

    assert main(["analyze", str(out)]) == 0
    an = out / "analysis"
    assert (an / "figures" / "fig1a_incorrect_rate.png").exists() and (an / "figures" / "fig4_far_bins.png").exists()
    tables = json.loads((an / "analysis.json").read_text())["tables"]["ev"]
    # FFP/FAR analyse open-ended questions only (MRPO Sec. 3): the closed ones are counted apart
    assert tables["n"] + tables["criterion"]["closed_left_out"] == 8 and tables["criterion"]["protocol"] == "mrpo"


@pytest.mark.slow
def test_eval_full_test_split(tiny_model, data_dir, tmp_path, capsys):
    """The default `standard` protocol scores all 451 VQA-RAD test records (closed and open
    reported apart); MRPO's protocol keeps its 200 open-ended ones."""
    out = tmp_path / "full"
    assert main(_eval_args(tiny_model, data_dir, out, None)) == 0
    assert len((out / "outputs.jsonl").read_text().splitlines()) == 451
    assert "n=451  closed=" in capsys.readouterr().out
    assert main(["analyze", str(out)]) == 0
    assert main(["eval", "--rescore", str(out), "--protocol", "mrpo", "--judge", "reference",
                 "--out", str(tmp_path / "mrpo"), "--bootstrap", "200"]) == 0
    ds = json.loads((tmp_path / "mrpo" / "metrics.json").read_text())["protocols"]["mrpo"]["datasets"]["vqa_rad:test"]
    assert ds["counted"] == 200 and ds["metrics"]["accuracy"]["n"] == 200


def template_generator(records):
    """Deterministic stand-in policy with real-looking reasoning (the tiny random model emits no
    <think> block): depending on the record id it states the right or a wrong modality/organ
    early or late, and gives the reference or a wrong answer."""
    outs = []
    for r in records:
        h = sum(map(ord, r.id))
        ev = r.evidence()
        modality = ev.get("modality") or "radiograph"
        organ = ev.get("organ") or "body"
        first = f"This is a {modality} image of the {organ}." if h % 3 else "This is an ultrasound image of the foot."
        middle = "Let me think about this carefully." if h % 2 else f"The {organ} region is shown clearly."
        last = f"The finding that answers the question is {r.answer}." if h % 5 else "Nothing else stands out."
        answer = r.answer if h % 4 else "no abnormality"
        outs.append(f"<think>{first} {middle} {last}</think><answer>{answer}</answer>")
    return outs


def test_analyze_and_compare_on_real_records(tiny_model, data_dir, tmp_path):
    """Reference judge + real VQA-RAD records: step verdicts give FFP/FAR tables, and a paired
    comparison against the tiny model's run (same inputs) gives Table 11-13 outputs."""
    from medrl.data import load_records
    from medrl.eval import workflows as W
    from medrl.eval.runner import EvalDataset, run_eval
    from medrl.judges import build_judge

    recs = load_records("vqa_rad", split="test", data_dir=data_dir, open_only=True)[:16]
    out = tmp_path / "template"
    run_eval([EvalDataset("vqa_rad:test", recs)], template_generator, build_judge("reference"), out,
             text_metrics=False, n_boot=100, progress=False, model="template")
    tables = W.analyze_runs([out], tmp_path / "an")["template"]
    assert tables["status"]["analysed"] == 16
    assert tables["stage_shares"]["n_failed"] + tables["stage_shares"]["no_ffp"] == 16
    assert tables["stage_shares"]["n_failed"] > 0
    res = W.compare_run_dirs(out, out, tmp_path / "cmp", names=["a", "b"])
    t = res["paired_table"]
    assert t["a_only"] == t["b_only"] == 0 and t["n"] == 16 - res["unscored_pairs"]
