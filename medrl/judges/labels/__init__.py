"""Labelled data shipped with medrl for measuring judges (package data).

- ``judge_dev.jsonl``: a hand-labelled development set for ``medrl judge-bench`` (answer items and
  reasoning traces written for this project from the VQA-RAD and SLAKE *training* splits; images
  are referenced by path under the data root, never copied). Format: docs/judges.md.
- ``judge_agreement.json``: measured agreement of built-in judges on that set, read by
  :func:`medrl.eval.judge_bench.known_agreement` so eval reports can state how far to trust a judge.
"""

from __future__ import annotations

from pathlib import Path

LABELS_DIR = Path(__file__).resolve().parent
JUDGE_DEV = LABELS_DIR / "judge_dev.jsonl"
JUDGE_AGREEMENT = LABELS_DIR / "judge_agreement.json"
