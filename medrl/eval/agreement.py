"""Agreement between two raters: agreement rate and Cohen's kappa (MRPO App. B.1).

MRPO (App. B.1, Table 3) validates its judges against a human rater
with the agreement rate (share of items both raters label identically) and Cohen's kappa,
which corrects for chance agreement:

    kappa = (p_o - p_e) / (1 - p_e),   p_e = sum_c P_A(c) * P_B(c)

where p_o is the observed agreement and P_A(c), P_B(c) are the raters' marginal label shares.
Kappa is computed by ``sklearn.metrics.cohen_kappa_score``; the tests keep hand-worked values.
Kappa is undefined (returned as None) when p_e = 1, i.e. both raters give one and the same label
to every item.

Labels are read from eval runs (``outputs.jsonl``: per-output correctness or per-step validity)
or from a file of human labels (JSONL or CSV with ``id`` and ``label`` columns, plus ``step``
for step-level labels); items are paired by key, never by position.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Hashable, Mapping, Sequence

#: Fields a rater's labels can come from (per output or per step).
FIELDS = ("correct", "step_valid", "gold_alignment", "answer_contribution")


def agreement_rate(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of items on which both raters give the same label (MRPO App. B.1)."""
    _check(a, b)
    return sum(1 for x, y in zip(a, b) if x == y) / len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa (Cohen 1960; used in MRPO App. B.1): (p_o - p_e) / (1 - p_e), computed by
    :func:`sklearn.metrics.cohen_kappa_score`.

    None when chance agreement p_e is 1 (both raters constant and equal), where kappa is 0/0
    (scikit-learn would return NaN with a warning).
    """
    _check(a, b)
    if len(set(a) | set(b)) < 2:
        return None  # one label for every item from both raters: p_e = 1
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(list(a), list(b)))


def agreement_summary(pairs: Mapping[Hashable, tuple], groups: Mapping[Hashable, str] | None = None) -> dict:
    """Agreement rate and kappa over paired labels ``{key: (label_a, label_b)}``.

    With ``groups`` (key -> group name, e.g. the dataset), also per group, like MRPO Table 3a.
    Returns ``{"total": {"n", "agreement", "kappa"}, "groups": {name: {...}}}``.
    """

    def one(keys: list) -> dict:
        a = [pairs[k][0] for k in keys]
        b = [pairs[k][1] for k in keys]
        if not keys:
            return {"n": 0, "agreement": None, "kappa": None}
        return {"n": len(keys), "agreement": agreement_rate(a, b), "kappa": cohen_kappa(a, b)}

    keys = list(pairs)
    out = {"total": one(keys), "groups": {}}
    if groups:
        for g in sorted({groups[k] for k in keys if k in groups}):
            out["groups"][g] = one([k for k in keys if groups.get(k) == g])
    return out


def pair_labels(a: Mapping[Hashable, object], b: Mapping[Hashable, object]) -> tuple[dict, dict]:
    """Pair two raters' labels by key. Returns ``(pairs, counts)`` where counts says how many
    keys only one rater has (those are left out, never guessed)."""
    pairs = {k: (a[k], b[k]) for k in a if k in b}
    counts = {"paired": len(pairs), "only_a": sum(1 for k in a if k not in b),
              "only_b": sum(1 for k in b if k not in a)}
    return pairs, counts


def labels_from_outputs(rows: Sequence[dict], field: str = "correct") -> tuple[dict, dict]:
    """Labels from an eval run's output rows (see :mod:`medrl.eval.runner`).

    ``field="correct"``: key = output key, label = the judged binary score (0/1), unscored
    outputs skipped. Step fields: key = (output key, step number from 1), label = the step's
    validity or one of its two criteria (MRPO Eq. 3). Returns ``(labels, groups)`` where groups
    maps each key to its dataset.
    """
    if field not in FIELDS:
        raise ValueError(f"unknown label field {field!r}; choose from {FIELDS}")
    labels: dict = {}
    groups: dict = {}
    for row in rows:
        key = row["key"]
        if field == "correct":
            from medrl.eval.scoring import output_correct

            v = output_correct(row)  # the judge's binary grade when present (see output_correct)
            if v is None:
                continue
            labels[key] = int(v)
            groups[key] = row.get("dataset", "")
            continue
        verdicts = row.get("step_verdicts")
        if not verdicts:
            continue
        for j, sv in enumerate(verdicts, start=1):
            if field == "step_valid":
                lab = int(bool(sv["gold_alignment"] or sv["answer_contribution"]))
            else:
                lab = int(sv[field])
            labels[(key, j)] = lab
            groups[(key, j)] = row.get("dataset", "")
    return labels, groups


def read_label_file(path: str | Path) -> dict:
    """Human labels from JSONL or CSV: columns ``id`` and ``label`` (0/1, true/false, yes/no,
    O/X), optionally ``step`` (1-based) for step-level labels. Keys match
    :func:`labels_from_outputs`: ``id`` must be the output key (``dataset:record_id``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"label file not found: {path}")
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    else:
        from medrl.common.jsonl import iter_jsonl

        rows = [row for _, row in iter_jsonl(path)]
    labels: dict = {}
    for i, row in enumerate(rows, start=1):
        if "id" not in row or "label" not in row:
            raise ValueError(f"{path}: row {i} needs 'id' and 'label' fields, got {sorted(row)}")
        key = str(row["id"])
        step = row.get("step")
        if step not in (None, ""):
            key = (key, int(step))
        labels[key] = _to_binary(row["label"], f"{path}: row {i}")
    return labels


def _to_binary(v: object, where: str) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)) and v in (0, 1):
        return int(v)
    s = str(v).strip().lower()
    if s in ("1", "1.0", "true", "yes", "y", "o", "correct", "valid"):
        return 1
    if s in ("0", "0.0", "false", "no", "n", "x", "incorrect", "invalid", "wrong"):
        return 0
    raise ValueError(f"{where}: label {v!r} is not binary (use 0/1, true/false, yes/no or O/X)")


def _check(a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} vs {len(b)}")
    if not a:
        raise ValueError("no items to compare")
