"""StepGRPO's signature task: a sparse answer reward on questions that take several steps.

The claim (``004_e0b907c1e61319f8``, Sec. 1, Fig. 1 and Table 4): when a small model's rollouts
are rarely right, an outcome-level reward is sparse (few rollouts get any reward), and dense
step-wise rewards - StepRAR's key-step matching (Eq. 2) and StepRVR's structure check (Eq. 3) -
learn more: warm-up + step-wise reward 63.5 against warm-up + outcome-level reward 62.3 on
MathVista (Table 4).

Task: ``study`` questions whose answer needs three readings of the image in turn (modality,
plane, organ: "axial CT of the liver"), each a key step of the gold reasoning
(:func:`medrl.judges.phantom_truth.key_steps_of`), four modality/organ pairs held out of the train
split.

Planted failure: a sparse reward. In the warm-up traces each of the three attributes is wrong
with probability 0.42, independently (stated in its step and carried into the answer), so only
about a fifth of the traces ((1 - 0.42)^3 = 19.5%) are right throughout and the warm-up model's
sampled answers are rarely right; most of its rollouts state some key steps right.

Arms (Table 4): GRPO with the outcome-level reward (``stepgrpo_ablation_outcome``: 1 if the answer
is right, else 0) against StepGRPO (``stepgrpo``: StepRAR + StepRVR), both at the paper's
temperature 1.2.

Metric: sampled accuracy at the end; beside it the steps each arm takes to reach the warm-up's
sampled accuracy plus 10 points on the learning curve (every 10 steps; stated before the runs), key-step coverage
(k = matched / |v|) and attribute-level accuracy.
"""

from __future__ import annotations

from typing import Any, Sequence

from medrl.effects.signatures.armed import HELD_OUT
from medrl.effects.signatures.base import Arm, Signature

#: the attributes a trace may get wrong, each independently, in the order the chain states them
FIELDS = ("modality", "plane", "organ")
#: the learning-curve target: the warm-up's sampled accuracy plus this many points
REACH = 0.10


def sparse_traces(records: Sequence[Any], *, seed: int, share: float, config: Any = None) -> list:
    """Traces in which each of the three attributes is wrong with probability ``share``,
    independently (a wrong modality also renames the plane in its own vocabulary)."""
    import numpy as np

    from medrl.data.sources.phantom import change_field, make_trace
    from medrl.judges.phantom_truth import answer_of, gold_steps, phantom_params

    rng = np.random.default_rng([abs(int(seed)), 6262])
    out = []
    for r in records:
        p = q = phantom_params(r)
        wrong = [f for f in FIELDS if rng.random() < share]
        for f in wrong:
            q, _ = change_field(q, f, rng, config)
        if wrong and answer_of(q) == answer_of(p):  # cannot happen: every change renames an attribute
            raise AssertionError(f"stepgrpo signature: the errors on {r.id} left the answer right")
        out.append(make_trace(r, gold_steps(q), answer_of(q), planted=("wrong_attribute",) if wrong else (),
                              error_field=",".join(wrong) or None))
    return out


SIGNATURE = Signature(
    name="stepgrpo",
    paper="StepGRPO (004_e0b907c1e61319f8)",
    claim="dense step-wise rewards (StepRAR + StepRVR) learn more than an outcome-level reward when rollouts are "
          "rarely right (Sec. 1, Fig. 1, Table 4)",
    task="study questions needing three readings (modality, plane, organ) with annotated key steps; 4 modality/organ "
         "pairs held out of training",
    failure="sparse reward",
    planted="each of the three attributes wrong in 42% of warm-up traces, independently (19.5% of traces right "
            "throughout)",
    share=0.42,
    phantom={"question_types": ("study",), "held_out": HELD_OUT},
    baseline=Arm("stepgrpo_ablation_outcome", "stepgrpo_ablation_outcome", "GRPO (outcome-level reward)"),
    method=Arm("stepgrpo", "stepgrpo", "StepGRPO (StepRAR + StepRVR)"),
    metric="accuracy",
    metric_label="accuracy",
    secondary=("key_step_coverage", "attribute_accuracy", "held_out_accuracy"),
    paper_gain=0.012,
    paper_gain_note="warm-up + step-wise reward over warm-up + outcome-level reward on MathVista (Table 4)",
    temperature=1.2,
    budget={"curve_every": 10},
    make_traces=sparse_traces,
)
