"""Training stages a method (or a plugin) adds to a recipe's pipeline: :data:`STAGES`.

A multi-stage recipe lists its ``stages`` (``[{name, kind, options}]``); the pipeline
(:func:`medrl.train.pipeline.run_recipe`) runs them in order, each in its own folder
``<run>/stages/NN_<name>/``. It knows three kinds itself - ``rl`` (the recipe's rewards and
``grpo``), ``sft`` (the ``sft`` section) and ``refine`` (a judge audits and rewrites
question-answer pairs, ``data.refine``) - and every other kind is a :class:`Stage` registered
here by the file that owns it: a method's file (``@register_stage("key_steps")`` in
``medrl/methods/stepgrpo.py``) or a plugin's, so the pipeline names none of them.

A stage is a function of one :class:`StageRun`: it reads the current model folder, the records
and its ``options``, writes what it makes into its ``folder``, and sets what the next stages
get (``records``; ``sft_records``, the records the next ``sft`` stage trains on; ``model``, a
new model folder). A stage that finished in an earlier invocation is called again with
``done=True``: it reads back what it saved instead of computing it again (resume). Its options
are the keyword arguments of ``options_of`` (checked before any model loads, like a reward's),
less those the stage passes itself (``fixed``).

Found by name: medrl's own (every module of :mod:`medrl.methods` is imported on the first
lookup), an installed package's (entry point group ``medrl.stages``), or registered by a module
the run imports (a plugin method's file, named in the recipe's ``methods``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from medrl.common.registry import Registry

#: stages by kind: registered by the methods' files (every module of this package is imported
#: on the first lookup) and by plugins
STAGES = Registry("stage", modules=["medrl.methods.*"], entry_point_group="medrl.stages")


@dataclass
class StageRun:
    """What a stage reads and what it hands to the next stages (see the module docstring)."""

    #: the run's recipe (:class:`medrl.train.recipes.Recipe`: ``data``, ``algorithm``, ...)
    recipe: Any
    #: the current model folder; a stage that trains sets the folder of its output
    model: Path
    #: the records the next stages train on
    records: list
    #: the stage's own folder (``<run>/stages/NN_<name>/``)
    folder: Path
    #: the stage's ``options`` from the recipe
    options: dict = field(default_factory=dict)
    #: the run's judge (None: none given)
    judge: Any = None
    #: records the next ``sft`` stage trains on (None: :attr:`records`)
    sft_records: list | None = None
    #: the stage finished in an earlier invocation: read back what it saved
    done: bool = False


@dataclass(frozen=True)
class Stage:
    """A registered stage kind: the function that runs it, and what a recipe may set for it."""

    kind: str
    run: Callable[[StageRun], None]
    #: the function whose keyword arguments are the stage's ``options``, or its import path
    #: (``"module:function"``, imported when the options are checked); None: it takes none
    options_of: Callable[..., Any] | str | None = None
    #: arguments of ``options_of`` the stage passes itself (not options)
    fixed: tuple[str, ...] = ()
    #: whether the stage asks the run's judge (the command line then builds one)
    uses_judge: bool = False
    #: one line for ``--explain`` and the schema's help
    help: str = ""

    def options_function(self) -> Callable[..., Any] | None:
        """The function whose keyword arguments are the stage's options (None: it takes none)."""
        if isinstance(self.options_of, str):
            from medrl.common.registry import load_object

            return load_object(self.options_of)
        return self.options_of


def register_stage(kind: str, *, options_of: Callable[..., Any] | str | None = None, fixed: tuple[str, ...] = (),
                   uses_judge: bool = False, help: str = "") -> Callable[[Callable[[StageRun], None]], Any]:
    """Decorator: register ``fn(run: StageRun) -> None`` as the stage ``kind``."""

    def deco(fn: Callable[[StageRun], None]) -> Callable[[StageRun], None]:
        STAGES.register(kind)(Stage(kind, fn, options_of, tuple(fixed), uses_judge, help or (fn.__doc__ or "")
                                    .strip().split("\n")[0]))
        return fn

    return deco


def get_stage(kind: str) -> Stage:
    """The registered stage ``kind`` (``KeyError`` lists the known ones)."""
    return STAGES.get(kind)


__all__ = ["STAGES", "Stage", "StageRun", "get_stage", "register_stage"]
