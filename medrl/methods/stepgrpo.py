"""StepGRPO: step-wise reasoning rewards on pre-extracted key steps.

Paper: StepGRPO (arXiv 2503.12937), Sec. 3.2, Eq. 1-6.

Read top to bottom:

1. **Config** (:class:`StepGRPOConfig`, recipe key ``algorithm.stepgrpo``): alpha of StepRAR and
   the step count of StepRVR, which reach the two rewards' options from here (defaults from
   the reward factories).
2. **Rewards** (registry names): ``steprar`` (StepRAR, Eq. 2: the answer's correctness plus
   alpha times the share of the record's key steps the reasoning matches) and ``steprvr``
   (StepRVR, Eq. 3: a reasoning that is complete and logically ordered). Formulas:
   :mod:`medrl.rewards.stepgrpo`.
3. **Hooks**: none. StepRAR reads the trainer's one correctness decision (``batch.correct``);
   the advantage is TRL's group-mean baseline (Eq. 4).
4. **Stage** ``key_steps`` (registered here in :data:`medrl.methods.stages.STAGES`; Sec. 3.2.2):
   the judge pre-extracts each record's key steps, which StepRAR matches. The recipe's pipeline:
   key steps -> warm-up SFT (Eq. 1) -> RL, run by :func:`medrl.train.pipeline.run_recipe`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from pydantic import PositiveInt

from medrl.methods.base import METHODS, Method, MethodConfig, reward_option
from medrl.methods.stages import StageRun, register_stage
from medrl.rewards.stepgrpo import make_steprar, make_steprvr


class StepGRPOConfig(MethodConfig):
    """``algorithm.stepgrpo``: StepGRPO's reward settings; defaults taken from the ``steprar`` /
    ``steprvr`` factories."""

    alpha: float = reward_option(make_steprar, "alpha", ge=0.0, description=(
        "StepGRPO Eq. 2: weight of the key-step match in StepRAR"))
    min_reasoning_steps: PositiveInt = reward_option(make_steprvr, "min_reasoning_steps", description=(
        "StepGRPO Eq. 3: steps a complete reasoning needs"))


@METHODS.register("stepgrpo")
class StepGRPO(Method):
    """StepGRPO: rewards and a key-step stage; no trainer hook."""

    name = "stepgrpo"
    paper = "StepGRPO (arXiv 2503.12937), Sec. 3.2"
    Config = StepGRPOConfig
    section = "stepgrpo"
    rewards = {"steprar": {"alpha": "alpha"}, "steprvr": {"min_reasoning_steps": "min_reasoning_steps"}}
    activated_by = tuple(rewards)


# --------------------------------------------------------------------------------------------
# Stage: key-step extraction (Sec. 3.2.2)


def key_steps_stage(records: Sequence, judge: Any, output_dir: Path, **options: Any) -> list:
    """StepGRPO key steps (StepGRPO Sec. 3.2.2): pre-extract each record's key
    steps with the judge (from the gold reasoning; evidence-based without one, see
    :func:`medrl.data.curation.key_steps.extract_key_steps`). Resumable (``key_steps.jsonl``);
    the records go to ``output_dir/records.jsonl``."""
    from medrl.data import write_jsonl
    from medrl.data.curation.key_steps import extract_key_steps
    from medrl.judges import build_judge

    output_dir.mkdir(parents=True, exist_ok=True)
    out, counts = extract_key_steps(list(records), judge if judge is not None else build_judge("reference"),
                                    results_path=output_dir / "key_steps.jsonl", **options)
    write_jsonl(out, output_dir / "records.jsonl")
    (output_dir / "summary.json").write_text(json.dumps(counts, indent=2))
    return out


@register_stage("key_steps", options_of="medrl.data.curation.key_steps:extract_key_steps",
                fixed=("records", "judge", "results_path"),
                uses_judge=True, help="StepGRPO's key steps: the judge pre-extracts each record's key steps (StepRAR "
                                      "matches them)")
def run_key_steps(run: StageRun) -> None:
    """The ``key_steps`` stage: :func:`key_steps_stage` on the run's records; the records with
    their key steps go on to the next stages. Done before: ``records.jsonl`` is read back."""
    if run.done:
        from medrl.data import read_jsonl

        run.records = read_jsonl(run.folder / "records.jsonl")
        return
    run.records = key_steps_stage(run.records, run.judge, run.folder, **run.options)


__all__ = ["StepGRPO", "StepGRPOConfig", "key_steps_stage", "run_key_steps"]
