"""MediX-R1's own data (arXiv 2602.23363; code github.com/mbzuai-oryx/MediX-R1): its evaluation
collection, its RL training data, and PMC-VQA-Hard.

- **Evaluation collection** ``sahalshajim/medix-eval-sets``, the Hugging Face dataset MediX-R1's
  evaluation task list (``eval/tasks.yaml``) reads for five of Table 2's columns. One config per
  task, each with a ``test`` split, downloaded as ``<root>/<config>/test-*.parquet``
  (``huggingface-cli download --repo-type dataset sahalshajim/medix-eval-sets``; the hub's
  converted form ``<config>/test/0000.parquet`` is read too). Columns, as that task list names
  them:

  - ``pubmedqa``: ``CONTEXTS`` (list), ``QUESTION``, ``final_decision``, ``LONG_ANSWER``;
  - ``mimic_cxr``: ``image`` (a PhysioNet URL of the MIMIC-CXR-JPG file), ``report`` (the
    reference of report generation, and the text to summarise) and ``summary``;
  - ``pmc_vqa``: ``question``, ``choices``, ``answer``, ``image``;
  - ``pmc_vqa_hard``: ``question``, ``answer`` (open-ended, no choices), ``image``.

  The collection's card is not public in a form medrl could check, so the file layout is the
  hub's standard one for a multi-config parquet dataset (docs/data.md says so); a missing file
  or column is an error naming what was looked for.
- **RL training data** ``MBZUAI/medix-rl-data`` (51,335 train / 2,451 test rows):
  ``data/{train,test}-*.parquet`` with ``id``, ``image`` (a list of images), ``source``,
  ``problem`` and ``solution``, where the solution starts with the image-modality tag MediX-R1's
  modality reward checks (``"<X_RAY> pneumonia"``, Sec. 2.3). The tag goes to the record's
  ``modality``/``modality_tag``, the rest is the answer.
"""

from __future__ import annotations

from pathlib import Path

from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text
from medrl.data.sources._common import (
    image_file,
    mcq_record,
    need,
    read_rows,
    source_root,
    split_modality_tag,
    split_of,
    want_split,
)
from medrl.common.modality import MODALITY_TAGS, modality_to_tag

#: Source task -> config of the evaluation collection.
EVAL_CONFIGS = {"pubmedqa": "pubmedqa", "pmc_vqa": "pmc_vqa", "pmc_vqa_hard": "pmc_vqa_hard",
                "mimic_cxr_report": "mimic_cxr", "mimic_cxr_summary": "mimic_cxr"}
_ROW_FILES = (".parquet", ".json", ".jsonl")


def _split_files(folder: Path, split: str | None, default: str) -> list[tuple[str, Path]]:
    """``[(split, file)]`` of the data files under ``folder``; a file's split comes from its
    name (``test-00000-of-00001.parquet``) or its folder (``test/0000.parquet``)."""
    out = []
    for f in sorted(folder.rglob("*")):
        if f.suffix not in _ROW_FILES or not f.is_file():
            continue
        s = split_of(f.name) or split_of(f.parent.name) or default
        if want_split(split, s):
            out.append((s, f))
    return out


def _config_files(root: Path, config: str, split: str | None) -> list[tuple[str, Path]]:
    folder = root / config
    files = _split_files(folder, split, "test") if folder.is_dir() else []
    if not files:
        raise DataError(f"MediX-R1 evaluation collection: no {split or 'test'!r} parquet/JSON file for config "
                        f"{config!r}; looked for {folder}/{split or 'test'}-*.parquet and "
                        f"{folder}/{split or 'test'}/*.parquet")
    return files


def _mimic_image(root: Path, item, rid: str, images: str | None) -> str | None:
    """A MIMIC-CXR image of the collection: an embedded image, or the PhysioNet URL / path of a
    MIMIC-CXR-JPG file, looked for as ``<root>/mimic_cxr/images/<file name>`` (the flat folder a
    one-by-one download gives) and in the MIMIC-CXR-JPG ``files/`` folder
    (:func:`medrl.data.sources.mimic_cxr.mimic_jpg_files`)."""
    if not isinstance(item, str):
        return image_file(root, item, rid)
    name = item.rsplit("/", 1)[-1]
    for flat in (root / "mimic_cxr" / "images" / name, root / "mimic_cxr" / name):
        if flat.is_file():
            return str(flat)
    from medrl.data.sources.mimic_cxr import mimic_jpg_files

    rel = item.rsplit("/files/", 1)[1] if "/files/" in item else item.removeprefix("files/")
    return str(mimic_jpg_files(root, images) / rel)


def _choice_texts(choices) -> list[str]:
    from medrl.data.sources.pmc_vqa import _strip_label

    if isinstance(choices, dict):
        choices = list(choices.values())
    return [_strip_label(str(c))[1].strip() for c in (choices or []) if c not in (None, "")]


def _answer_index(answer, options: list[str], answer_idx, where: str) -> int:
    from medrl.data.sources._common import letter_index
    from medrl.data.sources.pmc_vqa import _strip_label

    if answer_idx not in (None, ""):
        if str(answer_idx).strip().isdigit():
            return int(answer_idx)
        return letter_index(answer_idx, len(options), where)
    label, text = _strip_label(str(answer))
    norm = [o.lower() for o in options]
    if text.strip().lower() in norm:
        return norm.index(text.strip().lower())
    if label or len(str(answer).strip()) == 1:
        return letter_index(label or answer, len(options), where)
    raise DataError(f"{where}: answer {answer!r} is neither an option nor an option letter of {options}")


def load_medix_eval(data_dir: Path, split: str | None = "test", *, task: str, path: str | None = None,
                    images: str | None = None, with_context: bool = True) -> list[VQARecord]:
    """One task of MediX-R1's evaluation collection (see the module docstring): ``task`` is
    ``pubmedqa``, ``pmc_vqa``, ``pmc_vqa_hard``, ``mimic_cxr_report`` or ``mimic_cxr_summary``.
    ``images``: the MIMIC-CXR-JPG ``files/`` folder for the MIMIC-CXR tasks' image URLs.
    ``with_context``: PubMedQA's question carries its context (MediX-R1's prompt uses the first
    ``CONTEXTS`` passage; so does this loader)."""
    from medrl.data.sources.mimic_cxr import _REPORT_PROMPT, _SUMMARY_PROMPT

    if task not in EVAL_CONFIGS:
        raise DataError(f"MediX-R1 evaluation task must be one of {list(EVAL_CONFIGS)}, not {task!r}")
    root = source_root(f"medix_{task}", data_dir, path)
    source = f"medix_{task}"
    out: list[VQARecord] = []
    for s, f in _config_files(root, EVAL_CONFIGS[task], split):
        for i, row in enumerate(read_rows(f)):
            where = f"{f} row {i}"
            rid = f"{source}-{f.stem}-{i}"
            extras = {"collection": "medix-eval-sets", "task": task}
            if task == "pubmedqa":
                need(row, ("QUESTION", "final_decision"), where)
                options = ["yes", "no", "maybe"]
                dec = str(row["final_decision"]).strip().lower()
                if dec not in options:
                    raise DataError(f"{where}: final_decision {row['final_decision']!r} is not yes/no/maybe")
                ctx = row.get("CONTEXTS")
                ctx = ctx[0] if isinstance(ctx, (list, tuple)) and ctx else ctx
                q = str(row["QUESTION"]).strip()
                if with_context and ctx:
                    q = f"Context: {str(ctx).strip()}\nQuestion: {q}"
                out.append(mcq_record(rid=rid, question=q, options=options, answer_index=options.index(dec), images=[],
                                      split=s, source=source, where=where,
                                      extras={**extras, "long_answer": row.get("LONG_ANSWER")}))
            elif task in ("mimic_cxr_report", "mimic_cxr_summary"):
                need(row, ("report",) + (("summary",) if task == "mimic_cxr_summary" else ("image",)), where)
                report = normalize_answer_text(row["report"])
                extras["task"] = "report"
                if task == "mimic_cxr_report":
                    question, answer = _REPORT_PROMPT, report
                    imgs = [p for p in (_mimic_image(root, row["image"], rid, images),) if p]
                    modality, tag, organ = "X-Ray", "X_RAY", "Chest"
                else:
                    question, answer = _SUMMARY_PROMPT.format(report=report), normalize_answer_text(row["summary"])
                    imgs, modality, tag, organ = [], None, None, None
                out.append(VQARecord(id=rid, images=imgs, question=question, answer=answer, open_ended=True,
                                     answer_type="OPEN", modality=modality, modality_tag=tag, organ=organ, split=s,
                                     source=source, extras={"lang": "en", **extras}))
            else:  # pmc_vqa, pmc_vqa_hard
                need(row, ("question", "answer"), where)
                item = row.get("image") if row.get("image") not in (None, "") else row.get("image_id")
                imgs = [p for p in (image_file(root, item, rid),) if p]
                if task == "pmc_vqa":
                    options = _choice_texts(row.get("choices"))
                    if len(options) < 2:
                        raise DataError(f"{where}: 'choices' holds {len(options)} options")
                    idx = _answer_index(row["answer"], options, row.get("answer_idx"), where)
                    out.append(mcq_record(rid=rid, question=row["question"], options=options, answer_index=idx,
                                          images=imgs, split=s, source=source, where=where, extras=extras))
                else:
                    ans = normalize_answer_text(row["answer"])
                    out.append(VQARecord(id=rid, images=imgs, question=str(row["question"]).strip(), answer=ans,
                                         open_ended=is_open_ended_answer(ans),
                                         answer_type="OPEN" if is_open_ended_answer(ans) else "CLOSED",
                                         split=s, source=source, extras={"lang": "en", **extras}))
    return out


def load_pmc_vqa_hard(data_dir: Path, split: str | None = "test", *, path: str | None = None,
                      images: str | None = None) -> list[VQARecord]:
    """PMC-VQA-Hard (MediX-R1 Table 2). Two forms, read as found:

    - MediX-R1's own open-ended set, the ``pmc_vqa_hard`` config of its evaluation collection
      (``<root>/pmc_vqa_hard/test-*.parquet``: ``question``, ``answer``, ``image``) - the paper's
      items; records as :func:`load_medix_eval` builds them, ``source = "pmc_vqa_hard"``;
    - PMC-VQA v2's harder test file ``test_2.csv`` (``xmcmic/PMC-VQA``: ``Figure_path, Question,
      Answer, Choice A..D, Answer_label``, images under ``images/`` or ``figures/``), read as
      multiple choice by :mod:`medrl.data.sources.pmc_vqa`. Not MediX-R1's items.
    """
    from medrl.data.sources import pmc_vqa

    root = source_root("pmc_vqa_hard", data_dir, path)
    if split not in (None, "test"):
        raise DataError(f"PMC-VQA-Hard has one split, 'test', not {split!r}")
    if (root / "pmc_vqa_hard").is_dir():
        recs = load_medix_eval(root, "test", task="pmc_vqa_hard", path=str(root), images=images)
        for r in recs:
            r.id, r.source = r.id.replace("medix_pmc_vqa_hard-", "pmc_vqa_hard-", 1), "pmc_vqa_hard"
        return recs
    if not (root / "test_2.csv").is_file():
        raise DataError(f"PMC-VQA-Hard: neither {root / 'pmc_vqa_hard'}/test-*.parquet (MediX-R1's evaluation "
                        f"collection) nor {root / 'test_2.csv'} (PMC-VQA's test_2.csv) found")
    recs = pmc_vqa.load_pmc_vqa(root, "test", with_choices=True, csv_file="test_2.csv")
    for r in recs:
        r.id, r.source = r.id.replace("pmc_vqa-", "pmc_vqa_hard-", 1), "pmc_vqa_hard"
    return recs


def load_medix_rl(data_dir: Path, split: str | None = "train", *, path: str | None = None) -> list[VQARecord]:
    """MediX-R1's RL data ``MBZUAI/medix-rl-data`` (see the module docstring): one record per row,
    the ``solution``'s leading ``<TAG>`` split off into ``modality`` / ``modality_tag`` (a tag
    outside MediX-R1's 16 is kept in ``modality`` with no ``modality_tag``); a row whose solution
    has no tag is reported (naming file and row) by validation, or skipped with
    ``skip_invalid``."""
    from medrl.data.validate import invalid_record

    root = source_root("medix_rl", data_dir, path)
    files = [(s, f) for s, f in _split_files(root, split, "train") if f.suffix == ".parquet"]
    if not files:
        raise DataError(f"MediX-R1 RL data: no {split!r} parquet file under {root} "
                        f"(looked for {root}/data/{split or '*'}-*.parquet)")
    out: list[VQARecord] = []
    for s, f in files:
        for i, row in enumerate(read_rows(f)):
            where = f"{f} row {i}"
            need(row, ("problem", "solution"), where)
            rid = f"medix_rl-{row.get('id') or f'{f.stem}-{i}'}"
            raw_tag, answer = split_modality_tag(row["solution"])
            if raw_tag is None or not answer:
                out.append(invalid_record(rid, [f"{where}: solution {str(row['solution'])[:60]!r} does not start "
                                                "with a <MODALITY_TAG> followed by the answer"], split=s,
                                          source="medix_rl"))
                continue
            tag = raw_tag if raw_tag in MODALITY_TAGS else modality_to_tag(raw_tag)
            items = row.get("image")
            items = items if isinstance(items, (list, tuple)) else [items] if items else []
            imgs = [p for k, it in enumerate(items) if (p := image_file(root, it, f"{rid}-{k}"))]
            ans = normalize_answer_text(answer)
            open_ = is_open_ended_answer(ans)
            out.append(VQARecord(id=rid, images=imgs, question=str(row["problem"]).replace("<image>", "").strip(),
                                 answer=ans, answer_type="OPEN" if open_ else "CLOSED", open_ended=open_,
                                 modality=raw_tag, modality_tag=tag, split=s, source="medix_rl",
                                 extras={"lang": "en", "origin": row.get("source")}))
    return out
