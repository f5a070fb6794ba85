"""``python -m medrl``: the same command line as the ``medrl`` console script."""

from __future__ import annotations

import subprocess
import sys

import medrl
import medrl.__main__ as entry
from medrl.cli import main


def test_module_entry_is_the_cli_main():
    assert entry.main is main


def test_python_dash_m_prints_version_and_help():
    version = subprocess.run([sys.executable, "-m", "medrl", "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0
    assert version.stdout.strip() == f"medrl {medrl.__version__}"
    bad = subprocess.run([sys.executable, "-m", "medrl", "no-such-command"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "invalid choice: 'no-such-command'" in bad.stderr
