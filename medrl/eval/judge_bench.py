"""``medrl judge-bench``: score judges against human labels, the way MRPO App. B.1 validated its judge.

MRPO (App. B.1, Table 3) trusts GPT-5-mini only after measuring it
against a human evaluator: accuracy for answer correctness, and per-step agreement and Cohen's
kappa for Gold Alignment, Answer Contribution and the process reward R_proc (Eq. 3: a step is
valid when either criterion is 1). This module does the same for any judge medrl can build
(``reference``, ``openai:<model>``) on a labelled JSONL file (format: docs/judges.md; a shipped
set is :data:`medrl.judges.labels.JUDGE_DEV`).

Layout of an output folder (``--out``)::

    verdicts/<judge>.jsonl   one row per labelled item as soon as its chunk is judged (resumable)
    stats/<judge>.json       calls, cache hits, tokens and seconds, summed over every (resumed) run
    metrics.json             per-judge metrics, judges side by side
    report.md / report.html

A rerun skips every item already judged (an item's key covers its id and every field the judge
sees, so an edited item is judged again while a relabelled one is not). Verdicts the judge could
not give are counted as unscored, never read as a pass or a fail, and asked again on a rerun.

Splits: an item may carry ``"split": "dev"`` (used while writing a judge's rules) or
``"frozen"`` (set aside, never used for tuning; :func:`split_for` assigns the shipped set's
items by a hash of their source record, so every item of one record shares a split). With
splits, every figure is measured on each split and on all items, and the *frozen* split is the
headline (``summary``) that ``medrl eval`` and reports quote; the dev-split figure is an upper
bound (the rules were written against it).

:func:`known_agreement` looks up the measured agreement of a judge (shipped
``medrl/judges/labels/judge_agreement.json``, plus the user's own runs recorded under the cache
folder) so eval reports can say how far their judge was measured to agree with humans.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from medrl.common.jsonl import append_jsonl, iter_jsonl

log = logging.getLogger(__name__)

ANSWER_KINDS = ("exact", "paraphrase", "near_miss", "adversarial", "wrong")
#: ``dev``: used while writing rules; ``frozen``: never used for tuning (the headline figures)
SPLITS = ("dev", "frozen")
HEADLINE_SPLIT = "frozen"
_CRITERIA = ("gold_alignment", "answer_contribution", "valid")
AGREEMENT_FILE = "judge_agreement.json"


class LabelError(ValueError):
    """A labelled file that cannot be used; the message names the file, line and field."""


# --------------------------------------------------------------------------- labels
def _need(item: dict, field: str, types: tuple, where: str) -> Any:
    if field not in item:
        raise LabelError(f"{where}: missing field {field!r}")
    v = item[field]
    if not isinstance(v, types) or isinstance(v, bool) and bool not in types:
        names = "/".join(t.__name__ for t in types)
        raise LabelError(f"{where}: field {field!r} must be {names}, got {type(v).__name__} {v!r:.60}")
    return v


def _bit(v: Any, where: str) -> int:
    if v in (0, 1) and not isinstance(v, float):
        return int(v)
    raise LabelError(f"{where}: must be 0 or 1, got {v!r}")


def load_labels(path: str | Path) -> tuple[list[dict], list[dict]]:
    """``(answer_items, trace_items)`` of a labelled JSONL file, validated.

    Lines with ``"type": "meta"`` are skipped. Every error names the file, the line and the
    field; ids must be unique.
    """
    path = Path(path)
    if not path.is_file():
        raise LabelError(f"labels file not found: {path}")
    answers: list[dict] = []
    traces: list[dict] = []
    seen: dict[str, int] = {}
    for lineno, item in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if not isinstance(item, dict):
            raise LabelError(f"{where}: expected a JSON object, got {type(item).__name__}")
        kind = item.get("type")
        if kind == "meta":
            continue
        iid = str(_need(item, "id", (str, int), where))
        where = f"{path}:{lineno} (id {iid})"
        if iid in seen:
            raise LabelError(f"{where}: duplicate id (first on line {seen[iid]})")
        seen[iid] = lineno
        _need(item, "question", (str,), where)
        _need(item, "reference", (str,), where)
        if item.get("split") is not None and item["split"] not in SPLITS:
            raise LabelError(f"{where}: field 'split' must be one of {SPLITS}, got {item['split']!r}")
        if kind == "answer":
            _need(item, "candidate", (str,), where)
            _need(item, "label", (bool,), where)
            k = _need(item, "kind", (str,), where)
            if k not in ANSWER_KINDS:
                raise LabelError(f"{where}: field 'kind' must be one of {ANSWER_KINDS}, got {k!r}")
            answers.append({**item, "id": iid, "_line": lineno})
        elif kind == "trace":
            steps = _need(item, "steps", (list,), where)
            labels = _need(item, "step_labels", (list,), where)
            if not steps:
                raise LabelError(f"{where}: field 'steps' is empty")
            if any(not isinstance(s, str) or not s.strip() for s in steps):
                raise LabelError(f"{where}: field 'steps' must hold non-empty strings")
            if len(labels) != len(steps):
                raise LabelError(f"{where}: {len(steps)} steps but {len(labels)} step_labels")
            for j, lab in enumerate(labels):
                lw = f"{where}: step_labels[{j}]"
                if not isinstance(lab, dict):
                    raise LabelError(f"{lw}: expected an object with gold_alignment and answer_contribution")
                for c in ("gold_alignment", "answer_contribution"):
                    if c not in lab:
                        raise LabelError(f"{lw}: missing field {c!r}")
                    _bit(lab[c], f"{lw}.{c}")
            if "answer_label" in item and item["answer_label"] is not None and not isinstance(item["answer_label"], bool):
                raise LabelError(f"{where}: field 'answer_label' must be true/false")
            if item.get("answer_label") is not None:
                _need(item, "final_answer", (str,), where)
            traces.append({**item, "id": iid, "_line": lineno})
        else:
            raise LabelError(f"{where}: field 'type' must be 'answer', 'trace' or 'meta', got {kind!r}")
    if not answers and not traces:
        raise LabelError(f"{path}: no labelled items (need lines with type 'answer' or 'trace')")
    return answers, traces


def split_for(record_key: str) -> str:
    """The split of the shipped set's items of one source record (``record_key``: its
    ``source.record_id``): "frozen" when the first byte of sha256("medrl-judge-split:" + key) is
    even, else "dev". Deterministic, and all items of one record (answers and traces) share it,
    so a rule written for a dev item cannot have seen a frozen item of the same image."""
    return "frozen" if hashlib.sha256(f"medrl-judge-split:{record_key}".encode("utf-8")).digest()[0] % 2 == 0 else "dev"


def default_labels() -> Path:
    """The labelled development set shipped with medrl."""
    from medrl.judges.labels import JUDGE_DEV

    return JUDGE_DEV


def _item_key(item: dict) -> str:
    """Id plus a digest of what the judge sees: an edited item is judged again, a relabelled one not."""
    seen = {k: item.get(k) for k in ("type", "question", "reference", "candidate", "steps", "final_answer",
                                     "gold_reasoning", "image")}
    digest = hashlib.sha1(json.dumps(seen, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:12]
    return f"{item['id']}:{digest}"


def judge_slug(spec: str) -> str:
    """A file name for a judge spec: ``openai:gpt-5-mini`` -> ``openai_gpt-5-mini``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(spec)).strip("_") or "judge"


def _image_for(item: dict, data_root: Path | None) -> list[str] | None:
    rel = item.get("image") or (item.get("source") or {}).get("image")
    if not rel:
        return None
    if data_root is None:
        raise FileNotFoundError(
            f"item {item['id']}: the judge takes images but no data folder was found to resolve {rel!r}; "
            "pass --data-root (or set MEDRL_DATA_DIR)")
    p = Path(rel) if Path(rel).is_absolute() else Path(data_root) / rel
    if not p.is_file():
        raise FileNotFoundError(f"item {item['id']}: image not found: {p} (data root {data_root})")
    return [str(p)]


# --------------------------------------------------------------------------- running one judge
async def _judge_answer(judge: Any, item: dict, image: Any, answer_check: str = "strict") -> dict:
    kw = {"image": image} if image is not None else {}
    if answer_check != "strict":  # another prompt is asked for by name (medrl.judges.prompts.ANSWER_CHECKS)
        kw["check"] = answer_check
    try:
        v = await judge.answer_correct(item["question"], item["reference"], item["candidate"], **kw)
    except Exception as exc:  # noqa: BLE001 - one bad item is unscored, never a failed run
        return {"verdict": None, "error": f"{type(exc).__name__}: {exc}"}
    if not v.scored:
        return {"verdict": None, "error": v.error or "unscored", "raw": v.raw}
    return {"verdict": bool(v.value), "raw": v.raw}


async def _judge_trace(judge: Any, item: dict, image: Any, step_prompt: str = "hardened",
                       answer_check: str = "strict") -> dict:
    kw = {"image": image} if image is not None else {}
    if step_prompt != "hardened":  # a judge is asked for another rule set by name (medrl.judges.prompts)
        kw["step_prompt"] = step_prompt
    steps = list(item["steps"])
    gold = item.get("gold_reasoning") or None
    evidence = None if gold else {"answer": item["reference"]}
    out: dict = {}
    try:
        v = await judge.verify_steps(item["question"], item["reference"], steps, gold_reasoning=gold,
                                     evidence=evidence, **kw)
        if v.scored and isinstance(v.value, list) and len(v.value) == len(steps):
            out["steps"] = [[int(bool(s.gold_alignment)), int(bool(s.answer_contribution))] for s in v.value]
        else:
            out["steps"] = None
            out["error"] = v.error or f"expected {len(steps)} step verdicts, got {v.value!r:.80}"
    except Exception as exc:  # noqa: BLE001
        out["steps"] = None
        out["error"] = f"{type(exc).__name__}: {exc}"
    if item.get("final_answer") is not None and item.get("answer_label") is not None:
        a = await _judge_answer(judge, {**item, "candidate": item["final_answer"]}, image, answer_check)
        out["answer_verdict"] = a["verdict"]
        if a.get("error"):
            out["answer_error"] = a["error"]
    return out


def run_judge(judge: Any, spec: str, items: Sequence[dict], out_dir: str | Path, *,
              data_root: Path | None = None, concurrency: int = 8, chunk_size: int = 32,
              progress: bool = True, step_prompt: str = "hardened", answer_check: str = "strict") -> list[dict]:
    """Judge every item that ``verdicts/<judge>.jsonl`` lacks (or holds only unscored: outages are
    retried), a chunk at a time (appended and flushed after each chunk), and add this run's
    calls, cache hits, tokens and seconds to ``stats/<judge>.json``. Returns the verdict rows of
    ``items``, in order (the latest row per item)."""
    from tqdm.auto import tqdm

    from medrl.judges.base import gather_bounded, run_sync

    out_dir = Path(out_dir)
    slug = judge_slug(spec)
    vpath = out_dir / "verdicts" / f"{slug}.jsonl"
    spath = out_dir / "stats" / f"{slug}.json"
    vpath.parent.mkdir(parents=True, exist_ok=True)
    spath.parent.mkdir(parents=True, exist_ok=True)
    done = {r["key"]: r for _, r in iter_jsonl(vpath, repair=True, objects_only=True) if "key" in r}
    keyed = [(_item_key(it), it) for it in items]
    todo = [(k, it) for k, it in keyed if k not in done or not _complete(done[k])]
    wants_images = bool(getattr(judge, "images", False))
    stats0 = dict(getattr(judge, "stats").as_dict()) if hasattr(getattr(judge, "stats", None), "as_dict") else {}
    earlier = _read_stats(spath)
    seconds = 0.0
    if todo:
        log.info("judge %s: %d items to judge (%d already in %s)", spec, len(todo), len(keyed) - len(todo), vpath)
    with tqdm(total=len(todo), desc=f"judge-bench {spec}", unit="item", disable=not progress) as bar:
        for i in range(0, len(todo), max(1, chunk_size)):
            chunk = todo[i:i + chunk_size]
            t0 = time.perf_counter()

            async def one(key: str, it: dict) -> dict:
                image = _image_for(it, data_root) if wants_images else None
                res = await (_judge_trace(judge, it, image, step_prompt, answer_check) if it["type"] == "trace"
                             else _judge_answer(judge, it, image, answer_check))
                return {"key": key, "id": it["id"], "type": it["type"], **res}

            rows = run_sync(gather_bounded([one(k, it) for k, it in chunk], concurrency))
            seconds += time.perf_counter() - t0
            append_jsonl(vpath, rows)
            for r in rows:
                done[r["key"]] = r
            _add_stats(spath, judge, earlier, stats0, seconds)
            bar.update(len(chunk))
    if not spath.exists():
        _add_stats(spath, judge, earlier, stats0, 0.0)
    return [done[k] for k, _ in keyed]


def _complete(row: dict) -> bool:
    """A saved verdict row with nothing unscored (an outage is retried on the next run)."""
    if row.get("type") == "trace":
        return row.get("steps") is not None and not row.get("answer_error")
    return row.get("verdict") is not None


def _add_stats(path: Path, judge: Any, earlier: dict, stats0: dict, seconds: float) -> None:
    """``stats/<judge>.json`` = totals of earlier runs (``earlier``) + this run's counts so far."""
    stats = getattr(judge, "stats", None)
    now = stats.as_dict() if hasattr(stats, "as_dict") else {}
    total = {k: earlier.get(k, 0) + now.get(k, 0) - stats0.get(k, 0) for k in set(now) | set(earlier) if k != "seconds"}
    total["seconds"] = round(float(earlier.get("seconds", 0.0)) + seconds, 3)
    path.write_text(json.dumps(total, indent=2, sort_keys=True), encoding="utf-8")


def _read_stats(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        log.warning("%s is not valid JSON; judge accounting starts afresh", path)
        return {}


# --------------------------------------------------------------------------- metrics
def _rate(xs: Sequence[bool]) -> float | None:
    return sum(bool(x) for x in xs) / len(xs) if xs else None


def kappa(human: Sequence[int], judge: Sequence[int]) -> float | None:
    """Cohen's kappa (sklearn.metrics.cohen_kappa_score), as in MRPO App. B.1 Table 3.

    None when it is undefined: no items, or both raters gave one and the same label throughout
    (chance agreement is then 1 and kappa is 0/0)."""
    if not human:
        return None
    if len(set(human) | set(judge)) < 2:
        return None
    from sklearn.metrics import cohen_kappa_score

    k = float(cohen_kappa_score(list(human), list(judge)))
    return None if k != k else k


def _first_failure(flags: Sequence[bool]) -> int | None:
    from medrl.eval.analysis import first_failure_index

    return first_failure_index(flags)


def answer_metrics(items: Sequence[dict], rows: Sequence[dict]) -> dict:
    """Accuracy, precision/recall of "correct", per kind and subkind, adversarial items accepted."""
    pairs = [(it, r.get("verdict")) for it, r in zip(items, rows)]
    scored = [(it, v) for it, v in pairs if v is not None]
    tp = sum(1 for it, v in scored if v and it["label"])
    fp = sum(1 for it, v in scored if v and not it["label"])
    fn = sum(1 for it, v in scored if not v and it["label"])
    out: dict[str, Any] = {
        "n": len(pairs), "scored": len(scored), "unscored": len(pairs) - len(scored),
        "accuracy": _rate([v == it["label"] for it, v in scored]),
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
    }
    p, r = out["precision"], out["recall"]
    out["f1"] = 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)
    for field in ("kind", "subkind"):
        groups: dict[str, list] = defaultdict(list)
        for it, v in pairs:
            groups[str(it.get(field) or "-")].append((it, v))
        out[f"by_{field}"] = {
            g: {"n": len(xs), "scored": sum(v is not None for _, v in xs),
                "accuracy": _rate([v == it["label"] for it, v in xs if v is not None]),
                "accepted": sum(1 for _, v in xs if v is True)}
            for g, xs in sorted(groups.items())}
    para = [v for it, v in scored if it["kind"] == "paraphrase" and it["label"]]
    near = [v for it, v in scored if it["kind"] == "near_miss" and not it["label"]]
    adv = [(it, v) for it, v in pairs if it["kind"] == "adversarial"]
    out["paraphrase_accepted"] = _rate(para)
    out["near_miss_rejected"] = _rate([not v for v in near])
    out["adversarial_n"] = len(adv)
    out["adversarial_accepted"] = sum(1 for it, v in adv if v is True and not it["label"])
    out["adversarial_accepted_ids"] = [it["id"] for it, v in adv if v is True and not it["label"]]
    out["errors"] = [{"id": it["id"], "kind": it["kind"], "subkind": it.get("subkind"), "label": it["label"],
                      "verdict": v, "candidate": it["candidate"][:200], "reference": it["reference"]}
                     for it, v in pairs if v is not None and v != it["label"]]
    return out


def step_metrics(items: Sequence[dict], rows: Sequence[dict]) -> dict:
    """Per-step agreement and Cohen's kappa for gold alignment, answer contribution and step
    validity (MRPO Eq. 3: valid = either criterion is 1), first-failure-point agreement per trace
    (MRPO Sec. 3: the first invalid step), and the judge's accuracy on the traces' final answers."""
    human: dict[str, list[int]] = {c: [] for c in _CRITERIA}
    judged: dict[str, list[int]] = {c: [] for c in _CRITERIA}
    ffp_same: list[bool] = []
    ffp_within1: list[bool] = []
    per_trace = []
    unscored = 0
    ans = []
    for it, r in zip(items, rows):
        if r.get("answer_verdict") is not None and it.get("answer_label") is not None:
            ans.append(r["answer_verdict"] == it["answer_label"])
        js = r.get("steps")
        if js is None:
            unscored += 1
            continue
        hl = [(int(x["gold_alignment"]), int(x["answer_contribution"])) for x in it["step_labels"]]
        for (hg, hc), (jg, jc) in zip(hl, js):
            human["gold_alignment"].append(hg)
            judged["gold_alignment"].append(jg)
            human["answer_contribution"].append(hc)
            judged["answer_contribution"].append(jc)
            human["valid"].append(int(bool(hg or hc)))
            judged["valid"].append(int(bool(jg or jc)))
        hf = _first_failure([bool(g or c) for g, c in hl])
        jf = _first_failure([bool(g or c) for g, c in js])
        ffp_same.append(hf == jf)
        ffp_within1.append(hf == jf or (hf is not None and jf is not None and abs(hf - jf) <= 1))
        per_trace.append({"id": it["id"], "pattern": it.get("pattern"), "human_ffp": hf, "judge_ffp": jf,
                          "human_valid": [int(bool(g or c)) for g, c in hl],
                          "judge_valid": [int(bool(g or c)) for g, c in js]})
    out: dict[str, Any] = {"traces": len(items), "scored_traces": len(items) - unscored, "unscored_traces": unscored,
                           "steps": len(human["valid"])}
    for c in _CRITERIA:
        h, j = human[c], judged[c]
        out[c] = {"agreement": _rate([a == b for a, b in zip(h, j)]), "kappa": kappa(h, j),
                  "human_positive": _rate(h), "judge_positive": _rate(j)}
    out["ffp_agreement"] = _rate(ffp_same)
    out["ffp_within_one_step"] = _rate(ffp_within1)
    out["final_answer_accuracy"] = _rate(ans)
    out["per_trace"] = per_trace
    return out


def summary_of(m: dict) -> dict:
    """The headline numbers of one judge's metrics (what eval reports and docs quote)."""
    a, s = m.get("answers") or {}, m.get("steps") or {}
    return {
        "answer_accuracy": a.get("accuracy"), "answer_precision": a.get("precision"), "answer_recall": a.get("recall"),
        "paraphrase_accepted": a.get("paraphrase_accepted"), "near_miss_rejected": a.get("near_miss_rejected"),
        "adversarial_accepted": a.get("adversarial_accepted"), "adversarial_n": a.get("adversarial_n"),
        "gold_alignment_kappa": (s.get("gold_alignment") or {}).get("kappa"),
        "answer_contribution_kappa": (s.get("answer_contribution") or {}).get("kappa"),
        "step_validity_kappa": (s.get("valid") or {}).get("kappa"),
        "step_validity_agreement": (s.get("valid") or {}).get("agreement"),
        "ffp_agreement": s.get("ffp_agreement"),
        "n_answers": a.get("n"), "n_steps": s.get("steps"), "n_traces": s.get("traces"),
    }


# --------------------------------------------------------------------------- the whole benchmark
def run_bench(judges: Sequence[str | Any], out_dir: str | Path, *, labels: str | Path | None = None,
              data_root: str | Path | None = None, judge_options: dict | None = None,
              concurrency: int = 8, chunk_size: int = 32, progress: bool = True,
              record: bool = True, record_path: str | Path | None = None, limit: int | None = None,
              step_prompts: Sequence[str] = ("hardened",), answer_checks: Sequence[str] = ("strict",)) -> dict:
    """Run each judge over the labelled file, write ``metrics.json`` and the report, return the
    metrics. ``judges``: specs (``"reference"``, ``"openai:<model>"``) or judge objects.
    ``step_prompts``: the step-verification prompts to measure each judge under
    (:data:`medrl.judges.prompts.STEP_PROMPTS`); a prompt other than ``"hardened"`` is reported as
    the judge ``"<name> [step_prompt=<prompt>]"``. ``answer_checks``: likewise the answer prompts
    (:data:`medrl.judges.prompts.ANSWER_CHECKS`; ``"medix"`` is MediX-R1's R_llm prompt), reported
    as ``"<name> [answer_check=<check>]"`` when not ``"strict"``.
    ``judge_options`` go to :func:`medrl.judges.build_judge` (base_url, cache_path, ...).
    ``record``: also store each judge's headline numbers in the cache folder's
    ``judge_agreement.json`` (or ``record_path``) so :func:`known_agreement` finds them."""
    from medrl.judges import build_judge

    labels_path = Path(labels) if labels else default_labels()
    answers, traces = load_labels(labels_path)
    if limit is not None:
        answers, traces = answers[:limit], traces[:limit]
    items = [{**a, "type": "answer"} for a in answers] + [{**t, "type": "trace"} for t in traces]
    root = _resolve_root(data_root)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    labels_sha = hashlib.sha256(labels_path.read_bytes()).hexdigest()
    metrics: dict[str, Any] = {
        "labels": str(labels_path), "labels_sha256": labels_sha, "n_answers": len(answers), "n_traces": len(traces),
        "data_root": str(root) if root else None, "measured": _dt.date.today().isoformat(),
        "medrl_version": _version(), "judges": {},
    }
    from medrl.judges.prompts import ANSWER_CHECKS, STEP_PROMPTS

    for sp in step_prompts:
        if sp not in STEP_PROMPTS:
            raise ValueError(f"step prompt must be one of {', '.join(STEP_PROMPTS)}, got {sp!r}")
    for ac in answer_checks:
        if ac not in ANSWER_CHECKS:
            raise ValueError(f"answer check must be one of {', '.join(ANSWER_CHECKS)}, got {ac!r}")
    runs = [(spec, sp, ac) for spec in judges for sp in step_prompts for ac in answer_checks]
    for spec, sp, ac in runs:
        judge = build_judge(spec, **(judge_options or {})) if isinstance(spec, str) else spec
        name = spec if isinstance(spec, str) else getattr(judge, "name", type(judge).__name__)
        name = name if sp == "hardened" else f"{name} [step_prompt={sp}]"
        name = name if ac == "strict" else f"{name} [answer_check={ac}]"
        if getattr(judge, "images", False):  # every image must resolve before the first request
            if root is None:
                raise FileNotFoundError(f"judge {name} takes images but no data folder was found; pass --data-root")
            for it in items:
                _image_for(it, root)
        rows = run_judge(judge, name, items, out_dir, data_root=root, concurrency=concurrency,
                         chunk_size=chunk_size, progress=progress, step_prompt=sp, answer_check=ac)
        a_rows = [r for r in rows if r["type"] == "answer"]
        t_rows = [r for r in rows if r["type"] == "trace"]
        m = {"answers": answer_metrics(answers, a_rows) if answers else None,
             "steps": step_metrics(traces, t_rows) if traces else None,
             "judge_stats": _read_stats(out_dir / "stats" / f"{judge_slug(name)}.json")}
        m["summary"] = m["summary_all"] = {**summary_of(m), "split": "all"}
        if any(it.get("split") for it in items):  # per split; the frozen one is the headline
            m["splits"] = {}
            for sp in SPLITS:
                pa = [(it, r) for it, r in zip(answers, a_rows) if it.get("split") == sp]
                pt = [(it, r) for it, r in zip(traces, t_rows) if it.get("split") == sp]
                sm = {"answers": answer_metrics([a for a, _ in pa], [r for _, r in pa]) if pa else None,
                      "steps": step_metrics([t for t, _ in pt], [r for _, r in pt]) if pt else None}
                sm["summary"] = {**summary_of(sm), "split": sp}
                m["splits"][sp] = sm
            m["summary"] = m["splits"][HEADLINE_SPLIT]["summary"]
        metrics["judges"][name] = m
        close = getattr(judge, "close", None)
        if callable(close) and isinstance(spec, str):
            close()
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False), encoding="utf-8")
    bench_report(out_dir, metrics)
    if record and limit is None:  # a --limit smoke run measures too little to quote
        for name, m in metrics["judges"].items():
            extra = {"dev": (m.get("splits") or {}).get("dev", {}).get("summary")} if m.get("splits") else {}
            record_agreement(name, {**m["summary"], **extra}, labels_path=labels_path, labels_sha=labels_sha,
                             measured=metrics["measured"], path=Path(record_path) if record_path else None)
    return metrics


def _resolve_root(data_root: str | Path | None) -> Path | None:
    from medrl.common.paths import data_root as find

    try:
        return find(data_root)
    except FileNotFoundError:
        if data_root:
            raise
        return None


def _version() -> str:
    try:
        from medrl import __version__

        return str(__version__)
    except Exception:  # noqa: BLE001
        return "unknown"


# --------------------------------------------------------------------------- report
def bench_report(out_dir: Path, metrics: dict) -> tuple[Path, Path]:
    """``report.md`` + ``report.html``: judges side by side, per kind, per criterion, errors."""
    from medrl.eval.report import Report, fmt

    rep = Report("medrl judge-bench: judges against human labels")
    rep.paragraph(f"Labels: {metrics['labels']} ({metrics['n_answers']} answer items, {metrics['n_traces']} "
                  f"reasoning traces; sha256 {metrics['labels_sha256'][:12]}). Measured {metrics['measured']} "
                  f"with medrl {metrics['medrl_version']}. Step criteria follow MRPO App. H.2; a step is valid "
                  "when gold alignment or answer contribution is 1 (MRPO Eq. 3). Kappa is Cohen's kappa "
                  "(MRPO App. B.1 reports 0.71 for GPT-5-mini vs a human on step validity); '-' = undefined.")
    names = list(metrics["judges"])
    split_runs = any(metrics["judges"][n].get("splits") for n in names)
    if split_runs:
        rep.paragraph("The labels are split: 'frozen' items were never used to tune any rule, 'dev' items were used "
                      "while writing the reference judge's rules. The headline table is the FROZEN split; the dev "
                      "split and all items follow, and their figures are an upper bound for the rule-based judge. "
                      "The per-kind tables below cover all items.")
    s = {n: metrics["judges"][n]["summary"] for n in names}
    rows = [
        ("Answer accuracy (%)", "answer_accuracy", True), ("Answer precision (%)", "answer_precision", True),
        ("Answer recall (%)", "answer_recall", True), ("Paraphrases accepted (%)", "paraphrase_accepted", True),
        ("Near misses rejected (%)", "near_miss_rejected", True),
        ("Adversarial accepted", "adversarial_accepted", False),
        ("Gold alignment kappa", "gold_alignment_kappa", False),
        ("Answer contribution kappa", "answer_contribution_kappa", False),
        ("Step validity kappa", "step_validity_kappa", False),
        ("Step validity agreement (%)", "step_validity_agreement", True),
        ("First-failure-point agreement (%)", "ffp_agreement", True),
    ]
    def side_by_side(title: str, summ: dict, caption: str) -> None:
        rep.heading(title)
        body = []
        for label, key, pct in rows + [("Answer items", "n_answers", False), ("Steps", "n_steps", False)]:
            cells = []
            for n in names:
                v = (summ.get(n) or {}).get(key)
                if key == "adversarial_accepted" and v is not None:
                    cells.append(f"{v} of {summ[n].get('adversarial_n')}")
                else:
                    cells.append(fmt(v, pct=pct))
            body.append([label] + cells)
        rep.table(["Metric"] + names, body, caption)

    note = "Percentages over the items the judge scored; unscored items are counted below."
    if split_runs:
        side_by_side("Judges side by side: frozen split (headline)", s, note)
        side_by_side("Dev split (used while writing the rules: an upper bound)",
                     {n: ((metrics["judges"][n].get("splits") or {}).get("dev") or {}).get("summary") for n in names}, note)
        side_by_side("All items (dev + frozen)", {n: metrics["judges"][n].get("summary_all") for n in names}, note)
    else:
        side_by_side("Judges side by side", s, note)
    rep.heading("Judge accounting")
    keys = ["calls", "cache_hits", "deduplicated", "retries", "failures", "input_tokens", "output_tokens", "seconds"]
    rep.table(["Judge"] + keys, [[n] + [fmt(metrics["judges"][n]["judge_stats"].get(k)) for k in keys] for n in names],
              "Summed over every run into this folder; cached verdicts cost no call.")
    if any(metrics["judges"][n]["answers"] for n in names):
        rep.heading("Answer correctness per kind")

        def group_table(field: str, caption: str = "") -> None:
            groups = {n: (metrics["judges"][n]["answers"] or {}).get(f"by_{field}", {}) for n in names}
            keys_ = sorted({k for g in groups.values() for k in g})
            rep.table([field.capitalize()] + [f"{n} acc. (%)" for n in names] + ["N"],
                      [[k] + [fmt((groups[n].get(k) or {}).get("accuracy"), pct=True) for n in names]
                       + [next((groups[n][k]["n"] for n in names if k in groups[n]), "-")] for k in keys_], caption)

        group_table("kind")
        from medrl.eval import plots

        kinds = [k for k in ANSWER_KINDS if any(k in ((metrics["judges"][n]["answers"] or {}).get("by_kind") or {})
                                                for n in names)]
        fig = plots.grouped_bars(
            kinds, {n: [(((metrics["judges"][n]["answers"] or {}).get("by_kind") or {}).get(k) or {}).get("accuracy")
                        for k in kinds] for n in names},
            out_dir / "figures" / "answer_accuracy_by_kind.png", ylabel="Agreement with labels (%)",
            title="Answer correctness: judge vs human labels, per item kind")
        rep.figure(fig, "Share of items per kind where the judge's verdict equals the human label.")
        group_table("subkind", "Accuracy per subkind (side, level, negation, abbreviation, ...).")
    if any(metrics["judges"][n]["steps"] for n in names):
        rep.heading("Reasoning steps per criterion")
        crit_rows = []
        for n in names:
            st = metrics["judges"][n]["steps"] or {}
            for c, label in (("gold_alignment", "Gold alignment"), ("answer_contribution", "Answer contribution"),
                             ("valid", "Step validity")):
                d = st.get(c) or {}
                crit_rows.append([n, label, st.get("steps"), fmt(d.get("agreement"), pct=True), fmt(d.get("kappa")),
                                  fmt(d.get("human_positive"), pct=True), fmt(d.get("judge_positive"), pct=True)])
        rep.table(["Judge", "Criterion", "Steps", "Agreement (%)", "Cohen's kappa", "Human: 1 (%)", "Judge: 1 (%)"],
                  crit_rows)
    for n in names:
        st = metrics["judges"][n]["steps"]
        if st and st.get("per_trace"):
            rep.heading(f"First failure point per trace: {n}")
            rep.table(["Trace", "Pattern", "Human FFP", "Judge FFP", "Human valid steps", "Judge valid steps"],
                      [[t["id"], t.get("pattern") or "-", fmt(t["human_ffp"]), fmt(t["judge_ffp"]),
                        "".join(map(str, t["human_valid"])), "".join(map(str, t["judge_valid"]))]
                       for t in st["per_trace"]],
                      "FFP = index of the first invalid step (MRPO Sec. 3), '-' = no step fails; 1 = valid, 0 = invalid.")
        a = metrics["judges"][n]["answers"]
        if a and a["errors"]:
            rep.heading(f"Disagreements of {n} on answers (first 40 of {len(a['errors'])})")
            rep.table(["Id", "Kind", "Subkind", "Reference", "Candidate", "Label", "Judge"],
                      [[e["id"], e["kind"], e.get("subkind") or "-", e["reference"], e["candidate"][:80],
                        fmt(e["label"]), fmt(e["verdict"])] for e in a["errors"][:40]])
    return rep.write(out_dir)


# --------------------------------------------------------------------------- known agreement
def _norm_spec(spec: str) -> str:
    s = str(spec or "").strip()
    kind, sep, model = s.partition(":")
    return f"{kind.lower()}{sep}{model}" if sep else s.lower()


def _user_agreement_file() -> Path:
    from medrl.common.paths import cache_dir

    return cache_dir() / AGREEMENT_FILE


def record_agreement(spec: str, summary: dict, *, labels_path: Path, labels_sha: str, measured: str,
                     path: Path | None = None) -> Path:
    """Add (or replace) ``spec``'s measured agreement in the user's ``judge_agreement.json``."""
    path = Path(path) if path else _user_agreement_file()
    data = {"judges": {}}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            log.warning("%s is not valid JSON; starting it afresh", path)
    data.setdefault("judges", {})[_norm_spec(spec)] = {
        **summary, "judge": spec, "labels": labels_path.name, "labels_sha256": labels_sha, "measured": measured,
        "medrl_version": _version()}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def known_agreement(judge_spec: str | None) -> dict | None:
    """The measured agreement of ``judge_spec`` with human labels, or None when never measured.

    Looks in the user's cache folder first (``$MEDRL_CACHE/judge_agreement.json``, written by
    every ``medrl judge-bench`` run unless ``--no-record``), then in the file shipped with medrl
    (``medrl/judges/labels/judge_agreement.json``, the maintainers' run on the shipped set). The dict
    holds :func:`summary_of`'s numbers plus ``judge``, ``labels``, ``measured`` (date),
    ``medrl_version`` and ``source`` ("user" or "shipped").
    """
    if not judge_spec:
        return None
    key = _norm_spec(judge_spec)
    from medrl.judges.labels import JUDGE_AGREEMENT

    for source, path in (("user", None), ("shipped", JUDGE_AGREEMENT)):
        try:
            p = _user_agreement_file() if path is None else Path(path)
            if not p.exists():
                continue
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("cannot read judge agreement file (%s)", exc)
            continue
        entry = (data.get("judges") or {}).get(key)
        if entry:
            return {**entry, "source": source}
    return None


def _agreement_figures(info: dict) -> str:
    def pct(v: Any) -> str:
        return "-" if v is None else f"{100 * v:.0f}%"

    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.2f}"

    return (f"answer accuracy {pct(info.get('answer_accuracy'))}, paraphrases accepted "
            f"{pct(info.get('paraphrase_accepted'))}, near misses rejected {pct(info.get('near_miss_rejected'))}, "
            f"adversarial answers accepted {info.get('adversarial_accepted')} of {info.get('adversarial_n')}; "
            f"step-validity Cohen's kappa {num(info.get('step_validity_kappa'))}")


def describe_agreement(judge_spec: str | None) -> str:
    """One sentence for a report: which judge scored it and how it was measured to agree with
    humans - the frozen split's figures first (never used for tuning), then the dev split's,
    named as an upper bound."""
    if not judge_spec:
        return "No judge scored this report."
    info = known_agreement(judge_spec)
    if not info:
        return (f"Judge: {judge_spec}. Its agreement with human labels has not been measured; run "
                f"`medrl judge-bench --judge {judge_spec}` to measure it.")
    where = (f"{info.get('labels')} ({info.get('measured')}, medrl {info.get('medrl_version')}, "
             f"{info['source']} result)")
    if info.get("split") == HEADLINE_SPLIT:
        text = (f"Judge: {judge_spec}. Measured against human labels on the frozen split of {where}, "
                f"{info.get('n_answers')} answers and {info.get('n_steps')} steps never used to tune its rules: "
                f"{_agreement_figures(info)} (MRPO's GPT-5-mini vs a human: 0.71).")
        dev = info.get("dev") or {}
        if dev:
            text += (f" On the dev split, used while writing the rules (an upper bound): "
                     f"{_agreement_figures(dev)}.")
        return text
    return (f"Judge: {judge_spec}. Measured against human labels on {where}: {_agreement_figures(info)} "
            "(MRPO's GPT-5-mini vs a human: 0.71). These labels have no frozen split; if the judge's rules were "
            "written against them, the figures are an upper bound.")


def agreement_help(judge_spec: str = "reference") -> str:
    """A short clause for ``--help`` texts (``%`` escaped for argparse): the judge's frozen-split
    figures and the dev-split figure named as an upper bound."""
    a = known_agreement(judge_spec)
    if not a:
        return "Its agreement with human labels has not been measured"

    def pct(v: Any) -> str:
        return "?" if v is None else f"{100 * v:.0f}%%"

    def num(v: Any) -> str:
        return "?" if v is None else f"{v:.2f}"

    if a.get("split") != HEADLINE_SPLIT:
        return (f"Measured on {a.get('labels')} ({a.get('measured', '?')}): answer accuracy "
                f"{pct(a.get('answer_accuracy'))}, step-validity kappa {num(a.get('step_validity_kappa'))} - an "
                "upper bound, the rules were developed on that set")
    dev = a.get("dev") or {}
    return (f"Measured on the frozen split of the shipped labelled set ({a.get('measured', '?')}; items never used "
            f"to tune its rules): answer accuracy {pct(a.get('answer_accuracy'))}, adversarial answers accepted "
            f"{a.get('adversarial_accepted')} of {a.get('adversarial_n')}, step-validity kappa "
            f"{num(a.get('step_validity_kappa'))}; on the dev split used while writing the rules (an upper bound): "
            f"answer accuracy {pct(dev.get('answer_accuracy'))}, step-validity kappa "
            f"{num(dev.get('step_validity_kappa'))}")
