"""The GPU suite (``make test-gpu``; marker ``gpu``, never selected by the default run or CI).

On a CUDA machine it runs:

* the family matrix in bf16 (every family of ``medrl.models.families``): SFT with LoRA and full
  fine-tuning, GRPO and MRPO two steps each with teacher rollouts, MRPO token alignment, a
  checkpoint reloading to the final model's logits, batched generation vs one prompt at a time;
* vLLM rollouts for MRPO (two steps): ``colocate`` in-process and ``server`` (``trl vllm-serve``
  on one GPU, training on another);
* DeepSpeed ZeRO-2 / ZeRO-3 and FSDP through ``accelerate launch`` with 1 and 2 processes
  (MRPO two steps, the worker of ``tests/scenarios/test_multiprocess_cpu.py``);
* ``medrl eval --backend vllm`` on a small JSONL set.

``MEDRL_GPU_FAMILIES`` (a comma list) limits the family matrix to those families.
Each test skips with its reason when CUDA, enough GPUs, vLLM or DeepSpeed is missing, so on a
machine without a GPU ``make test-gpu`` collects everything and skips everything (exit 0).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from test_families import (  # noqa: F401  (fixtures reused from the CPU matrix)
    FAMILY_NAMES,
    _rl_trainer,
    _logits,
    _sft,
    build,
    check_mrpo_alignment,
    judge,
    records,
    teacher_text,
)

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning",
                                                          "ignore::DeprecationWarning")]

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "scenarios" / "test_multiprocess_cpu.py"
GPU_RL = ["grpo.use_cpu=false", "grpo.bf16=true"]


def _matrix() -> list[str]:
    """The families of the bf16 matrix: all of them, or ``MEDRL_GPU_FAMILIES`` (comma list), for
    a short device lease (e.g. ``MEDRL_GPU_FAMILIES=qwen2_5_vl``, the effects harness's family)."""
    only = [f.strip() for f in os.environ.get("MEDRL_GPU_FAMILIES", "").split(",") if f.strip()]
    bad = sorted(set(only) - set(FAMILY_NAMES))
    if bad:
        raise ValueError(f"MEDRL_GPU_FAMILIES: unknown famil(ies) {bad}; choose among {', '.join(FAMILY_NAMES)}")
    return [f for f in FAMILY_NAMES if not only or f in only]


MATRIX = _matrix()


def _cuda_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def need_gpus(n: int = 1) -> None:
    have = _cuda_count()
    if have == 0:
        pytest.skip("no CUDA device (torch.cuda.is_available() is False): the GPU suite needs a GPU")
    if have < n:
        pytest.skip(f"needs {n} CUDA devices, found {have}")


def need_module(name: str, install: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed ({install})")


@pytest.fixture(autouse=True)
def _gpu_first():
    """Runs before every other fixture: without CUDA nothing is built, everything skips."""
    need_gpus()
    import torch

    torch.set_num_threads(1)


# ------------------------------------------------------------------------------ the matrix in bf16


@pytest.mark.parametrize("family", MATRIX)
def test_gpu_sft_lora_and_full_bf16(family, build, records, tmp_path):
    need_gpus()
    from medrl.models import load_policy

    import torch
    import yaml

    from medrl.models import generate

    path = build(family)
    base, _ = load_policy(path)
    base_type, base_class = base.config.model_type, type(base)
    before = {n: p.detach().clone() for n, p in base.named_parameters()}
    del base
    for lora in ("default", None):
        opts = {"use_cpu": False, "bf16": True}
        if lora is None:
            opts["lora"] = None
        out = tmp_path / str(lora)
        final = _sft(path, records, out, **opts)
        model, _ = load_policy(final)
        assert model is not None
        # the same family comes back (LoRA merged into it), and training on the GPU changed weights
        assert type(model) is base_class and model.config.model_type == base_type
        # (compared in float32 beyond bf16 rounding: the checkpoint may be saved in bf16)
        changed = [n for n, p in model.named_parameters() if n in before and not torch.allclose(
            p.detach().float().cpu(), before[n].float(), rtol=1e-2, atol=1e-4)]
        assert changed, f"{family} lora={lora}: bf16 SFT on the GPU changed no weight"
        assert yaml.safe_load((out / "sft_config.yaml").read_text())["sft_config"]["bf16"] is True
        # on the device in bf16: finite logits over every prompt token, and generation runs
        model, processor = load_policy(final, dtype="bfloat16", device_map="cuda")
        enc, logits = _device_logits(model, processor, records)
        assert logits.device.type == "cuda" and logits.dtype == torch.bfloat16
        assert tuple(logits.shape[:2]) == tuple(enc["input_ids"].shape)
        assert torch.isfinite(logits.float()).all()
        texts = generate(model, processor, records[:2], max_new_tokens=4, progress=False)
        assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
        del model


def _device_logits(model, processor, records):
    """(inputs, logits) of one batch of chat prompts with images, on the model's device."""
    import torch

    from medrl.models.generation import _nested_images, to_chat

    chats = [to_chat(r) for r in records]
    texts = [processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m, _ in chats]
    images = [imgs for _, imgs in chats] if _nested_images(processor) else [i for _, imgs in chats for i in imgs]
    enc = processor(text=texts, images=images, padding=True, return_tensors="pt").to(model.device)
    model.eval()
    with torch.no_grad():
        return enc, model(**enc).logits


@pytest.mark.parametrize("family", MATRIX)
@pytest.mark.parametrize("name", ["grpo", "mrpo"])
def test_gpu_rl_two_steps_bf16(family, name, build, records, judge, tmp_path):
    need_gpus()
    from medrl.train.teacher import install_teacher

    _, tr = _rl_trainer(name, build(family), records, judge, tmp_path, overrides=["grpo.save_strategy='no'", *GPU_RL])
    install_teacher(tr, records, teacher_text, every=2)
    tr.train()
    assert tr.state.global_step == 2
    assert next(tr.model.parameters()).device.type == "cuda"
    assert any((h.get("reward_std") or 0) > 0 for h in tr.state.log_history if "reward" in h)


@pytest.mark.parametrize("family", MATRIX)
def test_gpu_mrpo_token_alignment_bf16(family, build, records, judge, tmp_path):
    check_mrpo_alignment(family, build(family), records, judge, tmp_path, overrides=GPU_RL)


@pytest.mark.parametrize("family", MATRIX)
def test_gpu_checkpoint_reload_gives_the_final_logits_bf16(family, build, records, tmp_path):
    from medrl.models import load_policy

    final = _sft(build(family), records, tmp_path / "run", lora=None, use_cpu=False, bf16=True)
    (m1, p1), (m2, _) = load_policy(final), load_policy(tmp_path / "run" / "checkpoint-2")
    import torch

    torch.testing.assert_close(_logits(m1, p1, records), _logits(m2, p1, records), rtol=0, atol=0)


@pytest.mark.parametrize("family", MATRIX)
def test_gpu_batched_generation_bf16(family, build, records):
    need_gpus()
    from medrl.models import generate, load_policy

    model, processor = load_policy(build(family), dtype="bfloat16", device_map="cuda")
    batched = generate(model, processor, records, max_new_tokens=8, batch_size=4, progress=False)
    single = [generate(model, processor, [r], max_new_tokens=8, progress=False)[0] for r in records]
    assert len(batched) == len(records)
    # bf16 kernels may round padded and unpadded rows differently; most rows must agree exactly
    assert sum(a == b for a, b in zip(batched, single)) >= len(records) - 1, (batched, single)


# ------------------------------------------------------------------------------ vLLM rollouts


VLLM_RL = [*GPU_RL, "grpo.use_vllm=true", "grpo.vllm_importance_sampling_correction=false"]


def test_vllm_colocate_mrpo_two_steps(build, records, judge, tmp_path):
    need_gpus()
    need_module("vllm", "pip install 'medrl[vllm]'")
    from medrl.train.teacher import install_teacher

    _, tr = _rl_trainer("mrpo", build("qwen2_5_vl"), records, judge, tmp_path, overrides=[
        "grpo.save_strategy='no'", *VLLM_RL, "grpo.vllm_mode='colocate'", "grpo.vllm_gpu_memory_utilization=0.3"])
    install_teacher(tr, records, teacher_text, every=2)
    tr.train()
    assert tr.state.global_step == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_vllm_server_mrpo_two_steps(build, records, tmp_path):
    need_gpus(2)
    need_module("vllm", "pip install 'medrl[vllm]'")
    port = _free_port()
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    log = open(tmp_path / "vllm_serve.log", "w")
    trl_cli = Path(sys.executable).parent / "trl"
    if not trl_cli.is_file():
        pytest.skip(f"the `trl` command is not installed next to {sys.executable}")
    server = subprocess.Popen([str(trl_cli), "vllm-serve", "--model", str(build("qwen2_5_vl")),
                               "--host", "127.0.0.1", "--port", str(port), "--trust_remote_code", "true",
                               "--gpu_memory_utilization", "0.3"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 600
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.time() > deadline:
                pytest.fail(f"trl vllm-serve did not come up: {(tmp_path / 'vllm_serve.log').read_text()[-3000:]}")
            time.sleep(5)
        from test_multiprocess_cpu import launch_worker

        out = tmp_path / "run"
        launch_worker({"mode": "train", "recipe": "mrpo", "model": str(build("qwen2_5_vl")), "records": records,
                       "out": str(out), "overrides": ["grpo.save_strategy='no'", *VLLM_RL, "grpo.vllm_mode='server'",
                                                      f"grpo.vllm_server_base_url='http://127.0.0.1:{port}'"]},
                      tmp_path, ["--num_processes", "1", "--mixed_precision", "bf16"],
                      env={"CUDA_VISIBLE_DEVICES": "1"})
        assert json.loads((out / "result_0.json").read_text())["global_step"] == 2
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


# ------------------------------------------------------------------------------ DeepSpeed / FSDP


SCALE_OUT = {
    "zero2": ["--use_deepspeed", "--zero_stage", "2"],
    "zero3": ["--use_deepspeed", "--zero_stage", "3"],
    "fsdp": ["--use_fsdp", "--fsdp_version", "1", "--fsdp_sharding_strategy", "FULL_SHARD",
             "--fsdp_auto_wrap_policy", "SIZE_BASED_WRAP", "--fsdp_min_num_params", "1000"],
}


@pytest.mark.parametrize("nproc", [1, 2])
@pytest.mark.parametrize("backend", list(SCALE_OUT))
def test_accelerate_scale_out_mrpo_two_steps(backend, nproc, build, records, tmp_path):
    need_gpus(nproc)
    if backend.startswith("zero"):
        need_module("deepspeed", "pip install deepspeed")
    from test_multiprocess_cpu import launch_worker

    out = tmp_path / "run"
    launch_worker({"mode": "train", "recipe": "mrpo", "model": str(build("qwen2_5_vl")), "records": records,
                   "out": str(out), "overrides": ["grpo.save_strategy='no'", *GPU_RL]},
                  tmp_path, [*SCALE_OUT[backend], "--num_processes", str(nproc), "--mixed_precision", "bf16"],
                  timeout=1800)
    for rank in range(nproc):
        res = json.loads((out / f"result_{rank}.json").read_text())
        assert res["world"] == nproc and res["global_step"] == 2


# ------------------------------------------------------------------------------ medrl eval --backend vllm


def test_eval_backend_vllm(build, records, tmp_path):
    need_gpus()
    need_module("vllm", "pip install 'medrl[vllm]'")
    from medrl.data import write_jsonl

    data = write_jsonl(records, tmp_path / "records.jsonl")
    out = tmp_path / "eval"
    cmd = [sys.executable, "-m", "medrl.cli", "eval", "--model", str(build("qwen2_5_vl")), "--data", f"jsonl:{data}",
           "--judge", "reference", "--backend", "vllm", "--max-new-tokens", "16", "--include-closed",
           "--out", str(out)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    subprocess.run(cmd, check=True, env=env, cwd=REPO, timeout=1800)
    from medrl.common.jsonl import read_jsonl

    rows = read_jsonl(out / "outputs.jsonl")
    assert len(rows) == len(records)
