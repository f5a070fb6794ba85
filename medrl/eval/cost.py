"""The judge cost of an evaluation, estimated before it runs (``medrl eval --dry-run``).

Per output, the requests the chosen protocols ask (:func:`medrl.eval.protocols.row_tasks`), the
rubric grades asked of every output (``--rubric``) and one step verification (unless
``--no-steps``); every grade is asked ``judge_rounds`` times (MediX-R1's evaluation rounds, each
round one request whose conversation holds the earlier rounds: :func:`medrl.judges.prompts.reevaluate`).
Input tokens are the real judge prompts of the records, with the reference answer standing in for
the model's answer and, for step verification, three short steps; 4 characters a token. Guards,
exact matches and the cache make the real count lower: this is an upper bound on requests sent.
The accounting of what a run really spends is :mod:`medrl.judges.cost`.
"""

from __future__ import annotations

from typing import Any, Sequence

from medrl.judges.cost import Price

CHARS_PER_TOKEN = 4.0
#: output tokens of one reply: a YES/NO or O/X verdict, a {"score": n} object, one JSON object per step
OUTPUT_TOKENS = {"answer": 2, "grade": 8, "step": 16}
_STUB_STEPS = ["The image is a radiograph of the chest.", "A finding is seen in the region the question names.",
               "This finding leads to the answer."]


def message_tokens(messages: list[dict]) -> float:
    """Estimated tokens of chat messages (text parts only), at :data:`CHARS_PER_TOKEN`."""
    chars = sum(len(m["content"]) if isinstance(m.get("content"), str)
                else sum(len(p.get("text", "")) for p in m.get("content") or []) for m in messages)
    return chars / CHARS_PER_TOKEN


_tokens = message_tokens


def _rounds_tokens(messages: list[dict], reply: str, rounds: int) -> float:
    """Input tokens of ``rounds`` requests, each conversation holding the rounds before it."""
    from medrl.judges.prompts import reevaluate

    total = 0.0
    for _ in range(rounds):
        total += _tokens(messages)
        messages = reevaluate(messages, reply)
    return total


def estimate_eval_cost(rows: Sequence[dict], protocols: Sequence[str], *, rubrics: Sequence[str] = ("binary",),
                       verify_steps: bool = True, judge_rounds: int = 1, samples: int = 0,
                       price: Price | None = None) -> dict:
    """Requests, tokens and cost of judging ``rows`` (eval rows as :func:`medrl.eval.scoring.base_row`
    builds them, output empty). ``samples``: sampled outputs per record also judged (answers only)."""
    from medrl.eval.protocols import parse_protocols, row_tasks, step_prompt_for
    from medrl.judges import prompts

    protocols = parse_protocols(list(protocols)) if protocols else []
    rounds = max(1, int(judge_rounds))
    sp = step_prompt_for(protocols)
    requests: dict[str, float] = {}
    tin = tout = 0.0

    def add(task: str, n_req: float, t_in: float, t_out: float, copies: int = 1) -> None:
        nonlocal tin, tout
        requests[task] = requests.get(task, 0) + n_req * copies
        tin += t_in * copies
        tout += t_out * copies

    for r in rows:
        q, ref = str(r.get("question") or ""), str(r.get("reference") or "")
        need = row_tasks(r, protocols)
        grades = [x for x in ("binary", "report") if x in rubrics or f"grade_{x}" in need]
        per = 1 + int(samples)  # the greedy output and every sampled one
        for rubric in grades:
            msgs = prompts.grade(q, ref, ref, rubric)
            add(f"grade_{rubric}", rounds, _rounds_tokens(msgs, '{"score": 1}', rounds),
                rounds * OUTPUT_TOKENS["grade"], per)
        if "judge_answer" in need:
            add("answer_correct", 1, _tokens(prompts.answer_correct(q, ref, ref)), OUTPUT_TOKENS["answer"], per)
        if "judge_answer_h1" in need:
            add("answer_correct_h1", 1, _tokens(prompts.answer_correct(q, ref, ref, check="paper")),
                OUTPUT_TOKENS["answer"], per)
        if verify_steps:
            msgs = prompts.verify_steps(q, ref, _STUB_STEPS, r.get("gold_reasoning"), r.get("evidence"), sp)
            add("verify_steps", 1, _tokens(msgs), OUTPUT_TOKENS["step"] * len(_STUB_STEPS))
    price = price or Price()
    return {"outputs": len(rows) * (1 + int(samples)), "rounds": rounds, "step_prompt": sp,
            "requests": {k: int(round(v)) for k, v in requests.items()},
            "requests_total": int(round(sum(requests.values()))), "input_tokens": int(round(tin)),
            "output_tokens": int(round(tout)), "tokens": int(round(tin + tout)), "cost_usd": price.cost(tin, tout)}


def estimate_lines(head: str, est: dict, price_hint: str) -> list[str]:
    """The lines of a judge-cost estimate (this one and ``medrl train --dry-run``'s): ``head``,
    requests per task, tokens, cost (``price_hint`` says how to give prices when unknown)."""
    tasks = ", ".join(f"{t} {int(round(v)):,}" for t, v in est["requests"].items())
    cost = f"unknown ({price_hint})" if est["cost_usd"] is None else f"${est['cost_usd']:.2f}"
    return [head, f"  requests {est['requests_total']:,} ({tasks})",
            f"  tokens {est['tokens']:,} ({est['input_tokens']:,} in, {est['output_tokens']:,} out; "
            "~4 characters a token)", f"  cost {cost}"]


def describe_eval_cost(est: dict) -> list[str]:
    """Lines for ``medrl eval --dry-run``."""
    if not est["requests_total"]:
        return ["judge estimate: no judge request"]
    return estimate_lines(f"judge estimate ({est['outputs']:,} outputs; {est['rounds']} evaluation round(s) per "
                          f"grade; step prompt {est['step_prompt']}; before cache, guard and exact-match savings):",
                          est, "give --judge-price IN OUT, US dollars per million tokens")


__all__ = ["CHARS_PER_TOKEN", "describe_eval_cost", "estimate_eval_cost", "estimate_lines", "message_tokens"]
