"""medrl.commands.run_folder: one writer per run folder, a failed start leaves the folder as it
was, and --allow-outside-data-root holds for the whole run."""

from __future__ import annotations

import argparse
import os

import pytest

from medrl.commands.run_folder import add_data_root_arg, run_in_folder
from medrl.data.images import OUTSIDE_ROOT_ENV, outside_root_allowed
from medrl.common.runlock import HOLDER_NAME, LOCK_NAME, lock_holder


def args(**kw):
    return argparse.Namespace(**{"out": None, "dry_run": False, "allow_outside_data_root": False, **kw})


def test_the_option_is_declared_once_with_its_help():
    p = argparse.ArgumentParser()
    add_data_root_arg(p)
    assert p.parse_args([]).allow_outside_data_root is False
    assert p.parse_args(["--allow-outside-data-root"]).allow_outside_data_root is True
    assert "refused by default" in p.format_help()


def test_work_runs_under_the_lock_and_returns_its_code(tmp_path):
    out = tmp_path / "run"
    seen = {}

    def work():
        seen["holder"] = lock_holder(out)
        return 0

    assert run_in_folder(args(out=str(out)), "medrl test", work) == 0
    assert seen["holder"]["pid"] == os.getpid() and seen["holder"]["what"] == "medrl test"
    assert not (out / HOLDER_NAME).exists()  # released


@pytest.mark.parametrize("failure", ["code", "error"])
def test_failed_start_removes_the_lock_files_and_the_new_empty_folder(tmp_path, failure):
    out = tmp_path / "new"

    def work():
        if failure == "error":
            raise RuntimeError("boom")
        return 2

    if failure == "error":
        with pytest.raises(RuntimeError, match="boom"):
            run_in_folder(args(out=str(out)), "medrl test", work)
    else:
        assert run_in_folder(args(out=str(out)), "medrl test", work) == 2
    assert not out.exists()


def test_failure_keeps_a_folder_that_existed_and_what_work_wrote(tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    (out / "kept.txt").write_text("x")

    def work():
        (out / "partial.txt").write_text("y")
        return 1

    assert run_in_folder(args(out=str(out)), "medrl test", work) == 1
    assert sorted(p.name for p in out.iterdir()) == ["kept.txt", "partial.txt"]
    assert not (out / LOCK_NAME).exists()


def test_dry_run_takes_no_lock_and_makes_no_folder(tmp_path):
    out = tmp_path / "dry"
    assert run_in_folder(args(out=str(out), dry_run=True), "medrl test", lambda: 0) == 0
    assert not out.exists()


def test_allow_outside_data_root_holds_only_during_the_work(tmp_path, monkeypatch):
    monkeypatch.delenv(OUTSIDE_ROOT_ENV, raising=False)
    inside = []
    run_in_folder(args(allow_outside_data_root=True), "medrl test", lambda: inside.append(outside_root_allowed()))
    assert inside == [True]
    assert not outside_root_allowed()
