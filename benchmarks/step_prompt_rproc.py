"""MRPO's process reward R_proc (Eq. 3, 5: the share of valid steps) under the two step prompts,
on phantom traces, against the exact verdicts of the phantom oracle.

No offline LLM follows a prompt; the reference judge applies the rules the prompt names
(``step_prompt="paper"``: MRPO App. H.2 as stated; ``"hardened"``: medrl's anti-gaming rules), so
this measures those rule sets, not an LLM reading the two prompts. The oracle judge knows each
phantom's parameters and marks steps by H.2's criteria (:mod:`medrl.judges.phantom_truth`).

Traces: the phantom warm-up traces (30 % open with a wrong first step carried into a wrong
answer), and two variants that only the gaming rules treat differently: the gold chain with a
restated answer appended ("The answer is X.") and the gold chain with its steps run together
into one sentence. Printed: mean R_proc per judge and trace kind, and per-step agreement of each
prompt's verdicts with the oracle.

    PYTHONPATH=. python benchmarks/step_prompt_rproc.py --n 200
"""

from __future__ import annotations

import argparse
import asyncio


def _verdicts(judge, rec, steps, **kw):
    v = asyncio.run(judge.verify_steps(rec.question, rec.answer, list(steps), gold_reasoning=rec.gold_reasoning,
                                       evidence=rec.evidence(), image=rec.images, **kw))
    return [bool(s.gold_alignment or s.answer_contribution) for s in v.value] if v.scored else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="phantom records")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="a few records (the test suite runs this; numbers mean nothing)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.n = 8

    from medrl.data.sources.phantom import phantom_records, warmup_traces
    from medrl.judges.oracle import OracleJudge, parse_oracle_spec
    from medrl.judges.reference import ReferenceJudge

    recs = phantom_records("test", n=args.n, seed=args.seed)
    traces = warmup_traces(recs, early_error_share=0.3, seed=args.seed)
    by_id = {r.id: r for r in recs}
    ref, oracle = ReferenceJudge(use_embeddings=False), OracleJudge(parse_oracle_spec("oracle"))
    kinds: dict[str, list] = {"warm-up traces": [], "gold + restated answer": [], "gold run together": []}
    for t in traces:
        rec = by_id[t.record_id]
        kinds["warm-up traces"].append((rec, list(t.steps)))
        if not t.early_error:
            kinds["gold + restated answer"].append((rec, [*t.steps, f"The answer is {rec.answer}."]))
            joined = ", and ".join(s.rstrip(".") for s in t.steps) + "."
            kinds["gold run together"].append((rec, [joined]))
    print(f"phantom records: {len(recs)}; R_proc = mean share of valid steps (MRPO Eq. 3, 5)")
    print(f"{'traces':26s} {'n':>4s} {'oracle':>8s} {'paper':>8s} {'hardened':>9s}  {'agree paper':>11s} "
          f"{'agree hardened':>14s}")
    for kind, items in kinds.items():
        rows = {"oracle": [], "paper": [], "hardened": []}
        agree = {"paper": [0, 0], "hardened": [0, 0]}
        for rec, steps in items:
            o = _verdicts(oracle, rec, steps)
            if o is None:
                continue
            rows["oracle"].append(sum(o) / len(o))
            for sp in ("paper", "hardened"):
                v = _verdicts(ref, rec, steps, step_prompt=sp)
                rows[sp].append(sum(v) / len(v))
                agree[sp][0] += sum(a == b for a, b in zip(v, o))
                agree[sp][1] += len(o)
        mean = {k: sum(v) / len(v) if v else float("nan") for k, v in rows.items()}
        print(f"{kind:26s} {len(rows['oracle']):4d} {mean['oracle']:8.3f} {mean['paper']:8.3f} {mean['hardened']:9.3f}  "
              f"{agree['paper'][0] / max(1, agree['paper'][1]):11.1%} "
              f"{agree['hardened'][0] / max(1, agree['hardened'][1]):14.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
