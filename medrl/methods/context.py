"""What a method's hook sees of the run: :class:`StepContext`, typed and narrow, built once per step.

A hook never receives the trainer. The trainer (:class:`medrl.train.trainer.MedGRPOTrainer`, the
one place that touches TRL's private attributes) builds a :class:`StepContext` at the start of
every step (and one for ``setup``) holding what a method may use: the run's settings, the group
size, the process index and count, the global step, the tokenizer, :meth:`StepContext.generate`
(more rollouts through the run's own generation backend), :meth:`StepContext.log` (a per-step
metric) and which rows of the step this process holds, with whether its groups are whole. A
hook written against it works with any TRL version the trainer supports, and a test can call it
with a context built by hand (:meth:`StepContext.for_test`), without TRL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence


@dataclass(frozen=True)
class Generated:
    """Completions :meth:`StepContext.generate` produced: one text and its token ids per prompt."""

    texts: list[str]
    token_ids: list[list[int]]


@dataclass(frozen=True)
class StepContext:
    """The run at one step, as a method's hooks see it (see the module docstring).

    Rows: TRL orders a step's completions so that the ``G`` completions of one prompt are
    contiguous (``G`` = :attr:`num_generations`) and splits them over the processes; this
    process holds the rows :attr:`rows` of the gathered (``N_total``) reward tensors. When a
    process holds fewer rows than a group, or its first row is not a group's first, its groups
    are partial (:attr:`whole_groups` is False): a group baseline computed from this process's
    rewards alone would be wrong there (TRL's own advantages, ``batch.seq_advantages``, are
    computed over every process and stay right).
    """

    #: the run's ``algorithm`` settings (resolved: every key present)
    algorithm: Mapping[str, Any]
    #: the run's ``GRPOConfig`` (TRL's public config: ``loss_type``, ``output_dir``, ...)
    args: Any
    #: the reward functions' names, in the order of the reward columns
    reward_names: tuple[str, ...]
    #: (R,) the reward weights, in the same order
    reward_weights: Any
    #: ``{reward name: reward function}`` (a method reads the rewards it owns, e.g. their state)
    rewards: Mapping[str, Any]
    #: the policy's tokenizer (the text half of the processor)
    tokenizer: Any
    #: G, completions per prompt in this step's mode
    num_generations: int
    #: this process's index and the number of processes
    process_index: int = 0
    num_processes: int = 1
    #: optimizer steps completed before this step
    global_step: int = 0
    #: "train" or "eval"
    mode: str = "train"
    #: this process's rows in the gathered (N_total) tensors of this step (empty in ``setup``)
    rows: range = range(0)
    #: whether the run calls tools (TRL's ``tools``)
    uses_tools: bool = False
    _generate: Callable[..., Generated] | None = field(default=None, repr=False, compare=False)
    _log: Callable[[str, float], None] | None = field(default=None, repr=False, compare=False)

    @property
    def is_main_process(self) -> bool:
        return self.process_index == 0

    @property
    def output_dir(self) -> str:
        """The run's output folder (``args.output_dir``)."""
        return str(getattr(self.args, "output_dir", "."))

    @property
    def whole_groups(self) -> bool:
        """Whether every group of this process's rows has all its ``G`` rows here."""
        g = max(int(self.num_generations), 1)
        return self.rows.start % g == 0 and len(self.rows) % g == 0

    def group_index(self) -> list[int]:
        """(B,) the group (prompt) id of each of this process's rows."""
        g = max(int(self.num_generations), 1)
        return [i // g for i in self.rows]

    def generate(self, prompts: Sequence[Any], images: Sequence[Sequence[Any]] | None = None,
                 n: int | None = None) -> Generated:
        """Roll ``prompts`` out once each through the run's generation backend (HF generate or
        vLLM; no gradient), with ``images[i]`` (a list of images) put into prompt ``i``'s
        messages when given. ``n`` is the group size the backend assumes (default
        :attr:`num_generations`: the prompts come as groups, each prompt repeated G times)."""
        if self._generate is None:
            raise RuntimeError("this context cannot generate (built without a trainer)")
        if images is not None and len(images) != len(prompts):
            raise ValueError(f"generate: {len(images)} image lists for {len(prompts)} prompts")
        return self._generate(list(prompts), None if images is None else list(images),
                              self.num_generations if n is None else int(n))

    def log(self, name: str, value: float) -> None:
        """Record ``value`` for the metric ``name`` at this step (averaged over the logging
        interval, written beside TRL's own metrics, in this step's mode)."""
        if self._log is not None:
            self._log(name, float(value))

    @classmethod
    def for_test(cls, *, reward_names: Sequence[str] = (), num_generations: int = 2, rows: int | range = 0,
                 metrics: dict | None = None, generate: Callable[..., Generated] | None = None,
                 **fields: Any) -> "StepContext":
        """A context built by hand (tests, plain code): ``metrics`` (a dict) collects what
        :meth:`log` records, ``{name: [values]}``."""
        from types import SimpleNamespace

        logged = metrics if metrics is not None else {}
        fields.setdefault("algorithm", {})
        fields.setdefault("args", SimpleNamespace(output_dir="."))
        fields.setdefault("reward_weights", [1.0] * len(reward_names))
        fields.setdefault("rewards", {})
        fields.setdefault("tokenizer", None)
        return cls(reward_names=tuple(reward_names), num_generations=num_generations,
                   rows=rows if isinstance(rows, range) else range(int(rows)), _generate=generate,
                   _log=lambda k, v: logged.setdefault(k, []).append(v), **fields)


__all__ = ["Generated", "StepContext"]
