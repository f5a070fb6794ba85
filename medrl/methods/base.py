"""What a method is, the typed batch its hooks share, and the one registry of methods.

A method (one paper's contribution) is a :class:`Method` subclass in its own file under
``medrl/methods/``: its typed config (``Config``, a pydantic model whose fields carry help text
and the paper's equation), the registry names of its rewards, and the hooks it needs. The trainer
(:class:`medrl.train.trainer.MedGRPOTrainer`) calls the hooks of every active method at fixed
points of one GRPO step, in this order (``HOOK_ORDER``):

1. ``setup(trainer)`` - once, when the trainer is built: check the run can work (refuse with
   the reason otherwise), find the rewards the method reads.
2. ``before_generation(trainer, batch)`` - before TRL generates: extra rollouts (CAPO's
   corrupted images) go into typed batch fields; ``batch.mode`` says train or eval.
3. ``before_rewards(trainer, batch)`` - after generation, before TRL calls the rewards. The
   trainer's own step here: the one correctness decision per rollout (``batch.correct``).
4. ``after_rewards(trainer, batch)`` - after TRL scored the batch. The trainer's own step here:
   unscorable rows (``batch.unscorable``) and the rewards' declared outputs
   (``batch.steps`` / ``batch.step_verdicts``).
5. ``token_advantages(trainer, batch)`` - only the one method whose ``advantage`` name is the
   run's ``algorithm.advantage``: returns the (B, T) or (B,) advantages the loss receives.
6. ``log(trainer, batch)`` - per-step metrics.
7. ``state_dict()`` / ``load_state_dict(state)`` - saved into every checkpoint
   (``method_state.json``) and restored on resume. State that lives in a method's rewards
   (ARMed's adaptive thresholds) travels here too: the method names those rewards in
   ``state_rewards()`` and the trainer leaves them out of its ``reward_state.json`` (which keeps
   only stateful rewards no method owns).

Within one hook point, methods run in the order the recipe lists them. Methods are looked up by
name (``get_method("capo")``), and so are advantage estimators (``get_advantage_fn("mrpo")``,
after verl's ``get_adv_estimator_fn``). :func:`compose` refuses combinations that cannot work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from pydantic import BaseModel, ConfigDict

from medrl.common.registry import Registry

#: Method modules; each registers its :class:`Method` subclass on import.
METHOD_MODULES = ["medrl.methods.mrpo", "medrl.methods.capo", "medrl.methods.armed", "medrl.methods.medix_r1",
                  "medrl.methods.stepgrpo", "medrl.methods.baselines"]
METHODS = Registry("method", modules=METHOD_MODULES)

HOOK_ORDER = ("setup", "before_generation", "before_rewards", "after_rewards", "token_advantages", "log",
              "state_dict")


class MethodConfig(BaseModel):
    """Base of every method's typed config: unknown keys and NaN/inf are errors."""

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
    #: CAPO: per row, the text of the paired rollout on the corrupted image (before_generation)
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
    #: per row, the process reward's steps (character spans) and the judge's step verdicts
    steps: list | None = None
    step_verdicts: list | None = None
    #: TRL's output of ``_generate_and_score_completions`` (after_rewards on)
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
    """One paper's method: a typed config, its rewards, its hooks (all optional)."""

    #: registry name, as recipes write it (``methods: [mrpo, capo]``)
    name: ClassVar[str] = ""
    #: the paper and sections the method implements
    paper: ClassVar[str] = ""
    #: the typed config; its field defaults are the only place the defaults are written
    Config: ClassVar[type[MethodConfig]] = MethodConfig
    #: key of the recipe's ``algorithm`` section that holds this config (None: no section)
    section: ClassVar[str | None] = None
    #: registry names of the rewards the paper defines (documentation, cost estimate, checks)
    rewards: ClassVar[tuple[str, ...]] = ()
    #: name of the advantage estimator this method provides through ``token_advantages``
    #: (``algorithm.advantage`` selects it); two active methods may not both provide one
    advantage: ClassVar[str | None] = None
    #: rewards that switch the method on when a recipe does not list its methods
    activated_by: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: MethodConfig | dict | None = None):
        if not isinstance(config, self.Config):
            config = self.Config.model_validate(config or {})
        self.config = config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    # hooks: every one is optional; the defaults do nothing
    def setup(self, trainer: Any) -> None: ...

    def before_generation(self, trainer: Any, batch: MedBatch) -> None: ...

    def before_rewards(self, trainer: Any, batch: MedBatch) -> None: ...

    def after_rewards(self, trainer: Any, batch: MedBatch) -> None: ...

    def token_advantages(self, trainer: Any, batch: MedBatch) -> Any:
        return batch.out["advantages"]

    def log(self, trainer: Any, batch: MedBatch) -> None: ...

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
    that exposes a reward option takes its default from the reward, where it is written once."""
    import inspect

    param = inspect.signature(fn).parameters[option]
    if param.default is inspect.Parameter.empty:
        raise TypeError(f"{getattr(fn, '__name__', fn)}: option {option!r} has no default")
    return param.default


class MethodConflict(ValueError):
    """Methods that cannot run together; the message gives the reason."""


def get_method(name: str) -> type[Method]:
    """The :class:`Method` class registered as ``name`` (``KeyError`` lists the known ones)."""
    return METHODS.get(name)


def get_advantage_fn(name: str):
    """The advantage estimator registered as ``name`` in :data:`medrl.advantages.ADVANTAGES`."""
    from medrl.advantages import ADVANTAGES

    return ADVANTAGES.get(name)


def compose(methods: Sequence[str | Method | type[Method]], algorithm: dict | None = None) -> list[Method]:
    """The methods of a run, in recipe order: a registered name or a ``module:Class`` /
    ``path.py:Class`` spec (instantiated with its config from ``algorithm[cls.section]``), a
    :class:`Method` class, or a ready :class:`Method` object. Refuses, with the reason,
    combinations that cannot work: an unknown or repeated method, two methods that both
    provide the advantages (``token_advantages``).
    """
    from medrl.common.registry import is_object_spec, load_object

    algorithm = algorithm or {}
    seen, out = set(), []
    for item in methods:
        obj = item
        if isinstance(item, str):
            try:
                obj = load_object(item) if is_object_spec(item) else get_method(item)
            except (KeyError, ValueError) as exc:
                raise MethodConflict(exc.args[0]) from None
        if isinstance(obj, type) and issubclass(obj, Method):
            cfg = algorithm.get(obj.section) if obj.section else None
            obj = obj(cfg if isinstance(cfg, dict) else None)
        if not isinstance(obj, Method):
            raise MethodConflict(f"{item!r} is not a medrl.methods.Method")
        key = obj.name or type(obj).__name__
        if key in seen:
            raise MethodConflict(f"method {key!r} is listed twice")
        seen.add(key)
        out.append(obj)
    providers = [m.name for m in out if m.advantage]
    if len(providers) > 1:
        raise MethodConflict(f"methods {providers} both replace the advantages (token_advantages); one loss "
                             "takes one advantage estimator - list at most one of them")
    return out


def active_method_names(algorithm: dict, listed: Sequence[str] | None = None,
                        reward_names: Sequence[str] = ()) -> list[str]:
    """The methods a run uses: the recipe's ``methods`` list when given; else those its
    ``algorithm`` section switches on (``advantage: mrpo`` -> mrpo, a ``capo`` section -> capo)
    and those a reward of the run switches on (a method's ``activated_by`` rewards: ARMed's
    adaptive reward -> armed)."""
    if listed:
        return list(listed)
    names = []
    if algorithm.get("advantage") == "mrpo":
        names.append("mrpo")
    if algorithm.get("capo"):
        names.append("capo")
    for name in METHODS.names():
        if name not in names and set(get_method(name).activated_by) & set(reward_names):
            names.append(name)
    return names


__all__ = ["HOOK_ORDER", "METHODS", "MedBatch", "Method", "MethodConfig", "MethodConflict", "active_method_names",
           "compose", "get_advantage_fn", "get_method", "option_default"]
