"""ARMed medical-thinking knowledge-injection exemplars (ARMed, Sec.
"Medical Thinking Knowledge Injection").

"High-frequency answers [are] those occurring more than a threshold ... we encode questions
using a Sentence Transformer and apply K-Means clustering within each high-frequency group. From
each cluster, we select the QA pair whose question is nearest to the centroid." QA pairs with
low-frequency answers are "retained as supplementary knowledge".

Project choices (the paper gives no numbers): answers are grouped after case/space folding; a
group is high-frequency when its count is > ``min_count``; each group gets
``min(clusters_per_group, distinct questions in it)`` clusters; K-Means is scikit-learn's with
``random_state=seed`` (deterministic for a seed); ties for "nearest" go to the earlier record.
Results are logged per answer group, so an interrupted run resumes group by group.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Callable, Sequence

from medrl.data.curation.resume import ResultLog, progress
from medrl.data.record import VQARecord, norm_text


def answer_groups(records: Sequence[VQARecord], min_count: int) -> tuple[dict[str, list[int]], list[int]]:
    """({answer key: record indices} for answers occurring > min_count times, low-frequency indices)."""
    keys = [norm_text(r.answer) for r in records]
    counts = Counter(keys)
    high: dict[str, list[int]] = defaultdict(list)
    low: list[int] = []
    for i, k in enumerate(keys):
        (high[k].append(i) if counts[k] > min_count else low.append(i))
    return dict(high), low


def select_group(questions: Sequence[str], embeddings, k: int, seed: int) -> list[tuple[int, int, float]]:
    """K-Means on one group's question embeddings; for each cluster the (member index, cluster,
    distance) of the member nearest its centroid. Distinct questions only are clustered."""
    import numpy as np
    from sklearn.cluster import KMeans

    first: dict[str, int] = {}
    for i, q in enumerate(questions):
        first.setdefault(norm_text(q), i)
    uniq = sorted(first.values())
    X = np.asarray(embeddings, dtype=np.float64)[uniq]
    k = max(1, min(k, len(uniq)))
    km = KMeans(n_clusters=k, random_state=seed, n_init=10).fit(X)
    out = []
    for c in range(k):
        members = np.flatnonzero(km.labels_ == c)
        if members.size == 0:
            continue
        d = np.linalg.norm(X[members] - km.cluster_centers_[c], axis=1)
        j = int(members[int(np.argmin(d))])  # argmin returns the first minimum: earlier record wins ties
        out.append((uniq[j], c, float(d.min())))
    return sorted(out)


def knowledge_exemplars(
    records: Sequence[VQARecord],
    *,
    min_count: int = 5,
    clusters_per_group: int = 5,
    include_low_frequency: bool = True,
    seed: int = 0,
    encode: Callable[[Sequence[str]], object] | None = None,
    results_path: str | os.PathLike | None = None,
    show_progress: bool = True,
) -> tuple[list[VQARecord], dict]:
    """Select exemplars; returns (records with ``extras["knowledge"]``, summary).

    ``extras["knowledge"]``: {"frequency": "high"|"low", "group": answer, "group_size",
    "cluster", "distance"}. ``encode``: texts -> (N, D) array (default
    :func:`medrl.common.embeddings.encode`).
    """
    if encode is None:
        from medrl.common.embeddings import encode
    by_id = {r.id: r for r in records}
    if len(by_id) != len(records):
        raise ValueError("knowledge_exemplars: record ids must be unique")
    high, low = answer_groups(records, min_count)
    log = ResultLog(results_path, key="group")
    for row in log.done.values():
        if (row.get("seed"), row.get("clusters_per_group")) != (seed, clusters_per_group) or row["group"] not in high:
            raise ValueError(
                f"{results_path}: results from another run (group {row['group']!r}, seed {row.get('seed')}, "
                f"clusters_per_group {row.get('clusters_per_group')}); use a new results file for new settings or data"
            )
    todo = [g for g in sorted(high) if g not in log]
    with progress(len(high), len(high) - len(todo), "knowledge exemplars", show_progress) as bar:
        for g in todo:
            idx = high[g]
            qs = [records[i].question for i in idx]
            picks = select_group(qs, encode(qs), clusters_per_group, seed)
            log.append({"group": g, "group_size": len(idx), "seed": seed, "clusters_per_group": clusters_per_group,
                        "selected": [{"id": records[idx[j]].id, "cluster": c, "distance": d} for j, c, d in picks]})
            bar.update(1)
    out: list[VQARecord] = []
    for g in sorted(high):
        row = log.done[g]
        for s in row["selected"]:
            rec = by_id[s["id"]]
            out.append(replace(rec, extras={**rec.extras, "knowledge": {
                "frequency": "high", "group": g, "group_size": row["group_size"],
                "cluster": s["cluster"], "distance": s["distance"]}}))
    if include_low_frequency:
        for i in low:
            rec = records[i]
            out.append(replace(rec, extras={**rec.extras, "knowledge": {
                "frequency": "low", "group": norm_text(rec.answer), "group_size": None, "cluster": None, "distance": None}}))
    summary = {"records": len(records), "high_frequency_groups": len(high),
               "high_frequency_exemplars": sum(len(log.done[g]["selected"]) for g in high),
               "low_frequency": len(low) if include_low_frequency else 0, "selected": len(out)}
    return out, summary
