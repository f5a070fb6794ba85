"""``phantom``: synthetic medical VQA with known truth (medrl's proving ground, not a paper's data).

Every record is drawn from a small set of parameters - a modality look (CT-, MRI-, X-ray- or
ultrasound-like), a plane, an organ, and a lesion's presence, side, location, size (with units)
and count - so the answer and every reasoning step can be checked exactly against them. The
oracle judge (:mod:`medrl.judges.oracle`) reads those parameters; no text of the reference is
needed to judge a step.

What a record holds
    ``images``: one greyscale PNG drawn from the parameters, written once under
    ``$MEDRL_CACHE/phantom/<config digest>/<split>-s<seed>/`` (the parameters are also stored in
    the PNG's ``medrl_phantom`` text chunk, so a judge given the image file or the decoded PIL
    image finds them; the policy sees pixels only). ``question``/``answer``: open-ended, short
    canonical answers ("CT", "hypodense lesion", "no lesion", "liver", "left", "two", "18 mm").
    ``gold_reasoning``: a chain of one-sentence steps in a fixed dependency order; the first step
    states the field the answer depends on most directly, later steps depend on it (a plane is
    named in the vocabulary of the modality, a lesion's look in the modality's terms), and the last
    step states the answer - so a wrong first step carries into a wrong answer. ``key_steps``:
    the canonical values the chain states (StepGRPO key steps; equivalent wordings in
    ``extras["key_step_forms"]``). ``modality_tag``: the MediX-R1 tag. ``extras["phantom"]``: the
    parameters (see :func:`phantom_params`).

Question types (:data:`QUESTION_TYPES`)
    ``modality`` (answer: the modality), ``organ``, ``finding`` (a lesion's look in the modality's
    terms, or "no lesion"), and three the 0.79M-parameter tiny model of the project's prototype
    did not learn from pixels (SPEC "The proving ground"): ``side``, ``count`` and ``size``.
    :data:`PERCEPTION` says what tiny models were measured to see; the default
    :class:`PhantomConfig` asks ``modality`` and ``organ``, the two they learned (lesion presence,
    which ``finding`` needs, was not learned at the warm-up budget measured). Labels are balanced
    per question type (every prefix of a split cycles through each type's labels).

Warm-up traces (:func:`warmup_traces`)
    SFT targets where a stated share open with a wrong first step that carries into a wrong answer
    (the trace is the gold chain of the parameters with that one field changed), so RL has a
    failure cascade to remove; the rest are the gold chains.

Images use the radiological convention: the patient's right is on the image's left.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from medrl.data.record import DataError, VQARecord
from medrl.judges.phantom_truth import (
    COUNT_WORDS, LOCATIONS, MODALITIES, ORGANS, PARAPHRASES, PLANES, QUESTION_TYPES, SIDES, answer_of, gold_steps,
    key_steps_of, lead_field, params_or_error,
)

#: Bump when the drawing or the text templates change: it is part of the cache folder's name.
GENERATOR_VERSION = 4

#: What a tiny policy can learn to see, from the project's prototype (SPEC "The proving ground").
PERCEPTION = {
    "modality": "learned: a 0.8M tiny Qwen2.5-VL (hidden 128, 4 layers, default tower) SFT'd on 2,000 warm-up "
                "traces answers 0.97 (800 steps) to 1.0 (2x64 tower) greedy; the prototype: 1.0 by step 300",
    "organ": "learned in passing: the organ claims in the modality chains were 98.5% right after 800 SFT steps "
             "(0.8M model); the organ question itself not measured",
    "finding": "needs lesion presence: NOT learned in 600-800 SFT steps mixed with modality questions and 30% "
               "warm-up errors (greedy 0.50: one answer for all, default and 2x64 towers); 0.78 with error-free "
               "finding-only traces (600 steps, 2x64 tower). The prototype's phantoms gave 0.92-0.98",
    "side": "NOT learned by the 0.79M tiny model (near chance, prototype): use for larger models only",
    "count": "NOT learned by the 0.79M tiny model (near chance, prototype): use for larger models only",
    "size": "not measured; sizes differ by a few pixels: use for larger models only",
    "plane": "the body section's shape (wide or tall) named in the modality's words: measured with the harness "
             "(docs/effects.md)",
    "study": "modality, plane and organ in one answer: measured with the harness (docs/effects.md)",
}
#: The question types a tiny policy was measured to perceive (see :data:`PERCEPTION`).
PERCEIVED_BY_TINY = ("modality", "organ")

_QUESTIONS = {
    "modality": "What imaging modality was used for this image?",
    "finding": "What is the main finding in this image?",
    "organ": "Which organ is shown in this image?",
    "side": "On which side of the patient is the lesion?",
    "count": "How many lesions are there?",
    "size": "How large is the lesion?",
    "plane": "In which plane was this image taken?",
    "study": "Which modality, plane and organ does this image show?",
}
#: Question wordings that suggest an answer (a language prior; PhantomConfig.cue_prior): the
#: clinical context a question names, by the value it suggests.
CUE_WORDS = {"modality": {"CT": "emergency", "MRI": "outpatient", "X-ray": "bedside", "ultrasound": "obstetric"},
             "organ": {"brain": "neurology", "heart": "cardiology", "liver": "hepatology", "kidneys": "urology"}}
_CUE_QUESTIONS = {"modality": "What imaging modality was used for this {cue} image?",
                  "organ": "Which organ is shown in this {cue} image?"}


def question_of(p: dict) -> str:
    """The question text of parameters ``p``: its type's template, worded with its cue when it has
    one (``p["cue"]``: the value the wording suggests)."""
    q = p["question_type"]
    if p.get("cue") is not None and q in _CUE_QUESTIONS:
        return _CUE_QUESTIONS[q].format(cue=CUE_WORDS[q][p["cue"]])
    return _QUESTIONS[q]


def counter_prior(p: dict) -> bool | None:
    """Whether the question's wording suggests a wrong answer (None: no cue)."""
    if p.get("cue") is None:
        return None
    return p["cue"] != p[p["question_type"]]
_SPLIT_CODES = {"train": 1, "test": 2, "validation": 3}


@dataclass(frozen=True)
class PhantomConfig:
    """How phantoms are drawn and asked about. The same config, seed and split always give the
    same records (and the same images, cached once per config digest)."""

    seed: int = field(default=0, metadata={"help": "base seed (records also depend on the split and index)"})
    image_size: int = field(default=112, metadata={"help": "image side in pixels (a multiple of 28 suits Qwen2.5-VL)"})
    modalities: tuple[str, ...] = field(default=MODALITIES, metadata={
        "help": f"modality looks to draw, among {MODALITIES}"})
    organs: tuple[str, ...] = field(default=ORGANS, metadata={"help": f"organs to draw, among {ORGANS}"})
    question_types: tuple[str, ...] = field(default=PERCEIVED_BY_TINY, metadata={
        "help": f"question types asked, among {QUESTION_TYPES}; the default keeps those a tiny model "
                "perceives (see PERCEPTION)"})
    lesion_sizes_mm: tuple[float, ...] = field(default=(16.0, 22.0, 28.0, 34.0), metadata={
        "help": "lesion diameters in millimetres"})
    size_unit: str = field(default="mm", metadata={
        "help": "unit sizes are written in: 'mm' or 'cm' (answers in either unit are accepted)"})
    max_count: int = field(default=2, metadata={"help": "most lesions in one image (count answers 0..max_count)"})
    pixel_mm: float = field(default=200.0 / 112, metadata={
        "help": "millimetres per pixel at image_size 112 (scaled with image_size)"})
    noise: float = field(default=1.0, metadata={"help": "scale of each look's noise (0 = noiseless images)"})
    lesion_contrast: float = field(default=0.45, metadata={"help": "lesion-to-organ intensity difference (0-1)"})
    held_out: tuple[str, ...] = field(default=(), metadata={
        "help": "modality/organ pairs ('CT/heart') a 'study' question never asks about in the train split, so the "
                "test split holds answer combinations training never showed"})
    cue_prior: float | None = field(default=None, metadata={
        "help": "worded questions (a language prior): modality and organ questions name a clinical context "
                "(CUE_WORDS) that suggests the right answer in this share of train records and a wrong one in the "
                "rest; None: the plain wording"})
    cue_prior_test: float | None = field(default=None, metadata={
        "help": "the same share in the test and validation splits (None: cue_prior)"})

    def __post_init__(self) -> None:
        bad = [q for q in self.question_types if q not in QUESTION_TYPES]
        if bad or not self.question_types:
            raise ValueError(f"PhantomConfig.question_types: {bad or 'empty'}; choose among {QUESTION_TYPES}")
        bad = [m for m in self.modalities if m not in MODALITIES]
        if bad or not self.modalities:
            raise ValueError(f"PhantomConfig.modalities: {bad or 'empty'}; choose among {MODALITIES}")
        bad = [o for o in self.organs if o not in ORGANS]
        if bad or not self.organs:
            raise ValueError(f"PhantomConfig.organs: {bad or 'empty'}; choose among {ORGANS}")
        if self.size_unit not in ("mm", "cm"):
            raise ValueError(f"PhantomConfig.size_unit must be 'mm' or 'cm', got {self.size_unit!r}")
        if not 1 <= self.max_count <= len(COUNT_WORDS) - 1:
            raise ValueError(f"PhantomConfig.max_count must be 1..{len(COUNT_WORDS) - 1}, got {self.max_count}")
        if self.image_size < 32:
            raise ValueError(f"PhantomConfig.image_size must be at least 32, got {self.image_size}")
        if not self.lesion_sizes_mm or min(self.lesion_sizes_mm) <= 0:
            raise ValueError("PhantomConfig.lesion_sizes_mm: give positive sizes")
        pairs = {f"{m}/{o}" for m in self.modalities for o in self.organs}
        bad = [h for h in self.held_out if h not in pairs]
        if bad or len(set(self.held_out)) >= len(pairs):
            raise ValueError(f"PhantomConfig.held_out: {bad or 'every pair'}; give some modality/organ pairs among "
                             f"{sorted(pairs)}")
        for name in ("cue_prior", "cue_prior_test"):
            v = getattr(self, name)
            if v is not None and not 0.0 <= v <= 1.0:
                raise ValueError(f"PhantomConfig.{name} must lie in [0, 1], got {v}")

    def digest(self) -> str:
        """Short digest of everything that decides the images and texts (the cache folder name)."""
        d = dataclasses.asdict(self)
        d.pop("seed")
        d["version"] = GENERATOR_VERSION
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=list).encode()).hexdigest()[:12]

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> help text."""
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}


# ============================================================================ parameters


def _labels(qtype: str, cfg: PhantomConfig, split_code: int = 1) -> list:
    """The balanced label set of a question type in a split (``cfg.held_out`` pairs are 'study'
    labels of the test split only)."""
    if qtype == "modality":
        return list(cfg.modalities)
    if qtype == "finding":
        return [True, False]  # lesion present / absent
    if qtype == "organ":
        return list(cfg.organs)
    if qtype == "side":
        return list(SIDES)
    if qtype == "count":
        return list(range(cfg.max_count + 1))
    if qtype == "size":
        return list(cfg.lesion_sizes_mm)
    if qtype == "plane":
        return [(m, pl) for m in cfg.modalities for pl in PLANES[m]]
    if qtype == "study":
        return [(m, o) for m in cfg.modalities for o in cfg.organs
                if split_code == _SPLIT_CODES["test"] or f"{m}/{o}" not in cfg.held_out]
    raise ValueError(qtype)


def _rng(*key: int):
    import numpy as np

    return np.random.default_rng([abs(int(k)) for k in key])


def _split_code(split: str) -> int:
    if split not in _SPLIT_CODES:
        raise DataError(f"phantom: unknown split {split!r}; use one of {list(_SPLIT_CODES)}")
    return _SPLIT_CODES[split]


def make_params(split: str, index: int, cfg: PhantomConfig, seed: int | None = None) -> dict:
    """The parameters of record ``index`` of ``split`` (a pure function of config, seed, split
    and index: any prefix of a split is the same records, and splits never share a draw).

    The question type cycles through ``cfg.question_types``; its label cycles through a seeded
    permutation of the type's labels (balanced in every block), and the other fields are drawn
    given the label (a side, count-of-one or size question always has a lesion).
    """
    seed = cfg.seed if seed is None else seed
    code = _split_code(split)
    types = cfg.question_types
    qtype = types[index % len(types)]
    labels = _labels(qtype, cfg, code)
    turn = index // len(types)
    block, pos = divmod(turn, len(labels))
    perm = _rng(seed, code, 7919, QUESTION_TYPES.index(qtype), block).permutation(len(labels))
    label = labels[int(perm[pos])]
    rng = _rng(seed, code, index, 104729)
    modality = str(rng.choice(cfg.modalities))
    organ = str(rng.choice(cfg.organs))
    count = int(rng.integers(0, 2)) * int(rng.integers(1, cfg.max_count + 1))
    if qtype == "modality":
        modality = label
    elif qtype == "finding":
        count = int(rng.integers(1, cfg.max_count + 1)) if label else 0
    elif qtype == "organ":
        organ = label
    elif qtype == "count":
        count = int(label)
    elif qtype in ("side", "size"):
        count = 1
    plane = str(rng.choice(PLANES[modality]))
    side = str(rng.choice(SIDES))
    location = str(rng.choice(LOCATIONS))
    size_mm = float(rng.choice(cfg.lesion_sizes_mm))
    if qtype == "plane":
        modality, plane = label
    elif qtype == "study":
        modality, organ = label
        plane = str(rng.choice(PLANES[modality]))
    if qtype == "side":
        side = label
    elif qtype == "size":
        size_mm = float(label)
    cue = None
    prior = cfg.cue_prior if code == _SPLIT_CODES["train"] or cfg.cue_prior_test is None else cfg.cue_prior_test
    if prior is not None and qtype in CUE_WORDS:  # its own random stream: the other fields stay as without a cue
        crng = _rng(seed, code, index, 611953)
        truth = modality if qtype == "modality" else organ
        others = [v for v in (cfg.modalities if qtype == "modality" else cfg.organs) if v != truth]
        cue = truth if crng.random() < prior or not others else str(crng.choice(others))
    return {
        "version": GENERATOR_VERSION, "id": f"phantom-{split}-s{seed}-{index:06d}", "split": split,
        "seed": seed, "index": index, "question_type": qtype,
        "modality": modality, "plane": plane, "organ": organ, "count": count,
        "side": side if count else None, "location": location if count else None,
        "size_mm": size_mm if count else None, "size_unit": cfg.size_unit,
        "draw_seed": int(rng.integers(0, 2**31 - 1)),
        **({"cue": cue} if cue is not None else {}),
        **({"held_out": True} if qtype == "study" and f"{modality}/{organ}" in cfg.held_out else {}),
    }


# ============================================================================ drawing


def _ellipse(yy, xx, cy, cx, ry, rx):
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0


def _organ_masks(organ: str, yy, xx, jit):
    """Masks of the organ's parts (normalised coordinates; image left = patient right)."""
    dy, dx = jit
    if organ == "brain":
        m = _ellipse(yy, xx, 0.5 + dy, 0.5 + dx, 0.30, 0.26)
        return m & (abs(xx - 0.5 - dx) > 0.012)
    if organ == "heart":
        return _ellipse(yy, xx, 0.48 + dy, 0.56 + dx, 0.17, 0.19)
    if organ == "liver":
        return _ellipse(yy, xx, 0.44 + dy, 0.42 + dx, 0.19, 0.27)
    if organ == "kidneys":
        return _ellipse(yy, xx, 0.56 + dy, 0.31 + dx, 0.15, 0.09) | _ellipse(yy, xx, 0.56 + dy, 0.69 + dx, 0.15, 0.09)
    raise ValueError(organ)


_LOOKS = {  # background, body, rim, organ, noise sigma, blur sigma (pixels at 112)
    "CT": dict(bg=0.0, body=0.42, rim=0.95, organ=0.62, noise=0.05, blur=0.0),
    "MRI": dict(bg=0.03, body=0.28, rim=0.85, organ=0.55, noise=0.012, blur=1.2),
    "X-ray": dict(bg=0.08, body=0.42, rim=0.80, organ=0.30, noise=0.015, blur=2.0),
    "ultrasound": dict(bg=0.0, body=0.32, rim=0.32, organ=0.55, noise=0.0, blur=0.6),
}


def render_image(p: dict, cfg: PhantomConfig):
    """The greyscale image (``numpy`` uint8, ``image_size`` square) drawn from parameters ``p``."""
    import numpy as np
    from scipy.ndimage import gaussian_filter

    S = cfg.image_size
    rng = _rng(p["draw_seed"])
    yy, xx = (np.mgrid[0:S, 0:S] + 0.5) / S
    look = _LOOKS[p["modality"]]
    tall = p["plane"] == PLANES[p["modality"]][1]  # the second plane of each modality: a taller section
    ry, rx = (0.44, 0.36) if tall else (0.38, 0.44)
    jit = tuple(rng.uniform(-0.025, 0.025, size=2))
    img = np.full((S, S), look["bg"], dtype=float)
    body = _ellipse(yy, xx, 0.5 + jit[0], 0.5 + jit[1], ry, rx)
    inner = _ellipse(yy, xx, 0.5 + jit[0], 0.5 + jit[1], ry - 0.035, rx - 0.035)
    img[body] = look["rim"]
    img[inner] = look["body"]
    if p["modality"] == "X-ray":  # ribs: bright horizontal bands over the body
        img[inner & (np.sin(yy * 2 * np.pi * 9) > 0.75)] += 0.18
        img += 0.12 * (1 - yy)  # projection gradient
    organ = _organ_masks(p["organ"], yy, xx, jit) & inner
    img[organ] = look["organ"]
    lesion_mask = np.zeros((S, S), dtype=bool)
    if p["count"]:
        scale = 112.0 / S  # pixel_mm is given at 112 px
        r = p["size_mm"] / 2.0 / (cfg.pixel_mm * scale) / S  # radius, normalised
        from scipy.ndimage import binary_erosion

        rpx = max(1, int(round(r * S)))
        disk = _ellipse(*np.mgrid[-rpx:rpx + 1, -rpx:rpx + 1], 0, 0, rpx + 0.5, rpx + 0.5)
        inside = binary_erosion(organ, structure=disk)  # centres whose lesion stays inside the organ
        ys, xs = np.nonzero(inside if inside.sum() >= 8 else organ)
        cx_mid = 0.5 + jit[1]
        cy_mid = ys.mean() / S if len(ys) else 0.5
        # patient's right = image left
        on_side = (xs / S < cx_mid) if p["side"] == "right" else (xs / S > cx_mid)
        placed: list[tuple[float, float]] = []
        for k in range(p["count"]):
            loc = p["location"] if k == 0 else ("lower" if p["location"] == "upper" else "upper")
            cand = on_side & ((ys / S < cy_mid) if loc == "upper" else (ys / S >= cy_mid))
            idx = np.nonzero(cand)[0]
            if not len(idx):
                idx = np.nonzero(on_side)[0] if on_side.any() else np.arange(len(ys))
            best = None
            for _ in range(12):
                j = int(rng.choice(idx))
                cy, cx = (ys[j] + 0.5) / S, (xs[j] + 0.5) / S
                if all((cy - a) ** 2 + (cx - b) ** 2 > (2.4 * r) ** 2 for a, b in placed):
                    best = (cy, cx)
                    break
                best = best or (cy, cx)
            placed.append(best)
            lesion_mask |= _ellipse(yy, xx, best[0], best[1], r, r)
        sign = -1.0 if p["modality"] in ("CT", "ultrasound") else 1.0
        img[lesion_mask] = look["organ"] + sign * cfg.lesion_contrast * (1.6 if p["modality"] == "ultrasound" else 1)
    if look["blur"]:
        img = gaussian_filter(img, look["blur"] * S / 112)
    if p["modality"] == "ultrasound":  # fan-shaped field of view with multiplicative speckle
        ang = np.arctan2(xx - 0.5, yy + 0.05)
        rad = np.hypot(xx - 0.5, yy + 0.05)
        fan = (abs(ang) < 0.62) & (rad < 1.0) & (rad > 0.12)
        speck = rng.rayleigh(0.8, size=(S, S)) * cfg.noise + (1 - cfg.noise)
        img = np.where(fan, img * speck, 0.0)
        img = gaussian_filter(img, 0.5 * S / 112)
    else:
        img = img + rng.normal(0.0, look["noise"] * cfg.noise, size=(S, S))
    return (np.clip(img, 0.0, 1.0) * 255).round().astype("uint8")


def _write_image(path: Path, p: dict, cfg: PhantomConfig) -> None:
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    meta = PngInfo()
    meta.add_text("medrl_phantom", json.dumps(p, sort_keys=True))
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # processes drawing the same image never share a file
    Image.fromarray(render_image(p, cfg), mode="L").save(tmp, format="PNG", pnginfo=meta)
    tmp.replace(path)


def _cached_image_ok(path: Path, p: dict) -> bool:
    """Whether the cached PNG at ``path`` is a whole image drawn from ``p``: it decodes to the end
    (a file cut short by a full disk or a kill does not) and its ``medrl_phantom`` text chunk holds
    ``p``. A damaged one is named in a warning (and drawn again by the caller)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.load()
            ok = im.text.get("medrl_phantom") == json.dumps(p, sort_keys=True)
            why = "" if ok else "its parameters are not this record's"
    except (OSError, SyntaxError, ValueError) as exc:  # PIL reports a broken chunk as a SyntaxError
        ok, why = False, f"{type(exc).__name__}: {exc}"
    if not ok:
        import logging

        logging.getLogger(__name__).warning("phantom image %s is damaged (%s); drawing it again", path, why)
    return ok


# ============================================================================ records


def default_cache_dir() -> Path:
    """``$MEDRL_CACHE/phantom`` (see :func:`medrl.common.paths.cache_dir`)."""
    from medrl.common.paths import cache_dir

    return cache_dir() / "phantom"


DEFAULT_SIZES = {"train": 2000, "test": 800, "validation": 400}


def record_from_params(p: dict, image: str | Path) -> VQARecord:
    """The :class:`VQARecord` of parameters ``p`` with its image at ``image``."""
    from medrl.common.modality import modality_to_tag

    steps = gold_steps(p)
    ks = key_steps_of(p)
    return VQARecord(
        id=p["id"], images=[str(image)], question=question_of(p), answer=answer_of(p),
        answer_type="OPEN", open_ended=True, modality=p["modality"], modality_tag=modality_to_tag(p["modality"]),
        organ=p["organ"], question_type=p["question_type"], gold_reasoning=" ".join(steps),
        key_steps=[forms[0] for forms in ks], split=p["split"], source="phantom",
        extras={"lang": "en", "phantom": dict(p), "key_step_forms": ks, "gold_steps": steps,
                "perception": PERCEPTION[p["question_type"]]},
    )


def phantom_records(split: str = "train", n: int | None = None, *, seed: int | None = None,
                    cache_dir: str | Path | None = None, config: PhantomConfig | None = None) -> list[VQARecord]:
    """``n`` phantom records of ``split`` (default :data:`DEFAULT_SIZES`), deterministic from
    ``seed`` (None: ``config.seed``, default 0); images drawn once into ``cache_dir`` (default
    :func:`default_cache_dir`) and reused. Train, validation and test records never share a draw
    (the split is part of every record's random stream and id)."""
    cfg = config or PhantomConfig()
    if seed is not None and seed != cfg.seed:
        cfg = dataclasses.replace(cfg, seed=int(seed))
    _split_code(split)
    n = DEFAULT_SIZES[split] if n is None else int(n)
    if n < 0:
        raise DataError(f"phantom: n must be >= 0, got {n}")
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = folder / cfg.digest() / f"{split}-s{cfg.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        p = make_params(split, i, cfg)
        path = folder / f"{i:06d}.png"
        if not path.is_file() or not _cached_image_ok(path, p):  # a cut or damaged cached PNG is drawn again
            _write_image(path, p, cfg)
        out.append(record_from_params(p, path.resolve()))
    return out


def load_phantom(data_dir: Any = None, split: str | None = None, *, n: int | None = None, seed: int | None = None,
                 cache_dir: str | Path | None = None, config: PhantomConfig | None = None, **_: Any) -> list[VQARecord]:
    """Loader entry for ``load_records("phantom:<split>")`` (``data_dir`` is not used: phantoms are
    generated; ``split`` defaults to train)."""
    return phantom_records(split or "train", n, seed=seed, cache_dir=cache_dir, config=config)


# ============================================================================ warm-up traces


@dataclass(frozen=True)
class WarmupTrace:
    """One SFT target. ``record`` is a copy of the source record whose ``gold_reasoning`` and
    ``answer`` are this trace (give ``[t.record for t in traces]`` to medrl's SFT: its target is
    :func:`medrl.data.prompts.format_target`). ``early_error``: the first step states a wrong
    ``error_field`` (``error_value`` instead of the truth) and the trace carries it into a wrong
    answer. ``planted``: the kinds of failure planted in this trace (``early_error``, or a
    signature task's own: :mod:`medrl.effects.signatures`)."""

    record_id: str
    steps: tuple[str, ...]
    answer: str
    early_error: bool
    error_field: str | None
    error_value: Any
    record: VQARecord
    planted: tuple[str, ...] = ()

    @property
    def reasoning(self) -> str:
        return " ".join(self.steps)

    def target(self, style: str = "think_answer") -> str:
        """The SFT target text in a prompt style (``think_answer``, ``modality_think_answer``)."""
        from medrl.data.prompts import format_target

        return format_target(self.record, style)


def make_trace(record: VQARecord, steps: Sequence[str], answer: str, *, planted: Sequence[str] = (),
               tag: str | None = None, early_error: bool = False, error_field: str | None = None,
               error_value: Any = None) -> WarmupTrace:
    """A warm-up trace of ``record`` whose SFT target states ``steps`` and ``answer`` (and the
    modality tag ``tag`` in the ``modality_think_answer`` style; None: the record's own), with
    the kinds of failure ``planted`` in it recorded in the trace and in the record's
    ``extras["warmup"]``."""
    p = params_or_error(record)
    changes: dict[str, Any] = {"gold_reasoning": " ".join(steps), "answer": answer}
    if tag is not None:
        changes["modality_tag"] = tag
    rec = dataclasses.replace(record, **changes, extras={
        **record.extras, "warmup": {"early_error": early_error, "error_field": error_field, "error_value": error_value,
                                    "planted": list(planted), "cell": _cell(p)}})
    return WarmupTrace(record.id, tuple(steps), answer, early_error, error_field, error_value, rec, tuple(planted))


def change_field(p: dict, fld: str, rng, cfg: PhantomConfig | None = None, value: Any = None) -> tuple[dict, Any]:
    """Parameters ``p`` with field ``fld`` (``modality``, ``plane``, ``organ`` or ``presence``)
    changed to another value (``value``, else a seeded random other one) and the fields that
    depend on it re-derived, so gold steps written from the result carry the change into the
    answer: a wrong modality names the same section in its own vocabulary (and a plane question's
    answer always changes with it: CT's and MRI's first plane are both axial); a wrong presence
    removes the lesion or draws one. Returns (parameters, the wrong value)."""
    q = dict(p)
    if fld == "modality":
        idx = PLANES[p["modality"]].index(p["plane"])

        def differs(m):
            return m != p["modality"] and (p["question_type"] != "plane" or PLANES[m][idx] != p["plane"])

        choices = [m for m in (cfg.modalities if cfg else MODALITIES) if differs(m)] or \
            [m for m in MODALITIES if differs(m)]
        q["modality"] = value if value is not None and differs(value) else str(rng.choice(choices))
        q["plane"] = PLANES[q["modality"]][idx]  # same section, named in the wrong modality's words
        return q, q["modality"]
    if fld == "plane":
        q["plane"] = value if value is not None else next(pl for pl in PLANES[p["modality"]] if pl != p["plane"])
        return q, q["plane"]
    if fld == "organ":
        choices = [o for o in (cfg.organs if cfg else ORGANS) if o != p["organ"]] or \
            [o for o in ORGANS if o != p["organ"]]
        q["organ"] = value if value is not None else str(rng.choice(choices))
        return q, q["organ"]
    if fld != "presence":
        raise ValueError(f"change_field: cannot change {fld!r}; choose modality, plane, organ or presence")
    if p["count"]:  # a missed lesion, or one that is not there
        q.update(count=0, side=None, location=None, size_mm=None)
        return q, "no"
    sizes = cfg.lesion_sizes_mm if cfg else (18.0,)
    q.update(count=1, side=str(rng.choice(SIDES)), location=str(rng.choice(LOCATIONS)),
             size_mm=float(rng.choice(sizes)))
    return q, "yes"


def _corrupt(p: dict, rng, cfg: PhantomConfig | None = None, value: Any = None) -> tuple[dict, str, Any]:
    """Parameters with the lead field changed (:func:`change_field`): (parameters, field, value)."""
    fld = lead_field(p)
    q, v = change_field(p, fld, rng, cfg, value)
    return q, fld, v


ERROR_MODES = ("random", "systematic")


def _cell(p: dict) -> str:
    """The group a systematic warm-up error applies to: question type, modality, organ and
    whether a lesion is there (``finding/CT/liver/lesion``)."""
    return f"{p['question_type']}/{p['modality']}/{p['organ']}/{'lesion' if p['count'] else 'clear'}"


def _systematic_choice(params: list[dict], n_err: int, rate: float, rng, cfg) -> dict[int, Any]:
    """Record index -> fixed wrong value, for ``n_err`` records packed into whole cells (seeded
    order) at about ``rate`` within each chosen cell, one wrong value per cell."""
    cells: dict[str, list[int]] = {}
    for i, p in enumerate(params):
        cells.setdefault(_cell(p), []).append(i)
    names = sorted(cells)
    chosen: dict[int, Any] = {}
    for k in rng.permutation(len(names)).tolist():
        if len(chosen) >= n_err:
            break
        idx = cells[names[k]]
        take = min(n_err - len(chosen), max(1, int(round(rate * len(idx)))))
        p0 = params[idx[0]]
        wrong = _corrupt(p0, rng, cfg)[2] if lead_field(p0) != "presence" else None
        for i in rng.permutation(idx)[:take].tolist():
            chosen[int(i)] = wrong
    if len(chosen) < n_err:
        raise ValueError(f"systematic warm-up errors: {n_err} errors do not fit at cell_error_rate={rate}; "
                         "lower early_error_share or raise cell_error_rate")
    return chosen


def warmup_traces(records: Sequence[VQARecord], *, early_error_share: float = 0.3, seed: int = 0,
                  config: PhantomConfig | None = None, error_mode: str = "random",
                  cell_error_rate: float = 0.75) -> list[WarmupTrace]:
    """SFT traces for phantom ``records``: exactly ``round(early_error_share * len(records))`` of
    them open with a wrong first step that carries into a wrong answer; the rest are the gold
    chains. Use :func:`warmup_summary` for the realised share.

    ``error_mode``:

    - ``"random"``: the erring records are a seeded choice among all records, each with a random
      other value. A policy imitating them errs at about the stated share when it *samples*, but
      greedy decoding takes the majority first step (the right one when it perceives the field),
      so measure early failures on sampled outputs.
    - ``"systematic"``: the errors fill whole cells (question type x modality x organ x lesion or
      not, in a seeded order) at about ``cell_error_rate`` within each, with one wrong value per
      cell: a consistent misreading that greedy decoding repeats, while ``1 - cell_error_rate`` of
      the cell's targets stay right, so sampled rollouts still find the right first step.
    """
    import numpy as np

    if not 0.0 <= early_error_share <= 1.0:
        raise ValueError(f"early_error_share must lie in [0, 1], got {early_error_share}")
    if error_mode not in ERROR_MODES:
        raise ValueError(f"error_mode must be one of {ERROR_MODES}, got {error_mode!r}")
    if not 0.0 < cell_error_rate <= 1.0:
        raise ValueError(f"cell_error_rate must lie in (0, 1], got {cell_error_rate}")
    recs = list(records)
    params = [params_or_error(r) for r in recs]
    rng = np.random.default_rng([abs(int(seed)), 31337])
    n_err = int(round(early_error_share * len(recs)))
    if error_mode == "random":
        wrong: dict[int, Any] = {int(i): None for i in rng.permutation(len(recs))[:n_err].tolist()}
    else:
        wrong = _systematic_choice(params, n_err, cell_error_rate, rng, config)
    out = []
    for i, (r, p) in enumerate(zip(recs, params)):
        if i in wrong:
            q, fld, val = _corrupt(p, rng, config, wrong[i])
            steps, ans = gold_steps(q), answer_of(q)
            if ans == answer_of(p):  # cannot happen by construction; keep the guarantee explicit
                raise AssertionError(f"phantom: an early error on {r.id} did not change the answer")
        else:
            steps, ans, fld, val = gold_steps(p), answer_of(p), None, None
        t = make_trace(r, steps, ans, planted=("early_error",) if i in wrong else (), early_error=i in wrong,
                       error_field=fld, error_value=val)
        t.record.extras["warmup"]["error_mode"] = error_mode
        out.append(t)
    return out


def warmup_summary(traces: Sequence[WarmupTrace]) -> dict:
    """``{"n", "early_errors", "early_error_share", "error_mode", "by_question_type": {type:
    [errors, n]}, "by_field": {field: errors}, "cells": {cell: [errors, n]}, "planted": {kind:
    [traces, n, share]}}`` (``cells``: only those with errors; ``planted``: each kind of planted
    failure, :attr:`WarmupTrace.planted`)."""
    by_q: dict[str, list[int]] = {}
    by_f: dict[str, int] = {}
    cells: dict[str, list[int]] = {}
    for t in traces:
        qt = t.record.question_type or "?"
        c = by_q.setdefault(qt, [0, 0])
        cell = cells.setdefault(t.record.extras.get("warmup", {}).get("cell", "?"), [0, 0])
        c[1] += 1
        cell[1] += 1
        if t.early_error:
            c[0] += 1
            cell[0] += 1
            by_f[t.error_field] = by_f.get(t.error_field, 0) + 1
    n = len(traces)
    e = sum(t.early_error for t in traces)
    modes = sorted({t.record.extras.get("warmup", {}).get("error_mode") for t in traces} - {None})
    planted: dict[str, int] = {}
    for t in traces:
        for kind in t.planted:
            planted[kind] = planted.get(kind, 0) + 1
    return {"n": n, "early_errors": e, "early_error_share": e / n if n else None,
            "error_mode": modes[0] if len(modes) == 1 else modes, "by_question_type": by_q, "by_field": by_f,
            "cells": {k: v for k, v in sorted(cells.items()) if v[0]},
            "planted": {k: [v, n, v / n if n else None] for k, v in sorted(planted.items())}}


# ============================================================================ tokenizer texts / tiny model


def phantom_texts(config: PhantomConfig | None = None, n: int = 400, *, seed: int = 0) -> list[str]:
    """Texts a tokenizer for phantom policies should know: every question, gold chain and answer
    of ``n`` parameter draws, their warm-up error variants, the modality tags before ``<think>``
    and the recipes' system prompts (no images are drawn)."""
    import numpy as np

    from medrl.data.prompts import SYSTEM_PROMPTS
    from medrl.common.modality import MODALITY_TAGS

    # every question type's templates, whichever the config asks (warm-up errors and answers
    # name the other types' words too)
    cfg = dataclasses.replace(config or PhantomConfig(), question_types=QUESTION_TYPES)
    rng = np.random.default_rng([abs(int(seed)), 271828])
    texts = list(_QUESTIONS.values())
    texts += [_CUE_QUESTIONS[q].format(cue=w) for q, words in CUE_WORDS.items() for w in words.values()]
    texts += [f"<answer>{w}</answer>" for w in PARAPHRASES.values()] * 5  # other words for right answers
    for i in range(n):
        p = make_params("train", i, cfg, seed)
        for q in (p, _corrupt(p, rng, cfg)[0]):
            texts.append(f"<think>{' '.join(gold_steps(q))}</think><answer>{answer_of(q)}</answer>")
    texts += [f"{t} <think>" for t in MODALITY_TAGS]
    # the recipes' system prompts come with every prompt: whole-word tokens keep sequences short
    texts += list(SYSTEM_PROMPTS.values()) * 20
    return texts
