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
                (``recipes/mrpo.yaml``: step-aware token advantages, MRPO Eq. 7).
                Both RL stages log every step's rollouts with their token advantages
                (``credit.jsonl``, :mod:`medrl.train.credit`).
6. ``eval_*``   warm-up, GRPO and MRPO models on the same test records (:func:`medrl.eval.runner.run_eval`:
                judged accuracy, HSS, step verification), resumable per record.
7. ``report``   one report (Markdown + self-contained HTML, PNG figures): accuracy and HSS with
                95% bootstrap CIs, "What MRPO changed" (token-level credit of real rollouts, advantage
                by step position, paired statistics), FFP stage shares, FAR curves, reward/KL curves,
                examples with step verdicts, the judge and its measured agreement, the model size and
                the budget - measured numbers only.

``state.json`` in the output folder records the settings, and per stage whether it finished and
the wall time it took (summed over resumed runs). Rerunning the same command after an
interruption skips finished stages, resumes training from its last checkpoint and evaluation
from its last saved record. A folder made with other settings is refused (``--overwrite``
starts it over).

Modules: :mod:`.settings` (what decides the numbers), :mod:`.stages` (state.json bookkeeping),
:mod:`.pipeline` (the stages), :mod:`.report` and :mod:`.mrpo_changed` (the report).
The command line is :mod:`medrl.commands.demo`.
"""

from medrl.commands.demo_pipeline.pipeline import Demo, analyse, count_parameters, run_demo
from medrl.commands.demo_pipeline.report import (
    example_text,
    pick_examples,
    summary_text,
    training_series,
    write_report,
)
from medrl.commands.demo_pipeline.settings import (
    EVAL_DATASET,
    LABELS,
    MODELS,
    QUICK,
    STATE_FILE,
    DemoConfig,
    make_config,
)
from medrl.commands.demo_pipeline.stages import DemoStateMismatch, StageRunner

__all__ = [
    "EVAL_DATASET", "LABELS", "MODELS", "QUICK", "STATE_FILE", "Demo", "DemoConfig", "DemoStateMismatch",
    "StageRunner", "analyse", "count_parameters", "example_text", "make_config", "pick_examples", "run_demo",
    "summary_text", "training_series", "write_report",
]
