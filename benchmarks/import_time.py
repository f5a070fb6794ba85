"""Measure `import medrl` (target: under 2 s) against `import torch` as a same-session baseline.

Run: .venv/bin/python benchmarks/import_time.py
"""

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


if __name__ == "__main__":
    empty = timed("pass")
    medrl = timed("import medrl, medrl.answers.completion, medrl.judges, medrl.cli")
    torch = timed("import torch")
    print(f"python start-up      {empty:.3f} s")
    print(f"import medrl         {medrl:.3f} s  (target < 2 s; {medrl - empty:.3f} s over start-up)")
    print(f"import torch         {torch:.3f} s")
    print(f"ratio medrl / torch  {(medrl - empty) / max(torch - empty, 1e-9):.3f}")
