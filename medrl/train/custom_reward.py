"""Rewards of your own, named by import path in a recipe (``mypkg.rewards:fn``, ``path.py:fn``).

:func:`custom_reward` loads one and wraps it so its ``__name__`` is the recipe's name for it;
the wrapper returns what the function returns (a list, or a :class:`medrl.types.RewardResult`
with its unscorable rows and step outputs), has its signature (the columns it names, e.g.
``correct``) and carries its checkpointed state and judge task.
"""

from __future__ import annotations

from medrl.train.recipe_schema import RecipeError

def custom_reward(spec: str, options: dict | None = None, *, where: str = "reward"):
    """A reward named by import path (``mypkg.rewards:my_reward`` or ``path/to/file.py:my_reward``).

    The object is either a reward function with TRL's signature
    ``fn(prompts, completions, **columns) -> list[float | None]`` (sync or ``async def``; TRL
    runs both, and so does ``medrl audit-rewards``), or - when ``options`` are given - a factory
    called with them that returns one. Its ``__name__`` becomes ``spec`` (the column name in the
    logs), set on a thin wrapper so the user's function is left untouched.
    """
    import functools
    import inspect

    from medrl.common.registry import load_object

    try:
        obj = load_object(spec)
    except ValueError as exc:
        raise RecipeError(f"{where}: {exc}") from None
    if options:
        try:
            obj = obj(**options)
        except TypeError as exc:
            raise RecipeError(f"{where} ({spec}): bad options {options}: {exc}") from None
    if not callable(obj):
        raise RecipeError(f"{where}: {spec!r} is not callable (a reward is fn(prompts, completions, **columns))")
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        params = {}
    kinds = {p.kind for p in params.values()}
    if params and inspect.Parameter.VAR_KEYWORD not in kinds and "completions" not in params:
        raise RecipeError(f"{where}: {spec!r} does not take TRL's reward arguments "
                          "(prompts, completions, **columns)")
    if inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(getattr(obj, "__call__", None)):
        @functools.wraps(obj)
        async def wrapper(*args, **kwargs):
            return await obj(*args, **kwargs)
    else:
        @functools.wraps(obj)
        def wrapper(*args, **kwargs):
            return obj(*args, **kwargs)
    # functools.wraps copies a function's own attributes once; an object's class attributes and
    # methods (a stateful reward's state_dict) are not among them
    for attr in FORWARDED_REWARD_ATTRS:
        if attr not in wrapper.__dict__ and hasattr(obj, attr):
            setattr(wrapper, attr, getattr(obj, attr))
    wrapper.__name__ = spec
    wrapper.__wrapped__ = obj
    return wrapper


#: what is read from a reward function besides calling it and its result: its checkpointed state
#: (:class:`medrl.types.StatefulReward`), the judge task and gold-reasoning use the cost estimate
#: and data checks read, ARMed's semantic part; a custom reward's wrapper carries them
FORWARDED_REWARD_ATTRS = ("checkpoint_state", "state_dict", "load_state_dict", "judge_task", "reads_gold_reasoning",
                          "semantic")


__all__ = ["FORWARDED_REWARD_ATTRS", "custom_reward"]
