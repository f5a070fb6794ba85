"""Text-only multiple choice (MediX-R1 Table 2's language tasks): MedQA, MedMCQA, PubMedQA.

Records carry no image. MedQA USMLE 4-option JSONL; MedMCQA JSON lines (``cop`` 1-4) or the HF
parquet (``cop`` 0-3); PubMedQA PQA-L ``ori_pqal.json`` (+ ``test_ground_truth.json`` for the
500-item test split) or the HF parquet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import find_root, letter_index, mcq_record, need, read_rows, split_of, want_split


def _split_files(root: Path, split: str | None, patterns: Sequence[str]) -> list[tuple[str, Path]]:
    """``[(split, file)]`` for the first pattern that matches any file of ``split`` (dev = validation)."""
    found = []
    for pat in patterns:
        for f in sorted(root.glob(pat)):
            s = split_of(f.name.split("phrases_no_exclude_")[-1])
            if s and want_split(split, s, dev_is_validation=True) and (s, f) not in found:
                found.append((s, f))
        if found:
            break
    return found


def load_medqa(data_dir: Path, split: str | None = "test", *, path: str | None = None) -> list[VQARecord]:
    """MedQA (USMLE, 4 options), in either published form:

    - the original release (github.com/jind11/MedQA): JSON lines with ``question``, ``options``
      {A..D: text}, ``answer_idx`` (letter) and ``answer``; ``<root>/{train,dev,test}.jsonl`` or
      ``data_clean/questions/US/4_options/phrases_no_exclude_<split>.jsonl``;
    - ``GBaker/MedQA-USMLE-4-options-hf`` (what MediX-R1's task list reads): rows with ``sent1``
      (the question), ``ending0``..``ending3`` and ``label`` (0-3), as ``<split>.json`` JSON lines
      or parquet files ``data/<split>-*.parquet``.
    """
    root = Path(path).resolve() if path else find_root("medqa", data_dir)
    files = _split_files(root, split, ("*.jsonl", "data_clean/questions/US/4_options/*.jsonl", "**/*.jsonl",
                                       "*.json", "data/*.parquet", "**/*.parquet"))
    out: list[VQARecord] = []
    for s, f in files:
        for i, row in enumerate(read_rows(f)):
            where = f"{f} line {i + 1}"
            if "sent1" in row:  # the GBaker form
                need(row, ("sent1", "ending0", "ending1"), where)
                options = [row[k] for k in ("ending0", "ending1", "ending2", "ending3") if row.get(k) not in (None, "")]
                label = row.get("label")
                if not isinstance(label, int) or not 0 <= label < len(options):
                    raise DataError(f"{where}: label {label!r} is not an index into {len(options)} endings")
                out.append(mcq_record(rid=f"medqa-{s}-{row.get('id', i)}", question=row["sent1"], options=options,
                                      answer_index=label, images=[], split=s, source="medqa", where=where))
                continue
            need(row, ("question", "options"), where)
            letters = sorted(row["options"])
            options = [row["options"][k] for k in letters]
            if row.get("answer_idx"):
                idx = letter_index(row["answer_idx"], len(options), where)
            else:
                need(row, ("answer",), where)
                norm = [str(o).strip().lower() for o in options]
                if str(row["answer"]).strip().lower() not in norm:
                    raise DataError(f"{where}: answer {row['answer']!r} is not among the options")
                idx = norm.index(str(row["answer"]).strip().lower())
            out.append(mcq_record(rid=f"medqa-{s}-{row.get('id', i)}", question=row["question"], options=options,
                                  answer_index=idx, images=[], split=s, source="medqa", where=where,
                                  extras={"meta_info": row.get("meta_info")}))
    if not out:
        raise DataError(f"MedQA: no {split!r} file under {root} (looked for <split>.jsonl, "
                        "data_clean/questions/US/4_options/*.jsonl, <split>.json and data/<split>-*.parquet)")
    return out


def load_medmcqa(data_dir: Path, split: str | None = "validation", *, path: str | None = None) -> list[VQARecord]:
    """MedMCQA: ``<root>/{train,dev,test}.json`` (JSON lines, ``cop`` 1-4) or the Hugging Face
    parquet files (``cop`` 0-3); fields ``question``, ``opa``..``opd``, ``cop``. The papers
    report the dev/validation split (4,183; the test answers are hidden)."""
    root = Path(path).resolve() if path else find_root("medmcqa", data_dir)
    files = _split_files(root, split, ("*.json", "*.jsonl", "data/*.parquet", "*.parquet"))
    out: list[VQARecord] = []
    for s, f in files:
        zero_based = f.suffix == ".parquet"
        for i, row in enumerate(read_rows(f)):
            where = f"{f} record {i + 1}"
            need(row, ("question", "opa", "opb"), where)
            if row.get("cop") in (None, "", -1):
                continue  # unlabelled (test split)
            options = [row[k] for k in ("opa", "opb", "opc", "opd") if row.get(k) not in (None, "")]
            idx = int(row["cop"]) - (0 if zero_based else 1)
            out.append(mcq_record(rid=f"medmcqa-{row.get('id') or f'{s}-{i}'}", question=row["question"],
                                  options=options, answer_index=idx, images=[], split=s, source="medmcqa",
                                  where=where, extras={"subject": row.get("subject_name"), "topic": row.get("topic_name")}))
    if not out:
        raise DataError(f"MedMCQA: no labelled {split!r} records under {root}")
    return out


def load_pubmedqa(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                  with_context: bool = True) -> list[VQARecord]:
    """PubMedQA PQA-L: ``<root>/ori_pqal.json`` ({pmid: {QUESTION, CONTEXTS, final_decision,
    ...}}) with ``test_ground_truth.json`` naming the 500 test ids (the split the papers report;
    the other 500 are "train"), or the HF ``pqa_labeled`` parquet (``pubid``, ``question``,
    ``context.contexts``, ``final_decision``; all rows, split "train"). Options: yes / no / maybe."""
    root = Path(path).resolve() if path else find_root("pubmedqa", data_dir)
    rows: list[tuple[str, dict]] = []
    src = root / "ori_pqal.json"
    if src.is_file():
        test_ids: set = set()
        gt = root / "test_ground_truth.json"
        if gt.is_file():
            test_ids = {str(k) for k in json.loads(gt.read_text(encoding="utf-8"))}
        for r in read_rows(src):
            s = "test" if str(r["_key"]) in test_ids else "train"
            rows.append((s, {"pubid": r["_key"], "question": r.get("QUESTION"), "contexts": r.get("CONTEXTS") or [],
                             "final_decision": r.get("final_decision")}))
    else:
        for f in sorted(root.rglob("*.parquet")):
            for r in read_rows(f):
                ctx = r.get("context") or {}
                rows.append(("train", {"pubid": r.get("pubid"), "question": r.get("question"),
                                       "contexts": ctx.get("contexts") or [], "final_decision": r.get("final_decision")}))
    if not rows:
        raise DataError(f"PubMedQA: neither ori_pqal.json nor parquet files under {root}")
    options = ["yes", "no", "maybe"]
    out: list[VQARecord] = []
    for s, r in rows:
        if not want_split(split, s):
            continue
        where = f"PubMedQA {root} pubid {r['pubid']}"
        need(r, ("question", "final_decision"), where)
        dec = str(r["final_decision"]).strip().lower()
        if dec not in options:
            raise DataError(f"{where}: final_decision {r['final_decision']!r} is not yes/no/maybe")
        q = str(r["question"]).strip()
        if with_context and r["contexts"]:
            q = "Context: " + " ".join(map(str, r["contexts"])) + "\nQuestion: " + q
        out.append(mcq_record(rid=f"pubmedqa-{r['pubid']}", question=q, options=options,
                              answer_index=options.index(dec), images=[], split=s, source="pubmedqa", where=where))
    return out
