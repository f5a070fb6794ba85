"""``medrl train``: run a recipe (GRPO family on TRL) into a run folder."""

from __future__ import annotations

HELP = "RL post-training with a recipe (grpo, gdpo, dapo, gspo, mrpo, armed, capo, medix_r1, stepgrpo, sft)"

DESCRIPTION = """\
Train a vision-language policy with one of the recipes in medrl/recipes (or your own YAML).

The run folder (--out) gets:
  config.yaml              the fully resolved recipe (profile and --set overrides applied)
  checkpoint-N/            TRL/transformers checkpoints (+ reward_state.json for ARMed)
  runs/                    TensorBoard logs  (tensorboard --logdir OUT)
  metrics.jsonl            the same metrics as JSON lines
  final/                   the trained model and processor
  stages/NN_<name>/        one folder per stage for multi-stage recipes (armed, stepgrpo)

Examples:
  medrl train --recipe mrpo --model runs/warmup --data vqa_rad --judge reference --out runs/mrpo
  medrl train --recipe mrpo --model tiny --data vqa_rad --profile cpu --out runs/try
  medrl train --recipe mrpo ... --out runs/mrpo --resume            # continue from the last checkpoint
  medrl train --recipe gdpo ... --set grpo.learning_rate=2e-6 --set algorithm.mrpo.tau=0.5
  medrl train --recipe mrpo ... --set algorithm.mrpo.shaping=linear  # MRPO App. D.2 ablation
  medrl train --recipe armed --dry-run                               # encoders + offline substitutions, no training

Encoders: each recipe names its paper's models in its reward options (BiomedBERT/PubMedBERT for
BERTScore, BioBERT-STS and MedEmbed for cosines). `encoders.substitute` decides when the offline
all-MiniLM-L6-v2 replaces them: auto (default; only when HF_HUB_OFFLINE is set and the model is
not in the local cache), true (the cpu profile) or false. Substitutions are logged, printed and
stored in config.yaml (recipe.encoders).

Scale-out is TRL's and accelerate's: anything under grpo.* goes to trl.GRPOConfig unchanged.
  accelerate launch --config_file zero3.yaml -m medrl.cli train --recipe mrpo ...
  medrl train ... --set grpo.use_vllm=true --set grpo.vllm_mode=colocate
See docs/training.md.
"""


def add_arguments(p) -> None:
    p.add_argument("--recipe", required=True, help="recipe name (see medrl/recipes) or path to a YAML file")
    p.add_argument("--model", default=None,
                   help="policy: a model folder, a Hugging Face id in the local cache, 'tiny' or 'default' "
                   "(required unless --dry-run)")
    p.add_argument("--data", default="vqa_rad",
                   help="data source: vqa_rad, vqa_rad:train, slake, jsonl:PATH, hf:PATH, or datasets joined "
                   "with '+' (pathvqa+slake+vqa_rad, ARMed's training union) (default: vqa_rad)")
    p.add_argument("--data-dir", default=None, help="folder holding vqa_rad/ and slake/ (default: MEDRL_DATA_DIR)")
    p.add_argument("--judge", default="reference",
                   help="judge for judged rewards: 'reference' (offline) or 'openai:<model>' (default: reference)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible endpoint of the judge")
    p.add_argument("--judge-cache", default=None, help="SQLite cache file for judge replies")
    p.add_argument("--judge-images", action="store_true",
                   help="send each record's image to the judge with answer and step requests (an openai: judge "
                        "on a vision-language endpoint; checked at start). Recipe key: judge.images")
    p.add_argument("--judge-image-size", type=int, default=None, metavar="PX",
                   help="longest side of an image sent to the judge (default: the recipe's judge.image_max_side, 768)")
    p.add_argument("--out", default=None, help="run folder (required unless --dry-run)")
    p.add_argument("--profile", default=None, help="profile overlay, e.g. 'cpu' (small, runs in minutes on a CPU)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a recipe value (repeatable), e.g. grpo.beta=0.0; the value is YAML, so "
                   "quote strings YAML reads as booleans: grpo.save_strategy='no'")
    p.add_argument("--max-steps", type=int, default=None, help="shortcut for --set grpo.max_steps=N")
    p.add_argument("--limit", type=int, default=None, help="use only the first N records")
    p.add_argument("--resume", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                   help="resume from the last checkpoint in --out (or the given checkpoint folder)")
    p.add_argument("--lora", action="store_true", help="train a LoRA adapter (r=8, alpha=32, dropout 0.05)")
    p.add_argument("--dry-run", action="store_true",
                   help="resolve the recipe, print the encoders it will use and the offline substitutions (and "
                   "write config.yaml when --out is given), then stop")


def describe_encoders(recipe) -> list[str]:
    """Lines naming the encoders the recipe's rewards will load and any offline substitution."""
    enc = recipe.encoders or {}
    used, subs = enc.get("used") or [], enc.get("substitutions") or []
    lines = [f"encoders of recipe {recipe.name} (substitute: {enc.get('substitute', 'auto')}):"]
    if not used:
        lines.append("  none (no embedding or BERTScore reward)")
    swapped = {(s["reward"], s["option"]): s for s in subs}
    for u in used:
        model = "offline all-MiniLM-L6-v2" if u["model"] == "default" else u["model"]
        s = swapped.get((u["reward"], u["option"]))
        note = f"   <- offline substitute for the paper's {s['paper_model']}" if s else ""
        lines.append(f"  {u['reward']}.{u['option']} ({u['kind']}): {model}{note}")
    lines.append(f"  offline substitutions: {len(subs) or 'none'}")
    return lines


def run(args) -> int:
    import json
    import logging
    import sys
    from pathlib import Path

    import yaml

    from medrl.train.recipes import RecipeError, load_recipe

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    overrides = list(args.overrides)
    if args.max_steps is not None:
        overrides.append(f"grpo.max_steps={args.max_steps}")
        overrides.append(f"sft.max_steps={args.max_steps}")
    try:
        recipe = load_recipe(args.recipe, profile=args.profile, overrides=overrides)
    except RecipeError as exc:
        print(f"medrl train: {exc}", file=sys.stderr)
        return 2
    if not args.dry_run and (not args.model or not args.out):
        print("medrl train: --model and --out are required (unless --dry-run)", file=sys.stderr)
        return 2
    resolved = {"recipe": recipe.to_dict(), "run": {
        "model": args.model, "data": args.data, "data_dir": args.data_dir, "judge": args.judge,
        "judge_base_url": args.judge_base_url, "judge_images": bool(getattr(args, "judge_images", False)),
        "limit": args.limit, "lora": args.lora}}
    if args.out is None:  # --dry-run without a run folder: print only
        print("\n".join(describe_encoders(recipe)))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "config.yaml"
    if args.resume and cfg_path.is_file():
        before = yaml.safe_load(cfg_path.read_text())
        if before != json.loads(json.dumps(resolved)):
            logging.getLogger("medrl.train").warning(
                "%s differs from this invocation; resuming with the new settings", cfg_path)
    cfg_path.write_text(yaml.safe_dump(resolved, sort_keys=False))
    print(f"resolved config -> {cfg_path}")
    print("\n".join(describe_encoders(recipe)))
    if args.dry_run:
        return 0

    from medrl.train.pipeline import load_training_records, pipeline_stages, run_recipe
    from medrl.train.recipes import recipe_uses_judge

    from medrl.data import DataError

    report: dict = {}
    try:
        records = load_training_records(recipe, args.data, data_dir=args.data_dir, limit=args.limit, report=report)
    except DataError as exc:
        print(f"medrl train: {exc}", file=sys.stderr)
        return 2
    g = report.get("gold_reasoning") or {}
    print(f"records: {len(records)} (gold reasoning: {g.get('matched', 0)} matched, {g.get('unmatched', 0)} unmatched"
          f"{', unmatched dropped' if g.get('required') else ''})")
    judge = None
    # judged stages: VQA refinement, key-step extraction, the correctness check of ARMed's
    # knowledge-injection chains of thought
    judged_stages = {"refine", "key_steps", "knowledge_injection"}
    if recipe_uses_judge(recipe) or any(st["kind"] in judged_stages for st in pipeline_stages(recipe)):
        from medrl.judges import build_judge
        from medrl.judges.base import require_image_support
        from medrl.judges.factory import resolve_images

        # judge images: --judge-images, else the recipe's judge.images (true | false | auto)
        setting = True if getattr(args, "judge_images", False) else (recipe.judge or {}).get("images", False)
        side = getattr(args, "judge_image_size", None) or (recipe.judge or {}).get("image_max_side", 768)
        try:
            images = resolve_images(args.judge, setting)
            judge = build_judge(args.judge, base_url=args.judge_base_url, cache_path=args.judge_cache,
                                images=images, image_max_side=side)
            if images:
                require_image_support(judge)  # fails here, not on every request
        except (ValueError, RuntimeError) as exc:
            print(f"medrl train: {exc}", file=sys.stderr)
            return 2
        if images:
            print(f"judge images: on (longest side {side} px, JPEG)")
    final = run_recipe(recipe, args.model, records, out, judge=judge, resume=args.resume,
                       lora=True if args.lora else None)
    print(f"final model -> {final}")
    return 0

