"""``medrl analyze``: reasoning-failure analysis (FFP/FAR), paired run comparison, rater
agreement and training diagnostics, each written as tables, PNG figures and a report."""

from __future__ import annotations

HELP = "analyze eval outputs (FFP/FAR), compare two runs, rater agreement (kappa), training logs, token credit"

DESCRIPTION = """\
Five analyses, each writing JSON tables, PNG figures and OUT/report.md + OUT/report.html:

  medrl analyze EVAL_DIR [EVAL_DIR ...] [--out OUT] [--judge SPEC]
      First Failure Point / Failure Accumulation Rate of the saved outputs (MRPO Sec. 3, 5.3):
      incorrect rate per FFP bin (Fig. 1A), FAR per bin for correct/incorrect (Fig. 1B, 4),
      early/mid/late stage shares (Fig. 3). Several folders = several runs side by side.
      Open-ended questions only (yes/no and multiple choice left out; --include-closed keeps
      them); correctness with MRPO's answer criterion (App. H.1, the `mrpo` protocol) unless
      --protocol names another; the report says under which protocols the eval was scored
      (stored in its config.json). --judge verifies the steps (and, under mrpo, the answers)
      of outputs the eval did not score.

  medrl analyze --compare RUN_A RUN_B [--out OUT]
      Paired comparison on the same inputs (MRPO App. E.2): correct/wrong table (Table 11) and
      FFP stage transition matrices for the inputs only one run gets right (Tables 12-13),
      with McNemar's exact p-value and the paired bootstrap 95% interval of the accuracy
      difference B - A (and of the HSS difference, with a Wilcoxon p-value), overall and per
      dataset. RUN_A gives the rows (the paper's GRPO), RUN_B the columns (MRPO).

  medrl analyze agreement --a X --b Y [--field correct|step_valid|gold_alignment|answer_contribution]
      Agreement rate and Cohen's kappa between two raters (MRPO App. B.1). X, Y: eval folders
      (two judges: e.g. an eval and its `medrl eval --rescore`) or a file of human labels
      (JSONL/CSV with id = output key such as vqa_rad:test:123, label, optional step).

  medrl analyze training LOGDIR [LOGDIR ...] [--samples FILE_OR_EVAL_DIR]
      Training dynamics (MRPO App. G: answer reward, process reward, KL, completion length)
      from trainer_state.json, JSONL logs or TensorBoard events; with --samples, raw vs
      adaptive semantic reward mean/variance/histogram (ARMed Fig. 3).

  medrl analyze credit RUN [RUN ...] [--names GRPO MRPO] [--max-prompts N]
      Token-level credit from training runs' credit.jsonl (algorithm.log_credit_every): each
      logged rollout's text with every token shaded by the advantage the loss gave it (one
      colour scale for all runs), steps and verdicts marked, answer and reference beside it;
      the same prompt in two runs side by side; mean token advantage by relative step position
      p_k for wrong-answer rollouts (MRPO Eq. 7: invalid steps at -e^(1-p)|A_i|).

  medrl analyze hacking RUN [--out OUT]
      Reward-hacking monitor of a training run (monitor_summary.json, hacking.jsonl): plots of
      the signals (answer-guard refusals by reason, reward vs correctness, lengths, repeats,
      restating steps, format, zero-variance groups) with the alerts marked, each alert's
      example rollouts as text, and the judge's cost (judge_cost.json) when present.

Default OUT: EVAL_DIR/analysis, or analysis_compare / analysis_agreement / LOGDIR/diagnostics / RUN/credit / RUN/hacking.
"""


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="*", help="EVAL_DIR..., or 'agreement', 'training LOGDIR...', 'credit RUN...', 'hacking RUN'")
    p.add_argument("--out", default=None, help="output folder")
    p.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"), help="paired comparison of two eval folders")
    p.add_argument("--names", nargs="+", default=None, help="display names of the runs, in order")
    p.add_argument("--protocol", default=None,
                   help="correct/wrong from this eval protocol's accuracy (standard, mrpo, medix, armed). FFP/FAR "
                        "default: mrpo (MRPO App. H.1). --compare default: the judge's binary grade, else the judged "
                        "decision, else standard")
    p.add_argument("--include-closed", action="store_true",
                   help="FFP/FAR: keep yes/no and multiple-choice rows (left out by default, as in MRPO Sec. 3)")
    p.add_argument("--bootstrap", type=int, default=2000, help="compare: bootstrap resamples (paired CI)")
    p.add_argument("--seed", type=int, default=0, help="compare: bootstrap seed")
    p.add_argument("--judge", default=None, help="verify unverified steps with this judge (reference | openai:<model>)")
    p.add_argument("--judge-base-url", default=None)
    p.add_argument("--a", dest="rater_a", default=None, help="agreement: first rater (eval folder or label file)")
    p.add_argument("--b", dest="rater_b", default=None, help="agreement: second rater")
    p.add_argument("--field", default="correct",
                   choices=["correct", "step_valid", "gold_alignment", "answer_contribution"],
                   help="agreement: which label to compare")
    p.add_argument("--samples", default=None,
                   help="training: per-sample reward JSONL (or an eval folder) for ARMed Fig. 3")
    p.add_argument("--group-size", type=int, default=8, help="training: batch size when --samples is an eval folder")
    p.add_argument("--max-prompts", type=int, default=6, help="credit: prompts shown with shaded rollouts")
    p.add_argument("--metric", action="append", default=[], metavar="PANEL=KEY",
                   help="training: use log KEY for PANEL, e.g. 'KL divergence=train/kl'")


def run(args) -> int:
    import sys
    from pathlib import Path

    from medrl.eval import workflows as W

    judge = None
    if args.judge:
        from medrl.judges import build_judge

        # FFP correctness defaults to MRPO's criterion: the judge answers with App. H.1's O/X format
        fmt = {"answer_format": "o_x"} if (args.protocol or "mrpo") == "mrpo" else {}
        judge = build_judge(args.judge, base_url=args.judge_base_url, **fmt)
    mode = args.paths[0] if args.paths else None
    try:
        if args.compare:
            out = Path(args.out or "analysis_compare")
            res = W.compare_run_dirs(args.compare[0], args.compare[1], out, names=args.names, judge=judge,
                                     protocol=args.protocol, n_boot=args.bootstrap, seed=args.seed)
            t = res["paired_table"]
            print(f"paired inputs: {t['n']}  both correct {t['both_correct']}  A only {t['a_only']}  "
                  f"B only {t['b_only']}  both wrong {t['both_wrong']}")
            for metric, groups in (("accuracy", res["paired_stats"]["accuracy"]),
                                   ("HSS", res["paired_stats"].get("hss", {}))):
                for g, r in groups.items():
                    if r["diff"] is None:
                        continue
                    scale, unit = (100, " pp") if metric == "accuracy" else (1, "")
                    p = r.get("mcnemar_p") if metric == "accuracy" else r.get("wilcoxon_p")
                    test = "McNemar exact p" if metric == "accuracy" else "Wilcoxon p"
                    print(f"{metric} [{g}] n={r['n']}: B - A = {scale * r['diff']:+.2f}{unit} "
                          f"(95% paired bootstrap CI [{scale * r['ci_low']:+.2f}, {scale * r['ci_high']:+.2f}]), "
                          f"{test} = {'-' if p is None else f'{p:.4g}'}")
        elif mode == "agreement":
            if not (args.rater_a and args.rater_b):
                print("medrl analyze agreement: --a and --b are required", file=sys.stderr)
                return 2
            out = Path(args.out or "analysis_agreement")
            res = W.agreement_report(args.rater_a, args.rater_b, out, field=args.field, names=args.names)
            tot = res["total"]
            kappa = "undefined" if tot["kappa"] is None else f"{tot['kappa']:.3f}"
            print(f"n={tot['n']}  agreement={100 * tot['agreement']:.1f}%  Cohen's kappa={kappa}")
        elif mode == "training":
            logdirs = args.paths[1:]
            if not logdirs and not args.samples:
                print("medrl analyze training: give LOGDIR(s) and/or --samples", file=sys.stderr)
                return 2
            overrides = {}
            for m in args.metric:
                panel, _, key = m.partition("=")
                if not key:
                    print(f"medrl analyze training: --metric needs PANEL=KEY, got {m!r}", file=sys.stderr)
                    return 2
                overrides[panel] = key
            out = Path(args.out or (Path(logdirs[0]) / "diagnostics" if logdirs else "analysis_training"))
            res = W.training_report(logdirs, out, samples=args.samples, group_size=args.group_size,
                                    names=args.names, overrides=overrides or None)
            print(f"panels: {', '.join(res['curves']) or '-'}")
            for k, v in res.get("reward_distribution", {}).items():
                print(f"{k}: raw mean {v['raw']['mean']:.3f} var {v['raw']['var']:.3f} | "
                      f"adaptive mean {v['adaptive']['mean']:.3f} var {v['adaptive']['var']:.3f}")
        elif mode == "hacking":  # reward-hacking monitor report (medrl.eval.hacking_report)
            from medrl.eval.hacking_report import hacking_report

            if len(args.paths) != 2:
                print("medrl analyze hacking: give one RUN folder", file=sys.stderr)
                return 2
            out = Path(args.out or (Path(args.paths[1]) / "hacking"))
            res = hacking_report(args.paths[1], out)
            alerts = [f"{a['signal']} (step {a['step']})" for a in res["alerts"]]
            print(f"alerts: {', '.join(alerts) or 'none'}")
        elif mode == "credit":
            from medrl.eval.credit_report import credit_report

            runs = args.paths[1:]
            if not runs:
                print("medrl analyze credit: give RUN folder(s) holding credit.jsonl", file=sys.stderr)
                return 2
            out = Path(args.out or (Path(runs[0]) / "credit"))
            res = credit_report(runs, out, names=args.names, max_prompts=args.max_prompts)
            for name, r in res["runs"].items():
                print(f"{name}: {r['rows']} rollouts logged at steps {r['steps_logged']}, {r['wrong_rows']} wrong answers")
        elif args.paths:
            out = Path(args.out or (Path(args.paths[0]) / "analysis"))
            tables = W.analyze_runs(args.paths, out, judge=judge, names=args.names, protocol=args.protocol,
                                    include_closed=bool(getattr(args, "include_closed", False)))
            for name, t in tables.items():
                s = t["stage_shares"]
                shares = "  ".join(f"{k} {'-' if v is None else f'{100 * v:.1f}%'}" for k, v in s["shares"].items())
                print(f"{name}: {t['status']['analysed']} analysed, {s['n_failed']} with a failure: {shares}")
        else:
            print("medrl analyze: give EVAL_DIR(s), --compare RUN_A RUN_B, 'agreement' or 'training' "
                  "(see medrl analyze --help)", file=sys.stderr)
            return 2
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"medrl analyze: {exc}", file=sys.stderr)
        return 2
    print(f"report: {out}/report.html")
    return 0
