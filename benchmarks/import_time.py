"""Measure `import medrl` (target: under 2 s) against `import torch` as a same-session baseline.

Run: .venv/bin/python benchmarks/import_time.py [--repeats 3] [--smoke]
(``--smoke``: one repeat each, seconds; the test suite runs it so the script cannot rot.)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time


def timed(code: str, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="runs of each import; the fastest counts")
    ap.add_argument("--smoke", action="store_true", help="one repeat each (the test suite's check)")
    args = ap.parse_args(argv)
    repeats = 1 if args.smoke else args.repeats
    empty = timed("pass", repeats)
    medrl = timed("import medrl, medrl.answers.completion, medrl.judges, medrl.cli", repeats)
    torch = timed("import torch", repeats)
    print(f"python start-up      {empty:.3f} s")
    print(f"import medrl         {medrl:.3f} s  (target < 2 s; {medrl - empty:.3f} s over start-up)")
    print(f"import torch         {torch:.3f} s")
    print(f"ratio medrl / torch  {(medrl - empty) / max(torch - empty, 1e-9):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
