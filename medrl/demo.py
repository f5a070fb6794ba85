"""``medrl demo``: the whole pipeline, offline, on real VQA-RAD, resumable stage by stage.

What runs (each stage writes into the output folder and is skipped when its output is complete):

1. ``data``     VQA-RAD open-ended train and test records (the papers' setting, MRPO Sec. 5.1).
2. ``policy``   the base policy (default: SmolLM2-135M-Instruct as the language model of a
                LLaVA-style VLM, :func:`medrl.models.build_default_policy`); parameters counted.
3. ``sft``      warm-up SFT on ``<think>..</think><answer>..</answer>`` targets
                (:func:`medrl.train.sft.train_sft`). Before it every format reward is 0, so RL
                would learn nothing (ARCHITECTURE.md, measured).
4. ``grpo``     GRPO from the warm-up model (``recipes/grpo.yaml``, MRPO's rewards, sequence-level
                advantage).
5. ``mrpo``     MRPO from the same warm-up model, with the same seed, data order and budget
                (``recipes/mrpo.yaml``: step-aware token advantages, 000_20b05565d28598f4.txt Eq. 7).
6. ``eval_*``   warm-up, GRPO and MRPO models on the same test records (:func:`medrl.eval.runner.run_eval`:
                judged accuracy, HSS, step verification), resumable per record.
7. ``report``   one report (Markdown + self-contained HTML, PNG figures): accuracy and HSS with
                95% bootstrap CIs, FFP stage shares, FAR curves, reward/KL curves, examples with
                step verdicts, the model size and the budget - measured numbers only.

``state.json`` in the output folder records the settings, and per stage whether it finished and
the wall time it took (summed over resumed runs). Rerunning the same command after an
interruption skips finished stages, resumes training from its last checkpoint and evaluation
from its last saved record. A folder made with other settings is refused (``--overwrite``
starts it over).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
MODELS = ("warmup", "grpo", "mrpo")
LABELS = {"warmup": "Warm-up (SFT)", "grpo": "GRPO", "mrpo": "MRPO"}
EVAL_DATASET = "vqa_rad:test"


# --------------------------------------------------------------------------------------------
# Settings


@dataclass
class DemoConfig:
    """Everything that decides the demo's numbers (stored in ``state.json``; a resumed run must
    match). Sizes: ``sft_steps`` optimizer steps of ``sft_batch`` records; RL runs ``rl_steps``
    steps of ``rl_prompts`` prompts x ``num_generations`` rollouts of at most
    ``max_completion_length`` tokens; evaluation uses the first ``eval_limit`` open-ended test
    records, greedy, at most ``eval_max_new_tokens`` tokens."""

    mode: str = "default"
    model: str = "default"
    judge: str = "reference"
    judge_base_url: str | None = None
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
        return dataclasses.asdict(self)


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


# --------------------------------------------------------------------------------------------
# Stage bookkeeping


class DemoStateMismatch(ValueError):
    """The output folder holds a demo made with other settings."""


def _fmt_secs(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class StageRunner:
    """Runs named stages in order, recording each one's completion and wall time in
    ``<out>/state.json`` (atomically rewritten after every change).

    A stage is skipped when the state marks it done *and* its ``is_done`` check (its outputs
    exist) agrees; its result is then read back by ``load``. Otherwise it runs; its wall time
    is added to what earlier, interrupted attempts already spent.
    """

    def __init__(self, out: Path, config: dict, *, overwrite: bool = False,
                 echo: Callable[[str], None] | None = None):
        self.out = Path(out)
        self.path = self.out / STATE_FILE
        self.echo = echo or (lambda msg: print(msg, flush=True))
        if overwrite and self.out.exists():
            if not self.path.is_file() and any(self.out.iterdir()):
                raise DemoStateMismatch(
                    f"{self.out} is not empty and holds no {STATE_FILE}: not removing a folder the "
                    "demo did not make; choose another --out")
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        if self.path.is_file():
            try:
                state = json.loads(self.path.read_text())
            except json.JSONDecodeError as exc:
                raise DemoStateMismatch(f"{self.path}: not valid JSON ({exc}); use --overwrite to start over") from None
            old = state.get("config", {})
            diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            if diff:
                changes = ", ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in diff)
                raise DemoStateMismatch(
                    f"{self.out} holds a demo run with other settings ({changes}). Rerun with the same "
                    "options to resume it, pass --overwrite to start over, or choose another --out.")
            self.state = state
        else:
            self.state = {"config": config, "stages": {}}
            self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.state, indent=2, default=str))
        os.replace(tmp, self.path)

    def info(self, name: str) -> dict:
        return self.state["stages"].setdefault(name, {"done": False, "seconds": 0.0, "cpu_seconds": 0.0,
                                                      "attempts": 0})

    def run(self, index: int, total: int, name: str, title: str, fn: Callable[[], Any], *,
            is_done: Callable[[], bool] = lambda: True, load: Callable[[], Any] | None = None) -> Any:
        info = self.info(name)
        if info["done"] and is_done():
            self.echo(f"[{index}/{total}] {title}: already done ({_fmt_secs(info['seconds'])}), skipping")
            return load() if load else info.get("result")
        info["done"] = False
        info["attempts"] = info.get("attempts", 0) + 1
        self._save()
        resumed = " (resuming)" if info["seconds"] > 0 else ""
        self.echo(f"\n[{index}/{total}] {title}{resumed}")
        start, cpu = time.monotonic(), time.process_time()
        try:
            result = fn()
        finally:
            info["seconds"] = round(info["seconds"] + time.monotonic() - start, 2)
            info["cpu_seconds"] = round(info.get("cpu_seconds", 0.0) + time.process_time() - cpu, 2)
            self._save()
        info["done"] = True
        if result is not None and _jsonable(result):
            info["result"] = result
        self._save()
        self.echo(f"[{index}/{total}] {title}: done in {_fmt_secs(time.monotonic() - start)}")
        return result

    def seconds(self, key: str = "seconds") -> dict[str, float]:
        """Wall (``seconds``) or CPU (``cpu_seconds``, all threads of this process) time per stage."""
        return {k: v.get(key, 0.0) for k, v in self.state["stages"].items()}


def _jsonable(x: Any) -> bool:
    try:
        json.dumps(x)
        return True
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------------------------
# The pipeline


@dataclass
class Demo:
    """The demo in ``out`` with ``config``; :meth:`run` executes every stage."""

    out: Path
    config: DemoConfig
    data_dir: str | None = None
    judge_api_key_env: str = "OPENAI_API_KEY"
    overwrite: bool = False
    echo: Callable[[str], None] = field(default=lambda msg: print(msg, flush=True))

    def __post_init__(self):
        self.out = Path(self.out)
        self.runner = StageRunner(self.out, self.config.to_dict(), overwrite=self.overwrite, echo=self.echo)
        self._judge = None

    # ---------------------------------------------------------------- helpers
    def judge(self):
        if self._judge is None:
            from medrl.judges import build_judge

            c = self.config
            cache = self.out / "judge_cache.sqlite" if c.judge.startswith("openai") else None
            self._judge = build_judge(c.judge, base_url=c.judge_base_url, api_key_env=self.judge_api_key_env,
                                      cache_path=cache)
        return self._judge

    def load_data(self) -> tuple[list, list]:
        """(train, test) open-ended VQA-RAD records; FileNotFoundError with DATA_HELP if absent."""
        from medrl.data import load_records
        from medrl.paths import DATA_HELP, data_root

        root = self._root = data_root(self.data_dir)
        if not (root / "vqa_rad").is_dir():
            raise FileNotFoundError(f"{root} has no vqa_rad/ folder. {DATA_HELP}")
        c = self.config
        train = load_records("vqa_rad", split="train", data_dir=str(root), open_only=True, limit=c.train_limit)
        test = load_records("vqa_rad", split="test", data_dir=str(root), open_only=True, limit=c.eval_limit)
        if not train or not test:
            raise FileNotFoundError(f"{root}/vqa_rad holds no open-ended train/test records. {DATA_HELP}")
        return train, test

    # ---------------------------------------------------------------- stages
    def stage_data(self) -> dict:
        train, test = self.load_data()
        self._train, self._test = train, test
        return {"train": len(train), "test": len(test), "data_root": str(self._root)}

    def stage_policy(self) -> dict:
        from medrl.models.loading import resolve_model_path

        path = resolve_model_path(self.config.model)
        n = count_parameters(path)
        self.echo(f"    policy {path}: {n:,} parameters")
        return {"path": str(path), "parameters": n}

    def stage_sft(self, base: str) -> str:
        import torch

        from medrl.train.sft import train_sft

        c = self.config
        options = {
            "lora": None,  # full fine-tuning: the fresh vision tower and projector must learn too
            "max_steps": c.sft_steps,
            "per_device_train_batch_size": c.sft_batch,
            "gradient_accumulation_steps": 1,
            "learning_rate": c.sft_lr,
            "lr_scheduler_type": "linear",
            "logging_steps": 1,
            "save_steps": c.sft_save_steps,
            "save_total_limit": 1,
            "seed": c.seed,
            "max_length": 512,
            "dataloader_num_workers": 0,
        }
        if not torch.cuda.is_available():
            options["use_cpu"] = True
        final = train_sft(base, self._train, self.out / "sft", prompt_style="think_answer",
                          options=options, resume=True)
        _drop_checkpoints(self.out / "sft")
        return str(final)

    def rl_overrides(self) -> list[str]:
        """``--set`` overrides shared by the GRPO and MRPO stages: same seed, data order, budget."""
        import torch

        c = self.config
        cpu = not torch.cuda.is_available()
        return [
            f"grpo.max_steps={c.rl_steps}",
            "grpo.num_train_epochs=1",
            f"grpo.num_generations={c.num_generations}",
            f"grpo.per_device_train_batch_size={c.num_generations * c.rl_prompts}",
            "grpo.gradient_accumulation_steps=1",
            f"grpo.max_completion_length={c.max_completion_length}",
            f"grpo.learning_rate={_yaml_float(c.rl_lr)}",
            f"grpo.beta={_yaml_float(c.beta)}",
            f"grpo.seed={c.seed}",
            "grpo.logging_steps=1",
            f"grpo.save_steps={c.rl_save_steps}",
            "grpo.save_total_limit=1",
            "grpo.dataloader_num_workers=0",
            f"grpo.use_cpu={'true' if cpu else 'false'}",
            "grpo.bf16=false",
        ]

    def stage_rl(self, recipe_name: str, warmup: str) -> str:
        from medrl.train.pipeline import train_rl
        from medrl.train.recipes import load_recipe

        recipe = load_recipe(recipe_name, overrides=self.rl_overrides())
        result = train_rl(recipe, warmup, self._train, self.out / recipe_name, judge=self.judge(), resume=True)
        if not (result.final_dir / "config.json").is_file():
            raise RuntimeError(f"{recipe_name}: training stopped before max_steps; rerun to resume")
        _drop_checkpoints(self.out / recipe_name)
        return str(result.final_dir)

    def stage_eval(self, name: str, model_path: str) -> dict:
        from medrl.eval.runner import EvalDataset, build_generate_fn, run_eval

        c = self.config
        gen = {"backend": "hf", "max_new_tokens": c.eval_max_new_tokens, "temperature": 0.0,
               "prompt_style": "think_answer"}
        generate_fn = build_generate_fn(model_path, max_new_tokens=c.eval_max_new_tokens, temperature=0.0,
                                        batch_size=c.eval_batch_size)
        metrics = run_eval([EvalDataset(EVAL_DATASET, self._test)], generate_fn, self.judge(),
                           self.out / "eval" / name, model=_relative(model_path, self.out), generation=gen,
                           batch_size=c.eval_batch_size, chunk_size=16, seed=c.seed)
        d = metrics["datasets"][EVAL_DATASET]["metrics"]
        acc, hss = d.get("judge_binary", {}), d.get("hss", {})
        self.echo(f"    {LABELS[name]}: accuracy {_pct(acc.get('mean'))}, HSS {_num(hss.get('mean'))} "
                  f"on {metrics['datasets'][EVAL_DATASET]['n']} records")
        return {"accuracy": acc.get("mean"), "hss": hss.get("mean")}

    # ---------------------------------------------------------------- run
    def run(self) -> Path:
        r, c = self.runner, self.config
        total = 10
        self.echo(f"medrl demo ({c.mode}): output folder {self.out}  (state: {r.path})")
        r.run(1, total, "data", "Load VQA-RAD open-ended train/test records", self.stage_data)
        if not hasattr(self, "_train"):
            self._train, self._test = self.load_data()
        self.echo(f"    {len(self._train)} train / {len(self._test)} test records")
        policy = r.run(2, total, "policy", f"Build the base policy ({c.model})", self.stage_policy,
                       is_done=lambda: _model_ok(r.info("policy").get("result", {}).get("path")))
        base = policy["path"]
        sft_final = self.out / "sft" / "final"
        r.run(3, total, "sft", f"Warm-up SFT: {c.sft_steps} steps x {c.sft_batch} records, lr {c.sft_lr:g}",
              lambda: self.stage_sft(base), is_done=lambda: _model_ok(sft_final))
        rl_desc = (f"{c.rl_steps} steps x {c.rl_prompts} prompt(s) x {c.num_generations} rollouts "
                   f"(<= {c.max_completion_length} tokens), lr {c.rl_lr:g}, beta {c.beta:g}, seed {c.seed}")
        for i, name in ((4, "grpo"), (5, "mrpo")):
            final = self.out / name / "final"
            r.run(i, total, name, f"{LABELS[name]}: {rl_desc}", lambda n=name: self.stage_rl(n, str(sft_final)),
                  is_done=lambda f=final: _model_ok(f))
        models = {"warmup": sft_final, "grpo": self.out / "grpo" / "final", "mrpo": self.out / "mrpo" / "final"}
        for i, name in enumerate(MODELS, start=6):
            folder = self.out / "eval" / name
            r.run(i, total, f"eval_{name}",
                  f"Evaluate {LABELS[name]} on {len(self._test)} test records (greedy, <= {c.eval_max_new_tokens} tokens)",
                  lambda n=name: self.stage_eval(n, str(models[n])),
                  is_done=lambda f=folder: (f / "metrics.json").is_file())
        r.run(9, total, "analysis", "Analyse reasoning (FFP/FAR), training curves",
              lambda: analyse(self.out), is_done=lambda: (self.out / "analysis" / "ffp" / "analysis.json").is_file())
        # the report is always rewritten: it states the wall times, which include this run
        report = r.run(10, total, "report", "Write the report", lambda: str(write_report(self.out, c, r)[1]),
                       is_done=lambda: False)
        self.echo("\n" + summary_text(self.out))
        self.echo(f"\nReport: {report}\n        {Path(report).with_suffix('.md')}")
        return Path(report)


def _drop_checkpoints(run_dir: Path) -> None:
    """Remove a finished run's ``checkpoint-N`` folders (weights + optimizer state, about 1.7 GB
    each for the default policy): they only serve to resume, and ``final/`` is written."""
    for ckpt in Path(run_dir).glob("checkpoint-*"):
        if ckpt.is_dir():
            shutil.rmtree(ckpt)


def _relative(path: str | os.PathLike, base: Path) -> str:
    """``path`` relative to the demo folder when inside it (so a moved folder still resumes)."""
    try:
        return str(Path(path).resolve().relative_to(Path(base).resolve()))
    except ValueError:
        return str(path)


def _yaml_float(x: float) -> str:
    """A float as ``--set`` text that YAML reads back as a float (PyYAML reads ``1e-05``, without
    a dot, as a string)."""
    return f"{float(x):.6e}"


def _model_ok(path) -> bool:
    return bool(path) and (Path(path) / "config.json").is_file()


def count_parameters(model_path: str | os.PathLike) -> int:
    """Parameter count of a saved model folder, measured from its weight files (safetensors
    headers: every stored tensor's element count; tied weights are stored once)."""
    from safetensors import safe_open

    files = sorted(Path(model_path).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{model_path}: no *.safetensors weight files")
    n = 0
    for f in files:
        with safe_open(str(f), framework="pt") as fh:
            for k in fh.keys():
                shape = fh.get_slice(k).get_shape()
                size = 1
                for d in shape:
                    size *= int(d)
                n += size
    return n


# --------------------------------------------------------------------------------------------
# Analysis and report


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _num(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def analyse(out: Path) -> dict:
    """FFP/FAR of the three evals and the GRPO-vs-MRPO paired comparison (``out/analysis``)."""
    from medrl.eval.workflows import analyze_runs, compare_run_dirs

    out = Path(out)
    runs = [out / "eval" / m for m in MODELS]
    analyze_runs(runs, out / "analysis" / "ffp", names=[LABELS[m] for m in MODELS])
    comparison = compare_run_dirs(out / "eval" / "grpo", out / "eval" / "mrpo", out / "analysis" / "grpo_vs_mrpo",
                                  names=[LABELS["grpo"], LABELS["mrpo"]])
    t = comparison["paired_table"]
    return {"paired": {k: t[k] for k in ("n", "both_correct", "a_only", "b_only", "both_wrong")}}


#: Training-curve panels: (panel title, log keys tried in order).
TRAIN_PANELS = (
    ("Total reward", ("reward",)),
    ("Answer reward (R_ans)", ("answer_reward", "rewards/mrpo_answer/mean")),
    ("Process reward (mean step validity)", ("process_reward", "rewards/mrpo_process/mean")),
    ("KL to the warm-up model", ("kl",)),
    ("Completion length (tokens)", ("completions/mean_length",)),
    ("Early-FFP share of rollouts", ("ffp/early",)),
)


def training_series(run_dir: Path) -> dict[str, list[tuple[float, float]]]:
    """Per-step series of one training run from its ``metrics.jsonl`` (train-time logs only)."""
    path = Path(run_dir) / "metrics.jsonl"
    series: dict[str, dict[float, float]] = {}
    if not path.is_file():
        return {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by an interruption
        step = row.get("step")
        if step is None or "train_runtime" in row:
            continue
        for k, v in row.items():
            if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool):
                series.setdefault(k, {})[float(step)] = float(v)
    return {k: sorted(v.items()) for k, v in series.items()}


def _eval(out: Path, name: str) -> tuple[dict, list[dict]]:
    from medrl.eval.runner import read_rows

    folder = Path(out) / "eval" / name
    metrics = json.loads((folder / "metrics.json").read_text())
    return metrics, read_rows(folder / "outputs.jsonl")


def summary_text(out: Path) -> str:
    """The accuracy/HSS lines printed at the end of a run."""
    lines = [f"{'model':16s} {'N':>4s}  {'accuracy [95% CI]':24s} {'HSS [95% CI]':24s}"]
    for m in MODELS:
        try:
            metrics, _ = _eval(out, m)
        except FileNotFoundError:
            continue
        d = metrics["datasets"][EVAL_DATASET]
        lines.append(f"{LABELS[m]:16s} {d['n']:4d}  {_ci(d['metrics'].get('judge_binary'), True):24s} "
                     f"{_ci(d['metrics'].get('hss'), False):24s}")
    return "\n".join(lines)


def _ci(m: dict | None, pct: bool) -> str:
    if not m or m.get("mean") is None:
        return "-"
    if pct:
        return f"{100 * m['mean']:.1f} [{100 * m['low']:.1f}, {100 * m['high']:.1f}]"
    return f"{m['mean']:.3f} [{m['low']:.3f}, {m['high']:.3f}]"


def _verdict_mark(v: dict | None) -> str:
    if v is None:
        return "?"
    ok = bool(v.get("gold_alignment") or v.get("answer_contribution"))
    return ("VALID  " if ok else "INVALID") + f" (gold {v.get('gold_alignment')}, answer {v.get('answer_contribution')})"


def example_text(rows_by_model: dict[str, dict], key: str) -> str:
    """One test record's outputs from every model, with the judge's step verdicts."""
    first = next(iter(rows_by_model.values()))[key]
    parts = [f"[{key}] Q: {first['question']}", f"Reference answer: {first['reference']}"]
    for m, rows in rows_by_model.items():
        r = rows.get(key)
        if r is None:
            continue
        c = r.get("scores", {}).get("judge_binary")
        verdict = "unscored" if c is None else ("CORRECT" if c >= 0.5 else "WRONG")
        pred = r.get("prediction") or ""
        pred = pred if len(pred) <= 120 else pred[:117] + "..."
        parts.append(f"\n--- {LABELS.get(m, m)}: answer {pred!r} -> {verdict}")
        steps = r.get("steps") or []
        sv = r.get("step_verdicts")
        if not steps:
            parts.append("    (no reasoning steps)  output: " + (r.get("output") or "")[:300])
        for i, s in enumerate(steps):
            v = sv[i] if sv is not None and i < len(sv) else None
            parts.append(f"    step {i + 1}: {_verdict_mark(v)}  {s['text'][:160]}")
    return "\n".join(parts)


def pick_examples(rows_by_model: dict[str, dict], n: int = 3) -> list[str]:
    """Keys of up to ``n`` test records: first where GRPO and MRPO differ in correctness, then
    where their first failure differs, then the first records (deterministic order)."""
    grpo, mrpo = rows_by_model.get("grpo", {}), rows_by_model.get("mrpo", {})
    keys = [k for k in mrpo if k in grpo]

    def correct(r):
        c = r.get("scores", {}).get("judge_binary")
        return None if c is None else c >= 0.5

    def flags(r):
        sv = r.get("step_verdicts")
        return None if sv is None else [bool(v["gold_alignment"] or v["answer_contribution"]) for v in sv]

    chosen: list[str] = []
    for test in (lambda k: correct(grpo[k]) != correct(mrpo[k]),
                 lambda k: flags(grpo[k]) != flags(mrpo[k]),
                 lambda k: True):
        for k in keys:
            if len(chosen) >= n:
                return chosen
            if k not in chosen and test(k):
                chosen.append(k)
    return chosen


def write_report(out: Path, config: DemoConfig, runner: StageRunner | None = None) -> tuple[Path, Path]:
    """``out/report.md`` and ``out/report.html`` from the stage outputs."""
    from medrl.eval import plots
    from medrl.eval.analysis import STAGES
    from medrl.eval.report import Report, fmt

    out = Path(out)
    fig_dir = out / "figures"
    state = json.loads((out / STATE_FILE).read_text()) if (out / STATE_FILE).is_file() else {"stages": {}}
    stages = state.get("stages", {})
    policy = stages.get("policy", {}).get("result") or {}
    data = stages.get("data", {}).get("result") or {}
    c = config
    evals = {m: _eval(out, m) for m in MODELS}
    n_test = evals["mrpo"][0]["datasets"][EVAL_DATASET]["n"]
    judge_name = evals["mrpo"][0].get("config", {}).get("judge") or c.judge

    rep = Report("medrl demo: what step-aware RL (MRPO) changes over GRPO - a small-scale demonstration")
    params = policy.get("parameters")
    rep.paragraph(
        f"A small-scale demonstration on real VQA-RAD data, not a reproduction of the papers' results: a "
        f"{fmt(params) if params is None else f'{params / 1e6:.1f}M'}-parameter policy "
        f"({'SmolLM2-135M-Instruct language model with a fresh SigLIP vision tower, LLaVA-style' if c.model == 'default' else c.model}) "
        f"trained for minutes on a CPU, where the papers train 3-8B models for hours on GPUs. Every number below "
        f"was measured in this run ({c.mode} settings); with so few steps and test records, differences between "
        f"the models are mostly within the confidence intervals.")
    rep.paragraph(
        f"Pipeline: warm-up SFT -> GRPO and MRPO from the same warm-up model with the same seed ({c.seed}), data "
        f"order and budget -> greedy evaluation of all three on the same {n_test} open-ended VQA-RAD test records. "
        f"Judge: {judge_name}"
        + (" (medrl's offline reference-based judge: a documented heuristic that compares with the reference "
           "answer and the record's evidence; it cannot see the image - point --judge at a strong LLM for real "
           "conclusions)." if c.judge == "reference" else "."))

    # ------------------------------------------------------------ budget
    rep.heading("Model size and budget")
    secs = runner.seconds() if runner else {k: v.get("seconds", 0.0) for k, v in stages.items()}
    cpus = (runner.seconds("cpu_seconds") if runner
            else {k: v.get("cpu_seconds", 0.0) for k, v in stages.items()})

    def t(stage: str) -> list[str]:
        return [_fmt_secs(secs.get(stage, 0)), _fmt_secs(cpus.get(stage, 0))]

    rows = [
        ["Base policy", f"{params:,} parameters (counted from the weight files)" if params else "-",
         policy.get("path", "-"), *t("policy")],
        ["Data", f"VQA-RAD open-ended: {data.get('train', '-')} train records, {data.get('test', '-')} test records",
         data.get("data_root", "-"), *t("data")],
        ["Warm-up SFT", f"{c.sft_steps} steps x {c.sft_batch} records = {c.sft_steps * c.sft_batch} examples, "
         f"full fine-tuning, lr {c.sft_lr:g}", "sft/", *t("sft")],
    ]
    for name in ("grpo", "mrpo"):
        rows.append([LABELS[name], f"{c.rl_steps} steps x {c.rl_prompts} prompt x {c.num_generations} rollouts = "
                     f"{c.rl_steps * c.rl_prompts * c.num_generations} rollouts of <= {c.max_completion_length} tokens, "
                     f"lr {c.rl_lr:g}, KL beta {c.beta:g}, seed {c.seed}", f"{name}/", *t(name)])
    for name in MODELS:
        rows.append([f"Eval {LABELS[name]}", f"{n_test} test records, greedy, <= {c.eval_max_new_tokens} new tokens",
                     f"eval/{name}/", *t(f"eval_{name}")])
    rows.append(["Analysis", "FFP/FAR, paired comparison", "analysis/", *t("analysis")])
    rows.append(["Total", "all stages above (summed over resumed runs)", "",
                 _fmt_secs(sum(v for k, v in secs.items() if k != "report")),
                 _fmt_secs(sum(v for k, v in cpus.items() if k != "report"))])
    rep.table(["Stage", "Budget", "Folder", "Wall time", "CPU time"], rows,
              f"Measured on this machine ({os.cpu_count()} CPU cores{', CUDA' if _cuda() else ''}); CPU time is "
              "summed over this process's threads (on a machine shared with other jobs the wall time grows, the "
              "CPU time much less). Rewards: MRPO Eq. 2-5 (answer + mean step validity + length) for both RL "
              "runs; only the advantage differs (GRPO: one per sequence; MRPO: per token, Eq. 7).")

    # ------------------------------------------------------------ accuracy and HSS
    rep.heading("Accuracy and HSS on the test records")
    body = []
    for m in MODELS:
        d = evals[m][0]["datasets"][EVAL_DATASET]
        unscored = d["metrics"].get("judge_binary", {}).get("unscored", 0)
        body.append([LABELS[m], d["n"], _ci(d["metrics"].get("judge_binary"), True), _ci(d["metrics"].get("hss"), False),
                     fmt(d["well_formed"], pct=True), fmt(d["steps"]["mean_steps"], digits=2),
                     fmt(d["steps"]["valid_step_share"], pct=True), unscored])
    rep.table(["Model", "N", "Judged accuracy (%) [95% CI]", "HSS [95% CI]", "Well-formed (%)", "Mean steps",
               "Valid steps (%)", "Unscored"], body,
              "Mean [95% percentile bootstrap CI]. Accuracy: the judge's binary verdict on the final answer only. "
              "HSS = 0.25 BLEU-1 + 0.25 ROUGE-1 + 0.10 BERTScore + 0.40 embedding cosine (ARMed Eq. 15, offline MiniLM).")
    names = [LABELS[m] for m in MODELS]
    for key, label, fname in (("judge_binary", "Judged accuracy", "accuracy.png"), ("hss", "HSS", "hss.png")):
        ms = [evals[m][0]["datasets"][EVAL_DATASET]["metrics"].get(key, {}) for m in MODELS]
        fig = plots.accuracy_bars(names, [x.get("mean") for x in ms], [x.get("low") for x in ms],
                                  [x.get("high") for x in ms], fig_dir / fname,
                                  ylabel=f"{label} (%)" if key == "judge_binary" else f"{label} (x100)",
                                  title=f"{label} on {n_test} VQA-RAD test records (95% bootstrap CI)")
        rep.figure(fig, f"{label} per model with 95% bootstrap confidence intervals.")

    # ------------------------------------------------------------ FFP / FAR
    ffp_dir = out / "analysis" / "ffp"
    analysis = json.loads((ffp_dir / "analysis.json").read_text())["tables"]
    rep.heading("Where reasoning first fails: FFP stage shares (MRPO Sec. 3, Fig. 3)")
    rep.paragraph("First Failure Point FFP = k/K for the first invalid step k of K (a step is valid when the judge "
                  "finds it aligned with the reference evidence or contributing to the answer; MRPO Eq. 1, 3). "
                  "Stages: early [0, 0.4), mid [0.4, 0.7), late [0.7, 1]. MRPO's claim is that penalising early "
                  "invalid steps moves failures later.")
    rep.table(["Model", "Outputs with steps", "Failed", "No failure", "Early (%)", "Mid (%)", "Late (%)"],
              [[n, t["status"]["analysed"], t["stage_shares"]["n_failed"], t["stage_shares"]["no_ffp"]]
               + [fmt(t["stage_shares"]["shares"][s], pct=True) for s in STAGES] for n, t in analysis.items()],
              "Shares among outputs with a failure point.")
    shares = {n: analysis[n]["stage_shares"]["shares"] for n in (LABELS["grpo"], LABELS["mrpo"]) if n in analysis}
    rep.figure(plots.stage_shares_bars(shares, fig_dir / "ffp_stage_shares.png"),
               "GRPO vs MRPO: share of failed outputs whose first failure is early, mid or late.")
    rep.heading("Failure accumulation after the first failure: FAR curves (MRPO Fig. 1B, Fig. 4)")
    rep.paragraph("FAR = failed steps after the first failure / steps after it, averaged per FFP bin of width 0.2. "
                  "Undefined when the first failure is the last step (such outputs are counted, not averaged).")
    far_rows = []
    for n, t in analysis.items():
        for b in t["far_by_ffp_bin"]:
            far_rows.append([n, b["bin"], b["n"], fmt(b["far"], pct=True)])
    rep.table(["Model", "FFP bin", "N", "FAR (%)"], far_rows)
    rep.figure(plots.far_by_bin_runs({n: t["far_by_ffp_bin"] for n, t in analysis.items()},
                                     fig_dir / "far_curves.png"),
               "FAR across FFP bins for the three models.")
    comp_path = out / "analysis" / "grpo_vs_mrpo" / "comparison.json"
    if comp_path.is_file():
        t = json.loads(comp_path.read_text())["paired_table"]
        rep.table(["GRPO \\ MRPO", "MRPO correct", "MRPO wrong"],
                  [["GRPO correct", t["both_correct"], t["a_only"]], ["GRPO wrong", t["b_only"], t["both_wrong"]]],
                  f"Paired outcomes on the same {t['n']} test records (MRPO App. E.2, Table 11); the full comparison "
                  "with FFP stage transitions is in analysis/grpo_vs_mrpo/report.html.")

    # ------------------------------------------------------------ training curves
    rep.heading("Training curves: rewards and KL (MRPO App. G)")
    panels: dict[str, dict] = {}
    for name in ("grpo", "mrpo"):
        s = training_series(out / name)
        for panel, keys in TRAIN_PANELS:
            key = next((k for k in keys if k in s), None)
            if key:
                panels.setdefault(panel, {})[LABELS[name]] = s[key]
    sft = training_series(out / "sft")
    if "loss" in sft:
        panels = {"Warm-up SFT loss": {"SFT": sft["loss"]}, **panels}
    if panels:
        rep.figure(plots.training_curves(panels, fig_dir / "training_curves.png",
                                         title="Warm-up SFT, then GRPO vs MRPO from the same model (per step)"),
                   "Per-step training logs (metrics.jsonl in each run folder; also TensorBoard under runs/).")
        rep.table(["Curve", "Run", "Steps", "First", "Last", "Mean"],
                  [[p, r, len(v), fmt(v[0][1]), fmt(v[-1][1]), fmt(sum(y for _, y in v) / len(v))]
                   for p, runs in panels.items() for r, v in runs.items() if v])
    else:
        rep.paragraph("No training logs found.", note=True)

    # ------------------------------------------------------------ examples
    rep.heading("Example outputs with step verdicts")
    rows_by_model = {m: {r["key"]: r for r in evals[m][1]} for m in MODELS}
    keys = pick_examples(rows_by_model, 3)
    rep.paragraph("Test records where GRPO and MRPO differ first. Each reasoning step with the judge's verdict "
                  "(gold alignment, answer contribution; valid if either is 1).")
    for k in keys:
        rep.code(example_text(rows_by_model, k))
    rep.paragraph("Per-model details: eval/<model>/report.html; FFP/FAR tables of all three: analysis/ffp/report.html; "
                  "every output with its verdicts: eval/<model>/outputs.jsonl.", note=True)
    glance = [fig_dir / "accuracy.png", fig_dir / "ffp_stage_shares.png", fig_dir / "training_curves.png"]
    summary = summary_figure([g for g in glance if g.is_file()], fig_dir / "summary.png")
    if summary is not None:
        rep.blocks.insert(2, ("h2", "At a glance"))
        rep.blocks.insert(3, ("figure", (summary, "Judged accuracy per model, FFP stage shares GRPO vs MRPO, and the "
                                                  "training curves (details below).")))
    return rep.write(out)


def summary_figure(paths: list[Path], out: Path, width: int = 1200) -> Path | None:
    """The report's figures side by side (first row: all but the last; below: the last, scaled
    to the same width), one PNG for the top of the report and the README."""
    from PIL import Image

    if not paths:
        return None
    ims = [Image.open(p).convert("RGB") for p in paths]
    top, bottom = (ims[:-1], ims[-1]) if len(ims) > 1 else (ims, None)
    h = max(im.height for im in top)
    top = [im.resize((max(1, im.width * h // im.height), h)) for im in top]
    row_w = sum(im.width for im in top)
    scale = width / row_w
    top = [im.resize((max(1, int(im.width * scale)), max(1, int(h * scale)))) for im in top]
    rows_h = top[0].height
    if bottom is not None:
        bottom = bottom.resize((width, max(1, bottom.height * width // bottom.width)))
        rows_h += bottom.height
    canvas = Image.new("RGB", (width, rows_h), "white")
    x = 0
    for im in top:
        canvas.paste(im, (x, 0))
        x += im.width
    if bottom is not None:
        canvas.paste(bottom, (0, top[0].height))
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(out, optimize=True)
    return out


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def run_demo(out: str | os.PathLike, config: DemoConfig, *, data_dir: str | None = None, overwrite: bool = False,
             judge_api_key_env: str = "OPENAI_API_KEY") -> Path:
    """Run (or resume) the demo in ``out``; returns the HTML report path."""
    return Demo(Path(out), config, data_dir=data_dir, overwrite=overwrite,
                judge_api_key_env=judge_api_key_env).run()
