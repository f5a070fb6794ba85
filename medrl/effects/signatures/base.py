"""What a signature task is: a paper's claim, the task where its mechanism can act, the failure
planted in the warm-up model, the arms the paper compares, and the metric it claims.

A :class:`Signature` is data plus one function (:meth:`Signature.traces`, the warm-up traces with
the failure planted at a stated share). The harness (:mod:`medrl.effects.runner`) draws the
signature's own phantom records per seed (:attr:`Signature.phantom`), fine-tunes one warm-up model
per seed on its traces, trains every arm from it with the same seed, data order and budget, and
scores every model with the exact oracle at several temperatures; the report
(:mod:`medrl.effects.report`) gives the paired difference of :attr:`Signature.metric` between
the method and the baseline over the seeds, beside the coin-flip control and the warm-up model.

Nothing here may be tuned to move a method's difference: the task, the planted share and the arms
are fixed before the runs, and only the budget (:attr:`Signature.budget`, the profile's training
sizes) may change until the baseline beats its warm-up model and the coin-flip control.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Arm:
    """One trained arm: ``recipe`` (a recipe name, with the harness's shared overrides and
    ``recipe_set``), its rewards replaced by ``rewards`` when given (a recipe ``rewards`` list,
    with ``log_answer`` the reward the training dynamics log as the answer reward)."""

    key: str
    recipe: str
    label: str
    rewards: tuple[dict, ...] | None = None
    log_answer: str | None = None
    recipe_set: tuple[str, ...] = ()

    def apply(self, recipe: Any) -> Any:
        """``recipe`` (a loaded recipe) with this arm's rewards."""
        if self.rewards is not None:
            recipe.rewards = [dict(r) for r in self.rewards]
            recipe.algorithm["log_rewards"] = {"answer": self.log_answer, "process": None}
        return recipe


@dataclass(frozen=True)
class Signature:
    """One paper's signature task (see the module docstring)."""

    name: str
    paper: str  # "ARMed (001_46ab1c0cc2c66f17)"
    claim: str  # the claim in one line, with its section
    task: str  # the task in one line
    failure: str  # the failure's short name: "reward collapse"
    planted: str  # what the warm-up traces plant, with the share
    share: float  # the planted share (the fraction of warm-up traces it applies to)
    phantom: dict  # PhantomConfig overrides of the task
    baseline: Arm
    method: Arm
    make_traces: Callable[..., list]  # (records, seed=, share=, config=) -> warm-up traces, failure planted
    others: tuple[Arm, ...] = ()
    metric: str = "accuracy"  # the claimed metric (a key of medrl.effects.report.METRICS)
    metric_label: str = "accuracy"
    lower_is_better: bool = False
    secondary: tuple[str, ...] = ()
    style: str = "think_answer"
    paper_gain: float | None = None  # the paper's own reported gain, in the metric's units (a share)
    paper_gain_note: str = ""
    temperature: float | None = None  # the paper's rollout temperature (None: the harness's)
    budget: dict = field(default_factory=dict)  # EffectsConfig overrides of its profile

    @property
    def arms(self) -> tuple[Arm, ...]:
        """Every trained arm: the baseline, the others, the method."""
        return (self.baseline, *self.others, self.method)

    def traces(self, records: Sequence[Any], seed: int, config: Any) -> list:
        """The warm-up traces of ``records`` with this signature's failure planted."""
        return self.make_traces(records, seed=seed, share=self.share, config=config)

    def describe(self) -> dict:
        """What ``results.json`` and the report say about the signature."""
        return {"name": self.name, "paper": self.paper, "claim": self.claim, "task": self.task,
                "failure": self.failure, "planted": self.planted, "share": self.share, "phantom": self.phantom,
                "arms": {a.key: {"recipe": a.recipe, "label": a.label} for a in self.arms},
                "baseline": self.baseline.key, "method": self.method.key, "metric": self.metric,
                "metric_label": self.metric_label, "secondary": list(self.secondary), "style": self.style,
                "temperature": self.temperature,
                "paper_gain": self.paper_gain, "paper_gain_note": self.paper_gain_note}


def pick(n: int, share: float, rng) -> set[int]:
    """``round(share * n)`` distinct indices out of ``n``, a seeded choice."""
    k = int(round(share * n))
    return {int(i) for i in rng.permutation(n)[:k].tolist()}


__all__ = ["Arm", "Signature", "pick"]
