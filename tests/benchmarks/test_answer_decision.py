"""benchmarks/answer_decision.py runs (its --smoke mode, seconds) and prints the slowest decision."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "answer_decision.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("answer_decision_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_smoke_run_prints_every_row_and_the_slowest_decision(capsys):
    bench = load_benchmark()
    assert bench.main(["--smoke", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "slowest decision at the cap (2,000 characters):" in out
    rows = [line for line in out.splitlines() if line.startswith(("count ", "long "))]
    assert len(rows) == 2 * len(bench.SMOKE_FAMILIES)
