"""`medrl audit-rewards --strict --n 32` for every built-in recipe on SLAKE validate (the body is
the ``strict_audit`` fixture of tests/rewards/conftest.py; VQA-RAD test runs in test_audit.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


def test_every_recipe_strict_n32_slake(strict_audit):
    strict_audit("slake:validate")
