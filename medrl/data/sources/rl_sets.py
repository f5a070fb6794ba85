"""R1-style reinforcement-learning and warm-up sets: CAPO's Med-Zero-17K and StepGRPO's Mulberry CoT.
"""

from __future__ import annotations

import re
from pathlib import Path

from medrl.data.record import DataError, VQARecord
from medrl.data.sources._common import (
    find_root,
    image_file,
    letter_index,
    mcq_record,
    read_rows,
    split_modality_tag,
    split_of,
    vqa_record,
    want_split,
)


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def load_med_zero_17k(data_dir: Path, split: str | None = "train", *, path: str | None = None) -> list[VQARecord]:
    """CAPO's Med-Zero-17K (Sec. 3.1). The paper says it "will be released"; no public copy was
    found when this loader was written, so it reads the R1-style layout public medical RL sets
    use (e.g. ``MBZUAI/medix-rl-data``): parquet or JSON(L) files ``<root>/**/<split>*`` with
    ``problem`` (or ``question``), ``solution`` (or ``answer``; an ``<answer>...</answer>``
    wrapper and a leading modality tag such as ``<X_RAY>`` are removed, the tag becoming the
    modality when the row has none; ``medix_rl`` reads MediX-R1's own data), ``image``/``images``, and optional ``level`` (CAPO's difficulty 1-3),
    ``modality``, ``task``, ``options`` (multiple choice)."""
    root = Path(path).resolve() if path else find_root("med_zero_17k", data_dir)
    files = [f for f in sorted(root.rglob("*")) if f.suffix in (".parquet", ".json", ".jsonl")
             and want_split(split, split_of(f.name) or "train")]
    if not files:
        raise DataError(f"Med-Zero-17K: no {split!r} parquet/JSON file under {root}")
    out: list[VQARecord] = []
    for f in files:
        s = split_of(f.name) or "train"
        for i, row in enumerate(read_rows(f)):
            where = f"{f} record {i}"
            q = row.get("problem") or row.get("question")
            a = row.get("solution") if row.get("solution") not in (None, "") else row.get("answer")
            if q in (None, "") or a in (None, ""):
                raise DataError(f"{where}: field 'problem'/'question' or 'solution'/'answer' missing or empty")
            m = _ANSWER_TAG.search(str(a))
            a = m.group(1).strip() if m else str(a)
            tag, a = split_modality_tag(a)  # "<X_RAY> pneumonia": MediX-R1-style rows lead with the tag
            modality = row.get("modality") or tag
            rid = f"medzero-{row.get('id') or f'{f.stem}-{i}'}"
            imgs = row.get("images") if row.get("images") is not None else row.get("image")
            imgs = imgs if isinstance(imgs, list) else [imgs] if imgs else []
            images = [p for k, it in enumerate(imgs) if (p := image_file(root, it, f"{rid}-{k}"))]
            level = row.get("level")
            if level not in (None, "") and str(level) not in ("1", "2", "3"):
                raise DataError(f"{where}: level {level!r} is not CAPO's difficulty 1, 2 or 3")
            extras = {"level": int(level) if level not in (None, "") else None, "task": row.get("task")}
            opts = row.get("options")
            if opts:
                options = list(opts.values()) if isinstance(opts, dict) else list(opts)
                norm = [str(o).strip().lower() for o in options]
                idx = norm.index(a.strip().lower()) if a.strip().lower() in norm else letter_index(a, len(options), where)
                out.append(mcq_record(rid=rid, question=q, options=options, answer_index=idx, images=images, split=s,
                                      source="med_zero_17k", modality=modality, where=where, extras=extras))
            else:
                rec = vqa_record(rid=rid, image=None, question=q, answer=a, split=s, source="med_zero_17k",
                                  where=where, modality=modality, extras=extras)
                rec.images = images
                out.append(rec)
    return out


_FINAL = re.compile(r"(?:###\s*)?The final answer is\s*:?\s*", re.IGNORECASE)


def load_mulberry_cot(data_dir: Path, split: str | None = "train", *, path: str | None = None) -> list[VQARecord]:
    """StepGRPO's warm-up data (Sec. 4.1: SFT on Mulberry-260k chain-of-thought, Eq. 1): the
    Mulberry SFT release (``HuanjinYao/Mulberry-SFT``) in LLaMA-Factory's ShareGPT layout - JSON
    files ``<root>/*.json`` of ``{"messages": [{"role": "user", "content": "<image>question"},
    {"role": "assistant", "content": "...step-by-step... The final answer is: X"}], "images":
    [relative path]}``, images relative to ``<root>``. The reasoning before "The final answer
    is" becomes ``gold_reasoning`` (what the warm-up SFT teaches), the rest the answer."""
    root = Path(path).resolve() if path else find_root("mulberry_cot", data_dir)
    if split not in (None, "train"):
        raise DataError(f"Mulberry SFT data has one split, 'train', not {split!r}")
    files = sorted(f for f in root.glob("*.json*") if f.suffix in (".json", ".jsonl"))
    if not files:
        raise DataError(f"Mulberry: no JSON file under {root}")
    out: list[VQARecord] = []
    for f in files:
        for i, row in enumerate(read_rows(f)):
            where = f"{f} item #{i}"
            msgs = row.get("messages") or row.get("conversations")
            if not isinstance(msgs, list) or len(msgs) < 2:
                raise DataError(f"{where}: expected 'messages' with a user and an assistant turn")
            user = next((m for m in msgs if m.get("role", m.get("from")) in ("user", "human")), None)
            bot = next((m for m in reversed(msgs) if m.get("role", m.get("from")) in ("assistant", "gpt")), None)
            if user is None or bot is None:
                raise DataError(f"{where}: needs one user and one assistant message")
            q = str(user.get("content", user.get("value", ""))).replace("<image>", "").strip()
            reply = str(bot.get("content", bot.get("value", "")))
            parts = _FINAL.split(reply)
            if len(parts) < 2 or not parts[-1].strip():
                raise DataError(f"{where}: the assistant reply has no 'The final answer is' line")
            answer = parts[-1].strip().rstrip(".").strip()
            reasoning = _FINAL.sub("", "".join(parts[:-1])).strip()
            images = [str(root / p) for p in (row.get("images") or [])]
            rec = vqa_record(rid=f"mulberry-{f.stem}-{i}", image=None, question=q, answer=answer, split="train",
                              source="mulberry_cot", where=where)
            rec.images, rec.gold_reasoning = images, reasoning or None
            out.append(rec)
    return out
