"""``medrl eval``: generate on benchmarks, keep every output, score with a judge, report."""

from __future__ import annotations

HELP = "evaluate a model: generate, judge (accuracy, rubric, steps), HSS/ROUGE/BLEU/BERTScore, report"

DESCRIPTION = """\
Evaluate a model on one or more datasets with the papers' protocols (MediX-R1 Sec. 3, MRPO
Sec. 5.1, ARMed Eq. 15): generate (greedy by default), save every full output, then score the
final answer only with a judge (binary score = judged accuracy; optional 0-5 report rubric),
verify each reasoning step (for `medrl analyze`), and compute ROUGE-1, BLEU-1, BERTScore,
embedding cosine and HSS. Per-dataset means, in-/out-of-domain and macro averages come with
95% bootstrap confidence intervals. Writes OUT/outputs.jsonl, OUT/metrics.json and
OUT/report.md + OUT/report.html.

Interrupted? Rerun the same command: finished generations and scores are kept.

Dataset specs: SOURCE[:SPLIT], SOURCE one of vqa_rad, slake, pathvqa, pmc_vqa,
jsonl:<path>, hf:<path>. Open-ended questions only unless --include-closed.

Examples:
  medrl eval --model runs/mrpo --data vqa_rad:test --judge reference --out evals/mrpo
  medrl eval --model runs/mrpo --data vqa_rad:test slake:validate --ood pmc_vqa:test \\
             --judge openai:gpt-5-mini --out evals/mrpo
  medrl eval --rescore evals/mrpo --judge openai:gpt-5.4 --out evals/mrpo_gpt54   # cross-judge
  medrl eval --model runs/mrpo --data vqa_rad:test --limit 20 --out /tmp/quick       # smoke test
"""

_SPLITS = {"train", "test", "validate", "validation", "val", "dev"}


def add_arguments(p) -> None:
    p.add_argument("--model", help="model folder or hub id (not needed with --rescore)")
    p.add_argument("--data", nargs="+", default=[], metavar="SPEC", help="in-domain datasets, e.g. vqa_rad:test")
    p.add_argument("--ood", nargs="+", default=[], metavar="SPEC", help="out-of-domain datasets")
    p.add_argument("--out", required=True, help="output folder (resumed when it exists)")
    p.add_argument("--judge", default="reference", help="judge spec: reference | openai:<model> (default: reference)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible endpoint for the judge")
    p.add_argument("--judge-api-key-env", default="OPENAI_API_KEY", help="env var holding the judge API key")
    p.add_argument("--judge-cache", default=None, help="SQLite cache file for judge replies")
    p.add_argument("--concurrency", type=int, default=16, help="judge requests in flight")
    p.add_argument("--rescore", metavar="EVAL_DIR", help="score EVAL_DIR's saved outputs with --judge into --out")
    p.add_argument("--rubric", nargs="+", default=["binary"], choices=["binary", "report"],
                   help="judge rubrics: binary (accuracy, QA) and/or report (0-5, long-form)")
    p.add_argument("--no-steps", action="store_true", help="skip step verification (no FFP/FAR later)")
    p.add_argument("--no-text-metrics", action="store_true", help="skip ROUGE/BLEU/BERTScore/cosine/HSS")
    p.add_argument("--embedding-model", default=None, help="sentence encoder for the cosine (default: MiniLM)")
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf", help="generation backend")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (the papers' evaluation)")
    p.add_argument("--prompt-style", default="think_answer",
                   help="think_answer | modality_think_answer | plain (vLLM backend)")
    p.add_argument("--limit", type=int, default=None, help="first N records per dataset")
    p.add_argument("--include-closed", action="store_true", help="also closed (yes/no) questions")
    p.add_argument("--data-dir", default=None, help="data folder (default: $MEDRL_DATA_DIR, ./data, ../shared/data)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true", help="discard what --out holds and start over")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``vqa_rad:test`` -> ("vqa_rad", "test"); ``jsonl:/x.jsonl`` -> ("jsonl:/x.jsonl", None);
    ``jsonl:/x.jsonl:test`` -> ("jsonl:/x.jsonl", "test"). A trailing ``:SPLIT`` counts only
    when it is a known split name."""
    head, _, tail = spec.rpartition(":")
    if head and tail.lower() in _SPLITS:
        return head, tail
    return spec, None


def load_datasets(args):
    from medrl.data import load_records
    from medrl.eval.runner import EvalDataset

    out = []
    for domain, specs in (("in", args.data), ("out", args.ood)):
        for spec in specs:
            source, split = parse_spec(spec)
            recs = load_records(source, split=split, data_dir=args.data_dir, open_only=not args.include_closed)
            if args.limit:
                recs = recs[: args.limit]
            if not recs:
                raise SystemExit(f"medrl eval: dataset {spec!r} has no records (split {split!r})")
            out.append(EvalDataset(spec, recs, domain))
    return out


def run(args) -> int:
    import logging
    import sys

    from medrl.judges import build_judge
    from medrl.eval.runner import EvalFolderMismatch, build_generate_fn, rescore_run, run_eval

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    judge = build_judge(args.judge, base_url=args.judge_base_url, api_key_env=args.judge_api_key_env,
                        cache_path=args.judge_cache, concurrency=args.concurrency)
    common = dict(rubrics=args.rubric, verify_steps=not args.no_steps, text_metrics=not args.no_text_metrics,
                  embedding_model=args.embedding_model, concurrency=args.concurrency, n_boot=args.bootstrap,
                  seed=args.seed, overwrite=args.overwrite)
    try:
        if args.rescore:
            metrics = rescore_run(args.rescore, judge, args.out, **common)
        else:
            if not args.model or not (args.data or args.ood):
                print("medrl eval: --model and --data (or --ood) are required (or --rescore EVAL_DIR)", file=sys.stderr)
                return 2
            datasets = load_datasets(args)
            gen = {"backend": args.backend, "max_new_tokens": args.max_new_tokens,
                   "temperature": args.temperature, "prompt_style": args.prompt_style}
            generate_fn = build_generate_fn(args.model, backend=args.backend, max_new_tokens=args.max_new_tokens,
                                            temperature=args.temperature, batch_size=args.batch_size,
                                            prompt_style=args.prompt_style)
            metrics = run_eval(datasets, generate_fn, judge, args.out, model=args.model, generation=gen,
                               batch_size=args.batch_size, **common)
    except EvalFolderMismatch as exc:
        print(f"medrl eval: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\nmedrl eval: interrupted; finished records are saved in {args.out}. "
              "Rerun the same command to continue.", file=sys.stderr)
        return 130
    for name, d in metrics["datasets"].items():
        acc = d["metrics"].get("judge_binary", {})
        hss = d["metrics"].get("hss", {})
        print(f"{name:28s} n={d['n']:4d}  accuracy={_pct(acc.get('mean'))}  HSS={_num(hss.get('mean'))}")
    for scope, m in metrics.get("macro", {}).items():
        print(f"macro[{scope}]{'':19s} accuracy={_pct(m.get('judge_binary', {}).get('mean'))}")
    print(f"report: {args.out}/report.html")
    return 0


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _num(v) -> str:
    return "-" if v is None else f"{v:.3f}"
