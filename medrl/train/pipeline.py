"""Running recipes: one RL stage on TRL, and the multi-stage pipelines.

- :func:`train_rl`: records -> dataset -> :class:`MedGRPOTrainer` -> checkpoints, final model.
- :func:`run_recipe`: a whole recipe in a run folder. Single-stage RL recipes train directly in
  the run folder; multi-stage recipes run their ``stages`` in ``<run>/stages/NN_<name>/``.
  The pipeline runs three kinds itself: ``rl`` (:func:`train_rl`), ``sft``
  (:func:`train_sft_stage`, on the records a previous stage left for it, ``sft_records``) and
  ``refine`` (:func:`refine_stage`, a judge audits and rewrites question-answer pairs; first
  when ``data.refine`` is true, any recipe). Every other kind is a stage a method or a plugin
  registers (:data:`medrl.methods.stages.STAGES`; the methods' files describe theirs), run with
  a :class:`medrl.methods.stages.StageRun`.

  Each finished stage writes ``DONE`` (its output model folder); a resumed pipeline skips done
  stages (a registered one is called with ``done=True`` to read back what it saved) and resumes
  an interrupted RL stage from its last checkpoint.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from medrl.train.checkpoints import last_checkpoint, resolve_resume
from medrl.train.recipe_schema import BUILTIN_STAGES
from medrl.train.recipes import Recipe, build_grpo_config, build_reward_funcs, policy_load_options

__all__ = ["BUILTIN_STAGES", "DEFAULT_TRAIN_DATA", "RLResult", "load_training_records", "training_source",
           "resolve_resume", "train_rl", "train_sft_stage", "finished_run", "refine_stage", "pipeline_stages",
           "stages_use_judge",
           "run_recipe"]

log = logging.getLogger(__name__)


@dataclass
class RLResult:
    trainer: Any
    output_dir: Path
    final_dir: Path


def reads_gold_reasoning(name: str) -> bool:
    """Whether the reward ``name``'s judge reads the record's gold reasoning (MRPO's step
    verification compares each step with it; without one the judge sees only the record's
    evidence): the registered factory's ``reads_gold_reasoning``."""
    from medrl.common.registry import is_object_spec
    from medrl.rewards import REWARDS

    return not is_object_spec(name) and name in REWARDS and bool(getattr(REWARDS.get(name), "reads_gold_reasoning",
                                                                         False))


#: training data when neither ``--data`` nor a present source of the recipe's ``data.prefer`` names one
DEFAULT_TRAIN_DATA = "vqa_rad"


def training_source(recipe: Recipe, data: str | None = None, data_dir: str | None = None) -> str:
    """The source a run trains on: ``data`` when given (``--data``); else the first of the
    recipe's ``data.prefer`` present in the data folders
    (:func:`medrl.data.registry.first_present`; MediX-R1 prefers its own training data,
    ``medix_rl:train``), else :data:`DEFAULT_TRAIN_DATA`. Without ``data`` the choice and its
    reason are printed."""
    if data:
        return data
    from medrl.data.registry import first_present

    prefer = list(recipe.data.get("prefer") or [])
    chosen = first_present(prefer, data_dir) if prefer else None
    if chosen:
        why = f"the first present of the recipe's data.prefer {prefer}"
    else:
        chosen = DEFAULT_TRAIN_DATA
        why = ("medrl's default; none of the recipe's data.prefer " f"{prefer} is in the data folders"
               if prefer else "medrl's default")
    print(f"training data: {chosen} ({why}; --data chooses another)")
    log.info("training data: %s (%s)", chosen, why)
    return chosen


def load_training_records(recipe: Recipe, data: str | None = None, data_dir: str | None = None,
                          limit: int | None = None, report: dict | None = None):
    """Records for a recipe: ``data`` is a source (``vqa_rad``, ``vqa_rad:train``, ``jsonl:...``)
    or several datasets joined with ``+`` (``vqa_rad+slake+pathvqa``, loaded in that order);
    ``None`` (no ``--data``): the recipe's preferred source when present, else the default
    (:func:`training_source`). The source used is ``report["data_source"]``.

    Recipe ``data`` keys: ``split``, ``open_only``, ``limit``, ``rationales`` (a MedThink file, or
    a list of them - R-RAD, R-SLAKE, R-Path - joined as gold reasoning, :mod:`medrl.data.sources.medthink`) and ``require_gold_reasoning`` (MRPO
    MRPO App. C.1 trains only on records aligned with a MedThink rationale: the others are
    dropped; none left is an error). The matched/unmatched counts are logged and put in
    ``report["gold_reasoning"]``; when a step-verifying reward runs on records without gold
    reasoning, a warning says its judge sees only their evidence.
    """
    from medrl.data import DataError, load_records
    from medrl.data.registry import DATASETS, parse_source

    d = recipe.data
    report = report if report is not None else {}
    data = report["data_source"] = training_source(recipe, data, data_dir)
    limit = limit if limit is not None else d.get("limit")
    require = bool(d.get("require_gold_reasoning", False))
    # "vqa_rad+slake+pathvqa": the union of several datasets (ARMed trains on these three)
    parts = data.split("+") if all(parse_source(p)[0] in DATASETS for p in data.split("+")) else [data]
    rationales = d.get("rationales")
    files = [rationales] if isinstance(rationales, str) else list(rationales or [])  # one per benchmark
    records = []
    for part in parts:
        kind, _, split = parse_source(part)
        split = split or (d.get("split") if kind not in ("jsonl", "hf") else None)
        records += load_records(part, split=split, data_dir=data_dir, open_only=d.get("open_only", False),
                                limit=None if (require or files or len(parts) > 1) else limit, report=report)
    if files:
        from medrl.data.sources.medthink import attach_rationales

        report["medthink"] = []
        for f in files:  # a record already given a rationale keeps it; order is kept
            idx = [i for i, r in enumerate(records) if not r.gold_reasoning]
            done, rep = attach_rationales([records[i] for i in idx], f)
            for i, r in zip(idx, done, strict=True):
                records[i] = r
            report["medthink"].append({"file": str(f), **rep})
    if len(parts) > 1:
        log.info("training data: %s", ", ".join(f"{p} {sum(1 for r in records if r.source == parse_source(p)[0])}"
                                                 for p in parts))
    if not require and limit is not None:
        records = records[:limit]
    matched = sum(1 for r in records if r.gold_reasoning)
    counts = {"required": require, "matched": matched, "unmatched": len(records) - matched}
    report["gold_reasoning"] = counts
    log.info("gold reasoning: %d of %d records matched, %d unmatched%s", matched, len(records),
             counts["unmatched"], " (dropped: data.require_gold_reasoning)" if require else "")
    if require:
        if not matched:
            raise DataError(
                f"data.require_gold_reasoning is set (recipe {recipe.name}) but none of the {len(records)} "
                f"records of {data} has gold reasoning: give MedThink rationales (--set data.rationales=FILE) "
                "or --set data.require_gold_reasoning=false (step verification then runs on evidence only)")
        records = [r for r in records if r.gold_reasoning]
        records = records[:limit] if limit is not None else records
    step_rewards = [r["name"] for r in recipe.rewards if reads_gold_reasoning(r["name"])]
    missing = sum(1 for r in records if not r.gold_reasoning)
    if step_rewards and missing:
        log.warning("%s: %d of %d training records have no gold reasoning; step verification runs on "
                    "their evidence only (MRPO trains on MedThink-aligned records: set data.rationales and "
                    "data.require_gold_reasoning=true)", ", ".join(step_rewards), missing, len(records))
    return records


def card_info(recipe: Recipe, model, records: Sequence, run_dir, *, lora: bool = False, judge: Any = None,
              card: dict | None = None, command: str = "train") -> dict:
    """The model card's ``base_model``, ``datasets``, key ``metrics`` and reproducing ``command``
    for a stage that trained ``model`` on ``records`` in ``run_dir``, derived from the recipe and
    the records' sources; ``card`` (what ``medrl train`` knows: the exact command line, the data
    spec, the run's first model) overrides them."""
    from medrl.train.model_card import dataset_names, key_metrics, reproduce_command
    from medrl.train.recipes import RECIPE_DIR

    sources = "+".join(dict.fromkeys(str(r.source) for r in records if getattr(r, "source", None)))
    shipped = Path(recipe.source).resolve().parent == RECIPE_DIR.resolve()
    info = {"base_model": str(model), "datasets": dataset_names(sources), "metrics": key_metrics(run_dir),
            "command": reproduce_command(recipe.name if shipped else Path(recipe.source).name, model, sources or None,
                                         command=command, profile=recipe.profile, overrides=recipe.overrides,
                                         lora=lora, judge=getattr(judge, "spec", None) or getattr(judge, "name", None),
                                         trust_remote_code=bool((recipe.model or {}).get("trust_remote_code")),
                                         out=run_dir)}
    info.update({k: v for k, v in (card or {}).items() if v is not None})
    return info


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
    probe_records: Sequence | None = None,
    card: dict | None = None,
) -> RLResult:
    """Train one RL stage of ``recipe`` on ``records`` starting from the model folder ``model``.

    ``resume``: True (last checkpoint in ``output_dir``) or a checkpoint path. ``callbacks`` are
    extra ``TrainerCallback`` objects. ``train=False`` builds the trainer without training
    (benchmarks, tests). The final model and processor are saved to ``output_dir/final``.
    ``probe_records``: held-out records scored at each save when ``grpo.metric_for_best_model`` is
    set (or a method turns best-checkpoint selection on); the best checkpoint is kept and copied
    to ``output_dir/best`` (:mod:`medrl.train.best_checkpoint`). ``card``: fields of the model card
    written with ``final/`` (:func:`medrl.train.model_card.model_card`: ``command``, ``datasets``,
    ``base_model``) that override what :func:`card_info` derives.
    """
    import medrl.models  # noqa: F401  (registers the image-only processors TRL may reload)
    from medrl.data import to_hf_dataset
    from medrl.models import load_policy
    from medrl.train.callbacks import JsonlMetricsCallback
    from medrl.train.trainer import MedGRPOTrainer

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    dataset = to_hf_dataset(list(records), prompt_style=recipe.data.get("prompt_style", "think_answer"),
                            max_pixels=recipe.data.get("max_pixels"))
    funcs, _ = build_reward_funcs(recipe, judge=judge)
    extra = {"report_to": recipe.grpo.get("report_to", ["tensorboard"])}
    extra.update(grpo_overrides or {})
    args = build_grpo_config(recipe, out, **extra)
    load = policy_load_options(recipe)
    if load["quantization"] and not lora:  # 4-bit weights train only through adapters (QLoRA)
        lora = True
    policy, processor = load_policy(str(model), lora=lora, **load)
    from medrl.train.guards import uses_parsed_content

    if uses_parsed_content(getattr(processor, "tokenizer", processor)):
        log.warning("the tokenizer defines a response template/schema: TRL will parse completions with it; "
                    "training stops if the parsed content loses the <think> block (medrl.train.guards)")
    cls = trainer_cls or MedGRPOTrainer
    kwargs = (dict(algorithm=recipe.algorithm, methods=recipe.methods or None, judge=judge,
                   monitor=recipe.monitor or None, probe_records=probe_records)
              if issubclass(cls, MedGRPOTrainer) else {})
    trainer = cls(
        model=policy, processing_class=processor, reward_funcs=funcs, args=args, train_dataset=dataset,
        callbacks=[JsonlMetricsCallback(out / "metrics.jsonl"), *callbacks], **kwargs,
    )
    from medrl.train.best_checkpoint import attach_best_checkpoint

    if getattr(trainer, "best_checkpoint", None) is None:  # a method of the run may have turned it on already
        attach_best_checkpoint(trainer, probe_records=probe_records)  # a no-op unless grpo.metric_for_best_model
    final = out / "final"
    if train:
        trainer.train(resume_from_checkpoint=resolve_resume(resume, out))
        if trainer.control.should_training_stop and trainer.state.global_step < trainer.state.max_steps:
            log.info("training stopped early at step %d; not writing %s", trainer.state.global_step, final)
        else:
            from medrl.models.loading import save_policy

            if trainer.accelerator.is_main_process:
                save_policy(trainer.accelerator.unwrap_model(trainer.model), processor, final)
                from medrl.train.model_card import write_model_card

                used = ", ".join(m.label() for m in trainer.methods)
                method = (f"{recipe.name} (RL, TRL GRPOTrainer; advantage estimator {recipe.algorithm['advantage']}"
                          + (f"; methods {used})" if used else ")"))
                write_model_card([out, final], method=method, recipe=recipe.name, paper=recipe.paper,
                                 data=f"{len(records)} records", steps=trainer.state.global_step,
                                 extra={"rewards": ", ".join(f"{r['name']} x{r.get('weight', 1.0)}"
                                                             for r in recipe.rewards)},
                                 **card_info(recipe, model, records, out, lora=bool(lora), judge=judge, card=card))
            trainer.accelerator.wait_for_everyone()
    return RLResult(trainer, out, final)


# --------------------------------------------------------------------------------------------
# SFT and refine stages (the pipeline's own; methods register theirs in medrl.methods.stages)


def train_sft_stage(recipe: Recipe, model: str | os.PathLike, records: Sequence, output_dir: Path,
                    *, resume: bool | str | None = None, card: dict | None = None) -> Path:
    """SFT on ``<think>..</think><answer>..</answer>`` targets with the recipe's ``sft`` options."""
    from medrl.train import sft

    info = card_info(recipe, model, records, output_dir, card=card)
    info.pop("metrics", None)  # read after training, by train_sft

    return Path(sft.train_sft(
        model=str(model), records=list(records), output_dir=str(output_dir),
        prompt_style=recipe.data.get("prompt_style", "think_answer"),
        options={**({"max_pixels": recipe.data["max_pixels"]} if recipe.data.get("max_pixels") else {}), **recipe.sft},
        resume=resume, load=policy_load_options(recipe), card=info,
    ))


def refine_stage(records: Sequence, judge: Any, output_dir: Path, **options: Any) -> list:
    """VQA refinement (the ``refine`` stage, after ARMed's Appendix "VQA Refinement"), opt-in as
    the first pipeline stage (``data.refine: true``): the judge audits every question-answer
    pair and rewrites misaligned questions
    (:func:`medrl.data.curation.refine.refine_vqa`). Resumable (``audit.jsonl``). The offline
    reference judge only flags pairs, it never rewrites them."""
    from medrl.data import write_jsonl
    from medrl.data.curation.refine import refine_vqa
    from medrl.judges import build_judge

    output_dir.mkdir(parents=True, exist_ok=True)
    if judge is None:
        log.warning("refine: no judge given; the reference judge flags pairs but does not rewrite them")
        judge = build_judge("reference")
    out, counts = refine_vqa(list(records), judge, audit_log=output_dir / "audit.jsonl", **options)
    log.info("refine: %s", counts)
    write_jsonl(out, output_dir / "records.jsonl")
    (output_dir / "summary.json").write_text(json.dumps(counts, indent=2))
    return out


# --------------------------------------------------------------------------------------------


def pipeline_stages(recipe: Recipe) -> list[dict]:
    """The stages a run executes: the recipe's ``stages``, with ARMed's VQA refinement first when
    ``data.refine`` is true (opt-in; a single-stage recipe then becomes refine -> rl/sft)."""
    stages = [dict(st) for st in recipe.stages]
    if recipe.data.get("refine"):
        if not stages:
            stages = [{"name": recipe.name, "kind": "rl" if recipe.rewards else "sft"}]
        opts = recipe.data["refine"] if isinstance(recipe.data["refine"], dict) else {}
        stages.insert(0, {"name": "refine", "kind": "refine", "options": opts})
    return stages


def stages_use_judge(recipe: Recipe) -> bool:
    """Whether a stage of the run asks the judge: ``refine``, or a registered stage that says so
    (``Stage.uses_judge``)."""
    from medrl.methods.stages import STAGES

    return any(st["kind"] == "refine" or (st["kind"] in STAGES and STAGES.get(st["kind"]).uses_judge)
               for st in pipeline_stages(recipe))


def finished_run(recipe: Recipe, run_dir: str | os.PathLike) -> Path | None:
    """The final model folder of a run that already finished, else None.

    Multi-stage: every stage has its ``DONE`` marker. Single-stage: ``final/`` exists (written
    only when training reached its last step) and the last checkpoint is not behind the step
    count this invocation asks for (a larger ``max_steps`` continues the run instead).
    """
    run = Path(run_dir)
    stages = pipeline_stages(recipe)
    if stages:
        marks = [run / "stages" / f"{i:02d}_{st.get('name', st['kind'])}" / "DONE" for i, st in enumerate(stages, 1)]
        if all(m.is_file() for m in marks):
            return Path(marks[-1].read_text().strip())
        return None
    final = run / "final"
    if not (final / "config.json").is_file():
        return None
    want = (recipe.grpo if recipe.rewards else recipe.sft).get("max_steps") or 0
    last = last_checkpoint(run)  # the step reached; no integrity check (it may move folders aside)
    if last and want and want > 0:
        state = Path(last) / "trainer_state.json"
        step = json.loads(state.read_text()).get("global_step", 0) if state.is_file() else 0
        if step < want:
            return None
    return final


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
    probe_records: Sequence | None = None,
    card: dict | None = None,
) -> Path:
    """Run a whole recipe in ``run_dir``; returns the final model folder. ``probe_records``:
    held-out records for the best-checkpoint score (see :func:`train_rl`); ``card``: model card
    fields for every stage's card (``medrl train`` passes its command line)."""
    run = Path(run_dir)
    stages = pipeline_stages(recipe)
    if not stages:
        if recipe.rewards:
            return train_rl(recipe, model, records, run, judge=judge, resume=resume, callbacks=callbacks,
                            lora=lora, probe_records=probe_records, card=card).final_dir
        return train_sft_stage(recipe, model, records, run, resume=resume, card=card)

    current = Path(model)
    sft_records = None  # records a registered stage left for the next sft stage (None: the records)
    for i, stage in enumerate(stages, start=1):
        name, kind = stage.get("name", stage["kind"]), stage["kind"]
        folder = run / "stages" / f"{i:02d}_{name}"
        done = folder / "DONE"
        options = dict(stage.get("options") or {})
        if done.is_file():
            current = Path(done.read_text().strip())
            if kind == "refine":
                from medrl.data import read_jsonl

                records = read_jsonl(folder / "records.jsonl")
            elif kind not in BUILTIN_STAGES:
                records, sft_records, current = _registered_stage(kind, recipe, current, records, folder, options,
                                                                  judge, sft_records, done=True)
            log.info("stage %s already done -> %s", name, current)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        log.info("stage %d/%d: %s (%s)", i, len(stages), name, kind)
        if kind == "refine":
            records = refine_stage(records, judge, folder, **options)
        elif kind == "rl":
            current = train_rl(recipe, current, records, folder, judge=judge, resume=bool(resume) and "last",
                               callbacks=callbacks, lora=lora, probe_records=probe_records, card=card).final_dir
        elif kind == "sft":
            train_on = sft_records if sft_records is not None else records
            if not train_on:
                log.warning("stage %s: no training records (the stage before it left none); the model "
                            "passes on unchanged", name)
            else:
                current = train_sft_stage(recipe, current, train_on, folder, resume=bool(resume) and "last",
                                          card=card)
        else:
            records, sft_records, current = _registered_stage(kind, recipe, current, records, folder, options, judge,
                                                              sft_records)
        done.write_text(str(current))
    return current


def _registered_stage(kind: str, recipe: Recipe, model: Path, records: Sequence, folder: Path, options: dict,
                      judge: Any, sft_records: list | None, *, done: bool = False) -> tuple[list, list | None, Path]:
    """Run the stage a method or plugin registered as ``kind`` (:data:`medrl.methods.stages.STAGES`);
    returns what it hands on: ``(records, sft_records, model folder)``."""
    from medrl.methods.stages import StageRun, get_stage

    run = StageRun(recipe=recipe, model=Path(model), records=list(records), folder=folder, options=options,
                   judge=judge, sft_records=sft_records, done=done)
    get_stage(kind).run(run)
    return list(run.records), run.sft_records, Path(run.model)
