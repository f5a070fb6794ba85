"""Small files the data-loader tests write in each publisher's layout (an image, a parquet shard)."""

from __future__ import annotations

import io


def png(color=(120, 10, 10)) -> bytes:
    """An 8 x 8 RGB PNG of one colour, as bytes."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


def write_png(path, color=(1, 2, 3)):
    """Write :func:`png` to ``path`` (folders made); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png(color))
    return path


def write_parquet(path, rows):
    """Write ``rows`` (a list of dicts) as one parquet file at ``path`` (folders made)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
