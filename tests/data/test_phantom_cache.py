"""A damaged cached phantom PNG is drawn again, never reused: a file cut short (a full disk or a
kill while it was written) or one holding another record's image."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from medrl.data.sources.phantom import phantom_records


def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_cut_or_swapped_cached_image_is_drawn_again(tmp_path, caplog):
    recs = phantom_records("test", 4, cache_dir=tmp_path)
    whole = [_digest(r.image) for r in recs]
    cut = Path(recs[1].image)
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    shutil.copyfile(recs[3].image, recs[2].image)  # a whole PNG, but another record's
    again = phantom_records("test", 4, cache_dir=tmp_path)
    assert [_digest(r.image) for r in again] == whole
    assert f"phantom image {cut} is damaged" in caplog.text
    assert f"phantom image {recs[2].image} is damaged (its parameters are not this record's)" in caplog.text
