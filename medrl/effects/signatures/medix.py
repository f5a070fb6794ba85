"""MediX-R1's signature task: right answers in other words, and a modality read from the image.

The claim (``003_d5d6a0d73a50ab79``, Sec. 1, 2.3 and 4.1, Table 4): exact match "under-rewards
valid clinical paraphrases"; MediX-R1's composite reward - an LLM judge's YES/NO, an embedding
threshold, format and a modality tag - pays right answers in other words and, with its modality
reward, grounds the answer in the image's modality; in Table 4 the composite beats the LLM judge
alone by 4.5 points on image-text tasks.

Task: organ and study questions ("Which organ is shown in this image?", "Which modality, plane
and organ does this image show?"; four modality/organ pairs held out of the train split), answered
in the ``modality_think_answer`` format: a modality tag before ``<think>``. Neither question names
the modality, so the tag must be read from the image.

Planted failures, in the warm-up traces: (1) paraphrases - 40% of the traces give the right answer
in other words ("hepatic parenchyma" for liver, "computed tomography" for CT;
:data:`medrl.judges.phantom_truth.PARAPHRASES`); (2) wrong tags - an independent 30% start with
another modality's tag.

Arms: GRPO with an exact-match answer reward (the answer's words equal the reference's after
lower-casing, :func:`medrl.rewards.lexical.exact_match`; with MediX-R1's format weight: 0.1 format
+ 0.9 exact match) against MediX-R1's composite reward (``medix_r1``; its judge is the oracle).

Metric: accuracy judged on meaning by the oracle (sampled); beside it the share of right answers
given in other words (paraphrases kept), modality-tag accuracy and accuracy on the held-out
combinations.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from medrl.effects.signatures.armed import HELD_OUT
from medrl.effects.signatures.base import Arm, Signature, pick

#: share of the traces that start with another modality's tag (independent of the paraphrases)
WRONG_TAG_SHARE = 0.3


def paraphrase(answer: str) -> str:
    """``answer`` with every modality and organ value in other words (a clinician's wording)."""
    from medrl.judges.phantom_truth import PARAPHRASES

    out = answer
    for value, other in sorted(PARAPHRASES.items(), key=lambda kv: -len(kv[0])):
        out = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", other, out)
    return out


def paraphrase_traces(records: Sequence[Any], *, seed: int, share: float, config: Any = None) -> list:
    """Gold traces; ``share`` of them (a seeded choice) answer in other words, and an independent
    :data:`WRONG_TAG_SHARE` start with another modality's tag."""
    import numpy as np

    from medrl.common.modality import modality_to_tag
    from medrl.data.sources.phantom import make_trace
    from medrl.judges.phantom_truth import MODALITIES, answer_of, gold_steps, phantom_params

    rng = np.random.default_rng([abs(int(seed)), 7373])
    para = pick(len(records), share, rng)
    wrong_tag = pick(len(records), WRONG_TAG_SHARE, rng)
    out = []
    for i, r in enumerate(records):
        p = phantom_params(r)
        planted, answer, tag = [], answer_of(p), None
        if i in para:
            answer = paraphrase(answer)
            planted.append("paraphrase")
        if i in wrong_tag:
            tag = modality_to_tag(str(rng.choice([m for m in MODALITIES if m != p["modality"]])))
            planted.append("wrong_tag")
        out.append(make_trace(r, gold_steps(p), answer, planted=tuple(planted), tag=tag))
    return out


SIGNATURE = Signature(
    name="medix",
    paper="MediX-R1 (003_d5d6a0d73a50ab79)",
    claim="a composite reward (LLM judge + embedding + format + modality tag) beats brittle exact match on "
          "open-ended answers and grounds the modality (Sec. 1, 2.3, 4.1; Table 4)",
    task="organ and study questions in the tagged format; the modality tag must be read from the image (4 "
         "modality/organ pairs held out of training)",
    failure="paraphrased right answers (open-ended answers) and wrong modality tags",
    planted="paraphrases: 40% of warm-up traces answer right in other words; wrong tags: an independent 30% start "
            "with another modality's tag",
    share=0.4,
    phantom={"question_types": ("organ", "study"), "held_out": HELD_OUT},
    baseline=Arm("grpo_exact", "medix_r1", "GRPO (exact-match answer reward)",
                 rewards=({"name": "format", "weight": 0.1}, {"name": "exact_match", "weight": 0.9}),
                 log_answer="exact_match"),
    method=Arm("medix_r1", "medix_r1", "MediX-R1 (composite reward)"),
    metric="accuracy",
    metric_label="accuracy (judged on meaning)",
    secondary=("paraphrase_kept", "tag_accuracy", "held_out_accuracy"),
    style="modality_think_answer",
    paper_gain=0.045,
    paper_gain_note="the composite over the LLM judge alone on image-text tasks (Table 4; the paper has no "
                    "exact-match arm)",
    temperature=1.0,
    make_traces=paraphrase_traces,
)
