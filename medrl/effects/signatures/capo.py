"""CAPO's signature task: a language shortcut, and reasoning that does not lead to the answer.

The claim (``002_37d042df30c2f660``, Sec. 1 and 3.2, Table 4): RL with an accuracy reward alone
leaves two failures in place - reasoning that follows the question's wording instead of the image
(a language prior, exposed by rollouts on corrupted images) and answers that do not follow from
their reasoning - and CAPO's perceptual-consistency (Eq. 3) and reasoning-answer consistency
(Eq. 1) rewards remove them: in Table 4 the full reward beats its accuracy-only ablation by 4.4 pp
on VQA-RAD.

Task: modality and organ questions worded with a clinical context that suggests an answer
("What imaging modality was used for this emergency image?": emergency suggests CT;
:data:`medrl.data.sources.phantom.CUE_WORDS`). In the train split the wording suggests the right
answer for 80% of the records (the prior); in the test split for half, so the other half are
counter-prior records, where only the image gives the answer.

Planted failures, in the warm-up traces: (1) the shortcut - on 75% of the counter-prior train
records the trace reads the answer from the wording (its first step states the suggested value,
carried into the answer), so the warm-up model learns the prior; (2) inconsistency - 20% of the
other traces end with an answer their reasoning does not conclude (half a right reasoning with a
wrong answer, half a reasoning concluding a wrong value with the right answer).

Arms (CAPO Fig. 4): GRPO with CAPO's accuracy and format rewards (``capo_grpo``) against CAPO
(``capo``: R_DAR + R_CDR + R_PCR, corrupted-image rollouts at the recipe's diffusion step).

Metric: accuracy on the counter-prior test records (sampled); beside it reasoning-answer
consistency (the oracle's reading of CAPO's Eq. 1 criterion), the accuracy drop on
diffusion-corrupted test images (greedy: the reliance on the image) and accuracy on the
prior-consistent records.
"""

from __future__ import annotations

from typing import Any, Sequence

from medrl.effects.signatures.base import Arm, Signature, pick

#: share of the other traces (not shortcuts) whose answer does not follow from their reasoning
INCONSISTENT_SHARE = 0.2


def shortcut_traces(records: Sequence[Any], *, seed: int, share: float, config: Any = None) -> list:
    """Gold traces, except: ``share`` of the counter-prior records (a seeded choice) answer what
    the wording suggests (``shortcut``), and :data:`INCONSISTENT_SHARE` of the rest end with an
    answer their reasoning does not conclude (``inconsistent``)."""
    import numpy as np

    from medrl.data.sources.phantom import change_field, counter_prior, make_trace
    from medrl.judges.phantom_truth import answer_of, gold_steps, phantom_params

    rng = np.random.default_rng([abs(int(seed)), 5151])
    params = [phantom_params(r) for r in records]
    counter = [i for i, p in enumerate(params) if counter_prior(p)]
    shortcut = {counter[j] for j in pick(len(counter), share, rng)}
    rest = [i for i in range(len(records)) if i not in shortcut]
    bad = {rest[j] for j in pick(len(rest), INCONSISTENT_SHARE, rng)}
    out = []
    for i, (r, p) in enumerate(zip(records, params)):
        fld = p["question_type"]  # modality or organ: the field the wording suggests
        if i in shortcut:
            q, val = change_field(p, fld, rng, config, value=p["cue"])
            out.append(make_trace(r, gold_steps(q), answer_of(q), planted=("shortcut",), error_field=fld,
                                  error_value=val))
        elif i in bad:
            q, val = change_field(p, fld, rng, config)
            if rng.random() < 0.5:  # a right reasoning, a wrong answer
                steps, answer = gold_steps(p), answer_of(q)
            else:  # a reasoning concluding a wrong value, the right answer
                steps, answer = gold_steps(q), answer_of(p)
            out.append(make_trace(r, steps, answer, planted=("inconsistent",), error_field=fld, error_value=val))
        else:
            out.append(make_trace(r, gold_steps(p), answer_of(p)))
    return out


SIGNATURE = Signature(
    name="capo",
    paper="CAPO (002_37d042df30c2f660)",
    claim="perceptual and reasoning-answer consistency rewards beat an accuracy reward alone where the question's "
          "wording misleads (Sec. 1, 3.2; Table 4)",
    task="modality and organ questions whose wording suggests the answer for 80% of train records (a language "
         "prior) and for half of the test records (the other half counter-prior)",
    failure="language shortcut (a prior in the wording) and reasoning-answer inconsistency",
    planted="the shortcut: 75% of the counter-prior warm-up traces answer what the wording suggests; "
            "inconsistency: 20% of the other traces end with an answer their reasoning does not conclude",
    share=0.75,
    phantom={"question_types": ("modality", "organ"), "cue_prior": 0.8, "cue_prior_test": 0.5},
    baseline=Arm("capo_grpo", "capo_grpo", "GRPO (accuracy + format)"),
    method=Arm("capo", "capo", "CAPO"),
    metric="counter_prior_accuracy",
    metric_label="accuracy on counter-prior records",
    secondary=("consistency", "corruption_drop", "accuracy", "prior_accuracy"),
    paper_gain=0.044,
    paper_gain_note="CAPO's full reward over its accuracy-only row on VQA-RAD (Table 4)",
    temperature=1.0,
    make_traces=shortcut_traces,
)
