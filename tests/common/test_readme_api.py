"""The README's Python API is public: every name its example imports must keep importing when
modules move, and the example's calls that need no data folder must run."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _api_block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README: the Python API section has no python block"
    return match.group(1)


def test_readme_api_imports_resolve():
    block = _api_block()
    imports = [line for line in block.splitlines() if line.startswith(("from medrl", "import medrl"))]
    assert imports, "README: the Python API example imports nothing from medrl"
    namespace: dict = {}
    exec("\n".join(imports), namespace)  # noqa: S102 - the README's own lines
    for line in imports:
        for name in line.split(" import ", 1)[1].split(","):
            assert name.strip() in namespace, line


def test_readme_api_reward_and_judge_build_offline():
    namespace: dict = {}
    exec("\n".join(line for line in _api_block().splitlines()  # noqa: S102
                   if line.startswith("from medrl") or line.startswith(("judge =", "r_ans ="))), namespace)
    assert callable(namespace["r_ans"])
    assert namespace["judge"] is not None
