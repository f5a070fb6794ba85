"""Recipes: one YAML per method -> a resolved, validated config.

A recipe file (``medrl/recipes/<name>.yaml``) has these sections, each optional except ``name``:

``name`` / ``description`` / ``paper``
    identification; ``paper`` cites the paper (name, arXiv id, section) the hyperparameters come from.
``data``
    ``prompt_style`` (see :func:`medrl.data.to_hf_dataset`), ``open_only``, ``split``,
    ``limit`` (first N records; the CPU profile sets it), ``rationales`` (MedThink file),
    ``require_gold_reasoning`` and ``refine`` (see :func:`medrl.train.pipeline.load_training_records`),
    ``prefer`` (named sources to train on when no ``--data`` is given, the first present wins:
    :func:`medrl.train.pipeline.training_source`).
``rewards``
    list of ``{name, weight, options}``; ``name`` is a factory in :data:`medrl.rewards.REWARDS`,
    or your own reward function by import path (``mypkg.rewards:fn`` / ``path.py:fn``, TRL's
    reward signature, sync or async; :func:`custom_reward`).
``methods``
    the methods the run composes (``[mrpo, capo, armed]``; :mod:`medrl.methods`; a method of your
    own by import path ``my_pkg.mod:Class`` / ``path.py:Class`` or by its ``medrl.methods``
    entry-point name), their hooks chained in this order; left out, the ones ``algorithm`` and
    the rewards switch on.
``algorithm``
    what medrl adds to TRL: ``advantage`` (any registered estimator, :mod:`medrl.advantages`),
    one section per method (``algorithm.<method>``: its typed config, the one place its settings
    live, including the reward options it sets; setting a section switches its method on, but
    ``algorithm.advantage`` switches on a method that provides the estimator),
    ``unscorable`` (how an UNSCORABLE reward value is treated), ``log_rewards`` and
    ``log_credit_every`` / ``log_credit_rollouts`` (``credit.jsonl``, :mod:`medrl.train.credit`).
``grpo``
    fields of TRL's :class:`trl.GRPOConfig`, passed through unchanged (loss_type, beta,
    epsilon, vLLM, DeepSpeed/FSDP, ...). Unknown fields and wrong types are an error naming the
    recipe file and the key. ``use_bias_correction_kl`` defaults to false (the papers' plain k3).
``batch``
    the paper's batch for any process count: ``global_prompts``, ``updates_per_rollout``,
    ``micro_batch`` -> TRL's per-process fields at load time (:mod:`medrl.train.batching`).
``monitor``
    options of the training monitor (:mod:`medrl.train.monitor`).
``sft``
    options of the SFT stage (``medrl.train.sft``) for multi-stage recipes and ``sft.yaml``.
``stages``
    multi-stage pipelines: a list of ``{name, kind, options}`` with kind ``rl`` | ``sft`` |
    ``refine`` or a stage a method or plugin registers (:data:`medrl.methods.stages.STAGES`);
    see :mod:`medrl.train.pipeline` (``data.refine: true`` prepends ``refine`` to any recipe).
``profiles``
    per-recipe overlays merged on top of the shared ones in ``profiles.yaml``.
``encoders``
    ``substitute``: ``auto`` (default) | ``true`` | ``false`` - when the offline MiniLM replaces
    the papers' encoders named in reward options (:func:`medrl.common.embeddings.substitute_encoders`);
    the resolved section adds ``used`` and ``substitutions`` (written to ``config.yaml``).

Resolution order: recipe file < shared profile < the recipe's own profile < ``--set`` overrides
(``grpo.learning_rate=1e-5``; the value is parsed as YAML). Dicts merge key by key; lists and
scalars replace. The merged result is validated by :mod:`medrl.train.recipe_schema` (every key,
type and cross-reference, with "did you mean" for unknown keys) before any model loads.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from medrl.common.papers import resolve_citation
from medrl.train.custom_reward import custom_reward
from medrl.train.recipe_schema import (SECTIONS, AlgorithmBase, JudgeSection, RecipeError, SchemaError,
                                      did_you_mean)

RECIPE_DIR = Path(__file__).resolve().parents[1] / "recipes"
PROFILES_FILE = RECIPE_DIR / "profiles.yaml"
_NOT_RECIPES = {"profiles"}

__all__ = ["SECTIONS", "Recipe", "RecipeError", "load_recipe", "resolve_algorithm", "run_methods", "reward_options", "build_grpo_config", "policy_load_options", "run_name",
           "build_reward_funcs", "recipe_uses_judge", "list_recipes", "parse_override"]


@dataclass
class Recipe:
    """A resolved recipe. ``to_dict()`` is what the run folder stores as ``config.yaml``."""

    name: str
    source: str
    description: str = ""
    paper: str = ""
    data: dict = field(default_factory=dict)
    rewards: list = field(default_factory=list)
    methods: list = field(default_factory=list)
    algorithm: dict = field(default_factory=dict)
    grpo: dict = field(default_factory=dict)
    sft: dict = field(default_factory=dict)
    stages: list = field(default_factory=list)
    encoders: dict = field(default_factory=dict)
    judge: dict = field(default_factory=lambda: JudgeSection().model_dump(exclude_none=True))
    batch: dict = field(default_factory=dict)
    monitor: dict = field(default_factory=dict)
    #: how the policy loads: ``load_in_4bit`` (QLoRA) and the bitsandbytes options when set, and
    #: ``trust_remote_code`` when ``--trust-remote-code`` was given (only the defaults left out)
    model: dict = field(default_factory=dict)
    profile: str | None = None
    overrides: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def is_multi_stage(self) -> bool:
        return bool(self.stages)

    @property
    def is_rl(self) -> bool:
        return bool(self.rewards)


def list_recipes() -> list[str]:
    """Names of the recipes shipped in ``medrl/recipes``."""
    return sorted(p.stem for p in RECIPE_DIR.glob("*.yaml") if p.stem not in _NOT_RECIPES)


def deep_merge(base: dict, overlay: dict) -> dict:
    """Return ``base`` updated by ``overlay``: dicts merge recursively, anything else replaces."""
    out = copy.deepcopy(base)
    for k, v in (overlay or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"grpo.beta=0.0"`` -> (["grpo", "beta"], 0.0). The value is parsed as YAML."""
    if "=" not in text:
        raise RecipeError(f"override {text!r}: expected SECTION.KEY=VALUE (e.g. grpo.beta=0.0)")
    key, raw = text.split("=", 1)
    path = [p for p in key.strip().split(".") if p]
    if not path or path[0] not in SECTIONS:
        hint = did_you_mean(path[0], SECTIONS) if path else ""
        raise RecipeError(f"override {text!r}: the key must start with one of {', '.join(SECTIONS)}{hint}")
    from medrl.common import strict_yaml

    try:  # a key given twice in the value is refused; `!replace` marks a whole-section replacement
        value = strict_yaml.load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise RecipeError(f"override {text!r}: value is not valid YAML ({exc})") from None
    if isinstance(value, str) and _SCI_FLOAT.fullmatch(value.strip()):
        value = float(value)  # YAML 1.1 reads "1e-5" (no dot) as a string; users mean a number
    return path, value


_SCI_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _set_path(d: dict, path: list[str], value: Any) -> None:
    for p in path[:-1]:
        nxt = d.get(p)
        if not isinstance(nxt, dict):
            nxt = d[p] = {}
        d = nxt
    d[path[-1]] = value


def _read_yaml(path: Path) -> dict:
    from medrl.common import strict_yaml

    try:  # a key given twice at any depth is refused with its line (yaml.safe_load keeps the last)
        data = strict_yaml.without_markers(strict_yaml.load(path.read_text(), name=path))
    except FileNotFoundError:
        raise RecipeError(
            f"recipe {str(path)!r} not found; shipped recipes: {', '.join(list_recipes())}"
        ) from None
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path}: invalid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: a recipe must be a YAML mapping, got {type(data).__name__}")
    return data


def recipe_path(name_or_path: str | Path) -> Path:
    """A shipped recipe name (``mrpo``) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return RECIPE_DIR / f"{name_or_path}.yaml"


def load_recipe(
    name_or_path: str | Path,
    profile: str | None = None,
    overrides: Iterable[str] = (),
    *,
    num_processes: int | None = None,
    check_trl: bool = True,
    rewards: Iterable[str] = (),
) -> Recipe:
    """Load a recipe, apply a profile (e.g. ``"cpu"``) and ``--set`` overrides, validate it.

    Every key is checked against :mod:`medrl.train.recipe_schema` (unknown keys with "did you
    mean", wrong types, NaN, dangling reward names), ``grpo``/``sft`` against TRL's config fields
    (``check_trl``), all before any model loads; a problem raises :class:`RecipeError` naming the
    file, the key, and the ``--set`` it came from. The ``batch`` section is turned into TRL's
    per-process fields for ``num_processes`` (default: ``WORLD_SIZE``, else 1;
    :mod:`medrl.train.batching`).
    """
    path = recipe_path(name_or_path)
    raw = _read_yaml(path)
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        hints = "".join(f" ({k!r}{did_you_mean(k, SECTIONS)})" for k in unknown)
        raise RecipeError(f"{path}: unknown section(s) {unknown}{hints}; allowed: {', '.join(SECTIONS)}")
    raw = _with_profile(path, raw, profile, check_trl)
    overrides = list(overrides or [])
    origin: dict[tuple, str] = {}
    from medrl.common.strict_yaml import Replacement, section_replacement

    for text in overrides:
        keys, value = parse_override(text)
        why = section_replacement(raw, keys, value, text)  # --set grpo={} drops the section: only with !replace
        if why:
            raise RecipeError(f"{path}: {why}")
        _set_path(raw, keys, value.value if isinstance(value, Replacement) else value)
        origin[tuple(keys)] = text
    for text in rewards or ():  # --reward NAME[=WEIGHT]: one more reward, registered or custom
        name, weight = _parse_reward_arg(text)
        raw["rewards"] = [*(raw.get("rewards") or []), {"name": name, "weight": weight}]
        origin[("rewards", len(raw["rewards"]) - 1)] = f"--reward {text}"
    model = _validate(path, raw, origin, f"profile {profile!r}" if profile else "")

    grpo, sft = (_check_trl(path, model, origin, f" (with profile {profile!r})" if profile else "")
                 if check_trl else (dict(model.grpo), dict(model.sft)))

    batch = _batch_fields(path, model, grpo, num_processes)
    data = model.data.model_dump(exclude_unset=True)
    rewards = [r.model_dump() for r in model.rewards]
    rewards, encoders = _resolve_encoders(path, rewards, model.encoders.model_dump())
    algorithm = resolve_algorithm(model.algorithm, model.methods, [r.name for r in model.rewards])
    recipe = Recipe(
        name=str(model.name or path.stem),
        source=str(path),
        description=str(model.description or "").strip(),
        paper=resolve_citation(str(model.paper or "")),
        data=data,
        rewards=rewards,
        methods=list(model.methods),
        algorithm=algorithm,
        grpo=grpo,
        sft=sft,
        stages=[st.model_dump(exclude_none=True) for st in model.stages],
        encoders=encoders,
        judge=model.judge.model_dump(exclude_none=True),
        batch=batch if batch.get("global_prompts") else {},
        monitor=model.monitor.model_dump(exclude_none=True),
        model=model.model.model_dump(exclude_defaults=True),
        profile=profile,
        overrides=overrides,
    )
    return recipe


def _with_profile(path: Path, raw: dict, profile: str | None, check_trl: bool) -> dict:
    """``raw`` with the shared profile ``profile`` and the recipe's own one merged on top; every
    profile of the recipe is validated, used or not (a typo in one is found at once)."""
    own_profiles = raw.pop("profiles", None) or {}
    if not isinstance(own_profiles, dict):
        raise RecipeError(f"{path}: profiles must be a mapping of profile name -> overlay")
    shared = {}
    if profile is not None:
        shared = _read_yaml(PROFILES_FILE) if PROFILES_FILE.is_file() else {}
        if profile not in shared and profile not in own_profiles:
            known = sorted(set(shared) | set(own_profiles))
            raise RecipeError(f"{path}: unknown profile {profile!r}{did_you_mean(profile, known)}; "
                              f"known: {', '.join(known)}")
    for name, overlay in own_profiles.items():
        if name != profile:
            other = _validate(path, deep_merge(raw, overlay or {}), {}, f"profile {name!r}")
            if check_trl:
                _check_trl(path, other, {}, f" (with profile {name!r})")
    if profile is None:
        return raw
    return deep_merge(deep_merge(raw, shared.get(profile) or {}), own_profiles.get(profile) or {})


def _batch_fields(path: Path, model: Any, grpo: dict, num_processes: int | None) -> dict:
    """The ``batch`` section resolved for ``num_processes``; TRL's per-process fields it derives
    are written into ``grpo`` (:mod:`medrl.train.batching`) unless ``grpo`` sets them itself."""
    from medrl.train.batching import BatchError, derive_batch, process_count

    batch = model.batch.model_dump()
    if batch["global_prompts"]:
        explicit = [k for k in ("per_device_train_batch_size", "gradient_accumulation_steps",
                                "steps_per_generation", "generation_batch_size") if k in grpo]
        procs = int(num_processes or process_count())
        batch.update(num_processes=procs, applied=not explicit, explicit=explicit)
        if not explicit and model.rewards:
            try:
                derived = derive_batch(batch, grpo.get("num_generations", 8), procs)
            except BatchError as exc:
                raise RecipeError(f"{path}: batch: {exc}") from None
            grpo.update(derived)
            batch["derived"] = derived
    return batch


def resolve_algorithm(algorithm: "AlgorithmBase | dict | None", methods: Iterable[str] = (),
                      reward_names: Iterable[str] = ()) -> dict:
    """The ``algorithm`` section with every default filled in from the typed configs: the run's
    methods (``methods``, else those the section and ``reward_names`` switch on,
    :func:`medrl.methods.active_method_names`) get their full config under their section, the
    others ``None``; a method that provides an estimator chooses ``advantage`` when the section
    does not. Raises pydantic's ValidationError on a bad key or value."""
    from medrl.methods import active_method_names, compose
    from medrl.train.recipe_schema import algorithm_section

    listed = [m for m in methods or () if isinstance(m, str)]
    if not isinstance(algorithm, AlgorithmBase):
        algorithm = algorithm_section(listed).model_validate(algorithm or {})
    out = algorithm.model_dump()
    active = compose(listed or active_method_names(out, reward_names=list(reward_names)), out)
    for m in active:
        if m.section:
            out[m.section] = m.config.model_dump()
    provided = [m.advantage for m in active if m.advantage]
    if provided and "advantage" not in algorithm.model_fields_set:
        out["advantage"] = provided[0]
    return out


def run_methods(recipe: "Recipe") -> list:
    """The :class:`medrl.methods.Method` objects of a recipe's run, in hook order, configured."""
    from medrl.methods import active_method_names, compose

    names = recipe.methods or active_method_names(recipe.algorithm, reward_names=[r["name"] for r in recipe.rewards])
    return compose(names, recipe.algorithm)


def reward_options(recipe: Recipe) -> list[dict]:
    """The options each of the recipe's rewards is built with, in recipe order: those the run's
    methods' configs set (:meth:`medrl.methods.Method.reward_options`, e.g.
    ``algorithm.capo.r_dar``), then the reward's own ``options`` (the schema refuses a key in both)."""
    methods = run_methods(recipe)
    return [{**{k: v for m in methods for k, v in m.reward_options(spec["name"]).items()}, **(spec.get("options") or {})}
            for spec in recipe.rewards]


def _check_trl(path: Path, model, origin: dict, context: str) -> tuple[dict, dict]:
    """``grpo`` / ``sft`` checked against TRL's config fields; returns them (numbers coerced)."""
    from medrl.train.option_checks import check_trl_section

    grpo, problems = check_trl_section(model.grpo, "GRPOConfig", "grpo", extra={"kl_clamp": float | None}, forbidden={
        "reward_weights": "set reward weights in the 'rewards' list, not grpo.reward_weights",
        "output_dir": "the run folder is --out, not grpo.output_dir"})
    sft, more = check_trl_section(model.sft, "SFTConfig", "sft", extra={"lora": Any, "dtype": Any, "merge_lora": bool,
                                                                          "warmup_ratio": float})
    problems += more
    if problems:
        msg = _format(path, problems, origin)
        raise RecipeError(msg + (context if "--set" not in msg else ""))
    return grpo, sft


def _parse_reward_arg(text: str) -> tuple[str, float]:
    """``"pkg.mod:fn=0.5"`` -> ("pkg.mod:fn", 0.5); no ``=`` -> weight 1."""
    name, sep, weight = text.rpartition("=")
    if not sep:
        return text, 1.0
    try:
        return name, float(weight)
    except ValueError:
        raise RecipeError(f"--reward {text!r}: the weight after '=' must be a number") from None


def _validate(path: Path, raw: dict, origin: dict[tuple, str], context: str):
    from medrl.train.recipe_schema import validate_tree

    try:
        return validate_tree(raw)
    except SchemaError as exc:
        msg = _format(path, exc.problems, origin)
        raise RecipeError(msg + (f" (with {context})" if context and "--set" not in msg else "")) from None


def _format(path: Path, problems: list[tuple[str, str]], origin: dict[tuple, str]) -> str:
    """``file: key: reason (from --set ...)`` lines, one per problem."""
    lines = []
    for key, msg in problems:
        src = None
        for k, t in origin.items():
            from medrl.train.recipe_schema import dotted

            d = dotted(k)
            if key == d or key.startswith(d + ".") or key.startswith(d + "["):
                src = t
        src = src if src is None or src.startswith("--reward") else f"--set {src}"
        where = f"{key}: " if key else ""
        lines.append(f"{path}: {where}{msg}" + (f" (from {src})" if src else ""))
    return "\n".join(lines)


def _resolve_encoders(path: Path, rewards: list, section: Any) -> tuple[list, dict]:
    """The ``encoders`` section: ``substitute`` (auto | true | false, see
    :func:`medrl.common.embeddings.substitute_encoders`) applied to the rewards' encoder options;
    the resolved section lists the encoders used and every offline substitution (logged)."""
    import logging

    from medrl.common.embeddings import recipe_encoders, substitute_encoders

    section = dict(section or {})
    mode = section.get("substitute", "auto")
    try:
        rewards, subs = substitute_encoders(rewards, mode)
    except ValueError as exc:
        raise RecipeError(f"{path}: {exc}") from None
    for s in subs:
        logging.getLogger("medrl.train").warning(
            "offline encoder substitute: reward %s option %s uses %s instead of the paper's %s",
            s["reward"], s["option"], s["used"], s["paper_model"])
    return rewards, {**section, "substitute": mode, "used": recipe_encoders(rewards), "substitutions": subs}


def validate_recipe(recipe: Recipe) -> None:
    """Re-check a :class:`Recipe` built or edited in code against the schema (load_recipe
    already did this for a file)."""
    from medrl.train.recipe_schema import validate_tree

    raw = {k: v for k, v in recipe.to_dict().items()
           if k in SECTIONS and k not in ("encoders", "batch")}
    raw["encoders"] = {"substitute": (recipe.encoders or {}).get("substitute", "auto")}
    raw["model"] = {k: v for k, v in (recipe.model or {}).items() if k != "trust_remote_code"}  # the flag's
    try:
        validate_tree(raw)
    except SchemaError as exc:
        raise RecipeError(_format(Path(recipe.source), exc.problems, {})) from None


def policy_load_options(recipe: Recipe) -> dict:
    """Keyword arguments of :func:`medrl.models.load_policy` the recipe's ``model`` section gives:
    ``trust_remote_code`` (only ever set by ``--trust-remote-code``) and ``quantization`` (the
    ``BitsAndBytesConfig`` arguments of 4-bit QLoRA loading, or None)."""
    from medrl.train.recipe_schema import ModelSection

    section = dict(recipe.model or {})
    trust = bool(section.pop("trust_remote_code", False))
    return {"trust_remote_code": trust, "quantization": ModelSection.model_validate(section).bnb_kwargs()}


# --------------------------------------------------------------------------------------------
# Building TRL objects


def grpo_config_fields() -> set[str]:
    from medrl.train.kl_clamp import GRPOConfig  # TRL's, plus kl_clamp

    return {f.name for f in dataclasses.fields(GRPOConfig)}


def run_name(output_dir: str | Path) -> str:
    """The name trackers (W&B, MLflow, ...) give a run: its folder's name; a stage of a
    multi-stage run (``RUN/stages/03_rl``) is ``RUN-03_rl``."""
    p = Path(output_dir)
    if p.parent.name == "stages" and p.parent.parent.name:
        return f"{p.parent.parent.name}-{p.name}"
    return p.name or str(p)


def build_grpo_config(recipe: Recipe, output_dir: str | Path, **extra: Any):
    """TRL ``GRPOConfig`` from the recipe's ``grpo`` section plus ``extra`` (which wins).

    Everything in ``grpo`` goes to TRL unchanged (``use_bias_correction_kl`` defaults to False:
    the papers' plain k3 KL; ``gradient_checkpointing`` to False when training on the CPU,
    :func:`medrl.train.speed.gradient_checkpointing_default`) - that is how loss variants (``loss_type``,
    ``importance_sampling_level``, ``epsilon_high``), GDPO (``multi_objective_aggregation``),
    vLLM (``use_vllm``, ``vllm_mode``, ...) and scale-out (``deepspeed``, ``fsdp``,
    ``fsdp_config``) reach the trainer. ``reward_weights`` come from the ``rewards`` list.
    The config is TRL's with one field added, ``kl_clamp`` (:mod:`medrl.train.kl_clamp`).
    """
    from medrl.train.kl_clamp import GRPOConfig
    from medrl.train.speed import gradient_checkpointing_default

    known = grpo_config_fields()
    kwargs = dict(recipe.grpo)
    kwargs.update(extra)
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise RecipeError(f"{recipe.source}: grpo: unknown GRPOConfig field(s) {unknown}")
    if "reward_weights" in kwargs:
        raise RecipeError(f"{recipe.source}: set reward weights in the 'rewards' list, not grpo.reward_weights")
    if recipe.rewards:
        kwargs["reward_weights"] = [float(r.get("weight", 1.0)) for r in recipe.rewards]
    # The five papers' KL term is the plain k3 estimator exp(-d) + d - 1 (d = log pi - log pi_ref);
    # TRL >= 1.x multiplies it by the importance ratio unless told otherwise. A recipe that wants
    # TRL's bias-corrected form says use_bias_correction_kl: true.
    kwargs.setdefault("use_bias_correction_kl", False)
    # an estimator TRL computes itself (grpo, gdpo) brings its TRL setting (the schema refused a contradiction)
    from medrl.advantages import get_advantage_fn

    for key, value in (getattr(get_advantage_fn(recipe.algorithm.get("advantage", "grpo")), "trl_options", None)
                       or {}).items():
        kwargs.setdefault(key, value)
    gradient_checkpointing_default(kwargs)  # off on the CPU, TRL's (on) on a GPU: medrl.train.speed
    if (recipe.model or {}).get("trust_remote_code"):  # --trust-remote-code: TRL's reference model loads with it
        kwargs["trust_remote_code"] = True
    kwargs.setdefault("run_name", run_name(output_dir))  # W&B and other trackers name the run after its folder
    kwargs["output_dir"] = str(output_dir)
    try:
        return GRPOConfig(**kwargs)
    except (TypeError, ValueError) as exc:
        raise RecipeError(f"{recipe.source}: invalid grpo settings: {exc}") from exc


def build_reward_funcs(recipe: Recipe, judge: Any = None) -> tuple[list, list[float]]:
    """Instantiate the recipe's rewards from :data:`medrl.rewards.REWARDS`.

    Options come from the run's methods' configs (:meth:`medrl.methods.Method.reward_options`,
    e.g. ``algorithm.armed.lambda1``) and the reward's own ``options``. A factory that takes a
    ``judge`` argument gets ``judge``; one that needs it when none was given raises a clear
    error. Returns ``(reward_funcs, weights)`` in recipe order.
    """
    import inspect

    from medrl.rewards import REWARDS

    from medrl.common.registry import is_object_spec

    funcs, weights = [], []
    for i, (spec, options) in enumerate(zip(recipe.rewards, reward_options(recipe))):
        name = spec["name"]
        if is_object_spec(name):
            funcs.append(custom_reward(name, options, where=f"{recipe.source}: rewards[{i}]"))
            weights.append(float(spec.get("weight", 1.0)))
            continue
        try:
            factory = REWARDS.get(name)
        except KeyError as exc:
            raise RecipeError(f"{recipe.source}: rewards[{i}]: {exc.args[0]}") from None
        params = inspect.signature(factory).parameters
        if "judge" in params and "judge" not in options:
            if judge is not None:
                options["judge"] = judge
            elif params["judge"].default is inspect.Parameter.empty:
                raise RecipeError(
                    f"{recipe.source}: reward {name!r} needs a judge; pass --judge reference or "
                    "--judge openai:<model>"
                )
        try:
            fn = factory(**options)
        except TypeError as exc:
            raise RecipeError(f"{recipe.source}: rewards[{i}] ({name}): bad options {options}: {exc}") from None
        if getattr(fn, "__name__", None) != name:
            # The trainer finds the MRPO answer/process columns by name: make names match the recipe.
            try:
                fn.__name__ = name
            except (AttributeError, TypeError):
                pass
        funcs.append(fn)
        weights.append(float(spec.get("weight", 1.0)))
    return funcs, weights


def recipe_uses_judge(recipe: Recipe) -> bool:
    """Whether any of the recipe's reward factories takes a ``judge``, or a reward reads the
    shared correctness decision and ``algorithm.correctness`` may ask a judge (auto, judge)."""
    import inspect

    from medrl.rewards import REWARDS

    from medrl.common.registry import is_object_spec

    factories = [REWARDS.get(r["name"]) for r in recipe.rewards if not is_object_spec(r["name"])]
    if any("judge" in inspect.signature(f).parameters for f in factories):
        return True
    mode = (recipe.algorithm or {}).get("correctness", "auto")
    return mode in ("auto", "judge") and any(getattr(f, "uses_correctness", False) for f in factories)
