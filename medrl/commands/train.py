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
  monitor_summary.json     reward-hacking monitor signals; hacking.jsonl: its alerts with examples
                           (medrl analyze hacking OUT)
  judge_cost.json          judge requests, tokens, cost and cache savings per step, epoch and run
  final/                   the trained model and processor
  stages/NN_<name>/        one folder per stage for multi-stage recipes (armed, stepgrpo)

Examples:
  medrl train --recipe mrpo --model Qwen/Qwen2.5-VL-3B-Instruct --data vqa_rad --judge reference --out runs/mrpo
  medrl train --recipe mrpo --model runs/warmup ...                  # after an optional SFT warm-up
  medrl train --recipe mrpo --model tiny --data vqa_rad --profile cpu --out runs/try
  medrl train --recipe mrpo ... --out runs/mrpo --resume            # continue from the last checkpoint
  medrl train --recipe gdpo ... --set grpo.learning_rate=2e-6 --set algorithm.mrpo.tau=0.5
  medrl train --recipe mrpo ... --set algorithm.mrpo.shaping=linear  # MRPO App. D.2 ablation
  medrl train --recipe armed --dry-run                               # rewards, batch, GRPOConfig, encoders; no training
  medrl train --recipe medix_r1 --dry-run --num-processes 4          # the batch TRL gets on 4 processes
  medrl train --recipe grpo --reward mypkg.rewards:my_reward=0.5 ... # add your own reward (TRL's signature)

Batch: a recipe's `batch` section states the paper's batch (prompts per update, updates per
rollout); per-process batch size and gradient accumulation are derived at start for the number of
processes (WORLD_SIZE), so `accelerate launch` on 1, 2 or 8 GPUs trains the same update.
KL: recipes use the papers' plain k3 estimator (grpo.use_bias_correction_kl: false).

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
    p.add_argument("--data-dir", default=None,
                   help="folder holding vqa_rad/, slake/, ... (default: the first of $MEDRL_DATA_DIR, ./data, "
                   "../shared/data that holds the dataset)")
    p.add_argument("--judge", default="reference",
                   help="judge for judged rewards: 'reference' (offline) or 'openai:<model>' (default: reference)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible endpoint of the judge")
    p.add_argument("--judge-cache", default=None, help="SQLite cache file for judge replies")
    p.add_argument("--judge-timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds one judge request may take (openai: judges; default 60)")
    p.add_argument("--judge-retry-budget", type=float, default=None, metavar="SECONDS",
                   help="total seconds per judge request over all its retries (default: twice the timeout; "
                        "0 = no limit); past it the rollout is unscored (excluded), never 0 or 1")
    p.add_argument("--judge-images", action="store_true",
                   help="send each record's image to the judge with answer and step requests (an openai: judge "
                        "on a vision-language endpoint; checked at start). Recipe key: judge.images")
    p.add_argument("--judge-image-size", type=int, default=None, metavar="PX",
                   help="longest side of an image sent to the judge (default: the recipe's judge.image_max_side, 768)")
    p.add_argument("--judge-budget", default=None, metavar="AMOUNT",
                   help="stop cleanly (checkpoint saved) once the judge has used this many tokens ('2M tokens', "
                        "'500k') or US dollars ('$5'; needs judge.price_in_per_mtok / price_out_per_mtok)")
    p.add_argument("--out", default=None, help="run folder (required unless --dry-run)")
    from medrl.commands.run_folder import add_data_root_arg

    add_data_root_arg(p)
    p.add_argument("--profile", default=None, help="profile overlay, e.g. 'cpu' (small, runs in minutes on a CPU)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a recipe value (repeatable), e.g. grpo.beta=0.0; the value is YAML, so "
                   "quote strings YAML reads as booleans: grpo.save_strategy='no'")
    p.add_argument("--max-steps", type=int, default=None, help="shortcut for --set grpo.max_steps=N")
    p.add_argument("--limit", type=int, default=None, help="use only the first N records")
    p.add_argument("--resume", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                   help="resume from the last checkpoint in --out (or the given checkpoint folder)")
    p.add_argument("--lora", action="store_true", help="train a LoRA adapter (r=8, alpha=32, dropout 0.05)")
    p.add_argument("--reward", dest="rewards", action="append", default=[], metavar="NAME[=WEIGHT]",
                   help="add a reward (repeatable): a registered name or your own function as "
                   "'mypkg.rewards:my_reward' or 'path/to/file.py:my_reward' with TRL's reward signature "
                   "fn(prompts, completions, **columns) -> list[float | None] (sync or async)")
    p.add_argument("--num-processes", type=int, default=None, metavar="N",
                   help="preview the recipe's batch for N processes (--dry-run; default: WORLD_SIZE, else 1)")
    p.add_argument("--dry-run", action="store_true",
                   help="check the recipe, print the reward table, the per-process batch for 1, 2 and 8 processes, "
                   "the resolved trl.GRPOConfig and the encoders with any offline substitution (and write "
                   "config.yaml when --out is given), then stop")


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


def describe_rewards(recipe) -> list[str]:
    """The reward table: name, weight, options (what TRL will sum, in order)."""
    if not recipe.rewards:
        return ["rewards: none (an SFT recipe)"]
    width = max(len(r["name"]) for r in recipe.rewards)
    lines = [f"rewards of recipe {recipe.name} (weighted sum, in this order):"]
    for r in recipe.rewards:
        opts = ", ".join(f"{k}={v}" for k, v in (r.get("options") or {}).items())
        lines.append(f"  {r['name']:<{width}}  weight {float(r.get('weight', 1.0)):<8g} {opts}".rstrip())
    return lines


def describe_grpo_config(recipe, out) -> list[str]:
    """The resolved ``trl.GRPOConfig``: every field that differs from TRL's default, as TRL sees it."""
    import dataclasses
    import tempfile

    from trl import GRPOConfig

    from medrl.train.recipes import build_grpo_config

    import torch

    extra = {"report_to": recipe.grpo.get("report_to", [])}
    no_gpu = not torch.cuda.is_available() and "use_cpu" not in recipe.grpo
    if no_gpu:  # TRL refuses bf16 without a GPU; preview what a GPU machine gets, on this one
        extra["use_cpu"] = True
    with tempfile.TemporaryDirectory() as tmp:
        cfg = build_grpo_config(recipe, out or tmp, **extra)
        default = GRPOConfig(output_dir=str(out or tmp), report_to=[], use_cpu=True)  # builds on any machine
    always = {"num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
              "generation_batch_size", "beta", "use_bias_correction_kl", "loss_type", "learning_rate"}
    lines = ["trl.GRPOConfig (resolved; fields that differ from TRL's defaults, and the batch/KL fields"
             + ("; built with use_cpu=true: no GPU here" if no_gpu else "") + "):"]
    for f in dataclasses.fields(cfg):
        v, d = getattr(cfg, f.name, None), getattr(default, f.name, None)
        if f.name in ("output_dir", "logging_dir") or (f.name not in always and _same(v, d)):
            continue
        lines.append(f"  {f.name}: {_show(v)}")
    return lines


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - tensors, odd objects
        return repr(a) == repr(b)


def _show(v) -> str:
    return str(getattr(v, "value", v))


def run(args) -> int:
    """One writer per run folder, ``--allow-outside-data-root`` for the whole run
    (:func:`medrl.commands.run_folder.run_in_folder`)."""
    from medrl.commands.run_folder import run_in_folder

    return run_in_folder(args, "medrl train", lambda: _run(args))


def _run(args) -> int:
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
        recipe = load_recipe(args.recipe, profile=args.profile, overrides=overrides,
                             num_processes=getattr(args, "num_processes", None),
                             rewards=getattr(args, "rewards", []))
    except RecipeError as exc:
        print(f"medrl train: {exc}", file=sys.stderr)
        return 2
    if not args.dry_run and (not args.model or not args.out):
        print("medrl train: --model and --out are required (unless --dry-run)", file=sys.stderr)
        return 2
    from medrl.judges.cost import parse_budget

    try:  # judge cost accounting (medrl.judges.cost): refuse a malformed budget before any work
        parse_budget(getattr(args, "judge_budget", None))
    except ValueError as exc:
        print(f"medrl train: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        from medrl.train.batching import describe as describe_batch

        print("\n".join(describe_rewards(recipe)))
        print("\n".join(describe_batch(recipe, (1, 2, 8))))
        if recipe.rewards:
            try:
                print("\n".join(describe_grpo_config(recipe, args.out)))
            except RecipeError as exc:
                print(f"medrl train: {exc}", file=sys.stderr)
                return 2
        from medrl.train.recipes import recipe_uses_judge

        if recipe.rewards and recipe_uses_judge(recipe):  # judge requests, tokens, cost (medrl.judges.cost)
            from medrl.data import DataError
            from medrl.judges.cost import describe_estimate, estimate_judge_cost
            from medrl.train.pipeline import load_training_records

            try:
                recs = load_training_records(recipe, args.data, data_dir=args.data_dir, limit=args.limit)
                est = estimate_judge_cost(recipe, recs, num_processes=getattr(args, "num_processes", None) or 1)
                print("\n".join(describe_estimate(est)))
            except (DataError, ValueError) as exc:
                print(f"judge estimate: skipped ({exc})")
    if args.resume and args.out and not args.dry_run:
        from medrl.train.pipeline import finished_run

        done = finished_run(recipe, args.out)
        if done is not None:
            print(f"medrl train: {args.out} is finished (final model: {done}); nothing to resume. Use a new --out, "
                  "or a larger --max-steps to train further from its last checkpoint.")
            return 0
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
        from medrl.exit_codes import Exit

        print(f"medrl train: {exc}", file=sys.stderr)
        return int(Exit.DATA)
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
            limits = {k: v for k, v in (("timeout", getattr(args, "judge_timeout", None)),
                                        ("retry_budget", getattr(args, "judge_retry_budget", None)))
                      if v is not None and str(args.judge).startswith("openai")}
            judge = build_judge(args.judge, base_url=args.judge_base_url, cache_path=args.judge_cache,
                                images=images, image_max_side=side, **limits)
            if images:
                require_image_support(judge)  # fails here, not on every request
            from medrl.judges.cost import configure_judge_cost

            configure_judge_cost(judge, recipe.judge, getattr(args, "judge_budget", None))  # price, budget
        except (ValueError, RuntimeError) as exc:
            print(f"medrl train: {exc}", file=sys.stderr)
            return 2
        if images:
            print(f"judge images: on (longest side {side} px, JPEG)")
    final = run_recipe(recipe, args.model, records, out, judge=judge, resume=args.resume,
                       lora=True if args.lora else None)
    print(f"final model -> {final}")
    return 0

