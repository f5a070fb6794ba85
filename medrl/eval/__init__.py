"""Evaluation and reasoning analysis: ``medrl eval`` / ``medrl analyze`` engines.

Pure analysis functions (MRPO FFP/FAR, stages, paired tables, Cohen's kappa) are re-exported
here; they import nothing heavy. Generation, scoring, plots and reports live in
:mod:`medrl.eval.runner`, :mod:`medrl.eval.scoring`, :mod:`medrl.eval.plots`,
:mod:`medrl.eval.report` and :mod:`medrl.eval.workflows` (imported on use).
"""

from medrl.eval.agreement import agreement_rate, cohen_kappa
from medrl.eval.analysis import (
    STAGES,
    compare_runs,
    failure_accumulation_rate,
    far_by_ffp_bin,
    first_failure_point,
    incorrect_rate_by_ffp_bin,
    paired_table,
    stage_of,
    stage_shares,
    transition_matrix,
)

__all__ = [
    "STAGES", "agreement_rate", "cohen_kappa", "compare_runs", "failure_accumulation_rate",
    "far_by_ffp_bin", "first_failure_point", "incorrect_rate_by_ffp_bin", "paired_table",
    "stage_of", "stage_shares", "transition_matrix",
]
