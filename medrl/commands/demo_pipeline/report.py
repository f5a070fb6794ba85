"""The demo's report (``report.md`` + self-contained ``report.html``), one function per section,
from the stage outputs in the demo folder: measured numbers only."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from medrl.commands.demo_pipeline.settings import EVAL_DATASET, LABELS, MODELS, STATE_FILE, DemoConfig
from medrl.commands.demo_pipeline.stages import StageRunner, fmt_secs
from medrl.eval.report import Report, ci_cell, fmt
from medrl.eval.scoring import output_correct

log = logging.getLogger(__name__)

TITLE = "medrl demo: what step-aware RL (MRPO) changes over GRPO - a small-scale demonstration"

#: Training-curve panels: (panel title, log keys tried in order).
TRAIN_PANELS = (
    ("Total reward", ("reward",)),
    ("Answer reward (R_ans)", ("answer_reward", "rewards/mrpo_answer/mean")),
    ("Process reward (mean step validity)", ("process_reward", "rewards/mrpo_process/mean")),
    ("Length reward (R_len)", ("rewards/mrpo_length/mean",)),
    ("KL to the warm-up model", ("kl",)),
    ("Completion length (tokens)", ("completions/mean_length",)),
    ("Early-FFP share of rollouts", ("ffp/early",)),
)


@dataclass
class ReportContext:
    """What every section reads: the folder, the settings, the stage state and the three evals
    (``evals[model] = (metrics, rows)``)."""

    out: Path
    config: DemoConfig
    stages: dict
    evals: dict
    secs: dict
    cpus: dict

    @property
    def fig_dir(self) -> Path:
        return self.out / "figures"

    @property
    def n_test(self) -> int:
        return self.evals["mrpo"][0]["datasets"][EVAL_DATASET]["n"]

    @property
    def judge_name(self) -> str:
        """The judge spec the evaluation recorded (a string, or ``judge_identity``'s dict)."""
        j = self.evals["mrpo"][0].get("config", {}).get("judge")
        if isinstance(j, dict):
            j = j.get("spec")
        return j or self.config.judge

    def metrics(self, model: str) -> dict:
        return self.evals[model][0]["datasets"][EVAL_DATASET]["metrics"]


def write_report(out: Path, config: DemoConfig, runner: StageRunner | None = None) -> tuple[Path, Path]:
    """``out/report.md`` and ``out/report.html`` from the stage outputs."""
    from medrl.commands.demo_pipeline.mrpo_changed import what_mrpo_changed

    out = Path(out)
    state = json.loads((out / STATE_FILE).read_text()) if (out / STATE_FILE).is_file() else {"stages": {}}
    stages = state.get("stages", {})
    secs = runner.seconds() if runner else {k: v.get("seconds", 0.0) for k, v in stages.items()}
    cpus = runner.seconds("cpu_seconds") if runner else {k: v.get("cpu_seconds", 0.0) for k, v in stages.items()}
    ctx = ReportContext(out, config, stages, {m: _eval(out, m) for m in MODELS}, secs, cpus)
    rep = Report(TITLE)
    intro(rep, ctx)
    budget_section(rep, ctx)
    accuracy_section(rep, ctx)
    what_mrpo_changed(rep, ctx)
    ffp_far_section(rep, ctx)
    training_section(rep, ctx)
    hacking_section(rep, ctx)
    from medrl.commands.demo_pipeline.phantom import phantom_section

    phantom_section(rep, ctx)  # GRPO vs MRPO over seeds on phantoms (known truth)
    examples_section(rep, ctx)
    glance = [ctx.fig_dir / "accuracy.png", ctx.fig_dir / "ffp_stage_shares.png", ctx.fig_dir / "training_curves.png"]
    summary = summary_figure([g for g in glance if g.is_file()], ctx.fig_dir / "summary.png")
    if summary is not None:
        rep.blocks.insert(3, ("h2", "At a glance"))
        rep.blocks.insert(4, ("figure", (summary, "Judged accuracy per model, FFP stage shares GRPO vs MRPO, and the "
                                                  "training curves (details below).")))
    return rep.write(out)


# --------------------------------------------------------------------------------------------
# Sections


def intro(rep: Report, ctx: ReportContext) -> None:
    c = ctx.config
    policy = ctx.stages.get("policy", {}).get("result") or {}
    params = policy.get("parameters")
    model = ("SmolLM2-135M-Instruct language model with a fresh SigLIP vision tower, LLaVA-style"
             if c.model == "default" else c.model)
    rep.paragraph(
        f"A small-scale demonstration on real VQA-RAD data, not a reproduction of the papers' results: a "
        f"{fmt(params) if params is None else f'{params / 1e6:.1f}M'}-parameter policy ({model}) "
        f"trained for minutes on a CPU, where the papers train 3-8B models for hours on GPUs. Every number below "
        f"was measured in this run ({c.mode} settings); with so few steps and test records, differences between "
        f"the models are mostly within the confidence intervals.")
    rep.paragraph(
        f"Pipeline: warm-up SFT -> GRPO and MRPO from the same warm-up model with the same seed ({c.seed}), data "
        f"order and budget -> greedy evaluation of all three on the same {ctx.n_test} open-ended VQA-RAD test records. "
        f"MRPO's paper trains directly with RL, without an SFT cold start (App. D.1); the demo warms up first "
        f"because its 135M language model writes no <think>/<answer> format before SFT, so every reward "
        f"would be flat and nothing would be learned. "
        f"Judge: {ctx.judge_name}"
        + (" (medrl's offline reference-based judge: a documented heuristic that compares with the reference "
           "answer and the record's evidence; it cannot see the image - point --judge at a strong LLM for real "
           "conclusions)." if c.judge == "reference" else "."))
    rep.paragraph(judge_agreement_text(ctx.judge_name))


def judge_agreement_text(judge: str) -> str:
    """Which judge scored the run and how well it agrees with human labels (measured by
    ``medrl judge-bench``; :func:`medrl.eval.judge_bench.describe_agreement`)."""
    try:
        from medrl.eval.judge_bench import describe_agreement
    except ImportError:
        return f"Judge: {judge}. Its agreement with human labels is not known to this install."
    return describe_agreement(judge)


def budget_section(rep: Report, ctx: ReportContext) -> None:
    c, stages = ctx.config, ctx.stages
    policy = stages.get("policy", {}).get("result") or {}
    data = stages.get("data", {}).get("result") or {}
    params = policy.get("parameters")
    rep.heading("Model size and budget")

    def t(stage: str) -> list[str]:
        return [fmt_secs(ctx.secs.get(stage, 0)), fmt_secs(ctx.cpus.get(stage, 0))]

    rows = [
        ["Base policy", f"{params:,} parameters (counted from the weight files)" if params else "-",
         policy.get("path", "-"), *t("policy")],
        ["Data", f"VQA-RAD open-ended: {data.get('train', '-')} train records, {data.get('test', '-')} test records",
         data.get("data_root", "-"), *t("data")],
        ["Warm-up SFT", f"{c.sft_steps} steps x {c.sft_batch} records = {c.sft_steps * c.sft_batch} examples, "
         f"full fine-tuning, lr {c.sft_lr:g}", "sft/", *t("sft")],
    ]
    for name in ("grpo", "mrpo"):
        rows.append([LABELS[name], f"{c.rl_steps} steps x {c.rl_prompts} prompt x {c.num_generations} rollouts = "
                     f"{c.rl_steps * c.rl_prompts * c.num_generations} rollouts of <= {c.max_completion_length} tokens, "
                     f"lr {c.rl_lr:g}, KL beta {c.beta:g}, seed {c.seed}", f"{name}/", *t(name)])
    for name in MODELS:
        rows.append([f"Eval {LABELS[name]}", f"{ctx.n_test} test records, greedy, <= {c.eval_max_new_tokens} new tokens",
                     f"eval/{name}/", *t(f"eval_{name}")])
    rows.append(["Analysis", "FFP/FAR, paired comparison", "analysis/", *t("analysis")])
    rows.append(["Total", "all stages above (summed over resumed runs)", "",
                 fmt_secs(sum(v for k, v in ctx.secs.items() if k != "report")),
                 fmt_secs(sum(v for k, v in ctx.cpus.items() if k != "report"))])
    rep.table(["Stage", "Budget", "Folder", "Wall time", "CPU time"], rows,
              f"Measured on this machine ({os.cpu_count()} CPU cores{', CUDA' if _cuda() else ''}); CPU time is "
              "summed over this process's threads (on a machine shared with other jobs the wall time grows, the "
              "CPU time much less). Rewards: MRPO Eq. 2-5 (answer + mean step validity + length) for both RL "
              "runs; only the advantage differs (GRPO: one per sequence; MRPO: per token, Eq. 7).")


def accuracy_section(rep: Report, ctx: ReportContext) -> None:
    from medrl.eval import plots

    rep.heading("Accuracy and HSS on the test records")
    body = []
    for m in MODELS:
        d = ctx.evals[m][0]["datasets"][EVAL_DATASET]
        unscored = d["metrics"].get("judge_binary", {}).get("unscored", 0)
        body.append([LABELS[m], d["n"], ci_cell(d["metrics"].get("judge_binary"), True),
                     ci_cell(d["metrics"].get("hss"), False), fmt(d["well_formed"], pct=True),
                     fmt(d["steps"]["mean_steps"], digits=2), fmt(d["steps"]["valid_step_share"], pct=True), unscored])
    rep.table(["Model", "N", "Judged accuracy (%) [95% CI]", "HSS [95% CI]", "Well-formed (%)", "Mean steps",
               "Valid steps (%)", "Unscored"], body,
              "Accuracy: share [95% Wilson score CI] (a share of 0 of N still has an upper bound above 0); HSS: "
              "mean [95% percentile bootstrap CI]. Accuracy: the judge's binary verdict on the final answer only; "
              "unscored rows are left out of it and counted. "
              "HSS = 0.25 BLEU-1 + 0.25 ROUGE-1 + 0.10 BERTScore + 0.40 embedding cosine (ARMed Eq. 15, offline MiniLM).")
    names = [LABELS[m] for m in MODELS]
    for key, label, fname in (("judge_binary", "Judged accuracy", "accuracy.png"), ("hss", "HSS", "hss.png")):
        from medrl.eval.stats import honest_interval

        ms = [ctx.metrics(m).get(key, {}) for m in MODELS]
        how = "Wilson" if key == "judge_binary" else "bootstrap"
        if key == "judge_binary":
            ms = [honest_interval(x) or {} for x in ms]
        fig = plots.accuracy_bars(names, [x.get("mean") for x in ms], [x.get("low") for x in ms],
                                  [x.get("high") for x in ms], ctx.fig_dir / fname,
                                  ylabel=f"{label} (%)" if key == "judge_binary" else f"{label} (x100)",
                                  title=f"{label} on {ctx.n_test} VQA-RAD test records (95% {how} CI)")
        rep.figure(fig, f"{label} per model with 95% {how} confidence intervals.")


def ffp_far_section(rep: Report, ctx: ReportContext) -> None:
    from medrl.eval import plots
    from medrl.eval.analysis import STAGES

    analysis = json.loads((ctx.out / "analysis" / "ffp" / "analysis.json").read_text())["tables"]
    rep.heading("Where reasoning first fails: FFP stage shares (MRPO Sec. 3, Fig. 3)")
    rep.paragraph("First Failure Point FFP = k/K for the first invalid step k of K (a step is valid when the judge "
                  "finds it aligned with the reference evidence or contributing to the answer; MRPO Eq. 1, 3). "
                  "Stages: early [0, 0.4), mid [0.4, 0.7), late [0.7, 1]. MRPO's claim is that penalising early "
                  "invalid steps moves failures later.")
    rep.table(["Model", "Outputs with steps", "Failed", "No failure", "Early (%)", "Mid (%)", "Late (%)"],
              [[n, t["status"]["analysed"], t["stage_shares"]["n_failed"], t["stage_shares"]["no_ffp"]]
               + [fmt(t["stage_shares"]["shares"][s], pct=True) for s in STAGES] for n, t in analysis.items()],
              "Shares among outputs with a failure point.")
    shares = {n: analysis[n]["stage_shares"]["shares"] for n in (LABELS["grpo"], LABELS["mrpo"]) if n in analysis}
    rep.figure(plots.stage_shares_bars(shares, ctx.fig_dir / "ffp_stage_shares.png"),
               "GRPO vs MRPO: share of failed outputs whose first failure is early, mid or late.")
    rep.heading("Failure accumulation after the first failure: FAR curves (MRPO Fig. 1B, Fig. 4)")
    rep.paragraph("FAR = failed steps after the first failure / steps after it, averaged per FFP bin of width 0.2. "
                  "Undefined when the first failure is the last step (such outputs are counted, not averaged).")
    far_rows = [[n, b["bin"], b["n"], fmt(b["far"], pct=True)] for n, t in analysis.items() for b in t["far_by_ffp_bin"]]
    rep.table(["Model", "FFP bin", "N", "FAR (%)"], far_rows)
    rep.figure(plots.far_by_bin_runs({n: t["far_by_ffp_bin"] for n, t in analysis.items()},
                                     ctx.fig_dir / "far_curves.png"),
               "FAR across FFP bins for the three models.")
    comp_path = ctx.out / "analysis" / "grpo_vs_mrpo" / "comparison.json"
    if comp_path.is_file():
        t = json.loads(comp_path.read_text())["paired_table"]
        rep.table(["GRPO \\ MRPO", "MRPO correct", "MRPO wrong"],
                  [["GRPO correct", t["both_correct"], t["a_only"]], ["GRPO wrong", t["b_only"], t["both_wrong"]]],
                  f"Paired outcomes on the same {t['n']} test records (MRPO App. E.2, Table 11); the full comparison "
                  "with FFP stage transitions is in analysis/grpo_vs_mrpo/report.html.")


def training_section(rep: Report, ctx: ReportContext) -> None:
    from medrl.eval import plots

    rep.heading("Training curves: rewards and KL (MRPO App. G)")
    panels: dict[str, dict] = {}
    for name in ("grpo", "mrpo"):
        s = training_series(ctx.out / name)
        used = set()
        for panel, keys in TRAIN_PANELS:
            key = next((k for k in keys if k in s), None)
            if key:
                used.update(keys)
                panels.setdefault(panel, {})[LABELS[name]] = s[key]
        for key in sorted(s):  # every reward component the total sums, so none is hidden
            if key.startswith("rewards/") and key.endswith("/mean") and key not in used:
                panels.setdefault(f"Reward {key.split('/')[1]}", {})[LABELS[name]] = s[key]
    sft = training_series(ctx.out / "sft")
    if "loss" in sft:
        panels = {"Warm-up SFT loss": {"SFT": sft["loss"]}, **panels}
    if not panels:
        rep.paragraph("No training logs found.", note=True)
        return
    rep.figure(plots.training_curves(panels, ctx.fig_dir / "training_curves.png",
                                     title="Warm-up SFT, then GRPO vs MRPO from the same model (per step)"),
               "Per-step training logs (metrics.jsonl in each run folder; also TensorBoard under runs/). The total "
               "reward is the weighted sum of the reward components, each shown in its own panel; runs with fewer "
               "than 5 logged steps are drawn as points, not lines.")
    rep.table(["Curve", "Run", "Steps", "First", "Last", "Mean"],
              [[p, r, len(v), fmt(v[0][1]), fmt(v[-1][1]), fmt(sum(y for _, y in v) / len(v))]
               for p, runs in panels.items() for r, v in runs.items() if v])


def hacking_section(rep: Report, ctx: ReportContext) -> None:
    """One panel: the reward-hacking monitor of the GRPO and MRPO runs (medrl.train.monitor)."""
    from medrl.eval.hacking_report import add_hacking_section, load_monitor

    runs = [(LABELS[m], ctx.out / m) for m in ("grpo", "mrpo") if (ctx.out / m / "monitor_summary.json").is_file()]
    if not runs:
        return
    rep.heading("Reward-hacking monitor")
    for label, run in runs:
        data = load_monitor(run)
        alerts = ", ".join(f"{a['signal']} at step {a['step']}" for a in data["alerts"]) or "none"
        rep.paragraph(f"{label}: alerts {alerts}. Details: medrl analyze hacking {run.name}.")
    label, run = runs[-1]
    add_hacking_section(rep, load_monitor(run), ctx.fig_dir / label.lower(), max_examples=2)


def examples_section(rep: Report, ctx: ReportContext) -> None:
    rep.heading("Example outputs with step verdicts")
    rows_by_model = {m: {r["key"]: r for r in ctx.evals[m][1]} for m in MODELS}
    rep.paragraph("Test records where GRPO and MRPO differ first. Each reasoning step with the judge's verdict "
                  "(gold alignment, answer contribution; valid if either is 1).")
    for k in pick_examples(rows_by_model, 3):
        rep.code(example_text(rows_by_model, k))
    rep.paragraph("Per-model details: eval/<model>/report.html; FFP/FAR tables of all three: analysis/ffp/report.html; "
                  "every output with its verdicts: eval/<model>/outputs.jsonl.", note=True)


# --------------------------------------------------------------------------------------------
# Pieces


def training_series(run_dir: Path) -> dict[str, list[tuple[float, float]]]:
    """Per-step series of one training run from its ``metrics.jsonl`` (train-time logs only;
    the end-of-training summary row and a line torn by an interruption are skipped)."""
    from medrl.common.jsonl import iter_jsonl

    path = Path(run_dir) / "metrics.jsonl"
    series: dict[str, dict[float, float]] = {}
    try:
        for _, row in iter_jsonl(path, objects_only=True):
            step = row.get("step")
            if step is None or "train_runtime" in row:
                continue
            for k, v in row.items():
                if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool):
                    series.setdefault(k, {})[float(step)] = float(v)
    except ValueError as exc:  # a damaged line mid-file: the curves up to it still go in the report
        log.warning("%s", exc)
    return {k: sorted(v.items()) for k, v in series.items()}


def _eval(out: Path, name: str) -> tuple[dict, list[dict]]:
    from medrl.eval.runner import read_rows

    folder = Path(out) / "eval" / name
    metrics = json.loads((folder / "metrics.json").read_text())
    return metrics, read_rows(folder / "outputs.jsonl")


def summary_text(out: Path) -> str:
    """The accuracy/HSS lines printed at the end of a run."""
    lines = [f"{'model':16s} {'N':>4s}  {'accuracy [95% CI]':24s} {'HSS [95% CI]':24s} {'unscored':>8s}"]
    for m in MODELS:
        try:
            metrics, _ = _eval(out, m)
        except FileNotFoundError:
            continue
        d = metrics["datasets"][EVAL_DATASET]
        unscored = (d["metrics"].get("judge_binary") or {}).get("unscored", 0)
        lines.append(f"{LABELS[m]:16s} {d['n']:4d}  {ci_cell(d['metrics'].get('judge_binary'), True):24s} "
                     f"{ci_cell(d['metrics'].get('hss'), False):24s} {unscored:>8}")
    return "\n".join(lines)


def pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def num(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _verdict_mark(v: dict | None) -> str:
    if v is None:
        return "?"
    ok = bool(v.get("gold_alignment") or v.get("answer_contribution"))
    return ("VALID  " if ok else "INVALID") + f" (gold {v.get('gold_alignment')}, answer {v.get('answer_contribution')})"


def example_text(rows_by_model: dict[str, dict], key: str) -> str:
    """One test record's outputs from every model, with the judge's step verdicts."""
    first = next(iter(rows_by_model.values()))[key]
    parts = [f"[{key}] Q: {first['question']}", f"Reference answer: {first['reference']}"]
    for m, rows in rows_by_model.items():
        r = rows.get(key)
        if r is None:
            continue
        c = r.get("scores", {}).get("judge_binary")
        verdict = "unscored" if c is None else ("CORRECT" if c >= 0.5 else "WRONG")
        pred = r.get("prediction") or ""
        pred = pred if len(pred) <= 120 else pred[:117] + "..."
        parts.append(f"\n--- {LABELS.get(m, m)}: answer {pred!r} -> {verdict}")
        steps = r.get("steps") or []
        sv = r.get("step_verdicts")
        if not steps:
            parts.append("    (no reasoning steps)  output: " + (r.get("output") or "")[:300])
        for i, s in enumerate(steps):
            v = sv[i] if sv is not None and i < len(sv) else None
            parts.append(f"    step {i + 1}: {_verdict_mark(v)}  {s['text'][:160]}")
    return "\n".join(parts)


def pick_examples(rows_by_model: dict[str, dict], n: int = 3) -> list[str]:
    """Keys of up to ``n`` test records: first where GRPO and MRPO differ in correctness, then
    where their first failure differs, then the first records (deterministic order)."""
    grpo, mrpo = rows_by_model.get("grpo", {}), rows_by_model.get("mrpo", {})
    keys = [k for k in mrpo if k in grpo]

    def flags(r):
        sv = r.get("step_verdicts")
        return None if sv is None else [bool(v["gold_alignment"] or v["answer_contribution"]) for v in sv]

    chosen: list[str] = []
    for test in (lambda k: output_correct(grpo[k]) != output_correct(mrpo[k]),
                 lambda k: flags(grpo[k]) != flags(mrpo[k]),
                 lambda k: True):
        for k in keys:
            if len(chosen) >= n:
                return chosen
            if k not in chosen and test(k):
                chosen.append(k)
    return chosen


def summary_figure(paths: list[Path], out: Path, width: int = 1200) -> Path | None:
    """The report's figures side by side (first row: all but the last; below: the last, scaled
    to the same width), one PNG for the top of the report and the README."""
    from PIL import Image

    if not paths:
        return None
    ims = [Image.open(p).convert("RGB") for p in paths]
    top, bottom = (ims[:-1], ims[-1]) if len(ims) > 1 else (ims, None)
    h = max(im.height for im in top)
    top = [im.resize((max(1, im.width * h // im.height), h)) for im in top]
    scale = width / sum(im.width for im in top)
    top = [im.resize((max(1, int(im.width * scale)), max(1, int(h * scale)))) for im in top]
    rows_h = top[0].height
    if bottom is not None:
        bottom = bottom.resize((width, max(1, bottom.height * width // bottom.width)))
        rows_h += bottom.height
    canvas = Image.new("RGB", (width, rows_h), "white")
    x = 0
    for im in top:
        canvas.paste(im, (x, 0))
        x += im.width
    if bottom is not None:
        canvas.paste(bottom, (0, top[0].height))
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(out, optimize=True)
    return out


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False
