"""Recipes: one YAML per method -> a resolved, validated config.

A recipe file (``medrl/recipes/<name>.yaml``) has these sections, each optional except ``name``:

``name`` / ``description`` / ``paper``
    identification; ``paper`` names the seed file the hyperparameters come from.
``data``
    ``prompt_style`` (see :func:`medrl.data.to_hf_dataset`), ``open_only``, ``split``,
    ``limit`` (first N records; the CPU profile sets it), ``rationales`` (MedThink file),
    ``require_gold_reasoning`` and ``refine`` (see :func:`medrl.train.pipeline.load_training_records`).
``rewards``
    list of ``{name, weight, options}``; ``name`` is a factory in :data:`medrl.rewards.REWARDS`.
``algorithm``
    what medrl adds to TRL: ``advantage`` (``grpo`` = TRL's sequence advantage, ``mrpo`` =
    step-aware token advantages), the ``mrpo`` shaping options, the ``capo`` corrupted-image
    rollouts, ``unscorable`` (how a ``None`` reward is treated), ``log_rewards`` and
    ``log_credit_every`` / ``log_credit_rollouts`` (``credit.jsonl``, :mod:`medrl.train.credit`).
``grpo``
    fields of TRL's :class:`trl.GRPOConfig`, passed through unchanged (loss_type, beta,
    epsilon, vLLM, DeepSpeed/FSDP, ...). Unknown fields are an error naming the recipe file.
``sft``
    options of the SFT stage (``medrl.train.sft``) for multi-stage recipes and ``sft.yaml``.
``stages``
    multi-stage pipelines (ARMed, StepGRPO): a list of ``{name, kind, options}`` with kind
    ``rl`` | ``sft`` | ``knowledge_injection`` | ``key_steps`` | ``refine``; see
    :mod:`medrl.train.pipeline` (``data.refine: true`` prepends ``refine`` to any recipe).
``profiles``
    per-recipe overlays merged on top of the shared ones in ``profiles.yaml``.
``encoders``
    ``substitute``: ``auto`` (default) | ``true`` | ``false`` - when the offline MiniLM replaces
    the papers' encoders named in reward options (:func:`medrl.embeddings.substitute_encoders`);
    the resolved section adds ``used`` and ``substitutions`` (written to ``config.yaml``).

Resolution order: recipe file < shared profile < the recipe's own profile < ``--set`` overrides
(``grpo.learning_rate=1e-5``; the value is parsed as YAML). Dicts merge key by key; lists and
scalars replace.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

RECIPE_DIR = Path(__file__).resolve().parents[1] / "recipes"
PROFILES_FILE = RECIPE_DIR / "profiles.yaml"
_NOT_RECIPES = {"profiles"}

SECTIONS = ("name", "description", "paper", "data", "rewards", "algorithm", "grpo", "sft", "stages", "profiles",
            "encoders", "judge")

#: Defaults of the ``judge`` section: ``images`` (true | false | auto: on for an ``openai:``
#: judge, off for the text-only reference judge) sends each record's image, downscaled to
#: ``image_max_side`` px (JPEG), with answer-correctness and step-verification requests
#: (MRPO 000_20b05565d28598f4.txt App. H.1-H.2); ``--judge-images`` turns it on.
JUDGE_DEFAULTS: dict[str, Any] = {"images": False, "image_max_side": 768}

#: Defaults of the ``algorithm`` section (what a recipe does not say).
ALGORITHM_DEFAULTS: dict[str, Any] = {
    # "grpo": keep TRL's sequence-level advantage; "mrpo": MRPO Eq. 7 token advantages.
    "advantage": "grpo",
    "mrpo": {
        "tau": 0.6,  # MRPO Sec. 4.2: answer-reward threshold below which shaping applies
        "shaping": "exponential",  # App. D.2: exponential | linear | quadratic | uniform
        "strategy": "selective",  # App. D.3: selective | full | soft
        "answer_reward": "mrpo_answer",  # reward column that holds R_ans
        "process_reward": "mrpo_process",  # reward fn exposing last_step_verdicts / last_steps
    },
    # CAPO Eq. 3: rollouts on corrupted images, scored for R_PCR, never trained on. None = off.
    "capo": None,
    # "exclude": a rollout any reward could not score (None) gets no advantage and no loss
    # (TRL alone would sum the other rewards, i.e. score the missing one as 0).
    # "per_reward": TRL's behaviour (nansum over the rewards that did score).
    "unscorable": "exclude",
    # Reward names logged as medrl/answer_reward and medrl/process_reward (MRPO App. G curves).
    "log_rewards": {"answer": None, "process": None},
    # How "is this rollout's answer correct?" is decided, once per rollout, for every reward that
    # needs it (CAPO R_DAR/R_PCR, StepRAR, MediX-R1 R_llm): auto | exact | judge | embedding.
    # auto = the judge for open-ended records when a judge is configured, exact match for closed
    # ones (medrl.rewards.correctness).
    "correctness": "auto",
    # Every N optimizer steps (0 = off), the first log_credit_rollouts rollouts of the batch with
    # their token advantages as the loss uses them -> <run>/credit.jsonl (medrl.train.credit).
    "log_credit_every": 10,
    "log_credit_rollouts": 4,
}

CAPO_DEFAULTS: dict[str, Any] = {
    "kind": "diffusion",  # CAPO Tables 5-6: diffusion (default) | mask | crop
    "t": 100,  # forward-diffusion step (CAPO Sec. 4.4)
    "seed": 0,
}


STAGE_KINDS = ("rl", "sft", "knowledge_injection", "key_steps", "refine")


class RecipeError(ValueError):
    """A recipe file or override is invalid; the message names the file and the field."""


@dataclass
class Recipe:
    """A resolved recipe. ``to_dict()`` is what the run folder stores as ``config.yaml``."""

    name: str
    source: str
    description: str = ""
    paper: str = ""
    data: dict = field(default_factory=dict)
    rewards: list = field(default_factory=list)
    algorithm: dict = field(default_factory=dict)
    grpo: dict = field(default_factory=dict)
    sft: dict = field(default_factory=dict)
    stages: list = field(default_factory=list)
    encoders: dict = field(default_factory=dict)
    judge: dict = field(default_factory=lambda: dict(JUDGE_DEFAULTS))
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
        raise RecipeError(f"override {text!r}: the key must start with one of {', '.join(SECTIONS)}")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
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
    try:
        data = yaml.safe_load(path.read_text())
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
) -> Recipe:
    """Load a recipe, apply a profile (e.g. ``"cpu"``) and ``--set`` overrides, validate it."""
    path = recipe_path(name_or_path)
    raw = _read_yaml(path)
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        raise RecipeError(f"{path}: unknown section(s) {unknown}; allowed: {', '.join(SECTIONS)}")
    own_profiles = raw.pop("profiles", None) or {}
    if profile is not None:
        shared = _read_yaml(PROFILES_FILE) if PROFILES_FILE.is_file() else {}
        if profile not in shared and profile not in own_profiles:
            raise RecipeError(
                f"{path}: unknown profile {profile!r}; known: {', '.join(sorted(set(shared) | set(own_profiles)))}"
            )
        raw = deep_merge(raw, shared.get(profile) or {})
        raw = deep_merge(raw, own_profiles.get(profile) or {})
    overrides = list(overrides or [])
    for text in overrides:
        keys, value = parse_override(text)
        _set_path(raw, keys, value)

    rewards, encoders = _resolve_encoders(path, list(raw.get("rewards") or []), raw.get("encoders"))
    algorithm = deep_merge(ALGORITHM_DEFAULTS, raw.get("algorithm") or {})
    if algorithm.get("capo"):
        algorithm["capo"] = deep_merge(CAPO_DEFAULTS, algorithm["capo"])
    recipe = Recipe(
        name=str(raw.get("name") or path.stem),
        source=str(path),
        description=str(raw.get("description") or "").strip(),
        paper=str(raw.get("paper") or ""),
        data=dict(raw.get("data") or {}),
        rewards=rewards,
        algorithm=algorithm,
        grpo=dict(raw.get("grpo") or {}),
        sft=dict(raw.get("sft") or {}),
        stages=list(raw.get("stages") or []),
        encoders=encoders,
        judge=deep_merge(JUDGE_DEFAULTS, raw.get("judge") or {}),
        profile=profile,
        overrides=overrides,
    )
    validate_recipe(recipe)
    return recipe


def _resolve_encoders(path: Path, rewards: list, section: Any) -> tuple[list, dict]:
    """The ``encoders`` section: ``substitute`` (auto | true | false, see
    :func:`medrl.embeddings.substitute_encoders`) applied to the rewards' encoder options;
    the resolved section lists the encoders used and every offline substitution (logged)."""
    import logging

    from medrl.embeddings import recipe_encoders, substitute_encoders

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
    """Check the structure (not the registry names: those are checked when rewards are built)."""
    where = recipe.source
    for i, r in enumerate(recipe.rewards):
        if not isinstance(r, dict) or "name" not in r:
            raise RecipeError(f"{where}: rewards[{i}] must be a mapping with a 'name', got {r!r}")
        extra = set(r) - {"name", "weight", "options"}
        if extra:
            raise RecipeError(f"{where}: rewards[{i}] ({r['name']}): unknown key(s) {sorted(extra)}")
        w = r.get("weight", 1.0)
        if not isinstance(w, (int, float)):
            raise RecipeError(f"{where}: rewards[{i}] ({r['name']}): weight must be a number, got {w!r}")
    judge = recipe.judge or {}
    extra = set(judge) - set(JUDGE_DEFAULTS)
    if extra:
        raise RecipeError(f"{where}: judge: unknown key(s) {sorted(extra)}; allowed: {sorted(JUDGE_DEFAULTS)}")
    if judge.get("images") not in (True, False, "auto"):
        raise RecipeError(f"{where}: judge.images must be true, false or auto, got {judge.get('images')!r}")
    side = judge.get("image_max_side")
    if isinstance(side, bool) or not isinstance(side, int) or side < 16:
        raise RecipeError(f"{where}: judge.image_max_side must be an integer of at least 16 pixels, got {side!r}")
    alg = recipe.algorithm
    if alg["advantage"] not in ("grpo", "mrpo"):
        raise RecipeError(f"{where}: algorithm.advantage must be 'grpo' or 'mrpo', got {alg['advantage']!r}")
    if alg["unscorable"] not in ("exclude", "per_reward"):
        raise RecipeError(
            f"{where}: algorithm.unscorable must be 'exclude' or 'per_reward', got {alg['unscorable']!r}"
        )
    for key in ("log_credit_every", "log_credit_rollouts"):
        v = alg.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise RecipeError(f"{where}: algorithm.{key} must be a non-negative integer, got {v!r}")
    if alg.get("correctness") not in ("auto", "exact", "judge", "embedding"):
        raise RecipeError(f"{where}: algorithm.correctness must be auto, exact, judge or embedding, "
                          f"got {alg.get('correctness')!r}")
    mrpo = alg["mrpo"]
    if mrpo["shaping"] not in ("exponential", "linear", "quadratic", "uniform"):
        raise RecipeError(f"{where}: algorithm.mrpo.shaping {mrpo['shaping']!r} is not one of "
                          "exponential, linear, quadratic, uniform")
    if mrpo["strategy"] not in ("selective", "full", "soft"):
        raise RecipeError(f"{where}: algorithm.mrpo.strategy {mrpo['strategy']!r} is not one of "
                          "selective, full, soft")
    names = [r["name"] for r in recipe.rewards]
    if alg["advantage"] == "mrpo":
        for key in ("answer_reward", "process_reward"):
            if mrpo[key] not in names:
                raise RecipeError(
                    f"{where}: algorithm.mrpo.{key} = {mrpo[key]!r} is not among the recipe's rewards {names}"
                )
    if alg.get("capo"):
        if alg["capo"]["kind"] not in ("diffusion", "mask", "crop"):
            raise RecipeError(f"{where}: algorithm.capo.kind must be diffusion, mask or crop")
    for i, st in enumerate(recipe.stages):
        if not isinstance(st, dict) or st.get("kind") not in STAGE_KINDS:
            raise RecipeError(
                f"{where}: stages[{i}] must be a mapping with kind {' | '.join(STAGE_KINDS)}, got {st!r}"
            )
    if not recipe.rewards and not recipe.sft:
        raise RecipeError(f"{where}: a recipe needs 'rewards' (RL) or an 'sft' section")


# --------------------------------------------------------------------------------------------
# Building TRL objects


def grpo_config_fields() -> set[str]:
    from trl import GRPOConfig

    return {f.name for f in dataclasses.fields(GRPOConfig)}


def build_grpo_config(recipe: Recipe, output_dir: str | Path, **extra: Any):
    """TRL ``GRPOConfig`` from the recipe's ``grpo`` section plus ``extra`` (which wins).

    Everything in ``grpo`` goes to TRL unchanged - that is how loss variants (``loss_type``,
    ``importance_sampling_level``, ``epsilon_high``), GDPO (``multi_objective_aggregation``),
    vLLM (``use_vllm``, ``vllm_mode``, ...) and scale-out (``deepspeed``, ``fsdp``,
    ``fsdp_config``) reach the trainer. ``reward_weights`` come from the ``rewards`` list.
    """
    from trl import GRPOConfig

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
    kwargs["output_dir"] = str(output_dir)
    try:
        return GRPOConfig(**kwargs)
    except (TypeError, ValueError) as exc:
        raise RecipeError(f"{recipe.source}: invalid grpo settings: {exc}") from exc


def build_reward_funcs(recipe: Recipe, judge: Any = None) -> tuple[list, list[float]]:
    """Instantiate the recipe's rewards from :data:`medrl.rewards.REWARDS`.

    A factory that takes a ``judge`` argument gets ``judge``; one that needs it when none was
    given raises a clear error. Returns ``(reward_funcs, weights)`` in recipe order.
    """
    import inspect

    from medrl.rewards import REWARDS

    funcs, weights = [], []
    for i, spec in enumerate(recipe.rewards):
        name = spec["name"]
        try:
            factory = REWARDS.get(name)
        except KeyError as exc:
            raise RecipeError(f"{recipe.source}: rewards[{i}]: {exc.args[0]}") from None
        options = dict(spec.get("options") or {})
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

    factories = [REWARDS.get(r["name"]) for r in recipe.rewards]
    if any("judge" in inspect.signature(f).parameters for f in factories):
        return True
    mode = (recipe.algorithm or {}).get("correctness", "auto")
    return mode in ("auto", "judge") and any(getattr(f, "uses_correctness", False) for f in factories)
