"""Options checked against what takes them: a reward factory's or a stage function's keyword
arguments (names and annotated types), TRL's ``GRPOConfig`` / ``SFTConfig`` fields, before any
model loads. Each check returns ``(dotted key, one-line reason)`` pairs; the recipe schema
(:mod:`medrl.train.recipe_schema`) and loader (:mod:`medrl.train.recipes`) report them.
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from medrl.common.registry import did_you_mean


def check_reward_specs(rewards: typing.Sequence[Any]) -> list[tuple[str, str]]:
    """Names are registered rewards or custom ``module:function`` specs; options match the
    registered factory's keyword arguments (names and types)."""
    from medrl.common.registry import is_object_spec
    from medrl.rewards import REWARDS

    problems = []
    known = REWARDS.names()
    for i, spec in enumerate(rewards):
        where = f"rewards[{i}]"
        if is_object_spec(spec.name):
            continue
        if spec.name not in known:
            problems.append((f"{where}.name", f"unknown reward {spec.name!r}{did_you_mean(spec.name, known)} "
                             "(a registered name, or a custom 'module:function' / 'path.py:function')"))
            continue
        problems += check_call_options(REWARDS.get(spec.name), spec.options, f"{where}.options",
                                       skip=("judge",))
    return problems


def check_call_options(fn: Any, options: dict, where: str, skip: tuple = ()) -> list[tuple[str, str]]:
    """Check ``options`` against ``fn``'s keyword parameters: unknown names (unless it takes
    ``**kwargs``) and values that do not fit the annotated type."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    params = {n: p for n, p in sig.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations: names only
        hints = {}
    problems = []
    for key, value in (options or {}).items():
        if key in skip:
            continue
        if key not in params:
            if not takes_any:
                problems.append((f"{where}.{key}", f"unknown option {key!r}{did_you_mean(key, params)}; "
                                 f"allowed: {', '.join(k for k in params if k not in skip)}"))
            continue
        msg = type_problem(hints.get(key), value)
        if msg:
            problems.append((f"{where}.{key}", msg))
    return problems


#: the pipeline's own stage that takes options: the function whose keyword arguments they are,
#: and the arguments the pipeline passes itself. ``rl`` and ``sft`` stages take their settings
#: from the recipe's ``grpo`` / ``sft`` sections, so they take no options; a registered stage
#: (:data:`medrl.methods.stages.STAGES`) names its own (``Stage.options_of``, ``Stage.fixed``).
REFINE_OPTIONS = ("medrl.data.curation.refine:refine_vqa", ("records", "judge", "audit_log"))


def stage_options_function(kind: str) -> tuple[Any, tuple[str, ...]]:
    """``(function whose keyword arguments are the options of a stage of kind, arguments set by
    the stage itself)``; ``(None, ())`` for a kind that takes no options."""
    from medrl.common.registry import load_object
    from medrl.methods.stages import STAGES

    if kind == "refine":
        return load_object(REFINE_OPTIONS[0]), REFINE_OPTIONS[1]
    if kind in ("rl", "sft") or kind not in STAGES:
        return None, ()
    stage = STAGES.get(kind)
    return stage.options_function(), stage.fixed


def check_stage_options(stages: typing.Sequence[Any]) -> list[tuple[str, str]]:
    """Each stage's ``options`` against the keyword arguments of the function that runs it."""
    problems = []
    for i, st in enumerate(stages):
        where = f"stages[{i}].options"
        fn, fixed = stage_options_function(st.kind)
        if fn is None:
            for key in st.options:
                problems.append((f"{where}.{key}", f"a {st.kind!r} stage takes no options" + (
                    f" (its settings are the recipe's {'grpo' if st.kind == 'rl' else 'sft'} section)"
                    if st.kind in ("rl", "sft") else "")))
            continue
        for key in st.options:
            if key in fixed:
                problems.append((f"{where}.{key}", "set by the pipeline itself, not an option"))
        problems += check_call_options(fn, {k: v for k, v in st.options.items() if k not in fixed}, where,
                                       skip=fixed)
    return problems


@functools.lru_cache(maxsize=None)
def _adapter(hint: Any) -> TypeAdapter | None:
    try:
        return TypeAdapter(hint, config=ConfigDict(allow_inf_nan=False))
    except Exception:
        try:
            return TypeAdapter(hint)
        except Exception:  # a type pydantic cannot check: accept anything
            return None


def type_problem(hint: Any, value: Any) -> str | None:
    """A one-line reason ``value`` does not fit ``hint`` (None when it fits or cannot be checked)."""
    if hint is None or hint is Any:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number (NaN and infinity are refused), got {value!r}"
    try:
        adapter = _adapter(hint)
    except TypeError:  # unhashable hint
        adapter = None
    if adapter is None:
        return None
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        return f"expected {_type_name(hint)}, got {value!r} ({exc.errors()[0]['msg']})"
    except Exception:  # noqa: BLE001 - validators of exotic types: do not block on them
        return None
    return None


def _type_name(hint: Any) -> str:
    name = getattr(hint, "__name__", None)
    if name and not typing.get_args(hint):
        return name
    return str(hint).replace("typing.", "")


def coerce(hint: Any, value: Any) -> Any:
    """``value`` converted to ``hint`` when that gives a plain number or bool (``"1e-6"`` ->
    ``1e-06`` for a float field); anything else is returned unchanged."""
    if isinstance(value, str):
        adapter = _adapter(hint) if hint is not None else None
        if adapter is not None:
            try:
                out = adapter.validate_python(value)
            except Exception:  # noqa: BLE001
                return value
            if isinstance(out, (bool, int, float)) and not isinstance(out, str):
                return out
    return value


# --------------------------------------------------------------------------------------------
# TRL config sections


@functools.lru_cache(maxsize=None)
def trl_fields(config: str) -> dict[str, Any]:
    """``{field name: annotation}`` of ``trl.GRPOConfig`` / ``trl.SFTConfig``."""
    import dataclasses

    import trl

    cls = getattr(trl, config)
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001
        hints = {}
    return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(cls)}


def check_trl_section(section: dict, config: str, where: str, extra: dict[str, Any] | None = None,
                      forbidden: dict[str, str] | None = None) -> tuple[dict, list[tuple[str, str]]]:
    """Check a ``grpo`` / ``sft`` mapping against the fields of ``trl.<config>`` (plus ``extra``
    names -> types of medrl's own options). Returns the section with plain numbers coerced and
    the problems found."""
    fields = {**trl_fields(config), **(extra or {})}
    out, problems = {}, []
    for key, value in (section or {}).items():
        if forbidden and key in forbidden:
            problems.append((f"{where}.{key}", forbidden[key]))
            continue
        if key not in fields:
            problems.append((f"{where}.{key}", f"not a field of trl.{config}{did_you_mean(key, fields)}"))
            continue
        hint = fields[key]
        if value is False and _takes_str_not_bool(hint):
            value = "no"  # YAML 1.1 reads `no` as False: `save_strategy: no` means the string
        msg = type_problem(hint, value)
        if msg:
            problems.append((f"{where}.{key}", msg))
            continue
        out[key] = coerce(hint, value)
    return out, problems


def _takes_str_not_bool(hint: Any) -> bool:
    """A field typed ``str`` (or a union with ``str``, such as transformers' strategy enums)
    that takes no bool."""
    args = set(typing.get_args(hint)) or {hint}
    return str in args and bool not in args


__all__ = ["REFINE_OPTIONS", "stage_options_function", "check_call_options", "check_reward_specs", "check_stage_options", "check_trl_section",
           "coerce", "trl_fields", "type_problem"]
