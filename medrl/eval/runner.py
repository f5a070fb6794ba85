"""``medrl eval`` engine: generate -> save -> score -> summarize -> report, resumable.

Layout of an eval folder (``--out``)::

    config.json        what was evaluated (model, datasets, generation settings, judge)
    generations.jsonl  one row per record as soon as its batch is generated (full output kept)
    outputs.jsonl      the same rows scored (judge verdicts, step verdicts, text metrics)
    metrics.json       per-dataset and macro metrics with 95% intervals (each names its method), judge accounting
    report.md / report.html / figures/*.png
    samples.jsonl      with ``samples=n`` (``medrl eval --samples n``): n sampled outputs per
    samples_scored.jsonl  record (keys ``dataset:id#j``) and their verdicts, for pass@k
    pass_at_k.json     pass@k per dataset (:mod:`medrl.eval.passk`; CAPO Fig. 7)

Both JSONL files are appended batch by batch and flushed, so an interrupted eval continues where
it stopped: rerunning the same command skips every record already generated and every output
already scored, and asks the judge again for every output it left unscored (an outage, an
unparseable verdict); the re-scored row is appended and the last row of a key wins
(``outputs.jsonl`` is compacted when the stage ends). ``config.json`` stores the judge's identity
(spec, endpoint, model, prompt version, image setting, :func:`medrl.judges.base.judge_identity`):
resuming with another judge is refused unless ``rescore_unscored`` (then the new judge scores
only what is still unscored, and ``config.json`` lists both judges). (MediX-R1, arXiv
2602.23363, Sec. 3: generation, evaluation and scoring are separate stages, the full response is
persisted per sample). :func:`rescore_run` re-scores a folder's saved generations with another
judge without regenerating (MRPO, arXiv 2606.31825, App. B.2, cross-judge evaluation).

Generation is pluggable: ``generate_fn(records) -> list[str]`` (one output per record, same
order); :func:`build_generate_fn` makes one from a model with :mod:`medrl.models` or vLLM. An
output may be a :class:`Generation` (a ``str`` that also says how generation stopped): each
generation row then carries ``truncated`` (:func:`medrl.eval.scoring.is_truncated`), counted
per dataset and in the report.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from medrl.eval.scoring import base_row, is_truncated, missing_scores, score_rows, summarize_scores
from medrl.common.jsonl import append_jsonl, read_jsonl, write_jsonl
from medrl.judges.base import judge_identity
from medrl.common.text import clean_obj, clean_text

log = logging.getLogger(__name__)

GenerateFn = Callable[[Sequence[Any]], list[str]]

#: config.json keys that must match when an eval folder is resumed.
_RESUME_KEYS = ("model", "datasets", "generation", "rubrics", "verify_steps")


@dataclass
class EvalDataset:
    """Records of one benchmark split; ``domain`` is "in" (in-distribution) or "out"."""

    name: str
    records: list
    domain: str = "in"


class Generation(str):
    """A generated output (it *is* the text) plus how generation stopped: ``n_tokens`` (new
    tokens), ``max_new_tokens`` (the limit) and/or ``finish_reason`` ("length" when the limit cut
    it, vLLM's convention). Compares and serialises as the plain text."""

    n_tokens: int | None
    max_new_tokens: int | None
    finish_reason: str | None

    def __new__(cls, text: str, *, n_tokens: int | None = None, max_new_tokens: int | None = None,
                finish_reason: str | None = None):
        obj = super().__new__(cls, text)
        obj.n_tokens, obj.max_new_tokens, obj.finish_reason = n_tokens, max_new_tokens, finish_reason
        return obj

    @property
    def truncated(self) -> bool | None:
        return is_truncated(str(self), n_tokens=self.n_tokens, max_new_tokens=self.max_new_tokens,
                            finish_reason=self.finish_reason)


def _generation_row(rec: Any, ds: "EvalDataset", out: Any) -> dict:
    text = clean_text(str(out))
    row = base_row(rec, ds.name, ds.domain, text)
    row["truncated"] = is_truncated(text, n_tokens=getattr(out, "n_tokens", None),
                                    max_new_tokens=getattr(out, "max_new_tokens", None),
                                    finish_reason=getattr(out, "finish_reason", None))
    if getattr(out, "n_tokens", None) is not None:
        row["n_tokens"] = int(out.n_tokens)
    subject = (getattr(rec, "extras", None) or {}).get("subject")
    if subject:  # MMMU / MMLU subject: the per-subject breakdown (CAPO Table 3)
        row["subject"] = str(subject)
    return row


class EvalFolderMismatch(ValueError):
    """The output folder holds an eval with different settings."""


# --------------------------------------------------------------------------- JSONL helpers
def read_rows(path: str | Path, repair: bool = False) -> list[dict]:
    """Rows of a JSONL file written by this module (:func:`medrl.common.jsonl.read_jsonl`: safe for
    every Unicode line separator; a torn last line is dropped, and cut from the file when
    ``repair``; a bad line elsewhere is an error naming the file and line)."""
    return read_jsonl(path, repair=repair)


def _append_rows(path: Path, rows: Iterable[dict]) -> None:
    append_jsonl(path, rows)


def _batches(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), max(1, size)):
        yield items[i : i + size]


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="rec", disable=not enabled)


# --------------------------------------------------------------------------- config
def _same_judge(old: Any, new: Any) -> bool:
    if isinstance(old, str) or old is None or isinstance(new, str) or new is None:  # folders before identities
        spec = lambda j: j.get("spec") if isinstance(j, dict) else j  # noqa: E731
        return spec(old) == spec(new)
    return old == new


def _check_config(out_dir: Path, config: dict, overwrite: bool, rescore_unscored: bool = False) -> None:
    path = out_dir / "config.json"
    if path.exists() and not overwrite:
        old = json.loads(path.read_text(encoding="utf-8"))
        diff = [k for k in _RESUME_KEYS if old.get(k) != config.get(k)]
        if diff:
            raise EvalFolderMismatch(
                f"{out_dir} already holds an eval with different {', '.join(diff)} "
                f"(saved: {[old.get(k) for k in diff]}, now: {[config.get(k) for k in diff]}). "
                "Use another --out, pass --overwrite to start over, or `medrl eval --rescore` to "
                "score saved outputs with another judge."
            )
        if not _same_judge(old.get("judge"), config.get("judge")):
            if not rescore_unscored:
                oj, nj = old.get("judge"), config.get("judge")
                fields = sorted(k for k in set(oj or {}) | set(nj or {})
                                if (oj or {}).get(k) != (nj or {}).get(k)) if isinstance(oj, dict) and isinstance(nj, dict) else ["spec"]
                raise EvalFolderMismatch(
                    f"{out_dir} was scored by another judge (differs in {', '.join(fields)}; saved: {oj}, now: {nj}). "
                    "Its scores would mix two judges. Use another --out, `medrl eval --rescore "
                    f"{out_dir} --out NEW` to score every output with this judge, --overwrite to start over, "
                    "or --rescore-unscored to keep the saved scores and let this judge score only the "
                    "outputs still unscored (both judges are then listed in config.json)."
                )
            history = list(old.get("judges_used") or [old.get("judge")])
            if config.get("judge") not in history:
                history.append(config.get("judge"))
            config["judges_used"] = history
            log.warning("%s: keeping the scores of judge %s; judge %s scores only the unscored outputs",
                        out_dir, old.get("judge"), config.get("judge"))
        elif old.get("judges_used"):
            config["judges_used"] = old["judges_used"]
    if overwrite:
        for name in ("generations.jsonl", "outputs.jsonl", "metrics.json"):
            (out_dir / name).unlink(missing_ok=True)
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")


def is_unscored(row: dict, rubrics: Sequence[str] = ("binary",), verify_steps: bool = True,
                protocols: Sequence[str] = ()) -> bool:
    """Whether a scored row still lacks a judge verdict it should have (an outage, an
    unparseable reply, a row that failed, a score a newly asked eval protocol needs): resuming
    asks the judge again for it."""
    scores = row.get("scores") or {}
    if any(scores.get(f"judge_{r}", None) is None for r in rubrics):
        return True
    if protocols and missing_scores(row, protocols):
        return True
    return bool(verify_steps and row.get("steps") and row.get("step_verdicts") is None)


_SCORED_FIELDS = ("answer", "prediction", "well_formed", "scores", "judge", "steps", "step_verdicts", "row_error")


# --------------------------------------------------------------------------- stages
def generate_stage(datasets: Sequence[EvalDataset], generate_fn: GenerateFn, out_dir: Path, *,
                   batch_size: int = 8, progress: bool = True) -> list[dict]:
    """Generate what ``generations.jsonl`` lacks, one batch at a time (appended and flushed
    after each batch). Returns all generation rows in dataset/record order."""
    path = out_dir / "generations.jsonl"
    done = {r["key"]: r for r in read_rows(path, repair=True)}
    todo: list[tuple[EvalDataset, Any]] = []
    seen: set[str] = set()
    for ds in datasets:
        for rec in ds.records:
            key = f"{ds.name}:{rec.id}"
            if key in seen:
                raise ValueError(f"dataset {ds.name}: record id {rec.id!r} occurs twice; ids must be unique")
            seen.add(key)
            if key not in done:
                todo.append((ds, rec))
    if todo:
        log.info("generating %d outputs (%d already saved in %s)", len(todo), len(done), path)
    with _progress(len(todo), "generate", progress) as bar:
        for batch in _batches(todo, batch_size):
            outs = generate_fn([rec for _, rec in batch])
            if len(outs) != len(batch):
                raise ValueError(f"generate_fn returned {len(outs)} outputs for {len(batch)} records")
            rows = [_generation_row(rec, ds, out) for (ds, rec), out in zip(batch, outs)]
            _append_rows(path, rows)
            for r in rows:
                done[r["key"]] = r
            bar.update(len(batch))
    return [done[f"{ds.name}:{rec.id}"] for ds in datasets for rec in ds.records]


def score_stage(gen_rows: Sequence[dict], judge: Any, out_dir: Path, *, rubrics: Sequence[str] = ("binary",),
                verify_steps: bool = True, text_metrics: bool = True, embedding_model: str | None = None,
                bertscore_model: str | None = None,
                chunk_size: int = 32, concurrency: int = 16, progress: bool = True,
                protocols: Sequence[str] = (), filename: str = "outputs.jsonl", judge_rounds: int = 1) -> list[dict]:
    """Score what ``outputs.jsonl`` (or ``filename``) lacks, ``chunk_size`` rows at a time
    (appended and flushed after each chunk). Returns all scored rows in the order of ``gen_rows``."""
    path = out_dir / filename
    n_lines = 0
    done: dict[str, dict] = {}
    for r in read_rows(path, repair=True):
        done[r["key"]] = r  # the last row of a key wins (a re-scored row is appended)
        n_lines += 1
    retry = [r for r in gen_rows if r["key"] in done and is_unscored(done[r["key"]], rubrics, verify_steps, protocols)]
    if retry and judge is not None:
        log.info("asking the judge again for %d output(s) left unscored in %s", len(retry), path)
    todo = [r for r in gen_rows if r["key"] not in done]
    if judge is not None:
        todo += [{k: v for k, v in r.items() if k not in _SCORED_FIELDS} for r in retry]
    todo = [clean_obj(r) for r in todo]  # lone surrogates from an old folder or a model -> U+FFFD
    with _progress(len(todo), "score", progress) as bar:
        for chunk in _batches(todo, chunk_size):
            scored = score_rows(chunk, judge, rubrics=rubrics, verify_steps=verify_steps,
                                text_metrics=text_metrics, embedding_model=embedding_model,
                                bertscore_model=bertscore_model, concurrency=concurrency, protocols=protocols,
                                judge_rounds=judge_rounds)
            _append_rows(path, scored)
            for r in scored:
                done[r["key"]] = r
            bar.update(len(chunk))
            n_lines += len(scored)
    if n_lines > len(done):  # drop the superseded rows of re-scored outputs
        write_jsonl(path, [done[k] for k in done])
    return [done[r["key"]] for r in gen_rows]


SAMPLES_FILE = "samples.jsonl"
SAMPLES_SCORED_FILE = "samples_scored.jsonl"
PASS_AT_K_FILE = "pass_at_k.json"


def _sample(generate_fn: GenerateFn, records: list, temperature: float) -> list:
    """``generate_fn(records, temperature=...)`` when it takes a temperature (the generators of
    :func:`build_generate_fn` do), else ``generate_fn(records)`` (a sampler of its own)."""
    import inspect

    try:
        params = inspect.signature(generate_fn).parameters.values()
    except (TypeError, ValueError):
        params = ()
    if any(q.name == "temperature" or q.kind == q.VAR_KEYWORD for q in params):
        return generate_fn(records, temperature=temperature)
    return generate_fn(records)


def sample_stage(datasets: Sequence[EvalDataset], generate_fn: GenerateFn, out_dir: Path, *, n: int,
                 temperature: float, batch_size: int = 8, progress: bool = True) -> list[dict]:
    """``n`` sampled outputs per record at ``temperature`` into ``samples.jsonl`` (key
    ``dataset:id#j``, ``sample`` = j), what it lacks only (resumable like :func:`generate_stage`).
    Returns the rows in dataset/record/sample order."""
    if n < 1:
        raise ValueError(f"samples: need n >= 1, got {n}")
    path = out_dir / SAMPLES_FILE
    done = {r["key"]: r for r in read_rows(path, repair=True)}
    order = [(ds, rec, j) for ds in datasets for rec in ds.records for j in range(n)]
    todo = [t for t in order if f"{t[0].name}:{t[1].id}#{t[2]}" not in done]
    with _progress(len(todo), f"sample x{n}", progress) as bar:
        for batch in _batches(todo, batch_size):
            outs = _sample(generate_fn, [rec for _, rec, _ in batch], temperature)
            if len(outs) != len(batch):
                raise ValueError(f"generate_fn returned {len(outs)} outputs for {len(batch)} records")
            rows = []
            for (ds, rec, j), out in zip(batch, outs):
                row = _generation_row(rec, ds, out)
                row["key"], row["sample"] = f"{row['key']}#{j}", j
                rows.append(row)
            _append_rows(path, rows)
            for r in rows:
                done[r["key"]] = r
            bar.update(len(batch))
    return [done[f"{ds.name}:{rec.id}#{j}"] for ds, rec, j in order]


def pass_at_k_stage(sample_rows: Sequence[dict], out_dir: Path, *, protocol: str | None = None,
                    ks: Sequence[int] | None = None) -> dict:
    """pass@k (:mod:`medrl.eval.passk`) of scored sample rows, each decided by ``protocol``'s
    verdict (:func:`medrl.eval.protocols.row_correct`; None = unscored, left out); writes
    ``pass_at_k.json`` and ``figures/pass_at_k.png``."""
    from medrl.eval.passk import plot_pass_at_k, summarize_pass_at_k
    from medrl.eval.protocols import DEFAULT_PROTOCOL, row_correct

    protocol = protocol or DEFAULT_PROTOCOL
    decided = [{"dataset": r["dataset"], "record_id": r["record_id"], "correct": row_correct(r, protocol)}
               for r in sample_rows]
    summary = summarize_pass_at_k(decided, ks)
    summary["protocol"] = protocol
    summary["unscored"] = sum(1 for d in decided if d["correct"] is None)
    (out_dir / PASS_AT_K_FILE).write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if summary["ks"]:
        fig_dir = out_dir / "figures"
        fig_dir.mkdir(parents=True, exist_ok=True)
        plot_pass_at_k(summary, fig_dir / "pass_at_k.png")
    return summary


def finish(out_dir: Path, rows: Sequence[dict], config: dict, judge: Any = None, *,
           n_boot: int = 1000, seed: int = 0) -> dict:
    """Write ``metrics.json`` and the report; returns the metrics."""
    metrics = summarize_scores(rows, n_boot=n_boot, seed=seed, protocols=config.get("protocols") or ())
    metrics["config"] = config
    if (out_dir / PASS_AT_K_FILE).exists() and config.get("samples"):
        metrics["pass_at_k"] = json.loads((out_dir / PASS_AT_K_FILE).read_text(encoding="utf-8"))
    stats = getattr(judge, "stats", None)
    if stats is not None and hasattr(stats, "as_dict"):
        metrics["judge_stats"] = stats.as_dict()
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False), encoding="utf-8")
    from medrl.eval.workflows import eval_report

    eval_report(out_dir, rows, metrics)
    return metrics


def run_eval(datasets: Sequence[EvalDataset], generate_fn: GenerateFn, judge: Any, out_dir: str | Path, *,
             model: str = "", generation: dict | None = None, rubrics: Sequence[str] = ("binary",),
             verify_steps: bool = True, text_metrics: bool = True, embedding_model: str | None = None,
                bertscore_model: str | None = None,
             batch_size: int = 8, chunk_size: int = 32, concurrency: int = 16, n_boot: int = 1000,
             seed: int = 0, overwrite: bool = False, progress: bool = True,
             rescore_unscored: bool = False, protocols: Sequence[str] = (), samples: int = 0,
             sample_temperature: float = 1.0, pass_ks: Sequence[int] | None = None, judge_rounds: int = 1) -> dict:
    """Generate on every dataset, save every full output, score, summarize and report.

    ``samples=n`` (> 0) also draws ``n`` outputs per record at ``sample_temperature`` (> 0)
    with the same ``generate_fn``, scores them (answers only: no step verification, no text
    metrics) and reports pass@k for ``pass_ks`` (default 1, 2, 4, ..., n; CAPO Fig. 7) under the
    first protocol (:func:`pass_at_k_stage`). The greedy outputs stay the eval's main result.
    ``judge_rounds``: evaluation rounds of every rubric grade (MediX-R1, :mod:`medrl.eval.scoring`).

    Resumable: rerun with the same arguments after an interruption and only the missing
    generations and scores (and the scores left unscored) are computed. A different judge is
    refused (:class:`EvalFolderMismatch`) unless ``rescore_unscored``. A judge that cannot
    authenticate raises :class:`medrl.judges.base.JudgeAuthError` at once; what was scored
    before stays saved. Returns the metrics (also in ``metrics.json``).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "model": model,
        "datasets": [{"name": d.name, "domain": d.domain, "n": len(d.records)} for d in datasets],
        "generation": generation or {},
        "judge": judge_identity(judge),
        "rubrics": list(rubrics),
        "verify_steps": bool(verify_steps),
        "text_metrics": bool(text_metrics),
        "protocols": list(protocols),
        **_judge_settings(protocols, judge_rounds),
    }
    if embedding_model or bertscore_model:  # text-metric encoders other than the offline MiniLM
        config["encoders"] = {"embedding_model": embedding_model, "bertscore_model": bertscore_model}
    if samples:
        if not sample_temperature or sample_temperature <= 0:
            raise ValueError(f"samples={samples} needs a sampling temperature > 0 (pass@k over greedy outputs "
                             f"is pass@1), got {sample_temperature}")
        from medrl.eval.protocols import DEFAULT_PROTOCOL

        config["samples"] = {"n": int(samples), "temperature": float(sample_temperature),
                             "protocol": (list(protocols) or [DEFAULT_PROTOCOL])[0]}
    _check_config(out_dir, config, overwrite, rescore_unscored)
    if overwrite:
        for name in (SAMPLES_FILE, SAMPLES_SCORED_FILE, PASS_AT_K_FILE):
            (out_dir / name).unlink(missing_ok=True)
    gen_rows = generate_stage(datasets, generate_fn, out_dir, batch_size=batch_size, progress=progress)
    rows = score_stage(gen_rows, judge, out_dir, rubrics=rubrics, verify_steps=verify_steps,
                       text_metrics=text_metrics, embedding_model=embedding_model, chunk_size=chunk_size,
                       bertscore_model=bertscore_model, concurrency=concurrency, progress=progress,
                       protocols=protocols, judge_rounds=judge_rounds)
    if samples:
        s_rows = sample_stage(datasets, generate_fn, out_dir, n=int(samples), temperature=float(sample_temperature),
                              batch_size=batch_size, progress=progress)
        s_rows = score_stage(s_rows, judge, out_dir, rubrics=rubrics, verify_steps=False, text_metrics=False,
                             chunk_size=chunk_size, concurrency=concurrency, progress=progress,
                             protocols=list(protocols) or [config["samples"]["protocol"]],
                             filename=SAMPLES_SCORED_FILE, judge_rounds=judge_rounds)
        pass_at_k_stage(s_rows, out_dir, protocol=config["samples"]["protocol"], ks=pass_ks)
    return finish(out_dir, rows, config, judge, n_boot=n_boot, seed=seed)


def rescore_run(src_dir: str | Path, judge: Any, out_dir: str | Path, *, rubrics: Sequence[str] = ("binary",),
                verify_steps: bool = True, text_metrics: bool = True, embedding_model: str | None = None,
                bertscore_model: str | None = None,
                chunk_size: int = 32, concurrency: int = 16, n_boot: int = 1000, seed: int = 0,
                overwrite: bool = False, progress: bool = True, rescore_unscored: bool = False,
                protocols: Sequence[str] = (), judge_rounds: int = 1) -> dict:
    """Score the saved generations of ``src_dir`` with another judge into ``out_dir`` (no
    generation; MRPO App. B.2 cross-judge evaluation). Resumable like :func:`run_eval`."""
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    if src_dir.resolve() == out_dir.resolve():
        raise ValueError("--rescore needs a new --out folder (the source keeps its own scores)")
    src_cfg_path = src_dir / "config.json"
    if not src_cfg_path.exists() or not (src_dir / "generations.jsonl").exists():
        raise FileNotFoundError(f"{src_dir} is not an eval folder (config.json and generations.jsonl needed)")
    src_cfg = json.loads(src_cfg_path.read_text(encoding="utf-8"))
    gen_rows = read_rows(src_dir / "generations.jsonl")
    expected = sum(d["n"] for d in src_cfg.get("datasets", []))
    if len(gen_rows) < expected:
        log.warning("%s holds %d of %d generations (its eval did not finish); scoring those",
                    src_dir, len(gen_rows), expected)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = {**src_cfg, "judge": judge_identity(judge), "rubrics": list(rubrics),
              "verify_steps": bool(verify_steps), "text_metrics": bool(text_metrics),
              "rescored_from": str(src_dir), "protocols": list(protocols), **_judge_settings(protocols, judge_rounds)}
    config.pop("judges_used", None)
    _check_config(out_dir, config, overwrite, rescore_unscored)
    write_jsonl(out_dir / "generations.jsonl", gen_rows)
    rows = score_stage(gen_rows, judge, out_dir, rubrics=rubrics, verify_steps=verify_steps,
                       text_metrics=text_metrics, embedding_model=embedding_model, chunk_size=chunk_size,
                       bertscore_model=bertscore_model, concurrency=concurrency, progress=progress,
                       protocols=protocols, judge_rounds=judge_rounds)
    return finish(out_dir, rows, config, judge, n_boot=n_boot, seed=seed)


def _judge_settings(protocols: Sequence[str], judge_rounds: int) -> dict:
    """What, beside the judge itself, decides its verdicts (stored in ``config.json``): the step
    prompt the protocols use and the evaluation rounds of each grade."""
    from medrl.eval.protocols import step_prompt_for

    return {"step_prompt": step_prompt_for(protocols), "judge_rounds": int(judge_rounds)}


def load_run(run_dir: str | Path) -> list[dict]:
    """The scored rows of an eval folder (``outputs.jsonl``), with a clear error otherwise
    (:func:`medrl.eval.scoring.load_run`)."""
    from medrl.eval.scoring import load_run as _load

    return _load(run_dir)


# --------------------------------------------------------------------------- generation
#: Evaluation length when the model folder does not say how long it was trained to write.
DEFAULT_MAX_NEW_TOKENS = 1024


def trained_completion_length(model: str | Path) -> tuple[int | None, str | None]:
    """The completion length a medrl run trained the model with: ``recipe.grpo.max_completion_length``
    (the last stage that sets it, for a multi-stage recipe) in the ``config.yaml`` that ``medrl
    train`` writes into its run folder - the model folder itself or a parent (a checkpoint folder).
    Returns ``(length, path of the config)`` or ``(None, None)`` for a hub id or a foreign folder."""
    import yaml

    from medrl.common import strict_yaml

    p = Path(model)
    if not p.is_dir():
        return None, None
    for folder in (p, *list(p.resolve().parents)[:2]):
        cfg = folder / "config.yaml"
        if not cfg.is_file():
            continue
        try:
            data = strict_yaml.load(cfg.read_text(encoding="utf-8"), name=cfg) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ValueError(f"{cfg}: cannot read the training config ({exc}); pass --max-new-tokens") from None
        recipe = data.get("recipe") if isinstance(data, dict) else None
        if not isinstance(recipe, dict):
            continue
        found = None
        for section in [recipe] + [st for st in (recipe.get("stages") or []) if isinstance(st, dict)]:
            v = (section.get("grpo") or {}).get("max_completion_length") if isinstance(section.get("grpo"), dict) else None
            if v:
                found = int(v)
        if found:
            return found, str(cfg)
    return None, None


def default_max_new_tokens(model: str | Path) -> tuple[int, str]:
    """``(max_new_tokens, where it came from)``: the trained completion length
    (:func:`trained_completion_length`), else :data:`DEFAULT_MAX_NEW_TOKENS`."""
    n, src = trained_completion_length(model)
    if n:
        return n, f"grpo.max_completion_length in {src}"
    return DEFAULT_MAX_NEW_TOKENS, "default (the model folder names no training completion length)"


def build_generate_fn(model: str, *, backend: str = "hf", max_new_tokens: int = 1024, temperature: float = 0.0,
                      batch_size: int = 8, prompt_style: str = "think_answer",
                      trust_remote_code: bool = False) -> GenerateFn:
    """``generate_fn`` for a model folder or hub id.

    ``backend="hf"``: :func:`medrl.models.load_policy` + :func:`medrl.models.generate`
    (batched Hugging Face generation). ``backend="vllm"``: vLLM's offline ``LLM.chat`` with the
    same chat prompts (:func:`medrl.data.to_hf_dataset`); needs ``pip install medrl[vllm]`` and
    a GPU (not exercised by the test suite: vLLM is not installed there). Temperature 0 is greedy decoding (MediX-R1 App. A.2: deterministic evaluation).
    ``trust_remote_code``: run code shipped with the model (``--trust-remote-code``); off by default.
    """
    if backend == "hf":
        from medrl.models import generate, load_policy

        policy, processor = load_policy(model, trust_remote_code=trust_remote_code)
        tok = getattr(processor, "tokenizer", processor)

        def hf_generate(records: Sequence[Any], temperature: float = temperature) -> list[str]:
            texts = generate(policy, processor, list(records), max_new_tokens=max_new_tokens,
                             temperature=temperature, batch_size=batch_size, prompt_style=prompt_style,
                             progress=False)
            # new-token count of each output, re-tokenised (to tell a cut-off output, is_truncated)
            return [Generation(t, n_tokens=len(tok(t, add_special_tokens=False)["input_ids"]),
                               max_new_tokens=max_new_tokens) for t in texts]

        return hf_generate
    if backend == "vllm":
        return _vllm_generate_fn(model, max_new_tokens=max_new_tokens, temperature=temperature,
                                 prompt_style=prompt_style, trust_remote_code=trust_remote_code)
    raise ValueError(f"unknown backend {backend!r}; use 'hf' or 'vllm'")


def _vllm_generate_fn(model: str, *, max_new_tokens: int, temperature: float, prompt_style: str,
                      trust_remote_code: bool = False) -> GenerateFn:
    try:
        from vllm import LLM, SamplingParams
    except ImportError as exc:
        raise ImportError("--backend vllm needs vLLM: pip install 'medrl[vllm]' (on a CUDA machine)") from exc
    import base64
    import io

    from medrl.models.generation import to_chat

    llm = LLM(model=model, trust_remote_code=trust_remote_code)
    params = SamplingParams(temperature=temperature, max_tokens=max_new_tokens)

    def image_url(img) -> str:
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")

    def to_openai(messages: list[dict], images: list) -> list[dict]:
        """Same prompts as the HF path (medrl.models.generation.to_chat), images inlined in order."""
        pending = iter(images)
        out = []
        for m in messages:
            content = m["content"]
            if isinstance(content, list):
                content = [{"type": "image_url", "image_url": {"url": image_url(next(pending))}}
                           if p.get("type") == "image" else {"type": "text", "text": p.get("text", "")}
                           for p in content]
            out.append({"role": m["role"], "content": content})
        return out

    def vllm_generate(records: Sequence[Any], temperature: float = temperature) -> list[str]:
        convs = [to_openai(*to_chat(r, prompt_style)) for r in records]
        call = params if temperature == params.temperature else SamplingParams(temperature=temperature,
                                                                               max_tokens=max_new_tokens)
        results = llm.chat(convs, call, use_tqdm=False)
        return [Generation(r.outputs[0].text, n_tokens=len(r.outputs[0].token_ids),
                           max_new_tokens=max_new_tokens, finish_reason=r.outputs[0].finish_reason)
                for r in results]

    return vllm_generate
