"""``medrl sft``: supervised warm-up / cold start / SFT baseline (TRL SFTTrainer) into a run folder."""

from __future__ import annotations

HELP = "supervised fine-tuning on <think>/<answer> targets (warm-up, cold start, SFT baseline)"

DESCRIPTION = """\
Fine-tune a vision-language policy on records formatted as the recipe's answer format:
the prompt is the chat prompt with the image and question, the target is
<think> gold (or evidence-based) reasoning </think><answer> reference answer </answer>.
Defaults come from the `sft` recipe (MRPO SFT baseline: LoRA r=8, alpha=32, dropout 0.05,
lr 2e-5, 3 epochs); the options below override them.

The run folder (--out) gets:
  sft_config.yaml      the resolved settings
  runs/                TensorBoard logs  (tensorboard --logdir OUT)
  metrics.jsonl        the same metrics as JSON lines
  checkpoint-N/        resumable checkpoints
  final/               the trained model (LoRA merged) and processor; `--model OUT` finds it; its
                       README.md is a model card ready for the Hub (medrl push OUT --repo ID)

Examples:
  medrl build-model default --out models/smol-llava
  medrl sft --model models/smol-llava --data vqa_rad --out runs/warmup --no-lora --epochs 1
  medrl sft --model tiny --data vqa_rad --out runs/try --max-steps 5 --limit 16
  medrl sft --model runs/warmup --data jsonl:curated.jsonl --out runs/cold --resume
  medrl train --recipe mrpo --model runs/warmup --data vqa_rad --out runs/mrpo
"""


def add_arguments(p) -> None:
    import argparse

    p.add_argument("--model", required=True,
                   help="policy: a model folder, a Hugging Face id in the local cache, 'tiny' or 'default'")
    p.add_argument("--data", default="vqa_rad",
                   help="data source: vqa_rad, vqa_rad:train, slake, jsonl:PATH, hf:PATH (default: vqa_rad)")
    p.add_argument("--data-dir", default=None,
                   help="folder holding vqa_rad/, slake/, ... (default: the first of $MEDRL_DATA_DIR, ./data, "
                   "../shared/data that holds the dataset)")
    p.add_argument("--out", required=True, help="run folder")
    from medrl.commands.run_folder import add_data_root_arg

    add_data_root_arg(p)
    p.add_argument("--recipe", default="sft", help="recipe whose `sft` section gives the defaults (default: sft)")
    p.add_argument("--style", default=None, choices=["think_answer", "modality_think_answer", "plain"],
                   help="prompt/answer format (default: the recipe's data.prompt_style)")
    p.add_argument("--epochs", type=float, default=None, help="number of epochs (recipe: 3)")
    p.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps (overrides --epochs)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (recipe: 2e-5)")
    p.add_argument("--batch-size", type=int, default=None, help="per-device batch size")
    p.add_argument("--grad-accum", type=int, default=None, help="gradient accumulation steps")
    p.add_argument("--lora", action=argparse.BooleanOptionalAction, default=None,
                   help="LoRA adapter (recipe default: on, r=8, alpha=32, dropout 0.05) or full fine-tuning")
    p.add_argument("--limit", type=int, default=None, help="use only the first N records")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="sft.KEY=VALUE",
                   help="override any SFT option (repeatable), e.g. sft.max_length=512 sft.save_steps=20")
    p.add_argument("--resume", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                   help="resume from the last checkpoint in --out (or the given checkpoint folder)")
    p.add_argument("--qlora", action="store_true",
                   help="QLoRA: load the policy in 4-bit (bitsandbytes through transformers' BitsAndBytesConfig) and "
                        "train LoRA adapters on it (turns LoRA on). Needs bitsandbytes with a CUDA GPU: "
                        "pip install 'medrl[qlora]'")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run Python code shipped inside the model folder or hub repo (off by default; only for a "
                        "model you trust)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the resolved options, check the optional packages they need, then stop")


def options_from_args(recipe_sft: dict, args) -> dict:
    """The recipe's ``sft`` section with the command-line shortcuts applied."""
    opts = dict(recipe_sft)
    if args.epochs is not None:
        opts["num_train_epochs"] = args.epochs
    if args.max_steps is not None:
        opts["max_steps"] = args.max_steps
    if args.lr is not None:
        opts["learning_rate"] = args.lr
    if args.batch_size is not None:
        opts["per_device_train_batch_size"] = args.batch_size
    if args.grad_accum is not None:
        opts["gradient_accumulation_steps"] = args.grad_accum
    if args.lora is False:
        opts["lora"] = None
    elif args.lora is True and not opts.get("lora"):
        opts["lora"] = True
    return opts


def run(args) -> int:
    """One writer per run folder, ``--allow-outside-data-root`` for the whole run
    (:func:`medrl.commands.run_folder.run_in_folder`)."""
    from medrl.commands.run_folder import run_in_folder

    return run_in_folder(args, "medrl sft", lambda: _run(args))


def _run(args) -> int:
    import logging
    import sys

    from medrl.train.recipes import RecipeError, load_recipe

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    overrides = []
    for o in args.overrides:
        overrides.append(o if o.startswith("sft.") else f"sft.{o}")
    if getattr(args, "qlora", False):
        overrides.append("model.load_in_4bit=true")
    try:
        recipe = load_recipe(args.recipe, overrides=overrides)
    except RecipeError as exc:
        print(f"medrl sft: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "trust_remote_code", False):  # the flag alone turns it on
        recipe.model["trust_remote_code"] = True
    options = options_from_args(recipe.sft, args)
    if (recipe.model or {}).get("load_in_4bit") and not options.get("lora"):
        options["lora"] = True  # 4-bit weights train only through adapters
    from medrl.train.backends import backend_problems
    from medrl.train.recipe_schema import range_warnings, section_range_problems
    from medrl.train.recipes import policy_load_options

    bad = section_range_problems("sft", options)  # --lr and the other shortcuts are checked like the recipe
    if bad:
        print("medrl sft: " + "; ".join(f"{k}: {m}" for k, m in bad), file=sys.stderr)
        return 2
    missing = backend_problems(recipe, sft_options=options)
    if missing:  # one line per optional package the settings need, before any model loads
        for line in missing:
            print(f"medrl sft: {line}", file=sys.stderr)
        return 2
    for line in range_warnings({}, options):
        print(f"medrl sft: warning: {line}", file=sys.stderr)
    style = args.style or recipe.data.get("prompt_style", "think_answer")
    from medrl.train.sft import resolve_options

    try:
        resolve_options(options)
    except ValueError as exc:
        print(f"medrl sft: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        import yaml

        print(yaml.safe_dump({"model": args.model, "data": args.data, "prompt_style": style, "options": options},
                             sort_keys=False))
        return 0

    from medrl.train.pipeline import finished_run, load_training_records
    from medrl.train.sft import train_sft

    if args.resume:
        import dataclasses

        done = finished_run(dataclasses.replace(recipe, sft=options, rewards=[]), args.out)
        if done is not None:
            print(f"medrl sft: {args.out} is finished (final model: {done}); nothing to resume. Use a new --out, "
                  "or a larger --max-steps to train further from its last checkpoint.")
            return 0

    records = load_training_records(recipe, args.data, data_dir=args.data_dir, limit=args.limit)
    print(f"{len(records)} records from {args.data}")
    from medrl.train.model_card import dataset_names, reproduce_command

    extra = [f"sft.{k}={v}" for k, v in (("num_train_epochs", args.epochs), ("max_steps", args.max_steps),
                                          ("learning_rate", args.lr), ("per_device_train_batch_size", args.batch_size),
                                          ("gradient_accumulation_steps", args.grad_accum)) if v is not None]
    if args.lora is False:
        extra.append("sft.lora=null")
    card = {"base_model": args.model, "datasets": dataset_names(args.data),
            "command": reproduce_command(args.recipe, args.model, args.data, command="sft",
                                         overrides=[*recipe.overrides, *extra], limit=args.limit,
                                         trust_remote_code=bool(getattr(args, "trust_remote_code", False)),
                                         out=args.out)}
    final = train_sft(args.model, records, args.out, prompt_style=style, options=options, resume=args.resume,
                      load=policy_load_options(recipe), card=card)
    print(f"final model -> {final}")
    return 0
