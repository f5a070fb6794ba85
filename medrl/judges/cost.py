"""What the judge costs: tokens per call, money per step, epoch and run, savings, budgets.

Tokens come from the API's ``usage`` field of every reply (:class:`~medrl.judges.base.JudgeStats`
``input_tokens`` / ``output_tokens``, retries included); the offline reference judge sends
nothing and reports zero. A cache hit or a merged in-flight duplicate adds what its original
request cost to ``saved_input_tokens`` / ``saved_output_tokens`` (the cache stores each reply's
tokens). Money needs a price per model: the recipe's ``judge.price_in_per_mtok`` and
``judge.price_out_per_mtok`` (US dollars per million input / output tokens); left empty (the
default) the cost is unknown (None) and only tokens are counted - medrl ships no price list,
prices change.

Training: :class:`JudgeCostCallback` (attached by :class:`medrl.train.trainer.MedGRPOTrainer` when
it has a judge) logs per optimizer step ``judge/requests`` (asked: sent + cache hits + merged),
``judge/input_tokens``, ``judge/output_tokens``, ``judge/saved_tokens``, ``judge/cost_usd`` and
``judge/saved_cost_usd`` (when priced), and the run totals ``judge/total_tokens`` /
``judge/total_cost_usd``, into TensorBoard and ``metrics.jsonl``; writes per-epoch and run
totals to ``<run>/judge_cost.json``; and with a budget (``medrl train --judge-budget "2M tokens"``
or ``"$5"``) saves a checkpoint and stops once the run has spent it (checked after each step, so
a run overshoots by at most one step). The budget counts what this invocation spent; a resumed
run starts counting again.

``medrl train --dry-run`` prints :func:`estimate_judge_cost`: judge requests, tokens and cost
for the whole run from the data size, G, epochs (or max_steps) and the recipe's judged rewards.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from transformers import TrainerCallback

COST_FILE = "judge_cost.json"
COUNTERS = ("calls", "cache_hits", "deduplicated", "retries", "failures", "input_tokens", "output_tokens",
            "saved_input_tokens", "saved_output_tokens")


@dataclass(frozen=True)
class Price:
    """US dollars per million input / output tokens; None = unknown."""

    in_per_mtok: float | None = None
    out_per_mtok: float | None = None

    @property
    def known(self) -> bool:
        return self.in_per_mtok is not None and self.out_per_mtok is not None

    def cost(self, input_tokens: float, output_tokens: float) -> float | None:
        if not self.known:
            return None
        return (input_tokens * self.in_per_mtok + output_tokens * self.out_per_mtok) / 1e6


def judge_price(section: dict | None) -> Price:
    """The price from a recipe's ``judge`` section (``price_in_per_mtok``, ``price_out_per_mtok``);
    refuses negative or non-numeric values naming the key."""
    section = section or {}
    vals = []
    for key in ("price_in_per_mtok", "price_out_per_mtok"):
        v = section.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0):
            raise ValueError(f"judge.{key}: expected a non-negative number of US dollars per million tokens, got {v!r}")
        vals.append(None if v is None else float(v))
    return Price(*vals)


@dataclass(frozen=True)
class Budget:
    """Stop when the run has used this many judge tokens (input + output) or US dollars."""

    tokens: int | None = None
    dollars: float | None = None

    def reached(self, tokens: float, dollars: float | None) -> bool:
        if self.tokens is not None and tokens >= self.tokens:
            return True
        return self.dollars is not None and dollars is not None and dollars >= self.dollars

    def __str__(self) -> str:
        return f"{self.tokens:,} tokens" if self.tokens is not None else f"${self.dollars:g}"


_BUDGET = re.compile(r"^\s*(\$)?\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([kmb])?\s*(tokens?|tok|usd|\$|dollars?)?\s*$",
                     re.IGNORECASE)


def parse_budget(text: str | int | float | None) -> Budget | None:
    """``"2M tokens"``, ``"500k"``, ``"1500000"`` -> tokens; ``"$5"``, ``"5 USD"``, ``"2.5$"`` ->
    dollars; None/"" -> no budget. Anything else is a ValueError naming the value."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    m = _BUDGET.match(str(text))
    if not m:
        raise ValueError(f"--judge-budget {text!r}: expected tokens ('2M tokens', '500k') or US dollars ('$5', '5 USD')")
    dollar_sign, number, scale, unit = m.groups()
    value = float(number) * {"k": 1e3, "m": 1e6, "b": 1e9}.get((scale or "").lower(), 1)
    money = bool(dollar_sign) or (unit or "").lower() in ("usd", "$", "dollar", "dollars")
    if value <= 0:
        raise ValueError(f"--judge-budget {text!r}: must be positive")
    return Budget(dollars=value) if money else Budget(tokens=int(round(value)))


def configure_judge_cost(judge: Any, price: Price | dict | None = None, budget: Budget | str | None = None) -> Any:
    """Attach a price (``judge.cost_price``) and a budget (``judge.cost_budget``) to a judge; the
    trainer's :class:`JudgeCostCallback` reads them. Returns the judge."""
    if judge is None:
        return None
    judge.cost_price = price if isinstance(price, Price) else judge_price(price)
    judge.cost_budget = budget if isinstance(budget, Budget) or budget is None else parse_budget(budget)
    if judge.cost_budget is not None and judge.cost_budget.dollars is not None and not judge.cost_price.known:
        raise ValueError(f"--judge-budget {judge.cost_budget}: a money budget needs the judge's price "
                         "(judge.price_in_per_mtok and judge.price_out_per_mtok); or give the budget in tokens")
    return judge


def stats_snapshot(judge: Any) -> dict[str, int]:
    """The judge's counters (zeros for a judge without stats or without a field)."""
    stats = getattr(judge, "stats", None)
    d = stats.as_dict() if hasattr(stats, "as_dict") else (dict(vars(stats)) if stats is not None else {})
    return {k: int(d.get(k, 0) or 0) for k in COUNTERS}


def cost_fields(counts: dict[str, float], price: Price) -> dict[str, float | None]:
    """Derived fields of a counter delta or total: requests asked, tokens, saved tokens, cost,
    saved cost (None when unpriced)."""
    tin, tout = counts.get("input_tokens", 0), counts.get("output_tokens", 0)
    sin, sout = counts.get("saved_input_tokens", 0), counts.get("saved_output_tokens", 0)
    return {
        "requests": counts.get("calls", 0) + counts.get("cache_hits", 0) + counts.get("deduplicated", 0),
        "sent": counts.get("calls", 0), "cache_hits": counts.get("cache_hits", 0),
        "deduplicated": counts.get("deduplicated", 0), "failures": counts.get("failures", 0),
        "input_tokens": tin, "output_tokens": tout, "tokens": tin + tout,
        "saved_input_tokens": sin, "saved_output_tokens": sout, "saved_tokens": sin + sout,
        "cost_usd": price.cost(tin, tout), "saved_cost_usd": price.cost(sin, sout),
    }


def cost_summary(judge: Any, price: Price | None = None) -> dict:
    """A judge's totals so far with their cost (for eval reports and run summaries)."""
    price = price or getattr(judge, "cost_price", None) or Price()
    return {"judge": getattr(judge, "name", None), "price_in_per_mtok": price.in_per_mtok,
            "price_out_per_mtok": price.out_per_mtok, **cost_fields(stats_snapshot(judge), price)}


class JudgeCostCallback(TrainerCallback):
    """Per-step judge tokens and cost into the trainer's metrics, totals per epoch and run into
    ``<output_dir>/judge_cost.json``, and the budget stop. Counter deltas are summed over
    processes (every process has its own judge client)."""

    def __init__(self, trainer: Any, judge: Any, price: Price | None = None, budget: Budget | None = None):
        self.trainer, self.judge = trainer, judge
        self.price = price or getattr(judge, "cost_price", None) or Price()
        self.budget = budget if budget is not None else getattr(judge, "cost_budget", None)
        self.total = {k: 0 for k in COUNTERS}
        self.epochs: dict[int, dict[str, int]] = {}
        self.steps: list[dict] = []
        self.stopped_at: int | None = None
        self._seen = stats_snapshot(judge)

    def _delta(self) -> dict[str, int]:
        now = stats_snapshot(self.judge)
        delta = [now[k] - self._seen[k] for k in COUNTERS]
        self._seen = now
        acc = getattr(self.trainer, "accelerator", None)
        if acc is not None and acc.num_processes > 1:
            import torch

            delta = acc.reduce(torch.tensor(delta, dtype=torch.float64, device=acc.device), reduction="sum").tolist()
        return {k: int(v) for k, v in zip(COUNTERS, delta)}

    def on_train_begin(self, args, state, control, **kwargs):
        self._seen = stats_snapshot(self.judge)  # what was spent before training (probes, set-up) is not the run's

    def on_step_end(self, args, state, control, **kwargs):
        delta = self._delta()
        for k, v in delta.items():
            self.total[k] += v
        epoch = int(state.epoch or 0)
        ep = self.epochs.setdefault(epoch, {k: 0 for k in COUNTERS})
        for k, v in delta.items():
            ep[k] += v
        step = cost_fields(delta, self.price)
        total = cost_fields(self.total, self.price)
        self.steps.append({"step": state.global_step, **step})
        metrics = self.trainer._metrics["train"]
        for k in ("requests", "input_tokens", "output_tokens", "saved_tokens", "cost_usd", "saved_cost_usd"):
            if step[k] is not None:
                metrics[f"judge/{k}"].append(float(step[k]))
        metrics["judge/total_tokens"].append(float(total["tokens"]))
        if total["cost_usd"] is not None:
            metrics["judge/total_cost_usd"].append(float(total["cost_usd"]))
        if self.budget is not None and self.budget.reached(total["tokens"], total["cost_usd"]):
            import logging

            logging.getLogger(__name__).warning(
                "judge budget %s reached at step %d (%s tokens%s): saving a checkpoint and stopping; resume with "
                "--resume and a larger --judge-budget", self.budget, state.global_step, f"{total['tokens']:,}",
                "" if total["cost_usd"] is None else f", ${total['cost_usd']:.4f}")
            self.stopped_at = state.global_step
            control.should_save = True
            control.should_training_stop = True
        return control

    def summary(self) -> dict:
        return {"judge": getattr(self.judge, "name", None),
                "price_in_per_mtok": self.price.in_per_mtok, "price_out_per_mtok": self.price.out_per_mtok,
                "budget": None if self.budget is None else str(self.budget), "budget_stop_step": self.stopped_at,
                "run": cost_fields(self.total, self.price),
                "epochs": {str(e): cost_fields(c, self.price) for e, c in sorted(self.epochs.items())},
                "steps": self.steps}

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            path = Path(args.output_dir) / COST_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.summary(), indent=2))


def attach_judge_cost(trainer: Any, judge: Any) -> JudgeCostCallback | None:
    """Register a :class:`JudgeCostCallback` on ``trainer`` for ``judge`` (None: no judge)."""
    if judge is None or getattr(judge, "stats", None) is None:
        return None
    cb = JudgeCostCallback(trainer, judge)
    trainer.add_callback(cb)
    return cb


# ----------------------------------------------------------------------------- dry-run estimate

#: reward -> the judge task it asks once per rollout (besides the shared correctness decision)
REWARD_TASKS = {"mrpo_process": "verify_steps", "capo_consistency": "consistency"}
#: output tokens of one reply, by task (a YES/NO verdict; one JSON object per step)
OUTPUT_TOKENS = {"answer_correct": 2, "consistency": 2, "verify_steps_per_step": 16}
CHARS_PER_TOKEN = 4.0  # English text, for an estimate only


def _tokens(messages: list[dict]) -> float:
    chars = sum(len(m["content"]) if isinstance(m.get("content"), str)
                else sum(len(p.get("text", "")) for p in m.get("content") or []) for m in messages)
    return chars / CHARS_PER_TOKEN


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
    from medrl.parsing import completion_steps, parse_response
    from medrl.rewards import REWARDS

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
    factories = {nm: REWARDS.get(nm) for nm in names}
    mode = (recipe.algorithm or {}).get("correctness", "auto")
    reads_correct = any(getattr(f, "uses_correctness", False) for f in factories.values())
    corrupted = "capo_perception" in names and bool((recipe.algorithm or {}).get("capo"))
    recs = recs or []
    sample = recs[:: max(1, len(recs) // 64)][:64]  # spread over the data for the prompt lengths
    open_share = (sum(1 for r in recs if getattr(r, "open_ended", False)) / len(recs)) if recs else 1.0
    per_rollout: dict[str, float] = {}
    if reads_correct and mode in ("judge", "auto"):
        per_rollout["answer_correct"] = (1.0 if mode == "judge" else open_share) * (2 if corrupted else 1)
    for nm in names:
        if nm in REWARD_TASKS:
            per_rollout[REWARD_TASKS[nm]] = per_rollout.get(REWARD_TASKS[nm], 0) + 1
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
    tasks = ", ".join(f"{t} {int(round(v)):,}" for t, v in est["requests"].items())
    cost = "unknown (set judge.price_in_per_mtok / judge.price_out_per_mtok)" if est["cost_usd"] is None \
        else f"${est['cost_usd']:.2f}"
    return [f"judge estimate ({est['rollouts']:,} rollouts: {est['basis']}; before cache and guard savings):",
            f"  requests {est['requests_total']:,} ({tasks})",
            f"  tokens {est['tokens']:,} ({est['input_tokens']:,} in, {est['output_tokens']:,} out; ~4 characters a token)",
            f"  cost {cost}"]


__all__ = ["Budget", "COST_FILE", "JudgeCostCallback", "Price", "attach_judge_cost", "configure_judge_cost",
           "cost_fields", "cost_summary", "describe_estimate", "estimate_judge_cost", "judge_price", "parse_budget",
           "stats_snapshot"]
