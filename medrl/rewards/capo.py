"""CAPO rewards (CAPO paper, Sec. 3.2, Eq. 2-4).

- Decision accuracy, Eq. 2: R_DAR(o_i) = r_dar (0.8) if o_i is correct, else 0.
- Perceptual-cognitive consistency, Eq. 3: R_PCR(o_i, o~_i) = r_pcr (0.1) if
  R_DAR(o_i) - R_DAR(o~_i) > tau_pcr (0.3), else 0, where o~_i answers the same question on the
  corrupted image. With r_dar = 0.8 this pays exactly when o_i is right and o~_i is wrong.
- Total, Eq. 4: R_CAPO = R_PCR + R_CDR + R_DAR. R_CDR (Eq. 1, an LLM judge) is
  ``capo_consistency`` in :mod:`medrl.rewards.judged`; in training the three are TRL rewards
  with weight 1 each, whose sum is Eq. 4.

Correctness (open-ended answers are our extension; the paper evaluates closed questions):
the one per-rollout decision of :mod:`medrl.rewards.correctness`. In training the trainer
computes it once per rollout (recipe key ``algorithm.correctness``, judge for open-ended
records by default) and passes it as the ``correct`` column, and once per corrupted rollout
as ``corrupted_correct``; R_DAR and R_PCR read both, so a rollout is never judged twice.
Called without those columns (plain code, tests) they use the ``"exact"`` decision: the shared
answer guard, then a normalised match (``rule``/``threshold`` configurable).

Guard (project addition): before Eq. 2-3, every rollout's answer goes through
:func:`medrl.rewards.base.answer_rejection` (shape guard, then hard mismatch: polarity,
laterality, number/unit, organ, second finding, list, hedge); a rejected answer counts as
not correct, whatever the judge said, so it earns what a committed wrong answer earns (R_DAR = 0,
no R_PCR). The corrupted rollout's correctness is not guarded (a guard can only lower it, which
could only raise R_PCR).

Pairing for R_PCR (project choice; the paper writes o_i with o~_i): completion row i is paired
with the i-th corrupted rollout, given by the trainer as the ``corrupted_completions`` column,
aligned with the completions (rollout g of a prompt on the original image with rollout g of
the same prompt on the corrupted image). Their correctness comes from a
``corrupted_correct`` column when given, else from the same heuristic. Corrupted rollouts are
only scored, never trained on.
"""

from __future__ import annotations

from medrl.answers.completion import parse_response
from medrl.rewards import REWARDS
from medrl.rewards.base import (Reward, column, document_options, guard_correct, parse_all, reference_text, texts_of,
                               unreadable_rows)
from medrl.rewards.correctness import CORRECTNESS_OPTION_HELP, batch_correct, check_rule
from medrl.types import UNSCORABLE  # correctness undecided (judge outage, no reference): excluded

R_DAR, R_PCR, TAU_PCR = 0.8, 0.1, 0.3

#: the column (and ``medrl.methods.MedBatch`` field) holding the paired corrupted rollouts
CORRUPTED_COMPLETIONS = "corrupted_completions"


def decision_accuracy_reward(correct: bool, r_dar: float = R_DAR) -> float:
    """CAPO Eq. 2: r_dar if the answer is correct, else 0."""
    return r_dar if correct else 0.0


def perception_consistency_reward(correct: bool, corrupted_correct: bool, r_dar: float = R_DAR,
                                  r_pcr: float = R_PCR, tau: float = TAU_PCR) -> float:
    """CAPO Eq. 3: r_pcr if R_DAR(o) - R_DAR(o~) > tau, else 0."""
    gap = decision_accuracy_reward(correct, r_dar) - decision_accuracy_reward(corrupted_correct, r_dar)
    return r_pcr if gap > tau else 0.0


def total_reward(r_pcr: float, r_cdr: float, r_dar: float) -> float:
    """CAPO Eq. 4: R_PCR + R_CDR + R_DAR."""
    return r_pcr + r_cdr + r_dar


def accuracy_batch(completions, columns, *, reward="capo_accuracy", r_dar=R_DAR,
                   rule="normalized_match", threshold=0.5, use_correct_column=True) -> list[float | None]:
    """Batch function of the ``capo_accuracy`` reward."""
    n = len(completions)
    refs = [reference_text(r) for r in column(columns, "answer", n, reward=reward)]
    parsed = parse_all(completions)
    answers = [p.answer for p in parsed]
    correct = batch_correct(answers, refs, columns, use_column=use_correct_column, rule=rule, threshold=threshold,
                            reward=reward)
    correct = guard_correct(parsed, refs, correct, columns, reward=reward)
    return [UNSCORABLE if c is None else decision_accuracy_reward(c, r_dar) for c in correct]


def perception_batch(completions, columns, *, reward="capo_perception", r_dar=R_DAR, r_pcr=R_PCR,
                     tau=TAU_PCR, rule="normalized_match", threshold=0.5,
                     use_correct_column=True) -> list[float | None]:
    """Batch function of the ``capo_perception`` reward."""
    n = len(completions)
    corrupted = column(columns, CORRUPTED_COMPLETIONS, n, required=True, reward=reward)
    refs = [reference_text(r) for r in column(columns, "answer", n, reward=reward)]
    opts = dict(use_column=use_correct_column, rule=rule, threshold=threshold, reward=reward)
    parsed = parse_all(completions)
    answers = [p.answer for p in parsed]
    ok = guard_correct(parsed, refs, batch_correct(answers, refs, columns, **opts), columns, reward=reward)
    parsed_c = [parse_response(t) for t in texts_of(corrupted)]
    ok_c = batch_correct([p.answer for p in parsed_c], refs, columns, column_name="corrupted_correct", **opts)
    for i in unreadable_rows(parsed_c, refs):
        ok_c[i] = None  # the corrupted-image rollout has no one answer (two answer blocks, text after it)
    return [UNSCORABLE if a is None or b is None or c is None
            else perception_consistency_reward(a, b, r_dar, r_pcr, tau)
            for a, b, c in zip(ok, ok_c, corrupted)]


@REWARDS.register("capo_accuracy")
def make_capo_accuracy(*, r_dar: float = R_DAR, rule: str = "normalized_match",
                       threshold: float = 0.5, use_correct_column: bool = True) -> Reward:
    """R_DAR (Eq. 2); ``None`` for rows with neither a verdict nor a reference."""
    check_rule(rule)
    # reads the trainer's ``correct`` column (the one correctness decision) unless told not to
    return Reward("capo_accuracy", accuracy_batch, reads=("correct",) if use_correct_column else (), r_dar=r_dar,
                  rule=rule, threshold=threshold, use_correct_column=use_correct_column)


document_options(make_capo_accuracy, r_dar="CAPO Eq. 2: R_DAR of a correct answer", **CORRECTNESS_OPTION_HELP)


@REWARDS.register("capo_perception")
def make_capo_perception(*, r_dar: float = R_DAR, r_pcr: float = R_PCR, tau: float = TAU_PCR,
                         rule: str = "normalized_match", threshold: float = 0.5,
                         use_correct_column: bool = True) -> Reward:
    """R_PCR (Eq. 3). Needs the ``corrupted_completions`` column from the trainer (a clear
    error otherwise); ``None`` where a corrupted rollout is missing or either rollout's
    correctness is undecidable."""
    check_rule(rule)
    return Reward("capo_perception", perception_batch,
                  reads=("correct", "corrupted_correct") if use_correct_column else (), r_dar=r_dar, r_pcr=r_pcr,
                  tau=tau, rule=rule, threshold=threshold, use_correct_column=use_correct_column)


document_options(make_capo_perception, r_dar="CAPO Eq. 3: the R_DAR values compared (as Eq. 2)",
                 r_pcr="CAPO Eq. 3: R_PCR paid when the answer on the clean image beats the corrupted one",
                 tau="CAPO Eq. 3: R_PCR pays when R_DAR(o) - R_DAR(o~) > tau", **CORRECTNESS_OPTION_HELP)


make_capo_accuracy.uses_correctness = make_capo_perception.uses_correctness = True
make_capo_perception.uses_corrupted_correctness = True  # needs CAPO's corrupted rollouts
