"""``benchmarks/step_profile.py --smoke`` runs every arm end to end (so the profile cannot rot)
and reports each component and the ratio to the floor on both clocks. Its times mean nothing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "step_profile.py"


def test_smoke_profiles_every_arm(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("step_profile", SCRIPT)
    profile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(profile)

    assert profile.main(["--smoke", "--json", str(tmp_path / "profile.json")]) == 0
    out = json.loads((tmp_path / "profile.json").read_text())
    for clock in ("cpu", "wall"):
        medians = out["medians"][clock]
        assert set(medians) == set(profile.DEFAULT_ARMS)
        for arm, row in medians.items():
            assert row["n"] >= 1 and row["step"] > 0, (clock, arm)
            assert set(profile.COMPONENTS) <= set(row)
    assert out["medians"]["cpu"]["floor"]["rewards_hooks"] == 0  # the floor has no reward to compute
    printed = capsys.readouterr().out
    assert "ratio medrl / floor" in printed and "median CPU seconds" in printed
