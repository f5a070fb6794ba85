"""What ``medrl eval`` and ``medrl analyze`` write: tables, figures and reports per run.

Thin glue between the pure functions (:mod:`medrl.eval.analysis`, :mod:`medrl.eval.agreement`,
:mod:`medrl.eval.diagnostics`), the figures (:mod:`medrl.eval.plots`) and the reports
(:mod:`medrl.eval.report`). Every function writes JSON with the numbers next to the report, so
a table can be checked or re-plotted without rerunning anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from medrl.eval import analysis as A
from medrl.eval import plots
from medrl.eval.report import Report, ci_cell, fmt, interval_name, interval_note
from medrl.eval.scoring import SCORE_KEYS, output_correct, step_valid_flags
from medrl.common.jsonl import read_jsonl, write_jsonl
from medrl.eval.protocols import MRPO_PROTOCOLS, answer_key

_METRIC_NAMES = {
    "judge_binary": "Judged accuracy (%)",
    "judge_report": "Rubric score (0-5)",
    "judge_answer": "Judged correct (%)",
    "judge_answer_h1": "Judged correct, MRPO App. H.1 check (%)",
    "exact": "Exact match, closed (%)",
    "rouge1": "ROUGE-1",
    "bleu1": "BLEU-1",
    "bertscore": "BERTScore F1",
    "cosine": "Cosine",
    "hss": "HSS",
}


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False), encoding="utf-8")


_PCT_KEYS = ("judge_binary", "judge_answer", "judge_answer_h1", "exact")


# --------------------------------------------------------------------------- eval report
def eval_report(out_dir: Path, rows: Sequence[dict], metrics: dict) -> tuple[Path, Path]:
    """The report of one eval folder: per-dataset and macro tables, accuracy figure, examples."""
    out_dir = Path(out_dir)
    cfg = metrics.get("config", {})
    rep = Report(f"medrl eval: {cfg.get('model') or out_dir.name}")
    judge = cfg.get("judge")
    if isinstance(judge, dict):  # the judge identity (medrl.judges.base.judge_identity)
        judge = judge.get("spec") + (f" at {judge['endpoint']}" if judge.get("endpoint") else "") + \
            (" (with images)" if judge.get("images") else "")
    rep.paragraph(f"Judge: {judge}; rubrics: {', '.join(cfg.get('rubrics', []))}; "
                  f"generation: {json.dumps(cfg.get('generation', {}))}. "
                  "The judge saw only the final answer, never the reasoning (MediX-R1 Sec. 3). "
                  "Cells show mean [95% interval]; each table names how its intervals were made: Wilson's score "
                  "interval for shares of correct outputs, a percentile bootstrap for continuous scores, a "
                  "stratified bootstrap for averages over datasets.")
    if cfg.get("rescored_from"):
        rep.paragraph(f"Re-scored from {cfg['rescored_from']} without regenerating (MRPO App. B.2).")
    if cfg.get("judge"):  # which judge scored this, and how far it was measured to agree with humans
        from medrl.eval.judge_bench import describe_agreement

        spec = cfg["judge"].get("spec") if isinstance(cfg["judge"], dict) else cfg["judge"]
        rep.paragraph(describe_agreement(spec))
    keys = [k for k in SCORE_KEYS if any(k in d["metrics"] for d in metrics["datasets"].values())]
    if metrics.get("protocols"):
        judge_cfg = cfg.get("judge")
        _protocol_sections(rep, metrics["protocols"], out_dir / "figures",
                           judge_images=bool(isinstance(judge_cfg, dict) and judge_cfg.get("images")))
        rep.heading("All per-output scores")
    else:
        rep.heading("Per dataset")
    header = (["Dataset", "Domain", "N", "Well-formed (%)", "Truncated"] + [_METRIC_NAMES[k] for k in keys]
              + ["Unscored by judge"])
    body = []
    for name, d in metrics["datasets"].items():
        unscored = sum(d["metrics"][k]["unscored"] for k in ("judge_binary", "judge_report", "judge_answer")
                       if k in d["metrics"])
        truncated = d.get("truncated", 0) if d.get("truncation_known", 1) else "?"
        body.append([name, d["domain"], d["n"], fmt(d["well_formed"], pct=True), truncated]
                    + [ci_cell(d["metrics"].get(k), k in _PCT_KEYS) for k in keys] + [unscored])
    note = interval_note([(_METRIC_NAMES[k], [d["metrics"].get(k) for d in metrics["datasets"].values()],
                           k in _PCT_KEYS) for k in keys])
    rep.table(header, body, note + " Truncated: outputs cut off at the generation limit "
              f"({cfg.get('generation', {}).get('max_new_tokens', '?')} new tokens) with no closing answer tag; "
              "they are scored as they are (usually wrong) - raise --max-new-tokens if there are many "
              "(? = the generator did not say how it stopped). Unscored judge verdicts are excluded from the "
              "metric they affect and counted here.")
    if any(d.get("truncated") for d in metrics["datasets"].values()):
        n_cut = sum(d.get("truncated", 0) for d in metrics["datasets"].values())
        rep.paragraph(f"{n_cut} output(s) hit the generation limit before closing their answer; see the "
                      "Truncated column.", note=True)
    if metrics.get("macro"):
        rep.heading("Macro averages")
        scope_name = {"in": "In-domain", "out": "Out-of-domain", "all": "All datasets"}
        mbody = [[scope_name[s], ", ".join(sorted({n for k in m for n in m[k].get("datasets", [])}))]
                 + [ci_cell(m.get(k), k in _PCT_KEYS) for k in keys] for s, m in metrics["macro"].items()]
        rep.table(["Scope", "Datasets"] + [_METRIC_NAMES[k] for k in keys], mbody,
                  "Mean of the dataset means. " + interval_note(
                      [(_METRIC_NAMES[k], [m.get(k) for m in metrics["macro"].values()], k in _PCT_KEYS)
                       for k in keys]))
    fig_dir = out_dir / "figures"
    acc_key = "judge_binary" if "judge_binary" in keys else ("hss" if "hss" in keys else None)
    if acc_key:
        names = list(metrics["datasets"])
        ms = [metrics["datasets"][n]["metrics"].get(acc_key, {}) for n in names]
        how = interval_name(ms, acc_key in _PCT_KEYS)
        fig = plots.accuracy_bars(names, [m.get("mean") for m in ms], [m.get("low") for m in ms],
                                  [m.get("high") for m in ms], fig_dir / f"{acc_key}_per_dataset.png",
                                  ylabel=_METRIC_NAMES[acc_key].replace(" (%)", "") + " (%)",
                                  title=f"{_METRIC_NAMES[acc_key].replace(' (%)', '')} per dataset (95% {how} CI)")
        rep.figure(fig, f"{_METRIC_NAMES[acc_key]} per dataset with 95% {how} confidence intervals.")
    if metrics.get("pass_at_k", {}).get("ks"):
        _pass_at_k_section(rep, metrics["pass_at_k"], out_dir / "figures")
    steps = [(n, d["steps"]) for n, d in metrics["datasets"].items()]
    rep.heading("Reasoning steps")
    rep.table(["Dataset", "Mean steps", "Verified outputs", "Not verified", "Valid steps (%)"],
              [[n, fmt(s["mean_steps"], digits=2), s["verified"], s["unverified"], fmt(s["valid_step_share"], pct=True)]
               for n, s in steps],
              "Step verdicts (MRPO Eq. 3) feed `medrl analyze` (FFP/FAR).")
    if metrics.get("judge_stats"):
        rep.heading("Judge accounting")
        rep.table(list(metrics["judge_stats"]), [list(metrics["judge_stats"].values())])
    rep.heading("Examples")
    for r in list(rows)[:3]:
        rep.code(f"[{r['key']}] Q: {r['question']}\nReference: {r['reference']}\n"
                 f"Judged answer: {r.get('prediction')!r}  scores: "
                 f"{json.dumps({k: (None if v is None else round(v, 3)) for k, v in r.get('scores', {}).items()})}\n"
                 f"Full output:\n{r['output'][:800]}")
    return rep.write(out_dir)


def _pass_at_k_section(rep: Report, pk: dict, fig_dir: Path) -> None:
    """pass@k per dataset (CAPO Fig. 7; :mod:`medrl.eval.passk`)."""
    cfg_note = f"n={pk.get('n_samples')} sampled outputs per item, each judged under protocol `{pk.get('protocol')}`"
    rep.heading("pass@k")
    ks = pk["ks"]
    body = [[ds] + [fmt(curve[str(k)]["pass_at_k"] if str(k) in curve else curve.get(k, {}).get("pass_at_k"),
                        pct=True) for k in ks] for ds, curve in pk["datasets"].items()]
    body.append(["all items"] + [fmt(pk["all"].get(str(k), pk["all"].get(k, {})).get("pass_at_k"), pct=True)
                                 for k in ks])
    rep.table(["Dataset"] + [f"pass@{k} (%)" for k in ks], body,
              f"Unbiased estimator 1 - C(n-c,k)/C(n,k) (Chen et al. 2021) from {cfg_note}; "
              f"{pk.get('unscored', 0)} unscored sample(s) left out.")
    fig = fig_dir / "pass_at_k.png"
    if fig.exists():
        rep.figure(fig, "pass@k against k per dataset (CAPO Fig. 7).")


_GROUP_NAMES = {"modality": "modality", "organ": "organ / location", "subject": "subject"}
_SCOPE_NAMES = {"in": "In-domain", "out": "Out-of-domain", "all": "All datasets", "text": "Text-only",
                "vlm": "Image + text"}
_AVERAGE_NAMES = {"macro": "macro (mean of the dataset means)",
                  "pooled": "pooled (sample-weighted: mean over every output of every dataset)"}


def _protocol_sections(rep: Report, protocols: dict, fig_dir: Path, judge_images: bool = False) -> None:
    """One section per eval protocol (:mod:`medrl.eval.protocols`): per dataset (table and a bar
    chart of its percentage metrics), macro, groups."""
    for name, p in protocols.items():
        ms = p["metrics"]
        bars = [(f"{ds} {m['key']}", d["metrics"][m["key"]])
                for ds, d in p["datasets"].items() for m in ms if m["pct"] and m["key"] in d["metrics"]]
        rep.heading(f"Protocol `{name}`: {p['description']}")
        rep.paragraph(f"Paper: {p['paper']}. Judge prompt: {p['prompt']}. Cells: mean [95% interval], the "
                      "method named under each table.")
        if name == "mrpo" and not judge_images:
            rep.paragraph("MRPO's judge saw the image (App. H.1-H.2); this judge read text only (an openai: "
                          "judge on a vision-language endpoint gets the images by default under --protocol mrpo; "
                          "--no-judge-images turns that off).", note=True)
        body = []
        for ds, d in p["datasets"].items():
            unscored = sum(c.get("unscored", 0) for c in d["metrics"].values())
            body.append([ds, d["domain"], d["n"], d["counted"], d.get("truncated", 0)]
                        + [ci_cell(d["metrics"].get(m["key"]), m["pct"]) for m in ms] + [unscored])
        note = interval_note([(m["label"], [d["metrics"].get(m["key"]) for d in p["datasets"].values()], m["pct"])
                              for m in ms])
        rep.table(["Dataset", "Domain", "N", "Scored", "Truncated"] + [m["label"] for m in ms] + ["Unscored"], body,
                  note + " Scored: outputs this protocol counts (mrpo: open-ended questions only). Truncated: scored "
                  "outputs cut off at the generation limit with no closing answer tag (scored as they are). "
                  "Unscored judge verdicts are left out of the mean and counted.")
        if bars and any(c.get("mean") is not None for _, c in bars):
            how = interval_name([c for _, c in bars], True)
            fig = plots.accuracy_bars([b for b, _ in bars], [c.get("mean") for _, c in bars],
                                      [c.get("low") for _, c in bars], [c.get("high") for _, c in bars],
                                      fig_dir / f"protocol_{_safe(name)}.png", ylabel="%",
                                      title=f"{name}: per dataset (95% {how} CI)")
            rep.figure(fig, f"Protocol {name}: {', '.join(m['label'] for m in ms if m['pct'])} per dataset.")
        if len(p["datasets"]) > 1 and p.get("macro"):
            paper_avg = p.get("average", "macro")
            avg_rows = []
            for how in (paper_avg, "pooled" if paper_avg == "macro" else "macro"):
                for sc, mm in (p.get(how) or {}).items():
                    avg_rows.append([_SCOPE_NAMES.get(sc, sc), how + (" (paper)" if how == paper_avg else ""),
                                     ", ".join(sorted({n for c in mm.values() for n in c.get("datasets", [])}))]
                                    + [ci_cell(mm.get(m["key"]), m["pct"]) for m in ms])
            cells = [mm for how in ("macro", "pooled") for mm in (p.get(how) or {}).values()]
            rep.table(["Scope", "Average", "Datasets"] + [m["label"] for m in ms], avg_rows,
                      f"{name}: the paper's average is {_AVERAGE_NAMES[paper_avg]}; the other is shown for "
                      "comparison. " + interval_note([(m["label"], [c.get(m["key"]) for c in cells], m["pct"])
                                                      for m in ms]))
        for ds, d in p["datasets"].items():
            for g, per in d.get("groups", {}).items():
                if len(per) < 2:
                    continue
                rows = [[value, max((c.get("n", 0) + c.get("unscored", 0) for c in cell.values()), default=0)]
                        + [ci_cell(cell.get(m["key"]), m["pct"]) for m in ms] for value, cell in per.items()]
                rep.table([_GROUP_NAMES.get(g, g).capitalize(), "N"] + [m["label"] for m in ms], rows,
                          f"{name} on {ds}, per {_GROUP_NAMES.get(g, g)}")


# --------------------------------------------------------------------------- FFP / FAR
def per_output(rows: Sequence[dict], protocol: str | None = None) -> list[dict]:
    """FFP, FAR and stage of every output (MRPO Sec. 3), with its correctness
    (:func:`medrl.eval.scoring.output_correct`, None when unscored) and a status: "analysed",
    "no_steps" or "unverified"."""
    out = []
    for r in rows:
        flags = step_valid_flags(r)
        correct, source = output_correct(r, protocol), protocol or "default"
        if protocol in MRPO_PROTOCOLS and answer_key(protocol) not in (r.get("scores") or {}):
            # an eval scored without the judged answer decision (e.g. MediX-R1's grade only): fall back
            # to the default verdict and count it, rather than leave every output unscored
            correct, source = output_correct(r, None), "fallback"
        item = {"key": r["key"], "dataset": r.get("dataset"), "correct": correct, "correct_from": source,
                "n_steps": len(r.get("steps") or []), "ffp": None, "far": None, "stage": None}
        if flags is None:
            item["status"] = "unverified"
        elif not flags:
            item["status"] = "no_steps"
        else:
            item["status"] = "analysed"
            item["ffp"] = A.first_failure_point(flags)
            item["far"] = A.failure_accumulation_rate(flags)
            item["stage"] = A.stage_of(item["ffp"])
            item["first_failure_step"] = A.first_failure_index(flags)
        out.append(item)
    return out


def ffp_far_tables(items: Sequence[dict]) -> dict:
    """All FFP/FAR tables of one run from :func:`per_output` items."""
    ok = [i for i in items if i["status"] == "analysed"]
    ffps = [i["ffp"] for i in ok]
    correct = [i["correct"] for i in ok]
    fars = [i["far"] for i in ok]
    status = {s: sum(1 for i in items if i["status"] == s) for s in ("analysed", "no_steps", "unverified")}
    by_ds = {}
    for ds in sorted({i["dataset"] for i in ok}):
        by_ds[ds] = A.stage_shares([i["ffp"] for i in ok if i["dataset"] == ds])
    return {
        "n": len(items),
        "status": status,
        "far_undefined_last_step": sum(1 for i in ok if i["ffp"] is not None and i["far"] is None),
        "correct_unscored": sum(1 for i in ok if i["correct"] is None),
        "correct_fallback": sum(1 for i in ok if i.get("correct_from") == "fallback"),
        "incorrect_rate_by_ffp_bin": A.incorrect_rate_by_ffp_bin(ffps, correct, 0.1),
        "no_ffp_incorrect_rate": _rate([not c for f, c in zip(ffps, correct) if f is None and c is not None]),
        "far_by_ffp_bin": A.far_by_ffp_bin(ffps, fars, correct, 0.2),
        "stage_shares": A.stage_shares(ffps),
        "stage_shares_by_dataset": by_ds,
    }


def _rate(xs: list[bool]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _run_name(run_dir: Path) -> str:
    return run_dir.resolve().name


def _ensure_verified(rows: list[dict], judge: Any, cache: Path, protocol: str | None = None) -> list[dict]:
    """Verify the steps of rows that lack verdicts with ``judge`` (resumable cache file); under
    an MRPO protocol also score its answer decision (``judge_answer_h1`` for ``mrpo``,
    :func:`medrl.eval.protocols.answer_key`) of rows that lack it."""
    from medrl.eval.scoring import score_rows
    from medrl.common.jsonl import append_jsonl

    want_answer = protocol in MRPO_PROTOCOLS
    key = answer_key(protocol)

    def lacks(r: dict) -> bool:
        return r.get("step_verdicts") is None or (want_answer and (r.get("scores") or {}).get(key) is None)

    done = {r["key"]: r for r in read_jsonl(cache, repair=True)}
    todo = [r for r in rows if lacks(r) and r["key"] not in done]
    for i in range(0, len(todo), 32):
        chunk = todo[i : i + 32]
        scored = score_rows(chunk, judge, rubrics=(), verify_steps=True, text_metrics=False,
                            protocols=[protocol] if want_answer else ())
        keep = [{"key": s["key"], "steps": s["steps"], "step_verdicts": s["step_verdicts"],
                 key: s["scores"].get(key)} for s in scored]
        append_jsonl(cache, keep)
        done.update({k["key"]: k for k in keep})
    out = []
    for r in rows:
        if r["key"] not in done:
            out.append(r)
            continue
        d = done[r["key"]]
        new = {**r, "steps": d["steps"], "step_verdicts": d["step_verdicts"]}
        if d.get(key) is not None and (r.get("scores") or {}).get(key) is None:
            new["scores"] = {**(r.get("scores") or {}), key: d[key]}
        out.append(new)
    return out


#: FFP/FAR is MRPO's analysis: by default it reads correctness with MRPO's criterion (App. H.1,
#: the ``mrpo`` protocol) on open-ended questions only (Sec. 3 analyses open-ended VQA).
FFP_PROTOCOL = "mrpo"


def ffp_protocol(run_dir: str | Path, explicit: str | None = None) -> tuple[str, str]:
    """``(protocol, note)`` the FFP/FAR analysis of an eval folder uses: ``explicit`` when given,
    else :data:`FFP_PROTOCOL`; the note says whether the eval was scored under it (read from the
    protocols stored in the folder's config.json)."""
    from medrl.eval.scoring import stored_protocols

    if explicit:
        return explicit, f"correctness from the {explicit!r} protocol (--protocol)"
    stored = stored_protocols(run_dir)
    if FFP_PROTOCOL in stored:
        return FFP_PROTOCOL, "correctness with MRPO's answer criterion (App. H.1); the eval was scored under 'mrpo'"
    return FFP_PROTOCOL, ("correctness with MRPO's answer criterion (App. H.1) read from the judged answer "
                          f"decision; the eval was scored under {stored or 'no stored protocol'}, not 'mrpo': "
                          "rescore it with `medrl eval --rescore ... --protocol mrpo` (or pass --judge here) for "
                          "the O/X prompt of App. H.1")


def analyze_runs(run_dirs: Sequence[str | Path], out_dir: str | Path, *, judge: Any = None,
                 names: Sequence[str] | None = None, protocol: str | None = None,
                 include_closed: bool = False) -> dict:
    """FFP/FAR analysis of one or more eval folders (MRPO Sec. 3, 5.3; Fig. 1, 3, 4).

    Correctness: ``protocol`` when given, else MRPO's criterion (:func:`ffp_protocol`; the
    protocols the eval stored are read from its config.json and named in the report). Rows that
    are not open-ended in the papers' sense (yes/no, multiple choice) are left out unless
    ``include_closed`` (MRPO Sec. 3 analyses open-ended VQA). With ``judge``, outputs without step
    verdicts (and, under ``mrpo``, without the answer decision) are scored first (cached in
    ``<out>/verified_<run>.jsonl``). Writes ``analysis.json``, ``per_output_<run>.jsonl``,
    figures and ``report.md``/``report.html`` into ``out_dir``; returns the tables per run.
    """
    from medrl.eval.protocols import is_open_papers
    from medrl.eval.scoring import load_run

    out_dir = Path(out_dir)
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    run_dirs = [Path(d) for d in run_dirs]
    names = list(names) if names else [_run_name(d) for d in run_dirs]
    if len(set(names)) != len(names):
        names = [f"{n}#{i + 1}" for i, n in enumerate(names)]
    tables, items_by_run, criteria = {}, {}, {}
    for name, d in zip(names, run_dirs):
        rows = load_run(d)
        used, note = ffp_protocol(d, protocol)
        n_all = len(rows)
        if not include_closed:
            rows = [r for r in rows if is_open_papers(r)]
        criteria[name] = {"protocol": used, "note": note, "rows": n_all, "closed_left_out": n_all - len(rows)}
        if judge is not None:
            rows = _ensure_verified(rows, judge, out_dir / f"verified_{_safe(name)}.jsonl", used)
        items = per_output(rows, used)
        items_by_run[name] = items
        tables[name] = ffp_far_tables(items)
        tables[name]["criterion"] = criteria[name]
        write_jsonl(out_dir / f"per_output_{_safe(name)}.jsonl", items)
    _write_json(out_dir / "analysis.json", {"runs": {n: str(d) for n, d in zip(names, run_dirs)}, "tables": tables})

    rep = Report("medrl analyze: reasoning failures (FFP / FAR)")
    rep.paragraph("First Failure Point FFP = k/K of the first invalid step k of K steps; Failure Accumulation "
                  "Rate FAR = failed steps after the first failure / steps after it (MRPO Sec. 3, Eq. 1). "
                  "Stages: early [0, 0.4), mid [0.4, 0.7), late [0.7, 1]. FAR is undefined when the first "
                  "failure is the last step; such outputs are counted, not averaged.")
    rep.heading("Correctness and scope")
    rep.table(["Run", "Correctness", "Outputs in the eval", "Closed questions left out",
               "Without the MRPO decision (default verdict used)"],
              [[n, c["note"], c["rows"], c["closed_left_out"] if not include_closed else "0 (--include-closed)",
                tables[n]["correct_fallback"]] for n, c in criteria.items()],
              "FFP/FAR follow MRPO Sec. 3: open-ended questions only (yes/no and multiple-choice rows are left "
              "out unless --include-closed), correctness with MRPO's answer criterion unless --protocol says "
              "otherwise.")
    rep.heading("Outputs analysed")
    rep.table(["Run", "Outputs", "Analysed", "No steps", "Not verified", "No failure (No FFP)",
               "FAR undefined (last step)", "Correctness unscored"],
              [[n, t["n"], t["status"]["analysed"], t["status"]["no_steps"], t["status"]["unverified"],
                t["stage_shares"]["no_ffp"], t["far_undefined_last_step"], t["correct_unscored"]]
               for n, t in tables.items()])
    if any(t["status"]["unverified"] for t in tables.values()):
        rep.paragraph("Some outputs have no step verdicts (the eval ran without step verification or the judge "
                      "returned an unscored verdict); pass --judge to verify them.", note=True)
    rep.heading("FFP stages (MRPO Fig. 3)")
    rep.table(["Run", "Failed outputs", "Early (%)", "Mid (%)", "Late (%)", "Early n", "Mid n", "Late n"],
              [[n, t["stage_shares"]["n_failed"]] + [fmt(t["stage_shares"]["shares"][s], pct=True) for s in A.STAGES]
               + [t["stage_shares"]["counts"][s] for s in A.STAGES] for n, t in tables.items()],
              "Shares among outputs with a failure point.")
    rep.figure(plots.stage_shares_bars({n: t["stage_shares"]["shares"] for n, t in tables.items()},
                                       fig_dir / "fig3_stage_shares.png"),
               "Share of failed outputs whose first failure is early, mid or late (MRPO Fig. 3).")
    for n, t in tables.items():
        if len(t["stage_shares_by_dataset"]) > 1:
            rep.table(["Dataset", "Failed", "Early (%)", "Mid (%)", "Late (%)"],
                      [[ds, s["n_failed"]] + [fmt(s["shares"][x], pct=True) for x in A.STAGES]
                       for ds, s in t["stage_shares_by_dataset"].items()], f"{n}: stages per dataset")
    rep.heading("Incorrect rate per FFP bin (MRPO Fig. 1A)")
    for n, t in tables.items():
        rep.table(["FFP bin", "N", "Incorrect", "Incorrect rate (%)"],
                  [[b["bin"], b["n"], b["incorrect"], fmt(b["rate"], pct=True)] for b in t["incorrect_rate_by_ffp_bin"]]
                  + [["No FFP", "", "", fmt(t["no_ffp_incorrect_rate"], pct=True)]], f"{n}")
    rep.figure(plots.incorrect_rate_by_bin({n: t["incorrect_rate_by_ffp_bin"] for n, t in tables.items()},
                                           fig_dir / "fig1a_incorrect_rate.png"),
               "Incorrect rate across FFP bins of width 0.1 (MRPO Fig. 1A).")
    rep.heading("Failure accumulation per FFP bin (MRPO Fig. 1B and Fig. 4)")
    for n, t in tables.items():
        rep.table(["FFP bin", "N", "FAR (%)", "N correct", "FAR correct (%)", "N incorrect", "FAR incorrect (%)"],
                  [[b["bin"], b["n"], fmt(b["far"], pct=True), b["n_correct"], fmt(b["far_correct"], pct=True),
                    b["n_incorrect"], fmt(b["far_incorrect"], pct=True)] for b in t["far_by_ffp_bin"]], f"{n}")
        rep.figure(plots.far_correct_incorrect(t["far_by_ffp_bin"], fig_dir / f"fig1b_far_{_safe(n)}.png",
                                               title=f"FAR across FFP bins, correct vs incorrect: {n}"),
                   f"{n}: FAR per FFP bin of width 0.2 for correct and incorrect outputs (MRPO Fig. 1B).")
    rep.figure(plots.far_by_bin_runs({n: t["far_by_ffp_bin"] for n, t in tables.items()},
                                     fig_dir / "fig4_far_bins.png"),
               "FAR across FFP bins of width 0.2 (MRPO Fig. 4).")
    rep.write(out_dir)
    return tables


# --------------------------------------------------------------------------- paired runs
def paired_stats_runs(rows_a: Sequence[dict], rows_b: Sequence[dict], *, protocol: str | None = None,
                      n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """Paired statistics of two runs' scored rows on the same inputs (paired by output key).

    ``{"accuracy": {"all": paired_comparison(...), "<dataset>": ...},
       "hss": {"all": paired_mean_diff(...), ...}  (when both runs have HSS),
       "only_in_a", "only_in_b", "protocol"}`` - McNemar's exact p-value and the paired bootstrap
    interval of the accuracy difference B - A (:func:`medrl.eval.stats.paired_comparison`), and the
    same for HSS (:func:`medrl.eval.stats.paired_mean_diff`). Correctness:
    :func:`medrl.eval.scoring.output_correct` (``protocol`` picks a protocol's main accuracy).
    """
    from medrl.eval.stats import paired_comparison, paired_mean_diff

    a = {r["key"]: r for r in rows_a}
    b = {r["key"]: r for r in rows_b}
    keys = [k for k in a if k in b]
    groups: dict[str, list[str]] = {"all": keys}
    for k in keys:
        groups.setdefault(str(a[k].get("dataset")), []).append(k)
    if len(groups) == 2:  # one dataset: "all" says it
        groups = {"all": keys}
    boot = {"n_boot": n_boot, "alpha": alpha, "seed": seed}
    acc = {g: paired_comparison([output_correct(a[k], protocol) for k in ks],
                                [output_correct(b[k], protocol) for k in ks], **boot) for g, ks in groups.items()}
    out: dict[str, Any] = {"protocol": protocol, "accuracy": acc, "only_in_a": sum(1 for k in a if k not in b),
                           "only_in_b": sum(1 for k in b if k not in a)}
    hss = lambda r: (r.get("scores") or {}).get("hss")  # noqa: E731
    if any(hss(a[k]) is not None for k in keys) and any(hss(b[k]) is not None for k in keys):
        out["hss"] = {g: paired_mean_diff([hss(a[k]) for k in ks], [hss(b[k]) for k in ks], **boot)
                      for g, ks in groups.items()}
    return out


def _paired_rows(res: dict, metric: str, pct: bool) -> list[list]:
    f = (lambda v: fmt(v, pct=True)) if pct else (lambda v: fmt(v))
    rows = []
    for g, r in res.items():
        p = r.get("mcnemar_p", r.get("wilcoxon_p"))
        a, b = (r.get("a_acc"), r.get("b_acc")) if metric == "accuracy" else (r.get("a_mean"), r.get("b_mean"))
        rows.append([g, r["n"], f(a), f(b), f(r["diff"]), f"[{f(r['ci_low'])}, {f(r['ci_high'])}]",
                     "-" if p is None else f"{p:.4g}"]
                    + ([r["a_only"], r["b_only"]] if metric == "accuracy" else []))
    return rows


def compare_run_dirs(run_a: str | Path, run_b: str | Path, out_dir: str | Path, *,
                     names: Sequence[str] | None = None, judge: Any = None, protocol: str | None = None,
                     n_boot: int = 2000, seed: int = 0) -> dict:
    """Paired comparison of two eval folders on the same inputs (MRPO App. E.2, Tables 11-13),
    with McNemar's exact test and paired bootstrap intervals of the accuracy and HSS
    differences (:func:`paired_stats_runs`), plus the FFP/FAR analysis of both. Rows/"A" = the
    first run (the paper's GRPO), columns/"B" = the second (MRPO)."""
    from medrl.eval.scoring import load_run

    out_dir = Path(out_dir)
    name_a, name_b = names if names else (_run_name(Path(run_a)), _run_name(Path(run_b)))
    if name_a == name_b:
        name_a, name_b = f"{name_a} (A)", f"{name_b} (B)"
    tables = analyze_runs([run_a, run_b], out_dir / "ffp", judge=judge, names=[name_a, name_b], protocol=protocol)
    stats = paired_stats_runs(load_run(run_a), load_run(run_b), protocol=protocol, n_boot=n_boot, seed=seed)
    items = {}
    for n in (name_a, name_b):
        path = out_dir / "ffp" / f"per_output_{_safe(n)}.jsonl"
        items[n] = {row["key"]: row for row in read_jsonl(path)}

    def view(it: dict) -> dict:
        return {"correct": it["correct"], "ffp": it["ffp"], "has_steps": it["status"] == "analysed"}

    result = A.compare_runs({k: view(v) for k, v in items[name_a].items()},
                            {k: view(v) for k, v in items[name_b].items()})
    result["paired_stats"] = stats
    _write_json(out_dir / "comparison.json", {"a": name_a, "b": name_b, **result})

    fig_dir = out_dir / "figures"
    t = result["paired_table"]
    n = t["n"] or 1
    rep = Report(f"medrl analyze --compare: {name_a} vs {name_b}")
    rep.paragraph(f"Paired, instance-level comparison on the inputs both runs answered (MRPO App. E.2). Rows: "
                  f"{name_a}; columns: {name_b}. Left out: {result['only_in_a']} inputs only in {name_a}, "
                  f"{result['only_in_b']} only in {name_b}, {result['unscored_pairs']} with an unscored verdict.")
    rep.heading("Prediction consistency (MRPO Table 11)")
    cell = lambda v: f"{v} ({100 * v / n:.1f}%)"  # noqa: E731
    rep.table([f"{name_a} \\ {name_b}", "Correct", "Wrong"],
              [["Correct", cell(t["both_correct"]), cell(t["a_only"])],
               ["Wrong", cell(t["b_only"]), cell(t["both_wrong"])]], f"{t['n']} paired inputs")
    rep.heading("Is the difference real? Paired statistics")
    rep.paragraph("McNemar's exact test (statsmodels) on the inputs only one run gets right, and a paired "
                  "percentile bootstrap 95% interval of the difference B - A (inputs resampled jointly, SciPy). "
                  "Independent per-run intervals can overlap while the paired difference is clearly non-zero.")
    rep.table(["Inputs", "N", f"{name_a} acc. (%)", f"{name_b} acc. (%)", "B - A (pp)", "95% CI (pp)",
               "McNemar p", f"{name_a} only", f"{name_b} only"],
              _paired_rows(stats["accuracy"], "accuracy", True), "Accuracy: correct/wrong per input")
    if "hss" in stats:
        rep.table(["Inputs", "N", f"{name_a} HSS", f"{name_b} HSS", "B - A", "95% CI", "Wilcoxon p"],
                  _paired_rows(stats["hss"], "hss", False), "HSS (ARMed Eq. 15): paired difference of the means")
    for key, title, pct_mode in (
        ("transitions_b_only_correct", f"FFP stage transitions, {name_b}-only-correct inputs (MRPO Table 12)", "row"),
        ("transitions_a_only_correct", f"FFP stage transitions, {name_a}-only-correct inputs (MRPO Table 13)", "sum"),
    ):
        m = result[key]
        rep.heading(title)
        rep.table(*_matrix_table(m, name_a, name_b, pct_mode),
                  ("Percentages within each row." if pct_mode == "row" else "SUM row: percentages of all inputs.")
                  + (f" {m['excluded_no_steps']} inputs without reasoning steps left out." if m["excluded_no_steps"] else ""))
        rep.figure(plots.transition_heatmap(m, fig_dir / f"{key}.png", title, name_a, name_b), title)
    rep.heading("FFP stages of both runs (MRPO Fig. 3)")
    rep.table(["Run", "Failed outputs", "Early (%)", "Mid (%)", "Late (%)"],
              [[r, tb["stage_shares"]["n_failed"]] + [fmt(tb["stage_shares"]["shares"][s], pct=True) for s in A.STAGES]
               for r, tb in tables.items()])
    rep.figure(out_dir / "ffp" / "figures" / "fig3_stage_shares.png", "FFP stage shares (MRPO Fig. 3).")
    rep.figure(out_dir / "ffp" / "figures" / "fig4_far_bins.png", "FAR across FFP bins (MRPO Fig. 4).")
    rep.paragraph("Full FFP/FAR tables of both runs: ffp/report.html.", note=True)
    rep.write(out_dir)
    return result


def _matrix_table(m: dict, name_a: str, name_b: str, pct_mode: str) -> tuple[list, list]:
    labels = [A.STAGE_LABELS[s] for s in m["labels"]]
    header = [f"{name_a} \\ {name_b}"] + labels + ["SUM"]
    body = []
    for lab, row, rs in zip(labels, m["counts"], m["row_sums"]):
        if pct_mode == "row" and rs:
            body.append([lab] + [f"{v} ({100 * v / rs:.1f}%)" for v in row] + [rs])
        else:
            body.append([lab] + [str(v) for v in row] + [rs])
    total = m["n"]
    if pct_mode == "sum" and total:
        body.append(["SUM"] + [f"{v} ({100 * v / total:.1f}%)" for v in m["col_sums"]] + [total])
    else:
        body.append(["SUM"] + [str(v) for v in m["col_sums"]] + [total])
    return header, body


# --------------------------------------------------------------------------- agreement
def load_labels(source: str | Path, field: str) -> tuple[dict, dict]:
    """Labels of one rater: an eval folder (its judge's verdicts) or a label file."""
    from medrl.eval.agreement import labels_from_outputs, read_label_file
    from medrl.eval.scoring import load_run

    p = Path(source)
    if p.is_dir():
        return labels_from_outputs(load_run(p), field)
    labels = read_label_file(p)
    groups = {k: (k[0] if isinstance(k, tuple) else k).rsplit(":", 1)[0] for k in labels}
    return labels, groups


def agreement_report(a: str | Path, b: str | Path, out_dir: str | Path, *, field: str = "correct",
                     names: Sequence[str] | None = None) -> dict:
    """Agreement rate and Cohen's kappa between two raters, overall and per dataset (MRPO
    App. B.1, Table 3)."""
    from medrl.eval.agreement import agreement_summary, pair_labels

    out_dir = Path(out_dir)
    la, ga = load_labels(a, field)
    lb, gb = load_labels(b, field)
    pairs, counts = pair_labels(la, lb)
    if not pairs:
        raise ValueError(f"no item is labelled by both raters ({a} and {b}, field {field!r}); "
                         "label-file ids must be output keys such as 'vqa_rad:test:123'")
    summary = agreement_summary(pairs, {**gb, **ga})
    name_a, name_b = names if names else (Path(a).name, Path(b).name)
    confusion = {f"{x}{y}": sum(1 for p in pairs.values() if p == (x, y)) for x in (1, 0) for y in (1, 0)}
    result = {"a": str(a), "b": str(b), "field": field, "counts": counts, "confusion": confusion, **summary}
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(out_dir / "agreement.json", result)
    rep = Report(f"medrl analyze agreement: {name_a} vs {name_b} ({field})")
    rep.paragraph("Agreement rate = share of items both raters label the same; Cohen's kappa corrects it for "
                  "chance agreement (MRPO App. B.1; above 0.61 is substantial agreement by Landis and Koch).")
    rows = [[g, s["n"], fmt(s["agreement"], pct=True), fmt(s["kappa"])] for g, s in summary["groups"].items()]
    rows.append(["Total", summary["total"]["n"], fmt(summary["total"]["agreement"], pct=True),
                 fmt(summary["total"]["kappa"])])
    rep.table(["Group", "N", "Agreement (%)", "Cohen's kappa"], rows,
              f"Items labelled by only one rater were left out: {counts['only_a']} ({name_a}), {counts['only_b']} ({name_b}).")
    rep.table([f"{name_a} \\ {name_b}", "1", "0"],
              [["1", confusion["11"], confusion["10"]], ["0", confusion["01"], confusion["00"]]], "Confusion table")
    rep.write(out_dir)
    return result


# --------------------------------------------------------------------------- training
def training_report(logdirs: Sequence[str | Path], out_dir: str | Path, *, samples: str | Path | None = None,
                    group_size: int = 8, names: Sequence[str] | None = None,
                    overrides: dict | None = None) -> dict:
    """Training-dynamics curves (MRPO App. G) for one or more runs, and with ``samples`` the raw vs
    adaptive semantic reward distributions (ARMed Fig. 3)."""
    from medrl.eval import diagnostics as D

    out_dir = Path(out_dir)
    fig_dir = out_dir / "figures"
    names = list(names) if names else [Path(d).resolve().name for d in logdirs]
    panels: dict[str, dict] = {}
    found: dict[str, list[str]] = {}
    for name, d in zip(names, logdirs):
        scalars = D.load_scalars(d)
        found[name] = sorted(scalars)
        for panel, series in D.pick_curves(scalars, overrides).items():
            panels.setdefault(panel, {})[name] = series
    result: dict[str, Any] = {"curves": panels, "keys": found}
    rep = Report("medrl analyze training: reward diagnostics and training dynamics")
    if panels:
        rep.heading("Training dynamics (MRPO App. G)")
        rep.figure(plots.training_curves(panels, fig_dir / "training_curves.png"),
                   "Answer reward, process reward, KL divergence and completion length per step (where logged).")
        rep.table(["Panel", "Run", "Points", "First", "Last"],
                  [[p, r, len(s), fmt(s[0][1]), fmt(s[-1][1])] for p, runs in panels.items() for r, s in runs.items() if s])
    missing = [p for p in D.CURVES if p not in panels]
    if missing:
        rep.paragraph(f"Not found in the logs: {', '.join(missing)} (use --metric 'PANEL=KEY' to point at a log key).",
                      note=True)
    if samples is not None:
        stats = D.raw_vs_adaptive(D.load_reward_samples(samples, group_size=group_size))
        result["reward_distribution"] = {k: {kk: vv for kk, vv in v.items() if not kk.endswith("_values")}
                                         for k, v in stats.items()}
        rep.heading("Raw vs adaptive semantic reward (ARMed Fig. 3)")
        rep.table(["Reward", "N", "Raw mean", "Raw variance", "Adaptive mean", "Adaptive variance", "Adaptive from"],
                  [[k, v["raw"]["n"], fmt(v["raw"]["mean"]), fmt(v["raw"]["var"]), fmt(v["adaptive"]["mean"]),
                    fmt(v["adaptive"]["var"]), "replayed Adapt()" if v["replayed"] else "log"] for k, v in stats.items()],
                  "ARMed reports raw BERTScore 0.986 / 0.029 and adaptive 0.648 / 0.104 (mean / variance).")
        for k, v in stats.items():
            rep.figure(plots.reward_histograms({f"raw {k}": v["raw_values"], f"adaptive {k}": v["adaptive_values"]},
                                               fig_dir / f"reward_hist_{_safe(k)}.png",
                                               title=f"{k}: raw vs adaptive (ARMed Fig. 3)"),
                       f"Distribution of raw and adaptive {k} rewards.")
    if not panels and samples is None:
        raise ValueError(f"nothing to plot: none of {list(D.CURVES)} found in {list(map(str, logdirs))} "
                         f"(keys seen: {found}); pass --metric or --samples")
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(out_dir / "training.json", result)
    rep.write(out_dir)
    return result


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
