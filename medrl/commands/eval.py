"""``medrl eval``: generate on benchmarks, keep every output, score with a judge, report."""

from __future__ import annotations

HELP = ("evaluate a model under the papers' protocols (standard, mrpo, medix, armed): generate, judge, "
        "closed/open accuracy, steps, HSS, benchmark suites, report")

DESCRIPTION = """\
Evaluate a model on one or more datasets with the papers' protocols (MediX-R1, arXiv 2602.23363,
Sec. 3; MRPO, arXiv 2606.31825, Sec. 5.1; ARMed, arXiv 2508.12957, Eq. 15): generate (greedy by default), save every full output, then score the
final answer only with a judge (binary score = judged accuracy; optional 0-5 report rubric),
verify each reasoning step (for `medrl analyze`), and compute ROUGE-1, BLEU-1, BERTScore,
embedding cosine and HSS. Per-dataset means, in-/out-of-domain and macro averages come with
95% intervals, each named by its method: Wilson's score interval for shares of correct outputs,
a percentile bootstrap for continuous scores, a stratified bootstrap for averages. Writes OUT/outputs.jsonl, OUT/metrics.json and
OUT/report.md + OUT/report.html.

Interrupted, or the judge was down? Rerun the same command: finished generations and scores
are kept and the judge is asked again for every output it left unscored. The folder remembers
its judge (spec, endpoint, model, prompt version, image setting): another judge is refused
unless --rescore-unscored. A judge that rejects the API key (HTTP 401/403) stops the run at
once, naming the key's environment variable.

--judge-images sends each record's image with the judge's accuracy and step requests
(downscaled to --judge-image-size px, JPEG; MRPO App. H.1-H.2); it needs an openai:<model>
judge on a vision-language endpoint (checked at start). With --protocol mrpo an openai: judge
gets the images by default (MRPO's judge sees the image); --no-judge-images turns that off.

Protocols (--protocol, comma-separated; docs/evaluation.md): standard (default; closed questions
by exact match, open by the judge; closed, open and overall accuracy, per modality/organ),
mrpo (MRPO App. H.1's lenient O/X check with the image when the judge takes images, App. H.2's
step prompt; open-ended questions only; pooled average as Table 2), mrpo_strict (the same with
medrl's strict answer check), medix (MediX-R1 binary JSON score, 0-5 report rubric, each asked
in 3 judge rounds - majority / mean - unless --judge-rounds says otherwise; macro average,
text-only / image+text), armed (ARMed: HSS Eq. 15 on every non-multiple-choice question,
accuracy on multiple choice, macro in-/out-of-domain). --dry-run loads the data and prints the
judge requests, tokens and (with --judge-price) cost, then stops.
--max-new-tokens defaults to the model's trained completion length (else 1024); outputs cut off
at the limit are counted as truncated. Several protocols on the
same saved outputs give one metric set each in one report:
  medrl eval --rescore evals/mrpo --protocol mrpo,medix,standard --out evals/mrpo_all

Other harnesses (docs/evaluation.md, "Other harnesses"): --predictions FILE scores the
predictions VLMEvalKit wrote ({model}_{dataset}.xlsx/.tsv/.csv/.json) or lmms-eval logged
(--log_samples: {date}_samples_{task}.jsonl) with medrl's judges and protocols, instead of
generating (no --model); NAME=FILE names the dataset. --export vlmevalkit|lmms-eval writes
OUT's outputs in that harness's layout into OUT/export/FORMAT/ (after the eval, or alone on a
finished folder: `medrl eval --export lmms-eval --out evals/mrpo`).

Dataset specs: SOURCE[:SPLIT], SOURCE one of the loaders listed by `medrl data inspect --help`
(vqa_rad, slake, pathvqa, pmc_vqa, the Hugging Face copies, omnimedvqa, mmmu_med, medxpertqa_mm,
medqa, medmcqa, pubmedqa), jsonl:<path>, hf:<folder or hub id>. Closed questions are kept unless
every protocol is open-only (mrpo) and --include-closed is not given. --suite NAME runs a paper's
benchmark set (huatuo, mrpo, armed, capo, medix) as far as it is present and lists what is missing.

Examples:
  medrl eval --model runs/mrpo --data vqa_rad:test --judge reference --out evals/mrpo
  medrl eval --model runs/mrpo --data vqa_rad:test slake:validate --ood pmc_vqa:test \\
             --judge openai:gpt-5-mini --out evals/mrpo
  medrl eval --rescore evals/mrpo --judge openai:gpt-5.4 --out evals/mrpo_gpt54   # cross-judge
  medrl eval --model runs/mrpo --data vqa_rad:test --limit 20 --out /tmp/quick       # smoke test
  medrl eval --model runs/mrpo --suite huatuo --judge openai:gpt-5-mini --out evals/huatuo
  medrl eval --model runs/mrpo --data medqa:test medmcqa:validation pubmedqa:test --protocol medix --out evals/text
  medrl eval --predictions vlmeval/Qwen2-VL-7B_PathVQA_TEST.xlsx --protocol standard,mrpo --out evals/qwen_pathvqa
  medrl eval --predictions out/qwen/20250101_120000_samples_slake_en.jsonl --judge openai:gpt-5-mini --out evals/slake
  medrl eval --export vlmevalkit --out evals/mrpo             # evals/mrpo/export/vlmevalkit/<model>_<dataset>.tsv
"""

_SPLITS = {"train", "test", "validate", "validation", "val", "dev"}


def _reference_agreement() -> str:
    """The reference judge's measured agreement with the shipped human labels, for --help: the
    frozen split's figures, the dev split's named as an upper bound (medrl.eval.judge_bench)."""
    from medrl.eval.judge_bench import agreement_help

    return agreement_help("reference")


def add_arguments(p) -> None:
    p.add_argument("--model", help="model folder or hub id (not needed with --rescore)")
    p.add_argument("--data", nargs="+", default=[], metavar="SPEC", help="in-domain datasets, e.g. vqa_rad:test")
    p.add_argument("--ood", nargs="+", default=[], metavar="SPEC", help="out-of-domain datasets")
    p.add_argument("--out", required=True, help="output folder (resumed when it exists)")
    p.add_argument("--judge", default="reference",
                   help="judge spec: reference | openai:<model> (default: reference). The reference judge is a "
                        "rule-based heuristic for offline smoke runs, not a substitute for an LLM judge. "
                        + _reference_agreement() + " (docs/judges.md; measure any judge with medrl judge-bench)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible endpoint for the judge")
    p.add_argument("--judge-api-key-env", default="OPENAI_API_KEY", help="env var holding the judge API key")
    p.add_argument("--judge-cache", default=None, help="SQLite cache file for judge replies")
    p.add_argument("--judge-images", action="store_true", default=None,
                   help="send each record's image to the judge (accuracy and step requests; openai: judges). "
                        "Default: on for --protocol mrpo with an openai: judge (MRPO App. H.1-H.2), else off")
    p.add_argument("--no-judge-images", dest="judge_images", action="store_false",
                   help="never send images to the judge, even under --protocol mrpo")
    p.add_argument("--judge-image-size", type=int, default=768, metavar="PX",
                   help="longest side of an image sent to the judge, in pixels (default 768)")
    p.add_argument("--judge-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="seconds one judge request may take (openai: judges; default 60)")
    p.add_argument("--judge-retry-budget", type=float, default=None, metavar="SECONDS",
                   help="total seconds per judge request over all its retries (default: twice --judge-timeout; "
                        "0 = no limit); past it the item is unscored and a rerun asks again")
    from medrl.commands.run_folder import add_data_root_arg

    add_data_root_arg(p)
    p.add_argument("--rescore-unscored", action="store_true",
                   help="resume a folder with a different judge: keep its scores, score only the unscored outputs")
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip invalid records (missing, truncated or oversized image, image outside the data "
                        "root, empty or malformed field, overlong question, ...) and report how many, instead of "
                        "stopping at the first (docs/data.md, Data safety)")
    p.add_argument("--concurrency", type=int, default=16, help="judge requests in flight")
    p.add_argument("--rescore", metavar="EVAL_DIR", help="score EVAL_DIR's saved outputs with --judge into --out")
    p.add_argument("--predictions", nargs="+", default=None, metavar="[NAME=]FILE",
                   help="score another harness's predictions instead of generating (no --model): VLMEvalKit "
                        "prediction files (.xlsx, .tsv, .csv, .json: index/question/answer/prediction columns, "
                        "A-Z options) or lmms-eval --log_samples files (*_samples_<task>.jsonl); NAME= names "
                        "the dataset (default: the task or file name)")
    p.add_argument("--predictions-format", choices=["auto", "vlmevalkit", "lmms-eval"], default="auto",
                   help="which harness wrote --predictions (default: from the file name)")
    p.add_argument("--export", nargs="+", default=None, choices=["vlmevalkit", "lmms-eval"], metavar="FORMAT",
                   help="also write OUT's outputs in a harness's layout into OUT/export/FORMAT/: vlmevalkit "
                        "(<model>_<dataset>.tsv, read with PRED_FORMAT=tsv) or lmms-eval "
                        "(<model>/<date>_samples_<task>.jsonl + _results.json); alone with --out, exports a "
                        "finished eval folder")
    p.add_argument("--protocol", default="standard", metavar="NAME[,NAME...]",
                   help="eval protocol(s), comma-separated: standard (default: closed by exact match, open by "
                        "the judge, closed/open/overall accuracy, per modality/organ), mrpo (MRPO App. H.1's lenient "
                        "O/X check + H.2 step prompt, open questions), mrpo_strict (the same with medrl's strict "
                        "answer check), medix (MediX-R1 binary JSON / 0-5 report rubric, 3 judge rounds), armed "
                        "(ARMed HSS + judged accuracy, in/out-of-domain). See docs/evaluation.md")
    p.add_argument("--suite", default=None, metavar="NAME",
                   help="a paper's benchmark set instead of --data: huatuo (VQA-RAD, SLAKE, PathVQA, PMC-VQA, "
                        "OmniMedVQA, MMMU Health & Medicine), mrpo (MRPO Table 2: 3 in- + 5 out-of-distribution sets), "
                        "armed (ARMed Table 1), capo (CAPO Tables 1-4), medix (MediX-R1 Table 2: 17 benchmarks); "
                        "runs what is present under --data-dir (out-of-distribution sets as --ood), lists what is missing")
    p.add_argument("--rubric", nargs="+", default=["binary"], choices=["binary", "report", "none"],
                   help="judge rubrics graded on every output besides what the protocols need: binary (MediX-R1 "
                        "JSON grade; `medrl analyze agreement` reads it), report (0-5), none (default: binary)")
    p.add_argument("--judge-rounds", type=int, default=None, metavar="N",
                   help="ask the judge N times per grade in one conversation, each time to re-evaluate, and take "
                        "the majority (binary) or mean (report rubric), as MediX-R1's evaluation code does. "
                        "Default: 3 with --protocol medix, else 1")
    p.add_argument("--judge-price", type=float, nargs=2, default=None, metavar=("IN", "OUT"),
                   help="US dollars per million judge input / output tokens, for the --dry-run cost")
    p.add_argument("--dry-run", action="store_true",
                   help="load the data, print the judge requests, tokens and cost the eval would spend, and stop")
    p.add_argument("--no-steps", action="store_true", help="skip step verification (no FFP/FAR later)")
    p.add_argument("--no-text-metrics", action="store_true", help="skip ROUGE/BLEU/BERTScore/cosine/HSS")
    p.add_argument("--embedding-model", default=None, help="sentence encoder for the cosine (default: MiniLM)")
    p.add_argument("--bertscore-model", default=None,
                   help="BERTScore model of the text metrics/HSS (ARMed: PubMedBERT, "
                   "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext; default: offline MiniLM)")
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf",
                   help="generation backend (vllm: pip install 'medrl[vllm]', checked before anything loads)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run Python code shipped inside the model folder or hub repo (off by default; only for a "
                        "model you trust)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="generation limit per output (default: the completion length the model was trained "
                        "with, grpo.max_completion_length in the run folder's config.yaml, else 1024). An output "
                        "cut off at the limit without a closing answer tag is counted as truncated")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (the papers' evaluation)")
    p.add_argument("--samples", type=int, default=0, metavar="N",
                   help="also draw N sampled outputs per record (at --temperature, or 1.0 when it is 0) and "
                        "report pass@k for k = 1, 2, 4, ..., N (CAPO Fig. 7; samples.jsonl, pass_at_k.json)")
    p.add_argument("--prompt-style", default="think_answer",
                   help="think_answer | modality_think_answer | plain (vLLM backend)")
    from medrl.commands.run_folder import record_count

    p.add_argument("--limit", type=record_count, default=None, help="first N records per dataset")
    p.add_argument("--refine-questions", action="store_true",
                   help="ARMed Table 2: rewrite the in-domain test questions with the judge's QA-consistency "
                        "audit before generating (needs_fix -> new question, drop -> removed; log in "
                        "OUT/refine_<dataset>.jsonl). ARMed reports its numbers on refined test sets")
    p.add_argument("--include-closed", action="store_true",
                   help="keep closed (yes/no, multiple-choice) questions under an open-only protocol (mrpo)")
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
    import sys

    from medrl.data import load_records
    from medrl.data.record import DataError
    from medrl.eval.runner import EvalDataset

    from medrl.data.registry import refuse_duplicate_sources

    out = []
    skip = bool(getattr(args, "skip_invalid", False))
    suite = set(getattr(args, "suite_specs", None) or ())
    refuse_duplicate_sources([(spec, *parse_spec(spec)) for spec in [*args.data, *args.ood]], args.data_dir)
    for domain, specs in (("in", args.data), ("out", args.ood)):
        for spec in specs:
            source, split = parse_spec(spec)
            report: dict = {}
            try:
                recs = load_records(source, split=split, data_dir=args.data_dir, open_only=_open_only(args),
                                    skip_invalid=skip, report=report)
            except DataError as exc:
                if spec not in suite:
                    raise
                print(f"medrl eval: suite {args.suite}: {spec} cannot be loaded, skipped ({exc})", file=sys.stderr)
                continue
            if report.get("invalid"):
                errors = report.get("errors") or []
                first = f"; first: {errors[0]}" if errors else ""
                print(f"medrl eval: {spec}: skipped {report['invalid']} invalid record(s), kept {len(recs)}{first}",
                      file=sys.stderr)
            if args.limit:
                recs = recs[: args.limit]
            if not recs:
                raise SystemExit(f"medrl eval: dataset {spec!r} has no records (split {split!r})")
            out.append(EvalDataset(spec, recs, domain))
    return out


def run(args) -> int:
    import logging
    import sys

    from medrl.data.record import DataError
    from medrl.judges import build_judge
    from medrl.judges.base import JudgeAuthError, require_image_support
    from medrl.eval.protocols import parse_protocols
    from medrl.eval.runner import EvalFolderMismatch

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if getattr(args, "export", None) and not (args.model or args.rescore or getattr(args, "predictions", None)):
        return export_only(args)
    try:
        protocols = parse_protocols(args.protocol)
        rounds = judge_rounds(args, protocols)
        if args.suite:
            _apply_suite(args)
    except (ValueError, KeyError) as exc:
        print(f"medrl eval: {exc}", file=sys.stderr)
        return 2
    try:
        judge = build_judge(args.judge, base_url=args.judge_base_url, api_key_env=args.judge_api_key_env,
                            cache_path=args.judge_cache, concurrency=args.concurrency,
                            **({"answer_format": "o_x"} if _mrpo(protocols) else {}),
                            images=_judge_images(args, protocols),
                            image_max_side=getattr(args, "judge_image_size", None),
                            **_judge_time_limits(args))
        if getattr(args, "judge_images", False):
            require_image_support(judge)
    except (ValueError, RuntimeError) as exc:
        print(f"medrl eval: {exc}", file=sys.stderr)
        return 2
    common = dict(rubrics=[r for r in args.rubric if r != "none"], protocols=protocols, verify_steps=not args.no_steps, text_metrics=not args.no_text_metrics,
                  embedding_model=args.embedding_model,
                  bertscore_model=args.bertscore_model, concurrency=args.concurrency, n_boot=args.bootstrap,
                  seed=args.seed, overwrite=args.overwrite, judge_rounds=rounds,
                  rescore_unscored=bool(getattr(args, "rescore_unscored", False)))
    if getattr(args, "dry_run", False):
        return dry_run(args, common, protocols)
    # one writer per folder: a second one raises RunLockedError, exit code LOCKED (medrl.cli)
    from medrl.commands.run_folder import run_in_folder

    if getattr(args, "predictions", None) and (args.model or args.rescore or args.data or args.ood):
        print("medrl eval: --predictions scores saved predictions: give no --model, --rescore, --data or --ood",
              file=sys.stderr)
        return 2
    if not args.rescore and not getattr(args, "predictions", None) and (not args.model or not (args.data or args.ood)):
        print("medrl eval: --model and --data (or --ood) are required (or --rescore EVAL_DIR, or --predictions "
              "FILE)", file=sys.stderr)
        return 2
    if not args.rescore and args.backend == "vllm":  # before any data or model loads
        from medrl.train.backends import vllm_problem

        why = vllm_problem("--backend vllm")
        if why:
            print(f"medrl eval: {why}", file=sys.stderr)
            return 2
    try:
        metrics = run_in_folder(args, "medrl eval", lambda: _run_locked(args, judge, common, protocols))
    except EvalFolderMismatch as exc:
        print(f"medrl eval: {exc}", file=sys.stderr)
        return 2
    except JudgeAuthError as exc:
        print(f"medrl eval: {exc}\nScored outputs are saved in {args.out}; fix the key and rerun the same "
              "command to continue.", file=sys.stderr)
        return 3
    except DataError as exc:
        hint = "" if getattr(args, "skip_invalid", False) or "skip-invalid" in str(exc) or \
            getattr(args, "predictions", None) else " (pass --skip-invalid to skip such records)"
        print(f"medrl eval: invalid data: {exc}{hint}", file=sys.stderr)
        from medrl.common.exit_codes import Exit

        return int(Exit.DATA)
    except ValueError as exc:  # a bad setting found once the run started (--max-new-tokens, refinement)
        print(f"medrl eval: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\nmedrl eval: interrupted; finished records are saved in {args.out}. "
              "Rerun the same command to continue.", file=sys.stderr)
        return 130
    print_protocol_summary(metrics)
    print(f"report: {args.out}/report.html")
    if getattr(args, "export", None):
        return export_only(args)
    return 0


def export_only(args) -> int:
    """``--export FORMAT``: write ``--out``'s outputs in each harness's layout into
    ``OUT/export/FORMAT/`` (:func:`medrl.eval.interop.export_eval`)."""
    import sys
    from pathlib import Path

    from medrl.eval.interop import export_eval

    for fmt in args.export:
        try:
            files = export_eval(args.out, fmt, Path(args.out) / "export" / fmt)
        except FileNotFoundError as exc:
            print(f"medrl eval: --export: {exc}", file=sys.stderr)
            return 2
        for f in files:
            print(f"export ({fmt}): {f}")
    return 0


def load_predictions(args) -> list:
    """The --predictions files (:func:`medrl.eval.interop.read_predictions`); --limit keeps the
    first N rows of each."""
    from medrl.eval.interop import parse_prediction_args, read_predictions

    out = []
    for name, path in parse_prediction_args(args.predictions):
        d = read_predictions(path, getattr(args, "predictions_format", "auto"), name)
        if args.limit:
            d.records = d.records[: args.limit]
        out.append(d)
    return out


def _run_locked(args, judge, common: dict, protocols) -> dict:
    """The eval (or rescore) itself, run while this process holds the --out folder's lock."""
    from medrl.eval.runner import build_generate_fn, rescore_run, run_eval

    if args.rescore:
        return rescore_run(args.rescore, judge, args.out, **common)
    if getattr(args, "predictions", None):
        from medrl.eval.interop import score_predictions

        return score_predictions(load_predictions(args), judge, args.out, **common)
    import sys

    datasets = load_datasets(args)
    max_new, source = resolve_max_new_tokens(args)
    print(f"medrl eval: max_new_tokens={max_new} ({source})", file=sys.stderr)
    gen = {"backend": args.backend, "max_new_tokens": max_new,
           "temperature": args.temperature, "prompt_style": args.prompt_style}
    if getattr(args, "refine_questions", False):
        datasets = refine_datasets(datasets, judge, args)
        gen["refined_questions"] = True  # part of what was evaluated: a resume must match it
    generate_fn = build_generate_fn(args.model, backend=args.backend, max_new_tokens=max_new,
                                    temperature=args.temperature, batch_size=args.batch_size,
                                    prompt_style=args.prompt_style,
                                    trust_remote_code=bool(getattr(args, "trust_remote_code", False)))
    return run_eval(datasets, generate_fn, judge, args.out, model=args.model, generation=gen,
                    batch_size=args.batch_size, samples=max(0, getattr(args, "samples", 0) or 0),
                    sample_temperature=args.temperature if args.temperature > 0 else 1.0, **common)


def resolve_max_new_tokens(args) -> tuple[int, str]:
    """``--max-new-tokens`` when given, else the model's trained completion length, else 1024
    (:func:`medrl.eval.runner.default_max_new_tokens`)."""
    if args.max_new_tokens is not None:
        if args.max_new_tokens < 1:
            raise ValueError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
        return int(args.max_new_tokens), "--max-new-tokens"
    from medrl.eval.runner import default_max_new_tokens

    return default_max_new_tokens(args.model)


def refine_datasets(datasets, judge, args):
    """ARMed's test-set VQA refinement (arXiv 2508.12957, App. "VQA Refinement", Table 2): every
    in-domain dataset's questions go through the judge's QA-consistency audit
    (:func:`medrl.data.curation.refine.refine_vqa`) before generation - ``needs_fix`` rewrites the
    question (the reference answer is kept), ``drop`` removes the record. The audit log
    ``OUT/refine_<dataset>.jsonl`` keeps every verdict and makes the step resumable."""
    import sys
    from pathlib import Path

    from medrl.data.curation.refine import refine_vqa
    from medrl.eval.runner import EvalDataset

    out = []
    for d in datasets:
        if d.domain != "in":  # ARMed refines its in-domain sets (VQA-RAD, SLAKE, PathVQA) only
            out.append(d)
            continue
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in d.name)
        log = Path(args.out) / f"refine_{safe}.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        recs, counts = refine_vqa(d.records, judge, audit_log=log, concurrency=args.concurrency,
                                  show_progress=False)
        print(f"medrl eval: refined {d.name}: {counts} (audit log {log})", file=sys.stderr)
        if not recs:
            raise ValueError(f"refinement dropped every record of {d.name} (audit log {log})")
        out.append(EvalDataset(d.name, recs, d.domain))
    return out


def _judge_images(args, protocols) -> bool:
    """--judge-images / --no-judge-images when given; else on for the ``mrpo`` protocol with a
    judge that can take images (MRPO App. H.1-H.2 show the judge the image), off otherwise."""
    setting = getattr(args, "judge_images", None)
    if setting is not None:
        return bool(setting)
    if _mrpo(protocols):
        from medrl.judges.factory import resolve_images

        return resolve_images(args.judge, "auto")
    return False


def _mrpo(protocols) -> bool:
    from medrl.eval.protocols import MRPO_PROTOCOLS

    return any(p in MRPO_PROTOCOLS for p in protocols)


def judge_rounds(args, protocols) -> int:
    """--judge-rounds when given, else 3 under the ``medix`` protocol (MediX-R1's released
    ``eval/utils.py`` asks its judge three times), else 1."""
    n = getattr(args, "judge_rounds", None)
    if n is None:
        return 3 if "medix" in protocols else 1
    if n < 1:
        raise ValueError(f"--judge-rounds must be at least 1, got {n}")
    return int(n)


def dry_run(args, common: dict, protocols) -> int:
    """``--dry-run``: the judge cost of the eval (:func:`medrl.eval.cost.estimate_eval_cost`), no
    generation and no judge request."""
    from medrl.eval.cost import describe_eval_cost, estimate_eval_cost
    from medrl.eval.scoring import base_row
    from medrl.judges.cost import Price

    if args.rescore:
        from medrl.eval.runner import read_rows

        from pathlib import Path

        rows = read_rows(Path(args.rescore) / "generations.jsonl")
    elif getattr(args, "predictions", None):
        rows = [base_row(rec, d.name, "in", d.outputs[str(rec.id)]) for d in load_predictions(args) for rec in d.records]
    else:
        rows = [base_row(rec, d.name, d.domain, "") for d in load_datasets(args) for rec in d.records]
    price = Price(*args.judge_price) if getattr(args, "judge_price", None) else None
    est = estimate_eval_cost(rows, protocols, rubrics=common["rubrics"], verify_steps=common["verify_steps"],
                             judge_rounds=common["judge_rounds"], samples=max(0, getattr(args, "samples", 0) or 0),
                             price=price)
    for line in describe_eval_cost(est):
        print(line)
    return 0


def _judge_time_limits(args) -> dict:
    """--judge-timeout / --judge-retry-budget for an openai: judge (the offline reference judge
    makes no requests)."""
    if not str(args.judge).strip().lower().startswith("openai"):
        return {}
    limits = {"timeout": getattr(args, "judge_timeout", 60.0)}
    if getattr(args, "judge_retry_budget", None) is not None:
        limits["retry_budget"] = args.judge_retry_budget
    return limits


def _open_only(args) -> bool:
    """Open-ended questions only when asked for by every chosen protocol (mrpo: MRPO App. C.1)
    and --include-closed is not given; standard, medix and armed score closed questions too."""
    from medrl.eval.protocols import get_protocol, parse_protocols

    if args.include_closed:
        return False
    return all(get_protocol(n).open_only for n in parse_protocols(getattr(args, "protocol", None)))


def _apply_suite(args) -> None:
    """``--suite NAME``: the suite's benchmarks present under --data-dir become --data; the
    missing ones are listed (with where to get them) and skipped."""
    import sys

    from medrl.data.registry import suite_specs

    present, missing = suite_specs(args.suite, args.data_dir)
    for name, why in missing:
        print(f"medrl eval: suite {args.suite}: {name} missing, skipped ({why})", file=sys.stderr)
    if not present:
        raise ValueError(f"suite {args.suite!r}: none of its benchmarks is present under the data folder "
                         "(see docs/evaluation.md for where to get them)")
    from medrl.data.registry import SUITE_FALLBACK as _SUITE_FALLBACK, SUITE_OOD

    ood = SUITE_OOD.get(args.suite, frozenset())
    ood = ood | {_SUITE_FALLBACK[s] for s in ood if s in _SUITE_FALLBACK}
    args.suite_specs = [s for s in present if s not in args.data and s not in (getattr(args, "ood", None) or [])]
    args.data = list(args.data) + [s for s in args.suite_specs if s.partition(":")[0] not in ood]
    args.ood = list(getattr(args, "ood", None) or []) + [s for s in args.suite_specs if s.partition(":")[0] in ood]


def print_protocol_summary(metrics: dict) -> None:
    """One line per dataset and protocol with its metrics (mean, 95% CI; Wilson's for shares)
    and the rows left unscored (an accuracy over the scored rows only says nothing about them)."""
    from medrl.eval.stats import honest_interval

    protos = metrics.get("protocols") or {}
    if not protos:
        for name, d in metrics["datasets"].items():
            acc = d["metrics"].get("judge_binary", {})
            hss = d["metrics"].get("hss", {})
            print(f"{name:28s} n={d['n']:4d}  accuracy={_pct(acc.get('mean'))}  HSS={_num(hss.get('mean'))}  "
                  f"unscored={acc.get('unscored', 0)}  truncated={d.get('truncated', 0)}")
        return
    for pname, p in protos.items():
        avg = p.get("average", "macro")
        heads = p.get("headline", p.get("macro", {}))
        for ds, d in list(p["datasets"].items()) + [(f"{avg}[{s}]", {"metrics": m, "counted": ""})
                                                      for s, m in heads.items() if len(p["datasets"]) > 1]:
            cells = []
            unscored = 0
            for m in p["metrics"]:
                c = d["metrics"].get(m["key"])
                if c and c.get("mean") is not None:
                    f = _pct if m["pct"] else _num
                    c = honest_interval(c) if m["pct"] else c
                    cells.append(f"{m['key']}={f(c['mean'])} [{f(c['low'])}, {f(c['high'])}]")
                if c:
                    unscored = max(unscored, int(c.get("unscored") or 0))
            unscored = max(unscored, int(d.get("unscored") or 0))
            n = f"n={d['counted']}" if d["counted"] != "" else ""
            cut = f"  truncated={d['truncated']}" if d.get("truncated") else ""
            print(f"{'[' + pname + ']':10s} {ds:26s} {n:6s} {'  '.join(cells) or '-'}  unscored={unscored}{cut}")


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _num(v) -> str:
    return "-" if v is None else f"{v:.3f}"
