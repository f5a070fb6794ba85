"""The report section "What MRPO changed": real rollouts of the run with every token shaded by
the advantage it got in the loss (GRPO and MRPO side by side on the same prompt), the advantage
by relative step position for wrong-answer rollouts, and the paired accuracy statistics of the
three models on the same test records."""

from __future__ import annotations

from medrl.commands.demo_pipeline.settings import LABELS, MODELS
from medrl.eval.report import Report, fmt

ALPHA = 0.05
PAIRS = (("warmup", "grpo"), ("warmup", "mrpo"), ("grpo", "mrpo"))


def what_mrpo_changed(rep: Report, ctx) -> None:
    """Add the section to ``rep`` (``ctx``: :class:`medrl.commands.demo_pipeline.report.ReportContext`)."""
    rep.heading("What MRPO changed")
    rep.paragraph(
        "GRPO and MRPO saw the same prompts in the same order with the same rewards; only the advantage differs. "
        "GRPO gives every token of a rollout its sequence advantage A_i. MRPO (Eq. 7) reshapes the step tokens of "
        "rollouts whose answer is wrong (R_ans <= 0.6): -e^(1-p_k)|A_i| on an invalid step k of K "
        "(p_k = (k-1)/(K-1)), so early invalid steps are pushed down hardest, and +|A_i| on valid steps.")
    credit_view(rep, ctx)
    paired_statistics(rep, ctx)


def credit_view(rep: Report, ctx) -> None:
    """Shaded rollouts (one prompt, GRPO and MRPO side by side) and the position plot, from the
    ``credit.jsonl`` the two RL stages wrote."""
    from medrl.eval.credit_report import add_credit_section, credit_path, load_credit

    runs = {}
    for name in ("grpo", "mrpo"):
        path = credit_path(ctx.out / name)
        if path.is_file():
            try:
                runs[LABELS[name]] = load_credit(path)
            except ValueError as exc:  # an empty or damaged log must not cost the whole report
                rep.paragraph(f"Credit log not shown: {exc}", note=True)
    if not runs:
        rep.paragraph("No credit.jsonl in grpo/ or mrpo/ (a run made before credit logging): the token-level view "
                      "is missing; `medrl analyze credit RUN` renders it for newer runs.", note=True)
        return
    rep.paragraph(
        "Rollouts logged during training (grpo/credit.jsonl, mrpo/credit.jsonl), each token shaded by the advantage "
        "the loss gave it (red pushed down, blue pushed up, one scale for both runs); numbered boxes start the "
        "reasoning steps with the judge's verdict. At the first step both runs start from the same warm-up model "
        "and seed, so they sample the same rollouts: what differs is only where the credit lands. All logged "
        "rollouts: `medrl analyze credit grpo mrpo`.")
    add_credit_section(rep, runs, ctx.fig_dir, max_prompts=1, max_rollouts=3)


def paired_statistics(rep: Report, ctx) -> None:
    """Paired accuracy differences on the same test records (McNemar exact test, paired bootstrap
    CI; :func:`medrl.eval.stats.paired_comparison`) and a plain sentence on significance."""
    from medrl.eval.stats import paired_comparison

    from medrl.eval.scoring import output_correct

    rows = {m: {r["key"]: r for r in ctx.evals[m][1]} for m in MODELS}
    table, results = [], {}
    for a, b in PAIRS:
        keys = [k for k in rows[a] if k in rows[b]]
        res = paired_comparison([output_correct(rows[a][k]) for k in keys], [output_correct(rows[b][k]) for k in keys],
                                alpha=ALPHA, seed=ctx.config.seed)
        results[(a, b)] = res
        table.append([f"{LABELS[a]} -> {LABELS[b]}", res["n"], fmt(res["a_acc"], pct=True), fmt(res["b_acc"], pct=True),
                      _diff_ci(res), fmt(res["mcnemar_p"]), res["a_only"], res["b_only"], res["dropped"]])
    rep.table(["Comparison (A -> B)", "Paired records", "Accuracy A (%)", "Accuracy B (%)",
               "B - A (points) [95% CI]", "McNemar p", "Only A right", "Only B right", "Unscored pairs"], table,
              "The same test records judged for both models. McNemar's exact test on the records only one model gets "
              "right; the interval is a paired percentile bootstrap of the accuracy difference.")
    rep.paragraph(significance_sentence(results[("grpo", "mrpo")], ctx.judge_name))


def significance_sentence(res: dict, judge: str) -> str:
    """GRPO -> MRPO in one plain sentence: the difference, its interval, and whether it is
    significant at the 5% level at this scale."""
    if not res.get("n"):
        return "No test record was scored for both GRPO and MRPO: no paired comparison is possible."
    d = 100 * res["diff"]
    sig = res["mcnemar_p"] is not None and res["mcnemar_p"] < ALPHA
    verdict = ("is statistically significant" if sig else "is NOT statistically significant")
    return (f"MRPO vs GRPO: {d:+.1f} accuracy points on {res['n']} paired test records "
            f"(95% CI {100 * res['ci_low']:+.1f} to {100 * res['ci_high']:+.1f}; McNemar exact p = "
            f"{res['mcnemar_p']:.3f}). At this scale the difference {verdict} at the 5% level"
            + ("." if sig else ": the run cannot tell the two methods apart by accuracy; the token-level view above "
                                "shows what the method changes.")
            + f" Accuracy as judged by {judge}.")


def _diff_ci(res: dict) -> str:
    if res.get("diff") is None:
        return "-"
    return f"{100 * res['diff']:+.1f} [{100 * res['ci_low']:+.1f}, {100 * res['ci_high']:+.1f}]"
