"""The typed schema of a recipe: one pydantic model per section, checked before any model loads.

Every key a recipe (or a ``--set`` override, or a profile) may hold is declared here, with its
type, its default and its help (the field's ``description``: ``medrl recipes show NAME
--explain`` prints it, and an error about the key quotes it). The ``algorithm`` section is built
from the method registry (:func:`algorithm_section`): each method contributes its section, typed
by its config; a method listed by import path contributes its own. What is refused, with the
file, the key and the reason in one line:

- an unknown key at any depth (``algorithm.mrpo.shapng``), with "did you mean ..." from
  :func:`difflib.get_close_matches` over the keys allowed at that place;
- a wrong type (``grpo.beta: "0.01abc"``, ``grpo.learning_rate: [1e-6]``), NaN or infinity
  (a weight of ``.nan``), a value outside its set (``algorithm.mrpo.shaping: cubic``);
- an ``algorithm.advantage`` no estimator is registered under;
- reward names and options, stage options, ``grpo.*`` / ``sft.*`` keys against what takes them
  (:mod:`medrl.train.option_checks`);
- cross-references: ``algorithm.log_rewards`` must name rewards of the recipe, what each method
  of the run needs (:meth:`medrl.methods.Method.recipe_problems`), and a reward option set both
  by a method's config and under ``rewards[*].options`` (one place per setting).

Other sections belong to other parts of medrl and are declared here so a recipe can set them
(``monitor`` for :mod:`medrl.train.monitor`, ``algorithm.dynamic_sampling``, the judge's prices,
``data.max_pixels``); their defaults mean "the owning module's default". To add a key: add a
field, with its help, to the section's model below.
"""

from __future__ import annotations

import difflib
import functools
import typing
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from medrl.common.registry import did_you_mean
from medrl.train.option_checks import check_reward_specs, check_stage_options

PROMPT_STYLES = ("think_answer", "modality_think_answer", "plain")
OPEN_MODES = ("papers", "answer_type", "strict")
#: the stage kinds the pipeline runs itself (medrl.train.pipeline), with their help; every other
#: kind is a stage a method or plugin registers (medrl.methods.stages.STAGES)
BUILTIN_STAGES = {
    "rl": "RL with the recipe's rewards and grpo section",
    "sft": "SFT with the sft section, on the records the stage before left for it (else the run's records)",
    "refine": "a judge audits every question-answer pair and rewrites misaligned questions (data.refine puts it "
              "first)",
}


def stage_kinds() -> list[str]:
    """Every stage kind a recipe may list: the pipeline's own and the registered ones."""
    from medrl.methods.stages import STAGES

    return [*BUILTIN_STAGES, *(k for k in STAGES.names() if k not in BUILTIN_STAGES)]


class _Section(BaseModel):
    """Unknown keys and NaN/inf are errors in every section."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_default=True)


class DataSection(_Section):
    """``data``: which records a run trains on and how their prompts look."""

    prompt_style: Literal["think_answer", "modality_think_answer", "plain"] = Field("think_answer", description=(
        "prompt asking for <think>...</think><answer>...</answer> (think_answer), the same after a modality "
        "tag (modality_think_answer, MediX-R1 Sec. 2.2), or the question alone (plain)"))
    open_only: bool | Literal["papers", "answer_type", "strict"] = Field(False, description=(
        "keep open-ended questions only: true/papers (the papers' rule), answer_type (the dataset's "
        "answer_type field), strict (both); false keeps all (medrl.data.filters)"))
    split: str | None = Field(None, description="dataset split to train on (train, test, ...); None: the source's default")
    limit: PositiveInt | None = Field(None, description="train on the first N records only (the cpu profile sets it)")
    rationales: str | list[str] | None = Field(None, description=(
        "MedThink rationale file(s) (R-RAD, R-SLAKE, R-Path JSON; a list for a union) attached to the records "
        "as gold reasoning"))
    require_gold_reasoning: bool = Field(False, description=(
        "drop records without gold reasoning (MRPO App. C.1 trains only on MedThink-aligned records)"))
    refine: bool | dict[str, Any] = Field(False, description=(
        "run ARMed's VQA refinement (a judge audits and rewrites question-answer pairs) as the first stage; "
        "a mapping gives its options"))
    max_pixels: PositiveInt | None = Field(None, description=(
        "image pixel cap for training/eval images (ARMed 401,408; MediX-R1 up to 4,194,304); None: the "
        "processor's default"))
    min_pixels: PositiveInt | None = Field(None, description="smallest image pixel count for the processor (medrl never upscales)")
    prefer: list[str] = Field(default_factory=list, description=(
        "named sources (name[:split]) to train on when --data is not given; the first present wins, else "
        "medrl's default (medrl.train.pipeline.training_source)"))

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
    """``algorithm.log_rewards``: which rewards are logged as the answer and process reward."""

    answer: str | None = Field(None, description="reward logged as answer_reward (and read by the monitor)")
    process: str | None = Field(None, description="reward logged as process_reward")


class AlgorithmBase(_Section):
    """``algorithm``: what medrl adds to TRL. Every registered method adds its own section
    (``algorithm.<method section>``, the method's typed config): :func:`algorithm_section`."""

    advantage: str = Field("grpo", description=(
        "advantage estimator (any name registered in medrl.advantages.ADVANTAGES: grpo = TRL's group "
        "advantage, gdpo, mrpo = MRPO's Eq. 7 token advantages, or a plugin's); left out, the listed method "
        "that provides one chooses it"))
    unscorable: Literal["exclude", "per_reward"] = Field("exclude", description=(
        "a rollout a reward cannot score (UNSCORABLE): exclude = no baseline, advantage 0, out of the loss; "
        "per_reward = only that reward is left out, like None"))
    log_rewards: LogRewards = Field(default_factory=LogRewards, description=(
        "rewards logged as answer_reward / process_reward"))
    correctness: Literal["auto", "exact", "judge", "embedding"] = Field("auto", description=(
        "the one correctness decision per rollout the rewards read: auto (exact for closed questions, the "
        "judge for open ones), exact, judge, embedding"))
    log_credit_every: NonNegativeInt = Field(10, description=(
        "write credit.jsonl (rollouts with their token advantages) every N optimizer steps; 0 = off"))
    log_credit_rollouts: NonNegativeInt = Field(4, description="rollouts per logged step in credit.jsonl")
    dynamic_sampling: bool | dict[str, Any] = Field(False, description=(
        "DAPO dynamic sampling (drop groups whose rewards are all equal and re-sample): false, true, or a "
        "mapping of its settings - enabled, max_rounds, mean_band (medrl.train.dynamic_sampling."
        "DynamicSamplingConfig; --explain lists each with its help)"))

    @field_validator("advantage")
    @classmethod
    def _registered(cls, name: str) -> str:
        from medrl.advantages import ADVANTAGES

        if name not in ADVANTAGES:
            known = ADVANTAGES.names()
            raise ValueError(f"unknown advantage estimator {name!r}{did_you_mean(name, known)}; registered: "
                             f"{', '.join(known)} (a plugin registers more with @ADVANTAGES.register)")
        return name

    @model_validator(mode="before")
    @classmethod
    def _switches(cls, data: Any) -> Any:
        # a method section may be written `capo: true` (on, its defaults) or `capo: false` (off)
        if isinstance(data, dict):
            sections = set(cls.model_fields) - set(AlgorithmBase.model_fields)
            data = {k: ({} if v is True else None if v is False else v) if k in sections else v
                    for k, v in data.items()}
        return data


def method_section_classes(listed: typing.Sequence[str] = ()) -> tuple:
    """The method classes whose sections a recipe may hold: every registered method, and the
    ones ``listed`` by import path (a plugin). Raises ``MethodConflict`` for a path that gives
    no method."""
    from medrl.common.registry import is_object_spec
    from medrl.methods import METHODS, get_method

    classes = [get_method(n) for n in METHODS.names()]
    classes += [get_method(n) for n in listed if isinstance(n, str) and is_object_spec(n)]
    return tuple(dict.fromkeys(classes))


@functools.lru_cache(maxsize=None)
def _algorithm_model(classes: tuple) -> type[AlgorithmBase]:
    from pydantic import create_model

    fields: dict[str, Any] = {}
    owners: dict[str, str] = {}
    for cls in classes:
        if not cls.section:
            continue
        if cls.section in AlgorithmBase.model_fields or cls.section in owners:
            other = owners.get(cls.section, "medrl's algorithm section")
            raise ValueError(f"method {cls.label()!r}: section {cls.section!r} is taken by {other}")
        owners[cls.section] = repr(cls.label())
        switch = (f"the method is on when algorithm.advantage is {cls.advantage!r} or methods lists it"
                  if cls.advantage else "setting it switches the method on (true: its defaults)")
        fields[cls.section] = (typing.Optional[cls.Config], Field(None, description=(
            f"{cls.paper or cls.label()}: the {cls.label()} method's config; {switch}")))
    return create_model("AlgorithmSection", __base__=AlgorithmBase, **fields)


def algorithm_section(listed: typing.Sequence[str] = ()) -> type[AlgorithmBase]:
    """The ``algorithm`` section model: :class:`AlgorithmBase` plus one optional field per method
    section (each registered method's, and those of methods ``listed`` by import path), typed by
    the method's config class - methods contribute their recipe sections."""
    return _algorithm_model(method_section_classes(listed))


class JudgeSection(_Section):
    """``judge``: how the run's judge is asked and priced."""

    images: bool | Literal["auto"] = Field(False, description=(
        "send the record's image with judge requests (auto: on for openai: judges, off for the text-only "
        "reference judge)"))
    image_max_side: int = Field(768, ge=16, description="longest side in pixels of an image sent to the judge")
    price_in_per_mtok: NonNegativeFloat | None = Field(None, description=(
        "judge price in USD per million input tokens (medrl.judges.cost); None: no cost shown"))
    price_out_per_mtok: NonNegativeFloat | None = Field(None, description=(
        "judge price in USD per million output tokens"))


class EncodersSection(_Section):
    """``encoders``: the papers' sentence encoders named in reward options."""

    substitute: bool | Literal["auto"] = Field("auto", description=(
        "replace a paper's encoder by the offline MiniLM: auto (when it is not in the local cache and the hub "
        "is offline), true (always), false (never; a missing encoder is an error)"))


class BatchSection(_Section):
    """The papers' batch, independent of the process count (see :mod:`medrl.train.batching`)."""

    global_prompts: PositiveInt | None = Field(None, description=(
        "prompts per optimizer update summed over all processes (each brings grpo.num_generations completions)"))
    updates_per_rollout: PositiveInt = Field(1, description=(
        "optimizer updates made from one generation batch of global_prompts x updates_per_rollout prompts"))
    micro_batch: PositiveInt | None = Field(None, description=(
        "completions per process per forward/backward pass (memory only; never changes the update)"))


class MonitorSection(_Section):
    """Options of the training monitor (:mod:`medrl.train.monitor`); None = its default."""

    enabled: bool | None = Field(None, description="watch every step for reward hacking (default on)")
    thresholds: dict[str, float] | None = Field(None, description=(
        "alert thresholds and settings by name (medrl.train.monitor.MonitorConfig: reward_rise, "
        "length_growth_max, format_drop, ...; --explain lists each with its help)"))
    window: PositiveInt | None = Field(None, description="steps in a trend window")
    probe_every: NonNegativeInt | None = Field(None, description="held-out probe every N steps (0 = off)")
    probe_records: NonNegativeInt | None = Field(None, description="held-out records the probe answers")
    stop_on_alert: bool | None = Field(None, description="save a checkpoint and stop when a hacking alert fires")


class ModelSection(_Section):
    """``model``: how the policy is loaded. 4-bit loading is QLoRA (``--qlora``): the base weights
    are quantized by bitsandbytes through transformers' ``BitsAndBytesConfig`` and only LoRA
    adapters train (peft's ``prepare_model_for_kbit_training``)."""

    load_in_4bit: bool = Field(False, description=(
        "QLoRA: load the policy's weights in 4-bit (bitsandbytes) and train LoRA adapters on them (--qlora; "
        "turns LoRA on); needs bitsandbytes with a backend for this machine (a CUDA GPU)"))
    bnb_4bit_quant_type: Literal["nf4", "fp4"] = Field("nf4", description=(
        "4-bit data type: nf4 (NormalFloat, the QLoRA paper's) or fp4"))
    bnb_4bit_compute_dtype: Literal["bfloat16", "float16", "float32"] = Field("bfloat16", description=(
        "dtype the 4-bit layers compute in"))
    bnb_4bit_use_double_quant: bool = Field(True, description="quantize the quantization constants too (QLoRA)")
    trust_remote_code: bool = Field(False, description=(
        "run code shipped in the model folder: set only by --trust-remote-code on the command line, never by a "
        "recipe, a profile or --set"))

    @field_validator("trust_remote_code")
    @classmethod
    def _flag_only(cls, value: bool) -> bool:
        if value:
            raise ValueError("running a model's own code is switched on only by --trust-remote-code on the command "
                             "line (a recipe, a profile or --set cannot)")
        return value

    def bnb_kwargs(self) -> dict[str, Any] | None:
        """``transformers.BitsAndBytesConfig`` keyword arguments (None unless ``load_in_4bit``)."""
        if not self.load_in_4bit:
            return None
        return {"load_in_4bit": True, "bnb_4bit_quant_type": self.bnb_4bit_quant_type,
                "bnb_4bit_compute_dtype": self.bnb_4bit_compute_dtype,
                "bnb_4bit_use_double_quant": self.bnb_4bit_use_double_quant}


class RewardSpec(_Section):
    """One entry of ``rewards``."""

    name: str = Field(description=(
        "a registered reward (medrl.rewards.REWARDS) or your own by import path (module:function, path.py:function)"))
    weight: float = Field(1.0, description="TRL reward weight (the total is the weighted sum)")
    options: dict[str, Any] = Field(default_factory=dict, description=(
        "keyword options of the reward's factory (the ones a method's config sets go in algorithm.<section>)"))

    @field_validator("weight", mode="before")
    @classmethod
    def _weight_number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # YAML "yes"/"true" would silently become 1.0
            raise ValueError(f"a reward weight must be a number, not a boolean ({value!r})")
        return value


class StageSpec(_Section):
    """One entry of ``stages``."""

    name: str | None = Field(None, description="stage folder name (stages/NN_<name>); default: its kind")
    kind: str = Field(description=(
        "rl (the recipe's rewards and grpo), sft (the sft section), refine (a judge audits the question-answer "
        "pairs), or a stage a method or plugin registers (medrl.methods.stages.STAGES; --explain lists them)"))
    options: dict[str, Any] = Field(default_factory=dict, description=(
        "keyword options of the function that runs the stage (refine and the registered stages; rl and sft take "
        "their settings from the grpo and sft sections)"))

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        known = stage_kinds()
        if kind not in known:
            raise ValueError(f"unknown stage kind {kind!r}{did_you_mean(kind, known)}; known: {', '.join(known)} (a "
                             "method or plugin registers more with medrl.methods.stages.register_stage)")
        return kind


class RecipeBase(_Section):
    """A recipe file; :func:`recipe_model` adds the methods' ``algorithm`` sections."""

    name: str | None = Field(None, description="recipe name (default: the file name)")
    description: str = Field("", description="what the recipe trains, in a few sentences")
    paper: str = Field("", description="the paper, arXiv id and sections the settings come from")
    methods: list[str] = Field(default_factory=list, description=(
        "methods the run composes (registered names, module:Class or path.py:Class), hooks chained in this "
        "order; empty: the ones the algorithm section and the rewards switch on"))
    data: DataSection = Field(default_factory=DataSection, description="which records and prompts")
    rewards: list[RewardSpec] = Field(default_factory=list, description="reward functions: {name, weight, options}")
    algorithm: AlgorithmBase = Field(default_factory=AlgorithmBase, description=(
        "what medrl adds to TRL: the advantage estimator, the methods' sections, unscorable rows, logs"))
    grpo: dict[str, Any] = Field(default_factory=dict, description="fields of TRL's GRPOConfig, passed through")
    sft: dict[str, Any] = Field(default_factory=dict, description=(
        "fields of TRL's SFTConfig plus lora, dtype, merge_lora (SFT stages and sft.yaml)"))
    stages: list[StageSpec] = Field(default_factory=list, description=(
        "multi-stage pipelines: {name, kind, options} run in order"))
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "per-recipe overlays (--profile NAME), merged on top of profiles.yaml"))
    encoders: EncodersSection = Field(default_factory=EncodersSection, description="the papers' sentence encoders")
    judge: JudgeSection = Field(default_factory=JudgeSection, description="judge images and prices")
    batch: BatchSection = Field(default_factory=BatchSection, description="the paper's batch for any process count")
    monitor: MonitorSection = Field(default_factory=MonitorSection, description="reward-hacking monitor options")
    model: ModelSection = Field(default_factory=ModelSection, description=(
        "how the policy is loaded: 4-bit QLoRA (load_in_4bit)"))

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        # "sft:" with nothing under it is YAML null: an empty section, as before
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not (v is None and k not in ("name",))}
        return data


@functools.lru_cache(maxsize=None)
def _recipe_model(algorithm: type[AlgorithmBase]) -> type[RecipeBase]:
    from pydantic import create_model

    base = RecipeBase.model_fields["algorithm"]
    return create_model("RecipeModel", __base__=RecipeBase,
                        algorithm=(algorithm, Field(default_factory=algorithm, description=base.description)))


def recipe_model(listed: typing.Sequence[str] = ()) -> type[RecipeBase]:
    """The recipe model for a recipe whose ``methods`` are ``listed``: :class:`RecipeBase` with
    :func:`algorithm_section`."""
    return _recipe_model(algorithm_section(listed))


SECTIONS = tuple(RecipeBase.model_fields)


# --------------------------------------------------------------------------------------------
# Error messages


class RecipeError(ValueError):
    """A recipe file or override is invalid; the message names the file and the field."""


class SchemaError(ValueError):
    """A recipe value is invalid; ``problems`` are ``(dotted key, message)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {m}" if k else m for k, m in problems))


def dotted(loc: tuple) -> str:
    """``("rewards", 2, "weight")`` -> ``"rewards[2].weight"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _model_at(loc: tuple, model: Any) -> type[BaseModel] | None:
    """The section model (under the recipe model ``model``) that holds the key at ``loc``."""
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


def field_help(loc: tuple, model: Any = RecipeBase) -> str | None:
    """The help text (``description``) of the field at ``loc`` (``("algorithm", "mrpo", "tau")``)."""
    parent = _model_at(loc[:-1], model)
    field = parent.model_fields.get(loc[-1]) if parent is not None and loc else None
    return field.description if field is not None else None


def _describe(err: dict, model: Any) -> tuple[str, str]:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "is-instance"))))
    # pydantic adds the union member tried ("bool", "literal['auto']") to the location: drop it
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p in ("bool", "str", "int", "float",
                                                                                  "dict[str,any]", "list[str]"))))
    key = dotted(loc)
    if err["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1], model)
        allowed = list(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
        hint = did_you_mean(loc[-1], allowed) or (f"; allowed: {', '.join(allowed)}" if allowed else "")
        about = field_help((*loc[:-1], close[0]), model) if close else None
        return key, f"unknown key {loc[-1]!r}{hint}" + (f" ({close[0]}: {about})" if about else "")
    value = err.get("input")
    msg = err["msg"]
    if err["type"] == "finite_number":
        msg = "must be a finite number (NaN and infinity are refused)"
    about = field_help(loc, model) if loc and isinstance(loc[-1], str) else None
    return key, f"{msg}, got {value!r}" + (f" [{loc[-1]}: {about}]" if about else "")


def validate_tree(raw: dict) -> RecipeBase:
    """Validate a merged recipe mapping against :func:`recipe_model` (the methods it lists by
    import path contribute their sections); raises :class:`SchemaError` listing every problem."""
    from medrl.methods import MethodConflict

    listed = raw.get("methods") if isinstance(raw, dict) else None
    try:
        model_cls = recipe_model([n for n in listed or () if isinstance(n, str)] if isinstance(listed, list) else ())
    except (MethodConflict, ValueError) as exc:
        raise SchemaError([("methods", str(exc))]) from None
    try:
        model = model_cls.model_validate(raw)
    except ValidationError as exc:
        problems, seen = [], set()
        for err in exc.errors():
            p = _describe(err, model_cls)
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


def _cross_checks(m: RecipeBase) -> list[tuple[str, str]]:
    problems = []
    names = [r.name for r in m.rewards]
    for key in ("answer", "process"):
        v = getattr(m.algorithm.log_rewards, key)
        if v is not None and v not in names:
            problems.append((f"algorithm.log_rewards.{key}",
                             f"{v!r} is not among the recipe's rewards {names}{did_you_mean(v, names)}"))
    if not m.rewards and not m.sft:
        problems.append(("", "a recipe needs 'rewards' (RL) or an 'sft' section"))
    return problems


def check_methods(m: RecipeBase) -> list[tuple[str, str]]:
    """The run's methods (:func:`medrl.methods.compose`): known names (with "did you mean"), no
    combination that cannot work, an ``algorithm.advantage`` that agrees with them, what each
    method needs of the recipe (:meth:`~medrl.methods.Method.recipe_problems`), and every
    setting in one place: a reward option a method's config sets is refused under
    ``rewards[*].options``."""
    from medrl.common.registry import is_object_spec
    from medrl.methods import METHODS, MethodConflict, active_method_names, compose

    known = METHODS.names()
    problems = [(f"methods[{i}]", f"unknown method {n!r}{did_you_mean(n, known)}; known: {', '.join(known)} "
                 "(or your own 'module:Class' / 'path.py:Class')")
                for i, n in enumerate(m.methods) if n not in known and not is_object_spec(n)]
    if problems:
        return problems
    algorithm = m.algorithm.model_dump()
    names = [r.name for r in m.rewards]
    try:
        methods = compose(m.methods or active_method_names(algorithm, reward_names=names), algorithm)
    except MethodConflict as exc:
        return [("methods", str(exc))]
    problems += _advantage_problems(m, methods)
    problems += _trainer_option_problems(m, methods)
    for method in methods:
        problems += method.recipe_problems(names)
        for i, spec in enumerate(m.rewards):
            for option in sorted(set(method.reward_options(spec.name)) & set(spec.options)):
                cfg = method.bound_options(spec.name)[option]
                problems.append((f"rewards[{i}].options.{option}", f"set by the {method.label()} method's config: "
                                 f"write it as algorithm.{method.section}.{cfg} (one place per setting)"))
    return problems


def _trainer_option_problems(m: RecipeBase, methods: list) -> list[tuple[str, str]]:
    """A part of the training machinery a method of the run turns on
    (:meth:`~medrl.methods.Method.trainer_options`) that the recipe also sets under its own key
    (``grpo.kl_clamp``, ...): one place per setting."""
    from medrl.methods import MethodConflict
    from medrl.methods.base import TRAINER_OPTION_KEYS, run_trainer_options

    try:
        opts = run_trainer_options(methods)
    except MethodConflict as exc:
        return [("methods", str(exc))]
    dynamic = m.algorithm.dynamic_sampling
    own = {"kl_clamp": (m.grpo or {}).get("kl_clamp"),
           "mean_band": dynamic.get("mean_band") if isinstance(dynamic, dict) else None,
           "best_checkpoint": (m.grpo or {}).get("metric_for_best_model")}
    problems = []
    for name, value in own.items():
        owner = next((x for x in methods if getattr(x.trainer_options(), name) is not None), None)
        if value is not None and owner is not None:
            problems.append((TRAINER_OPTION_KEYS[name], f"{value!r}, but the {owner.label()} method's config turns it "
                             f"on ({getattr(opts, name)!r}, algorithm.{owner.section}): set it in one place"))
    return problems


def _advantage_problems(m: RecipeBase, methods: list) -> list[tuple[str, str]]:
    """``algorithm.advantage`` against the run's methods and the ``grpo`` section: a listed
    provider wins; an estimator a registered method provides needs that method; an estimator
    TRL computes needs its TRL setting (``trl_options``)."""
    from medrl.advantages import get_advantage_fn
    from medrl.methods.base import advantage_problem

    problems = []
    want, explicit = m.algorithm.advantage, "advantage" in m.algorithm.model_fields_set
    providers = [x.advantage for x in methods if x.advantage]
    if providers and explicit and want not in providers:
        problems.append(("algorithm.advantage", f"{want!r}, but the method providing {providers[0]!r} is on: "
                         f"set algorithm.advantage={providers[0]} or leave it out"))
    why = advantage_problem(want, methods)
    if why:
        problems.append(("algorithm.advantage", f"{want!r}: {why}"))
    for key, value in (getattr(get_advantage_fn(want), "trl_options", None) or {}).items():
        if key in (m.grpo or {}) and m.grpo[key] != value:
            problems.append((f"grpo.{key}", f"{m.grpo[key]!r}, but algorithm.advantage={want} is TRL's {key}="
                             f"{value!r}"))
    return problems


#: learning rates above this are refused (an update that size destroys any pretrained model)
MAX_LEARNING_RATE = 1.0
#: learning rates above this get a warning (RL and SFT of VLMs use 1e-6 .. 2e-4)
HIGH_LEARNING_RATE = 1e-3


def _number(v: Any) -> float | None:
    """``v`` as a float when it is a number (or a number in text, as YAML 1.1 reads ``1e-5``)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


#: keys of each TRL section that must be > 0
POSITIVE = {"grpo": ("temperature", "per_device_train_batch_size", "generation_batch_size",
                     "gradient_accumulation_steps", "steps_per_generation"),
            "sft": ("per_device_train_batch_size", "gradient_accumulation_steps")}


def section_range_problems(section: str, values: dict | None) -> list[tuple[str, str]]:
    """The range checks of one ``grpo`` / ``sft`` mapping (a recipe's section, or ``medrl sft``'s
    options after its command-line shortcuts): positive sizes, the learning rate in (0, 1],
    ``max_grad_norm`` >= 0, and no ``trust_remote_code``."""
    problems = []
    values = values or {}
    for key in POSITIVE.get(section, ()):
        v = _number(values.get(key))
        if v is not None and v <= 0:
            problems.append((f"{section}.{key}", f"must be > 0, got {values[key]!r} (accepted: > 0)"))
    lr = _number(values.get("learning_rate"))
    if lr is not None and not 0 < lr <= MAX_LEARNING_RATE:
        problems.append((f"{section}.learning_rate", f"must be > 0 and at most {MAX_LEARNING_RATE:g}, got "
                         f"{values['learning_rate']!r} (accepted: 0 < learning_rate <= {MAX_LEARNING_RATE:g}; "
                         "the papers use 1e-6 .. 1e-5)"))
    norm = _number(values.get("max_grad_norm"))
    if norm is not None and norm < 0:
        problems.append((f"{section}.max_grad_norm", f"must be > 0, or 0 to turn gradient clipping off, got "
                         f"{values['max_grad_norm']!r} (accepted: max_grad_norm >= 0; transformers' "
                         "TrainingArguments: 0 disables clipping)"))
    init = values.get("model_init_kwargs")
    for where, holder in ((f"{section}.trust_remote_code", values),
                          (f"{section}.model_init_kwargs.trust_remote_code", init if isinstance(init, dict) else {})):
        if "trust_remote_code" in holder:
            problems.append((where, "running a model's own code is switched on only by --trust-remote-code on "
                             "the command line (a recipe, a profile or --set cannot)"))
    return problems


def check_ranges(m: RecipeBase) -> list[tuple[str, str]]:
    """Values outside their range, refused before any model loads, each naming the accepted
    range: ``grpo.temperature`` > 0, ``learning_rate`` in (0, 1], ``grpo.beta`` >= 0 (0 = no KL
    term), ``max_grad_norm`` > 0 or 0 (transformers: 0 turns clipping off), ``grpo.num_generations``
    >= 2 (a group needs two rollouts for a baseline), batch sizes > 0, and reward weights with at
    least one non-zero. ``trust_remote_code`` anywhere in ``grpo`` / ``sft`` is refused: only
    ``--trust-remote-code`` turns it on."""
    problems = section_range_problems("grpo", m.grpo) + section_range_problems("sft", m.sft)
    beta = _number((m.grpo or {}).get("beta"))
    if beta is not None and beta < 0:
        problems.append(("grpo.beta", f"must be >= 0, got {m.grpo['beta']!r} (accepted: beta >= 0; 0 turns the KL "
                         "term off)"))
    g = (m.grpo or {}).get("num_generations")
    if isinstance(g, (int, float)) and not isinstance(g, bool) and g < 2:
        problems.append(("grpo.num_generations", f"must be >= 2 (the group advantage compares rollouts of one "
                         f"prompt), got {g!r} (accepted: >= 2)"))
    if m.rewards and all(r.weight == 0 for r in m.rewards):
        problems.append(("rewards", "every reward weight is 0: at least one must be non-zero"))
    return problems


def range_warnings(grpo: dict, sft: dict) -> list[str]:
    """Values inside their range but far from what the papers use: a learning rate above
    :data:`HIGH_LEARNING_RATE`. One line each, for the preflight to print."""
    out = []
    for section, values in (("grpo", grpo or {}), ("sft", sft or {})):
        lr = _number(values.get("learning_rate"))
        if lr is not None and HIGH_LEARNING_RATE < lr <= MAX_LEARNING_RATE:
            out.append(f"{section}.learning_rate={values['learning_rate']!r} is above {HIGH_LEARNING_RATE:g}: RL and "
                       "SFT of vision-language models use 1e-6 .. 2e-4; a rate this high usually diverges within a "
                       "few steps")
    return out
