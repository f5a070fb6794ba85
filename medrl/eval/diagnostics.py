"""Training diagnostics: learning curves from logs and raw vs adaptive reward distributions.

- MRPO (arXiv 2606.31825) App. G, Fig. 16-18: answer reward, reasoning process reward,
  KL divergence and completion length over training steps.
- ARMed (arXiv 2508.12957) Sec. "Reward Collapse", Fig. 3: the distribution (mean,
  variance, histogram) of the raw semantic reward (BERTScore, cosine) against the adaptive one
  (Eq. 5-13); the paper reports raw BERTScore mean 0.986 / variance 0.029 and adaptive
  0.648 / 0.104. Variance here is the population variance (numpy ``var``, ddof 0); the paper
  does not say which.

Scalars are read from any mix of: ``trainer_state.json`` (the Hugging Face Trainer's
``log_history``), JSONL logs (one object per line with ``step`` and numbers) and TensorBoard
event files (via tensorboard's ``EventAccumulator``). Per-sample reward values come from a JSONL
file (``{"step": s, "<name>": [values...], ...}`` per line) or from an eval folder's per-output
BERTScore/cosine; when only raw values exist the adaptive ones are computed by replaying
:class:`medrl.rewards.armed.AdaptiveThreshold` over them in step order (Adapt is a deterministic
function of the raw reward stream and its start state).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

Series = list[tuple[float, float]]

#: Panels of MRPO App. G and the log keys that feed them (first match wins; "train/" and
#: "eval/" prefixes are ignored). medrl's trainer logs answer_reward and process_reward (the
#: recipe's ``log_rewards``); TRL logs rewards/<fn>/mean, kl and completions/mean_length.
CURVES: dict[str, tuple[str, ...]] = {
    "Answer reward": (r"answer_reward", r"medrl/answer_reward", r"rewards/[^/]*answer[^/]*/mean"),
    "Process reward": (r"process_reward", r"medrl/process_reward", r"rewards/[^/]*process[^/]*/mean"),
    "KL divergence": (r"kl",),
    "Completion length": (r"completions/mean_length", r"completion_length"),
}


# --------------------------------------------------------------------------- reading logs
def _add(out: dict[str, dict[float, float]], key: str, step: float, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    key = re.sub(r"^(train|eval)/", "", key)
    out.setdefault(key, {})[float(step)] = float(value)


def _read_trainer_state(path: Path, out: dict) -> None:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    for entry in state.get("log_history", []):
        step = entry.get("step")
        if step is None:
            continue
        for k, v in entry.items():
            if k not in ("step", "epoch"):
                _add(out, k, step, v)


def _json_lines(path: Path):
    """``(line number, parsed object)`` for each non-blank line; a bad line names file and line
    (:func:`medrl.common.jsonl.iter_jsonl`: Unicode line separators inside values are kept, a torn
    last line of a run still being written is dropped)."""
    from medrl.common.jsonl import iter_jsonl

    yield from iter_jsonl(path)


def _read_jsonl(path: Path, out: dict) -> None:
    for _, row in _json_lines(path):
        if not isinstance(row, dict):
            continue
        step = row.get("step", row.get("global_step"))
        if step is None:
            continue
        for k, v in row.items():
            if k not in ("step", "global_step", "epoch"):
                _add(out, k, step, v)


def _read_tensorboard(folder: Path, out: dict) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    acc.Reload()
    for tag in acc.Tags().get("scalars", []):
        for ev in acc.Scalars(tag):
            _add(out, tag, ev.step, ev.value)


def load_scalars(path: str | Path) -> dict[str, Series]:
    """All scalar series under ``path`` (a folder or one file): ``{key: [(step, value), ...]}``
    sorted by step. Reads trainer_state.json, *.jsonl and TensorBoard event files; a file given
    directly is read by its kind. The top-level trainer_state.json wins over checkpoint copies."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"training log not found: {path}")
    out: dict[str, dict[float, float]] = {}
    if path.is_file():
        if path.name.startswith("events.out.tfevents"):
            _read_tensorboard(path.parent, out)
        elif path.suffix == ".jsonl":
            _read_jsonl(path, out)
        else:
            _read_trainer_state(path, out)
    else:
        states = sorted(path.rglob("trainer_state.json"), key=lambda p: (len(p.parts), str(p)), reverse=True)
        for p in states:  # deepest (checkpoint) first, so the top-level file overwrites
            _read_trainer_state(p, out)
        for p in sorted(path.rglob("*.jsonl")):
            _read_jsonl(p, out)
        for folder in sorted({p.parent for p in path.rglob("events.out.tfevents*")}):
            _read_tensorboard(folder, out)
    if not out:
        raise ValueError(f"{path}: no scalars found (looked for trainer_state.json, *.jsonl and "
                         "TensorBoard event files)")
    return {k: sorted(v.items()) for k, v in out.items()}


def pick_curves(scalars: Mapping[str, Series], overrides: Mapping[str, str] | None = None) -> dict[str, Series]:
    """The MRPO App. G panels found in ``scalars`` (panel -> series); ``overrides`` maps a panel
    name to an exact log key. Panels with no matching key are left out."""
    out: dict[str, Series] = {}
    for panel, patterns in CURVES.items():
        if overrides and panel in overrides:
            key = overrides[panel]
            if key not in scalars:
                raise KeyError(f"log key {key!r} for {panel!r} not found; keys: {sorted(scalars)}")
            out[panel] = scalars[key]
            continue
        for pat in patterns:
            hits = sorted(k for k in scalars if re.fullmatch(pat, k))
            if hits:
                out[panel] = scalars[hits[0]]
                break
    return out


# --------------------------------------------------------------------------- reward samples
def distribution_stats(values: Iterable[float | None]) -> dict:
    """``{"n", "mean", "var"}`` of the non-None values (population variance, ARMed Fig. 3)."""
    import numpy as np

    x = np.asarray([float(v) for v in values if v is not None], dtype=float)
    if x.size == 0:
        return {"n": 0, "mean": None, "var": None}
    return {"n": int(x.size), "mean": float(x.mean()), "var": float(x.var())}


def replay_adaptive(batches: Sequence[Sequence[float | None]], **options) -> list[list[float | None]]:
    """Adaptive rewards for a stream of raw reward batches (one per training step), replaying
    ARMed's Adapt() (Eq. 5-12) from a fresh :class:`medrl.rewards.armed.AdaptiveThreshold`."""
    from medrl.rewards.armed import AdaptiveThreshold

    adapt = AdaptiveThreshold(**options)
    return [adapt(list(b)) for b in batches]


def load_reward_samples(path: str | Path, group_size: int = 8) -> dict[str, list[list[float | None]]]:
    """Per-step batches of per-sample reward values: ``{name: [batch_step0, batch_step1, ...]}``.

    ``path`` is a JSONL file (each line ``{"step": s, name: [values...]}``, any number of names)
    or an eval folder, whose per-output ``bertscore`` and ``cosine`` become batches of
    ``group_size`` in output order (a stand-in stream for a diagnostic without a training log).
    """
    path = Path(path)
    if path.is_dir():
        from medrl.eval.scoring import load_run  # below the runner: no import circle

        rows = load_run(path)
        out: dict[str, list[list[float | None]]] = {}
        for name in ("bertscore", "cosine"):
            vals = [r.get("scores", {}).get(name) for r in rows]
            if any(v is not None for v in vals):
                out[name] = [vals[i : i + group_size] for i in range(0, len(vals), group_size)]
        if not out:
            raise ValueError(f"{path}: no bertscore/cosine scores in outputs.jsonl")
        return out
    by_step: dict[str, dict[float, list]] = {}
    for i, row in _json_lines(path):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: line {i} is not a JSON object")
        step = row.get("step", i)
        for k, v in row.items():
            if isinstance(v, list):
                by_step.setdefault(k, {}).setdefault(float(step), []).extend(v)
    if not by_step:
        raise ValueError(f"{path}: no per-sample reward lists found")
    return {k: [v[s] for s in sorted(v)] for k, v in by_step.items()}


def raw_vs_adaptive(samples: Mapping[str, list[list[float | None]]], adaptive_suffix: str = "_adaptive",
                    **options) -> dict[str, dict]:
    """For each raw reward name: stats of raw and adaptive values (ARMed Fig. 3). The adaptive
    values are taken from ``<name><adaptive_suffix>`` when logged, else replayed.
    Returns ``{name: {"raw": stats, "adaptive": stats, "replayed": bool, "raw_values",
    "adaptive_values"}}``."""
    out = {}
    for name, batches in samples.items():
        if name.endswith(adaptive_suffix):
            continue
        logged = samples.get(name + adaptive_suffix)
        adaptive = logged if logged is not None else replay_adaptive(batches, **options)
        raw_flat = [v for b in batches for v in b]
        ad_flat = [v for b in adaptive for v in b]
        out[name] = {"raw": distribution_stats(raw_flat), "adaptive": distribution_stats(ad_flat),
                     "replayed": logged is None, "raw_values": raw_flat, "adaptive_values": ad_flat}
    return out
