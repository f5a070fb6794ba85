"""``medrl demo``: the main job - the whole pipeline offline on real VQA-RAD, resumable."""

from __future__ import annotations

HELP = "the main job: warm-up SFT, GRPO vs MRPO, evaluation and a report, offline on real VQA-RAD"

DESCRIPTION = """\
Run the whole medrl pipeline end to end, offline, on the real VQA-RAD data, and write one report
that shows what step-aware RL (MRPO) changes compared with GRPO. A small-scale demonstration:
a 143M-parameter policy trained for minutes on a CPU - not a reproduction of the papers' figures.

What runs (progress is shown for every stage):
  1. load the VQA-RAD open-ended train and test records (--data-dir, $MEDRL_DATA_DIR, ./data
     or ../shared/data; a message says where to get the data when it is absent)
  2. build the default policy: SmolLM2-135M-Instruct (offline GGUF) as the language model of a
     LLaVA-style VLM with a fresh SigLIP vision tower (cached in ~/.cache/medrl/models)
  3. warm-up SFT on <think>...</think><answer>...</answer> targets (full fine-tuning)
  4. GRPO and 5. MRPO from the warm-up model: same rewards (MRPO Eq. 2-5), seed, data order
     and budget; only the advantage differs (per sequence vs per token, MRPO Eq. 7)
  6-8. greedy evaluation of the warm-up, GRPO and MRPO models on the same test records:
     judged accuracy, HSS, step verification
  9. phantoms (known truth): GRPO vs MRPO over 2 seeds on synthetic images, each seed its own
     records and warm-up model, scored exactly by the oracle judge (early-failure share,
     accuracy, paired difference with its interval and tests; medrl bench effects,
     docs/effects.md)
 10. reasoning analysis: First Failure Point stages, FAR curves, paired GRPO-vs-MRPO table
 11. the report: accuracy and HSS with 95% CIs; "What MRPO changed": real rollouts with every
     token shaded by the advantage it got (GRPO and MRPO side by side), advantage by step
     position, paired statistics (McNemar, bootstrap CI) saying whether the accuracy difference
     is significant; FFP stage shares, FAR curves, reward and KL curves, example outputs with
     step verdicts, the judge and its measured agreement, the model size and the budget

How long (2 idle CPU cores; more when the machine is busy):
  medrl demo            under 20 minutes (24 SFT steps, 10 GRPO + 10 MRPO steps, 64 test records)
  medrl demo --quick    under 5 minutes  (8 SFT steps, 2 + 2 RL steps, 10 test records)
  The first run also builds the default policy (about a minute). On a machine that other jobs
  keep busy the demo uses one torch thread (see --threads) and takes longer.

Where the report lands:
  demo_out/full/report.html   (self-contained: open it in a browser)   and report.md
  demo_out/quick/report.html  with --quick
  The folder also keeps state.json (finished stages, wall times), sft/ grpo/ mrpo/ (checkpoints,
  metrics.jsonl, TensorBoard logs under runs/), eval/<model>/ and analysis/.

Interrupted? Rerun the same command: finished stages are skipped, training resumes from its last
checkpoint and evaluation from its last saved record. --overwrite starts over.

Examples:
  make demo                                         # set-up + this command (the README's main job)
  medrl demo --quick                                # the same pipeline, smaller
  medrl demo --judge openai:gpt-5-mini              # a real judge (needs OPENAI_API_KEY)
  medrl demo --judge openai:Qwen/Qwen2.5-7B-Instruct --judge-base-url http://localhost:8000/v1
  medrl demo --steps 50 --eval-limit 0 --out demo_out/longer     # 0 = all 200 test records

On a GPU with a real model and judge, run the stages yourself (see docs/demo.md):
  medrl sft   --model Qwen/Qwen2.5-VL-3B-Instruct --data vqa_rad --out runs/warmup
  medrl train --recipe grpo --model runs/warmup --data vqa_rad --judge openai:gpt-5-mini --out runs/grpo
  medrl train --recipe mrpo --model runs/warmup --data vqa_rad --judge openai:gpt-5-mini --out runs/mrpo \\
              --set grpo.use_vllm=true --set grpo.vllm_mode=colocate
  medrl eval  --model runs/mrpo --data vqa_rad:test --judge openai:gpt-5-mini --out evals/mrpo
  medrl analyze --compare evals/grpo evals/mrpo --out analysis/grpo_vs_mrpo
"""


def add_arguments(p) -> None:
    from medrl.commands.demo_pipeline.settings import QUICK as Q, DemoConfig

    D = DemoConfig()
    p.add_argument("--out", default=None,
                   help="output folder (default: demo_out/full, or demo_out/quick with --quick)")
    p.add_argument("--quick", action="store_true", help="smaller settings: under 5 minutes on 2 CPU cores")
    p.add_argument("--data-dir", default=None,
                   help="folder holding vqa_rad/ (default: $MEDRL_DATA_DIR, ./data, ../shared/data)")
    p.add_argument("--judge", default="reference",
                   help="'reference' (offline heuristic judge, default) or 'openai:<model>'")
    p.add_argument("--judge-base-url", default=None,
                   help="OpenAI-compatible endpoint of the judge (vLLM, `medrl serve-judge`, ...)")
    p.add_argument("--judge-api-key-env", default="OPENAI_API_KEY", help="env var holding the judge's API key")
    p.add_argument("--judge-images", action="store_true",
                   help="send each record's image to the judge (answer and step requests; needs an openai: judge "
                        "on a vision-language endpoint, checked at start)")
    p.add_argument("--judge-image-size", type=int, default=None, metavar="PX",
                   help="longest side of an image sent to the judge (default 768)")
    p.add_argument("--model", default="default",
                   help="base policy: 'default' (SmolLM2-135M LLaVA-style, built offline), 'tiny', or a model folder")
    p.add_argument("--seed", type=int, default=None, help="seed of SFT, GRPO and MRPO (default 0)")
    p.add_argument("--steps", type=int, default=None, help=f"RL steps of GRPO and of MRPO (default {D.rl_steps}; quick {Q['rl_steps']})")
    p.add_argument("--sft-steps", type=int, default=None, help=f"warm-up SFT steps (default {D.sft_steps}; quick {Q['sft_steps']})")
    p.add_argument("--generations", type=int, default=None, help=f"rollouts per prompt (default {D.num_generations})")
    p.add_argument("--max-completion-length", type=int, default=None,
                   help=f"max tokens per rollout (default {D.max_completion_length}; quick {Q['max_completion_length']})")
    p.add_argument("--rl-lr", type=float, default=None, help=f"RL learning rate (default {D.rl_lr:g})")
    p.add_argument("--eval-limit", type=int, default=None,
                   help=f"first N open-ended test records (default {D.eval_limit}; quick {Q['eval_limit']}; 0 = all 200)")
    p.add_argument("--eval-max-new-tokens", type=int, default=None, help=f"max tokens per eval output (default {D.eval_max_new_tokens}; quick {Q['eval_max_new_tokens']})")
    p.add_argument("--train-limit", type=int, default=None, help="use only the first N training records")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for torch (default: torch's choice, or 1 when a short probe finds one "
                        "thread faster because other jobs keep the cores busy)")
    p.add_argument("--overwrite", action="store_true", help="discard what --out holds and start over")


def run(args) -> int:
    import logging
    import os
    import sys

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from medrl.commands.demo_pipeline import DemoStateMismatch, make_config, run_demo
    from medrl.common.exit_codes import Exit
    from medrl.common.paths import DATA_HELP, data_root

    try:
        data_root(args.data_dir)
    except FileNotFoundError as exc:  # missing data: the table's data code, as train and audit-rewards
        print(f"medrl demo: {exc}", file=sys.stderr)
        return int(Exit.DATA)
    eval_limit = args.eval_limit
    config = make_config(
        args.quick, model=args.model, judge=args.judge, judge_base_url=args.judge_base_url, seed=args.seed,
        rl_steps=args.steps, sft_steps=args.sft_steps, num_generations=args.generations,
        max_completion_length=args.max_completion_length, rl_lr=args.rl_lr,
        eval_max_new_tokens=args.eval_max_new_tokens, train_limit=args.train_limit,
        judge_images=getattr(args, "judge_images", None) or None,
        judge_image_max_side=getattr(args, "judge_image_size", None),
    )
    if eval_limit is not None:
        config.eval_limit = eval_limit or None
    if config.judge_images:  # fail now, not after the warm-up SFT, when the judge cannot take images
        from medrl.judges import build_judge

        try:
            build_judge(config.judge, base_url=config.judge_base_url, api_key_env=args.judge_api_key_env,
                        images=True, image_max_side=config.judge_image_max_side)
        except ValueError as exc:
            print(f"medrl demo: {exc}", file=sys.stderr)
            return int(Exit.USAGE)
    out = args.out or ("demo_out/quick" if args.quick else "demo_out/full")
    threads = args.threads or auto_threads()
    if threads:
        import torch

        torch.set_num_threads(threads)
        print(f"medrl demo: using {threads} torch thread(s)"
              + ("" if args.threads else " (other jobs keep the cores busy: one thread measured faster; "
                                         "--threads N to change)"))
    try:
        run_demo(out, config, data_dir=args.data_dir, overwrite=args.overwrite,
                 judge_api_key_env=args.judge_api_key_env)
    except DemoStateMismatch as exc:
        print(f"medrl demo: {exc}", file=sys.stderr)
        return int(Exit.USAGE)
    except FileNotFoundError as exc:
        if "vqa_rad" in str(exc) or DATA_HELP in str(exc):
            print(f"medrl demo: {exc}", file=sys.stderr)
            return int(Exit.DATA)
        raise
    except KeyboardInterrupt:
        print(f"\nmedrl demo: interrupted; finished work is kept in {out}. Rerun the same command to "
              "resume.", file=sys.stderr)
        return int(Exit.INTERRUPTED)
    return int(Exit.OK)


def auto_threads() -> int | None:
    """1 when one torch thread is measurably faster than all cores right now, else None.

    Other jobs on the same cores make multi-threaded torch wait on busy cores (measured here:
    a 200-token forward pass of the default policy took 4.8 s with 2 threads and 1.4 s with 1 on
    a shared 2-core machine). A short matrix-multiply probe with both settings decides; it
    takes about half a second.
    """
    import os
    import time

    cores = os.cpu_count() or 1
    if cores < 2:
        return None
    import torch

    a = torch.randn(384, 384)

    def probe(n: int) -> float:
        torch.set_num_threads(n)
        torch.mm(a, a)  # warm-up
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(8):
                torch.mm(a, a)
            best = min(best, time.perf_counter() - t)
        return best

    default = torch.get_num_threads()
    many, one = probe(default), probe(1)
    torch.set_num_threads(default)
    return 1 if one < 0.9 * many else None
