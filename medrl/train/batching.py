"""The papers' batch, stated once and derived for any process count.

A paper states its batch globally: MediX-R1 (App. A.8, EasyR1) rolls out 512 prompts and makes
4 updates of 128 prompts from them; CAPO (Implementation details) updates on 128 prompts per
rollout; MRPO (App. C.2) and ARMed (Implementation details) give one update batch. A recipe's
``batch`` section says the same thing, independent of how many processes run it:

``global_prompts``
    prompts per optimizer update, summed over all processes (each prompt brings
    ``grpo.num_generations`` completions).
``updates_per_rollout``
    optimizer updates made from one generation (rollout) batch of
    ``global_prompts x updates_per_rollout`` prompts (default 1: on-policy).
``micro_batch``
    completions per process per forward/backward pass - memory only, it never changes the
    update; the largest divisor of the per-process update that is not above it is used.

At start, with ``P`` processes and ``G`` generations per prompt, TRL's fields follow:

- completions per process per update ``c = global_prompts x G / P`` (an error when ``P`` does
  not divide ``global_prompts x G``);
- ``per_device_train_batch_size`` = the micro-batch, ``gradient_accumulation_steps = c / micro``;
- ``steps_per_generation = gradient_accumulation_steps x updates_per_rollout`` (only when
  ``updates_per_rollout > 1``: TRL then generates ``global_prompts x updates_per_rollout`` prompts'
  completions at once and makes that many optimizer steps from them).

A recipe whose ``grpo`` sets ``per_device_train_batch_size`` or ``gradient_accumulation_steps``
itself (``--set grpo.per_device_train_batch_size=4``) uses those TRL fields as given instead.
"""

from __future__ import annotations

import os
from typing import Any

#: TRL fields the batch section derives; setting one of them in ``grpo`` means "as given".
DERIVED_FIELDS = ("per_device_train_batch_size", "gradient_accumulation_steps")
GENERATION_FIELDS = ("steps_per_generation", "generation_batch_size")


class BatchError(ValueError):
    """The batch cannot be split over the processes."""


def process_count() -> int:
    """Processes of this launch (``WORLD_SIZE``, set by ``accelerate launch`` / ``torchrun``), else 1."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def derive_batch(batch: dict, num_generations: int, num_processes: int) -> dict[str, int]:
    """TRL batch fields for ``num_processes`` processes (see the module docstring)."""
    prompts = int(batch["global_prompts"])
    updates = int(batch.get("updates_per_rollout") or 1)
    g, p = int(num_generations), int(num_processes)
    total = prompts * g
    if total % p:
        divisors = [d for d in range(1, total + 1) if total % d == 0 and d <= 64]
        raise BatchError(
            f"batch.global_prompts={prompts} x grpo.num_generations={g} = {total} completions per update cannot be "
            f"split evenly over {p} processes; use a process count among {divisors} or change batch.global_prompts")
    per_process = total // p
    cap = int(batch.get("micro_batch") or per_process)
    micro = max(d for d in range(1, min(cap, per_process) + 1) if per_process % d == 0)
    accum = per_process // micro
    out = {"per_device_train_batch_size": micro, "gradient_accumulation_steps": accum}
    if updates > 1:
        out["steps_per_generation"] = accum * updates
    return out


def summary(batch: dict, derived: dict, num_generations: int, num_processes: int) -> dict[str, Any]:
    """What one process does, in words and numbers (printed by ``medrl train --dry-run``)."""
    updates = int(batch.get("updates_per_rollout") or 1)
    micro, accum = derived["per_device_train_batch_size"], derived["gradient_accumulation_steps"]
    return {
        "num_processes": num_processes,
        "per_device_train_batch_size": micro,
        "gradient_accumulation_steps": accum,
        "steps_per_generation": derived.get("steps_per_generation", accum),
        "completions_per_update": micro * accum * num_processes,
        "prompts_per_update": micro * accum * num_processes // num_generations,
        "prompts_per_rollout": micro * accum * num_processes * updates // num_generations,
        "updates_per_rollout": updates,
    }


def describe(recipe, num_processes_list=(1, 2, 8)) -> list[str]:
    """Lines showing the derived per-process batch of ``recipe`` for several process counts."""
    b = recipe.batch or {}
    g = int(recipe.grpo.get("num_generations", 8))
    if not b.get("global_prompts"):
        return [f"batch: as given in grpo (per_device_train_batch_size={recipe.grpo.get('per_device_train_batch_size')}, "
                f"gradient_accumulation_steps={recipe.grpo.get('gradient_accumulation_steps', 1)}); "
                "no batch.global_prompts"]
    if b.get("applied") is False:
        return [f"batch: grpo sets {', '.join(b.get('explicit', []))} itself; batch.global_prompts="
                f"{b['global_prompts']} is not applied"]
    lines = [f"batch: {b['global_prompts']} prompts x {g} completions per update, "
             f"{b.get('updates_per_rollout', 1)} update(s) per rollout, micro-batch <= "
             f"{b.get('micro_batch') or 'per-process update'} completions"]
    counts = sorted({*num_processes_list, int(b.get("num_processes") or 1)})
    for p in counts:
        try:
            d = derive_batch(b, g, p)
        except BatchError as exc:
            lines.append(f"  {p} process(es): cannot divide - {exc}")
            continue
        s = summary(b, d, g, p)
        mark = "   <- this run" if p == int(b.get("num_processes") or 1) else ""
        lines.append(f"  {p} process(es): per_device_train_batch_size={s['per_device_train_batch_size']} "
                     f"gradient_accumulation_steps={s['gradient_accumulation_steps']} "
                     f"steps_per_generation={s['steps_per_generation']} "
                     f"(generation batch {s['prompts_per_rollout']} prompts){mark}")
    return lines
