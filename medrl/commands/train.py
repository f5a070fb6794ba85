"""``medrl train``: run a recipe (GRPO family on TRL) into a run folder."""

from __future__ import annotations

HELP = "RL post-training with a recipe (grpo, gdpo, dapo, gspo, mrpo, armed, capo, medix_r1, stepgrpo, sft)"

DESCRIPTION = """\
Train a vision-language policy with one of the recipes in medrl/recipes (or your own YAML).

The run folder (--out) is a ledger. Rerunning the same command on it resumes from its newest
intact checkpoint ("resuming from checkpoint-N"), cutting every log back to that step; other
settings are refused with the list of differences (--overwrite starts afresh; a larger
--max-steps continues). Ctrl-C or SIGTERM saves a checkpoint at the next step boundary. A stop
by the judge budget, the hacking monitor or the judge circuit breaker saves a checkpoint and
exits with its own code, without a final model (docs/first-hour.md: exit codes, resume rules).

The run folder (--out) gets:
  config.yaml              the fully resolved recipe (profile and --set overrides applied)
  checkpoint-N/            TRL/transformers checkpoints (+ reward_state.json for ARMed, medrl_ledger.json:
                           log lengths, judge cost, monitor and judge-breaker state at that step and the
                           size of every file; written last: a save without it never finished)
  data_fingerprint.json    the training records' fingerprint: a rerun on edited data is refused
  judge_spend.jsonl        every judge request the run paid for (never cut back on resume)
  runs/                    TensorBoard logs  (tensorboard --logdir OUT)
  metrics.jsonl            the same metrics as JSON lines
  monitor_summary.json     reward-hacking monitor signals; hacking.jsonl: its alerts with examples
                           (medrl analyze hacking OUT)
  judge_cost.json          judge requests, tokens, cost and cache savings per step, epoch and run
  final/                   the trained model and processor, with a model card ready for the Hugging Face Hub
                           (README.md: base_model, datasets, key metrics, the command that reproduces the run;
                           medrl push OUT --repo ID uploads it)
  stages/NN_<name>/        one folder per stage for multi-stage recipes (armed, stepgrpo)

Examples:
  medrl train --recipe mrpo --model Qwen/Qwen2.5-VL-3B-Instruct --data vqa_rad --judge reference --out runs/mrpo
  medrl train --recipe mrpo --model runs/warmup ...                  # after an optional SFT warm-up
  medrl train --recipe mrpo --model tiny --data vqa_rad --profile cpu --out runs/try
  medrl train --recipe mrpo ... --out runs/mrpo                     # rerun: resumes from the last checkpoint
  medrl train --recipe medix_r1 ... --probe-data vqa_rad:test \
      --set grpo.metric_for_best_model=monitor/probe_accuracy        # keep the best checkpoint (<out>/best)
  medrl train --recipe gdpo ... --set grpo.learning_rate=2e-6 --set algorithm.mrpo.tau=0.5
  medrl train --recipe mrpo ... --set algorithm.mrpo.shaping=linear  # MRPO App. D.2 ablation
  medrl train --recipe armed --dry-run                               # rewards, batch, GRPOConfig, encoders; no training
  medrl train --recipe medix_r1 --dry-run --num-processes 4          # the batch TRL gets on 4 processes
  medrl train --recipe grpo --reward mypkg.rewards:my_reward=0.5 ... # add your own reward (TRL's signature)
  medrl train --recipe mrpo --model Qwen/Qwen2.5-VL-7B-Instruct --qlora ...  # QLoRA: 4-bit weights + LoRA
  medrl train --recipe mrpo ... --set "grpo.report_to=[wandb]"      # Weights & Biases (pip install 'medrl[wandb]')

Data: --data, else the first source of the recipe's data.prefer found in the data folders
(medix_r1 prefers its own training data, medix_rl:train), else vqa_rad; the choice is printed and
saved in config.yaml, so a rerun on another source is refused like any other setting.
--probe-data names held-out records (loaded with the recipe's filters) for the best checkpoint
(grpo.metric_for_best_model) and the hacking monitor's probe (monitor.probe_every).

Batch: a recipe's `batch` section states the paper's batch (prompts per update, updates per
rollout); per-process batch size and gradient accumulation are derived at start for the number of
processes (WORLD_SIZE), so `accelerate launch` on 1, 2 or 8 GPUs trains the same update.
KL: recipes use the papers' plain k3 estimator (grpo.use_bias_correction_kl: false).

Encoders: each recipe names its paper's models in its reward options (BiomedBERT/PubMedBERT for
BERTScore, BioBERT-STS and MedEmbed for cosines). `encoders.substitute` decides when the offline
all-MiniLM-L6-v2 replaces them: auto (default; only when HF_HUB_OFFLINE is set and the model is
not in the local cache), true (the cpu profile) or false. Substitutions are logged, printed and
stored in config.yaml (recipe.encoders).

Model: --lora trains LoRA adapters; --qlora (recipe key model.load_in_4bit) loads the policy in 4-bit
and trains LoRA adapters on it (QLoRA). Code shipped inside a model folder runs only with
--trust-remote-code. The preflight (and every start) loads the model's tokenizer, processor and
chat template, checks the weights against their headers and for NaN/inf, and names the file that
fails (exit 5). Optional packages the settings need (vLLM for grpo.use_vllm, DeepSpeed, a tracker
in grpo.report_to such as wandb, bitsandbytes for --qlora) are checked before any model loads.

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
    p.add_argument("--data", default=None,
                   help="data source: vqa_rad, vqa_rad:train, slake, jsonl:PATH, hf:PATH, or datasets joined "
                   "with '+' (pathvqa+slake+vqa_rad, ARMed's training union) (default: the first source of the "
                   "recipe's data.prefer found in the data folders - medix_r1 prefers medix_rl:train - else "
                   "vqa_rad; the choice is printed and saved in config.yaml)")
    p.add_argument("--probe-data", default=None, metavar="SPEC",
                   help="held-out records (a source like --data, e.g. vqa_rad:test; loaded with the recipe's "
                   "same filters) that score the policy during training: the best checkpoint "
                   "(grpo.metric_for_best_model -> <out>/best) and the hacking monitor's probe "
                   "(monitor.probe_every). Give a split the run does not train on")
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
                   help="override a recipe value (repeatable), e.g. grpo.beta=0.0; the value is YAML "
                   "(grpo.save_strategy=no is the string 'no': a field that takes text gets 'no' for YAML's false)")
    p.add_argument("--max-steps", type=int, default=None, help="shortcut for --set grpo.max_steps=N")
    from medrl.commands.run_folder import record_count

    p.add_argument("--limit", type=record_count, default=None, help="use only the first N records")
    p.add_argument("--resume", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                   help="resume from the last checkpoint in --out (or the given checkpoint folder)")
    p.add_argument("--lora", action="store_true", help="train a LoRA adapter (r=8, alpha=32, dropout 0.05)")
    p.add_argument("--qlora", action="store_true",
                   help="QLoRA: load the policy in 4-bit (bitsandbytes NF4 through transformers' BitsAndBytesConfig) "
                        "and train LoRA adapters on it (turns --lora on; recipe key model.load_in_4bit). Needs "
                        "bitsandbytes with a CUDA GPU: pip install 'medrl[qlora]'; the preflight says so in one line "
                        "where it cannot run")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run Python code shipped inside the model folder or hub repo (models whose classes are not "
                        "in transformers). Off by default, and no recipe, profile or --set can turn it on: use it "
                        "only for a model you trust")
    p.add_argument("--reward", dest="rewards", action="append", default=[], metavar="NAME[=WEIGHT]",
                   help="add a reward (repeatable): a registered name or your own function as "
                   "'mypkg.rewards:my_reward' or 'path/to/file.py:my_reward' with TRL's reward signature "
                   "fn(prompts, completions, **columns) -> list[float | None] (sync or async)")
    p.add_argument("--num-processes", type=int, default=None, metavar="N",
                   help="preview the recipe's batch for N processes (--dry-run; default: WORLD_SIZE, else 1)")
    p.add_argument("--dry-run", action="store_true",
                   help="preflight: check the recipe and its values, resolve custom rewards, load the data with "
                   "every filter (data.require_gold_reasoning included), probe the judge once (not from the cache); "
                   "print the reward table, the per-process batch for 1, 2 and 8 processes, the resolved "
                   "trl.GRPOConfig, the encoders and the judge estimate; write config.yaml when --out is given and "
                   "every check passed, then stop. Exit codes are training's (docs/first-hour.md)")
    p.add_argument("--overwrite", action="store_true",
                   help="start afresh in an --out that holds a run (its checkpoints, logs and final model are "
                   "deleted); without it, the same settings resume and different settings are refused")
    from medrl.train.callbacks import BREAKER_SHARE, BREAKER_STEPS

    p.add_argument("--judge-max-unscored", type=float, default=BREAKER_SHARE, metavar="SHARE",
                   help="judge circuit breaker: save and stop when more than this share of a step's judge requests "
                   "failed (unscored: the judge is dead, hangs or replies in prose) for --judge-max-unscored-steps "
                   f"steps in a row; rollouts that never reach the judge do not count (default {BREAKER_SHARE}; "
                   "1 = off)")
    p.add_argument("--judge-max-unscored-steps", type=int, default=BREAKER_STEPS, metavar="K",
                   help=f"consecutive steps for the judge circuit breaker (default {BREAKER_STEPS})")


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
        if f.name in ("output_dir", "logging_dir", "run_name") or (f.name not in always and _same(v, d)):
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
    (:func:`medrl.commands.run_folder.run_in_folder`); a failed start leaves the folder as it was."""
    from medrl.commands.run_folder import run_in_folder

    return run_in_folder(args, "medrl train", lambda: _run(args))


#: recipe keys that may change between a run and its continuation (a larger max_steps trains further)
RESUMABLE_CHANGES = ("recipe.grpo.max_steps", "recipe.sft.max_steps")


def _flat(d, prefix: str = "") -> dict:
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix] = d
    return out


def config_differences(saved: dict, now: dict, ignore=RESUMABLE_CHANGES) -> list[str]:
    """``key: saved -> now`` for every resolved setting that differs (dotted keys, sorted);
    the keys in ``ignore`` (max_steps) may change between a run and its continuation."""
    import json

    def prune(cfg: dict) -> dict:
        cfg = json.loads(json.dumps(cfg or {}, default=str))
        rec = cfg.get("recipe") if isinstance(cfg.get("recipe"), dict) else {}
        if isinstance(rec.get("overrides"), list):  # --max-steps N is kept in the overrides as well
            rec["overrides"] = [o for o in rec["overrides"]
                                if not any(str(o).startswith(k.split(".", 1)[1] + "=") for k in ignore)]
        return cfg

    def show(v) -> str:
        text = repr(v)
        return text if len(text) <= 70 else text[:67] + "..."

    a, b = _flat(prune(saved)), _flat(prune(now))
    return [f"{k}: {show(a.get(k, '(unset)'))} -> {show(b.get(k, '(unset)'))}" for k in sorted(set(a) | set(b))
            if k not in ignore and a.get(k) != b.get(k)]


def resolve_recipe_name(name: str) -> str:
    """A shipped recipe name in any case (``MRPO`` -> ``mrpo``); a path or an exact name as given.
    An unknown name raises :class:`~medrl.train.recipes.RecipeError` with "did you mean"."""
    from pathlib import Path

    from medrl.train.recipe_schema import did_you_mean
    from medrl.train.recipes import RecipeError, list_recipes

    p = Path(name)
    if p.suffix in (".yaml", ".yml") or p.exists() or "/" in name or "\\" in name:
        return name
    known = list_recipes()
    if name in known:
        return name
    lower = {k.lower(): k for k in known}
    if name.lower() in lower:
        return lower[name.lower()]
    raise RecipeError(f"unknown recipe {name!r}{did_you_mean(name.lower(), known)}; shipped recipes: "
                      f"{', '.join(known)} (or give a path to a YAML file)")


def _has_run(out) -> bool:
    """Whether ``out`` holds training output (a checkpoint, a log, a final model, stage folders)."""
    return out.is_dir() and (any(out.glob("checkpoint-*")) or any((out / n).exists() for n in (
        "metrics.jsonl", "final", "stages", "judge_cost.json", "monitor_summary.json")))


def _clear_run(out) -> None:
    """``--overwrite``: delete what a previous run wrote (the lock files stay)."""
    import shutil

    from medrl.common.runlock import HOLDER_NAME, LOCK_NAME

    for p in out.iterdir():
        if p.name in (LOCK_NAME, HOLDER_NAME):
            continue
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def _run(args) -> int:
    import logging
    import sys
    from pathlib import Path

    from medrl.common.exit_codes import Exit
    from medrl.train.recipes import RecipeError, load_recipe

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    overrides = list(args.overrides)
    if args.max_steps is not None:
        overrides.append(f"grpo.max_steps={args.max_steps}")
        overrides.append(f"sft.max_steps={args.max_steps}")
    if getattr(args, "qlora", False):
        overrides.append("model.load_in_4bit=true")
    try:
        recipe = load_recipe(resolve_recipe_name(args.recipe), profile=args.profile, overrides=overrides,
                             num_processes=getattr(args, "num_processes", None),
                             rewards=getattr(args, "rewards", []))
    except RecipeError as exc:
        print(f"medrl train: {exc}", file=sys.stderr)
        return int(Exit.USAGE)
    if getattr(args, "trust_remote_code", False):  # the flag alone turns it on (the schema refuses it elsewhere)
        recipe.model["trust_remote_code"] = True
    from medrl.train.backends import backend_problems
    from medrl.train.recipe_schema import range_warnings

    problems = trainer_range_problems(recipe)
    if problems:  # refused here, not by a traceback after the model has loaded
        print(f"medrl train: {recipe.source}: " + "; ".join(problems), file=sys.stderr)
        if args.dry_run:
            print(f"preflight: FAILED (exit {int(Exit.USAGE)})", file=sys.stderr)
        return int(Exit.USAGE)
    missing = backend_problems(recipe)
    if missing:  # an optional package the settings need: one line each, before any model loads
        for line in missing:
            print(f"medrl train: {line}", file=sys.stderr)
        if args.dry_run:
            print(f"preflight: FAILED (exit {int(Exit.USAGE)})", file=sys.stderr)
        return int(Exit.USAGE)
    for line in range_warnings(recipe.grpo if recipe.rewards else {}, recipe.sft):
        print(f"medrl train: warning: {line}", file=sys.stderr)
    if not args.dry_run and (not args.model or not args.out):
        print("medrl train: --model and --out are required (unless --dry-run)", file=sys.stderr)
        return int(Exit.USAGE)
    from medrl.judges.cost import parse_budget

    try:  # judge cost accounting (medrl.judges.cost): refuse a malformed budget before any work
        parse_budget(getattr(args, "judge_budget", None))
        _breaker_settings(args)
    except ValueError as exc:
        print(f"medrl train: {exc}", file=sys.stderr)
        return int(Exit.USAGE)
    from medrl.common.urls import redact_url
    from medrl.train.pipeline import training_source

    # --data, else the recipe's preferred source when present (printed); saved and checked on resume
    args.data = training_source(recipe, args.data, args.data_dir)
    resolved = {"recipe": recipe.to_dict(), "run": {
        "model": args.model, "data": args.data, "probe_data": getattr(args, "probe_data", None),
        "data_dir": args.data_dir, "judge": args.judge,
        "judge_base_url": redact_url(args.judge_base_url), "judge_images": bool(getattr(args, "judge_images", False)),
        "limit": args.limit, "lora": args.lora}}
    if args.dry_run:
        return preflight(args, recipe, resolved)
    out = Path(args.out)
    if args.resume and out.is_dir():
        done = _finished(recipe, out)
        if done is not None:
            print(f"medrl train: {args.out} is finished (final model: {done}); nothing to resume. Use a new --out, "
                  "or a larger --max-steps to train further from its last checkpoint.")
            return int(Exit.OK)
    decision = _ledger(args, recipe, resolved, out)
    if isinstance(decision, int):
        return decision
    resume = decision
    return _train(args, recipe, resolved, out, resume)


def _ledger(args, recipe, resolved: dict, out):
    """What to do with the run folder: an exit code (refused, or already finished), or the
    ``resume`` argument for training (a checkpoint path, True for multi-stage recipes, None)."""
    import json
    import sys
    from pathlib import Path

    from medrl.common import strict_yaml
    from medrl.common.exit_codes import Exit

    cfg_path = out / "config.yaml"
    if args.overwrite and _has_run(out):
        print(f"medrl train: --overwrite: deleting the run in {out} and starting afresh")
        _clear_run(out)
        return None
    if cfg_path.is_file() and _has_run(out):
        saved = strict_yaml.load_file(cfg_path, mapping=True) or {}  # unreadable, tagged, an alias bomb: one line, exit 2
        diffs = config_differences(saved, json.loads(json.dumps(resolved)))
        if diffs:
            print(f"medrl train: {out} holds a run with other settings; refusing to mix them (its checkpoints, "
                  "config.yaml and logs would describe two runs):\n  " + "\n  ".join(diffs)
                  + "\nRerun with the saved settings to continue it, use another --out, or pass --overwrite to "
                  "start afresh here.", file=sys.stderr)
            return int(Exit.USAGE)
        done = _finished(recipe, out)
        if done is not None:
            print(f"medrl train: {out} is finished with these settings (final model: {done}); nothing to do. Use "
                  "a new --out, a larger --max-steps to train further, or --overwrite to train again.")
            return int(Exit.OK)
    elif _has_run(out) and not args.resume:
        print(f"medrl train: {out} holds training output but no config.yaml, so its settings are unknown; pass "
              "--resume to continue it anyway, --overwrite to start afresh, or use another --out.", file=sys.stderr)
        return int(Exit.USAGE)
    if isinstance(args.resume, str):
        return args.resume
    from medrl.train.checkpoints import intact_checkpoint
    from medrl.train.pipeline import pipeline_stages

    if pipeline_stages(recipe):
        return True if _has_run(out) else None  # every stage resumes its own newest intact checkpoint
    ckpt = intact_checkpoint(out)
    if ckpt is not None:
        print(f"medrl train: resuming from {Path(ckpt).name} in {out}")
    elif _has_run(out):
        print(f"medrl train: {out} has no intact checkpoint yet; starting from step 0 (its logs are reset)")
    return ckpt


#: seeds the trainer hands to numpy / torch: numpy takes 0 .. 2**32 - 1 and nothing else
SEED_KEYS = ("grpo.seed", "grpo.data_seed", "sft.seed", "sft.data_seed")


def trainer_range_problems(recipe) -> list[str]:
    """Values the recipe schema lets through but the trainer rejects after the model has loaded
    (a seed numpy refuses): one line each, naming the key and the --set it came from."""
    problems = []
    for dotted in SEED_KEYS:
        section, key = dotted.split(".")
        value = (getattr(recipe, section, None) or {}).get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2 ** 32 - 1:
            origin = next((o for o in recipe.overrides if str(o).split("=", 1)[0].strip() == dotted), None)
            problems.append(f"{dotted}: {value!r} is not a seed the trainer takes (a whole number from 0 to "
                            f"4294967295 = 2**32 - 1){f' (from --set {origin})' if origin else ''}")
    return problems


def _finished(recipe, out):
    """The final model of a finished run in ``out`` (None: not finished). A single-stage run whose
    ``final/`` was cut short while it was saved (a full disk, a kill) is not finished: that folder
    is moved aside to ``damaged-final`` (named, with what is wrong) and the run writes it again
    from its last checkpoint."""
    import os

    from medrl.train.checkpoints import DAMAGED_PREFIX, model_folder_problem
    from medrl.train.pipeline import finished_run, pipeline_stages

    done = finished_run(recipe, out)
    if done is None or pipeline_stages(recipe):
        return done
    why = model_folder_problem(done)
    if why is None:
        return done
    dest, n = out / f"{DAMAGED_PREFIX}final", 1
    while dest.exists():
        n += 1
        dest = out / f"{DAMAGED_PREFIX}{n}-final"
    os.replace(done, dest)
    print(f"medrl train: {done} is damaged ({why}); moved it aside to {dest.name}: the run writes its final model "
          "again from its last checkpoint")
    return None


def _breaker_settings(args) -> tuple[float, int]:
    """``(--judge-max-unscored, --judge-max-unscored-steps)``, checked (ValueError naming the option)."""
    from medrl.train.callbacks import BREAKER_SHARE, BREAKER_STEPS

    share = getattr(args, "judge_max_unscored", None)
    steps = getattr(args, "judge_max_unscored_steps", None)
    share = float(BREAKER_SHARE if share is None else share)
    steps = int(BREAKER_STEPS if steps is None else steps)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"--judge-max-unscored {share}: expected a share between 0 and 1 (1 = breaker off)")
    if steps < 1:
        raise ValueError(f"--judge-max-unscored-steps {steps}: expected at least 1")
    return share, steps


def _build_judge(args, recipe, *, probe: bool = False):
    """The run's judge (or None when no reward and no stage asks one), with images, limits, price
    and budget; raises ValueError/RuntimeError with a message for the user. ``probe``: for the
    preflight, with an in-memory cache (its request must reach the endpoint)."""
    from medrl.train.pipeline import stages_use_judge
    from medrl.train.recipes import recipe_uses_judge

    if not (recipe_uses_judge(recipe) or stages_use_judge(recipe)):
        return None, False, None
    from medrl.judges import build_judge
    from medrl.judges.base import require_image_support
    from medrl.judges.factory import resolve_images

    # judge images: --judge-images, else the recipe's judge.images (true | false | auto)
    setting = True if getattr(args, "judge_images", False) else (recipe.judge or {}).get("images", False)
    side = getattr(args, "judge_image_size", None) or (recipe.judge or {}).get("image_max_side", 768)
    images = resolve_images(args.judge, setting)
    limits = {k: v for k, v in (("timeout", getattr(args, "judge_timeout", None)),
                                ("retry_budget", getattr(args, "judge_retry_budget", None)))
              if v is not None and str(args.judge).startswith("openai")}
    judge = build_judge(args.judge, base_url=args.judge_base_url,
                        cache_path=":memory:" if probe else args.judge_cache,
                        images=images, image_max_side=side, **limits)
    if images:
        require_image_support(judge)  # fails here, not on every request
    from medrl.judges.cost import configure_judge_cost

    configure_judge_cost(judge, recipe.judge, getattr(args, "judge_budget", None))
    return judge, images, side


def _load_probe_records(args, recipe, train_records) -> list | None:
    """``--probe-data``: held-out records, loaded as the training data is (the recipe's filters);
    None without the option. Raises :class:`~medrl.data.DataError` when none is left; warns when
    they share record ids with the training data (a probe on training records measures recall)."""
    import sys

    from medrl.data import DataError
    from medrl.train.pipeline import load_training_records

    spec = getattr(args, "probe_data", None)
    if not spec:
        return None
    probe = load_training_records(recipe, spec, data_dir=args.data_dir, report={})
    if not probe:
        raise DataError(f"--probe-data {spec}: no records left after the recipe's filters (data: {dict(recipe.data)})")
    seen = {getattr(r, "id", None) for r in train_records}
    shared = sum(1 for r in probe if getattr(r, "id", None) in seen)
    print(f"probe records: {len(probe)} from {spec}" + (f" ({shared} also in the training data)" if shared else ""))
    if shared:
        print(f"medrl train: warning: {shared} of {len(probe)} --probe-data records are training records too; "
              "give a held-out split (e.g. vqa_rad:test)", file=sys.stderr)
    return probe


def _data_error(exc) -> str:
    """A data error's message with hints only for options ``medrl train`` has."""
    from medrl.common.exit_codes import command_hint

    return command_hint(str(exc), "train")


def preflight(args, recipe, resolved: dict) -> int:
    """``medrl train --dry-run``: every check training makes before its first step, with training's
    exit codes (:mod:`medrl.common.exit_codes`); config.yaml is written (with --out) only when all pass."""
    import sys
    from pathlib import Path

    import yaml

    from medrl.common.exit_codes import Exit
    from medrl.train.batching import describe as describe_batch
    from medrl.train.recipes import RecipeError

    def fail(code, msg) -> int:
        print(f"medrl train: {msg}", file=sys.stderr)
        print(f"preflight: FAILED (exit {int(code)})", file=sys.stderr)
        return int(code)

    print("\n".join(describe_rewards(recipe)))
    print("\n".join(describe_batch(recipe, (1, 2, 8))))
    if recipe.rewards:
        try:
            print("\n".join(describe_grpo_config(recipe, args.out)))
        except (RecipeError, ValueError) as exc:
            return fail(Exit.USAGE, exc)
    try:  # custom rewards (mypkg.rewards:fn, ./file.py:fn) import and resolve, as at training start
        from medrl.common.registry import is_object_spec
        from medrl.train.recipes import custom_reward

        for r in recipe.rewards:
            if is_object_spec(r["name"]):
                custom_reward(r["name"], r.get("options") or {})
    except (RecipeError, ImportError, AttributeError, ValueError, TypeError) as exc:
        return fail(Exit.USAGE, exc)
    if args.model:
        from medrl.common.exit_codes import ModelNotFoundError
        from medrl.models.loading import resolve_model_path

        if args.model not in ("tiny", "default") and not str(args.model).startswith("tiny-"):
            from medrl.common.exit_codes import ModelDamagedError
            from medrl.models.integrity import check_model

            try:  # what the run loads: tokenizer, processor, chat template, weights (headers, finite)
                check_model(resolve_model_path(args.model), given=args.model,
                            trust_remote_code=bool((recipe.model or {}).get("trust_remote_code")))
            except (ModelNotFoundError, ModelDamagedError) as exc:
                return fail(Exit.MODEL, exc)
            print(f"model {args.model}: tokenizer, processor, chat template and weights load (weights finite)")
    from medrl.data import DataError
    from medrl.train.pipeline import load_training_records

    report: dict = {}
    try:
        records = load_training_records(recipe, args.data, data_dir=args.data_dir, limit=args.limit, report=report)
    except DataError as exc:
        return fail(Exit.DATA, _data_error(exc))
    if not records:
        return fail(Exit.DATA, f"no training records left from {args.data} after the recipe's filters "
                               f"(data: {dict(recipe.data)})")
    g = report.get("gold_reasoning") or {}
    print(f"records: {len(records)} (gold reasoning: {g.get('matched', 0)} matched, {g.get('unmatched', 0)} unmatched"
          f"{', unmatched dropped' if g.get('required') else ''})")
    try:
        _load_probe_records(args, recipe, records)
    except DataError as exc:
        return fail(Exit.DATA, _data_error(exc))
    try:
        judge, _, _ = _build_judge(args, recipe, probe=True)
    except (ValueError, RuntimeError) as exc:
        return fail(Exit.USAGE, exc)
    if judge is not None:
        code = _probe_judge(judge, records)
        if code:
            print(f"preflight: FAILED (exit {code})", file=sys.stderr)
            return code
        try:  # judge requests, tokens, cost (an estimate; never a reason to fail the preflight)
            from medrl.train.cost_estimate import describe_estimate, estimate_judge_cost

            est = estimate_judge_cost(recipe, records, num_processes=getattr(args, "num_processes", None) or 1)
            print("\n".join(describe_estimate(est)))
        except Exception as exc:  # noqa: BLE001 - custom rewards and new recipes the estimate does not know
            print(f"judge estimate: skipped ({type(exc).__name__}: {exc})")
    print("\n".join(describe_encoders(recipe)))
    if args.out is not None:
        out = Path(args.out)
        cfg_path = out / "config.yaml"
        if _has_run(out):
            import json

            from medrl.data.fingerprint import data_fingerprint, read_fingerprint

            from medrl.common import strict_yaml

            saved = strict_yaml.load_file(cfg_path, mapping=True) if cfg_path.is_file() else {}
            diffs = config_differences(saved or {}, json.loads(json.dumps(resolved)))
            if diffs and not args.overwrite:
                return fail(Exit.USAGE, f"{out} holds a run with other settings:\n  " + "\n  ".join(diffs)
                            + "\n(training there would be refused; use another --out or --overwrite)")
            changed = _data_changed(out, read_fingerprint(out), data_fingerprint(records, source=args.data))
            if changed and not args.overwrite:
                return fail(Exit.DATA, changed + " (training there would be refused)")
            print(f"run folder {out}: holds a run with these settings; training would resume it")
        else:
            out.mkdir(parents=True, exist_ok=True)
            cfg_path.write_text(yaml.safe_dump(resolved, sort_keys=False))
            print(f"resolved config -> {cfg_path}")
    print("preflight: OK")
    return int(Exit.OK)


def _probe_judge(judge, records) -> int:
    """Ask the judge one real question (never from the cache: the preflight judge has an
    in-memory cache); a refused key exits 3, any other failure 9."""
    import asyncio
    import sys

    from medrl.common.exit_codes import Exit
    from medrl.judges.base import JudgeAuthError

    rec = records[0]
    # a consistency request always reaches the endpoint (an answer-correct request of the reference
    # against itself is decided locally, without a request)
    reasoning = f"The question asks: {rec.question} The findings support the answer {rec.answer}."
    try:
        verdict = asyncio.run(judge.consistency(rec.question, reasoning, str(rec.answer)))
    except JudgeAuthError as exc:
        print(f"medrl train: judge {getattr(judge, 'name', '?')}: {exc}", file=sys.stderr)
        return int(Exit.JUDGE_AUTH)
    except Exception as exc:  # noqa: BLE001 - any failure of the probe is the judge's
        print(f"medrl train: judge {getattr(judge, 'name', '?')} failed its probe: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return int(Exit.JUDGE)
    if not getattr(verdict, "scored", verdict.value is not None):
        why = getattr(verdict, "error", None) or getattr(verdict, "raw", None) or "unscored"
        print(f"medrl train: judge {getattr(judge, 'name', '?')} could not score its probe (a consistency check "
              f"of record {getattr(rec, 'id', '?')}'s reference answer): {why}", file=sys.stderr)
        return int(Exit.JUDGE)
    print(f"judge {getattr(judge, 'name', '?')}: probe answered ({verdict.value!r}; sent without the cache)")
    return 0


def _train(args, recipe, resolved: dict, out, resume) -> int:
    import signal
    import sys

    import yaml

    from medrl.data import DataError
    from medrl.common.exit_codes import Exit
    from medrl.train.callbacks import InterruptCallback, JudgeBreakerCallback, RunLedgerCallback, RunOutcome
    from medrl.train.pipeline import load_training_records, run_recipe

    report: dict = {}
    try:
        records = load_training_records(recipe, args.data, data_dir=args.data_dir, limit=args.limit, report=report)
    except DataError as exc:
        print(f"medrl train: {_data_error(exc)}", file=sys.stderr)
        return int(Exit.DATA)
    g = report.get("gold_reasoning") or {}
    print(f"records: {len(records)} (gold reasoning: {g.get('matched', 0)} matched, {g.get('unmatched', 0)} unmatched"
          f"{', unmatched dropped' if g.get('required') else ''})")
    try:
        probe_records = _load_probe_records(args, recipe, records)
    except DataError as exc:
        print(f"medrl train: {_data_error(exc)}", file=sys.stderr)
        return int(Exit.DATA)
    try:
        judge, images, side = _build_judge(args, recipe)
    except (ValueError, RuntimeError) as exc:
        print(f"medrl train: {exc}", file=sys.stderr)
        return int(Exit.USAGE)
    if images:
        print(f"judge images: on (longest side {side} px, JPEG)")
    from medrl.data.fingerprint import FINGERPRINT_FILE, data_fingerprint, read_fingerprint, write_fingerprint

    fingerprint = data_fingerprint(records, source=args.data)
    saved_fp = read_fingerprint(out)
    changed = _data_changed(out, saved_fp, fingerprint) if resume else None
    if changed:
        print(f"medrl train: {changed}", file=sys.stderr)
        return int(Exit.DATA)
    cfg_path = out / "config.yaml"
    out.mkdir(parents=True, exist_ok=True)
    cfg_before = cfg_path.read_text() if cfg_path.is_file() else None
    cfg_path.write_text(yaml.safe_dump(resolved, sort_keys=False))
    if saved_fp is None or not resume:  # pinned at the start; a resume keeps the run's own
        if resume:
            print(f"medrl train: warning: {out} holds no data fingerprint (a run of an older medrl); pinning the "
                  "data it trains on from now", file=sys.stderr)
        write_fingerprint(out, fingerprint)
    print(f"resolved config -> {cfg_path}")
    print("\n".join(describe_encoders(recipe)))

    outcome = RunOutcome()
    share, steps = _breaker_settings(args)
    cbs = [RunLedgerCallback(outcome), InterruptCallback(outcome),
           JudgeBreakerCallback(outcome, max_share=share, steps=steps)]
    previous = {}

    def on_signal(signum, frame):
        if outcome.signal is not None:  # the second one: stop now (the last checkpoint is kept)
            signal.signal(signum, previous.get(signum) or signal.SIG_DFL)
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            sys.exit(int(Exit.TERMINATED))
        outcome.signal = signum
        print(f"\nmedrl train: {signal.Signals(signum).name} received: saving a checkpoint after this step and "
              "stopping (send it again to stop at once)", file=sys.stderr, flush=True)

    import threading

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    import time

    started = time.time() - 1.0  # a final/ from an earlier, shorter run of this folder is not this run's
    try:
        from medrl.train.model_card import dataset_names, reproduce_command

        card = {"base_model": args.model, "datasets": dataset_names(args.data),  # the card of final/: for the Hub
                "command": reproduce_command(args.recipe, args.model, args.data, profile=args.profile,
                                             overrides=recipe.overrides, rewards=getattr(args, "rewards", []),
                                             limit=args.limit, lora=bool(args.lora), judge=args.judge,
                                             trust_remote_code=bool(getattr(args, "trust_remote_code", False)),
                                             out=out)}
        final = run_recipe(recipe, args.model, records, out, judge=judge, resume=resume,
                           lora=True if args.lora or (recipe.model or {}).get("load_in_4bit") else None,
                           callbacks=cbs, probe_records=probe_records, card=card)
    except BaseException as exc:
        import contextlib

        from medrl.common.exit_codes import write_failure

        if not outcome.started and not _has_run(out):  # a failed start leaves the folder as it was
            with contextlib.suppress(OSError):  # (a folder that cannot be written keeps what it has)
                if cfg_before is None:
                    cfg_path.unlink(missing_ok=True)
                else:
                    cfg_path.write_text(cfg_before)
                if saved_fp is None:
                    (out / FINGERPRINT_FILE).unlink(missing_ok=True)
                else:
                    write_fingerprint(out, saved_fp)
        # a full disk or a read-only folder under a library that names neither: one line naming the folder
        fault = write_failure(exc, out) if isinstance(exc, Exception) else None
        if fault is not None and fault is not exc:
            raise fault from exc
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if outcome.signal is not None and outcome.reason is None and not _final_exists(final, since=started):
        outcome.stop("sigterm" if outcome.signal == signal.SIGTERM else "sigint",
                     f"{signal.Signals(outcome.signal).name} received before training began")
    if outcome.reason is not None and not _final_exists(final, since=started):
        code = {"budget": Exit.BUDGET, "monitor": Exit.MONITOR, "judge": Exit.JUDGE,
                "sigint": Exit.INTERRUPTED, "sigterm": Exit.TERMINATED}[outcome.reason]
        saved = "A checkpoint is saved" if any(out.glob("checkpoint-*")) or any(out.glob("stages/*/checkpoint-*")) \
            else "No checkpoint was written yet"
        print(f"medrl train: stopped: {outcome.message}. {saved} in {out}; no final model was written. "
              f"Rerun the same command to continue{' (with a larger --judge-budget)' if outcome.reason == 'budget' else ''}"
              f" (exit {int(code)}).", file=sys.stderr)
        return int(code)
    if not _final_exists(final, since=started):
        print(f"medrl train: training stopped before its last step; no final model in {out}. Rerun the same "
              "command to continue.", file=sys.stderr)
        return int(Exit.FAILED)
    print(f"final model -> {final}")
    return int(Exit.OK)


def _data_changed(out, saved: dict | None, now: dict) -> str | None:
    """The message refusing to resume ``out`` on other data than it started with (None: same
    data, or no fingerprint saved to compare with)."""
    from medrl.data.fingerprint import describe_change

    if saved is None:
        return None
    change = describe_change(saved, now)
    if change is None:
        return None
    then = saved.get("source")
    source = now.get("source") if then in (None, now.get("source")) else f"{then} (now {now.get('source')})"
    return (f"the training data of {out} changed since the run started: {source}: {change}. One run folder trains on "
            "one dataset; restore the data as it was, use another --out, or pass --overwrite to start afresh here")


def _final_exists(p, since: float = 0.0) -> bool:
    """Whether training wrote its final model (a model or an adapter folder) at or after ``since``."""
    from pathlib import Path

    if p is None:
        return False
    files = [Path(p) / n for n in ("config.json", "adapter_config.json")]
    return any(f.is_file() and f.stat().st_mtime >= since for f in files)
