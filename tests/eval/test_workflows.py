"""``medrl analyze`` on saved eval folders: FFP/FAR report, paired comparison, agreement,
training diagnostics; and the CLI entry points."""

import json

from medrl.cli import main
from medrl.eval import workflows as W
from medrl.eval.runner import EvalDataset, load_run, rescore_run, run_eval

from test_runner import FakeGenerator, FakeJudge, records


def _two_runs(tmp_path):
    ds = [EvalDataset("toy:test", records(10))]
    a, b = tmp_path / "grpo", tmp_path / "mrpo"
    run_eval(ds, FakeGenerator(), FakeJudge(), a, text_metrics=False, n_boot=50, progress=False)

    class Better(FakeGenerator):  # answers r1 right too, and its reasoning never fails
        def __call__(self, recs):
            return [o.replace("This step is wrong. ", "").replace("stomach", r.answer) if r.id == "r1" else o
                    for r, o in zip(recs, super().__call__(recs))]

    run_eval(ds, Better(), FakeJudge(), b, text_metrics=False, n_boot=50, progress=False)
    return a, b


def test_analyze_run_tables_and_figures(tmp_path):
    a, _ = _two_runs(tmp_path)
    tables = W.analyze_runs([a], tmp_path / "an")
    t = tables["grpo"]
    # ids with id % 3 != 0 have 3 steps, the 2nd invalid: FFP 2/3 (mid), FAR 0/1 = 0
    # ids r0, r3, r6, r9 have 2 valid steps: no FFP
    assert t["status"] == {"analysed": 10, "no_steps": 0, "unverified": 0}
    assert t["stage_shares"]["counts"] == {"early": 0, "mid": 6, "late": 0} and t["stage_shares"]["no_ffp"] == 4
    b6 = t["incorrect_rate_by_ffp_bin"][6]  # [0.6, 0.7): r1 r2 r4 r5 r7 r8; r2 unscored; wrong: r1 r5 r7
    assert (b6["n"], b6["incorrect"]) == (5, 3)
    far = t["far_by_ffp_bin"][3]  # [0.6, 0.8)
    assert far["n"] == 6 and far["far"] == 0.0
    for f in ("analysis.json", "report.md", "report.html", "per_output_grpo.jsonl", "figures/fig1a_incorrect_rate.png",
              "figures/fig3_stage_shares.png", "figures/fig4_far_bins.png", "figures/fig1b_far_grpo.png"):
        assert (tmp_path / "an" / f).exists(), f
    assert "data:image/png;base64," in (tmp_path / "an" / "report.html").read_text()


def test_compare_two_runs(tmp_path):
    a, b = _two_runs(tmp_path)
    res = W.compare_run_dirs(a, b, tmp_path / "cmp")
    # r2 unscored in both -> 9 pairs; only r1 changes: GRPO wrong (mid), MRPO right (no FFP)
    assert res["paired_table"] == {"both_correct": 4, "a_only": 0, "b_only": 1, "both_wrong": 4, "n": 9}
    m = res["transitions_b_only_correct"]
    assert m["n"] == 1 and m["counts"][2][0] == 1
    assert res["transitions_a_only_correct"]["n"] == 0
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "MRPO Table 11" in html and html.count("data:image/png;base64,") >= 4


def test_agreement_between_judges_and_with_human_labels(tmp_path):
    a, _ = _two_runs(tmp_path)
    rescore_run(a, FakeJudge(name="flipped", flip=True), tmp_path / "flip", text_metrics=False, n_boot=10,
                progress=False)
    res = W.agreement_report(a, tmp_path / "flip", tmp_path / "agr")
    # 9 scored outputs, A: 4 correct / 5 wrong. The 5 wrong answers contradict their reference, so
    # the graders' guard scores them 0 before any judge (medrl.answers.equivalence.grading_refusal); B flips
    # only the 4 judged labels -> B: 0 correct / 9 wrong. p_o = 5/9,
    # p_e = (4/9)(0/9) + (5/9)(9/9) = 5/9, kappa = (5/9 - 5/9) / (1 - 5/9) = 0
    assert res["total"]["n"] == 9 and abs(res["total"]["agreement"] - 5 / 9) < 1e-12
    assert abs(res["total"]["kappa"]) < 1e-12
    human = tmp_path / "human.jsonl"
    rows = load_run(a)
    human.write_text("".join(json.dumps({"id": r["key"], "label": int(r["scores"]["judge_binary"] or 0)}) + "\n"
                             for r in rows))
    res = W.agreement_report(a, human, tmp_path / "agr2")
    assert res["total"]["agreement"] == 1.0 and res["total"]["kappa"] == 1.0 and res["counts"]["only_b"] == 1
    res = W.agreement_report(a, a, tmp_path / "agr3", field="step_valid")
    assert res["total"]["n"] == 26  # 6 outputs x 3 steps + 4 x 2


def test_training_diagnostics_from_logs(tmp_path):
    log = tmp_path / "run"
    log.mkdir()
    hist = [{"step": s, "medrl/answer_reward": 0.1 * s, "medrl/process_reward": 0.5, "kl": 0.01 * s,
             "completions/mean_length": 100 + s, "loss": 1.0} for s in range(1, 6)]
    (log / "trainer_state.json").write_text(json.dumps({"log_history": hist}))
    samples = tmp_path / "rewards.jsonl"
    samples.write_text("".join(json.dumps({"step": s, "bertscore": [0.97, 0.98, 0.99, 0.96]}) + "\n" for s in range(4)))
    res = W.training_report([log], tmp_path / "diag", samples=samples)
    assert set(res["curves"]) == {"Answer reward", "Process reward", "KL divergence", "Completion length"}
    assert res["curves"]["KL divergence"]["run"][-1] == (5.0, 0.05)
    d = res["reward_distribution"]["bertscore"]
    assert d["raw"]["n"] == 16 and abs(d["raw"]["mean"] - 0.975) < 1e-9 and d["replayed"]
    # Adapt() spreads the collapsed raw scores: larger variance (ARMed Fig. 3)
    assert d["adaptive"]["var"] > d["raw"]["var"]
    assert (tmp_path / "diag" / "figures" / "training_curves.png").exists()


def test_tensorboard_logs(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    from medrl.eval.diagnostics import load_scalars, pick_curves

    w = SummaryWriter(str(tmp_path / "tb"))
    for s in range(3):
        w.add_scalar("train/kl", 0.1 * s, s)
        w.add_scalar("train/rewards/mrpo_answer/mean", 0.2 * s, s)
    w.close()
    curves = pick_curves(load_scalars(tmp_path / "tb"))
    assert [round(v, 6) for _, v in curves["KL divergence"]] == [0.0, 0.1, 0.2]
    assert "Answer reward" in curves


def test_cli_analyze_and_compare(tmp_path, capsys):
    a, b = _two_runs(tmp_path)
    assert main(["analyze", str(a)]) == 0
    assert (a / "analysis" / "report.html").exists()
    assert main(["analyze", "--compare", str(a), str(b), "--out", str(tmp_path / "c")]) == 0
    assert "B only 1" in capsys.readouterr().out
    assert main(["analyze", "agreement", "--a", str(a), "--b", str(b), "--out", str(tmp_path / "g")]) == 0
    assert main(["analyze", str(tmp_path / "missing")]) == 2
