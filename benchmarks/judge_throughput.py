"""Judge throughput: concurrency and caching against a local judge server with injected latency.

1. Calls per second of the OpenAI-compatible judge at concurrency 1 (one request at a time)
   and at concurrency 16, against `medrl serve-judge`'s reference backend with a fixed delay
   per request (default 50 ms, a stand-in for network + model time). Caches are off here.
2. The share of judge requests that cost nothing on a realistic GRPO workload: G rollouts per
   question whose short answers repeat (the reference answer in a few spellings, common wrong
   answers), over two epochs. Requests merged in flight (same batch) and cache hits (earlier
   batches) are counted separately.

Questions and answers are real VQA-RAD training pairs when the data folder is present, else a
small built-in list. Prints measured numbers and ratios; no pass/fail on time.

    .venv/bin/python benchmarks/judge_throughput.py [--latency-ms 50] [--requests 64] [--group 8] [--smoke]

``--smoke`` (5 ms latency, 8 requests, 4 questions x G=2): seconds; the test suite runs it so the
script cannot rot.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from medrl.judges import run_sync  # noqa: E402
from medrl.judges.openai_judge import OpenAIJudge  # noqa: E402
from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread  # noqa: E402

FALLBACK = [("What organ is shown?", "Lung"), ("Is there a fracture?", "No"), ("Which side is the lesion on?", "Left"),
            ("What imaging modality is this?", "CT"), ("Is the heart enlarged?", "Yes"), ("Where is the mass?", "Liver")]


def qa_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    try:
        from medrl.data import load_records

        recs = load_records("vqa_rad", split="train")
        rng = random.Random(seed)
        rng.shuffle(recs)
        return [(r.question, r.answer) for r in recs[:n]]
    except Exception as exc:  # noqa: BLE001 - the benchmark still runs without the data
        print(f"(VQA-RAD not available: {exc}; using built-in questions)")
        return [FALLBACK[i % len(FALLBACK)] for i in range(n)]


def rollout_answers(ref: str, pool: list[str], group: int, rng: random.Random) -> list[str]:
    """Short answers as a GRPO group repeats them: mostly the reference in a few spellings,
    sometimes a common wrong answer."""
    variants = [ref, ref.lower(), ref.lower() + ".", f"the {ref.lower()}"]
    return [rng.choice(variants) if rng.random() < 0.6 else rng.choice(pool) for _ in range(group)]


async def _run_all(judge: OpenAIJudge, items: list[tuple[str, str, str]]):
    return await asyncio.gather(*(judge.answer_correct(q, r, p) for q, r, p in items))


def throughput(url: str, concurrency: int, n: int) -> float:
    j = OpenAIJudge("medrl-reference", base_url=url, cache_path=":memory:", concurrency=concurrency, timeout=30)
    items = [(f"Question {i}: what is shown?", "Lung", f"lung finding number {i}") for i in range(n)]
    t = time.perf_counter()
    out = run_sync(_run_all(j, items))
    dt = time.perf_counter() - t
    assert all(v.scored for v in out), [v.error for v in out if not v.scored][:3]
    assert j.stats.calls == n
    j.close()
    return n / dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--requests", type=int, default=64, help="distinct requests for the throughput test")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--questions", type=int, default=32, help="questions per GRPO batch")
    ap.add_argument("--group", type=int, default=8, help="rollouts per question (G)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="a few requests at 5 ms (the test suite's check)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.latency_ms, args.requests, args.concurrency, args.questions, args.group = 5.0, 8, 4, 4, 2

    app = create_app(ReferenceBackend(use_embeddings=False), latency=args.latency_ms / 1000.0)
    with serve_in_thread(app) as url:
        print(f"judge server: reference backend, {args.latency_ms:g} ms injected latency per request")
        throughput(url, 4, 8)  # warm-up (imports, connections)
        serial = throughput(url, 1, args.requests)
        parallel = throughput(url, args.concurrency, args.requests)
        print(f"throughput, {args.requests} distinct requests:")
        print(f"  concurrency 1 : {serial:7.1f} calls/s")
        print(f"  concurrency {args.concurrency:<2}: {parallel:7.1f} calls/s")
        print(f"  ratio         : {parallel / serial:7.1f}x")

        rng = random.Random(args.seed)
        pairs = qa_pairs(args.questions, args.seed)
        pool = sorted({a for _, a in qa_pairs(200, args.seed + 1)} | {"yes", "no"})
        j = OpenAIJudge("medrl-reference", base_url=url, cache_path=":memory:", concurrency=args.concurrency)
        print(f"GRPO workload: {len(pairs)} questions x G={args.group} rollouts per batch, answer_correct per rollout")
        for epoch in (1, 2):
            before = j.stats.as_dict()
            items = [(q, r, p) for q, r in pairs for p in rollout_answers(r, pool, args.group, rng)]
            t = time.perf_counter()
            out = run_sync(_run_all(j, items))
            dt = time.perf_counter() - t
            d = {k: v - before[k] for k, v in j.stats.as_dict().items()}
            free = d["deduplicated"] + d["cache_hits"]
            print(f"  epoch {epoch}: {len(items)} requests -> {d['calls']} backend calls, {d['deduplicated']} merged in "
                  f"flight, {d['cache_hits']} cache hits; free share {free / len(items):.1%}; "
                  f"{dt:.2f}s; unscored {sum(not v.scored for v in out)}")
        s = j.stats
        total = s.calls + s.deduplicated + s.cache_hits
        print(f"  overall: {total} requests, {s.calls} calls -> {total / max(1, s.calls):.1f} requests per call; "
              f"tokens in/out {s.input_tokens}/{s.output_tokens} (whitespace words at the reference backend)")
        j.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
