"""The demo's settings: what decides its numbers (stored in ``state.json``; a resumed run must
match) and the names of its models."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
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
    ``judge_images``: the judge also sees each record's image (needs a vision-capable judge). Each
    field's ``help`` says what it sets (:func:`settings_help`)."""

    mode: str = field(default="default", metadata={"help": (
        "'default' or 'quick' (--quick: the same stages with fewer steps, records and tokens)")})
    model: str = field(default="default", metadata={"help": (
        "base policy: 'default' (SmolLM2-135M LLaVA-style, built offline), 'tiny', or a model folder")})
    judge: str = field(default="reference", metadata={"help": (
        "'reference' (the offline heuristic judge) or 'openai:<model>'")})
    judge_base_url: str | None = field(default=None, metadata={"help": (
        "OpenAI-compatible endpoint of the judge (vLLM, medrl serve-judge, ...); None: the client's default")})
    judge_images: bool = field(default=False, metadata={"help": (
        "send each record's image to the judge (needs an openai: judge on a vision-language endpoint)")})
    judge_image_max_side: int = field(default=768, metadata={"help": (
        'longest side in pixels of an image sent to the judge')})
    seed: int = field(default=0, metadata={"help": 'seed of SFT, GRPO and MRPO'})
    train_limit: int | None = field(default=None, metadata={"help": 'use only the first N training records; None: all'})
    sft_steps: int = field(default=24, metadata={"help": 'warm-up SFT optimizer steps'})
    sft_batch: int = field(default=4, metadata={"help": 'records per warm-up SFT step'})
    sft_lr: float = field(default=1e-4, metadata={"help": 'warm-up SFT learning rate'})
    sft_save_steps: int = field(default=8, metadata={"help": (
        'warm-up SFT checkpoint every N steps (a stopped demo resumes from it)')})
    rl_steps: int = field(default=10, metadata={"help": 'RL optimizer steps of GRPO and of MRPO'})
    rl_prompts: int = field(default=1, metadata={"help": 'prompts per RL step'})
    num_generations: int = field(default=4, metadata={"help": 'rollouts per prompt (the group size)'})
    max_completion_length: int = field(default=128, metadata={"help": 'max tokens per rollout'})
    rl_lr: float = field(default=1e-5, metadata={"help": 'RL learning rate'})
    beta: float = field(default=0.04, metadata={"help": 'KL coefficient of GRPO and MRPO'})
    rl_save_steps: int = field(default=5, metadata={"help": (
        'RL checkpoint every N steps (a stopped demo resumes from it)')})
    eval_limit: int | None = field(default=64, metadata={"help": (
        'evaluate on the first N open-ended test records; None or 0: all')})
    eval_max_new_tokens: int = field(default=128, metadata={"help": 'max tokens per evaluation answer (greedy)'})
    eval_batch_size: int = field(default=8, metadata={"help": 'records generated together in evaluation'})

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


def settings_help() -> dict[str, str]:
    """``{setting: help}`` of every :class:`DemoConfig` field."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(DemoConfig)}


def default_settings() -> dict:
    """Every setting's default: a folder made before a setting existed resumes when the new
    setting keeps its default."""
    return DemoConfig().to_dict()
