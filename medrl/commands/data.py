"""``medrl data``: inspect, convert and filter medical VQA data; run the papers' curation tools."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

HELP = "inspect, convert, filter and curate medical VQA data (VQA-RAD, SLAKE, PathVQA, PMC-VQA, ...)"

DESCRIPTION = """\
Load medical VQA datasets in their official layouts, look at them, convert them to medrl's JSONL
record format, filter them, and run the curation tools of the papers.

Data sources (--dataset): a name of medrl's source table - vqa_rad, slake, pathvqa, pmc_vqa
(pmc_vqa_mc: with its options), their Hugging Face copies (vqa_rad_hf, ...), the papers'
evaluation sets (omnimedvqa, mmmu_med, medqa, usmle_sa, vqa_med_2021, radimagenet_vqa,
mimic_cxr_vqa, MediX-R1's collection medix_pubmedqa, medix_pmc_vqa_hard, ...), training sets
(medix_rl, med_zero_17k, mulberry_cot) and the generated phantom; `medrl data sources` lists
them all with their downloads and which are present. Named sources are found under --data-dir
(default $MEDRL_DATA_DIR, ./data or ../shared/data), with a split after a colon (vqa_rad:test);
also jsonl:<file> (medrl records) or hf:<folder or hub id> (save_to_disk folder, downloaded
parquet folder, or a hub id). Layouts and downloads: docs/data.md.

Examples:
  medrl data sources                                         # every source and suite, present or not
  medrl data inspect --dataset vqa_rad                       # counts by split/type/modality + samples
  medrl data inspect --dataset slake:validate --samples 5
  medrl data convert --dataset vqa_rad:train --open --out data/rad_train_open.jsonl
  medrl data convert --dataset vqa_rad --rationales R-RAD.json --out rad.jsonl   # MedThink gold reasoning
  medrl data filter  --dataset jsonl:rad.jsonl --open answer_type --dedup --out rad_open.jsonl
  medrl data evidence   --dataset jsonl:rad.jsonl --out rad_ev.jsonl           # evidence + key steps
  medrl data refine     --dataset jsonl:rad.jsonl --judge openai:gpt-4o-mini --audit-log audit.jsonl --out rad_refined.jsonl
  medrl data key-steps  --dataset jsonl:rad.jsonl --judge reference --results ks.jsonl --out rad_ks.jsonl
  medrl data exemplars  --dataset vqa_rad:train --open --min-count 5 --clusters 5 --out exemplars.jsonl
  medrl data capo-filter --dataset vqa_rad:train --model runs/warmup --judge reference \\
        --n 10 --temperature 0.9 --results capo_log.jsonl --out rad_mixed.jsonl
  medrl data corrupt --image x.jpg --kind diffusion --t 100 --out x_noisy.png

Curation tools are resumable: rerun the same command after an interruption and records already
in --results / --audit-log are not redone. Bad records (missing image, empty question or answer)
stop with an error naming the file and the record; --skip-invalid skips and counts them.
"""


def _add_source(p: argparse.ArgumentParser, required: bool = True) -> None:
    g = p.add_argument_group("data source")
    g.add_argument("--dataset", required=required,
                   help="a source name (vqa_rad, slake, pathvqa, pmc_vqa, ...; `medrl data sources` lists them)"
                        "[:split] | jsonl:<file> | hf:<folder or hub id>")
    g.add_argument("--split", help="split (train/test/validate); overrides a ':split' suffix")
    g.add_argument("--data-dir", help="folder holding vqa_rad/, slake/, ... (default: medrl.common.paths.data_root())")
    g.add_argument("--open", nargs="?", const="papers", default=None, choices=["papers", "answer_type", "strict"],
                   help="keep open-ended records only: papers (default: drop yes/no and multiple-choice), "
                        "answer_type (dataset's OPEN field), strict (both)")
    g.add_argument("--lang", default="en", help="language to keep (SLAKE is bilingual); 'all' keeps every language")
    g.add_argument("--layout", choices=["official", "mevf"], help="VQA-RAD file layout (default official)")
    g.add_argument("--with-choices", action="store_true", help="PMC-VQA: show the options (multiple-choice records)")
    g.add_argument("--rationales", help="MedThink rationale file to join as gold reasoning")
    g.add_argument("--dedup", nargs="?", const="image_question_answer", default=None,
                   choices=["image_question_answer", "image_question", "question_answer", "id"], help="drop duplicates")
    g.add_argument("--limit", type=int, help="keep the first N records (after filtering)")
    g.add_argument("--skip-invalid", action="store_true", help="skip bad records (and report counts) instead of stopping")


def _add_judge(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judge")
    g.add_argument("--judge", default="reference", help="'reference' (offline) or 'openai:<model>' (default reference)")
    g.add_argument("--judge-base-url", help="base URL of an OpenAI-compatible server")
    g.add_argument("--judge-api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    g.add_argument("--judge-cache", help="judge cache file (sqlite/JSON, per judges)")
    g.add_argument("--concurrency", type=int, default=16, help="judge requests in flight")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="data_command", metavar="<subcommand>")
    fmt = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("sources", help="every named source and suite, where to get it, and which are present",
                       formatter_class=fmt)
    p.add_argument("--data-dir", help="data folder to check (default: the usual candidates, see medrl.common.paths)")
    p.add_argument("--json", action="store_true", help="print the table as JSON")

    p = sub.add_parser("inspect", help="counts by split, answer type, modality, open/closed; a few samples", formatter_class=fmt)
    _add_source(p)
    p.add_argument("--samples", type=int, default=3, help="how many sample records to print")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")

    for name, helptext in (("convert", "write records as medrl JSONL"), ("filter", "filter (open-ended, language, dedup) and write JSONL")):
        p = sub.add_parser(name, help=helptext, formatter_class=fmt)
        _add_source(p)
        p.add_argument("--out", required=True, help="output JSONL file")

    p = sub.add_parser("evidence", help="reference evidence (+ key steps) for records without gold reasoning", formatter_class=fmt)
    _add_source(p)
    p.add_argument("--no-key-steps", action="store_true", help="do not fill key_steps from the evidence")
    p.add_argument("--out", required=True)

    p = sub.add_parser("refine", help="ARMed VQA refinement audit through a judge (consistent / needs_fix / drop)", formatter_class=fmt)
    _add_source(p)
    _add_judge(p)
    p.add_argument("--audit-log", required=True, help="JSONL audit log (also the resume file)")
    p.add_argument("--allow-answer-change", action="store_true", help="also take the auditor's new answer")
    p.add_argument("--on-unscored", choices=["keep", "drop"], default="keep")
    p.add_argument("--out", required=True)

    p = sub.add_parser("key-steps", help="StepGRPO key-step extraction through a judge, with equivalent forms", formatter_class=fmt)
    _add_source(p)
    _add_judge(p)
    p.add_argument("--results", required=True, help="JSONL results log (resume file)")
    p.add_argument("--no-augment", action="store_true", help="skip equivalent-form augmentation")
    p.add_argument("--no-evidence-fallback", action="store_true", help="leave records without gold reasoning untouched")
    p.add_argument("--out", required=True)

    p = sub.add_parser("exemplars", help="ARMed knowledge-injection exemplars (answer-frequency groups + K-Means)", formatter_class=fmt)
    _add_source(p)
    p.add_argument("--min-count", type=int, default=5, help="an answer is high-frequency when it occurs more than this")
    p.add_argument("--clusters", type=int, default=5, help="K-Means clusters per high-frequency answer group")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-low-frequency", action="store_true", help="omit low-frequency records from the output")
    p.add_argument("--embedding-model", help="sentence-transformers model path (default: offline MiniLM)")
    p.add_argument("--results", help="JSONL results log per answer group (resume file)")
    p.add_argument("--out", required=True)

    p = sub.add_parser("capo-filter", help="CAPO mixed-difficulty filter: keep questions with 0 < correct < n", formatter_class=fmt)
    _add_source(p)
    _add_judge(p)
    p.add_argument("--model", required=True, help="policy model folder used for sampling")
    p.add_argument("--n", type=int, default=10, help="samples per question (CAPO: 10)")
    p.add_argument("--temperature", type=float, default=0.9, help="sampling temperature (CAPO: 0.9)")
    p.add_argument("--correctness", choices=["auto", "exact", "judge", "embedding"], default="auto",
                   help="the correctness decision; use the training recipe's algorithm.correctness (default auto: "
                        "the judge for open-ended questions, exact match for closed ones)")
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--prompt-style", default="think_answer")
    p.add_argument("--results", required=True, help="JSONL results log (resume file)")
    p.add_argument("--out", required=True)

    p = sub.add_parser("corrupt", help="corrupt an image as CAPO does (diffusion noise, mask, crop)", formatter_class=fmt)
    p.add_argument("--image", required=True)
    p.add_argument("--kind", choices=["diffusion", "mask", "crop"], default="diffusion")
    p.add_argument("--t", type=int, default=100, help="diffusion step of 1000 (default 100)")
    p.add_argument("--area", type=float, help="mask/crop area fraction")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    parser.set_defaults(_data_parser=parser, _out_kind="file")  # every data subcommand's --out is a file


def _load(args, report: dict):
    from medrl.data import load_records

    kw = {}
    if getattr(args, "layout", None):
        kw["layout"] = args.layout
    if getattr(args, "with_choices", False):
        kw["with_choices"] = True
    return load_records(
        args.dataset, split=args.split, data_dir=args.data_dir, open_only=args.open or False,
        lang=None if args.lang == "all" else args.lang, dedup=args.dedup or False,
        skip_invalid=args.skip_invalid, report=report, rationales=args.rationales, limit=args.limit, **kw,
    )


def _report_invalid(report: dict) -> None:
    if report.get("invalid"):
        print(f"skipped {report['invalid']} invalid record(s); first: {report['errors'][0]}", file=sys.stderr)
    if "medthink" in report:
        print(f"MedThink rationales: {json.dumps(report['medthink'])}", file=sys.stderr)
    if report.get("duplicates"):
        print(f"dropped {report['duplicates']} duplicate(s)", file=sys.stderr)


def _write(records, out: str) -> None:
    from medrl.data import write_jsonl

    write_jsonl(records, out)
    print(f"wrote {len(records)} records to {out}")


def _judge(args):
    from medrl.judges import build_judge

    return build_judge(args.judge, base_url=args.judge_base_url, api_key_env=args.judge_api_key_env,
                       cache_path=args.judge_cache, concurrency=args.concurrency)


def _tag_source(record) -> str:
    from medrl.common.modality import record_modality_tag

    return record_modality_tag(record)[1]


def inspect_counts(records) -> dict:
    """Counts shown by ``medrl data inspect``."""
    return {
        "records": len(records),
        "images": len({p for r in records for p in r.images}),
        "by_split": dict(Counter(r.split or "-" for r in records)),
        "by_answer_type": dict(Counter(r.answer_type or "-" for r in records)),
        "open_ended": dict(Counter("open" if r.open_ended else "closed" for r in records)),
        "multiple_choice": sum(1 for r in records if r.extras.get("choices_in_prompt")),
        "text_only": sum(1 for r in records if not r.images),
        "by_modality_tag": dict(Counter(r.modality_tag or "-" for r in records).most_common()),
        # where each record's MediX-R1 tag comes from (column/dataset/heuristic:*/untagged)
        "modality_tag_source": dict(Counter(_tag_source(r) for r in records).most_common()),
        "by_question_type": dict(Counter(r.question_type or "-" for r in records).most_common(12)),
        "with_gold_reasoning": sum(1 for r in records if r.gold_reasoning),
        "with_key_steps": sum(1 for r in records if r.key_steps),
    }


def sources_table(data_dir: str | None = None) -> dict:
    """What ``medrl data sources`` prints: each source's title, download, folder names and the
    folder it was found in (None when absent), and each suite's source specs."""
    from medrl.data.registry import SOURCES, SUITES, find_source
    from medrl.common.paths import data_roots

    roots = data_roots(data_dir)
    table = {}
    for name, src in SOURCES.items():
        where = next((str(p) for root in roots if (p := find_source(name, root)) is not None), None)
        table[name] = {"title": src.title, "url": src.url, "folders": list(src.folders), "text_only": src.text_only,
                       "found": where if src.needs_files else "generated"}
    suites = {name: [spec for spec, _ in items] for name, items in SUITES.items()}
    return {"data_roots": [str(r) for r in roots], "sources": table, "suites": suites}


def _print_sources(args) -> int:
    t = sources_table(getattr(args, "data_dir", None))
    if args.json:
        print(json.dumps(t, indent=2))
        return 0
    print(f"data folders checked: {', '.join(t['data_roots']) or '(none)'}")
    width = max(len(n) for n in t["sources"])
    for name, info in t["sources"].items():
        state = info["found"] or "absent"
        print(f"  {name:<{width}}  {state}")
        if not info["found"]:
            folders = f" (folder {' | '.join(info['folders'][:3])})" if info["folders"] else ""
            print(f"  {'':<{width}}  get it: {info['url']}{folders}")
    print("suites (medrl eval --suite NAME):")
    for name, specs in t["suites"].items():
        print(f"  {name}: {', '.join(specs)}")
    return 0


def run(args) -> int:
    from medrl.data import DataError

    cmd = getattr(args, "data_command", None)
    if cmd is None:
        args._data_parser.print_help()
        return 2
    if cmd == "sources":
        return _print_sources(args)
    try:
        if cmd == "corrupt":
            from PIL import Image

            from medrl.data.corruption import corrupt_image

            from PIL import UnidentifiedImageError

            try:
                im = Image.open(args.image)
                im.load()
            except (UnidentifiedImageError, OSError, ValueError) as exc:  # not an image, cut short, unreadable
                raise DataError(f"--image {args.image}: not a readable image ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:160]})") from None
            with im:
                corrupt_image(im, kind=args.kind, t=args.t, seed=args.seed, area=args.area).save(args.out)
            print(f"wrote {args.out}")
            return 0
        report: dict = {}
        records = _load(args, report)
        _report_invalid(report)
        if cmd == "inspect":
            counts = inspect_counts(records)
            if args.json:
                print(json.dumps(counts, indent=2))
            else:
                for k, v in counts.items():
                    print(f"{k:>20}: {v}")
            for r in records[: max(0, args.samples)]:
                print(json.dumps({k: v for k, v in r.to_dict().items() if v not in (None, [], {})}, ensure_ascii=False)[:600])
            return 0
        if cmd in ("convert", "filter"):
            _write(records, args.out)
            return 0
        if cmd == "evidence":
            from medrl.data.curation.evidence import add_evidence

            out, summary = add_evidence(records, key_steps=not args.no_key_steps)
        elif cmd == "refine":
            from medrl.data.curation.refine import refine_vqa

            out, summary = refine_vqa(records, _judge(args), audit_log=args.audit_log, allow_answer_change=args.allow_answer_change,
                                      on_unscored=args.on_unscored, concurrency=args.concurrency)
        elif cmd == "key-steps":
            from medrl.data.curation.key_steps import extract_key_steps

            out, summary = extract_key_steps(records, _judge(args), results_path=args.results, augment=not args.no_augment,
                                             evidence_fallback=not args.no_evidence_fallback, concurrency=args.concurrency)
        elif cmd == "exemplars":
            from medrl.data.curation.exemplars import knowledge_exemplars

            encode = None
            if args.embedding_model:
                from functools import partial

                from medrl.common.embeddings import encode as _enc

                encode = partial(_enc, model=args.embedding_model)
            out, summary = knowledge_exemplars(records, min_count=args.min_count, clusters_per_group=args.clusters,
                                               include_low_frequency=not args.no_low_frequency, seed=args.seed,
                                               encode=encode, results_path=args.results)
        elif cmd == "capo-filter":
            from medrl.data.curation.capo import mixed_difficulty_filter

            out, summary = mixed_difficulty_filter(records, _model_sampler(args), _judge(args), n=args.n,
                                                   temperature=args.temperature, results_path=args.results,
                                                   concurrency=args.concurrency, correctness=args.correctness)
        else:  # pragma: no cover - argparse restricts the choices
            raise SystemExit(f"unknown data subcommand {cmd}")
        print(json.dumps(summary))
        _write(out, args.out)
        return 0
    except (DataError, FileNotFoundError) as exc:
        from medrl.common.exit_codes import Exit

        print(f"medrl data: {exc}", file=sys.stderr)
        return int(Exit.DATA)


def _model_sampler(args):
    """sample(record, n, temperature) backed by medrl.models.generate on the chosen policy."""
    from medrl.models import generate, load_policy

    model, processor = load_policy(args.model)

    def sample(record, n, temperature):
        return generate(model, processor, [record] * n, max_new_tokens=args.max_new_tokens,
                        temperature=temperature, batch_size=args.batch_size)

    return sample
