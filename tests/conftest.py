"""Shared test fixtures. Tests never touch the network: HF offline mode is forced here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Tests live in per-package folders (tests/<package>/test_<module>.py) and run under
# --import-mode=importlib; the shared helpers here (synthetic.py, fake_openai.py) stay importable.
# rouge-score imports absl, whose log handler keeps the sys.stderr of the moment it is imported -
# inside a test, pytest's capture file of that test - and closes it later (absl closes any stream
# that is not the current sys.stderr), which breaks the capture of a later test. Imported here,
# before any test, and pointed at the process's own stderr, which absl never closes.
try:
    import absl.logging as _absl_logging

    _absl_logging.get_absl_handler().python_handler.stream = sys.__stderr__
except ImportError:  # pragma: no cover - absl comes with rouge-score
    pass

_TESTS = Path(__file__).resolve().parent
sys.path.append(str(_TESTS))
# a few tests reuse another test module's fixtures or fakes by its (unique) basename
sys.path.extend(str(d) for d in sorted(_TESTS.iterdir()) if d.is_dir() and not d.name.startswith((".", "_")))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# 2 CPU cores: torch intra-op threads only contend on the tiny models the tests use
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]


def _shared_data() -> Path | None:
    env = os.environ.get("MEDRL_DATA_DIR")
    for c in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data", REPO / "data"]:
        if (c / "vqa_rad").is_dir():
            return c
    return None


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models on a shared 2-core machine: one intra-op thread is ~3x faster than two
    (OpenMP threads spin against the other processes); restored afterwards. Use it with
    ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture()
def generation_faked_model(monkeypatch):
    """For tests that fake generation: a model folder holding only ``config.json`` passes the
    commands' model preflight (its JSON and weights checks still run; loading the config,
    tokenizer, processor and chat template is skipped, as the faked generator never loads them)."""
    import medrl.models.integrity as integrity

    monkeypatch.setattr(integrity, "load_problem", lambda *a, **k: None)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real VQA-RAD / SLAKE folder (../shared/data); tests needing it skip without it."""
    d = _shared_data()
    if d is None:
        pytest.skip("real data folder (../shared/data) not present")
    return d


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line per browser screenshot test, so a CI log shows whether they ran (never skipped)."""
    outcomes = []
    for kind in ("passed", "failed", "skipped", "error"):
        for rep in terminalreporter.stats.get(kind, []):
            if getattr(rep, "when", "call") in ("call", "setup") and "screenshot" in getattr(rep, "keywords", {}):
                if kind == "passed" and rep.when != "call":
                    continue
                outcomes.append((rep.nodeid, kind))
    if outcomes:
        terminalreporter.write_sep("-", "report screenshot tests (headless Chromium)")
        for nodeid, kind in outcomes:
            terminalreporter.write_line(f"{kind.upper():8s} {nodeid}")
