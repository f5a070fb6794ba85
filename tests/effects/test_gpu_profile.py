"""The effects harness's GPU profile, shrunk to a smoke run (marker ``gpu``; skipped without CUDA).

It checks that the profile's real small VLM (``model="default"``) goes through warm-up SFT, GRPO
and MRPO and the oracle evaluation on a GPU; the numbers are not checked."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]


def test_gpu_profile_smoke(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the GPU profile needs one")
    from medrl.effects import make_config, run_effects

    config = make_config("gpu", seeds=1, n_train=16, n_test=8, sft_steps=2, rl_steps=2, rl_prompts=2,
                         num_generations=2, max_completion_length=48, eval_max_new_tokens=48, noise_sweep=(),
                         signatures=(), hacks=())
    md, html = run_effects(config, tmp_path / "gpu", progress=False)
    assert md.is_file() and html.is_file()
    runs = json.loads((tmp_path / "gpu" / "seeds" / "seed0.json").read_text())["runs"]
    assert {"s0/grpo@oracle", "s0/mrpo@oracle"} <= set(runs)
