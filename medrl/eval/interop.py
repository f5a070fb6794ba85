"""Other evaluation harnesses' predictions in, medrl's outputs out.

**Reading** (``medrl eval --predictions FILE``): the predictions another harness wrote become an
eval folder's inputs - records (question, reference, answer type, options) and each record's
output - and are scored by medrl's judges under each paper's protocol (:func:`score_predictions`
runs :func:`medrl.eval.runner.run_eval` with the saved outputs in place of a model), so the
folder, ``metrics.json`` and the report are those of any ``medrl eval``.

- **VLMEvalKit** (github.com/open-compass/VLMEvalKit): the prediction file its inference step
  writes, ``{model}_{dataset}.xlsx`` by default (``.tsv`` or ``.json`` with ``PRED_FORMAT``;
  ``.csv`` read too): the benchmark's TSV rows without the ``image`` column plus ``prediction``.
  Columns used: ``index``, ``question``, ``answer``, ``prediction`` (required); ``A``, ``B``, ...
  (multiple-choice options; ``answer`` is then the option letter), ``hint`` (put before the
  question, as VLMEvalKit's prompts do), ``answer_type``, ``category``, ``modality``, ``image_path``.
  The JSON form is the same rows as a list of objects. ``.xlsx`` needs openpyxl
  (``pip install 'medrl[interop]'``).
- **lmms-eval** (github.com/EvolvingLMMs-Lab/lmms-eval): the ``--log_samples`` file
  ``{output_path}/{model}/{date}_samples_{task}.jsonl``, one JSON object per document:
  ``doc_id``, ``target`` (the reference), ``filtered_resps`` (else ``resps``: the output, nested
  lists flattened to the first text), and the question from ``doc`` (releases up to 0.3 keep the
  document: ``question``/``query``/``problem``, with ``answer_type`` and ``options`` when the task
  has them) or else from ``input`` (later releases keep the prompt text instead of the document)
  or ``arguments``. The task name comes from the file name.

Records carry no image (neither harness keeps it in these files), so judge images are off for
them. A row without a reference cannot be scored: :class:`medrl.data.DataError` naming the file
and the row.

**Writing** (``medrl eval --export FORMAT``): :func:`export_eval` writes an eval folder's outputs
in a layout those harnesses read: VLMEvalKit's prediction file as TSV
(``{model}_{dataset}.tsv``, quoted as VLMEvalKit writes it; run its evaluation with
``PRED_FORMAT=tsv``) with ``prediction`` (the final answer) and ``thinking`` (the reasoning)
columns; lmms-eval's ``{model}/{date}_samples_{task}.jsonl`` and ``{date}_results.json``, with
the protocol's verdict per document as ``medrl_score`` (what lmms-eval's ``--baseline`` reads
from a samples file) and the dataset's accuracy in the results.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text, normalize_answer_type

FORMATS = ("vlmevalkit", "lmms-eval")
VLMEVALKIT_SUFFIXES = (".xlsx", ".tsv", ".csv", ".json")
#: Option columns of a VLMEvalKit multiple-choice row.
_OPTION_COLUMNS = tuple(chr(65 + i) for i in range(26))
_QUESTION_KEYS = ("question", "query", "problem", "prompt", "text")


@dataclass
class ImportedPredictions:
    """One benchmark's predictions from another harness: records and each record's output."""

    name: str
    records: list[VQARecord]
    outputs: dict[str, str]
    source_format: str
    path: str
    model: str | None = None


# --------------------------------------------------------------------------- reading
def detect_format(path: str | Path) -> str:
    """"vlmevalkit" or "lmms-eval" from a file's name (and, for JSON lines, its first object)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        return "lmms-eval"
    if suffix in VLMEVALKIT_SUFFIXES:
        if suffix == ".json" and "_results" in p.stem:
            raise DataError(f"{p}: an lmms-eval results file holds aggregates only; pass its "
                            "*_samples_<task>.jsonl (written with --log_samples)")
        return "vlmevalkit"
    raise DataError(f"{p}: cannot tell which harness wrote it; VLMEvalKit prediction files end in "
                    f"{', '.join(VLMEVALKIT_SUFFIXES)} and lmms-eval's --log_samples files in .jsonl "
                    "(--predictions-format says which)")


def read_predictions(path: str | Path, fmt: str = "auto", name: str | None = None) -> ImportedPredictions:
    """The predictions in ``path`` (``fmt``: "auto", "vlmevalkit" or "lmms-eval"); ``name``
    overrides the dataset name taken from the file name."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"predictions file {p} not found")
    fmt = detect_format(p) if fmt in (None, "", "auto") else fmt
    if fmt == "vlmevalkit":
        return read_vlmevalkit(p, name)
    if fmt == "lmms-eval":
        return read_lmms_eval(p, name)
    raise ValueError(f"predictions format {fmt!r}: choose auto, {' or '.join(FORMATS)}")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def _text(v: Any) -> str:
    if _missing(v):
        return ""
    if isinstance(v, float) and v.is_integer():
        v = int(v)  # pandas reads an integer column with gaps as floats
    return str(v)


def _table_rows(p: Path) -> list[dict]:
    """The rows of a VLMEvalKit prediction file (xlsx, tsv, csv or json), as dicts."""
    suffix = p.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"{p}: not a JSON file ({type(exc).__name__}: {exc})") from None
        if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
            keys = list(data)  # columns -> lists (pandas' "list" orient)
            data = [dict(zip(keys, vals)) for vals in zip(*(data[k] for k in keys))]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataError(f"{p}: expected a JSON list of rows (VLMEvalKit's PRED_FORMAT=json)")
        return data
    import pandas as pd

    try:
        if suffix == ".xlsx":
            import importlib.util

            if importlib.util.find_spec("openpyxl") is None:
                raise DataError(f"{p}: reading .xlsx needs openpyxl: pip install 'medrl[interop]' (or let "
                                "VLMEvalKit write TSV: PRED_FORMAT=tsv)")
            frame = pd.read_excel(p, engine="openpyxl")
        else:
            frame = pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",", keep_default_na=False, na_values=[""],
                                dtype=str)
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - pandas raises many kinds for a file that is not a table
        raise DataError(f"{p}: cannot read as a VLMEvalKit prediction table ({type(exc).__name__}: {exc})") from None
    return frame.to_dict("records")


def read_vlmevalkit(path: str | Path, name: str | None = None) -> ImportedPredictions:
    """A VLMEvalKit prediction file (module docstring)."""
    p = Path(path)
    rows = _table_rows(p)
    if not rows:
        raise DataError(f"{p}: no rows")
    need = [c for c in ("index", "question", "answer", "prediction") if c not in rows[0]]
    if need:
        raise DataError(f"{p}: not a VLMEvalKit prediction file: column(s) {', '.join(need)} missing "
                        f"(found: {', '.join(map(str, list(rows[0])[:12]))})")
    from medrl.data.sources._common import letter_index, mcq_record

    records, outputs = [], {}
    for line, row in enumerate(rows, 2):  # line 1 is the header
        rid = _text(row.get("index"))
        where = f"{p}: row {line} (index {rid!r})"
        if not rid:
            raise DataError(f"{p}: row {line}: empty 'index'")
        question = _text(row.get("question")).strip()
        hint = _text(row.get("hint")).strip()
        if hint:
            question = f"Hint: {hint}\n{question}"
        if not question:
            raise DataError(f"{where}: empty 'question'")
        answer = _text(row.get("answer")).strip()
        if not answer:
            raise DataError(f"{where}: no 'answer' to score against (a test split without answers cannot "
                            "be scored)")
        options = [_text(row.get(c)).strip() for c in _OPTION_COLUMNS if c in row and not _missing(row.get(c))]
        images = [str(row["image_path"])] if not _missing(row.get("image_path")) and \
            Path(str(row["image_path"])).is_file() else []
        extras = {"source_format": "vlmevalkit"}
        if not _missing(row.get("category")):
            extras["category"] = _text(row.get("category"))
        if options:
            if answer in options and not (len(answer) == 1 and answer.upper() in _OPTION_COLUMNS[:len(options)]):
                index = options.index(answer)
            else:
                index = letter_index(answer, len(options), where)
            rec = mcq_record(rid=rid, question=question, options=options, answer_index=index, images=images,
                             split=None, source="vlmevalkit", modality=_text(row.get("modality")) or None,
                             extras=extras, where=where)
        else:
            answer = normalize_answer_text(answer, where)
            rec = VQARecord(id=rid, images=images, question=question, answer=answer,
                            answer_type=normalize_answer_type(row.get("answer_type")),
                            open_ended=is_open_ended_answer(answer), modality=_text(row.get("modality")) or None,
                            organ=_text(row.get("organ")) or None, source="vlmevalkit", extras=extras)
        records.append(rec)
        outputs[rid] = _text(row.get("prediction"))
    return ImportedPredictions(name or p.stem, records, outputs, "vlmevalkit", str(p), model=None)


def _first_text(v: Any) -> str | None:
    """The first string inside ``v`` (lmms-eval nests responses: ``[["text"]]``, ``["text"]``)."""
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        for x in v:
            t = _first_text(x)
            if t is not None:
                return t
    if isinstance(v, dict):  # arguments as {"gen_args_0": {"arg_0": context, ...}}
        for x in v.values():
            t = _first_text(x)
            if t is not None:
                return t
    return None


def read_lmms_eval(path: str | Path, name: str | None = None) -> ImportedPredictions:
    """An lmms-eval ``--log_samples`` file (module docstring)."""
    p = Path(path)
    m = re.search(r"_samples_(.+)$", p.stem)
    task = name or (m.group(1) if m else p.stem)
    records, outputs = [], {}
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: cannot be read ({type(exc).__name__}: {exc})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{p}: line {n}"
        try:
            s = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not JSON ({exc})") from None
        if not isinstance(s, dict) or "doc_id" not in s:
            raise DataError(f"{where}: not an lmms-eval sample (no 'doc_id'); pass a *_samples_<task>.jsonl "
                            "written with --log_samples")
        rid = str(s["doc_id"])
        doc = s.get("doc") if isinstance(s.get("doc"), dict) else {}
        question = next((str(doc[k]) for k in _QUESTION_KEYS if isinstance(doc.get(k), str) and doc[k].strip()),
                        None) or (s["input"] if isinstance(s.get("input"), str) else None) \
            or _first_text(s.get("arguments"))
        if not question or not question.strip():
            raise DataError(f"{where} (doc_id {rid}): no question (no doc, input or arguments)")
        target = s.get("target")
        reference = _text(target if not isinstance(target, list) else _first_text(target)).strip() \
            or _text(doc.get("answer")).strip()
        if not reference:
            raise DataError(f"{where} (doc_id {rid}): no 'target' to score against")
        output = _first_text(s.get("filtered_resps"))
        if output is None:
            output = _first_text(s.get("resps")) or ""
        options = doc.get("options") or doc.get("choices")
        extras = {"source_format": "lmms-eval", "task": task}
        if isinstance(options, list) and options and all(isinstance(o, str) for o in options) and (
                reference in options or (len(reference) == 1 and reference.upper().isalpha())):
            from medrl.data.sources._common import letter_index, mcq_record

            index = options.index(reference) if reference in options else letter_index(reference, len(options), where)
            rec = mcq_record(rid=rid, question=question.strip(), options=options, answer_index=index, images=[],
                             split=None, source="lmms-eval", extras=extras, where=where,
                             options_in_question=True)
        else:
            reference = normalize_answer_text(reference, where)
            rec = VQARecord(id=rid, images=[], question=question.strip(), answer=reference,
                            answer_type=normalize_answer_type(doc.get("answer_type")),
                            open_ended=is_open_ended_answer(reference), modality=_text(doc.get("modality")) or None,
                            organ=_text(doc.get("organ") or doc.get("location")) or None, source="lmms-eval",
                            extras=extras)
        if rid in outputs:
            raise DataError(f"{where}: doc_id {rid} occurs twice")
        records.append(rec)
        outputs[rid] = output
    if not records:
        raise DataError(f"{p}: no samples")
    return ImportedPredictions(task, records, outputs, "lmms-eval", str(p), model=p.parent.name or None)


# --------------------------------------------------------------------------- scoring
def parse_prediction_args(items: Sequence[str]) -> list[tuple[str | None, str]]:
    """``["vqa_rad=preds.tsv", "other.jsonl"]`` -> [("vqa_rad", "preds.tsv"), (None, "other.jsonl")]:
    ``NAME=FILE`` names the dataset (default: from the file name)."""
    out = []
    for item in items:
        head, sep, tail = item.partition("=")
        if sep and head and not Path(item).exists() and "/" not in head:
            out.append((head, tail))
        else:
            out.append((None, item))
    return out


def score_predictions(imported: Sequence[ImportedPredictions], judge: Any, out_dir: str | Path, **common: Any) -> dict:
    """Score other harnesses' predictions with ``judge`` under the protocols in ``common``
    (:func:`medrl.eval.runner.run_eval`'s keywords): the outputs stand in for generation, and
    the eval folder, metrics and report are those of ``medrl eval``."""
    from medrl.eval.runner import EvalDataset, run_eval

    names = [d.name for d in imported]
    if len(set(names)) != len(names):
        raise ValueError(f"two prediction files give the same dataset name ({', '.join(names)}); name them "
                         "with NAME=FILE")
    datasets = [EvalDataset(d.name, d.records, "in") for d in imported]
    by_key = {(d.name, rid): out for d in imported for rid, out in d.outputs.items()}
    owner = {id(r): d.name for d in imported for r in d.records}

    def replay(records: Sequence[Any]) -> list[str]:
        return [by_key[(owner[id(r)], str(r.id))] for r in records]

    formats = sorted({d.source_format for d in imported})
    models = sorted({d.model for d in imported if d.model})
    model = f"{'+'.join(formats)}:{','.join(models) or ','.join(Path(d.path).name for d in imported)}"
    generation = {"backend": "imported", "format": "+".join(formats),
                  "files": [Path(d.path).name for d in imported]}
    return run_eval(datasets, replay, judge, out_dir, model=model, generation=generation, **common)


# --------------------------------------------------------------------------- writing
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("_") or "model"


def _eval_rows(eval_dir: Path) -> tuple[dict, list[dict]]:
    from medrl.eval.runner import read_rows

    cfg_path = eval_dir / "config.json"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{eval_dir} is not an eval folder (no config.json)")
    config = json.loads(cfg_path.read_text(encoding="utf-8"))
    path = eval_dir / "outputs.jsonl" if (eval_dir / "outputs.jsonl").is_file() else eval_dir / "generations.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{eval_dir} holds no outputs (outputs.jsonl or generations.jsonl)")
    return config, read_rows(path)


def _thinking(output: str) -> str:
    m = re.search(r"<\s*think(?:ing)?\s*>(.*?)<\s*/\s*think(?:ing)?\s*>", output or "", re.DOTALL | re.IGNORECASE)
    return m.group(1).strip() if m else ""


def _verdict(row: dict, protocol: str | None) -> float | None:
    from medrl.eval.protocols import DEFAULT_PROTOCOL, row_correct

    if not row.get("scores"):
        return None
    v = row_correct(row, protocol or DEFAULT_PROTOCOL)
    return None if v is None else float(v)


def export_eval(eval_dir: str | Path, fmt: str, out_dir: str | Path) -> list[Path]:
    """Write ``eval_dir``'s outputs in ``fmt``'s layout (module docstring) under ``out_dir``;
    returns the files written."""
    from medrl.answers.completion import prediction_text

    eval_dir, out_dir = Path(eval_dir), Path(out_dir)
    config, rows = _eval_rows(eval_dir)
    model = _safe(Path(str(config.get("model") or eval_dir.name)).name)
    protocol = (config.get("protocols") or [None])[0]
    by_ds: dict[str, list[dict]] = {}
    for r in rows:
        by_ds.setdefault(r["dataset"], []).append(r)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    if fmt == "vlmevalkit":
        import pandas as pd

        for ds, rs in by_ds.items():
            table = []
            for r in rs:
                pred = r.get("prediction") if r.get("prediction") is not None else prediction_text(r.get("output"))
                item = {"index": r["record_id"], "question": r["question"], "answer": r["reference"]}
                choices = r.get("choices") or []
                if choices:
                    item.update({chr(65 + i): c for i, c in enumerate(choices)})
                    if r["reference"] in choices:
                        item["answer"] = chr(65 + choices.index(r["reference"]))
                item.update({"answer_type": r.get("answer_type") or "", "category": r.get("modality") or "",
                             "prediction": pred, "thinking": _thinking(r.get("output") or ""),
                             "medrl_correct": _verdict(r, protocol)})
                table.append(item)
            path = out_dir / f"{model}_{_safe(ds)}.tsv"
            pd.DataFrame(table).to_csv(path, sep="\t", index=False, encoding="utf-8", quoting=csv.QUOTE_ALL)
            written.append(path)
        return written
    if fmt == "lmms-eval":
        date_id = _dt.datetime.now().strftime("%Y%m%d_%H%M%S")
        folder = out_dir / model
        folder.mkdir(parents=True, exist_ok=True)
        results: dict[str, dict] = {}
        for ds, rs in by_ds.items():
            task = _safe(ds)
            path = folder / f"{date_id}_samples_{task}.jsonl"
            scores = []
            with open(path, "w", encoding="utf-8") as fh:
                for i, r in enumerate(rs):
                    pred = r.get("prediction") if r.get("prediction") is not None else prediction_text(r.get("output"))
                    doc = {"id": r["record_id"], "question": r["question"], "answer": r["reference"],
                           "answer_type": r.get("answer_type"), "modality": r.get("modality"), "organ": r.get("organ")}
                    if r.get("choices"):
                        doc["options"] = list(r["choices"])
                    score = _verdict(r, protocol)
                    scores.append(score)
                    sample = {"doc_id": i, "doc": doc, "target": str(r["reference"]), "input": r["question"],
                              "resps": [[r.get("output") or ""]], "filtered_resps": [pred],
                              "doc_hash": _sha(json.dumps(doc, sort_keys=True, ensure_ascii=False)),
                              "prompt_hash": _sha(r["question"]), "target_hash": _sha(str(r["reference"])),
                              "medrl_score": score}
                    fh.write(json.dumps(sample, ensure_ascii=False) + "\n")
            written.append(path)
            scored = [s for s in scores if s is not None]
            acc = sum(scored) / len(scored) if scored else None
            stderr = math.sqrt(acc * (1 - acc) / max(1, len(scored) - 1)) if acc is not None else None
            results[task] = {"alias": task, "medrl_score,none": acc, "medrl_score_stderr,none": stderr,
                             "samples": len(rs), "unscored": len(scores) - len(scored)}
        res_path = folder / f"{date_id}_results.json"
        res_path.write_text(json.dumps({
            "results": results, "model_name": model, "date": date_id,
            "configs": {t: {"task": t, "output_type": "generate_until", "metric_list": [
                {"metric": "medrl_score", "aggregation": "mean", "higher_is_better": True}]} for t in results},
            "medrl": {"eval_dir": str(eval_dir), "protocol": protocol or "standard", "judge": config.get("judge")},
        }, indent=2, ensure_ascii=False), encoding="utf-8")
        written.append(res_path)
        return written
    raise ValueError(f"export format {fmt!r}: choose {' or '.join(FORMATS)}")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()


__all__ = ["FORMATS", "ImportedPredictions", "detect_format", "export_eval", "parse_prediction_args",
           "read_lmms_eval", "read_predictions", "read_vlmevalkit", "score_predictions"]
