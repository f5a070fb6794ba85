"""Text from models and data, made safe at the boundary.

A lone surrogate (``"\\ud800"``: possible in a Python ``str``, impossible in UTF-8) crashes
``str.encode``, cache keys, tokenizers and file writes far from where it came in. Every text
that enters medrl from a model or a data file goes through :func:`clean_text`, which replaces
lone surrogates with U+FFFD and leaves every other character as it is.
"""

from __future__ import annotations

from typing import Any


def clean_text(text: Any) -> Any:
    """``text`` with lone surrogates replaced by U+FFFD; non-strings are returned unchanged."""
    if not isinstance(text, str):
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        # Through UTF-16 with surrogatepass: a split pair is joined, a lone half becomes U+FFFD.
        return text.encode("utf-16", errors="surrogatepass").decode("utf-16", errors="replace")


def clean_obj(obj: Any) -> Any:
    """:func:`clean_text` applied to every string inside lists, tuples and dicts (keys too)."""
    if isinstance(obj, str):
        return clean_text(obj)
    if isinstance(obj, dict):
        return {clean_text(k): clean_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_obj(v) for v in obj]
    return obj
