"""Supervised fine-tuning (warm-up / cold start / SFT baseline) with TRL's ``SFTTrainer``.

Each record becomes a conversational prompt-completion example: the prompt is the recipe's
chat prompt (system prompt, image placeholder(s), question; :func:`medrl.data.prompts.build_prompt`)
and the completion is the target in the recipe's answer format
(:func:`medrl.data.prompts.format_target`: ``<think>reasoning</think><answer>answer</answer>``,
with the gold reasoning when the record has one). The loss covers the completion only.

Defaults follow the MRPO SFT baseline (MRPO App. C.2: LoRA r=8, alpha=32,
dropout 0.05, learning rate 2e-5, 3 epochs), which StepGRPO and ARMed also use as warm-up.

Run folder (``output_dir``)::

    sft_config.yaml     the resolved settings (model, data size, LoRA, every SFTConfig field given)
    runs/               TensorBoard logs (report_to="tensorboard")
    metrics.jsonl       the same log records as JSON lines
    checkpoint-N/       resumable checkpoints (``resume=True`` continues from the last one)
    final/              the trained model (LoRA merged) + processor: load with ``load_policy``
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger(__name__)

# MRPO SFT baseline (App. C.2); everything else is TRL's default.
DEFAULTS: dict[str, Any] = {
    "lora": {"r": 8, "alpha": 32, "dropout": 0.05},
    "learning_rate": 2e-5,
    "num_train_epochs": 3,
    "per_device_train_batch_size": 8,
    "logging_steps": 1,
    "save_steps": 50,
    "save_total_limit": 2,
}
# Options that are ours (not SFTConfig fields).
MEDRL_OPTIONS = ("lora", "dtype", "merge_lora", "max_pixels")


def sft_dataset(records: Sequence, prompt_style: str = "think_answer", max_pixels: int | None = None):
    """Records -> a ``datasets.Dataset`` with ``prompt`` (chat messages), ``completion`` (the
    assistant turn holding ``format_target(record, prompt_style)``) and ``image``/``images``."""
    from medrl.data import to_hf_dataset
    from medrl.data.prompts import format_target

    records = list(records)
    if not records:
        raise ValueError("SFT: no records to train on")
    for r in records:
        if not r.images:
            raise ValueError(f"SFT: record {r.id!r} has no image (vision-language SFT needs one per record)")
    ds = to_hf_dataset(records, prompt_style=prompt_style, max_pixels=max_pixels)
    image_col = "images" if "images" in ds.column_names else "image"
    completions = [
        [{"role": "assistant", "content": [{"type": "text", "text": format_target(r, prompt_style)}]}]
        for r in records
    ]
    ds = ds.select_columns(["record_id", "prompt", image_col])
    return ds.add_column("completion", completions)


def resolve_options(options: dict | None) -> tuple[dict, dict]:
    """Split ``{**DEFAULTS, **options}`` into (medrl options, SFTConfig keyword arguments).

    Raises ValueError naming any key that is neither ours nor an ``SFTConfig`` field."""
    from trl import SFTConfig

    merged = {**DEFAULTS, **(options or {})}
    fields = {f.name for f in dataclasses.fields(SFTConfig)}
    unknown = sorted(k for k in merged if k not in fields and k not in MEDRL_OPTIONS and k != "warmup_ratio")
    if unknown:
        raise ValueError(f"SFT options: unknown keys {unknown} (use trl.SFTConfig field names or {list(MEDRL_OPTIONS)})")
    if "warmup_ratio" in merged and "warmup_ratio" not in fields:
        # transformers 5 dropped warmup_ratio: a float warmup_steps in [0, 1) is that ratio of the steps
        ratio = float(merged.pop("warmup_ratio"))
        if not 0.0 <= ratio < 1.0 or merged.get("warmup_steps"):
            raise ValueError(f"SFT options: warmup_ratio {ratio} must be in [0, 1) and not given with warmup_steps")
        merged["warmup_steps"] = ratio
    ours = {k: merged.pop(k) for k in MEDRL_OPTIONS if k in merged}
    for k in ("output_dir",):
        merged.pop(k, None)
    return ours, merged


def train_sft(
    model: str | os.PathLike,
    records: Sequence,
    output_dir: str | os.PathLike,
    *,
    prompt_style: str = "think_answer",
    options: dict | None = None,
    resume: bool | str | None = None,
    callbacks: Sequence[Any] = (),
    load: dict | None = None,
    card: dict | None = None,
) -> Path:
    """Fine-tune ``model`` on ``records``; returns the final model folder (``output_dir/final``).

    Args:
        model: anything :func:`medrl.models.load_policy` accepts (folder, HF id, ``tiny``,
            ``default``, a previous run folder).
        records: :class:`medrl.data.VQARecord` list (each with at least one image).
        output_dir: the run folder (see the module docstring).
        prompt_style: ``think_answer`` | ``modality_think_answer`` | ``plain``.
        options: ``lora`` (LoRA settings; None/False = full fine-tuning), ``dtype``,
            ``merge_lora`` (default True), ``warmup_ratio`` (the share of steps warmed up; the
            float ``warmup_steps`` of transformers 5, which dropped the field) and any
            ``trl.SFTConfig`` field (``learning_rate``, ``num_train_epochs``, ``max_steps``,
            ``per_device_train_batch_size``, ``max_length``, ``save_steps``, ``report_to``, ...).
            Unknown keys raise ValueError.
        resume: True/"last" continues from the last ``checkpoint-N`` in ``output_dir``; a path
            continues from that checkpoint.
        callbacks: extra ``transformers.TrainerCallback`` objects.
        load: how the policy loads (:func:`medrl.train.recipes.policy_load_options`):
            ``trust_remote_code`` (also given to TRL's ``SFTConfig``) and ``quantization`` (4-bit
            QLoRA; needs LoRA).
        card: model card fields (``command``, ``datasets``, ``base_model``) overriding what is
            derived here (the ``medrl sft`` command that reproduces the run).
    """
    import torch
    import yaml
    from trl import SFTConfig, SFTTrainer

    import medrl
    from medrl.models import load_policy
    from medrl.models.loading import LoraSpec, save_policy
    from medrl.train.callbacks import JsonlMetricsCallback
    from medrl.train.checkpoints import resolve_resume
    from medrl.train.speed import gradient_checkpointing_default

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    ours, sft_kwargs = resolve_options(options)
    lora = LoraSpec.coerce(ours.get("lora"))
    cuda = torch.cuda.is_available()
    sft_kwargs.setdefault("report_to", ["tensorboard"])
    from medrl.train.recipes import run_name

    sft_kwargs.setdefault("run_name", run_name(out))  # W&B and other trackers name the run after its folder
    sft_kwargs.setdefault("use_cpu", not cuda)
    sft_kwargs.setdefault("bf16", bool(cuda and torch.cuda.is_bf16_supported()))
    gradient_checkpointing_default(sft_kwargs)  # CPU: memory is not the limit (medrl.train.speed)
    sft_kwargs["completion_only_loss"] = True
    sft_kwargs["remove_unused_columns"] = False

    load = dict(load or {})
    if load.get("trust_remote_code"):
        sft_kwargs["trust_remote_code"] = True
    if load.get("quantization") and lora is None:
        raise ValueError("4-bit weights (QLoRA) cannot be trained in full: SFT on them needs LoRA (sft.lora, or "
                         "--lora)")
    dataset = sft_dataset(records, prompt_style, max_pixels=ours.get("max_pixels"))
    resolved = {
        "medrl_version": medrl.__version__,
        "model": str(model),
        "prompt_style": prompt_style,
        "num_records": len(dataset),
        "lora": dataclasses.asdict(lora) if isinstance(lora, LoraSpec) else (None if lora is None else repr(lora)),
        "dtype": None if ours.get("dtype") is None else str(ours["dtype"]),
        "merge_lora": bool(ours.get("merge_lora", True)),
        "resume": None if resume is None else str(resume),
        **({"quantization": load["quantization"]} if load.get("quantization") else {}),
        "sft_config": sft_kwargs,
    }
    (out / "sft_config.yaml").write_text(yaml.safe_dump(_plain(resolved), sort_keys=False))

    policy, processor = load_policy(model, lora=lora, dtype=None if load.get("quantization") else ours.get("dtype"),
                                    **load)
    peft_cfg = getattr(policy, "peft_config", {}).get("default")
    if peft_cfg is not None:  # what LoRA resolved to (modules_to_save may come from the model folder)
        resolved["lora_resolved"] = {"target_modules": peft_cfg.target_modules,
                                     "modules_to_save": sorted(peft_cfg.modules_to_save or [])}
        (out / "sft_config.yaml").write_text(yaml.safe_dump(_plain(resolved), sort_keys=False))
    args = SFTConfig(output_dir=str(out), **sft_kwargs)
    trainer = _trainer_class(SFTTrainer)(
        model=policy,
        args=args,
        train_dataset=dataset,
        processing_class=processor,
        callbacks=[JsonlMetricsCallback(out / "metrics.jsonl"), *callbacks],
    )
    result = trainer.train(resume_from_checkpoint=resolve_resume(resume, out))
    final = save_policy(trainer.model, processor, out / "final", merge_lora=resolved["merge_lora"])
    from medrl.train.model_card import dataset_names, key_metrics, reproduce_command, write_model_card

    sources = "+".join(dict.fromkeys(str(r.source) for r in records if getattr(r, "source", None)))
    info = {"base_model": str(model), "datasets": dataset_names(sources), "metrics": key_metrics(out),
            "command": reproduce_command("sft", model, sources or None, command="sft",
                                         trust_remote_code=bool(load.get("trust_remote_code")), out=out)}
    info.update({k: v for k, v in (card or {}).items() if v is not None})
    write_model_card([out, final], recipe="sft",
                     method="supervised fine-tuning (LoRA)" if lora is not None else "supervised fine-tuning",
                     data=f"{len(dataset)} records", steps=trainer.state.global_step, **info)
    (out / "train_result.json").write_text(json.dumps(_plain(dict(result.metrics)), indent=2) + "\n")
    log.info("SFT done: %d steps, model in %s", trainer.state.global_step, final)
    return final


def _trainer_class(base):
    """``SFTTrainer`` whose resume restores full-model weights saved under legacy key names
    (transformers 5.x; see :func:`medrl.train.callbacks.reload_renamed_weights`) and whose
    durations come from the monotonic clock (:class:`medrl.train.clock.MonotonicClock`)."""
    from medrl.train.callbacks import reload_renamed_weights
    from medrl.train.clock import MonotonicClock

    class MedSFTTrainer(MonotonicClock, base):
        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            super()._load_from_checkpoint(resume_from_checkpoint, model)
            reload_renamed_weights(self, resume_from_checkpoint, model if model is not None else self.model)

    return MedSFTTrainer


def _plain(obj):
    """YAML/JSON-safe copy (enums, paths, dtypes -> str)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)
