"""The effects harness: warm-up SFT, the paired RL runs, their evaluation, per-seed results.

Jobs (each one JSON file under ``<out>/runs/``, so an interrupted run resumes where it stopped):

- ``s<N>/warmup`` (``warmup`` with ``warmup_per_seed=false``): a tiny Qwen2.5-VL built for the
  phantom task (its tokenizer trained on phantom texts) fine-tuned on seed N's warm-up traces, of
  which a stated share open with a wrong first step that carries into a wrong answer
  (:func:`medrl.data.sources.phantom.warmup_traces`); then evaluated like every policy. Each seed
  draws its own records (``data_per_seed``), warm-up model and sampling seed, so the spread over
  seeds holds every source of chance, the warm-up's own sampling error included.
- ``s<N>/<recipe>@<judge>``: one RL run from seed N's warm-up model with the recipe's rewards and
  advantage and the judge given (``oracle``, ``oracle:0.2``, ``reference``); every arm of a seed
  uses the same seed, data order, budget and warm-up model (:func:`rl_overrides`). Then
  evaluation on the held-out phantoms (:func:`medrl.effects.metrics.evaluate_model`): greedy, and
  sampled at each of the config's temperatures.
- ``s<N>/control-<name>``: the controls (:mod:`medrl.effects.controls`).
- ``s<N>/hack-<leak>``: GRPO (``capo_grpo``'s format reward, its answer reward replaced by a
  leak's verdict paid directly, :func:`medrl.effects.leaky.leak_reward`) with the hacking
  monitor watching and the oracle's verdict on every rollout (``monitor/hack_rate`` per step).
- ``s<N>/<signature>/warmup``, ``s<N>/<signature>/<arm>``, ``s<N>/<signature>/control-coin_flip``:
  a signature task (:mod:`medrl.effects.signatures`): its own records, a warm-up model with the
  paper's failure planted, each arm the paper compares and the coin-flip control, at the paper's
  temperature.
- ``kappa``: each judge's agreement with the oracle, measured the way ``medrl judge-bench`` does
  (:func:`medrl.eval.judge_bench.step_metrics`: Cohen's kappa of step validity, gold alignment,
  answer contribution; and of answer correctness), on warm-up-style traces of test records.

``<out>/seeds/seed<N>.json`` gathers a seed's runs when they are all done; a finished job's JSON
is read back, never run again, so a folder run with 2 seeds grows to 8 when the same command is
rerun with more (the seed counts are not part of the folder's digest). Jobs run in worker processes (``workers`` at once, one torch thread each) or,
with ``workers=0``, in this process.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from medrl.effects.config import SIGNATURES, EffectsConfig
from medrl.effects.controls import CONTROL_RECIPE

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"


class EffectsFolderMismatch(ValueError):
    """The output folder holds an effects run made with other settings."""


BASELINE, METHOD = "grpo", "mrpo"
#: the task name of the main comparison (signature tasks are named by their signature)
MAIN = "main"


# ----------------------------------------------------------------------------- job list


@dataclass(frozen=True)
class Job:
    key: str  # "s0/warmup", "s0/grpo@oracle", "s0/control-coin_flip", "s0/hack-yes_judge", "s0/armed/armed", "kappa"
    kind: str  # warmup | rl | control | hack | kappa
    seed: int = 0
    recipe: str | None = None
    judge: str | None = None
    style: str = "think_answer"
    needs: tuple[str, ...] = ()
    task: str = MAIN  # "main" or a signature's name
    arm: str | None = None  # a signature arm's key

    @property
    def file(self) -> str:
        return self.key.replace("/", "__").replace(":", "-") + ".json"

    @property
    def signature(self):
        """The job's :class:`~medrl.effects.signatures.Signature` (None on the main task)."""
        return None if self.task == MAIN else SIGNATURES[self.task]


def warmup_key(config: EffectsConfig, seed: int, task: str = MAIN) -> str:
    if task != MAIN:
        return f"s{seed}/{task}/warmup"
    return f"s{seed}/warmup" if config.warmup_per_seed else "warmup"


def rl_key(seed: int, recipe: str, judge: str) -> str:
    return f"s{seed}/{recipe}@{judge}"


def control_key(seed: int, control: str, task: str = MAIN) -> str:
    return f"s{seed}/control-{control}" if task == MAIN else f"s{seed}/{task}/control-{control}"


def arm_key(seed: int, task: str, arm: str) -> str:
    """A signature arm's run key: ``s<N>/<signature>/<arm>``."""
    return f"s{seed}/{task}/{arm}"


def main_seeds(config: EffectsConfig) -> int:
    """How many seeds need the main task's warm-up model."""
    c = config
    return max(c.seeds if c.main else 0, c.sweep_seeds if c.noise_sweep else 0, c.hack_seeds if c.hacks else 0)


def signature_controls(config: EffectsConfig) -> tuple[str, ...]:
    """The controls a signature task trains beside its arms (the coin flip, when the config has it)."""
    return ("coin_flip",) if "coin_flip" in config.controls else ()


def plan(config: EffectsConfig) -> list[Job]:
    """Every job of ``config`` in dependency order: warm-ups, the judges' kappa, then per seed the
    main comparison and its controls, the leaky-reward runs, the signatures and the noise sweep
    (a run cut short keeps whole seeds of the main comparison first)."""
    c = config
    jobs: dict[str, Job] = {}
    for s in range(main_seeds(c)):
        k = warmup_key(c, s)
        jobs.setdefault(k, Job(k, "warmup", s if c.warmup_per_seed else 0))
    for s in range(c.signature_seeds if c.signatures else 0):
        for sig in c.signatures:  # a signature's warm-ups train beside the main ones, before the runs needing them
            k = warmup_key(c, s, sig)
            jobs[k] = Job(k, "warmup", s, style=SIGNATURES[sig].style, task=sig)

    def rl(s, recipe, judge):
        k = rl_key(s, recipe, judge)
        jobs.setdefault(k, Job(k, "rl", s, recipe, judge, needs=(warmup_key(c, s),)))

    if c.main or c.noise_sweep:
        judges = ([c.judge] if c.main else []) + list(c.noise_sweep)  # needs no model: runs beside the warm-ups
        jobs["kappa"] = Job("kappa", "kappa", 0, judge=",".join(dict.fromkeys(judges)))
    for s in range(c.seeds if c.main else 0):
        rl(s, BASELINE, c.judge)
        rl(s, METHOD, c.judge)
        for ctl in c.controls:
            k = control_key(s, ctl)
            jobs[k] = Job(k, "control", s, CONTROL_RECIPE, ctl, needs=(warmup_key(c, s),))
    for s in range(c.hack_seeds if c.hacks else 0):
        for h in c.hacks:
            k = f"s{s}/hack-{h}"
            jobs[k] = Job(k, "hack", s, "capo_grpo", h, needs=(warmup_key(c, s),))
    for s in range(max(c.sweep_seeds if c.noise_sweep else 0, c.signature_seeds if c.signatures else 0)):
        if s < c.signature_seeds:
            for name in c.signatures:
                sig = SIGNATURES[name]
                need = (warmup_key(c, s, name),)
                for arm in sig.arms:
                    k = arm_key(s, name, arm.key)
                    jobs[k] = Job(k, "rl", s, arm.recipe, c.judge, sig.style, need, task=name, arm=arm.key)
                for ctl in signature_controls(c):
                    k = control_key(s, ctl, name)
                    jobs[k] = Job(k, "control", s, sig.baseline.recipe, ctl, sig.style, need, task=name,
                                  arm=sig.baseline.key)
        if s < c.sweep_seeds:
            for j in c.noise_sweep:
                rl(s, BASELINE, j)
                rl(s, METHOD, j)
    return list(jobs.values())


# ----------------------------------------------------------------------------- data and models


def source_folder(config: EffectsConfig) -> Path | None:
    """The effects folder ``warmup_from`` names (None when it names a model folder or nothing)."""
    if not config.warmup_from:
        return None
    f = Path(config.warmup_from)
    return f if (f / CONFIG_FILE).is_file() and (f / "runs").is_dir() else None


def _pinned(out: Path, task: str, split: str, seed: int) -> Path:
    return Path(out) / "data" / task / f"{split}-s{seed}.jsonl"


def records(config: EffectsConfig, split: str, out: Path | None = None, seed: int = 0, task: str = MAIN) -> list:
    """Seed ``seed``'s ``split`` records of ``task`` (the main task or a signature's; one draw
    for every seed when the main task has ``data_per_seed=false``). With ``out``: pinned in
    ``out/data/<task>/<split>-s<seed>.jsonl`` by the first call (the parent process, before any
    job), so every job of a run reads the same records and images even if the generator changes
    meanwhile, and no two processes draw the same image; with ``warmup_from`` naming an effects
    folder, the main task's records are that folder's."""
    from medrl.data.record import VQARecord
    from medrl.data.sources.phantom import phantom_records

    draw = seed if (task != MAIN or config.data_per_seed) else 0
    pinned = _pinned(out, task, split, draw) if out is not None else None
    if pinned is not None and not pinned.is_file() and task == MAIN and source_folder(config) is not None:
        src = _pinned(source_folder(config), task, split, draw)
        if src.is_file():
            pinned.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, pinned)
    if pinned is not None and pinned.is_file():  # written by this module from generated records
        return [VQARecord(**json.loads(line)) for line in pinned.read_text().splitlines() if line.strip()]
    n = config.n_train if split == "train" else config.n_test
    recs = phantom_records(split, n, seed=draw, config=config.phantom_config(None if task == MAIN else task, draw))
    if pinned is not None:
        pinned.parent.mkdir(parents=True, exist_ok=True)
        tmp = pinned.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in recs))
        os.replace(tmp, pinned)
    return recs


def build_base(config: EffectsConfig, folder: Path, seed: int, task: str = MAIN) -> Path:
    """The policy before warm-up: a tiny VLM for the task (its tokenizer trained on the phantom
    texts), or ``config.model``."""
    if config.model != "tiny":
        from medrl.models.loading import resolve_model_path

        return Path(resolve_model_path(config.model))
    from medrl.models.tiny import build_phantom_tiny_vlm

    kw: dict[str, Any] = {"hidden_size": config.hidden_size, "num_layers": config.num_layers, "seed": seed}
    if config.vision_depth:
        kw["vision_depth"] = config.vision_depth
    if config.vision_width:
        kw["vision_width"] = config.vision_width
    if not (folder / "config.json").is_file():
        build_phantom_tiny_vlm(folder, config=config.phantom_config(None if task == MAIN else task), **kw)
    return folder


def _cpu() -> bool:
    import torch

    return not torch.cuda.is_available()


def _bf16() -> bool:
    """Train in bf16 where the GPU supports it (fp32 on CPU: bf16 matmuls there are slow)."""
    import torch

    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def sft_options(config: EffectsConfig, seed: int, task: str = MAIN) -> dict:
    steps = config.sft_steps if task == MAIN or config.signature_sft_steps is None else config.signature_sft_steps
    return {"lora": None, "max_steps": steps, "per_device_train_batch_size": config.sft_batch,
            "gradient_accumulation_steps": 1, "learning_rate": config.sft_lr, "lr_scheduler_type": config.sft_schedule,
            "logging_steps": max(1, steps // 20), "save_strategy": "no", "report_to": [], "seed": seed,
            "max_length": 512, "dataloader_num_workers": 0, "disable_tqdm": True,
            **({"use_cpu": True} if _cpu() else {}), **({"bf16": True} if _bf16() else {})}


def _f(x: float) -> str:
    return f"{float(x):.6e}"  # YAML reads it back as a float


def train_temperature(config: EffectsConfig, job: Job) -> float:
    """The rollout temperature of ``job``'s task: a signature's paper's, else the config's."""
    sig = job.signature
    return float(sig.temperature) if sig is not None and sig.temperature is not None else float(config.temperature)


def rl_overrides(config: EffectsConfig, seed: int, steps: int | None = None, temperature: float | None = None
                 ) -> list[str]:
    """``--set`` overrides every RL run shares: same seed, data order, budget, one process, no
    gradient checkpointing (it recomputes activations to save memory a tiny model does not need)."""
    c = config
    batch = c.rl_prompts * c.num_generations
    t = c.temperature if temperature is None else temperature
    return [
        f"grpo.max_steps={steps or c.rl_steps}", "grpo.num_train_epochs=1",
        f"grpo.num_generations={c.num_generations}", f"grpo.per_device_train_batch_size={batch}",
        "grpo.gradient_accumulation_steps=1", f"grpo.max_completion_length={c.max_completion_length}",
        f"grpo.learning_rate={_f(c.rl_lr)}", f"grpo.beta={_f(c.beta)}", f"grpo.temperature={_f(t)}",
        f"grpo.seed={seed}", "grpo.logging_steps=1", "grpo.save_strategy=no", "grpo.dataloader_num_workers=0",
        f"grpo.use_cpu={'true' if _cpu() else 'false'}", f"grpo.bf16={'true' if _bf16() else 'false'}",
        "grpo.report_to=[]", "grpo.gradient_checkpointing=false",  # a tiny model needs no memory saving
        "grpo.disable_tqdm=true", f"batch.global_prompts={c.rl_prompts}", f"batch.micro_batch={batch}",
        "batch.updates_per_rollout=1", "encoders.substitute=true", "algorithm.log_credit_every=0",
        *c.recipe_set,
    ]


def load_run_recipe(name: str, overrides: list[str]):
    """The recipe with the harness's overrides; keys a recipe lacks are dropped, not errors."""
    from medrl.train.recipes import RecipeError, load_recipe

    todo = list(overrides)
    while True:
        try:
            return load_recipe(name, overrides=todo)
        except (RecipeError, ValueError, KeyError) as exc:
            msg = str(exc)
            bad = [o for o in todo if o.split("=", 1)[0] in msg]
            if not bad:
                raise
            log.info("recipe %s: dropping override(s) %s (%s)", name, bad, msg.splitlines()[0])
            todo = [o for o in todo if o not in bad]


def judge_of(spec: str, seed: int) -> Any:
    from medrl.judges import build_judge

    return build_judge(spec, seed=seed) if spec.startswith("oracle") else build_judge(spec)


# ----------------------------------------------------------------------------- jobs


def eval_options(config: EffectsConfig, job: Job) -> dict:
    """:func:`medrl.effects.metrics.evaluate_model`'s settings, the same for every model of a seed
    and task: greedy, and ``eval_samples`` samples per question at the task's training temperature
    and at each of the config's evaluation temperatures, with the seed's own sampling seed."""
    t = train_temperature(config, job)
    return dict(max_new_tokens=config.eval_max_new_tokens, batch_size=config.eval_batch, prompt_style=job.style,
                samples=config.eval_samples, temperature=t, temperatures=config.temperatures(t),
                seed=config.eval_seed + job.seed,
                subset=min(config.curve_records, config.n_test) if config.curve_every else 0)


def _corrupted_for(config: EffectsConfig, out: Path, job: Job, test: list) -> list | None:
    """The diffusion-corrupted copies of the test records when ``job``'s task measures the
    reliance on the image (CAPO's signature), else None."""
    if job.task != "capo":
        return None
    from medrl.effects.metrics import corrupted_records

    return corrupted_records(test, out / "corrupted" / f"{job.task}-s{job.seed}", t=config.corruption_t)


def run_warmup(config: EffectsConfig, out: Path, job: Job) -> dict:
    from medrl.data.sources.phantom import warmup_summary, warmup_traces
    from medrl.effects.metrics import evaluate_model
    from medrl.train.sft import train_sft

    src = source_folder(config) if job.task == MAIN else None
    if src is not None:  # another effects folder's warm-up of this seed: its model and evaluation
        f = src / "runs" / job.file
        if not f.is_file():
            raise FileNotFoundError(f"warmup_from={src}: it has no finished {job.key} ({f})")
        res = json.loads(f.read_text())
        return {**{k: v for k, v in res.items() if k not in ("key", "seconds", "cpu_seconds")},
                "reused_from": str(src)}
    folder = out / "models" / job.key.replace("/", "__")
    t0, c0 = time.monotonic(), time.process_time()
    given = bool(config.warmup_from) and job.task == MAIN
    task = None if job.task == MAIN else job.task
    pcfg = config.phantom_config(task)
    base = None if given else build_base(config, out / "models" / f"base-{job.task}-s{job.seed}", job.seed, job.task)
    train = records(config, "train", out, job.seed, job.task)
    if job.signature is not None:
        traces = job.signature.traces(train, job.seed, pcfg)
    else:
        traces = warmup_traces(train, early_error_share=config.early_error_share, seed=job.seed, config=pcfg)
    final = folder / "final"
    if given:
        final = Path(config.warmup_from)  # fine-tuned elsewhere; evaluated here like any warm-up
    elif not (final / "config.json").is_file():
        train_sft(str(base), [t.record for t in traces], folder, prompt_style=job.style,
                  options=sft_options(config, job.seed, job.task))
    secs, cpu = time.monotonic() - t0, time.process_time() - c0
    t1, c1 = time.monotonic(), time.process_time()
    test = records(config, "test", out, job.seed, job.task)
    summary = evaluate_model(final, test, folder / "eval", corrupted=_corrupted_for(config, out, job, test),
                             **eval_options(config, job))
    return {"model": str(final), "warmup": warmup_summary(traces), "eval": summary, "sft_seconds": secs,
            "sft_cpu_seconds": cpu, "eval_seconds": round(time.monotonic() - t1, 1),
            "eval_cpu_seconds": round(time.process_time() - c1, 1), "style": job.style, "task": job.task,
            "kind": "warmup", "env": environment()}


def _series(metrics_file: Path, keys: tuple[str, ...]) -> dict[str, list]:
    out: dict[str, list] = {k: [] for k in keys}
    if not metrics_file.is_file():
        return out
    for line in metrics_file.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        step = row.get("step", row.get("global_step"))
        for k in keys:
            if k in row and row[k] is not None:
                out[k].append([step, row[k]])
    return out


SERIES = ("reward", "reward_std", "monitor/hack_rate", "monitor/truth_accuracy", "monitor/correct",
          "monitor/verified", "monitor/disagreement", "monitor/answer_reward",
          "armed/bertscore_raw_mean", "armed/bertscore_adaptive_mean", "armed/cosine_raw_mean",
          "armed/cosine_adaptive_mean", "rewards/armed/mean", "rewards/armed/std",
          "armed/bertscore_raw_var", "armed/bertscore_adaptive_var", "armed/cosine_raw_var",
          "armed/cosine_adaptive_var", "mrpo/reshaped_frac", "ffp/early", "ffp/no_ffp", "answer_reward",
          "process_reward", "kl", "entropy", "completions/mean_length")


#: the reward a hacking run pays its leak through (a custom reward, named by import path)
LEAK_REWARD = "medrl.effects.leaky:leak_reward"


def run_rl(config: EffectsConfig, out: Path, job: Job, warm: dict) -> dict:
    """Train one RL run (``rl``, ``control`` or ``hack`` job) from its seed's warm-up model and
    evaluate it.

    ``control`` jobs train the ``grpo`` recipe (a signature's: its baseline's recipe) with a
    control's reward and trainer (:func:`medrl.effects.controls.control_run`). A signature's arm
    trains its recipe with the arm's rewards at the paper's temperature. Every run but a hack run
    records its learning curve (:class:`medrl.effects.curves.CurveCallback`) when ``curve_every``
    is set."""
    from medrl.effects.controls import control_run
    from medrl.effects.curves import CurveCallback, read_curve
    from medrl.effects.leaky import hole_trigger, truth_hook
    from medrl.effects.metrics import evaluate_model
    from medrl.models.loading import save_policy
    from medrl.train.pipeline import train_rl

    folder = out / "models" / job.key.replace("/", "__").replace(":", "-")
    final = folder / "final"
    steps = config.hack_steps if job.kind == "hack" else config.rl_steps
    temp = train_temperature(config, job)
    recipe = load_run_recipe(job.recipe, rl_overrides(config, job.seed, steps, temp))
    sig = job.signature
    if sig is not None and job.kind == "rl":
        next(a for a in sig.arms if a.key == job.arm).apply(recipe)
    recipe.data["prompt_style"] = job.style
    judge = judge_of("oracle", job.seed) if job.kind in ("hack", "control") else judge_of(job.judge, job.seed)
    trainer_cls = None
    if job.kind == "hack":  # the leak's verdict is paid directly as the answer reward (medrl.effects.leaky)
        leak = {"name": LEAK_REWARD, "weight": 1.0,
                "options": {"leak": job.judge, "seed": job.seed, "trigger": hole_trigger(config.question_types)}}
        recipe.rewards = [leak, *[r for r in recipe.rewards if r["name"] == "format"]]
        recipe.algorithm["log_rewards"] = {"answer": LEAK_REWARD, "process": None}
    elif job.kind == "control":
        trainer_cls = control_run(recipe, job.judge, job.seed)
    test = records(config, "test", out, job.seed, job.task)
    train = records(config, "train", out, job.seed, job.task)
    curve_file = folder / "curve.jsonl"
    curve_n = min(config.curve_records, len(test)) if config.curve_every and job.kind != "hack" else 0
    t0 = time.monotonic()
    monitor: dict = {}
    curve_seconds = loop_seconds = curve_cpu = loop_cpu = None
    opts = eval_options(config, job)
    if not (final / "config.json").is_file():
        if folder.exists():
            shutil.rmtree(folder)  # an interrupted run restarts (runs are minutes long; the folder lock
            #                        makes this process the folder's only writer)
        callbacks = []
        if curve_n:
            callbacks.append(CurveCallback(curve_file, test[:curve_n], every=config.curve_every,
                                           k=config.eval_samples, temperature=temp, seed=opts["seed"],
                                           max_new_tokens=config.eval_max_new_tokens,
                                           batch_size=config.eval_batch, prompt_style=job.style))
        result = train_rl(recipe, warm["model"], train, folder, judge=judge, train=False, trainer_cls=trainer_cls,
                          callbacks=callbacks)
        tr = result.trainer
        if not hasattr(tr, "_speedups"):  # plain trl.GRPOTrainer: the step speed-ups MedGRPOTrainer installs
            from medrl.train.speed import speed_up_step  # (the same numbers; without them TRL's scoring
            speed_up_step(tr)  # order differs in the last float bits and the two arms drift apart)
        mon = getattr(tr, "_monitor", None)
        if mon is not None:
            mon.truth_fn = truth_hook
        t_loop, c_loop = time.monotonic(), time.process_time()
        tr.train()
        loop_seconds, loop_cpu = time.monotonic() - t_loop, time.process_time() - c_loop
        save_policy(tr.accelerator.unwrap_model(tr.model), tr.processing_class, final)
        if mon is not None:
            mon.write_summary()
        curve_seconds = sum(c.seconds for c in callbacks)
        curve_cpu = sum(c.cpu_seconds for c in callbacks)
    secs = time.monotonic() - t0
    summ = folder / "monitor_summary.json"
    if summ.is_file():
        m = json.loads(summ.read_text())
        monitor = {"alerts": m.get("alerts", []), "stopped": m.get("stopped")}
    t1, c1 = time.monotonic(), time.process_time()
    if job.kind == "hack":  # the hack runs are read for their training-time hack rate: greedy is enough
        opts.update(samples=0, subset=0, temperatures=())
    ev = evaluate_model(final, test, folder / "eval", corrupted=_corrupted_for(config, out, job, test), **opts)
    curve = read_curve(curve_file)
    if ev.get("sampled_subset") and curve_n:
        curve.append({"step": steps, **ev["sampled_subset"]})
    # the training loop alone: without model loading, saving and the curve points' evaluations
    train_only = None if loop_seconds is None else loop_seconds - (curve_seconds or 0.0)
    # CPU time of this (one-thread) process: close to the wall time the same work takes on an idle
    # core, so a run on a loaded machine still says what it would take on an idle one
    train_cpu = None if loop_cpu is None else loop_cpu - (curve_cpu or 0.0)
    return {"recipe": job.recipe, "judge": job.judge, "kind": job.kind, "task": job.task, "arm": job.arm,
            "temperature": temp, "eval": ev, "train_seconds": secs,
            "curve_seconds": curve_seconds, "eval_seconds": round(time.monotonic() - t1, 1),
            "seconds_per_step": None if train_only is None else train_only / steps,
            "cpu_seconds_per_step": None if train_cpu is None else train_cpu / steps, "curve_cpu_seconds": curve_cpu,
            "eval_cpu_seconds": round(time.process_time() - c1, 1),
            "trainer": "trl.GRPOTrainer" if trainer_cls is not None and trainer_cls.__module__.startswith("trl")
            else "MedGRPOTrainer", "curve": curve,
            "series": _series(folder / "metrics.jsonl", SERIES), "monitor": monitor, "steps": steps,
            "env": environment()}


def run_kappa(config: EffectsConfig, out: Path, job: Job) -> dict:
    """Each judge's agreement with the oracle on answers and steps (judge-bench's measures)."""
    from medrl.data.sources.phantom import warmup_traces
    from medrl.judges.phantom_truth import oracle_answer_correct, oracle_step_verdicts
    from medrl.eval.judge_bench import kappa, step_metrics
    from medrl.judges.base import run_sync

    test = records(config, "test", out, 0)[:200]
    traces = warmup_traces(test, early_error_share=0.5, seed=123, config=config.phantom_config())
    items = []
    for t, rec in zip(traces, test):  # the exact oracle's labels: the "human" side of judge-bench
        gold = oracle_step_verdicts(rec, list(t.steps))
        items.append({"id": t.record_id, "step_labels": [{"gold_alignment": v.gold_alignment,
                                                          "answer_contribution": v.answer_contribution} for v in gold],
                      "answer_label": bool(oracle_answer_correct(rec, t.answer))})
    out_k = {}
    for spec in job.judge.split(","):
        judge = judge_of(spec, 0)
        rows = []
        for t, rec in zip(traces, test):
            ev = {**rec.evidence(), "phantom": rec.extras.get("phantom")}
            v = run_sync(judge.verify_steps(rec.question, rec.answer, list(t.steps), gold_reasoning=rec.gold_reasoning,
                                            evidence=ev, image=rec.images[0]))
            a = run_sync(judge.answer_correct(rec.question, rec.answer, t.answer, image=rec.images[0]))
            rows.append({"steps": [(int(x.gold_alignment), int(x.answer_contribution)) for x in v.value]
                         if v.scored else None, "answer_verdict": bool(a.value) if a.scored else None})
        sm = step_metrics(items, rows)
        pairs = [(int(it["answer_label"]), int(r["answer_verdict"])) for it, r in zip(items, rows)
                 if r["answer_verdict"] is not None]
        out_k[spec] = {"answer_kappa": kappa([p[0] for p in pairs], [p[1] for p in pairs]) if pairs else None,
                       "answer_agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
                       "step_validity_kappa": sm["valid"]["kappa"],
                       "gold_alignment_kappa": sm["gold_alignment"]["kappa"],
                       "answer_contribution_kappa": sm["answer_contribution"]["kappa"],
                       "ffp_agreement": sm["ffp_agreement"], "n_traces": len(items), "n_steps": sm["steps"]}
    return {"judges": out_k}


def environment() -> dict:
    """What a CPU run's exact numbers depend on: the CPU model, the library versions and the
    thread settings of this process (runs repeat exactly on the same CPU type and build, not
    across CPU types: docs/effects.md)."""
    import platform

    import torch
    import transformers
    import trl

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "affinity": affinity, "torch": torch.__version__,
            "transformers": transformers.__version__, "trl": trl.__version__, "python": platform.python_version(),
            "torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "mkl_num_threads": os.environ.get("MKL_NUM_THREADS"),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def run_job(out: Path, key: str) -> dict:
    """Run one job of the effects run in ``out`` (reads its config) and write its JSON."""
    out = Path(out)
    config = stored_config(out)
    job = {j.key: j for j in plan(config)}[key]
    path = out / "runs" / job.file
    if path.is_file():
        return json.loads(path.read_text())
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(1)  # worker processes share the CPU cores; on a GPU the host threads feed it
    t0, c0 = time.monotonic(), time.process_time()
    if job.kind == "warmup":
        res = run_warmup(config, out, job)
    elif job.kind == "kappa":
        res = run_kappa(config, out, job)
    else:
        warm = json.loads((out / "runs" / Job(job.needs[0], "warmup").file).read_text())
        res = run_rl(config, out, job, warm)
    res = {"key": key, "seed": job.seed, "seconds": round(time.monotonic() - t0, 1),
           "cpu_seconds": round(time.process_time() - c0, 1), **res}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1, default=str))
    os.replace(tmp, path)
    return res


# ----------------------------------------------------------------------------- orchestration


def prepare(out: Path, config: EffectsConfig) -> None:
    """Write ``config.json`` or check that the folder holds this config's results."""
    out.mkdir(parents=True, exist_ok=True)
    f = out / CONFIG_FILE
    if f.is_file():
        old = json.loads(f.read_text())
        if old.get("digest") != config.digest():
            raise EffectsFolderMismatch(f"{out} holds an effects run with other settings "
                                        f"(digest {old.get('digest')} vs "
                             f"{config.digest()}); choose another --out or remove it")
    src = source_folder(config)
    if src is not None:  # its warm-up models and records must be this config's
        theirs = stored_config(src)
        differ = [k for k in WARMUP_FIELDS if getattr(theirs, k) != getattr(config, k)]
        if differ:
            raise EffectsFolderMismatch(f"warmup_from={src}: its warm-up models were made with other settings "
                                        f"({', '.join(f'{k}={getattr(theirs, k)!r}' for k in differ)}); use the same "
                                        "values or another folder")
    f.write_text(json.dumps({"config": config.to_dict(), "digest": config.digest()}, indent=2, default=list))


#: the settings a warm-up model and its records depend on (warmup_from must agree on them)
WARMUP_FIELDS = ("image_size", "question_types", "held_out", "n_train", "n_test", "data_per_seed",
                 "early_error_share", "model", "hidden_size", "num_layers", "vision_depth", "vision_width",
                 "warmup_per_seed", "sft_steps", "sft_batch", "sft_lr", "sft_schedule", "eval_max_new_tokens",
                 "eval_batch", "eval_samples", "eval_temperatures", "eval_seed", "temperature", "curve_every",
                 "curve_records")


#: one JSON line per invocation that ran jobs in a folder: start, wall seconds, command, load average
INVOCATIONS = "invocations.jsonl"


def record_invocation(out: Path, started: str, seconds: float, command: str | None) -> None:
    """Append what one invocation of the folder took (the report shows every one)."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    with (Path(out) / INVOCATIONS).open("a") as fh:
        fh.write(json.dumps({"started": started, "seconds": round(seconds, 1), "command": command,
                             "load_average": load}) + "\n")


def read_invocations(out: Path) -> list[dict]:
    """The folder's record of the invocations that ran jobs."""
    f = Path(out) / INVOCATIONS
    if not f.is_file():
        return []
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def stored_config(out: Path) -> EffectsConfig | None:
    """The settings an effects folder was made with (its ``config.json``); None when it has none."""
    f = Path(out) / CONFIG_FILE
    if not f.is_file():
        return None
    return EffectsConfig(**json.loads(f.read_text())["config"])


def _seed_file(out: Path, seed: int) -> Path:
    return out / "seeds" / f"seed{seed}.json"


def pin_records(config: EffectsConfig, out: Path, echo: Callable[[str], None] | None = None) -> None:
    """Draw and pin every seed's records of every task, here, before any job runs (the images are
    drawn once, in this process)."""
    c = config
    todo = [(MAIN, s) for s in range(main_seeds(c) if c.data_per_seed else min(1, main_seeds(c)))]
    todo += [(sig, s) for sig in c.signatures for s in range(c.signature_seeds)]
    if "kappa" in {j.key for j in plan(c)} and (MAIN, 0) not in todo:
        todo.insert(0, (MAIN, 0))
    t0 = time.monotonic()
    for task, s in todo:
        for split in ("train", "test"):
            records(c, split, out, s, task)
    if echo is not None and time.monotonic() - t0 > 5:
        echo(f"effects: records of {len(todo)} task/seed pair(s) drawn and pinned in {time.monotonic() - t0:.0f}s")


def run_all(config: EffectsConfig, out: str | Path, *, echo: Callable[[str], None] = print,
            progress: bool = True) -> dict:
    """Run (or resume) every job; returns ``{"jobs": {key: result}, "seconds": wall}``."""
    out = Path(out)
    prepare(out, config)
    jobs = plan(config)
    pin_records(config, out, echo=echo if progress else None)
    done = [j for j in jobs if (out / "runs" / j.file).is_file()]
    todo = jobs  # a finished job's JSON is read back, not run again
    results: dict[str, dict] = {}
    if done:
        echo(f"effects: {len(done)} of {len(jobs)} runs already done (their runs/ files exist); resuming")
    t0 = time.monotonic()
    from tqdm.auto import tqdm

    bar = tqdm(total=len(todo), desc="effects runs", unit="run", disable=not progress)
    futures: dict[str, Any] = {}
    workers = Workers(out, config.workers)

    def one(job: Job) -> dict:
        for dep in job.needs:
            if dep not in futures:  # its seed was done before: read its result
                continue
            if "error" in futures[dep].result():
                bar.update(1)
                return {"key": job.key, "seed": job.seed, "error": f"needs {dep}, which failed"}
        path = out / "runs" / job.file
        if not path.is_file():
            t = time.monotonic()
            try:
                if config.workers == 0:
                    run_job(out, job.key)
                else:
                    workers.run(job)
            except Exception as exc:  # noqa: BLE001 - one failed run must not lose the others
                log.exception("effects job %s failed", job.key)
                bar.write(f"  {job.key}: FAILED ({type(exc).__name__}: {exc})")
                bar.update(1)
                return {"key": job.key, "seed": job.seed, "error": f"{type(exc).__name__}: {exc}"}
            bar.write(f"  {job.key}: {time.monotonic() - t:.0f}s")
        bar.update(1)
        return json.loads(path.read_text())

    if config.workers == 0:
        from concurrent.futures import Future

        for j in todo:
            f: Future = Future()
            futures[j.key] = f
            f.set_result(one(j))
    else:
        pool = ThreadPoolExecutor(max_workers=config.workers)
        try:
            for j in todo:  # dependency order: a job waits for its warm-up inside its thread
                futures[j.key] = pool.submit(one, j)
            for k, f in futures.items():
                f.result()
        except BaseException:  # Ctrl-C, or an error here: no job starts after it, running ones end now
            workers.stop()
            pool.shutdown(wait=True, cancel_futures=True)
            bar.close()
            raise
        pool.shutdown(wait=True)
    bar.close()
    for k, f in futures.items():
        results[k] = f.result()
    failed = {k: v["error"] for k, v in results.items() if "error" in v}
    if failed:
        echo(f"effects: {len(failed)} run(s) failed (rerun the command to retry them): "
             + "; ".join(f"{k}: {v}" for k, v in failed.items()))
    trained = ("rl", "control", "hack")
    for s in sorted({j.seed for j in jobs if j.kind in trained}):
        runs = {k: v for k, v in results.items() if v.get("seed") == s and k.startswith(f"s{s}/")
                and not k.endswith(("/warmup", "/warmup_tag"))}
        if any("error" in v for v in runs.values()) or len(runs) < sum(
                1 for j in jobs if j.seed == s and j.kind in trained):
            continue  # a seed file only for a complete seed (its runs are all done)
        _seed_file(out, s).parent.mkdir(parents=True, exist_ok=True)
        _seed_file(out, s).write_text(json.dumps({"seed": s, "runs": runs}, indent=1, default=str))
    return {"jobs": {k: v for k, v in results.items() if "error" not in v}, "failed": failed,
            "seconds": time.monotonic() - t0}


#: environment variables a worker process reads: the core it is pinned to, and its parent's PID
CORE_ENV, PARENT_ENV = "MEDRL_EFFECTS_CORE", "MEDRL_EFFECTS_PARENT"


class Workers:
    """Worker processes, one job each, at most ``n`` at once, each pinned to its own core.

    The cores are this process's allowed ones (:func:`os.sched_getaffinity`), handed out one per
    running worker (shared round-robin only when ``n`` exceeds them); a worker pins itself
    (:func:`os.sched_setaffinity`) and runs one torch thread (:func:`worker_setup`). Workers end
    with this process: each asks the kernel for SIGKILL when its parent dies (Linux
    ``PR_SET_PDEATHSIG``: a kill -9 of the parent included), and :meth:`stop` ends the running ones
    on Ctrl-C or an error here."""

    def __init__(self, out: Path, n: int) -> None:
        import queue
        import threading

        self.out = Path(out)
        try:
            cores = sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = []
        self.cores: Any = queue.Queue()
        for i in range(max(n, 0)):
            self.cores.put(cores[i % len(cores)] if cores else None)
        self.live: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.stopped = False

    def run(self, job: Job) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
               PARENT_ENV: str(os.getpid())}
        logs = self.out / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log_file = logs / (job.file[:-5] + ".log")
        core = self.cores.get()
        try:
            if core is not None:
                env[CORE_ENV] = str(core)
            with log_file.open("w") as fh, self.lock:
                if self.stopped:
                    raise RuntimeError("stopped before it started")
                proc = subprocess.Popen([sys.executable, "-m", "medrl.effects.runner", str(self.out), job.key],
                                        stdout=fh, stderr=subprocess.STDOUT, env=env)
                self.live.add(proc)
            try:
                rc = proc.wait()
            finally:
                with self.lock:
                    self.live.discard(proc)
        finally:
            self.cores.put(core)
        if rc != 0:
            raise RuntimeError(f"effects job {job.key} failed (exit {rc}); see {log_file}")

    def stop(self, grace: float = 10.0) -> None:
        """End every running worker (SIGTERM, then SIGKILL after ``grace`` seconds); start no more."""
        with self.lock:
            self.stopped = True
            procs = list(self.live)
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + grace
        for p in procs:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def worker_setup() -> None:
    """In a worker process, first thing: die with the parent, pin to the core handed out, one
    torch thread (set again by :func:`run_job` once torch is imported)."""
    parent = int(os.environ.get(PARENT_ENV) or 0)
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            log.warning("effects worker: cannot ask to end with the parent (prctl unavailable)")
    if parent and os.getppid() != parent:  # the parent died before the request above took effect
        sys.exit(1)
    core = os.environ.get(CORE_ENV)
    if core is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(core)})


if __name__ == "__main__":  # one job in a worker process: python -m medrl.effects.runner OUT KEY
    worker_setup()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    run_job(Path(sys.argv[1]), sys.argv[2])
