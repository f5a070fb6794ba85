"""PMC-VQA (Zhang et al., 2023; https://huggingface.co/datasets/xmcmic/PMC-VQA), released CSVs.

Under ``<data_dir>/pmc_vqa/``: ``train.csv`` (or ``train_2.csv``), ``test.csv`` /
``test_clean.csv`` (the 2,000-sample manually checked test set, preferred for "test"), and the
figures in ``images/`` (or ``figures/``). Columns: ``Figure_path``, ``Question``, ``Answer``,
and the options either as ``Choice A`` .. ``Choice D`` (values like ``"A:Computed tomography"``)
or one ``Choices`` column (a list literal or ``|``-separated); ``Answer_label`` (A-D) when given.

By default the question is asked open-ended, without the options, and the answer is the text
of the correct option (MRPO App. C.1 evaluates PMC-VQA "in an
open-ended setting"). ``with_choices=True`` appends the options to the question; such records
are multiple-choice (``open_ended`` False, ``extras["choices_in_prompt"]`` True).

Modality tags (MediX-R1's modality reward needs one; the CSVs carry none): an explicit
``modality_tag`` (or ``Modality``) column wins when it names a known tag/modality; otherwise the
documented keyword heuristic :func:`medrl.common.modality.infer_modality_tag` reads the question, the
``Caption`` column and the figure file name. ``extras["modality_tag_source"]`` records which
(``column``, ``heuristic:question``, ``heuristic:caption``, ``heuristic:file``); records it
cannot tag keep ``modality_tag`` None (the modality reward then scores them 0, never excluded).
"""

from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

from medrl.data.record import DataError, VQARecord, is_open_ended_answer, normalize_answer_text
from medrl.common.modality import infer_modality_tag, modality_to_tag

SPLIT_FILES = {"train": ("train.csv", "train_2.csv"), "test": ("test_clean.csv", "test.csv", "test_2.csv")}
IMAGE_DIRS = ("images", "figures", "images_2")
_LABEL = re.compile(r"^\s*([A-Da-d])\s*[:.)]\s*")


def find_root(data_dir: Path) -> Path:
    for c in (data_dir / "pmc_vqa", data_dir / "PMC-VQA", data_dir / "pmcvqa", data_dir):
        if any((c / f).is_file() for fs in SPLIT_FILES.values() for f in fs):
            return c
    raise DataError(
        f"PMC-VQA not found under {data_dir}: expected {data_dir / 'pmc_vqa'}/train.csv, test_clean.csv and images/. "
        "Get it from https://huggingface.co/datasets/xmcmic/PMC-VQA - see docs/data.md."
    )


def _strip_label(choice: str) -> tuple[str | None, str]:
    m = _LABEL.match(choice)
    return (m.group(1).upper(), choice[m.end():].strip()) if m else (None, choice.strip())


def _choices(row: dict) -> list[str]:
    cols = [c for c in ("Choice A", "Choice B", "Choice C", "Choice D") if row.get(c) not in (None, "")]
    if cols:
        return [_strip_label(str(row[c]))[1] for c in cols]
    raw = row.get("Choices") or row.get("choices")
    if not raw:
        return []
    raw = str(raw).strip()
    if raw.startswith("["):
        try:
            items = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            items = raw.strip("[]").split(",")
    else:
        items = raw.split("|")
    return [_strip_label(str(x).strip().strip("'\""))[1] for x in items if str(x).strip()]


def _modality(row: dict, question: str, figure: str) -> tuple[str | None, str | None, str | None]:
    """(raw modality name, tag, tag source) of one CSV row (see the module docstring)."""
    raw = next((str(row[c]).strip() for c in ("modality_tag", "Modality", "modality") if row.get(c)), None)
    tag = modality_to_tag(raw)
    if tag:
        return raw, tag, "column"
    tag, source = infer_modality_tag(question, row.get("Caption") or row.get("caption"), [figure])
    return raw, tag, source


def load_pmc_vqa(data_dir: Path, split: str | None = None, *, with_choices: bool = False, csv_file: str | None = None) -> list[VQARecord]:
    root = find_root(Path(data_dir)).resolve()
    img_dir = next((root / d for d in IMAGE_DIRS if (root / d).is_dir()), root / "images")
    if csv_file:
        plan = [(split or "test", root / csv_file)]
    else:
        if split not in (None, "train", "test"):
            raise DataError(f"PMC-VQA has splits 'train' and 'test', not {split!r}")
        plan = []
        for s, names in SPLIT_FILES.items():
            if split in (None, s):
                path = next((root / n for n in names if (root / n).is_file()), None)
                if path is None:
                    if split is not None:
                        raise DataError(f"PMC-VQA {s} file missing in {root} (looked for {list(names)})")
                    continue
                plan.append((s, path))
    out = []
    for s, path in plan:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = {"Figure_path", "Question", "Answer"} - set(reader.fieldnames or [])
            if missing:
                raise DataError(f"{path}: missing column(s) {sorted(missing)}; columns are {reader.fieldnames}")
            for i, row in enumerate(reader):
                choices = _choices(row)
                label, answer = _strip_label(normalize_answer_text(row["Answer"]))
                if not label and len(answer) == 1 and answer.upper() in "ABCD":
                    label = answer.upper()
                label = (row.get("Answer_label") or label or "").strip().upper() or None
                if choices and label and len(answer) <= 1 and "A" <= label <= "D" and ord(label) - 65 < len(choices):
                    answer = choices[ord(label) - 65]  # the Answer column held only the letter
                question = str(row["Question"]).strip()
                raw_mod, tag, tag_source = _modality(row, question, str(row["Figure_path"]))
                if with_choices and choices:
                    question += "\n" + "\n".join(f"{chr(65 + k)}: {c}" for k, c in enumerate(choices))
                out.append(VQARecord(
                    id=f"pmc_vqa-{s}-{row.get('index') or i}",
                    images=[str(img_dir / str(row["Figure_path"]).strip())],
                    question=question,
                    answer=answer,
                    answer_type="CLOSED" if with_choices and choices else None,
                    open_ended=is_open_ended_answer(answer, multiple_choice=with_choices and bool(choices)),
                    split=s,
                    source="pmc_vqa",
                    modality=raw_mod,
                    modality_tag=tag,
                    extras={"lang": "en", "figure_path": row["Figure_path"], "choices": choices,
                            "answer_label": label, "choices_in_prompt": bool(with_choices and choices),
                            **({"caption": row["Caption"]} if row.get("Caption") else {}),
                            **({"modality_tag_source": tag_source} if tag else {})},
                ))
    return out
