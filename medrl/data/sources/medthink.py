"""MedThink rationales (Gai et al., NAACL Findings 2025) joined onto VQA records as gold reasoning.

MedThink (R-RAD, R-SLAKE, R-Path) ships a JSON file per dataset: a dict keyed by question id
(a list is accepted too), each entry with ``question``, ``choices``, ``answer`` (text, or an index
into ``choices``), ``solution`` (the rationale) and ``image`` or ``img_name`` / ``img_id``.

MRPO (App. C.1) aligns training records to MedThink "by exact matching
on the image, question, and answer triple". :func:`attach_rationales` does that: the image is
matched by its file name (or by the last folder + file name, or SLAKE's ``img_id`` / folder
name, since every SLAKE image is called ``source.jpg``); question and answer must be equal after
collapsing whitespace and case (``normalize=False`` compares them verbatim).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path, PurePosixPath

from medrl.data.record import DataError, VQARecord, norm_text, normalize_answer_text


def _image_keys_of_ref(ref) -> set[str]:
    p = PurePosixPath(str(ref).replace("\\", "/").strip("/"))
    keys = {p.name.lower(), str(p).lower()}
    if len(p.parts) >= 2:
        keys.add("/".join(p.parts[-2:]).lower())
    return keys


def _record_image_keys(rec: VQARecord) -> set[str]:
    keys: set[str] = set()
    for img in rec.images:
        p = PurePosixPath(str(img).replace("\\", "/"))
        keys.add("/".join(p.parts[-2:]).lower())
        if p.name.lower() != "source.jpg":  # SLAKE: every image has this name
            keys.add(p.name.lower())
        else:
            keys.add(p.parent.name.lower())
            keys.add((p.parent.name + p.suffix).lower())
    if rec.extras.get("img_id") is not None:
        keys.add(f"img_id:{rec.extras['img_id']}")
    return keys


def read_rationales(path: str | Path) -> list[dict]:
    """MedThink entries as dicts with ``qid``, ``image_keys``, ``question``, ``answer``, ``solution``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"MedThink file missing: {path}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None
    items = list(data.items()) if isinstance(data, dict) else list(enumerate(data)) if isinstance(data, list) else None
    if items is None:
        raise DataError(f"{path}: expected a dict keyed by question id (or a list)")
    out = []
    for qid, e in items:
        if not isinstance(e, dict):
            raise DataError(f"{path}: entry {qid!r} is not an object")
        for key in ("question", "answer", "solution"):
            if key not in e:
                raise DataError(f"{path}: entry {qid!r} lacks {key!r}")
        answer = e["answer"]
        choices = e.get("choices") or []
        if isinstance(answer, int) and not isinstance(answer, bool) and choices and 0 <= answer < len(choices):
            answer = choices[answer]
        keys: set[str] = set()
        for k in ("image", "img_name"):
            if e.get(k):
                keys |= _image_keys_of_ref(e[k])
        if e.get("img_id") is not None:
            keys.add(f"img_id:{e['img_id']}")
        if not keys:
            raise DataError(f"{path}: entry {qid!r} names no image ('image', 'img_name' or 'img_id')")
        out.append({"qid": str(qid), "image_keys": keys, "question": str(e["question"]),
                    "answer": normalize_answer_text(answer), "solution": str(e["solution"]).strip()})
    return out


def attach_rationales(
    records: list[VQARecord], path: str | Path, *, normalize: bool = True, keep_unmatched: bool = True
) -> tuple[list[VQARecord], dict]:
    """Set ``gold_reasoning`` on records whose (image, question, answer) equals a MedThink entry's.

    Returns (records, report) with report = {matched, unmatched_records, unused_rationales,
    ambiguous}. ``keep_unmatched=False`` drops records without a rationale (MRPO's training set
    keeps only matched ones). Ambiguous = a record matching rationales with different texts; it
    takes the first and is counted.
    """
    f = norm_text if normalize else (lambda s: str(s).strip())
    index: dict[tuple[str, str, str], list[dict]] = {}
    for e in read_rationales(path):
        for k in e["image_keys"]:
            index.setdefault((k, f(e["question"]), f(e["answer"])), []).append(e)
    used: set[str] = set()
    out, matched, ambiguous = [], 0, 0
    for rec in records:
        hits: list[dict] = []
        for k in _record_image_keys(rec):
            hits += index.get((k, f(rec.question), f(rec.answer)), [])
        if hits:
            matched += 1
            if len({h["solution"] for h in hits}) > 1:
                ambiguous += 1
            used.update(h["qid"] for h in hits)
            out.append(replace(rec, gold_reasoning=hits[0]["solution"],
                               extras={**rec.extras, "medthink_qid": hits[0]["qid"]}))
        elif keep_unmatched:
            out.append(rec)
    total = len({e["qid"] for es in index.values() for e in es})
    report = {"matched": matched, "unmatched_records": len(records) - matched,
              "unused_rationales": total - len(used), "ambiguous": ambiguous}
    return out, report
