"""Benchmarks cannot rot: each script in benchmarks/ runs here in its smoke mode (seconds, numbers
not checked), and every script has a smoke test somewhere under tests/."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]


def script(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_script_has_a_smoke_test():
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    missing = [p.name for p in sorted(BENCH.glob("*.py")) if f'"{p.stem}"' not in tests and p.name not in tests]
    assert not missing, f"benchmarks without a smoke test: {missing}"


def test_import_time(capsys):
    assert script("import_time").main(["--smoke"]) == 0
    assert "import medrl" in capsys.readouterr().out


def test_judge_throughput(capsys):
    assert script("judge_throughput").main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "calls/s" in out and "epoch 2" in out


@pytest.mark.usefixtures("one_torch_thread")
def test_step_overhead(data_dir, capsys):
    assert script("step_overhead").main(["--smoke", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    # the hooks are timed where they live: the trainer's hook points and the MRPO method's hooks
    assert "MedGRPOTrainer._advantages" in out and "MRPO.advantage_inputs" in out
    assert "ratio MedGRPOTrainer / GRPOTrainer" in out


def test_step_prompt_rproc(capsys):
    assert script("step_prompt_rproc").main(["--smoke"]) == 0
    assert "gold + restated answer" in capsys.readouterr().out


def test_a_hook_point_that_moved_is_an_error_not_a_silent_zero():
    from types import SimpleNamespace

    with pytest.raises(AttributeError, match="no hook point"):
        script("step_overhead").time_hooks(SimpleNamespace(methods=[]), [0.0])


@pytest.mark.usefixtures("one_torch_thread")
def test_trl_grpo_tests(tmp_path, capsys, monkeypatch):
    """The runner of TRL's own GRPO tests (docs/training.md "TRL's own GRPO tests"): with no TRL
    checkout it runs nothing; its stand-ins for the hub repositories load by repo id offline."""
    monkeypatch.delenv("TRL_TESTS", raising=False)
    mod = script("trl_grpo_tests")
    assert mod.main([]) == 0 and "nothing run" in capsys.readouterr().out
    assert mod.main(["--smoke", "--out", str(tmp_path)]) == 0
    assert "chat template ok (True)" in capsys.readouterr().out
    assert "MedGRPOTrainer" in mod.SUBSTITUTE and "MedGRPOTrainer" not in mod.COMPAT


@pytest.mark.slow
def test_trl_grpo_tests_compares_the_two_trainers(tmp_path):
    """A stand-in TRL test file run under both trainers: the medrl run sees MedGRPOTrainer."""
    tests = tmp_path / "trl_tests"
    tests.mkdir()
    (tests / "testing_utils.py").write_text("")
    (tests / "test_grpo_trainer.py").write_text(
        "from trl import GRPOTrainer\n\n\ndef test_is_trl():\n    assert GRPOTrainer.__name__ == 'GRPOTrainer'\n")
    mod = script("trl_grpo_tests")
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    for name in ("test_grpo_trainer.py", "testing_utils.py"):
        (work / "tests" / name).write_text((tests / name).read_text())
    (work / "tests" / "__init__.py").write_text("")
    assert mod.run_suite(work, "trl", []) == {"test_grpo_trainer::test_is_trl": "passed"}
    assert mod.run_suite(work, "medrl", []) == {"test_grpo_trainer::test_is_trl": "failed"}
