"""The demo's stages in order: data, policy, warm-up SFT, GRPO and MRPO, three evaluations,
the analysis and the report (see the package docstring)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from medrl.commands.demo_pipeline.settings import EVAL_DATASET, LABELS, MODELS, DemoConfig, default_settings
from medrl.commands.demo_pipeline.stages import StageRunner

TOTAL_STAGES = 11


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
        self.runner = StageRunner(self.out, self.config.to_dict(), overwrite=self.overwrite, echo=self.echo,
                                  defaults=default_settings())
        self._judge = None

    # ---------------------------------------------------------------- helpers
    def judge(self):
        if self._judge is None:
            from medrl.judges import build_judge

            c = self.config
            cache = self.out / "judge_cache.sqlite" if c.judge.startswith("openai") else None
            self._judge = build_judge(c.judge, base_url=c.judge_base_url, api_key_env=self.judge_api_key_env,
                                      cache_path=cache, images=c.judge_images,
                                      image_max_side=c.judge_image_max_side)
        return self._judge

    def load_data(self) -> tuple[list, list]:
        """(train, test) open-ended VQA-RAD records; FileNotFoundError with DATA_HELP if absent."""
        from medrl.data import load_records
        from medrl.common.paths import DATA_HELP, data_root

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

    def sft_options(self) -> dict:
        """Options of the warm-up SFT stage (full fine-tuning: the fresh vision tower and the
        projector must learn too)."""
        import torch

        c = self.config
        options = {
            "lora": None, "max_steps": c.sft_steps, "per_device_train_batch_size": c.sft_batch,
            "gradient_accumulation_steps": 1, "learning_rate": c.sft_lr, "lr_scheduler_type": "linear",
            "logging_steps": 1, "save_steps": c.sft_save_steps, "save_total_limit": 1, "seed": c.seed,
            "max_length": 512, "dataloader_num_workers": 0,
        }
        if not torch.cuda.is_available():
            options["use_cpu"] = True
        return options

    def stage_sft(self, base: str) -> str:
        from medrl.train.sft import train_sft

        final = train_sft(base, self._train, self.out / "sft", prompt_style="think_answer",
                          options=self.sft_options(), resume=True)
        _drop_checkpoints(self.out / "sft")
        return str(final)

    def rl_overrides(self) -> list[str]:
        """``--set`` overrides shared by the GRPO and MRPO stages: same seed, data order, budget;
        the offline MiniLM stands in for the papers' encoders. Every step logs all its rollouts'
        token advantages (``credit.jsonl``, for the report)."""
        import torch

        c = self.config
        cpu = not torch.cuda.is_available()
        batch = c.num_generations * c.rl_prompts
        return [
            f"grpo.max_steps={c.rl_steps}",
            "grpo.num_train_epochs=1",
            f"grpo.num_generations={c.num_generations}",
            f"grpo.per_device_train_batch_size={batch}",
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
            "encoders.substitute=true",  # the offline MiniLM for the papers' encoders, whatever the env says
            "data.max_pixels=802816",  # MRPO's official pixel cap, for both stages: only the advantage differs
            "algorithm.log_credit_every=1",
            f"algorithm.log_credit_rollouts={batch}",
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

        from medrl.commands.demo_pipeline.report import num, pct

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
        self.echo(f"    {LABELS[name]}: accuracy {pct(acc.get('mean'))}, HSS {num(hss.get('mean'))} "
                  f"on {metrics['datasets'][EVAL_DATASET]['n']} records")
        return {"accuracy": acc.get("mean"), "hss": hss.get("mean")}

    # ---------------------------------------------------------------- run
    def run(self) -> Path:
        c = self.config
        self.echo(f"medrl demo ({c.mode}): output folder {self.out}  (state: {self.runner.path})")
        self.write_run_config()
        sft_final = self._prepare()
        self._train_rl(sft_final)
        self._evaluate({"warmup": sft_final, "grpo": self.out / "grpo" / "final", "mrpo": self.out / "mrpo" / "final"})
        from medrl.commands.demo_pipeline.phantom import run_stage

        run_stage(self, 9, TOTAL_STAGES)  # GRPO vs MRPO over seeds on phantoms (known truth)
        return self._analyse_and_report()

    def write_run_config(self) -> Path:
        """``<out>/config.yaml`` with the demo's settings and its generation settings, in the
        layout ``medrl train`` writes: ``medrl eval --model <out>/grpo/final`` (or the warm-up,
        or MRPO) then generates with the demo's completion length, not eval's 1,024-token default
        (:func:`medrl.eval.runner.trained_completion_length` reads the model folder's parents)."""
        import yaml

        c = self.config
        cfg = {"recipe": {"name": f"demo ({c.mode})", "grpo": {"max_completion_length": c.max_completion_length}},
               "demo": c.to_dict(),
               "generation": {"max_new_tokens": c.eval_max_new_tokens, "temperature": 0.0,
                              "prompt_style": "think_answer"}}
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / "config.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return path

    def _prepare(self) -> Path:
        """Stages 1-3: data, base policy, warm-up SFT; returns the warm-up model folder."""
        r, c = self.runner, self.config
        r.run(1, TOTAL_STAGES, "data", "Load VQA-RAD open-ended train/test records", self.stage_data)
        if not hasattr(self, "_train"):
            self._train, self._test = self.load_data()
        self.echo(f"    {len(self._train)} train / {len(self._test)} test records")
        policy = r.run(2, TOTAL_STAGES, "policy", f"Build the base policy ({c.model})", self.stage_policy,
                       is_done=lambda: _model_ok(r.info("policy").get("result", {}).get("path")))
        sft_final = self.out / "sft" / "final"
        r.run(3, TOTAL_STAGES, "sft", f"Warm-up SFT: {c.sft_steps} steps x {c.sft_batch} records, lr {c.sft_lr:g}",
              lambda: self.stage_sft(policy["path"]), is_done=lambda: _model_ok(sft_final))
        return sft_final

    def _train_rl(self, sft_final: Path) -> None:
        """Stages 4-5: GRPO and MRPO from the same warm-up model."""
        c = self.config
        desc = (f"{c.rl_steps} steps x {c.rl_prompts} prompt(s) x {c.num_generations} rollouts "
                f"(<= {c.max_completion_length} tokens), lr {c.rl_lr:g}, beta {c.beta:g}, seed {c.seed}")
        for i, name in ((4, "grpo"), (5, "mrpo")):
            final = self.out / name / "final"
            self.runner.run(i, TOTAL_STAGES, name, f"{LABELS[name]}: {desc}",
                            lambda n=name: self.stage_rl(n, str(sft_final)), is_done=lambda f=final: _model_ok(f))

    def _evaluate(self, models: dict[str, Path]) -> None:
        """Stages 6-8: the three models on the same test records."""
        c = self.config
        for i, name in enumerate(MODELS, start=6):
            folder = self.out / "eval" / name
            self.runner.run(
                i, TOTAL_STAGES, f"eval_{name}",
                f"Evaluate {LABELS[name]} on {len(self._test)} test records (greedy, <= {c.eval_max_new_tokens} tokens)",
                lambda n=name: self.stage_eval(n, str(models[n])), is_done=lambda f=folder: (f / "metrics.json").is_file())

    def _analyse_and_report(self) -> Path:
        """Stages 9-10; the report is always rewritten (it states the wall times, this run's too)."""
        from medrl.commands.demo_pipeline.report import summary_text, write_report

        r = self.runner
        r.run(10, TOTAL_STAGES, "analysis", "Analyse reasoning (FFP/FAR), training curves",
              lambda: analyse(self.out), is_done=lambda: (self.out / "analysis" / "ffp" / "analysis.json").is_file())
        report = r.run(11, TOTAL_STAGES, "report", "Write the report",
                       lambda: str(write_report(self.out, self.config, r)[1]), is_done=lambda: False)
        self.echo("\n" + summary_text(self.out))
        self.echo(f"\nReport: {report}\n        {Path(report).with_suffix('.md')}")
        return Path(report)


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


def run_demo(out: str | os.PathLike, config: DemoConfig, *, data_dir: str | None = None, overwrite: bool = False,
             judge_api_key_env: str = "OPENAI_API_KEY") -> Path:
    """Run (or resume) the demo in ``out``; returns the HTML report path."""
    return Demo(Path(out), config, data_dir=data_dir, overwrite=overwrite,
                judge_api_key_env=judge_api_key_env).run()


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
                size = 1
                for d in fh.get_slice(k).get_shape():
                    size *= int(d)
                n += size
    return n


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
