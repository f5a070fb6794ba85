"""The typed schema of a recipe: one pydantic model per section, checked before any model loads.

Every key a recipe (or a ``--set`` override, or a profile) may hold is declared here, with its
type and its default. What is refused, with the file, the key and the reason in one line:

- an unknown key at any depth (``algorithm.mrpo.shapng``), with "did you mean ..." from
  :func:`difflib.get_close_matches` over the keys allowed at that place;
- a wrong type (``grpo.beta: "0.01abc"``, ``grpo.learning_rate: [1e-6]``), NaN or infinity
  (a weight of ``.nan``), a value outside its set (``algorithm.mrpo.shaping: cubic``);
- a reward name that is neither registered nor a custom ``module:function`` /
  ``path.py:function`` (:func:`medrl.common.registry.is_object_spec`), and reward options
  of the wrong name or type (``capo_accuracy`` ``r_dar: "high"``) - checked against the
  factory's signature;
- ``grpo.*`` keys that are not fields of TRL's :class:`trl.GRPOConfig`, or of the wrong basic
  type for that field (checked against the dataclass annotations); ``sft.*`` likewise against
  :class:`trl.SFTConfig` plus medrl's own SFT options;
- cross-references: ``algorithm.log_rewards`` and the MRPO answer/process rewards must name
  rewards of the recipe.

Other sections belong to other parts of medrl and are declared here so a recipe can set them
(``monitor`` for :mod:`medrl.train.monitor`, ``algorithm.dynamic_sampling``, the judge's prices,
``data.max_pixels``); their defaults mean "the owning module's default". To add a key: add a
field to the section's model below.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import typing
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from medrl.methods.capo import CAPOConfig
from medrl.methods.mrpo import MRPOConfig

PROMPT_STYLES = ("think_answer", "modality_think_answer", "plain")
OPEN_MODES = ("papers", "answer_type", "strict")
STAGE_KINDS = ("rl", "sft", "knowledge_injection", "key_steps", "refine")


class _Section(BaseModel):
    """Unknown keys and NaN/inf are errors in every section."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_default=True)


class DataSection(_Section):
    prompt_style: Literal["think_answer", "modality_think_answer", "plain"] = "think_answer"
    open_only: bool | Literal["papers", "answer_type", "strict"] = False
    split: str | None = None
    limit: PositiveInt | None = None
    rationales: str | list[str] | None = None
    require_gold_reasoning: bool = False
    refine: bool | dict[str, Any] = False
    # image pixel cap for training/eval images (ARMed: 401,408; MediX-R1: 262,144..4,194,304)
    max_pixels: PositiveInt | None = None
    min_pixels: PositiveInt | None = None
    # named sources (``name[:split]``) to train on when ``--data`` is not given: the first one
    # present in the data folders wins (the paper's own training data, e.g. MediX-R1's
    # medix_rl:train), else medrl's default (medrl.train.pipeline.training_source)
    prefer: list[str] = Field(default_factory=list)

    @field_validator("prefer")
    @classmethod
    def _named_sources(cls, specs: list[str]) -> list[str]:
        from medrl.data.registry import SOURCES, parse_source

        for spec in specs:
            name = parse_source(spec)[0]
            if name not in SOURCES:
                raise ValueError(f"{spec!r} is not a named data source{did_you_mean(name, SOURCES)} "
                                 "(`medrl data sources` lists them; jsonl:/hf: paths go to --data)")
        return specs


class LogRewards(_Section):
    answer: str | None = None
    process: str | None = None


class AlgorithmSection(_Section):
    # "grpo": TRL's sequence-level advantage; "mrpo": the MRPO method's Eq. 7 token advantages
    advantage: Literal["grpo", "mrpo"] = "grpo"
    # the methods' typed configs (medrl/methods/<method>.py) hold these keys and their defaults
    mrpo: MRPOConfig = Field(default_factory=MRPOConfig)
    capo: CAPOConfig | None = None  # CAPO Eq. 3 corrupted-image rollouts; None = off
    unscorable: Literal["exclude", "per_reward"] = "exclude"
    log_rewards: LogRewards = Field(default_factory=LogRewards)
    correctness: Literal["auto", "exact", "judge", "embedding"] = "auto"
    log_credit_every: NonNegativeInt = 10
    log_credit_rollouts: NonNegativeInt = 4
    # dynamic sampling (drop all-equal groups and re-sample; medrl.train.dynamic_sampling):
    # false, true, or a mapping of that module's options
    dynamic_sampling: bool | dict[str, Any] = False

    @model_validator(mode="before")
    @classmethod
    def _capo_true(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("capo") is True:
            data = {**data, "capo": {}}
        elif isinstance(data, dict) and data.get("capo") is False:
            data = {**data, "capo": None}
        return data


class JudgeSection(_Section):
    images: bool | Literal["auto"] = False
    image_max_side: int = Field(768, ge=16)
    # judge cost accounting (medrl.judges.cost): USD per million input / output tokens
    price_in_per_mtok: NonNegativeFloat | None = None
    price_out_per_mtok: NonNegativeFloat | None = None


class EncodersSection(_Section):
    substitute: bool | Literal["auto"] = "auto"


class BatchSection(_Section):
    """The papers' batch, independent of the process count (see :mod:`medrl.train.batching`)."""

    global_prompts: PositiveInt | None = None
    updates_per_rollout: PositiveInt = 1
    micro_batch: PositiveInt | None = None


class MonitorSection(_Section):
    """Options of the training monitor (:mod:`medrl.train.monitor`); None = its default."""

    enabled: bool | None = None
    thresholds: dict[str, float] | None = None
    window: PositiveInt | None = None
    probe_every: NonNegativeInt | None = None
    probe_records: NonNegativeInt | None = None
    stop_on_alert: bool | None = None


class RewardSpec(_Section):
    name: str
    weight: float = 1.0
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("weight", mode="before")
    @classmethod
    def _weight_number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # YAML "yes"/"true" would silently become 1.0
            raise ValueError(f"a reward weight must be a number, not a boolean ({value!r})")
        return value


class StageSpec(_Section):
    name: str | None = None
    kind: Literal["rl", "sft", "knowledge_injection", "key_steps", "refine"]
    options: dict[str, Any] = Field(default_factory=dict)


class RecipeModel(_Section):
    name: str | None = None
    description: str = ""
    paper: str = ""
    # methods the run composes (medrl/methods/), hooks chained in this order; empty: the ones the
    # algorithm section switches on (advantage: mrpo -> mrpo, a capo section -> capo)
    methods: list[str] = Field(default_factory=list)
    data: DataSection = Field(default_factory=DataSection)
    rewards: list[RewardSpec] = Field(default_factory=list)
    algorithm: AlgorithmSection = Field(default_factory=AlgorithmSection)
    grpo: dict[str, Any] = Field(default_factory=dict)
    sft: dict[str, Any] = Field(default_factory=dict)
    stages: list[StageSpec] = Field(default_factory=list)
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    encoders: EncodersSection = Field(default_factory=EncodersSection)
    judge: JudgeSection = Field(default_factory=JudgeSection)
    batch: BatchSection = Field(default_factory=BatchSection)
    monitor: MonitorSection = Field(default_factory=MonitorSection)

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        # "sft:" with nothing under it is YAML null: an empty section, as before
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not (v is None and k not in ("name",))}
        return data


SECTIONS = tuple(RecipeModel.model_fields)


# --------------------------------------------------------------------------------------------
# Error messages


class SchemaError(ValueError):
    """A recipe value is invalid; ``problems`` are ``(dotted key, message)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {m}" if k else m for k, m in problems))


def did_you_mean(key: str, allowed: typing.Iterable[str]) -> str:
    """``"; did you mean 'shaping'?"`` or ``""``."""
    close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


def dotted(loc: tuple) -> str:
    """``("rewards", 2, "weight")`` -> ``"rewards[2].weight"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The section model that holds the key at ``loc`` (for the allowed-keys list)."""
    model: Any = RecipeModel
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = model.model_fields.get(part)
        if field is None:
            return None
        model = _unwrap_model(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap_model(annotation: Any) -> Any:
    for arg in (typing.get_args(annotation) or (annotation,)):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
        inner = typing.get_args(arg)
        for a in inner:
            if isinstance(a, type) and issubclass(a, BaseModel):
                return a
    return annotation


def _describe(err: dict) -> tuple[str, str]:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "is-instance"))))
    # pydantic adds the union member tried ("bool", "literal['auto']") to the location: drop it
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p in ("bool", "str", "int", "float",
                                                                                  "dict[str,any]", "list[str]"))))
    key = dotted(loc)
    if err["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1])
        allowed = list(parent.model_fields) if parent else []
        hint = did_you_mean(loc[-1], allowed) or (f"; allowed: {', '.join(allowed)}" if allowed else "")
        return key, f"unknown key {loc[-1]!r}{hint}"
    value = err.get("input")
    msg = err["msg"]
    if err["type"] == "finite_number":
        msg = "must be a finite number (NaN and infinity are refused)"
    return key, f"{msg}, got {value!r}"


def validate_tree(raw: dict) -> RecipeModel:
    """Validate a merged recipe mapping; raises :class:`SchemaError` listing every problem."""
    try:
        model = RecipeModel.model_validate(raw)
    except ValidationError as exc:
        problems, seen = [], set()
        for err in exc.errors():
            p = _describe(err)
            if p not in seen:
                seen.add(p)
                problems.append(p)
        raise SchemaError(_prefer_specific(problems)) from None
    problems = _cross_checks(model)
    problems += check_methods(model)
    problems += check_ranges(model)
    problems += check_reward_specs(model.rewards)
    problems += check_stage_options(model.stages)
    if isinstance(model.data.refine, dict):  # options of the refine stage data.refine prepends
        problems += [(k.replace("stages[0].options", "data.refine"), m)
                     for k, m in check_stage_options([StageSpec(kind="refine", options=model.data.refine)])]
    if problems:
        raise SchemaError(problems)
    return model


def _prefer_specific(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # a union failure reports one line per member at the same key: keep the first per key
    out, keys = [], set()
    for k, m in problems:
        if k in keys:
            continue
        keys.add(k)
        out.append((k, m))
    return out


def _cross_checks(m: RecipeModel) -> list[tuple[str, str]]:
    problems = []
    names = [r.name for r in m.rewards]
    for key in ("answer", "process"):
        v = getattr(m.algorithm.log_rewards, key)
        if v is not None and v not in names:
            problems.append((f"algorithm.log_rewards.{key}",
                             f"{v!r} is not among the recipe's rewards {names}{did_you_mean(v, names)}"))
    if m.algorithm.advantage == "mrpo":
        for key in ("answer_reward", "process_reward"):
            v = getattr(m.algorithm.mrpo, key)
            if v not in names:
                problems.append((f"algorithm.mrpo.{key}",
                                 f"{v!r} is not among the recipe's rewards {names}{did_you_mean(v, names)}"))
    if not m.rewards and not m.sft:
        problems.append(("", "a recipe needs 'rewards' (RL) or an 'sft' section"))
    return problems


def check_methods(m: RecipeModel) -> list[tuple[str, str]]:
    """``methods``: registered names (with "did you mean"), no combination that cannot work
    (:func:`medrl.methods.compose`), and an ``algorithm.advantage`` that agrees with them."""
    from medrl.methods import METHODS, MethodConflict, compose

    if not m.methods:
        return []
    from medrl.common.registry import is_object_spec

    known = METHODS.names()
    problems = [(f"methods[{i}]", f"unknown method {n!r}{did_you_mean(n, known)}; known: {', '.join(known)} "
                 "(or your own 'module:Class' / 'path.py:Class')")
                for i, n in enumerate(m.methods) if n not in known and not is_object_spec(n)]
    if problems:
        return problems
    try:
        methods = compose(m.methods, m.algorithm.model_dump())
    except MethodConflict as exc:
        return [("methods", str(exc))]
    providers = [x.advantage for x in methods if x.advantage]
    if providers and "advantage" in m.algorithm.model_fields_set and m.algorithm.advantage not in providers:
        problems.append(("algorithm.advantage", f"{m.algorithm.advantage!r}, but the listed method "
                         f"{providers[0]!r} provides the advantages: set algorithm.advantage={providers[0]} "
                         "or leave it out"))
    return problems


def check_ranges(m: RecipeModel) -> list[tuple[str, str]]:
    """Values outside their range, refused before any model loads: ``grpo.temperature`` and
    ``learning_rate`` > 0, ``grpo.num_generations`` >= 2 (a group needs two rollouts for a
    baseline), batch sizes > 0, and reward weights with at least one non-zero."""
    problems = []
    positive = {"grpo": ("temperature", "learning_rate", "per_device_train_batch_size", "generation_batch_size",
                         "gradient_accumulation_steps", "steps_per_generation"),
                "sft": ("learning_rate", "per_device_train_batch_size", "gradient_accumulation_steps")}
    for section, keys in positive.items():
        values = getattr(m, section) or {}
        for key in keys:
            v = values.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v <= 0:
                problems.append((f"{section}.{key}", f"must be > 0, got {v!r}"))
    g = (m.grpo or {}).get("num_generations")
    if isinstance(g, (int, float)) and not isinstance(g, bool) and g < 2:
        problems.append(("grpo.num_generations", f"must be >= 2 (the group advantage compares rollouts of one "
                         f"prompt), got {g!r}"))
    if m.rewards and all(r.weight == 0 for r in m.rewards):
        problems.append(("rewards", "every reward weight is 0: at least one must be non-zero"))
    return problems


# --------------------------------------------------------------------------------------------
# Reward names and options


def check_reward_specs(rewards: list[RewardSpec]) -> list[tuple[str, str]]:
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


#: Stage kind -> (module, function) whose keyword arguments a stage's ``options`` are, and the
#: arguments the pipeline passes itself. ``rl`` and ``sft`` stages take their settings from the
#: recipe's ``grpo`` / ``sft`` sections, so they take no options.
STAGE_OPTIONS = {
    "knowledge_injection": ("medrl.train.pipeline", "knowledge_injection", ("model", "records", "output_dir",
                                                                            "judge")),
    "refine": ("medrl.data.curation.refine", "refine_vqa", ("records", "judge", "audit_log")),
    "key_steps": ("medrl.data.curation.key_steps", "extract_key_steps", ("records", "judge", "results_path")),
}


def check_stage_options(stages: list[StageSpec]) -> list[tuple[str, str]]:
    """Each stage's ``options`` against the keyword arguments of the function that runs it."""
    import importlib

    problems = []
    for i, st in enumerate(stages):
        where = f"stages[{i}].options"
        if st.kind not in STAGE_OPTIONS:
            for key in st.options:
                problems.append((f"{where}.{key}", f"a {st.kind!r} stage takes no options (its settings are the "
                                 f"recipe's {'grpo' if st.kind == 'rl' else 'sft'} section)"))
            continue
        module, name, fixed = STAGE_OPTIONS[st.kind]
        fn = getattr(importlib.import_module(module), name)
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
