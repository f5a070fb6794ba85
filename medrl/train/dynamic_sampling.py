"""DAPO dynamic sampling: drop prompt groups whose rewards are all equal, sample more prompts.

DAPO (Yu et al. 2025, arXiv 2503.14476, Sec. 3.2 "Dynamic Sampling", Eq. 11 constraint
``0 < |{o_i : is_equivalent(a, o_i)}| < G``): a group in which every rollout gets the same reward
has advantage 0 for every member and only shrinks the effective batch, so DAPO over-samples,
filters those groups out and keeps generating until the batch is full of groups with signal.

``algorithm.dynamic_sampling: true`` (or a mapping with ``max_rounds`` and/or ``mean_band``) turns it on for any
recipe (on in ``dapo``). In :class:`medrl.train.trainer.MedGRPOTrainer`, a training batch is
generated and scored as usual (round 0); groups whose rewards are all equal are dropped; while
fewer than the batch's number of groups are left, another full batch of prompts is generated and
scored (at most ``max_rounds`` extra rounds). The batch trained on is the first groups with signal
in (round, group) order; when the rounds run out it is topped up with all-equal groups in the same
order (they carry advantage 0, as without dynamic sampling) and ``dynamic_sampling/short`` is 1.

"All equal" is decided on the gathered reward matrix (every process sees the same, so every
process makes the same decision): with TRL's ``sum_then_normalize`` the weighted total of each
rollout (``nansum`` over the rewards that scored), with ``normalize_then_sum`` (GDPO) every
reward column; rollouts no reward could score are left out, and a group with fewer than two
scored rollouts counts as all equal. Extra prompts come from the training set in a fixed order
(a permutation seeded by ``args.seed``, independent of the process count), so one process and
two processes build the same batch; the rows of a selected group are moved to the process whose
slot it fills. Each round's reward and monitor metrics are logged as TRL logs any batch; the
trainer adds ``dynamic_sampling/rounds`` (generation rounds used, 1 = none extra),
``dynamic_sampling/flat_frac`` (share of generated groups dropped) and ``dynamic_sampling/short``.

Mean-reward band (``mean_band: [low, high]``, EasyR1's online filter, which keeps a group when
``filter_low < mean < filter_high`` on the overall reward): keeps the groups whose mean weighted
total reward lies strictly inside the band, instead of the groups whose rewards differ. With a
band set the band alone decides, as in EasyR1: a group whose rollouts all score 0.5 lies inside
(0.01, 0.99) and is kept (it carries advantage 0). A method may turn the band on
(:class:`medrl.methods.base.TrainerOptions` ``mean_band``; its file says which paper trains this
way); without one the criterion is DAPO's "not all equal".

Deviations from DAPO: DAPO filters on accuracy (all correct / all wrong); medrl's recipes have
continuous rewards, so the criterion is equal rewards (equal accuracy is the binary case). DAPO
samples until full without a bound; medrl bounds the extra rounds (``max_rounds``, default 4).
Requirement: each process's share of the batch holds whole groups (its generation batch is a
multiple of ``num_generations``), so a group is never split over processes.
"""

from __future__ import annotations

import difflib
import logging
import math
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

log = logging.getLogger(__name__)

#: output fields TRL pads on the left (prompts)
LEFT_PADDED = frozenset({"prompt_ids", "prompt_mask", "token_type_ids", "mm_token_type_ids"})
#: output fields padded with the pad token (the others with 0)
TOKEN_FIELDS = frozenset({"prompt_ids", "completion_ids"})


@dataclass
class DynamicSamplingConfig:
    """``algorithm.dynamic_sampling``: ``true`` (these defaults), ``false`` or a mapping of these
    fields; each field's ``help`` is what ``medrl recipes show NAME --explain`` prints."""

    enabled: bool = field(default=False, metadata={"help": (
        "drop prompt groups without signal and generate more prompts until the batch is full (DAPO Sec. 3.2); "
        "a mapping of these settings turns it on")})
    max_rounds: int = field(default=4, metadata={"help": (
        "extra generation rounds per batch at most; when they run out the batch is topped up with dropped groups "
        "(advantage 0) and dynamic_sampling/short is logged as 1")})
    mean_band: tuple[float, float] | None = field(default=None, metadata={"help": (
        "[low, high]: keep the groups whose mean weighted total reward lies strictly inside (low, high) instead of "
        "the groups whose rewards are not all equal (EasyR1's online filter; a method may turn it on); None: DAPO's "
        "'not all equal'")})

    @classmethod
    def from_value(cls, value: Any) -> "DynamicSamplingConfig":
        if value is None or value is False:
            return cls(enabled=False)
        if value is True:
            return cls(enabled=True)
        if isinstance(value, DynamicSamplingConfig):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"algorithm.dynamic_sampling must be true/false or a mapping, got {value!r}")
        known = [f.name for f in fields(cls)]
        kwargs: dict[str, Any] = {"enabled": True}
        for k, v in value.items():
            if k not in known:
                near = difflib.get_close_matches(str(k), known, n=1)
                raise ValueError(f"algorithm.dynamic_sampling.{k}: unknown setting"
                                 + (f"; did you mean {near[0]!r}?" if near else "") + f" (known: {', '.join(known)})")
            if k == "max_rounds" and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ValueError(f"algorithm.dynamic_sampling.max_rounds: expected a non-negative int, got {v!r}")
            if k == "enabled" and not isinstance(v, bool):
                raise ValueError(f"algorithm.dynamic_sampling.enabled: expected true/false, got {v!r}")
            if k == "mean_band" and v is not None:
                v = _band(v)
            kwargs[k] = v
        return cls(**kwargs)


def _band(value: Any) -> tuple[float, float]:
    """``[low, high]`` -> ``(low, high)`` with finite numbers and ``low < high``."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise ValueError(f"algorithm.dynamic_sampling.mean_band: expected [low, high], got {value!r}")
    try:
        lo, hi = (float(x) for x in value)
    except (TypeError, ValueError):
        raise ValueError(f"algorithm.dynamic_sampling.mean_band: expected two numbers, got {value!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"algorithm.dynamic_sampling.mean_band: need finite low < high, got {value!r}")
    return lo, hi


# ----------------------------------------------------------------------------- pure decisions


def flat_groups(rewards: Sequence[Sequence[float]], weights: Sequence[float], group: int,
                aggregation: str = "sum_then_normalize", tol: float = 1e-9,
                mean_band: tuple[float, float] | None = None) -> list[bool]:
    """For each consecutive group of ``group`` rows of the (N, R) reward matrix (NaN = the reward
    did not score), True when the group is dropped: its rewards are all equal, or, with
    ``mean_band = (low, high)``, the mean of its weighted totals is not strictly inside the band
    (see the module docstring)."""
    n = len(rewards) // group
    out = []
    for g in range(n):
        rows = [list(map(float, r)) for r in rewards[g * group:(g + 1) * group]]
        rows = [r for r in rows if any(v == v for v in r)]  # drop rows no reward scored
        if len(rows) < 2:
            out.append(True)
            continue
        if mean_band is not None:
            totals = [sum(v * w for v, w in zip(r, weights) if v == v) for r in rows]
            mean = sum(totals) / len(totals)
            out.append(not (mean_band[0] < mean < mean_band[1]))
            continue
        if aggregation == "normalize_then_sum":
            cols = list(zip(*rows))
            flat = all(_equal([v for v in c if v == v], tol) for c in cols)
        else:
            totals = [sum(v * w for v, w in zip(r, weights) if v == v) for r in rows]
            flat = _equal(totals, tol)
        out.append(flat)
    return out


def _equal(vals: Sequence[float], tol: float) -> bool:
    return not vals or max(vals) - min(vals) <= tol


def select_groups(flags_by_round: Sequence[Sequence[bool]], need: int) -> tuple[list[tuple[int, int]], int]:
    """The ``need`` groups a batch keeps: the groups with signal (flag False) in (round, group)
    order, topped up with all-equal ones in the same order when there are too few. Returns the
    picks as (round, group) and how many all-equal groups were used."""
    good = [(r, g) for r, flags in enumerate(flags_by_round) for g, f in enumerate(flags) if not f]
    picks = good[:need]
    short = need - len(picks)
    if short > 0:
        flat = [(r, g) for r, flags in enumerate(flags_by_round) for g, f in enumerate(flags) if f]
        picks += flat[:short]
        picks.sort()
    return picks, max(short, 0)


def extra_prompt_indices(dataset_size: int, seed: int, start: int, count: int) -> list[int]:
    """Prompts ``start .. start+count-1`` of the extra-prompt stream: passes over the dataset, each
    a permutation seeded by ``seed`` and the pass number (the same for any process count)."""
    import torch

    out = []
    pos = start
    while len(out) < count:
        p, k = divmod(pos, dataset_size)
        g = torch.Generator().manual_seed(int(seed) * 1_000_003 + 7919 * p + 17)
        perm = torch.randperm(dataset_size, generator=g).tolist()
        take = min(count - len(out), dataset_size - k)
        out += perm[k:k + take]
        pos += take
    return out


# ----------------------------------------------------------------------------- batch rows


def split_rows(out: dict, n: int) -> tuple[list[dict], set[str]]:
    """A scored batch (what ``_generate_and_score_completions`` returns) as ``n`` row dicts, and
    the fields that stay lists when merged (per-row image tensors). ``num_items_in_batch`` is
    dropped (recomputed on merge)."""
    import torch
    from trl.trainer.utils import split_pixel_values_by_grid

    b = split_pixel_values_by_grid(dict(out))
    rows: list[dict] = [{} for _ in range(n)]
    listy = set()
    for k, v in b.items():
        if k == "num_items_in_batch" or v is None:
            continue
        if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == n:
            for i in range(n):
                rows[i][k] = v[i]
        elif isinstance(v, (list, tuple)) and len(v) == n:
            listy.add(k)
            for i in range(n):
                rows[i][k] = v[i]
        else:
            raise ValueError(f"dynamic sampling: cannot split batch field {k!r} by rollout "
                             f"({type(v).__name__}{tuple(getattr(v, 'shape', ()))} for {n} rollouts)")
    return rows, listy


def merge_rows(rows: Sequence[dict], listy: set[str], pad_token_id: int) -> dict:
    """The inverse of :func:`split_rows` for rows from several batches: per-token fields of
    different lengths are padded (prompts on the left, the rest on the right)."""
    import torch
    from trl.trainer.utils import unsplit_pixel_values_by_grid

    out: dict[str, Any] = {}
    for k in rows[0]:
        vals = [r[k] for r in rows]
        if k in listy:
            out[k] = list(vals)
            continue
        if vals[0].dim() == 0:
            out[k] = torch.stack(vals)
            continue
        width = max(v.shape[-1] for v in vals)
        fill = pad_token_id if k in TOKEN_FIELDS else 0
        padded = []
        for v in vals:
            gap = width - v.shape[-1]
            if gap:
                pad = torch.full((*v.shape[:-1], gap), fill, dtype=v.dtype, device=v.device)
                v = torch.cat([pad, v], dim=-1) if k in LEFT_PADDED else torch.cat([v, pad], dim=-1)
            padded.append(v)
        out[k] = torch.stack(padded)
    return unsplit_pixel_values_by_grid(out)


def _to(obj, device):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to(v, device) for v in obj]
    return obj


# ----------------------------------------------------------------------------- the sampler


class DynamicSampler:
    """Runs a training batch's generation rounds and assembles the kept groups."""

    def __init__(self, config: DynamicSamplingConfig):
        self.config = config
        self.active = False
        self._next = 0  # position in the extra-prompt stream

    def _extra_inputs(self, trainer, n_local: int, G: int) -> list[dict]:
        ds = trainer.train_dataset
        P, p = trainer.accelerator.num_processes, trainer.accelerator.process_index
        per = n_local // G
        idx = extra_prompt_indices(len(ds), trainer.args.seed, self._next, per * P)
        self._next += per * P
        mine = idx[p * per:(p + 1) * per]
        return [dict(ds[i]) for i in mine for _ in range(G)]

    def run(self, trainer, inputs: list[dict]) -> dict:
        """``trainer._generate_and_score_completions(inputs)`` with DAPO dynamic sampling."""
        acc = trainer.accelerator
        G, n = trainer.num_generations, len(inputs)
        if n % G:
            raise ValueError(f"dynamic sampling needs whole prompt groups on every process: this process has "
                             f"{n} rollouts, not a multiple of num_generations={G} (make per_device_train_batch_size "
                             "x steps_per_generation a multiple of num_generations)")
        P = acc.num_processes
        need = n * P // G
        weights = trainer.reward_weights.tolist()
        agg = getattr(trainer, "multi_objective_aggregation", "sum_then_normalize")
        rounds: list[list[dict]] = []
        listy: set[str] = set()
        flags_by_round: list[list[bool]] = []
        self.active = True
        try:
            batch = inputs
            for r in range(self.config.max_rounds + 1):
                out = trainer._generate_and_score_completions(batch)
                rows, ly = split_rows(out, n)
                listy |= ly
                rounds.append(rows)
                flags_by_round.append(flat_groups(trainer._last_rewards.detach().float().cpu().tolist(),
                                                  weights, G, agg, mean_band=self.config.mean_band))
                if sum(not f for fl in flags_by_round for f in fl) >= need or r == self.config.max_rounds:
                    break
                batch = self._extra_inputs(trainer, n, G)
        finally:
            self.active = False
        picks, short = select_groups(flags_by_round, need)
        per = n // G  # groups per process
        p = acc.process_index
        if P == 1:
            mine = [rows for (r, g) in picks for rows in rounds[r][g * G:(g + 1) * G]]
        else:
            from accelerate.utils import gather_object

            held = []  # (slot, rows) for the picked groups this process generated
            for slot, (r, g) in enumerate(picks):
                if g // per == p:
                    local = g - p * per
                    held.append((slot, [_to(x, "cpu") for x in rounds[r][local * G:(local + 1) * G]]))
            everything = dict(gather_object(held))
            mine = [_to(x, acc.device) for slot in range(p * per, (p + 1) * per) for x in everything[slot]]
        pad = getattr(trainer._tokenizer, "pad_token_id", None)
        pad = 0 if pad is None else pad
        merged = merge_rows(mine, listy, pad)
        mask = merged["completion_mask"] * merged["tool_mask"] if "tool_mask" in merged else merged["completion_mask"]
        merged["num_items_in_batch"] = acc.gather(mask.sum()).sum()
        generated = sum(len(f) for f in flags_by_round)
        m = trainer._metrics["train"]
        m["dynamic_sampling/rounds"].append(float(len(flags_by_round)))
        m["dynamic_sampling/flat_frac"].append(sum(sum(f) for f in flags_by_round) / max(generated, 1))
        m["dynamic_sampling/short"].append(float(short > 0))
        if short:
            log.info("dynamic sampling: %d of %d groups still all-equal after %d extra round(s) (max_rounds=%d)",
                     short, need, len(flags_by_round) - 1, self.config.max_rounds)
        self.last_picks, self.last_flags = picks, flags_by_round
        return merged


def attach_dynamic_sampling(trainer, value: Any = None) -> DynamicSampler | None:
    """The trainer's sampler from ``value`` or ``algorithm.dynamic_sampling``; None when off."""
    cfg = DynamicSamplingConfig.from_value(
        value if value is not None else (getattr(trainer, "medrl_algorithm", None) or {}).get("dynamic_sampling"))
    if not cfg.enabled:
        return None
    ds = trainer.train_dataset
    if ds is None or not hasattr(ds, "__len__") or isinstance(ds, dict):
        raise ValueError("algorithm.dynamic_sampling needs a map-style train_dataset (extra prompts are drawn from it)")
    return DynamicSampler(cfg)


__all__ = ["DynamicSampler", "DynamicSamplingConfig", "attach_dynamic_sampling", "extra_prompt_indices",
           "flat_groups", "merge_rows", "select_groups", "split_rows"]
