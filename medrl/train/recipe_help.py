"""Help on every key of a recipe: what ``medrl recipes show NAME --explain`` prints.

Every field of the recipe schema (:mod:`medrl.train.recipe_schema`) and of every method's config
(:mod:`medrl.methods`) carries its help as its pydantic ``description``; the ``grpo`` and ``sft``
keys take TRL's own help (the ``help`` metadata of :class:`trl.GRPOConfig` /
:class:`trl.SFTConfig`); a reward's options take the help written next to its factory
(:func:`medrl.rewards.base.document_options`) or, when a method's config sets the option, that
field's help; the settings of dynamic sampling and of the monitor take the ``help`` metadata of
their dataclasses (:class:`medrl.train.dynamic_sampling.DynamicSamplingConfig`,
:class:`medrl.train.monitor.MonitorConfig`); a stage kind its registered help. :func:`explain`
walks a resolved recipe and prints each key's value with its help; :func:`fields_without_help`
lists the fields that have none (a test keeps it empty).
"""

from __future__ import annotations

import dataclasses
import functools
import textwrap
import typing
from typing import Any, Iterator

from pydantic import BaseModel

from medrl.train.recipe_schema import AlgorithmBase, RecipeBase, _unwrap_model, algorithm_section, recipe_model
from medrl.train.recipes import Recipe, reward_options, run_methods

INDENT = "  "


def model_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any, type[BaseModel] | None]]:
    """``(dotted key, FieldInfo, nested model or None)`` of ``model`` and its nested sections."""
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        nested = _unwrap_model(field.annotation)
        nested = nested if isinstance(nested, type) and issubclass(nested, BaseModel) else None
        yield key, field, nested
        if nested is not None:
            yield from model_fields(nested, key + ".")


def fields_without_help(listed: typing.Sequence[str] = ()) -> list[str]:
    """Dotted keys of the recipe model (every registered method's section included, and those
    ``listed`` by import path) whose field has no help text; also every option of a registered
    reward (``rewards.<name>.<option>``), every dynamic-sampling and monitor setting and every
    registered stage kind without help."""
    out = [key for key, field, _ in model_fields(recipe_model(listed)) if not (field.description or "").strip()]
    from medrl.rewards import REWARDS
    from medrl.rewards.base import reward_options_of

    for name in REWARDS.names():
        factory = REWARDS.get(name)
        helps = reward_option_help(name, factory)
        out += [f"rewards.{name}.{opt}" for opt in reward_options_of(factory) if not helps.get(opt)]
    for section, cls in dataclass_sections().items():
        out += [f"{section}.{k}" for k, h in dataclass_help(cls).items() if not h]
    from medrl.methods.stages import STAGES

    out += [f"stages.kind.{k}" for k in STAGES.names() if not STAGES.get(k).help.strip()]
    return out


def dataclass_help(cls: type) -> dict[str, str]:
    """``{field: help}`` of a settings dataclass (the ``help`` metadata of each field)."""
    return {f.name: " ".join(str(f.metadata.get("help", "")).split()) for f in dataclasses.fields(cls)}


def dataclass_sections() -> dict[str, type]:
    """The settings dataclasses a recipe fills, by the key that holds them."""
    from medrl.train.dynamic_sampling import DynamicSamplingConfig
    from medrl.train.monitor.config import MonitorConfig

    return {"algorithm.dynamic_sampling": DynamicSamplingConfig, "monitor": MonitorConfig}


def reward_option_help(name: str, factory: Any) -> dict[str, str]:
    """``{option: help}`` of the reward ``name``: a method's config field's help where a
    registered method sets the option, else the help written next to the factory."""
    from medrl.methods import METHODS, get_method
    from medrl.rewards.base import option_help

    helps = option_help(factory)
    for m in METHODS.names():
        cls = get_method(m)
        for opt, fld in cls.bound_options(name).items():
            desc = cls.Config.model_fields[fld].description
            helps[opt] = desc or helps.get(opt, "")
    return helps


@functools.lru_cache(maxsize=None)
def trl_help(config: str) -> dict[str, str]:
    """``{field: help}`` of ``trl.GRPOConfig`` / ``trl.SFTConfig`` (TRL's own field help)."""
    import trl

    return {f.name: " ".join(str(f.metadata.get("help", "")).split()) for f in dataclasses.fields(getattr(trl, config))}


def _wrap(text: str, depth: int) -> list[str]:
    pad = INDENT * (depth + 2)
    return textwrap.wrap(text, width=100, initial_indent=pad, subsequent_indent=pad) if text else []


def _value(v: Any) -> str:
    return repr(v) if isinstance(v, str) and (not v or " " in v) else str(v)


def _section(model: type[BaseModel], values: dict, depth: int) -> list[str]:
    lines = []
    for name, field in model.model_fields.items():
        value = values.get(name, field.get_default(call_default_factory=True))
        nested = _unwrap_model(field.annotation)
        if isinstance(nested, type) and issubclass(nested, BaseModel) and isinstance(value, dict):
            lines.append(f"{INDENT * (depth + 1)}{name}:")
            lines += _wrap(field.description or "", depth)
            lines += _section(nested, value, depth + 1)
            continue
        lines.append(f"{INDENT * (depth + 1)}{name} = {_value(value)}")
        lines += _wrap(field.description or "", depth)
    return lines


def _algorithm(recipe: Recipe) -> list[str]:
    from medrl.train.dynamic_sampling import DynamicSamplingConfig

    section = algorithm_section(recipe.methods)
    alg = recipe.algorithm
    lines = _section(AlgorithmBase, alg, 0)
    ds = alg.get("dynamic_sampling")
    lines.append(f"{INDENT}dynamic_sampling settings (algorithm.dynamic_sampling.<name>):")
    lines += _dataclass(DynamicSamplingConfig, ds if isinstance(ds, dict) else {"enabled": bool(ds)}, 1)
    off = []
    for name, field in section.model_fields.items():
        if name in AlgorithmBase.model_fields:
            continue
        if alg.get(name) is None:
            off.append(name)
            continue
        lines.append(f"{INDENT}{name}: (on)")
        lines += _wrap(field.description or "", 0)
        lines += _section(_unwrap_model(field.annotation), alg[name], 1)
    if off:
        lines.append(f"{INDENT}(off: {', '.join(off)} - set a section to switch its method on)")
    return lines


def _rewards(recipe: Recipe) -> list[str]:
    """Each reward with every option it takes: the value it is built with (set, or the factory's
    default) and the option's help."""
    import inspect

    from medrl.common.registry import is_object_spec
    from medrl.rewards import REWARDS
    from medrl.rewards.base import reward_options_of

    methods = run_methods(recipe)
    lines = []
    for i, (spec, options) in enumerate(zip(recipe.rewards, reward_options(recipe))):
        lines.append(f"{INDENT}[{i}] {spec['name']} x {spec.get('weight', 1.0)}")
        known = not is_object_spec(spec["name"]) and spec["name"] in REWARDS
        factory = REWARDS.get(spec["name"]) if known else None
        helps = reward_option_help(spec["name"], factory) if known else {}
        try:
            params = inspect.signature(factory).parameters if known else {}
        except (TypeError, ValueError):
            params = {}
        names = list(options) + [o for o in (reward_options_of(factory) if known else []) if o not in options]
        for key in names:
            owner = next((m for m in methods if key in m.bound_options(spec["name"])), None)
            if key in options:
                value = options[key]
                where = (f"from algorithm.{owner.section}.{owner.bound_options(spec['name'])[key]}" if owner
                         else "rewards[*].options")
            else:
                p = params.get(key)
                value = p.default if p is not None and p.default is not inspect.Parameter.empty else "(default)"
                where = "default"
            lines.append(f"{INDENT * 2}{key} = {_value(value)}  ({where})")
            lines += _wrap(helps.get(key, ""), 1)
    return lines


def _dataclass(cls: type, values: dict, depth: int) -> list[str]:
    """Every field of the settings dataclass ``cls`` with its value (``values``, else the
    default) and its help."""
    helps = dataclass_help(cls)
    defaults = cls()
    lines = []
    for f in dataclasses.fields(cls):
        value = values.get(f.name)
        shown = value if value is not None else getattr(defaults, f.name)
        lines.append(f"{INDENT * (depth + 1)}{f.name} = {_value(shown)}" + ("" if value is not None else "  (default)"))
        lines += _wrap(helps.get(f.name, ""), depth)
    return lines


def _stages(recipe: Recipe) -> list[str]:
    from medrl.methods.stages import STAGES
    from medrl.train.recipe_schema import BUILTIN_STAGES

    lines = []
    for st in recipe.stages:
        lines.append(f"{INDENT}{st.get('name', st['kind'])} ({st['kind']}) {st.get('options') or ''}".rstrip())
        kind = st["kind"]
        lines += _wrap(BUILTIN_STAGES.get(kind) or (STAGES.get(kind).help if kind in STAGES else ""), 0)
    kinds = [*BUILTIN_STAGES, *(k for k in STAGES.names() if k not in BUILTIN_STAGES)]
    lines.append(f"{INDENT}(stage kinds: {', '.join(kinds)})")
    return lines


def _trl(section: dict, config: str) -> list[str]:
    helps = trl_help(config)
    lines = []
    for key, value in section.items():
        lines.append(f"{INDENT}{key} = {_value(value)}")
        lines += _wrap(helps.get(key) or "medrl's own option (docs/training.md)", 0)
    return lines


def describe_methods(recipe: Recipe) -> list[str]:
    """The run's methods in hook order, each with its resolved typed config and the rewards it
    configures (:mod:`medrl.methods`): the head of ``medrl recipes show``."""
    methods = run_methods(recipe)
    if not methods:
        return [f"methods of recipe {recipe.name}: none (TRL's GRPO with the recipe's rewards)"]
    lines = [f"methods of recipe {recipe.name} (hooks run in this order; advantage: {recipe.algorithm['advantage']}):"]
    names_in_recipe = [r["name"] for r in recipe.rewards]
    for m in methods:
        detail = (f"algorithm.{m.section}: " + ", ".join(f"{k}={v}" for k, v in m.config.model_dump().items())
                  if m.section else "no config")
        used = [n for n in names_in_recipe if n in m.rewards]
        lines.append(f"  {m.label()} ({m.paper}) - {detail}" + (f"; configures rewards {', '.join(used)}" if used else ""))
    return lines


def explain(recipe: Recipe) -> list[str]:
    """Every key of the resolved ``recipe`` with its value and its help, section by section."""
    lines = [f"recipe {recipe.name} ({recipe.source})"]
    lines += _wrap(recipe.paper, -1) + [""]
    methods = run_methods(recipe)
    lines.append("methods (hooks in this order): " + (", ".join(f"{m.label()} ({m.paper})" for m in methods)
                                                      or "none"))
    for name in ("data", "rewards", "algorithm", "batch", "judge", "encoders", "monitor", "model", "grpo", "sft",
                 "stages"):
        field = RecipeBase.model_fields[name]
        lines += ["", f"{name}:"] + _wrap(field.description or "", -1)
        value = getattr(recipe, name)
        if name == "algorithm":
            lines += _algorithm(recipe)
        elif name == "rewards":
            lines += _rewards(recipe)
        elif name in ("grpo", "sft"):
            lines += _trl(value, "GRPOConfig" if name == "grpo" else "SFTConfig")
        elif name == "stages":
            lines += _stages(recipe)
        elif name == "monitor":
            from medrl.train.monitor.config import MonitorConfig

            mon = dict(value or {})
            lines += _section(_unwrap_model(field.annotation), mon, 0)
            lines += [f"{INDENT}thresholds and settings (monitor.thresholds.<name>, or monitor.<name>):"]
            lines += _dataclass(MonitorConfig, {**mon, **(mon.get("thresholds") or {})}, 1)
        else:
            lines += _section(_unwrap_model(field.annotation), value or {}, 0)
    return lines


__all__ = ["describe_methods", "explain", "fields_without_help", "model_fields", "trl_help"]
