"""Running recipes: one RL stage on TRL, and the multi-stage pipelines.

- :func:`train_rl`: records -> dataset -> :class:`MedGRPOTrainer` -> checkpoints, final model.
- :func:`run_recipe`: a whole recipe in a run folder. Single-stage RL recipes train directly in
  the run folder; multi-stage recipes run their ``stages`` in ``<run>/stages/NN_<name>/``:

  * ARMed (001_46ab1c0cc2c66f17.txt, "Medical Thinking Knowledge Injection"): RL (ARMed-I) ->
    knowledge injection (exemplar questions picked by
    :func:`medrl.data.curation.exemplars.knowledge_exemplars`; ARMed-I writes their chain of
    thought, which becomes the record's ``gold_reasoning``, the reference answer stays the target)
    -> SFT (ARMed-A) -> the same RL again (ARMed-R).
  * StepGRPO (004_e0b907c1e61319f8.txt Sec. 3.2): key-step extraction by the judge (StepRAR
    needs them) -> warm-up SFT on chain-of-thought targets (Eq. 1) -> RL.

  Each finished stage writes ``DONE`` (its output model folder); a resumed pipeline skips done
  stages and resumes an interrupted RL stage from its last checkpoint.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from medrl.train.recipes import Recipe, build_grpo_config, build_reward_funcs

log = logging.getLogger(__name__)


@dataclass
class RLResult:
    trainer: Any
    output_dir: Path
    final_dir: Path


def load_training_records(recipe: Recipe, data: str, data_dir: str | None = None, limit: int | None = None):
    """Records for a recipe: ``data`` is a source (``vqa_rad``, ``vqa_rad:train``, ``jsonl:...``)."""
    from medrl.data import load_records
    from medrl.data.loaders import parse_source

    d = recipe.data
    kind, _, split = parse_source(data)
    split = split or (d.get("split") if kind not in ("jsonl", "hf") else None)
    limit = limit if limit is not None else d.get("limit")
    return load_records(data, split=split, data_dir=data_dir, open_only=d.get("open_only", False), limit=limit)


def _last_checkpoint(folder: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder)) if folder.is_dir() else None


def resolve_resume(resume: bool | str | None, output_dir: Path) -> str | None:
    """``True`` -> the last ``checkpoint-N`` in ``output_dir`` (None if there is none yet);
    a path -> that checkpoint; falsy -> None."""
    if not resume:
        return None
    if resume is True or resume == "last":
        return _last_checkpoint(output_dir)
    p = Path(resume)
    if not p.is_dir():
        raise FileNotFoundError(f"--resume {resume}: no such checkpoint folder")
    return str(p)


def train_rl(
    recipe: Recipe,
    model: str | os.PathLike,
    records: Sequence,
    output_dir: str | os.PathLike,
    *,
    judge: Any = None,
    resume: bool | str | None = None,
    callbacks: Sequence[Any] = (),
    grpo_overrides: dict | None = None,
    lora: Any = None,
    trainer_cls: Any = None,
    train: bool = True,
) -> RLResult:
    """Train one RL stage of ``recipe`` on ``records`` starting from the model folder ``model``.

    ``resume``: True (last checkpoint in ``output_dir``) or a checkpoint path. ``callbacks`` are
    extra ``TrainerCallback`` objects. ``train=False`` builds the trainer without training
    (benchmarks, tests). The final model and processor are saved to ``output_dir/final``.
    """
    import medrl.models  # noqa: F401  (registers the image-only processors TRL may reload)
    from medrl.data import to_hf_dataset
    from medrl.models import load_policy
    from medrl.train.callbacks import JsonlMetricsCallback
    from medrl.train.trainer import MedGRPOTrainer

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    dataset = to_hf_dataset(list(records), prompt_style=recipe.data.get("prompt_style", "think_answer"))
    funcs, _ = build_reward_funcs(recipe, judge=judge)
    extra = {"report_to": recipe.grpo.get("report_to", ["tensorboard"])}
    extra.update(grpo_overrides or {})
    args = build_grpo_config(recipe, out, **extra)
    policy, processor = load_policy(str(model), lora=lora)
    cls = trainer_cls or MedGRPOTrainer
    kwargs = dict(algorithm=recipe.algorithm, judge=judge) if issubclass(cls, MedGRPOTrainer) else {}
    trainer = cls(
        model=policy, processing_class=processor, reward_funcs=funcs, args=args, train_dataset=dataset,
        callbacks=[JsonlMetricsCallback(out / "metrics.jsonl"), *callbacks], **kwargs,
    )
    final = out / "final"
    if train:
        trainer.train(resume_from_checkpoint=resolve_resume(resume, out))
        if trainer.control.should_training_stop and trainer.state.global_step < trainer.state.max_steps:
            log.info("training stopped early at step %d; not writing %s", trainer.state.global_step, final)
        else:
            from medrl.models.loading import save_policy

            if trainer.accelerator.is_main_process:
                save_policy(trainer.accelerator.unwrap_model(trainer.model), processor, final)
            trainer.accelerator.wait_for_everyone()
    return RLResult(trainer, out, final)


# --------------------------------------------------------------------------------------------
# SFT and knowledge injection stages


def train_sft_stage(recipe: Recipe, model: str | os.PathLike, records: Sequence, output_dir: Path,
                    *, resume: bool | str | None = None) -> Path:
    """SFT on ``<think>..</think><answer>..</answer>`` targets with the recipe's ``sft`` options."""
    from medrl.train import sft

    return Path(sft.train_sft(
        model=str(model), records=list(records), output_dir=str(output_dir),
        prompt_style=recipe.data.get("prompt_style", "think_answer"), options=dict(recipe.sft),
        resume=resume,
    ))


def knowledge_injection(model: str | os.PathLike, records: Sequence, output_dir: Path, *,
                        min_answer_count: int = 5, clusters_per_group: int = 3, max_new_tokens: int = 1024,
                        temperature: float = 0.7, batch_size: int = 8, max_records: int | None = None,
                        prompt_style: str = "think_answer", seed: int = 0) -> list:
    """ARMed knowledge-injection set: exemplars + chain of thought written by ``model`` (ARMed-I).

    The model's ``<think>`` text becomes ``gold_reasoning`` (the SFT target's reasoning); the
    reference answer stays the answer. A generation without a ``<think>`` block leaves the record
    without gold reasoning, so the SFT target falls back to evidence-based reasoning
    (:func:`medrl.data.prompts.format_target`). Written to ``output_dir/knowledge.jsonl``.
    """
    from medrl.data import read_jsonl, write_jsonl
    from medrl.data.curation.exemplars import knowledge_exemplars
    from medrl.models import generate, load_policy
    from medrl.parsing import parse_response

    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "knowledge.jsonl"
    if path.is_file():
        return read_jsonl(path)
    chosen, summary = knowledge_exemplars(
        list(records), min_count=min_answer_count, clusters_per_group=clusters_per_group, seed=seed,
        results_path=output_dir / "exemplars.jsonl",
    )
    if max_records is not None:
        chosen = chosen[:max_records]
    policy, processor = load_policy(str(model))
    texts = generate(policy, processor, chosen, max_new_tokens=max_new_tokens, temperature=temperature,
                     batch_size=batch_size, prompt_style=prompt_style, seed=seed)
    out = []
    for rec, text in zip(chosen, texts, strict=True):
        reasoning = (parse_response(text).reasoning or "").strip()
        out.append(replace(rec, gold_reasoning=reasoning or rec.gold_reasoning,
                           extras={**rec.extras, "knowledge_cot": text}))
    write_jsonl(out, path)
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return out


def key_steps_stage(records: Sequence, judge: Any, output_dir: Path, **options: Any) -> list:
    """StepGRPO key steps (004_e0b907c1e61319f8.txt Sec. 3.2.2): pre-extract each record's key
    steps with the judge (from the gold reasoning; evidence-based without one, see
    :func:`medrl.data.curation.key_steps.extract_key_steps`). Resumable (``key_steps.jsonl``)."""
    from medrl.data import write_jsonl
    from medrl.data.curation.key_steps import extract_key_steps
    from medrl.judges import build_judge

    output_dir.mkdir(parents=True, exist_ok=True)
    out, counts = extract_key_steps(list(records), judge if judge is not None else build_judge("reference"),
                                    results_path=output_dir / "key_steps.jsonl", **options)
    write_jsonl(out, output_dir / "records.jsonl")
    (output_dir / "summary.json").write_text(json.dumps(counts, indent=2))
    return out


# --------------------------------------------------------------------------------------------


def run_recipe(
    recipe: Recipe,
    model: str | os.PathLike,
    records: Sequence,
    run_dir: str | os.PathLike,
    *,
    judge: Any = None,
    resume: bool | str | None = None,
    callbacks: Sequence[Any] = (),
    lora: Any = None,
) -> Path:
    """Run a whole recipe in ``run_dir``; returns the final model folder."""
    run = Path(run_dir)
    if not recipe.stages:
        if recipe.rewards:
            return train_rl(recipe, model, records, run, judge=judge, resume=resume, callbacks=callbacks,
                            lora=lora).final_dir
        return train_sft_stage(recipe, model, records, run, resume=resume)

    current = Path(model)
    knowledge_records = None
    for i, stage in enumerate(recipe.stages, start=1):
        name, kind = stage.get("name", stage["kind"]), stage["kind"]
        folder = run / "stages" / f"{i:02d}_{name}"
        done = folder / "DONE"
        if done.is_file():
            current = Path(done.read_text().strip())
            if kind == "knowledge_injection":
                knowledge_records = knowledge_injection(current, records, folder)  # reads the saved set
            elif kind == "key_steps":
                from medrl.data import read_jsonl

                records = read_jsonl(folder / "records.jsonl")
            log.info("stage %s already done -> %s", name, current)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        log.info("stage %d/%d: %s (%s)", i, len(recipe.stages), name, kind)
        if kind == "key_steps":
            records = key_steps_stage(records, judge, folder, **dict(stage.get("options") or {}))
        elif kind == "rl":
            current = train_rl(recipe, current, records, folder, judge=judge, resume=bool(resume) and "last",
                               callbacks=callbacks, lora=lora).final_dir
        elif kind == "knowledge_injection":
            opts = dict(stage.get("options") or {})
            opts.setdefault("prompt_style", recipe.data.get("prompt_style", "think_answer"))
            knowledge_records = knowledge_injection(current, records, folder, **opts)
        elif kind == "sft":
            sft_records = knowledge_records if knowledge_records is not None else records
            current = train_sft_stage(recipe, current, sft_records, folder, resume=bool(resume) and "last")
        done.write_text(str(current))
    return current
