"""What decides an effects run's numbers: :class:`EffectsConfig` and its profiles.

Profiles (:data:`PROFILES`):

- ``quick``: one seed, a few steps, the smallest tiny model - the machinery end to end in the
  fast test suite (its numbers mean nothing).
- ``full``: the documented benchmark on 2 CPU cores (docs/effects.md): eight seeds (with five,
  the exact Wilcoxon test cannot go below p = 0.0625) of GRPO, MRPO and the two controls
  (coin-flip reward, plain TRL) at a budget above the noise floor, from one warm-up model, with
  sampled and greedy evaluation and learning curves.
- ``gpu``: one GPU; a larger tiny model built from a config (hidden 256), a larger budget and
  held-out set, eight worker processes sharing the GPU. Unmeasured (docs/effects.md).

Every field can be overridden (``medrl bench effects --set rl_steps=60``). The config is stored
with the results; a folder holding results of another config is refused (start a new ``--out``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from medrl.data.sources.phantom import PERCEIVED_BY_TINY
from medrl.effects.controls import CONTROLS

#: signature name -> (recipe trained, the baseline it is compared with)
SIGNATURES = {
    "armed": ("armed", "armed_ablation_raw"),  # ARMed Fig. 3: adaptive vs raw semantic reward
    "capo": ("capo", "capo_grpo"),  # CAPO vs its GRPO baseline: image reliance, consistency
    "stepgrpo": ("stepgrpo", "grpo"),  # key-step coverage
    "medix": ("medix_r1", "grpo"),  # modality-tag accuracy
}
#: leaky rewards trained against (medrl.effects.leaky) and the clean one
HACKS = ("yes_judge", "length_judge", "planted_hole", "oracle")


@dataclass
class EffectsConfig:
    """One effects run. Sizes: warm-up SFT ``sft_steps`` x ``sft_batch`` traces (a share
    ``early_error_share`` of them open with a wrong first step that carries into the answer); RL
    ``rl_steps`` x ``rl_prompts`` prompts x ``num_generations`` rollouts of at most
    ``max_completion_length`` tokens for GRPO, MRPO and each of ``controls``; evaluation on
    ``n_test`` held-out phantoms, greedy and ``eval_samples`` samples per question at
    ``temperature``; learning curves every ``curve_every`` steps on ``curve_records`` of them."""

    profile: str = "full"
    seeds: int = 8
    # task (medrl.data.sources.phantom.PhantomConfig fields)
    image_size: int = 112
    question_types: tuple[str, ...] = PERCEIVED_BY_TINY  # the phantom source's default: those a tiny model perceives
    n_train: int = 2000
    n_test: int = 300
    early_error_share: float = 0.3
    # policy: a tiny Qwen2.5-VL built for the task, or a model id/folder (GPU profile)
    model: str = "tiny"
    hidden_size: int = 128
    num_layers: int = 4
    vision_depth: int | None = None
    vision_width: int | None = None
    warmup_per_seed: bool = False  # one warm-up model for every seed (the seed varies RL), or one per seed
    warmup_from: str | None = None  # an already fine-tuned warm-up model folder: its SFT is skipped
    sft_steps: int = 600
    sft_batch: int = 16
    sft_lr: float = 1e-3
    sft_schedule: str = "linear"  # learning-rate schedule of the warm-up (transformers' lr_scheduler_type)
    # RL (same for every method: same seed, data order and budget). The budget is above the noise
    # floor: GRPO beats the warm-up model and the coin-flip control on sampled accuracy (docs/effects.md)
    rl_steps: int = 60
    rl_prompts: int = 4
    num_generations: int = 8
    max_completion_length: int = 64
    rl_lr: float = 1e-4
    beta: float = 0.01
    temperature: float = 1.0  # of the rollouts, and of the sampled evaluation
    judge: str = "oracle"
    # controls trained beside GRPO and MRPO at every seed (medrl.effects.controls)
    controls: tuple[str, ...] = CONTROLS
    # recipe overrides for every RL run, as `medrl train --set` takes them ("algorithm.mrpo.tau=0.9");
    # a key a recipe does not have is left out for that recipe
    recipe_set: tuple[str, ...] = ()
    # evaluation: greedy, and eval_samples samples per question at the training temperature (seeded)
    eval_max_new_tokens: int = 64
    eval_batch: int = 32
    eval_samples: int = 4
    eval_seed: int = 0
    # learning curves: sampled evaluation (eval_samples per question) of the first curve_records test
    # records every curve_every steps (0: none); the last point is the final evaluation's, on them
    curve_every: int = 10
    curve_records: int = 40
    corruption_t: int = 500  # CAPO: DDPM diffusion step of the corrupted test images
    # what else to run (none by default: at this budget the full profile's 8 seeds x 4 arms fill its
    # 45 minutes on 2 cores; docs/effects.md gives the commands that add them to a finished run)
    noise_sweep: tuple[str, ...] = ()
    sweep_seeds: int = 2
    signatures: tuple[str, ...] = ()
    signature_seeds: int = 2
    hacks: tuple[str, ...] = ()
    hack_steps: int = 16
    hack_seeds: int = 2
    workers: int = 2  # processes at once (one torch thread each); 0 = in this process
    extra: dict = field(default_factory=dict)  # free-form notes stored with the results

    def __post_init__(self) -> None:
        self.question_types = tuple(self.question_types)
        self.recipe_set = tuple(self.recipe_set)
        bad = [o for o in self.recipe_set if "=" not in o]
        if bad:
            raise ValueError(f"effects: recipe_set entries are KEY=VALUE recipe overrides, got {bad}")
        self.noise_sweep = tuple(self.noise_sweep)
        self.signatures = tuple(self.signatures)
        self.hacks = tuple(self.hacks)
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
        bad = [h for h in self.hacks if h not in HACKS]
        if bad:
            raise ValueError(f"effects: unknown leaky reward(s) {bad}; choose among {list(HACKS)}")
        if self.seeds < 1:
            raise ValueError(f"effects: seeds must be at least 1, got {self.seeds}")
        if not 0.0 <= self.early_error_share <= 1.0:
            raise ValueError(f"effects: early_error_share must lie in [0, 1], got {self.early_error_share}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def digest(self) -> str:
        """Digest of every setting that decides the numbers (``workers`` and ``extra`` excluded)."""
        d = self.to_dict()
        d.pop("workers")
        d.pop("extra")
        if not d["recipe_set"]:
            d.pop("recipe_set")  # folders made before recipe_set existed keep their digest
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=list).encode()).hexdigest()[:12]

    def phantom_config(self):
        from medrl.data.sources.phantom import PhantomConfig

        return PhantomConfig(image_size=self.image_size, question_types=tuple(self.question_types))


#: profile -> overrides of the defaults (the defaults are the ``full`` profile)
PROFILES: dict[str, dict[str, Any]] = {
    "full": {},
    "quick": dict(profile="quick", seeds=1, image_size=56, n_train=32, n_test=16, hidden_size=64, num_layers=2,
                  sft_steps=60, sft_batch=8, sft_lr=5e-3, sft_schedule="constant", rl_steps=2, rl_prompts=2,
                  num_generations=2, max_completion_length=48, eval_max_new_tokens=64, eval_batch=16,
                  eval_samples=2, curve_every=1, curve_records=4, noise_sweep=("oracle:0.2",), sweep_seeds=1,
                  signatures=("stepgrpo",), signature_seeds=1, hacks=("yes_judge", "oracle"), hack_steps=2,
                  hack_seeds=1, workers=0),
    # one GPU: a larger tiny model built from a config (no download, nothing to carry), worker
    # processes sharing the GPU (a model this small leaves it mostly idle), each on its own core
    "gpu": dict(profile="gpu", seeds=8, model="tiny", hidden_size=256, num_layers=4, image_size=112, n_train=2000,
                n_test=500, sft_steps=400, sft_batch=16, sft_lr=1e-3, rl_steps=100, rl_prompts=8, num_generations=8,
                max_completion_length=64, rl_lr=1e-4, beta=0.01, eval_max_new_tokens=64, eval_batch=64,
                eval_samples=8, curve_every=20, curve_records=100, controls=("coin_flip",), noise_sweep=(),
                signatures=(), hacks=(), workers=8),
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
