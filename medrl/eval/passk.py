"""pass@k: the chance that at least one of k samples of an item is correct, estimated without bias
from n >= k samples per item.

Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", arXiv 2107.03374),
Sec. 2.1, Eq. 1: with ``n`` samples of an item of which ``c`` are correct,

    pass@k = E_items[ 1 - C(n - c, k) / C(n, k) ]

(drawing ``k`` of the ``n`` samples without replacement; the item fails only when all ``k`` come
from the ``n - c`` wrong ones). CAPO (Jiang et al. 2025, arXiv 2506.12849) Fig. 7 plots this
curve over k for RL-Zero vs R1-style training on VQA-RAD, SLAKE and PathVQA; ``medrl eval
--samples n`` writes the ``n`` sampled outputs per item that it needs (``samples.jsonl``) and
``pass_at_k.json`` / ``figures/pass_at_k.png`` (:func:`medrl.eval.runner.run_eval`).

The product form ``1 - prod_{i=n-c+1}^{n} (1 - k / i)`` (Chen et al.'s numerically stable
implementation) is used; :func:`scipy.special.comb` with exact integers gives the same numbers.
An item whose samples were not all judged (a verdict of None) counts with the samples that
were: ``n`` is the number of decided samples; an item with fewer than ``k`` decided samples has
no pass@k for that k and is left out of that k's mean (``n_items`` says how many counted).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Mapping, Sequence

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one item with ``n`` samples, ``c`` of them correct (Chen et al. 2021,
    Eq. 1: ``1 - C(n-c, k) / C(n, k)``)."""
    n, c, k = int(n), int(c), int(k)
    if k < 1:
        raise ValueError(f"pass@k: k must be >= 1, got {k}")
    if n < k:
        raise ValueError(f"pass@k: need n >= k samples, got n={n}, k={k}")
    if not 0 <= c <= n:
        raise ValueError(f"pass@k: need 0 <= c <= n, got c={c}, n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def item_counts(rows: Iterable[Mapping], correct_key: str = "correct") -> "OrderedDict[tuple[str, str], tuple[int, int]]":
    """``{(dataset, record_id): (n decided samples, c correct)}`` from per-sample rows (each with
    ``dataset``, ``record_id`` and a True/False/None verdict under ``correct_key``)."""
    out: OrderedDict[tuple[str, str], list[int]] = OrderedDict()
    for r in rows:
        key = (str(r["dataset"]), str(r["record_id"]))
        nc = out.setdefault(key, [0, 0])
        v = r.get(correct_key)
        if v is None:
            continue
        nc[0] += 1
        nc[1] += bool(v)
    return OrderedDict((k, (n, c)) for k, (n, c) in out.items())


def pass_at_k_curve(counts: Sequence[tuple[int, int]], ks: Sequence[int]) -> dict[int, dict]:
    """``{k: {"pass_at_k": mean over items, "n_items": items counted}}`` for each ``k``; an item
    with fewer than ``k`` decided samples is left out of that ``k`` (``pass_at_k`` None when no
    item counts)."""
    out = {}
    for k in ks:
        vals = [pass_at_k(n, c, k) for n, c in counts if n >= k]
        out[int(k)] = {"pass_at_k": float(np.mean(vals)) if vals else None, "n_items": len(vals)}
    return out


def default_ks(n: int) -> list[int]:
    """1, 2, 4, ... up to ``n``, and ``n`` itself (the k of CAPO Fig. 7's x-axis, capped by n)."""
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return ks + [int(n)] if n >= 1 else []


def summarize_pass_at_k(rows: Iterable[Mapping], ks: Sequence[int] | None = None,
                        correct_key: str = "correct") -> dict:
    """Per dataset and over all items: ``{"ks": [...], "datasets": {name: {k: {...}}}, "all": {k: {...}}}``
    from per-sample rows (see :func:`item_counts`)."""
    counts = item_counts(rows, correct_key)
    if not counts:
        return {"ks": [], "datasets": {}, "all": {}}
    n_max = max(n for n, _ in counts.values()) if counts else 0
    ks = sorted({int(k) for k in (ks or default_ks(n_max))})
    by_ds: dict[str, list[tuple[int, int]]] = {}
    for (ds, _), nc in counts.items():
        by_ds.setdefault(ds, []).append(nc)
    return {
        "ks": ks,
        "n_samples": n_max,
        "datasets": {ds: pass_at_k_curve(v, ks) for ds, v in by_ds.items()},
        "all": pass_at_k_curve(list(counts.values()), ks),
    }


def plot_pass_at_k(summary: Mapping, path) -> None:
    """CAPO Fig. 7-style curve: pass@k against k (log2 axis), one line per dataset."""
    from medrl.eval.plots import _plt, _save

    fig, ax = _plt().subplots(figsize=(5, 3.5))
    for ds, curve in summary.get("datasets", {}).items():
        pts = [(int(k), v["pass_at_k"]) for k, v in curve.items() if v["pass_at_k"] is not None]
        if pts:
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=ds)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k (%)")
    ax.set_title(f"pass@k from n={summary.get('n_samples')} samples per item")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path)


__all__ = ["default_ks", "item_counts", "pass_at_k", "pass_at_k_curve", "plot_pass_at_k", "summarize_pass_at_k"]
