"""Medical VQA data: one record type, the registry of sources (dataset loaders, one file per
family in :mod:`medrl.data.sources`) and suites, filters, prompts, curation tools and image
corruption.

Importing this package is instant: the record type and JSONL I/O use the standard library only;
``to_hf_dataset`` imports ``datasets`` when called, curation imports scikit-learn when called.

    from medrl.data import load_records, to_hf_dataset
    recs = load_records("vqa_rad", split="test", open_only=True)    # 200 records
    ds = to_hf_dataset(recs, prompt_style="think_answer")
"""

from __future__ import annotations

from medrl.data.filters import deduplicate, filter_language, filter_open, is_open
from medrl.data.registry import DATASETS, load_records, parse_source
from medrl.data.record import DataError, VQARecord, is_yes_no, read_jsonl, write_jsonl

__all__ = [
    "DATASETS", "DataError", "VQARecord", "attach_rationales", "deduplicate", "filter_language",
    "filter_open", "format_target", "is_open", "is_yes_no", "load_records", "parse_source",
    "read_jsonl", "SYSTEM_PROMPTS", "to_hf_dataset", "validate_records", "write_jsonl",
]


def __getattr__(name: str):
    # light but not needed at import time: resolved on first use
    if name == "to_hf_dataset":
        from medrl.data.hf import to_hf_dataset

        return to_hf_dataset
    if name in ("format_target", "SYSTEM_PROMPTS", "build_prompt"):
        from medrl.data import prompts

        return getattr(prompts, name)
    if name == "attach_rationales":
        from medrl.data.sources.medthink import attach_rationales

        return attach_rationales
    if name == "validate_records":
        from medrl.data.validate import validate_records

        return validate_records
    raise AttributeError(f"module 'medrl.data' has no attribute {name!r}")
