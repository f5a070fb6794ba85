"""ARMed's signature task: reward collapse on open-ended answers that name several attributes.

The claim (``001_46ab1c0cc2c66f17``, "Reward Collapse", Fig. 3-4): a static semantic reward
(BERTScore, embedding cosine) scores right and wrong open-ended answers about alike (in the paper
BERTScore has mean 0.986 and variance 0.029, cosine 0.903 and 0.045), so GRPO with it learns no
more than GRPO with the correctness reward alone (GRPO-wo-semantic, Fig. 4); ARMed's adaptive
reward (Eq. 5-13) restores the spread, and ARMed-I beats the best baseline by 1.1 pp in-domain.

Task: ``study`` questions ("Which modality, plane and organ does this image show?") answered in
words ("axial CT of the liver"), 4 x 2 x 4 answers, four modality/organ pairs held out of the
train split (the test split asks about them: held-out answer combinations). A wrong answer shares
most of its words with the right one ("axial CT of the kidneys"), which is where a static
semantic reward collapses.

Planted failure: near misses. A stated share (40%) of the warm-up traces get one attribute wrong
(modality, plane or organ, a seeded choice), stated in its step and carried into the answer; the
warm-up model imitates them when it samples, so its rollouts offer right answers and near misses
side by side.

Arms (the comparison of Fig. 4), with the same seed, data order and budget: GRPO-wo-semantic
(``armed_ablation_nosemantic``: textual correctness and format), GRPO with the raw semantic
reward (``armed_ablation_raw``), ARMed-I (``armed``, its first RL stage). Sampled at the paper's
temperature 0.7.

Metric: attribute-level accuracy (the share of the three attributes the answer states right,
sampled); beside it exact accuracy, and the raw and adaptive semantic rewards' mean and variance
over the ARMed run's rollouts (the paper's Fig. 3 numbers) and the within-group spread of the
training reward (TRL's ``reward_std``).
"""

from __future__ import annotations

from typing import Any, Sequence

from medrl.effects.signatures.base import Arm, Signature, pick

#: modality/organ pairs the train split never asks a study question about (each modality and each
#: organ once)
HELD_OUT = ("CT/heart", "MRI/kidneys", "X-ray/brain", "ultrasound/liver")
#: the attributes a near miss gets wrong (one of them, a seeded choice)
NEAR_MISS_FIELDS = ("modality", "plane", "organ")


def near_miss_traces(records: Sequence[Any], *, seed: int, share: float, config: Any = None) -> list:
    """Gold traces, except ``share`` of them (a seeded choice) with one attribute wrong in its
    step and in the answer (a near miss)."""
    import numpy as np

    from medrl.data.sources.phantom import change_field, make_trace
    from medrl.judges.phantom_truth import answer_of, gold_steps, phantom_params

    rng = np.random.default_rng([abs(int(seed)), 4242])
    wrong = pick(len(records), share, rng)
    out = []
    for i, r in enumerate(records):
        p = phantom_params(r)
        if i in wrong:
            fld = str(rng.choice(NEAR_MISS_FIELDS))
            q, val = change_field(p, fld, rng, config)
            out.append(make_trace(r, gold_steps(q), answer_of(q), planted=("near_miss",), error_field=fld,
                                  error_value=val))
        else:
            out.append(make_trace(r, gold_steps(p), answer_of(p)))
    return out


SIGNATURE = Signature(
    name="armed",
    paper="ARMed (001_46ab1c0cc2c66f17)",
    claim="the adaptive semantic reward breaks reward collapse: ARMed-I beats GRPO with the raw semantic reward "
          "and GRPO-wo-semantic (Sec. 'Reward Collapse', Fig. 3-4)",
    task="study questions answered with three attributes (modality, plane, organ; 32 answers, 4 modality/organ "
         "pairs held out of training)",
    failure="reward collapse",
    planted="near misses: 40% of warm-up traces state one attribute wrong and carry it into the answer",
    share=0.4,
    phantom={"question_types": ("study",), "held_out": HELD_OUT},
    baseline=Arm("armed_ablation_raw", "armed_ablation_raw", "GRPO + raw semantic reward"),
    others=(Arm("armed_ablation_nosemantic", "armed_ablation_nosemantic", "GRPO-wo-semantic"),),
    method=Arm("armed", "armed", "ARMed-I (adaptive semantic reward)"),
    metric="attribute_accuracy",
    metric_label="attribute-level accuracy",
    secondary=("accuracy", "held_out_accuracy"),
    paper_gain=0.011,
    paper_gain_note="ARMed-I over the best baseline, in-domain average accuracy (Fig. 4)",
    temperature=0.7,
    make_traces=near_miss_traces,
)
