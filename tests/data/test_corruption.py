"""CAPO image corruptions: DDPM forward noise (checked against a hand computation), mask, crop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from medrl.data.corruption import corrupt_image, ddpm_alpha_bar


def test_alpha_bar_by_hand():
    ab = ddpm_alpha_bar()
    # linear betas 1e-4 .. 0.02 over 1000 steps: beta_t = 1e-4 + (t-1) * (0.02 - 1e-4) / 999
    assert ab[0] == pytest.approx(1 - 1e-4)
    b2 = 1e-4 + (0.02 - 1e-4) / 999
    assert ab[1] == pytest.approx((1 - 1e-4) * (1 - b2))
    # abar_100 = prod_{t=1}^{100} (1 - beta_t); log-sum by hand: sum beta ~ 100*1e-4 + 0.0199/999 * 4950 = 0.10861
    betas = [1e-4 + (t - 1) * (0.02 - 1e-4) / 999 for t in range(1, 101)]
    assert ab[99] == pytest.approx(math.prod(1 - b for b in betas))
    assert ab[99] == pytest.approx(0.8970, abs=2e-4)  # exp(-0.10861 - sum beta^2/2 ...) ~ 0.897


def test_diffusion_matches_formula_and_is_seeded():
    img = Image.fromarray(np.tile(np.arange(0, 256, 16, dtype=np.uint8), (8, 1)), mode="L")
    out = corrupt_image(img, "diffusion", t=100, seed=3)
    assert out.size == img.size and out.mode == "L"
    x0 = np.asarray(img, dtype=np.float64) / 127.5 - 1
    eps = np.random.default_rng(3).standard_normal(x0.shape)
    ab = ddpm_alpha_bar()[99]
    expect = np.clip((math.sqrt(ab) * x0 + math.sqrt(1 - ab) * eps + 1) * 127.5, 0, 255).round()
    assert np.array_equal(np.asarray(out), expect.astype(np.uint8))
    assert np.array_equal(np.asarray(corrupt_image(img, t=100, seed=3)), np.asarray(out))
    assert not np.array_equal(np.asarray(corrupt_image(img, t=100, seed=4)), np.asarray(out))
    assert np.array_equal(np.asarray(corrupt_image(img, t=0)), np.asarray(img))
    # noise grows with t
    d = [np.abs(np.asarray(corrupt_image(img, t=t), dtype=float) - np.asarray(img, dtype=float)).mean() for t in (10, 100, 900)]
    assert d[0] < d[1] < d[2]
    with pytest.raises(ValueError):
        corrupt_image(img, t=1001)


def test_mask_and_crop_deterministic():
    rgb = Image.new("RGBA", (40, 20), (200, 100, 50, 255))
    m = corrupt_image(rgb, "mask", seed=1)
    arr = np.asarray(m)
    assert m.mode == "RGB" and m.size == (40, 20)
    assert (arr.sum(axis=2) == 0).sum() == 20 * 10  # sqrt(0.25) of each side: a 20 x 10 black box
    assert np.array_equal(arr, np.asarray(corrupt_image(rgb, "mask", seed=1)))
    grad = Image.fromarray(np.tile(np.arange(40, dtype=np.uint8) * 6, (20, 1)), mode="L")
    c = corrupt_image(grad, "crop", seed=2, area=0.25)
    assert c.size == grad.size and not np.array_equal(np.asarray(c), np.asarray(grad))
    assert np.array_equal(np.asarray(c), np.asarray(corrupt_image(grad, "crop", seed=2, area=0.25)))
    with pytest.raises(ValueError):
        corrupt_image(grad, "blur")
