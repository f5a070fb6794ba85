"""Image corruption for CAPO's perceptual-cognitive consistency reward.

CAPO (Eq. 3 and Tables 5-6) rolls the policy out a second time on a
corrupted image and rewards rollouts whose accuracy drops. Corruptions:

- ``diffusion`` (default): forward diffusion noise at step t of a DDPM with the linear beta
  schedule (Ho et al. 2020: beta_1 = 1e-4 .. beta_T = 0.02, T = 1000; default t = 100):
  ``x_t = sqrt(abar_t) * x_0 + sqrt(1 - abar_t) * eps``, eps ~ N(0, I), on pixels scaled to
  [-1, 1], where ``abar_t = prod_{s<=t} (1 - beta_s)``.
- ``mask``: a random rectangle (``area`` fraction of the image, default 0.25) set to black.
- ``crop``: a random crop keeping ``area`` of the image (default 0.5), resized back to the
  original size.

Deterministic under ``seed``. PIL in, PIL out; numpy only.
"""

from __future__ import annotations

import functools
import math

import numpy as np

KINDS = ("diffusion", "mask", "crop")


@functools.lru_cache(maxsize=8)
def ddpm_alpha_bar(num_steps: int = 1000, beta_start: float = 1e-4, beta_end: float = 0.02) -> np.ndarray:
    """abar_t for t = 1..T as an array indexed [t-1]; linear betas (Ho et al. 2020, Sec. 4)."""
    betas = np.linspace(beta_start, beta_end, num_steps, dtype=np.float64)
    return np.cumprod(1.0 - betas)


def diffuse(x0: np.ndarray, t: int, rng: np.random.Generator, num_steps: int = 1000) -> np.ndarray:
    """q(x_t | x_0) sample for ``x0`` in [-1, 1]: sqrt(abar_t) x0 + sqrt(1 - abar_t) eps."""
    if not 0 <= t <= num_steps:
        raise ValueError(f"diffusion step t must be in [0, {num_steps}], got {t}")
    if t == 0:
        return x0.copy()
    abar = ddpm_alpha_bar(num_steps)[t - 1]
    eps = rng.standard_normal(x0.shape)
    return math.sqrt(abar) * x0 + math.sqrt(1.0 - abar) * eps


def corrupt_image(img, kind: str = "diffusion", t: int = 100, seed: int = 0, *, area: float | None = None, num_steps: int = 1000):
    """Return a corrupted copy of PIL image ``img`` (same size and mode family: L stays L,
    everything else becomes RGB). ``t``: diffusion step; ``area``: mask / crop fraction."""
    from PIL import Image

    if kind not in KINDS:
        raise ValueError(f"unknown corruption {kind!r}; use one of {KINDS}")
    rng = np.random.default_rng(seed)
    mode = "L" if img.mode in ("L", "1", "I", "I;16", "F") else "RGB"
    src = img.convert(mode)
    w, h = src.size
    if kind == "diffusion":
        x0 = np.asarray(src, dtype=np.float64) / 127.5 - 1.0
        xt = diffuse(x0, t, rng, num_steps)
        out = np.clip((xt + 1.0) * 127.5, 0, 255).round().astype(np.uint8)
        return Image.fromarray(out, mode=mode)
    frac = area if area is not None else (0.25 if kind == "mask" else 0.5)
    if not 0 < frac <= 1:
        raise ValueError(f"area must be in (0, 1], got {frac}")
    side = math.sqrt(frac)
    bw, bh = max(1, round(w * side)), max(1, round(h * side))
    x = int(rng.integers(0, w - bw + 1))
    y = int(rng.integers(0, h - bh + 1))
    if kind == "mask":
        arr = np.array(src)
        arr[y:y + bh, x:x + bw] = 0
        return Image.fromarray(arr, mode=mode)
    return src.crop((x, y, x + bw, y + bh)).resize((w, h), Image.BICUBIC)
