"""The demo's settings: what decides its numbers (stored in ``state.json``; a resumed run must
match) and the names of its models."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

STATE_FILE = "state.json"
MODELS = ("warmup", "grpo", "mrpo")
LABELS = {"warmup": "Warm-up (SFT)", "grpo": "GRPO", "mrpo": "MRPO"}
EVAL_DATASET = "vqa_rad:test"


@dataclass
class DemoConfig:
    """Everything that decides the demo's numbers. Sizes: ``sft_steps`` optimizer steps of
    ``sft_batch`` records; RL runs ``rl_steps`` steps of ``rl_prompts`` prompts x
    ``num_generations`` rollouts of at most ``max_completion_length`` tokens; evaluation uses the
    first ``eval_limit`` open-ended test records, greedy, at most ``eval_max_new_tokens`` tokens.
    ``judge_images``: the judge also sees each record's image (needs a vision-capable judge)."""

    mode: str = "default"
    model: str = "default"
    judge: str = "reference"
    judge_base_url: str | None = None
    judge_images: bool = False
    judge_image_max_side: int = 768
    seed: int = 0
    train_limit: int | None = None
    sft_steps: int = 24
    sft_batch: int = 4
    sft_lr: float = 1e-4
    sft_save_steps: int = 8
    rl_steps: int = 10
    rl_prompts: int = 1
    num_generations: int = 4
    max_completion_length: int = 128
    rl_lr: float = 1e-5
    beta: float = 0.04
    rl_save_steps: int = 5
    eval_limit: int | None = 64
    eval_max_new_tokens: int = 128
    eval_batch_size: int = 8

    def to_dict(self) -> dict:
        """The settings as written into the demo folder: the judge URL without its secrets
        (:func:`medrl.common.urls.redact_url`)."""
        from medrl.common.urls import redact_url

        d = dataclasses.asdict(self)
        d["judge_base_url"] = redact_url(d["judge_base_url"])
        return d


#: ``--quick``: the same stages, smaller (fewer steps, records and tokens).
QUICK = dict(mode="quick", sft_steps=8, sft_save_steps=4, rl_steps=2, rl_save_steps=2,
             max_completion_length=80, eval_limit=10, eval_max_new_tokens=80)


def make_config(quick: bool = False, **overrides: Any) -> DemoConfig:
    """The default (or ``--quick``) settings with ``overrides`` (None values ignored)."""
    base = DemoConfig(**(QUICK if quick else {}))
    known = {f.name for f in dataclasses.fields(DemoConfig)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise TypeError(f"unknown demo settings {bad}")
    return dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})


def default_settings() -> dict:
    """Every setting's default: a folder made before a setting existed resumes when the new
    setting keeps its default."""
    return DemoConfig().to_dict()
