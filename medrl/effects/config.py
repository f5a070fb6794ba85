"""What decides an effects run's numbers: :class:`EffectsConfig` and its profiles.

Profiles (:data:`PROFILES`):

- ``quick``: one seed, a few steps, the smallest tiny model - the machinery end to end in the
  fast test suite (its numbers mean nothing).
- ``full``: the documented benchmark on 2 CPU cores (docs/effects.md): MRPO's claim on the main
  task - eight seeds (with five, the exact Wilcoxon test cannot go below p = 0.0625) of GRPO, MRPO
  and the two controls (coin-flip reward, plain TRL), each seed with its own records, warm-up
  model and sampling seed, scored at two temperatures, with learning curves.
- ``armed``, ``capo``, ``stepgrpo``, ``medix``: one paper's signature task each
  (:mod:`medrl.effects.signatures`), eight seeds of its arms and the coin-flip control.
- ``gpu``: one GPU; a larger tiny model built from a config (hidden 256), a larger budget and
  held-out set, the signatures too, eight worker processes sharing the GPU.

Every field can be overridden (``medrl bench effects --set rl_steps=60``); each field's help is
its metadata (:meth:`EffectsConfig.help`, listed by ``medrl bench effects --help``). The config is
stored with the results; a folder holding results of another config is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from medrl.effects.controls import CONTROLS
from medrl.effects.signatures import SIGNATURES
from medrl.effects.signatures.armed import HELD_OUT

#: leaky rewards trained against (medrl.effects.leaky) and the clean one
HACKS = ("yes_judge", "length_judge", "planted_hole", "oracle")
#: the main task's question types: modality, organ and plane alone, and all three in one answer
MAIN_QUESTION_TYPES = ("modality", "organ", "plane", "study")


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


@dataclass
class EffectsConfig:
    """One effects run: the task, the policy, the warm-up, the RL budget every arm shares, the
    evaluation, and what else runs (signatures, the judge-noise sweep, leaky rewards). Every field
    carries its help (:meth:`help`)."""

    profile: str = _f("full", "the profile these settings started from (quick, full, armed, capo, stepgrpo, medix, "
                              "gpu)")
    seeds: int = _f(8, "seeds of the main comparison (GRPO, MRPO and the controls); each seed draws its own "
                       "records, warm-up model and sampling seed")
    main: bool = _f(True, "run the main comparison (MRPO's claim on the main task); false for a signature or "
                          "judge-noise folder alone")
    # task (medrl.data.sources.phantom.PhantomConfig fields)
    image_size: int = _f(112, "phantom image side in pixels")
    question_types: tuple[str, ...] = _f(MAIN_QUESTION_TYPES, "question types of the main task "
                                         "(medrl.data.sources.phantom.QUESTION_TYPES)")
    held_out: tuple[str, ...] = _f(HELD_OUT, "modality/organ pairs a study question never asks about in training "
                                             "(held-out answer combinations in the test split)")
    n_train: int = _f(2000, "training records per seed")
    n_test: int = _f(300, "held-out records per seed")
    data_per_seed: bool = _f(True, "each seed draws its own train and test records (false: one set for every seed)")
    early_error_share: float = _f(0.3, "share of the main task's warm-up traces that open with a wrong first step "
                                       "carried into a wrong answer (MRPO's failure cascade)")
    # policy: a tiny Qwen2.5-VL built for the task, or a model id/folder (GPU profile)
    model: str = _f("tiny", "the policy before warm-up: 'tiny' (a Qwen2.5-VL built for the task from a config) or "
                            "a model id/folder")
    hidden_size: int = _f(128, "tiny policy: hidden size")
    num_layers: int = _f(4, "tiny policy: decoder layers")
    vision_depth: int | None = _f(None, "tiny policy: vision tower blocks (None: the builder's default)")
    vision_width: int | None = _f(None, "tiny policy: vision tower width (None: the builder's default)")
    warmup_per_seed: bool = _f(True, "each seed fine-tunes its own warm-up model (false: one for every seed; then "
                                     "the warm-up's sampling error is not in the seeds' spread)")
    warmup_from: str | None = _f(None, "reuse warm-up models: an effects folder (each seed's warm-up model and "
                                       "records) or one fine-tuned model folder (its SFT is skipped)")
    sft_steps: int = _f(600, "warm-up SFT steps")
    signature_sft_steps: int | None = _f(None, "warm-up SFT steps of the signature tasks (None: sft_steps)")
    sft_batch: int = _f(16, "warm-up SFT batch size")
    sft_lr: float = _f(1e-3, "warm-up SFT learning rate")
    sft_schedule: str = _f("linear", "warm-up learning-rate schedule (transformers' lr_scheduler_type)")
    # RL (same for every arm: same seed, data order and budget). The budget is above the noise
    # floor: GRPO beats the warm-up model and the coin-flip control on sampled accuracy (docs/effects.md)
    rl_steps: int = _f(60, "RL steps of every arm")
    rl_prompts: int = _f(4, "prompts per RL step")
    num_generations: int = _f(8, "rollouts per prompt")
    max_completion_length: int = _f(64, "most tokens per rollout")
    rl_lr: float = _f(1e-4, "RL learning rate")
    beta: float = _f(0.01, "KL coefficient of every arm")
    temperature: float = _f(1.0, "rollout temperature of the main task (a signature trains at its paper's)")
    judge: str = _f("oracle", "training judge of the main comparison (oracle, oracle:EPS, reference, ...)")
    controls: tuple[str, ...] = _f(CONTROLS, "controls trained beside GRPO and MRPO at every seed "
                                             "(medrl.effects.controls: coin_flip, trl)")
    recipe_set: tuple[str, ...] = _f((), "recipe overrides for every RL run, as medrl train --set takes them "
                                         "('algorithm.mrpo.tau=0.9'); a key a recipe lacks is left out for it")
    # evaluation: greedy, and eval_samples samples per question at each temperature (seeded per seed)
    eval_max_new_tokens: int = _f(64, "most tokens per evaluated output")
    eval_batch: int = _f(32, "evaluation batch size")
    eval_samples: int = _f(4, "sampled outputs per held-out question at each evaluation temperature")
    eval_temperatures: tuple[float, ...] = _f((0.7, 1.0), "temperatures of the sampled evaluation (the training "
                                                          "temperature is always one of them); the warm-up at its "
                                                          "best one is a control")
    eval_seed: int = _f(0, "sampling seed of the evaluation; seed N samples with eval_seed + N")
    curve_every: int = _f(10, "learning-curve point every this many steps (0: none); sampled at the training "
                              "temperature")
    curve_records: int = _f(40, "held-out records each learning-curve point samples")
    corruption_t: int = _f(500, "CAPO: DDPM diffusion step of the corrupted test images")
    # what else runs
    noise_sweep: tuple[str, ...] = _f((), "training judges GRPO and MRPO are also trained with (oracle:0.2, "
                                          "reference, ...)")
    sweep_seeds: int = _f(2, "seeds of the judge-noise sweep")
    signatures: tuple[str, ...] = _f((), "signature tasks to run (armed, capo, stepgrpo, medix; "
                                         "medrl.effects.signatures)")
    signature_seeds: int = _f(8, "seeds of each signature task")
    hacks: tuple[str, ...] = _f((), "leaky rewards to train against (yes_judge, length_judge, planted_hole, oracle)")
    hack_steps: int = _f(16, "RL steps of each leaky-reward run")
    hack_seeds: int = _f(2, "seeds of the leaky-reward runs")
    workers: int = _f(2, "processes at once, each pinned to its own core with one torch thread (0: in this process)")
    extra: dict = _f({}, "free-form notes stored with the results")

    def __post_init__(self) -> None:
        self.question_types = tuple(self.question_types)
        self.held_out = tuple(self.held_out)
        self.recipe_set = tuple(self.recipe_set)
        bad = [o for o in self.recipe_set if "=" not in o]
        if bad:
            raise ValueError(f"effects: recipe_set entries are KEY=VALUE recipe overrides, got {bad}")
        self.noise_sweep = tuple(self.noise_sweep)
        self.signatures = tuple(self.signatures)
        self.hacks = tuple(self.hacks)
        self.eval_temperatures = tuple(float(t) for t in self.eval_temperatures)
        bad = [s for s in self.signatures if s not in SIGNATURES]
        if bad:
            raise ValueError(f"effects: unknown signature(s) {bad}; choose among {sorted(SIGNATURES)}")
        self.controls = tuple(self.controls)
        bad = [x for x in self.controls if x not in CONTROLS]
        if bad:
            raise ValueError(f"effects: unknown control(s) {bad}; choose among {list(CONTROLS)}")
        for name in ("eval_samples", "curve_every", "curve_records"):
            if getattr(self, name) < 0:
                raise ValueError(f"effects: {name} must be 0 or more, got {getattr(self, name)}")
        if self.curve_every and not self.eval_samples:
            raise ValueError("effects: learning curves (curve_every) are sampled: eval_samples must be at least 1")
        if any(t <= 0 for t in self.eval_temperatures):
            raise ValueError(f"effects: eval_temperatures must be positive, got {self.eval_temperatures}")
        bad = [h for h in self.hacks if h not in HACKS]
        if bad:
            raise ValueError(f"effects: unknown leaky reward(s) {bad}; choose among {list(HACKS)}")
        if self.seeds < 1:
            raise ValueError(f"effects: seeds must be at least 1, got {self.seeds}")
        if not 0.0 <= self.early_error_share <= 1.0:
            raise ValueError(f"effects: early_error_share must lie in [0, 1], got {self.early_error_share}")
        if not (self.main or self.signatures or self.noise_sweep or self.hacks):
            raise ValueError("effects: nothing to run: main=false and no signatures, noise_sweep or hacks")

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> help text."""
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}

    def temperatures(self, train: float | None = None) -> tuple[float, ...]:
        """The sampled evaluation's temperatures for runs trained at ``train`` (default
        :attr:`temperature`): :attr:`eval_temperatures` and the training temperature, ascending."""
        t = self.temperature if train is None else float(train)
        return tuple(sorted({*self.eval_temperatures, t}))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def digest(self) -> str:
        """Digest of every setting that decides a seed's numbers, with the version of each
        signature task it runs. ``workers`` and ``extra`` are left out, and so are the seed counts:
        a seed's runs depend on its own number alone, so a folder run with 2 seeds grows to 8 when
        the same command is rerun with more."""
        d = self.to_dict()
        for k in ("workers", "extra", "seeds", "signature_seeds", "sweep_seeds", "hack_seeds"):
            d.pop(k)
        if not d["recipe_set"]:
            d.pop("recipe_set")
        d["signature_tasks"] = {s: SIGNATURES[s].describe() for s in self.signatures}
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=list).encode()).hexdigest()[:12]

    def phantom_config(self, signature: str | None = None, seed: int = 0):
        """The phantom task of the main comparison, or of ``signature``, drawn with ``seed``."""
        from medrl.data.sources.phantom import PhantomConfig

        if signature is None:
            types = tuple(self.question_types)
            held = tuple(self.held_out) if "study" in types else ()
            return PhantomConfig(seed=seed, image_size=self.image_size, question_types=types, held_out=held)
        return PhantomConfig(seed=seed, image_size=self.image_size, **SIGNATURES[signature].phantom)


#: what a signature profile changes from the full profile's budget (the warm-up and the RL budget are
#: the full profile's): 200 held-out records and no learning curves (StepGRPO's claim needs them: its
#: own budget adds them back), so that 8 seeds of a signature's arms and the coin flip, each seed with
#: its own warm-up model, cost about what the full profile's 8 seeds cost. A validation at 300 warm-up
#: steps left the CAPO and StepGRPO warm-up models unable to read the image (CAPO's answered one organ
#: to every organ question; StepGRPO's 0.4% of samples right where its traces are 19.5% right), so
#: the warm-up is the full profile's 600 steps (docs/effects.md).
SIGNATURE_BUDGET = dict(n_test=200, curve_every=0)

#: profile -> overrides of the defaults (the defaults are the ``full`` profile)
PROFILES: dict[str, dict[str, Any]] = {
    "full": {},
    "quick": dict(profile="quick", seeds=1, image_size=56, n_train=32, n_test=16, hidden_size=64, num_layers=2,
                  sft_steps=60, sft_batch=8, sft_lr=5e-3, sft_schedule="constant", rl_steps=2, rl_prompts=2,
                  num_generations=2, max_completion_length=48, eval_max_new_tokens=64, eval_batch=16,
                  eval_samples=2, curve_every=1, curve_records=4, noise_sweep=("oracle:0.2",), sweep_seeds=1,
                  signatures=tuple(SIGNATURES), signature_seeds=1, signature_sft_steps=20,
                  hacks=("yes_judge", "oracle"), hack_steps=2,
                  hack_seeds=1, workers=0),
    # one signature task each: its arms and the coin-flip control over eight seeds (docs/effects.md)
    **{name: dict(profile=name, main=False, signatures=(name,), controls=("coin_flip",),
                  **{**SIGNATURE_BUDGET, **sig.budget}) for name, sig in SIGNATURES.items()},
    # one GPU: a larger tiny model built from a config (no download, nothing to carry), worker
    # processes sharing the GPU (a model this small leaves it mostly idle), each on its own core
    "gpu": dict(profile="gpu", seeds=8, model="tiny", hidden_size=256, num_layers=4, image_size=112, n_train=2000,
                n_test=500, sft_steps=400, sft_batch=16, sft_lr=1e-3, rl_steps=100, rl_prompts=8, num_generations=8,
                max_completion_length=64, rl_lr=1e-4, beta=0.01, eval_max_new_tokens=64, eval_batch=64,
                eval_samples=8, curve_every=20, curve_records=100, controls=("coin_flip",), noise_sweep=(),
                signatures=tuple(SIGNATURES), signature_seeds=8, hacks=(), workers=8),
}


def make_config(profile: str = "full", **overrides: Any) -> EffectsConfig:
    """The ``profile``'s settings with ``overrides`` (None values ignored); unknown keys are refused."""
    if profile not in PROFILES:
        raise ValueError(f"effects: unknown profile {profile!r}; choose among {sorted(PROFILES)}")
    known = {f.name for f in dataclasses.fields(EffectsConfig)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"effects: unknown setting(s) {bad}; known: {', '.join(sorted(known))}")
    values = {**PROFILES[profile], **{k: v for k, v in overrides.items() if v is not None}}
    return EffectsConfig(**values)


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """``["rl_steps=60", "signatures=armed,capo"]`` -> typed overrides (YAML scalars; a comma makes
    a tuple)."""
    import yaml

    from medrl.common import strict_yaml

    known = {f.name: f for f in dataclasses.fields(EffectsConfig)}
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in known:
            raise ValueError(f"--set {item!r}: expected KEY=VALUE with KEY among {', '.join(sorted(known))}")
        typ = str(known[key].type)
        try:
            if "tuple" in typ:
                out[key] = tuple(x.strip() for x in raw.split(",") if x.strip())
            elif typ == "float":
                out[key] = float(raw)  # YAML would read "3e-3" as a string
            elif typ.startswith("int"):
                out[key] = None if raw.strip().lower() in ("none", "null") else int(raw)
            else:
                out[key] = strict_yaml.load(raw, name=f"--set {key}")
        except yaml.YAMLError as exc:
            raise ValueError(f"--set {item[:200]!r}: {exc}") from None
        except ValueError:
            raise ValueError(f"--set {item!r}: {key} takes a {typ}") from None
    return out


__all__ = ["EffectsConfig", "HACKS", "PROFILES", "SIGNATURES", "make_config", "parse_set"]
