"""The one VQA record every loader produces and every method consumes, plus JSONL I/O.

A :class:`VQARecord` is a plain dataclass: loaders fill it from each dataset's own layout,
``to_hf_dataset`` turns a list of them into the columns TRL passes to reward functions, and
curation tools read and write them as JSONL (one JSON object per line, ``to_dict`` format).
Only the standard library is imported here, so ``import medrl.data`` stays instant.

Text is sanitised at this boundary: every string field of a record (and of its ``extras``) has
lone surrogates replaced by U+FFFD (:func:`medrl.common.text.clean_text`), so a bad byte in a data file
cannot crash a tokenizer, a cache key or a file write later. Non-string answers (VQA-RAD has
integers) are converted to text and the record remembers it (:func:`answer_converted_from`);
:func:`medrl.data.validate.validate_records` counts the records it keeps that had one, logs the
count and puts it in ``report["converted_answers"]``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

from medrl.common.jsonl import dumps_line
from medrl.common.text import clean_obj, clean_text


class DataError(ValueError):
    """A record or file that cannot be used; the message names the file and the record."""


_YES_NO = {"yes", "no"}


class _ConvertedAnswer(str):
    """Answer text made from a number; carries the number's type name (``converted_from``) from
    :func:`normalize_answer_text` to the :class:`VQARecord` built with it, which keeps the name
    and stores the answer as a plain ``str``."""

    converted_from: str = ""


def answer_converted_from(rec: "VQARecord") -> str | None:
    """The type name (``int``, ``float``, ``bool``) of ``rec``'s answer in its source file when
    the loader converted it to text; None for an answer that was text. Not saved to JSONL: a
    written record's answer is text."""
    return getattr(rec, "_answer_converted_from", None)


def normalize_answer_text(answer: Any, where: str = "") -> str:
    """Answers are strings: ints (VQA-RAD has a few: ``4``, ``12``) and floats become text
    (a record built with it remembers: :func:`answer_converted_from`); lone surrogates become
    U+FFFD. An object or a list
    (``{"text": "yes"}``) is not guessed at: :class:`DataError` naming ``where`` (file and
    line/record) and the value, rather than the text ``"{'text': 'yes'}"``."""
    if answer is None:
        return ""
    if isinstance(answer, str):
        return clean_text(answer).strip()
    if not isinstance(answer, (int, float)):
        kind = "a JSON object" if isinstance(answer, dict) else "a list" if isinstance(answer, (list, tuple)) else \
            type(answer).__name__
        shown = repr(answer)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise DataError(f"{where + ': ' if where else ''}field 'answer' is {kind} ({shown}); an answer must be "
                        "text or a number - write the answer text itself")
    kind = type(answer).__name__
    if isinstance(answer, bool):
        text = "yes" if answer else "no"
    else:
        text = str(int(answer) if isinstance(answer, float) and answer.is_integer() else answer).strip()
    out = _ConvertedAnswer(text)
    out.converted_from = kind
    return out


def is_yes_no(answer: str | None) -> bool:
    """True for a binary answer: "yes"/"no" in any case, with surrounding spaces or a final '.'."""
    if not answer:
        return False
    return answer.strip().lower().rstrip(".!").strip() in _YES_NO


def is_open_ended_answer(answer: str | None, *, multiple_choice: bool = False) -> bool:
    """Open-ended in the papers' sense: a free-text answer, neither yes/no nor a choice among
    options shown to the model.

    MRPO (App. C.1): "we exclude binary and multiple-choice questions
    to focus on open-ended instances, where answers are provided as free-form text", giving 200
    VQA-RAD test records. On the official VQA-RAD test split this rule gives exactly 200 (179
    with ``answer_type`` OPEN plus 21 CLOSED "A or B?" questions whose answer is free text);
    the dataset's OPEN field alone gives 179. See :mod:`medrl.data.filters` for the other modes.
    """
    return bool(answer) and not is_yes_no(answer) and not multiple_choice


def normalize_answer_type(value: Any) -> str | None:
    """``"OPEN"``/``"CLOSED"`` (trailing spaces and case removed); None when absent/unknown."""
    if value is None:
        return None
    s = str(value).strip().upper()
    if s in ("OPEN", "CLOSED"):
        return s
    if s in ("YES/NO", "YESNO", "BINARY"):
        return "CLOSED"
    return None


@dataclass
class VQARecord:
    """One image(s) + question + answer, with everything the methods may need.

    ``images``: absolute paths. ``answer_type``: the dataset's own OPEN/CLOSED label (None when
    it has none). ``open_ended``: the papers' sense (see :func:`is_open_ended_answer`).
    ``modality``: the dataset's raw modality name; ``modality_tag``: its MediX-R1 tag
    (:data:`medrl.common.modality.MODALITY_TAGS`). ``organ``: organ or body location.
    ``gold_reasoning``: an expert rationale (e.g. MedThink) or None. ``key_steps``: StepGRPO key
    steps or None. ``extras``: anything else the loader knows (language, choices, how the
    modality was derived, the original ids, ...).
    """

    id: str
    images: list[str]
    question: str
    answer: str
    answer_type: str | None = None
    open_ended: bool = False
    modality: str | None = None
    modality_tag: str | None = None
    organ: str | None = None
    question_type: str | None = None
    gold_reasoning: str | None = None
    key_steps: list[str] | None = None
    split: str | None = None
    source: str | None = None
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a number converted to text by normalize_answer_text: remembered, stored as plain text
        self._answer_converted_from = getattr(self.answer, "converted_from", None) or None
        if isinstance(self.answer, _ConvertedAnswer):
            self.answer = str(self.answer)
        # the one boundary every loader passes: no lone surrogate gets past a record
        for name in ("id", "question", "answer", "gold_reasoning", "modality", "organ", "question_type"):
            v = getattr(self, name)
            if isinstance(v, str):
                setattr(self, name, clean_text(v))
        if self.key_steps:
            self.key_steps = [clean_text(s) for s in self.key_steps]
        if self.extras:
            self.extras = clean_obj(self.extras)

    # ----------------------------------------------------------------- derived views
    @property
    def image(self) -> str | None:
        """The first image path (most medical VQA records have exactly one)."""
        return self.images[0] if self.images else None

    @property
    def lang(self) -> str | None:
        return self.extras.get("lang")

    def evidence(self) -> dict:
        """Reference evidence for step judges and key-step rewards when there is no gold
        reasoning: what the record itself states about the image (modality, organ/location)
        and the reference answer. Keys: modality, modality_tag, organ, answer, question_type;
        plus ``findings`` (organs detected in the image, SLAKE) when the loader knows them.
        """
        ev = {
            "modality": self.modality,
            "modality_tag": self.modality_tag,
            "organ": self.organ,
            "answer": self.answer,
            "question_type": self.question_type,
        }
        ev["findings"] = list(self.extras["detected_organs"]) if self.extras.get("detected_organs") else None
        return ev

    # ----------------------------------------------------------------- (de)serialisation
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, *, where: str = "record", base_dir: str | os.PathLike | None = None) -> "VQARecord":
        """Build and validate a record from a dict (the JSONL format).

        ``where`` names the file/line for error messages. Relative image paths are resolved
        against ``base_dir``. Raises :class:`DataError` for a malformed record.
        """
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(data).__name__}")
        data = clean_obj(data)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise DataError(f"{where}: unknown field(s) {unknown}; known fields: {sorted(known)}")
        rid = data.get("id")
        if rid is None or str(rid).strip() == "":
            raise DataError(f"{where}: missing 'id'")
        rid = str(rid)
        where = f"{where} (id {rid!r})"
        images = data.get("images", [])
        if isinstance(images, (str, os.PathLike)):
            images = [images]
        if not isinstance(images, list) or not all(isinstance(p, (str, os.PathLike)) for p in images):
            raise DataError(f"{where}: 'images' must be a list of paths, got {images!r}")
        if base_dir is not None:
            images = [str(p) if os.path.isabs(p) else str(Path(base_dir, p).resolve()) for p in images]
        question = data.get("question")
        if not isinstance(question, str) or not question.strip():
            raise DataError(f"{where}: empty or missing 'question'")
        answer = normalize_answer_text(data.get("answer"), where)
        if not answer:
            raise DataError(f"{where}: empty or missing 'answer'")
        key_steps = data.get("key_steps")
        if key_steps is not None and (not isinstance(key_steps, list) or not all(isinstance(s, str) for s in key_steps)):
            raise DataError(f"{where}: 'key_steps' must be a list of strings or null")
        extras = data.get("extras") or {}
        if not isinstance(extras, dict):
            raise DataError(f"{where}: 'extras' must be an object")
        gold = data.get("gold_reasoning")
        if gold is not None and not isinstance(gold, str):
            raise DataError(f"{where}: 'gold_reasoning' must be a string or null")
        answer_type = normalize_answer_type(data.get("answer_type"))
        open_ended = data.get("open_ended")
        if open_ended is None:
            open_ended = is_open_ended_answer(answer, multiple_choice=bool(extras.get("choices_in_prompt")))
        return cls(
            id=rid, images=[str(p) for p in images], question=question.strip(), answer=answer,
            answer_type=answer_type, open_ended=bool(open_ended),
            modality=_opt_str(data.get("modality")), modality_tag=_opt_str(data.get("modality_tag")),
            organ=_opt_str(data.get("organ")), question_type=_opt_str(data.get("question_type")),
            gold_reasoning=gold, key_steps=key_steps, split=_opt_str(data.get("split")),
            source=_opt_str(data.get("source")), extras=extras,
        )


def _opt_str(v: Any) -> str | None:
    if v is None:
        return None
    s = str(v).strip()
    return s or None


# --------------------------------------------------------------------------- JSONL


def read_jsonl(path: str | os.PathLike, *, skip_invalid: bool = False, report: dict | None = None) -> list[VQARecord]:
    """Read records written by :func:`write_jsonl`. Relative image paths are resolved against
    the file's folder. A malformed record raises :class:`DataError` naming file and line;
    with ``skip_invalid`` it is skipped and counted in ``report["invalid"]`` (reasons in
    ``report["errors"]``, in file order). Lines are split on ``\n`` only (U+2028 and friends
    inside a value stay part of it). Each record's line number goes to
    ``report["positions"]`` so later checks report in file order and name lines. An image path
    resolving outside the file's folder and the configured data folder is a malformed record
    (:func:`medrl.data.images.outside_root_problem`) unless allowed.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such JSONL file")
    from medrl.data.images import configured_data_roots, outside_root_problem

    out: list[VQARecord] = []
    positions = report.setdefault("positions", {}) if report is not None else {}
    roots = (path.parent, *configured_data_roots())  # where its images may be (docs/data.md "Data safety")
    for lineno, obj in _iter_jsonl_tolerant(path, skip_invalid, report):
        try:
            rec = VQARecord.from_dict(obj, where=f"{path}:{lineno}", base_dir=path.parent)
            for image in rec.images:
                why = outside_root_problem(image, roots)
                if why:
                    raise DataError(f"{path}:{lineno} (id {rec.id!r}): {why}")
        except DataError as exc:
            if not skip_invalid:
                raise
            _count_invalid(report, str(exc), lineno)
            continue
        positions.setdefault(rec.id, []).append(lineno)
        out.append(rec)
    return out


def _iter_jsonl_tolerant(path: Path, skip_invalid: bool, report: dict | None):
    text = path.read_bytes().decode("utf-8", errors="replace")
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            msg = f"{path}:{lineno}: not valid JSON ({getattr(exc, 'msg', 'nested too deeply')})"
            if not skip_invalid:
                raise DataError(msg) from None
            _count_invalid(report, msg, lineno)


def _count_invalid(report: dict | None, msg: str, pos: int | None = None) -> None:
    """Count a skipped record; ``report["errors"]`` stays in source order (``pos``: line or
    index), so ``errors[0]`` is the first record skipped."""
    if report is None:
        return
    report["invalid"] = report.get("invalid", 0) + 1
    errors = report.setdefault("errors", [])
    order = report.setdefault("_error_order", [])
    if len(order) != len(errors):  # errors appended by someone else: keep them first
        order[:] = [-1] * len(errors)
    key = pos if pos is not None else (order[-1] if order else 0)
    i = len(order)
    while i > 0 and order[i - 1] > key:
        i -= 1
    order.insert(i, key)
    errors.insert(i, msg)


def write_jsonl(records: Iterable[VQARecord], path: str | os.PathLike) -> Path:
    """Write records as JSONL (UTF-8, one ``to_dict()`` per line); returns the path.

    Written to a temporary file first and renamed, so an interrupted write never leaves a
    half-written file in place of a good one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(dumps_line(r.to_dict()) + "\n")
    os.replace(tmp, path)
    return path


_WS = re.compile(r"\s+")


def norm_text(s: Any) -> str:
    """Case-folded text with runs of whitespace collapsed (for matching and deduplication)."""
    return _WS.sub(" ", str(s)).strip().casefold()
