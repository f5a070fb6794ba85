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
a run overshoots by at most one step). The budget counts what the whole run spent: the totals
are saved in every checkpoint and a resumed run continues them (rerun with a larger budget to
go on after a budget stop).

Spend is counted once and truly across a crash. Every request the run pays for is appended to
``<run>/judge_spend.jsonl`` as it is paid (:class:`SpendJournal`; never cut back on resume:
money spent stays spent), and each checkpoint's ledger records how long that journal was. A
resumed run replays the steps after its checkpoint; their requests hit the judge cache, but a
hit on a reply this run paid for after the checkpoint (in the attempt that crashed) is counted as
spent (``replayed``), once per payment, not as saved. So ``judge_cost.json``, the per-step
``judge/*`` logs and the budget of an interrupted and resumed run equal those of an
uninterrupted one.

``medrl train --dry-run`` prints the run's judge requests, tokens and cost
(:func:`medrl.train.cost_estimate.estimate_judge_cost`).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

COST_FILE = "judge_cost.json"
#: the run's append-only journal of paid judge requests (:class:`SpendJournal`)
SPEND_FILE = "judge_spend.jsonl"
COUNTERS = ("calls", "cache_hits", "deduplicated", "retries", "failures", "input_tokens", "output_tokens",
            "saved_input_tokens", "saved_output_tokens", "replayed")


class SpendJournal:
    """What a run paid its judge, request by request, kept across crashes.

    ``record(key, input_tokens, output_tokens)`` appends one JSON line (one ``write`` on a file
    opened for appending, so processes sharing the journal never interleave a line) as soon as a
    request is paid. Opened with ``since`` (the journal's length at the checkpoint a run resumes
    from), the rows after it - requests paid after the checkpoint by an attempt that then
    crashed - form a pool: ``claim(key)`` takes one row of that request from it, so the replayed
    step counts what was truly paid for it, once. Each process claims only the rows it wrote
    (``rank``). A torn last line (a kill mid-write) is skipped.
    """

    def __init__(self, path: str | os.PathLike, rank: int = 0, since: int = 0):
        self.path = Path(path)
        self.rank = int(rank)
        self.step = 0
        self._lock = threading.Lock()
        self._pool: dict[str, list[tuple[int, int]]] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._load(int(since))

    def _load(self, since: int) -> None:
        if not self.path.is_file():
            return
        with open(self.path, "rb") as fh:
            fh.seek(max(0, since))
            data = fh.read()
        for line in data.split(b"\n"):
            try:
                row = json.loads(line)
                if int(row.get("rank", 0)) != self.rank:
                    continue
                self._pool.setdefault(str(row["key"]), []).append((int(row["in"]), int(row["out"])))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # an empty or torn line

    def record(self, key: str, input_tokens: int, output_tokens: int) -> None:
        """Append what one request cost (called as soon as it is paid)."""
        line = json.dumps({"key": key, "in": int(input_tokens), "out": int(output_tokens), "rank": self.rank,
                           "step": self.step}) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def claim(self, key: str) -> tuple[int, int] | None:
        """The tokens of one payment of ``key`` made after the checkpoint and not counted yet."""
        with self._lock:
            paid = self._pool.get(key)
            if not paid:
                return None
            out = paid.pop()
            if not paid:
                del self._pool[key]
            return out

    @property
    def unclaimed(self) -> int:
        """Payments after the checkpoint that no replayed request has claimed (yet)."""
        return sum(len(v) for v in self._pool.values())

    @property
    def unclaimed_tokens(self) -> int:
        """Tokens of those payments: spent by a crashed attempt on requests the resumed run has not
        asked again (a replay that sampled other rollouts)."""
        return sum(a + b for v in self._pool.values() for a, b in v)

    def size(self) -> int:
        """The journal's length in bytes (what a checkpoint's ledger records)."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0


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
    saved cost (None when unpriced). ``replayed``: cache hits counted as spent because this run
    paid for them before a crash (:class:`SpendJournal`); their tokens are in the spent tokens."""
    tin, tout = counts.get("input_tokens", 0), counts.get("output_tokens", 0)
    sin, sout = counts.get("saved_input_tokens", 0), counts.get("saved_output_tokens", 0)
    return {
        "requests": counts.get("calls", 0) + counts.get("cache_hits", 0) + counts.get("deduplicated", 0),
        "sent": counts.get("calls", 0), "cache_hits": counts.get("cache_hits", 0),
        "deduplicated": counts.get("deduplicated", 0), "failures": counts.get("failures", 0),
        "replayed": counts.get("replayed", 0),
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
    processes (every process has its own judge client). Its totals and per-step rows are saved
    in every checkpoint (``ledger_key``, :class:`medrl.train.callbacks.RunLedgerCallback`), so a
    resumed run continues them and the budget counts what the whole run spent."""

    ledger_key = "judge_cost"

    def __init__(self, trainer: Any, judge: Any, price: Price | None = None, budget: Budget | None = None):
        self.trainer, self.judge = trainer, judge
        self.price = price or getattr(judge, "cost_price", None) or Price()
        self.budget = budget if budget is not None else getattr(judge, "cost_budget", None)
        self.total = {k: 0 for k in COUNTERS}
        self.epochs: dict[int, dict[str, int]] = {}
        self.steps: list[dict] = []
        self.stopped_at: int | None = None
        self._seen = stats_snapshot(judge)
        self._journal_since = 0  # the spend journal's length at the checkpoint resumed from
        self.journal: SpendJournal | None = None

    def _delta(self) -> dict[str, int]:
        now = stats_snapshot(self.judge)
        delta = [now[k] - self._seen[k] for k in COUNTERS]
        self._seen = now
        acc = getattr(self.trainer, "accelerator", None)
        if acc is not None and acc.num_processes > 1:
            import torch

            delta = acc.reduce(torch.tensor(delta, dtype=torch.float64, device=acc.device), reduction="sum").tolist()
        return {k: int(v) for k, v in zip(COUNTERS, delta)}

    def state_dict(self) -> dict:
        return {"total": dict(self.total), "epochs": {str(e): dict(c) for e, c in self.epochs.items()},
                "steps": list(self.steps), "stopped_at": self.stopped_at,
                "journal_offset": self.journal.size() if self.journal is not None else 0}

    def load_state_dict(self, state: dict) -> None:
        """Continue from a checkpoint's totals (what the run spent before it was interrupted)."""
        self.total = {k: int(state.get("total", {}).get(k, 0)) for k in COUNTERS}
        self.epochs = {int(e): {k: int(c.get(k, 0)) for k in COUNTERS} for e, c in (state.get("epochs") or {}).items()}
        self.steps = list(state.get("steps") or [])
        self.stopped_at = None  # the budget is checked again on the next step (a larger budget continues)
        self._journal_since = int(state.get("journal_offset") or 0)

    def on_train_begin(self, args, state, control, **kwargs):
        """Open the run's spend journal (after the run ledger restored this callback's state, so
        the payments after the checkpoint can be claimed by the replayed steps)."""
        if hasattr(self.judge, "spend_journal") and getattr(args, "output_dir", None):
            acc = getattr(self.trainer, "accelerator", None)
            rank = int(getattr(acc, "process_index", 0) or 0) if acc is not None else 0
            since = self._journal_since if int(state.global_step or 0) > 0 else 0
            self.journal = SpendJournal(Path(args.output_dir) / SPEND_FILE, rank=rank, since=since)
            self.judge.spend_journal = self.journal
        self._seen = stats_snapshot(self.judge)  # what was spent before training (probes, set-up) is not the run's

    def on_step_begin(self, args, state, control, **kwargs):
        if self.journal is not None:
            self.journal.step = int(state.global_step) + 1

    def _spent(self) -> bool:
        total = cost_fields(self.total, self.price)
        return self.budget is not None and self.budget.reached(total["tokens"], total["cost_usd"])

    def on_epoch_begin(self, args, state, control, **kwargs):
        """A run resumed with its budget already spent stops before it trains a step (the
        trainer skips an epoch stopped before it began); a larger budget continues it."""
        if self.stopped_at is None and self.steps and self._spent():
            import logging

            logging.getLogger(__name__).warning(
                "judge budget %s was already spent when this run resumed at step %d: stopping without training; "
                "resume with a larger --judge-budget", self.budget, state.global_step)
            self.stopped_at = state.global_step
            control.should_training_stop = True
        return control

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
        if self._spent():
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
                "steps": self.steps,
                # paid by an attempt that crashed, for requests this run never asked again (this
                # process's share): real money outside the totals above, which count the run's steps
                "paid_before_crash_not_replayed": {
                    "requests": self.journal.unclaimed if self.journal is not None else 0,
                    "tokens": self.journal.unclaimed_tokens if self.journal is not None else 0}}

    def on_train_end(self, args, state, control, **kwargs):
        if self.journal is not None and getattr(self.judge, "spend_journal", None) is self.journal:
            self.judge.spend_journal = None  # requests after training (evaluation) are not the run's
        if state.is_world_process_zero:
            path = Path(args.output_dir) / COST_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.summary(), indent=2))


def bind_trainer_callbacks(trainer: Any) -> None:
    """Give every callback of ``trainer`` that asks for it (a ``bind_trainer(trainer)`` method)
    the trainer: Hugging Face passes callbacks the model and optimizer, not the trainer, but the
    run ledger needs its judge-cost and monitor state and the judge breaker its unscorable rows
    (:mod:`medrl.train.callbacks`). Called from :func:`attach_judge_cost`, which every
    :class:`~medrl.train.trainer.MedGRPOTrainer` calls once its callbacks are registered."""
    for cb in getattr(getattr(trainer, "callback_handler", None), "callbacks", []):
        bind = getattr(cb, "bind_trainer", None)
        if callable(bind) and getattr(cb, "trainer", None) is not trainer:
            bind(trainer)


def attach_judge_cost(trainer: Any, judge: Any) -> JudgeCostCallback | None:
    """Register a :class:`JudgeCostCallback` on ``trainer`` for ``judge`` (None: no judge).

    Also hands the trainer to callbacks that ask for it (the run ledger, the judge breaker:
    :func:`bind_trainer_callbacks`)."""
    bind_trainer_callbacks(trainer)
    if judge is None or getattr(judge, "stats", None) is None:
        return None
    cb = JudgeCostCallback(trainer, judge)
    trainer.add_callback(cb)
    return cb


__all__ = ["Budget", "COST_FILE", "JudgeCostCallback", "Price", "SPEND_FILE", "SpendJournal", "attach_judge_cost",
           "bind_trainer_callbacks", "configure_judge_cost", "cost_fields", "cost_summary", "judge_price",
           "parse_budget", "stats_snapshot"]
