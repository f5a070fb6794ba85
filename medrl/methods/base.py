"""What a method is, the typed batch its hooks share, and the one registry of methods.

A method (one paper's contribution) is a :class:`Method` subclass in its own file: its typed
config (``Config``, a pydantic model whose fields carry help text and the paper's equation,
set from the recipe's ``algorithm.<section>``), the rewards it configures, the hooks it needs,
and what it registers itself: its advantage estimator (:data:`medrl.advantages.ADVANTAGES`) and
its training stages (:data:`medrl.methods.stages.STAGES`). The trainer
(:class:`medrl.train.trainer.MedGRPOTrainer`) calls the hooks of every active method at fixed
points of one GRPO step, in this order (``HOOK_ORDER``). A hook gets a
:class:`~medrl.methods.context.StepContext` (``ctx``: the run's settings, group size, process,
step, tokenizer, ``generate``, ``log``, this process's rows), never the trainer:

1. ``setup(ctx)`` - once, when the trainer is built: check the run can work (refuse with
   the reason otherwise), find the rewards the method reads (``ctx.rewards``).
2. ``before_generation(ctx, batch)`` - before TRL generates: extra rollouts (corrupted-image
   rollouts, say, through ``ctx.generate``) go into typed batch fields; ``batch.mode`` says
   train or eval.
3. ``before_rewards(ctx, batch)`` - after generation, before TRL calls the rewards. The
   trainer's own step here: the one correctness decision per rollout (``batch.correct``).
4. ``after_rewards(ctx, batch)`` - after TRL scored the batch. The trainer's own step here:
   each reward's typed result (``batch.results``: values, unscorable rows, step outputs),
   unscorable rows (``batch.unscorable``) and the process reward's step outputs
   (``batch.steps`` / ``batch.step_verdicts``).
5. ``advantage_inputs(ctx, batch)`` - named inputs of the advantage estimator that
   ``algorithm.advantage`` names (:mod:`medrl.advantages`, one signature for all); the
   trainer calls the estimator with them and the config of the method that provides it.
6. ``log(ctx, batch)`` - per-step metrics (``ctx.log``).
7. ``state_dict()`` / ``load_state_dict(state)`` - saved into every checkpoint
   (``method_state.json``, keyed by :meth:`Method.label`) and restored on resume. State that lives in a method's rewards
   (adaptive thresholds) travels here too: the method names those rewards in
   ``state_rewards()`` and the trainer leaves them out of its ``reward_state.json`` (which keeps
   only stateful rewards no method owns).

Besides hooks, the trainer, the credit log and the recipe loader *ask* a method, never name it:
which reward's step verdicts it reads (:attr:`Method.process_reward`), which reward is its
answer reward (:attr:`Method.answer_reward`), which reward options its config sets
(:meth:`Method.reward_options`), what a recipe must hold for it to work
(:meth:`Method.recipe_problems`), what the credit log records (:meth:`Method.credit_fields`).

Within one hook point, methods run in the order the recipe lists them. Methods are found by
name (:func:`get_method`): medrl's own (``METHOD_MODULES``), an installed package's (a
``medrl.methods`` entry point), or any class by import path (``my_pkg.my_method:LengthPenalty``,
``path/to/file.py:LengthPenalty``). :func:`compose` refuses combinations that cannot work.
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from medrl.common.registry import Registry, is_object_spec, load_object
from medrl.methods.context import StepContext

#: modules of this package that hold what every method shares, not a method
SHARED_MODULES = (Path(__file__).stem, "context", "stages")
#: Method modules: every other module of this package; each registers its :class:`Method`
#: subclass on import (a new file here is found without being listed)
METHOD_MODULES = sorted(f"{__package__}.{m.name}" for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                        if m.name not in SHARED_MODULES)
#: installed packages add methods under this entry-point group (``[project.entry-points."medrl.methods"]``)
ENTRY_POINT_GROUP = "medrl.methods"
METHODS = Registry("method", modules=METHOD_MODULES, entry_point_group=ENTRY_POINT_GROUP)

HOOK_ORDER = ("setup", "before_generation", "before_rewards", "after_rewards", "advantage_inputs", "log",
              "state_dict")


@dataclass(frozen=True)
class TrainerOptions:
    """Generic parts of the training machinery a method turns on (:meth:`Method.trainer_options`;
    None: the method leaves the part as the run sets it). The method's file says why its paper
    uses them; the machinery itself lives in ``medrl/train/`` and names no method. A run that also
    sets the same part itself (the recipe key in :data:`TRAINER_OPTION_KEYS`) is refused unless
    the values agree: one place per setting."""

    #: clamp the per-token k3 KL term to [-kl_clamp, kl_clamp] (:mod:`medrl.train.kl_clamp`)
    kl_clamp: float | None = None
    #: keep only prompt groups whose mean weighted reward lies strictly inside (low, high), with
    #: dynamic sampling on (:mod:`medrl.train.dynamic_sampling`, ``mean_band``)
    mean_band: tuple[float, float] | None = None
    #: keep the checkpoint with the best value of this held-out metric in ``<out>/best``
    #: (:mod:`medrl.train.best_checkpoint`)
    best_checkpoint: str | None = None

    def merged(self, other: "TrainerOptions", *, owner: str = "", other_owner: str = "") -> "TrainerOptions":
        """These options with ``other``'s; two different values of one option are a
        :class:`MethodConflict` naming both owners."""
        out = {}
        for name in self.__dataclass_fields__:
            a, b = getattr(self, name), getattr(other, name)
            if a is not None and b is not None and a != b:
                raise MethodConflict(f"methods {owner!r} and {other_owner!r} turn on {name} with different values "
                                     f"({a!r}, {b!r})")
            out[name] = a if a is not None else b
        return TrainerOptions(**out)


#: the run's own setting of each :class:`TrainerOptions` part (recipe key)
TRAINER_OPTION_KEYS = {"kl_clamp": "grpo.kl_clamp", "mean_band": "algorithm.dynamic_sampling.mean_band",
                       "best_checkpoint": "grpo.metric_for_best_model"}


class MethodConfig(BaseModel):
    """Base of every method's typed config: unknown keys and NaN/inf are errors; every field
    needs a ``description`` (its help, shown by ``medrl recipes show NAME --explain``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_default=True)


@dataclass
class MedBatch:
    """What the hooks of one GRPO step hand each other (this process's rows unless noted).

    A field is ``None`` until the step that fills it has run. Reward functions read
    ``corrupted_completions``, ``correct`` and ``corrupted_correct`` as TRL columns of the same
    names (:meth:`reward_columns`).
    """

    inputs: list[dict]
    mode: str = "train"  # "train" | "eval"
    #: per row, the text of a paired rollout on a corrupted image (before_generation)
    corrupted_completions: list[str] | None = None
    #: the one correctness decision per rollout / per corrupted rollout (before_rewards)
    correct: list[bool | None] | None = None
    corrupted_correct: list[bool | None] | None = None
    #: decoded completion texts and generated ids (after_rewards)
    texts: list[str] = field(default_factory=list)
    completion_ids: list[list[int]] = field(default_factory=list)
    #: (N_total, R) rewards gathered over processes, NaN = none / unscorable; this process's rows
    rewards: Any = None
    local_rewards: Any = None
    #: (N_total,) bool, rows some reward marked UNSCORABLE (gathered)
    unscorable: Any = None
    #: ``{reward name: its typed result for this process's rows}``
    #: (:class:`medrl.types.RewardResult`: values, unscorable rows, step outputs)
    results: dict[str, Any] = field(default_factory=dict)
    #: per row, the process reward's steps (character spans) and the judge's step verdicts
    #: (the step outputs of the reward :attr:`Method.process_reward` names, else of the first
    #: reward whose result has them)
    steps: list | None = None
    step_verdicts: list | None = None
    #: what TRL's step returns for this process's rows (completion ids and mask, advantages, ...; after_rewards on)
    out: dict | None = None
    #: (B,) sequence advantages A_i as TRL computed them, before any token shaping
    seq_advantages: Any = None
    #: more per-row reward columns, ``{column name: values}``, for methods defined outside medrl
    columns: dict[str, list] = field(default_factory=dict)

    #: batch fields that reach the reward functions as columns of the same name
    COLUMNS: ClassVar[tuple[str, ...]] = ("corrupted_completions", "correct", "corrupted_correct")

    def reward_columns(self) -> dict[str, list]:
        """The filled :data:`COLUMNS` fields and :attr:`columns`, ``{column name: per-row values}``."""
        out = {name: getattr(self, name) for name in self.COLUMNS if getattr(self, name) is not None}
        for name, values in self.columns.items():
            if name in out or name in ("prompt", "completion", "completion_ids"):
                raise ValueError(f"batch column {name!r} is already taken")
            if len(values) != len(self.inputs):
                raise ValueError(f"batch column {name!r} has {len(values)} values for {len(self.inputs)} rows")
            out[name] = values
        return out

    @property
    def step_valid(self) -> list[list[bool] | None] | None:
        """Per row, the validity of each step (the judge's verdicts), ``None`` where unscored."""
        if self.step_verdicts is None:
            return None
        return [None if v is None else [bool(getattr(x, "valid", x)) for x in v] for v in self.step_verdicts]


class Method:
    """One paper's method: a typed config, the rewards it configures, its hooks (all optional)."""

    #: registry name, as recipes write it (``methods: [name]``)
    name: ClassVar[str] = ""
    #: the paper and sections the method implements
    paper: ClassVar[str] = ""
    #: the typed config; its field defaults are the only place the defaults are written
    Config: ClassVar[type[MethodConfig]] = MethodConfig
    #: key of the recipe's ``algorithm`` section that holds this config (None: no section);
    #: setting the section in a recipe switches the method on (unless it provides the
    #: advantage estimator: then ``algorithm.advantage`` does)
    section: ClassVar[str | None] = None
    #: the rewards the paper defines (registry names), each with the reward options this
    #: method's config sets: ``{reward name: {reward option: config field}}`` (a plain tuple of
    #: names: it sets none). With the method on, those options come from
    #: ``algorithm.<section>`` only (a recipe setting one under ``rewards[*].options`` is
    #: refused: one place per setting)
    rewards: ClassVar[Mapping[str, Mapping[str, str]] | tuple[str, ...]] = {}
    #: name of the advantage estimator (:data:`medrl.advantages.ADVANTAGES`) this method
    #: provides inputs and its config for; ``algorithm.advantage`` naming it switches the
    #: method on (or listing the method). Two active methods may not both provide one
    advantage: ClassVar[str | None] = None
    #: rewards that switch the method on when a recipe does not list its methods
    activated_by: ClassVar[tuple[str, ...]] = ()
    #: the :class:`MedBatch` fields its hooks fill (the cost estimate counts the judge calls
    #: they bring: corrupted rollouts are judged too)
    fills: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: MethodConfig | dict | None = None):
        if not isinstance(config, self.Config):
            config = self.Config.model_validate(config or {})
        self.config = config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    @classmethod
    def label(cls) -> str:
        """The name a recipe and the logs show: ``name``, else the class name."""
        return cls.name or cls.__name__

    # ---------------------------------------------------------------- what others ask

    @property
    def process_reward(self) -> str | None:
        """The reward whose declared step outputs (``steps``, ``step_verdicts``) this method
        reads; None: it reads none."""
        return None

    @property
    def answer_reward(self) -> str | None:
        """The reward holding this method's answer score (the credit log's ``r_ans``); None: none."""
        return None

    @classmethod
    def bound_options(cls, reward: str) -> Mapping[str, str]:
        """``{reward option: config field}`` this method sets for reward ``reward`` (see :attr:`rewards`)."""
        return (cls.rewards.get(reward) if isinstance(cls.rewards, Mapping) else None) or {}

    def reward_options(self, reward: str) -> dict[str, Any]:
        """The options of reward ``reward`` that this method's config sets, with their values."""
        return {opt: getattr(self.config, f) for opt, f in self.bound_options(reward).items()}

    def recipe_problems(self, reward_names: Sequence[str]) -> list[tuple[str, str]]:
        """``(dotted key, reason)`` for what a recipe with rewards ``reward_names`` lacks for this
        method; the recipe loader refuses the recipe with them before any model loads."""
        return []

    def credit_fields(self) -> dict[str, Any]:
        """Settings each ``credit.jsonl`` row records beside the estimator's name (those of the
        method that provides the advantages)."""
        return {}

    def trainer_options(self) -> TrainerOptions:
        """The generic parts of the training machinery this method turns on (a clamped KL term,
        a dynamic-sampling band, best-checkpoint selection); none by default."""
        return TrainerOptions()

    # ---------------------------------------------------------------- hooks (the defaults do nothing)

    def setup(self, ctx: StepContext) -> None: ...

    def before_generation(self, ctx: StepContext, batch: MedBatch) -> None: ...

    def before_rewards(self, ctx: StepContext, batch: MedBatch) -> None: ...

    def after_rewards(self, ctx: StepContext, batch: MedBatch) -> None: ...

    def advantage_inputs(self, ctx: StepContext, batch: MedBatch) -> dict[str, Any]:
        """Named inputs this method adds to the advantage estimator's call (``{}``: none)."""
        return {}

    def log(self, ctx: StepContext, batch: MedBatch) -> None: ...

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None: ...

    def state_rewards(self) -> Sequence[Any]:
        """The stateful reward functions (:class:`medrl.types.StatefulReward`) whose state this
        method's own :meth:`state_dict` carries; the trainer does not save them again. Known
        after :meth:`setup`."""
        return ()


def option_default(fn: Any, option: str) -> Any:
    """The default of keyword ``option`` of ``fn`` (a reward factory or class): a method config
    field that sets a reward option takes its default from the reward, where it is written once."""
    import inspect

    param = inspect.signature(fn).parameters[option]
    if param.default is inspect.Parameter.empty:
        raise TypeError(f"{getattr(fn, '__name__', fn)}: option {option!r} has no default")
    return param.default


def reward_option(factory: Any, option: str, **field: Any) -> Any:
    """A config field (pydantic ``Field``, ``field`` its constraints and ``description``) whose
    default is the default of option ``option`` of ``factory`` (a reward factory or class):
    written once, in the reward."""
    from pydantic import Field

    return Field(option_default(factory, option), **field)


class MethodConflict(ValueError):
    """Methods that cannot run together, or a method that cannot be found; the message says why."""


def get_method(name: str) -> type[Method]:
    """The :class:`Method` class ``name`` names: a registered name (medrl's, or an installed
    package's ``medrl.methods`` entry point) or an import path (``my_pkg.mod:Class``,
    ``path/to/file.py:Class``). ``KeyError`` lists the known names; ``MethodConflict`` says why
    an import path does not give a method."""
    if is_object_spec(name):
        try:
            cls = load_object(name)
        except ValueError as exc:
            raise MethodConflict(exc.args[0]) from None
        if not (isinstance(cls, type) and issubclass(cls, Method)):
            raise MethodConflict(f"{name!r} is not a medrl.methods.Method subclass")
        return cls
    return METHODS.get(name)


def method_classes(items: Sequence[str | Method | type[Method]]) -> list[type[Method]]:
    """The classes of ``items`` (names, import paths, classes or objects), in order."""
    out = []
    for item in items:
        if isinstance(item, str):
            try:
                item = get_method(item)
            except KeyError as exc:
                raise MethodConflict(exc.args[0]) from None
        cls = item if isinstance(item, type) else type(item)
        if not issubclass(cls, Method):
            raise MethodConflict(f"{item!r} is not a medrl.methods.Method")
        out.append(cls)
    return out


def compose(methods: Sequence[str | Method | type[Method]], algorithm: dict | None = None) -> list[Method]:
    """The methods of a run, in recipe order: a name or import path (see :func:`get_method`),
    instantiated with its config from ``algorithm[cls.section]``, a :class:`Method` class, or a
    ready :class:`Method` object. Refuses, with the reason, combinations that cannot work: an
    unknown or repeated method, two methods that both provide the advantage estimator.
    """
    algorithm = algorithm or {}
    seen, out = set(), []
    for item, cls in zip(methods, method_classes(methods)):
        obj = item if isinstance(item, Method) else None
        if obj is None:
            cfg = algorithm.get(cls.section) if cls.section else None
            obj = cls(cfg if isinstance(cfg, (dict, MethodConfig)) else None)
        key = obj.label()
        if key in seen:
            raise MethodConflict(f"method {key!r} is listed twice")
        seen.add(key)
        out.append(obj)
    providers = [m.label() for m in out if m.advantage]
    if len(providers) > 1:
        raise MethodConflict(f"methods {providers} both provide the advantage estimator; one loss takes one "
                             "estimator - list at most one of them")
    return out


def advantage_problem(name: str, methods: Sequence[Method]) -> str | None:
    """Why the estimator ``name`` cannot run with ``methods`` (None: it can): a registered
    method provides its inputs and config, and it is not among them."""
    if any(m.advantage == name for m in methods):
        return None
    owners = [n for n in METHODS.names() if get_method(n).advantage == name]
    if owners:
        return (f"it takes its inputs from the method {owners[0]!r}, which is not among the run's methods "
                f"{[m.label() for m in methods]}")
    return None


def estimate_advantages(ctx: StepContext, batch: MedBatch, name: str, methods: Sequence[Method]) -> Any:
    """Hook 5: the advantages the loss receives, from the estimator ``name``
    (:func:`medrl.advantages.get_advantage_fn`, one signature for all). One that TRL computes
    itself (it names its ``trl_options``) keeps TRL's values (``batch.out["advantages"]``,
    computed over every process); any other is called on this process's rows (``ctx.rows``,
    group ids ``ctx.group_index()``, ``whole_groups`` among the inputs) with the config of the
    method that provides it and the inputs every method adds (:meth:`Method.advantage_inputs`).

    ``ctx`` gives the group size, the rows, ``reward_weights`` and ``reward_names``; ``batch``
    its ``out``, ``local_rewards`` and ``seq_advantages``."""
    import torch

    from medrl.advantages import get_advantage_fn

    fn, out = get_advantage_fn(name), batch.out
    if getattr(fn, "trl_options", None) is not None:
        return out["advantages"]
    inputs = {"weights": ctx.reward_weights, "reward_names": list(ctx.reward_names),
              "advantages": batch.seq_advantages, "whole_groups": ctx.whole_groups}
    config = None
    for m in methods:
        inputs.update(m.advantage_inputs(ctx, batch))
        config = m.config if m.advantage == name else config
    index = torch.tensor(ctx.group_index(), dtype=torch.long)
    return fn(rewards=batch.local_rewards, mask=out["completion_mask"], index=index, config=config, **inputs)


def run_trainer_options(methods: Sequence[Method]) -> TrainerOptions:
    """What the run's methods turn on together (:meth:`Method.trainer_options`); two methods
    that turn one part on with different values are a :class:`MethodConflict`."""
    out, owner = TrainerOptions(), ""
    for m in methods:
        out = out.merged(m.trainer_options(), owner=owner, other_owner=m.label())
        owner = owner or m.label()
    return out


def section_set(algorithm: Mapping, section: str | None) -> bool:
    """Whether the ``algorithm`` mapping switches the section on (present, not None / false)."""
    return bool(section) and algorithm.get(section) not in (None, False)


def active_method_names(algorithm: Mapping, listed: Sequence[str] | None = None,
                        reward_names: Sequence[str] = ()) -> list[str]:
    """The methods a run uses: the recipe's ``methods`` list when given; else every registered
    method the ``algorithm`` section or the rewards switch on. A method that provides an
    estimator is on when ``algorithm.advantage`` names it (its section alone only configures
    it: the advantage is the run's choice); any other method when its section is set or a reward
    of the run is among its ``activated_by``. The one that provides the advantages comes first,
    then registry order."""
    if listed:
        return list(listed)
    names = []
    for name in METHODS.names():
        cls = get_method(name)
        if cls.advantage:
            if cls.advantage == algorithm.get("advantage"):
                names.insert(0, name)
        elif section_set(algorithm, cls.section) or set(cls.activated_by) & set(reward_names):
            names.append(name)
    return names


__all__ = ["ENTRY_POINT_GROUP", "HOOK_ORDER", "METHODS", "METHOD_MODULES", "MedBatch", "Method", "MethodConfig",
           "MethodConflict", "SHARED_MODULES", "StepContext", "TRAINER_OPTION_KEYS", "TrainerOptions",
           "active_method_names", "run_trainer_options", "advantage_problem", "compose",
           "estimate_advantages", "get_method", "method_classes", "option_default", "reward_option", "section_set"]
