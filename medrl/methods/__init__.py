"""The papers' methods, one file each, as plugins of :class:`medrl.train.trainer.MedGRPOTrainer`.

``medrl/methods/mrpo.py``, ``capo.py``, ``armed.py``, ``medix_r1.py`` and ``stepgrpo.py`` each
open with the method's typed config (the recipe's ``algorithm.<section>``), then the rewards it
configures, then its hooks, and registers what it adds (its advantage estimator, its training
stages). :mod:`medrl.methods.base` defines :class:`Method`, the typed batch :class:`MedBatch`,
the hook order and the registry (:func:`get_method`, :func:`compose`);
:mod:`medrl.methods.context` the :class:`StepContext` every hook receives;
:mod:`medrl.methods.stages` the stage registry (:data:`STAGES`). A
method outside medrl is the same kind of class, named in a recipe by import path or installed
under the ``medrl.methods`` entry point (``docs/architecture.md``).
"""

from medrl.methods.base import (
    HOOK_ORDER,
    METHODS,
    MedBatch,
    Method,
    MethodConfig,
    MethodConflict,
    active_method_names,
    compose,
    get_method,
)
from medrl.methods.context import Generated, StepContext
from medrl.methods.stages import STAGES, Stage, StageRun, register_stage

__all__ = ["Generated", "HOOK_ORDER", "METHODS", "MedBatch", "Method", "MethodConfig", "MethodConflict", "STAGES",
           "Stage", "StageRun", "StepContext", "active_method_names", "compose", "get_method", "register_stage"]
