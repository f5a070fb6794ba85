"""The papers' methods, one file each, as plugins of :class:`medrl.train.trainer.MedGRPOTrainer`.

``medrl/methods/mrpo.py``, ``capo.py``, ``armed.py``, ``medix_r1.py``, ``stepgrpo.py`` and
``baselines.py`` each open with the method's typed config, then its rewards, then its hooks.
:mod:`medrl.methods.base` defines :class:`Method`, the typed batch :class:`MedBatch`, the hook
order and the registry (:func:`get_method`, :func:`get_advantage_fn`, :func:`compose`).
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
    get_advantage_fn,
    get_method,
)

__all__ = ["HOOK_ORDER", "METHODS", "MedBatch", "Method", "MethodConfig", "MethodConflict", "active_method_names",
           "compose", "get_advantage_fn", "get_method"]
