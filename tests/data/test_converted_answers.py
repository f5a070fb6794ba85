"""Answers that are numbers in a source file (VQA-RAD has a few integers) are converted to text
and counted per load: the records that load kept, not every conversion the loader made while
reading the file (its modality votes and field checks read answers of both splits)."""

from __future__ import annotations

import json

from medrl.data import load_records
from medrl.data.record import VQARecord, answer_converted_from, normalize_answer_text


def test_vqa_rad_counts_only_the_kept_records_with_a_number_answer(data_dir):
    from medrl.data.sources.vqa_rad import OFFICIAL_FILE, TEST_PHRASES, TRAIN_PHRASES

    rows = json.loads((data_dir / "vqa_rad" / OFFICIAL_FILE).read_text(encoding="utf-8"))

    def numbers(phrases):
        return sum(1 for r in rows if str(r.get("phrase_type", "")).strip().lower() in phrases
                   and isinstance(r.get("answer"), (int, float)))

    want = {"test": numbers(TEST_PHRASES), "train": numbers(TRAIN_PHRASES)}
    assert want["test"] == 0 and want["train"] > 0
    for split in ("test", "train", "test"):  # the counts of one load do not leak into the next
        report: dict = {}
        recs = load_records("vqa_rad", split=split, data_dir=data_dir, report=report)
        assert report.get("converted_answers", 0) == want[split], split
        assert sum(1 for r in recs if answer_converted_from(r)) == want[split]
    report = {}
    load_records("vqa_rad", data_dir=data_dir, report=report)
    assert report["converted_answers"] == want["train"] + want["test"]


def test_the_mark_travels_with_the_record_but_not_into_jsonl():
    rec = VQARecord(id="r", images=[], question="How many?", answer=normalize_answer_text(4))
    assert rec.answer == "4" and type(rec.answer) is str and answer_converted_from(rec) == "int"
    assert answer_converted_from(VQARecord.from_dict(rec.to_dict())) is None  # written, it is text
    assert answer_converted_from(VQARecord(id="s", images=[], question="q", answer="4")) is None
    assert normalize_answer_text(True) == "yes" and normalize_answer_text(12.0) == "12"
