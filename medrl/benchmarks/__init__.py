"""Old import path of the judge label files, which live in :mod:`medrl.judges.labels` now
(``judge_dev.jsonl``, ``judge_agreement.json``). The paths are spelled here without importing
that package, so this bottom-layer module imports nothing above it."""

from __future__ import annotations

from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent / "judges" / "labels"
JUDGE_DEV = BENCH_DIR / "judge_dev.jsonl"
JUDGE_AGREEMENT = BENCH_DIR / "judge_agreement.json"
