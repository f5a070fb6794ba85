"""``python -m medrl ...``: the same as the ``medrl`` command (e.g. where the console script is
not on PATH, or to pick the interpreter: ``.venv/bin/python -m medrl demo --quick``)."""

import sys

from medrl.cli import main

if __name__ == "__main__":
    sys.exit(main())
