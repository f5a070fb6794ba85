"""Reasoning-failure analysis: first failure point, failure accumulation, stages, paired runs.

All functions here are pure (lists in, numbers/dicts out) and follow MRPO
(arXiv 2606.31825):

- Sec. 3: FFP = k/K for the first invalid step k (1-based) of K steps; FAR (Eq. 1) = failed
  steps after the first failure / all steps after the first failure. Fig. 1A: incorrect rate per
  FFP bin of width 0.1; Fig. 1B: FAR per FFP bin for correct and incorrect outputs.
- Sec. 5.3: stages Early [0.0, 0.4), Mid [0.4, 0.7), Late [0.7, 1.0] (Fig. 3, shares among the
  outputs that have a failure point); Fig. 4: FAR per FFP bin of width 0.2.
- App. E.2: paired correct/wrong table of two runs on the same inputs (Table 11) and FFP stage
  transition matrices for the outputs only one run gets right (Tables 12-13), with a "No FFP"
  row/column for traces where no step fails.

Project choices (the paper does not say), documented here and in docs/evaluation.md:

- Bins are closed on the left, open on the right, except the last, which includes 1.0
  (FFP = 1.0, a failure at the last step, falls in [0.9, 1.0]). Bin indices are computed
  with a small tolerance so 3/10 lands in [0.3, 0.4) despite floating point.
- FAR is undefined (``None``) when no step fails and when the first failure is the last step
  (no steps after it, 0/0); such outputs are left out of FAR averages and counted.
- FAR per bin is the mean of the per-output FARs in the bin (not pooled over steps).
- An output with no reasoning steps has no FFP and no FAR; the analysis layer counts it as
  "no steps" rather than "no failure".
"""

from __future__ import annotations

import math
from typing import Hashable, Iterable, Mapping, Sequence

#: Stage names in table order; "no_ffp" = no step failed (MRPO App. E.2 "No FFP").
STAGES = ("early", "mid", "late")
STAGES_WITH_NONE = ("no_ffp", "early", "mid", "late")
STAGE_LABELS = {"no_ffp": "No FFP", "early": "Early", "mid": "Mid", "late": "Late"}
#: Stage boundaries (MRPO Sec. 5.3, Fig. 3): early [0, 0.4), mid [0.4, 0.7), late [0.7, 1].
STAGE_BOUNDS = (0.4, 0.7)

_EPS = 1e-9


def first_failure_index(step_valid: Sequence[bool]) -> int | None:
    """1-based index k of the first invalid step, or None when every step is valid (or none)."""
    for i, ok in enumerate(step_valid, start=1):
        if not ok:
            return i
    return None


def first_failure_point(step_valid: Sequence[bool]) -> float | None:
    """First Failure Point FFP = k/K (MRPO, arXiv 2606.31825, Sec. 3).

    ``step_valid[j]`` is True when step j+1 is valid (R_proc = 1, MRPO Eq. 3). Returns None when
    no step fails, including the empty trace (callers count "no steps" separately).
    """
    k = first_failure_index(step_valid)
    if k is None:
        return None
    return k / len(step_valid)


def failure_accumulation_rate(step_valid: Sequence[bool]) -> float | None:
    """Failure Accumulation Rate (MRPO, arXiv 2606.31825, Sec. 3, Eq. 1).

    FAR = #failed steps after the first failure / #steps after the first failure.
    Returns None when no step fails, and when the first failure is the last step (no steps
    follow it, so the ratio is 0/0) - a project choice; such outputs are excluded from FAR
    averages.
    """
    k = first_failure_index(step_valid)
    if k is None:
        return None
    after = list(step_valid[k:])
    if not after:
        return None
    return sum(1 for ok in after if not ok) / len(after)


def stage_of(ffp: float | None) -> str:
    """FFP stage (MRPO Sec. 5.3): "early" [0, 0.4), "mid" [0.4, 0.7), "late" [0.7, 1];
    "no_ffp" when there is no failure point."""
    if ffp is None:
        return "no_ffp"
    if not (0.0 <= ffp <= 1.0 + _EPS) or math.isnan(ffp):
        raise ValueError(f"FFP must lie in [0, 1], got {ffp!r}")
    if ffp < STAGE_BOUNDS[0] - _EPS:
        return "early"
    if ffp < STAGE_BOUNDS[1] - _EPS:
        return "mid"
    return "late"


def ffp_bin(ffp: float, width: float = 0.1) -> int:
    """Index of the FFP bin ``[i*width, (i+1)*width)``; the last bin also holds 1.0."""
    if ffp is None or not (0.0 <= ffp <= 1.0 + _EPS):
        raise ValueError(f"FFP must lie in [0, 1], got {ffp!r}")
    n = num_bins(width)
    return min(n - 1, int(math.floor(ffp / width + _EPS)))


def num_bins(width: float) -> int:
    n = round(1.0 / width)
    if n <= 0 or abs(n * width - 1.0) > 1e-6:
        raise ValueError(f"bin width must divide 1 evenly, got {width!r}")
    return n


def bin_labels(width: float = 0.1) -> list[str]:
    """Labels "0.0-0.1", ..., "0.9-1.0" for bins of ``width``."""
    n = num_bins(width)
    return [f"{i * width:.1f}-{(i + 1) * width:.1f}" for i in range(n)]


def incorrect_rate_by_ffp_bin(
    ffps: Sequence[float | None], correct: Sequence[bool | None], width: float = 0.1
) -> list[dict]:
    """Incorrect-answer rate per FFP bin (MRPO Sec. 3, Fig. 1A).

    Outputs with no FFP or an unscored correctness (None) are skipped. One row per bin:
    ``{"bin", "n", "incorrect", "rate"}``; ``rate`` is None for an empty bin.
    """
    _same_len(ffps, correct)
    labels = bin_labels(width)
    n = [0] * len(labels)
    wrong = [0] * len(labels)
    for f, c in zip(ffps, correct):
        if f is None or c is None:
            continue
        b = ffp_bin(f, width)
        n[b] += 1
        wrong[b] += 0 if c else 1
    return [
        {"bin": lab, "n": n[i], "incorrect": wrong[i], "rate": (wrong[i] / n[i]) if n[i] else None}
        for i, lab in enumerate(labels)
    ]


def far_by_ffp_bin(
    ffps: Sequence[float | None],
    fars: Sequence[float | None],
    correct: Sequence[bool | None] | None = None,
    width: float = 0.2,
) -> list[dict]:
    """Mean FAR per FFP bin (MRPO Fig. 4 with width 0.2; Fig. 1B split by correctness).

    Returns one row per bin with ``n``/``far`` over all outputs and, when ``correct`` is given,
    ``n_correct``/``far_correct`` and ``n_incorrect``/``far_incorrect``. Outputs whose FAR is
    None (no failure, or failure at the last step) are skipped; ``far`` is None for empty bins.
    """
    _same_len(ffps, fars)
    if correct is not None:
        _same_len(ffps, correct)
    labels = bin_labels(width)
    groups: dict[str, list[list[float]]] = {g: [[] for _ in labels] for g in ("all", "correct", "incorrect")}
    for i, (f, r) in enumerate(zip(ffps, fars)):
        if f is None or r is None:
            continue
        b = ffp_bin(f, width)
        groups["all"][b].append(r)
        if correct is not None and correct[i] is not None:
            groups["correct" if correct[i] else "incorrect"][b].append(r)
    rows = []
    for i, lab in enumerate(labels):
        row = {"bin": lab, "n": len(groups["all"][i]), "far": _mean(groups["all"][i])}
        if correct is not None:
            for g in ("correct", "incorrect"):
                row[f"n_{g}"] = len(groups[g][i])
                row[f"far_{g}"] = _mean(groups[g][i])
        rows.append(row)
    return rows


def stage_shares(ffps: Iterable[float | None]) -> dict:
    """Counts and shares of Early/Mid/Late failures (MRPO Sec. 5.3, Fig. 3).

    Shares are over the outputs that *have* a failure point (the paper's three stages sum to
    100%); outputs with no failure are counted in ``no_ffp``. Returns
    ``{"counts": {stage: n}, "shares": {stage: share or None}, "n_failed", "no_ffp"}``.
    """
    counts = {s: 0 for s in STAGES_WITH_NONE}
    for f in ffps:
        counts[stage_of(f)] += 1
    n_failed = sum(counts[s] for s in STAGES)
    shares = {s: (counts[s] / n_failed if n_failed else None) for s in STAGES}
    return {"counts": {s: counts[s] for s in STAGES}, "shares": shares, "n_failed": n_failed,
            "no_ffp": counts["no_ffp"]}


def paired_table(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> dict:
    """Paired correct/wrong table of two runs on the same inputs (MRPO App. E.2, Table 11).

    Rows are run A, columns run B: ``{"both_correct", "a_only", "b_only", "both_wrong", "n"}``
    where ``a_only`` = A correct and B wrong.
    """
    _same_len(correct_a, correct_b)
    t = {"both_correct": 0, "a_only": 0, "b_only": 0, "both_wrong": 0}
    for a, b in zip(correct_a, correct_b):
        key = ("both_correct" if b else "a_only") if a else ("b_only" if b else "both_wrong")
        t[key] += 1
    t["n"] = len(correct_a)
    return t


def transition_matrix(stages_a: Sequence[str], stages_b: Sequence[str]) -> dict:
    """FFP stage transition matrix (MRPO App. E.2, Tables 12-13): rows = run A's stage,
    columns = run B's stage, over ``STAGES_WITH_NONE``.

    Returns ``{"labels", "counts" (4x4 list), "row_sums", "col_sums", "n"}``.
    """
    _same_len(stages_a, stages_b)
    idx = {s: i for i, s in enumerate(STAGES_WITH_NONE)}
    m = [[0] * len(STAGES_WITH_NONE) for _ in STAGES_WITH_NONE]
    for a, b in zip(stages_a, stages_b):
        if a not in idx or b not in idx:
            raise ValueError(f"unknown stage {a!r} or {b!r}; expected one of {STAGES_WITH_NONE}")
        m[idx[a]][idx[b]] += 1
    return {
        "labels": list(STAGES_WITH_NONE),
        "counts": m,
        "row_sums": [sum(r) for r in m],
        "col_sums": [sum(r[j] for r in m) for j in range(len(m))],
        "n": len(stages_a),
    }


def compare_runs(a: Mapping[Hashable, dict], b: Mapping[Hashable, dict]) -> dict:
    """Paired comparison of two runs on the same inputs (MRPO App. E.2).

    ``a`` and ``b`` map an input key to ``{"correct": bool | None, "ffp": float | None}``
    (``"ffp"`` may also be missing when no step verdicts exist). Only keys present in both runs
    with a scored correctness in both are paired. Returns the paired table (Table 11) and the
    stage transition matrices for B-only-correct (Table 12 when B = MRPO, A = GRPO) and
    A-only-correct (Table 13) inputs, plus the counts of what was left out.
    """
    shared = [k for k in a if k in b]
    paired = [k for k in shared if a[k].get("correct") is not None and b[k].get("correct") is not None]
    table = paired_table([bool(a[k]["correct"]) for k in paired], [bool(b[k]["correct"]) for k in paired])

    def matrix(keys: list) -> dict:
        usable = [k for k in keys if a[k].get("has_steps", True) and b[k].get("has_steps", True)]
        m = transition_matrix([stage_of(a[k].get("ffp")) for k in usable],
                              [stage_of(b[k].get("ffp")) for k in usable])
        m["excluded_no_steps"] = len(keys) - len(usable)
        return m

    b_only = [k for k in paired if b[k]["correct"] and not a[k]["correct"]]
    a_only = [k for k in paired if a[k]["correct"] and not b[k]["correct"]]
    return {
        "paired_table": table,
        "transitions_b_only_correct": matrix(b_only),
        "transitions_a_only_correct": matrix(a_only),
        "only_in_a": len([k for k in a if k not in b]),
        "only_in_b": len([k for k in b if k not in a]),
        "unscored_pairs": len(shared) - len(paired),
    }


def _same_len(x: Sequence, y: Sequence) -> None:
    if len(x) != len(y):
        raise ValueError(f"length mismatch: {len(x)} vs {len(y)}")


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None
