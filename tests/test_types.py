"""Tests of the small shared pieces: registry, modality tags, data path, CLI, import time."""

from __future__ import annotations

import subprocess
import sys

import pytest

from medrl.common.modality import MODALITY_TAGS, modality_to_tag
from medrl.common.paths import data_root
from medrl.common.registry import Registry
from medrl.types import StepVerdict, Verdict


def test_registry_register_get_and_errors():
    reg = Registry("thing")

    @reg.register("a")
    def a():
        return 1

    assert reg.get("a") is a
    assert "a" in reg and "b" not in reg
    assert reg.names() == ["a"]
    with pytest.raises(KeyError, match="unknown thing 'b'; known: a"):
        reg.get("b")
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a")(lambda: 2)


def test_modality_tags_and_mapping():
    assert len(MODALITY_TAGS) == 16 and len(set(MODALITY_TAGS)) == 16
    assert modality_to_tag("CT") == "CT_SCAN"
    assert modality_to_tag("MRI") == "MRI_SCAN"
    assert modality_to_tag("X-Ray") == "X_RAY"
    assert modality_to_tag("x ray") == "X_RAY"
    assert modality_to_tag("mri_scan") == "MRI_SCAN"
    assert modality_to_tag("MRI-T2") == "MRI_SCAN"
    assert modality_to_tag("Ultrasound") == "ULTRASOUND"
    assert modality_to_tag("banana") is None
    assert modality_to_tag("") is None and modality_to_tag(None) is None


def test_step_verdict_validity_and_unscored_verdict():
    assert StepVerdict(1, 0).valid and StepVerdict(0, 1).valid and not StepVerdict(0, 0).valid
    v = Verdict.unscored("timeout")
    assert not v.scored and v.value is None and v.error == "timeout"
    assert Verdict.ok(True).value is True


def test_data_root_explicit_missing(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="MEDRL_DATA_DIR"):
        data_root(tmp_path / "nope")
    monkeypatch.setenv("MEDRL_DATA_DIR", str(tmp_path))
    assert data_root() == tmp_path.resolve()


HEAVY = ("torch", "transformers", "trl", "datasets", "sklearn", "sentence_transformers", "openai", "matplotlib")


def test_import_loads_no_heavy_library():
    """`import medrl` stays fast because heavy libraries load lazily (timing: benchmarks/import_time.py)."""
    code = (
        "import sys, medrl, medrl.answers.completion, medrl.types, medrl.judges, medrl.common.modality, medrl.cli; "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_cli_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "medrl.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Typical workflow" in out.stdout
