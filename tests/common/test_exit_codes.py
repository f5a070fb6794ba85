"""One exit-code table: ``medrl --help``, the README and docs/first-hour.md all come from
:data:`medrl.common.exit_codes.TABLE`, and the error classes of each fault map to their code."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

from medrl.common.exit_codes import TABLE, Exit, for_error, markdown_table, storage_error, summary

REPO = Path(__file__).resolve().parents[2]


def test_help_readme_and_docs_say_what_the_table_says():
    out = subprocess.run([sys.executable, "-m", "medrl", "--help"], capture_output=True, text=True, cwd=REPO,
                         check=True).stdout
    assert " ".join(summary().split()) in " ".join(out.split())  # --help wraps the line
    for code, _ in TABLE:
        assert f" {int(code)} " in " ".join(out.split())
    assert summary() in (REPO / "README.md").read_text()
    assert markdown_table() in (REPO / "docs" / "first-hour.md").read_text()
    assert {int(c) for c, _ in TABLE} == {int(c) for c in Exit}


def test_disk_and_permission_errors_are_one_line_with_the_storage_code(tmp_path):
    for code in (errno.ENOSPC, errno.EROFS, errno.EACCES):
        exc = OSError(code, "x", str(tmp_path / "checkpoint-2" / "optimizer.pt"))
        got = for_error(exc)
        assert got is not None and got[0] == Exit.STORAGE == 10
        assert str(tmp_path / "checkpoint-2" / "optimizer.pt") in got[1] and "\n" not in got[1]
    assert for_error(OSError(errno.ENOENT, "gone", "x")) is None  # not a storage fault: a bug to report
    err = storage_error(OSError(errno.ENOSPC, "full"), tmp_path / "final")
    assert for_error(err) == (Exit.STORAGE, err.strerror) and "No space left on device" in err.strerror


def test_a_failed_write_that_names_no_errno_is_still_found(tmp_path):
    """safetensors and torch report a full or read-only disk as their own errors: the errno in the
    text, the OS's words, or (torch's zip writer) nothing at all - then a probe write decides."""
    from medrl.common.exit_codes import write_failure

    full = write_failure(RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)"),
                         tmp_path / "checkpoint-2")
    assert full is not None and full.errno == errno.ENOSPC and str(tmp_path / "checkpoint-2") in full.strerror
    ro = write_failure(RuntimeError("PytorchStreamWriter failed writing file data/0: Read-only file system"), tmp_path)
    assert ro is not None and ro.errno == errno.EROFS
    # the folder takes writes and has room: an unexplained torch error is not put down to the disk
    assert write_failure(RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0"),
                         tmp_path) is None or __import__("shutil").disk_usage(tmp_path).free < 16 * 2 ** 20
    assert write_failure(ValueError("bad value"), tmp_path) is None
    chained = RuntimeError("save failed")
    chained.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert write_failure(chained, tmp_path).errno == errno.ENOSPC
