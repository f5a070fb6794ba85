"""The training run's judge cost, estimated before it starts (``medrl train --dry-run``).

:func:`estimate_judge_cost` counts judge requests, tokens and cost for the whole run from the
data size, G, epochs (or ``max_steps``) and the recipe's judged rewards; which rewards ask the
judge, and for what task, is read from the reward registry (a factory's ``judge_task``), not
listed here. The accounting of what a run really spends is :mod:`medrl.judges.cost`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from medrl.eval.cost import CHARS_PER_TOKEN, estimate_lines, message_tokens as _tokens  # shared with eval's estimate
from medrl.judges.cost import Price, judge_price


def _factory(name: str) -> Any:
    from medrl.common.registry import is_object_spec
    from medrl.rewards import REWARDS

    return None if is_object_spec(name) else REWARDS.get(name)


def reward_judge_task(factory: Any) -> str | None:
    """The judge task a reward asks once per rollout (``verify_steps``, ``consistency``), from
    the factory's ``judge_task`` attribute; None for rewards that ask no judge of their own."""
    return getattr(factory, "judge_task", None)


#: output tokens of one reply, by task (a YES/NO verdict; one JSON object per step)
OUTPUT_TOKENS = {"answer_correct": 2, "consistency": 2, "verify_steps_per_step": 16}


def estimate_judge_cost(recipe: Any, records: Sequence | int, *, price: Price | None = None,
                        num_processes: int = 1) -> dict:
    """Judge requests, tokens and cost of training ``recipe`` on ``records`` (a list, or just
    their number: then tokens are per-request averages of a typical medical VQA prompt).

    Rollouts: ``max_steps x per_device_train_batch_size x gradient_accumulation_steps x
    num_processes`` when ``grpo.max_steps`` > 0, else ``records x num_generations x
    num_train_epochs``, once per RL stage. Per rollout: one ``verify_steps`` for
    ``mrpo_process``, one ``consistency`` for ``capo_consistency``, and one ``answer_correct``
    for the shared correctness decision when a reward reads it and ``algorithm.correctness`` is
    ``judge`` (every record) or ``auto`` (open-ended records), twice with CAPO's corrupted rollouts.
    Input tokens are the real judge prompts of the records with their reference reasoning as the
    rollout, at 4 characters a token; a run's cache hits, merged duplicates and guard refusals
    (answers the guard rejects are never sent) make the real count lower - the estimate is an
    upper bound on requests *sent*, and close to the requests *asked* (``judge/requests``).
    """
    from medrl.data.prompts import format_target
    from medrl.judges import prompts
    from medrl.answers.completion import completion_steps, parse_response

    grpo = dict(recipe.grpo or {})
    g = int(grpo.get("num_generations", 8))
    recs = None if isinstance(records, int) else list(records)
    n = records if isinstance(records, int) else len(recs)
    max_steps = int(grpo.get("max_steps", -1) or -1)
    if max_steps > 0:
        per_step = int(grpo.get("per_device_train_batch_size", 8)) * int(grpo.get("gradient_accumulation_steps", 1))
        rollouts = max_steps * per_step * num_processes
        basis = f"{max_steps} steps x {per_step} completions x {num_processes} process(es)"
    else:
        epochs = float(grpo.get("num_train_epochs", 1))
        rollouts = int(math.ceil(n * g * epochs))
        basis = f"{n} records x G={g} x {epochs:g} epoch(s)"
    rl_stages = max(1, sum(1 for st in (recipe.stages or []) if st.get("kind") == "rl")) if recipe.stages else 1
    rollouts *= rl_stages
    names = [r["name"] for r in recipe.rewards]
    factories = {nm: _factory(nm) for nm in names}
    mode = (recipe.algorithm or {}).get("correctness", "auto")
    reads_correct = any(getattr(f, "uses_correctness", False) for f in factories.values())
    from medrl.train.recipes import run_methods

    # a method fills the corrupted rollouts (MedBatch.corrupted_completions) and a reward reads their correctness
    corrupted = any("corrupted_completions" in m.fills for m in run_methods(recipe)) and any(
        getattr(f, "uses_corrupted_correctness", False) for f in factories.values())
    recs = recs or []
    sample = recs[:: max(1, len(recs) // 64)][:64]  # spread over the data for the prompt lengths
    open_share = (sum(1 for r in recs if getattr(r, "open_ended", False)) / len(recs)) if recs else 1.0
    per_rollout: dict[str, float] = {}
    if reads_correct and mode in ("judge", "auto"):
        per_rollout["answer_correct"] = (1.0 if mode == "judge" else open_share) * (2 if corrupted else 1)
    for f in factories.values():
        task = reward_judge_task(f)
        if task:
            per_rollout[task] = per_rollout.get(task, 0) + 1
    # tokens per request, from the judge prompts of sample records
    tin: dict[str, float] = {}
    tout: dict[str, float] = {}
    style = (recipe.data or {}).get("prompt_style", "think_answer")
    for task in per_rollout:
        ins, outs = [], []
        for r in (sample or [None]):
            q = getattr(r, "question", None) or "What abnormality is seen in the left lower lobe?"
            ref = getattr(r, "answer", None) or "pleural effusion"
            text = format_target(r, style) if r is not None else (
                "<think>This is a chest radiograph. The left costophrenic angle is blunted. "
                f"This suggests fluid.</think><answer>{ref}</answer>")
            p = parse_response(text)
            steps = [s.text for s in completion_steps(text)]
            if task == "answer_correct":
                msgs = prompts.answer_correct(q, str(ref), p.answer or str(ref))
                o = OUTPUT_TOKENS["answer_correct"]
            elif task == "consistency":
                msgs = prompts.consistency(q, p.reasoning or "", p.answer or "")
                o = OUTPUT_TOKENS["consistency"]
            else:
                msgs = prompts.verify_steps(q, str(ref), steps or ["(no steps)"], getattr(r, "gold_reasoning", None),
                                            None)
                o = OUTPUT_TOKENS["verify_steps_per_step"] * max(1, len(steps))
            ins.append(_tokens(msgs))
            outs.append(o)
        tin[task], tout[task] = sum(ins) / len(ins), sum(outs) / len(outs)
    requests = {t: rollouts * k for t, k in per_rollout.items()}
    input_tokens = sum(requests[t] * tin[t] for t in requests)
    output_tokens = sum(requests[t] * tout[t] for t in requests)
    price = price or judge_price(getattr(recipe, "judge", None))
    return {"rollouts": rollouts, "basis": basis, "rl_stages": rl_stages, "requests": requests,
            "requests_total": int(round(sum(requests.values()))), "input_tokens": int(round(input_tokens)),
            "output_tokens": int(round(output_tokens)), "tokens": int(round(input_tokens + output_tokens)),
            "cost_usd": price.cost(input_tokens, output_tokens), "open_share": open_share,
            "correctness": mode}


def describe_estimate(est: dict) -> list[str]:
    """Lines for ``medrl train --dry-run``."""
    if not est["requests_total"]:
        return ["judge estimate: no judged reward, no judge request"]
    return estimate_lines(f"judge estimate ({est['rollouts']:,} rollouts: {est['basis']}; before cache and guard "
                          "savings):", est, "set judge.price_in_per_mtok / judge.price_out_per_mtok")


__all__ = ["CHARS_PER_TOKEN", "OUTPUT_TOKENS", "describe_estimate", "estimate_judge_cost", "reward_judge_task"]
