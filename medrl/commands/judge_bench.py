"""``medrl judge-bench``: measure judges against human labels (answer correctness and step verdicts)."""

from __future__ import annotations

HELP = "measure judges against human labels: answer accuracy, per-step Cohen's kappa, FFP agreement"

DESCRIPTION = """\
Run one or more judges over a hand-labelled file and measure how often they agree with the
human labels, the way MRPO (App. B.1) validated GPT-5-mini before trusting it:

  answer items   judge.answer_correct(question, reference, candidate) vs the label:
                 accuracy, precision/recall of "correct", accuracy per kind (exact, paraphrase,
                 near_miss, adversarial, wrong) and subkind (side, level, negation, abbreviation,
                 ...), and how many adversarial answers (lists, hedges, negations, padding,
                 placeholders, injections) the judge accepted;
  trace items    judge.verify_steps(...) vs per-step labels (MRPO App. H.2 criteria):
                 agreement and Cohen's kappa for gold alignment, answer contribution and step
                 validity (valid = either criterion, MRPO Eq. 3), first-failure-point agreement
                 per trace, and the judge's accuracy on each trace's final answer.

Writes OUT/metrics.json, OUT/report.md and OUT/report.html (judges side by side, with calls,
cache hits, tokens and seconds per judge) and OUT/verdicts/<judge>.jsonl. Interrupted? Rerun
the same command: items already judged are kept. Each judge's headline numbers are also
recorded in $MEDRL_CACHE/judge_agreement.json (skip with --no-record), where `medrl eval`
reports look them up to say how far their judge can be trusted.

Default labels: the development set shipped with medrl (medrl/judges/labels/judge_dev.jsonl:
VQA-RAD and SLAKE training-split items written and labelled for this project). Its items are
split: "dev" items were used while writing the reference judge's rules, "frozen" items are never
used for tuning. Every figure is reported for the frozen split (the headline, what `medrl eval`
quotes), the dev split (an upper bound) and all items. Your own labels may carry the same
"split" field. The label format
and a labelling guide are in docs/judges.md. Image paths in the labels are resolved against
--data-root, needed only for judges that look at images.

Examples:
  medrl judge-bench --judge reference --out bench/reference
  medrl serve-judge --port 8000 &                          # any OpenAI-compatible server works
  medrl judge-bench --judge openai:medrl-reference --judge-base-url http://127.0.0.1:8000/v1 \\
                    --out bench/served
  medrl judge-bench --judge reference --judge openai:gpt-5-mini --out bench/compare
  medrl judge-bench --judge openai:gpt-5-mini --labels my_labels.jsonl --judge-images --out bench/mine
"""


def add_arguments(p) -> None:
    p.add_argument("--judge", action="append", required=True, metavar="SPEC",
                   help="judge spec, repeatable: reference | openai:<model>")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="labelled JSONL file (default: the shipped medrl/judges/labels/judge_dev.jsonl)")
    p.add_argument("--out", required=True, help="output folder (resumed when it exists)")
    p.add_argument("--data-root", default=None,
                   help="folder the labels' image paths are relative to (default: $MEDRL_DATA_DIR, ./data, ../shared/data)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible endpoint for openai: judges")
    p.add_argument("--judge-api-key-env", default="OPENAI_API_KEY", help="env var holding the judge API key")
    p.add_argument("--judge-cache", default=None,
                   help="SQLite cache file for openai: judge replies (default: one per judge under --out)")
    p.add_argument("--judge-images", action="store_true",
                   help="send each item's image to the judges (openai: judges on a vision-language endpoint only)")
    p.add_argument("--judge-image-size", type=int, default=768, metavar="PX",
                   help="longest side of the images sent with --judge-images (JPEG; default 768)")
    p.add_argument("--no-embeddings", action="store_true", help="reference judge without the MiniLM cosine")
    p.add_argument("--concurrency", type=int, default=8, help="judge requests in flight")
    p.add_argument("--limit", type=int, default=None, help="first N answer items and first N traces (smoke test)")
    p.add_argument("--no-record", action="store_true",
                   help="do not record the headline numbers in $MEDRL_CACHE/judge_agreement.json")
    p.add_argument("--record-file", default=None, metavar="JSON",
                   help="record the headline numbers in this file instead (maintainers refresh the shipped "
                   "medrl/judges/labels/judge_agreement.json this way)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--step-prompt", nargs="+", default=["hardened"], choices=["paper", "hardened"], metavar="NAME",
                   help="step-verification prompt(s) to measure each judge under: hardened (default; medrl's rules "
                        "against gaming) and/or paper (MRPO App. H.2 as stated, the mrpo recipe's default); "
                        "each other than hardened is reported as '<judge> [step_prompt=NAME]'")
    p.add_argument("--answer-check", nargs="+", default=["strict"], choices=["strict", "medix", "paper"],
                   metavar="NAME",
                   help="answer prompt(s) to measure each judge under: strict (default; medrl's), medix (MediX-R1's "
                        "R_llm prompt: the two answers, no question; medix_llm's default) and/or paper (MRPO App. "
                        "H.1, O/X); each other than strict is reported as '<judge> [answer_check=NAME]'")


def _options(args, spec: str) -> dict:
    from pathlib import Path

    from medrl.eval.judge_bench import judge_slug

    if spec.strip().lower().startswith("openai:"):
        if not args.judge_cache:
            (Path(args.out) / "cache").mkdir(parents=True, exist_ok=True)
        opts = {"base_url": args.judge_base_url, "api_key_env": args.judge_api_key_env,
                "cache_path": args.judge_cache or str(Path(args.out) / "cache" / f"{judge_slug(spec)}.sqlite"),
                "concurrency": args.concurrency}
        if args.judge_images:
            opts.update(images=True, image_max_side=args.judge_image_size)
        return opts
    return {"use_embeddings": False} if args.no_embeddings else {}


def run(args) -> int:
    from pathlib import Path

    from medrl.eval.judge_bench import LabelError, run_bench
    from medrl.judges import build_judge

    Path(args.out).mkdir(parents=True, exist_ok=True)
    try:
        judges = [build_judge(spec, **_options(args, spec)) for spec in args.judge]
        if args.judge_images:  # fail at start, not per item, when a judge cannot take images
            from medrl.judges.base import require_image_support

            for j in judges:
                require_image_support(j)
        metrics = run_bench(judges, args.out, labels=args.labels, data_root=args.data_root,
                            concurrency=args.concurrency, progress=not args.quiet, record=not args.no_record,
                            record_path=args.record_file, limit=args.limit, step_prompts=args.step_prompt,
                            answer_checks=args.answer_check)
    except (LabelError, FileNotFoundError, ValueError) as exc:
        print(f"medrl judge-bench: error: {exc}")
        return 2
    finally:
        for j in locals().get("judges", []):
            close = getattr(j, "close", None)
            if callable(close):
                close()
    _print_summary(metrics)
    print(f"\nreport: {Path(args.out) / 'report.html'}  metrics: {Path(args.out) / 'metrics.json'}")
    return 0


def _print_summary(metrics: dict) -> None:
    names = list(metrics["judges"])
    print(f"labels: {metrics['labels']} ({metrics['n_answers']} answers, {metrics['n_traces']} traces)")
    if any(metrics["judges"][n].get("splits") for n in names):
        for title, pick in (("FROZEN split (never used for tuning; the headline)", lambda m: m["summary"]),
                            ("dev split (used while writing the rules: an upper bound)",
                             lambda m: m["splits"]["dev"]["summary"]),
                            ("all items", lambda m: m["summary_all"])):
            print(f"\n{title}")
            _print_table(names, {n: pick(metrics["judges"][n]) for n in names})
    else:
        _print_table(names, {n: metrics["judges"][n]["summary"] for n in names})
    for n in names:
        st = metrics["judges"][n]["judge_stats"]
        print(f"{n}: calls {st.get('calls', 0)}, cache hits {st.get('cache_hits', 0)}, tokens "
              f"{st.get('input_tokens', 0)}+{st.get('output_tokens', 0)}, {st.get('seconds', 0):.1f} s")


def _print_table(names: list, summaries: dict) -> None:
    from medrl.eval.report import fmt

    rows = [("answer accuracy", "answer_accuracy", True), ("paraphrases accepted", "paraphrase_accepted", True),
            ("near misses rejected", "near_miss_rejected", True), ("adversarial accepted", "adversarial_accepted", False),
            ("gold alignment kappa", "gold_alignment_kappa", False),
            ("answer contribution kappa", "answer_contribution_kappa", False),
            ("step validity kappa", "step_validity_kappa", False), ("FFP agreement", "ffp_agreement", True)]
    rows += [("answer items", "n_answers", False), ("steps", "n_steps", False)]
    width = max(len(n) for n in names) + 2
    print(f"{'':28}" + "".join(f"{n:>{width}}" for n in names))
    for label, key, pct in rows:
        cells = []
        for n in names:
            s = summaries.get(n) or {}
            v = s.get(key)
            cells.append(f"{v}/{s.get('adversarial_n')}" if key == "adversarial_accepted" and v is not None
                         else (fmt(v, pct=pct) + ("%" if pct and v is not None else "")))
        print(f"{label:28}" + "".join(f"{c:>{width}}" for c in cells))
