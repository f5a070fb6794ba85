"""Sharded engines on two CPU processes, launched as a user would: ``accelerate launch
--config_file tests/accelerate_configs/{fsdp,zero2,zero3}_cpu.yaml``.

For GRPO and MRPO on the tiny model, one optimizer step on fixed rollouts (``tests/mp_worker.py``:
each prompt's group is a right and a wrong teacher completion, no sampling) under FSDP2 (torch's
gloo backend), DeepSpeed ZeRO-2 and ZeRO-3 (DeepSpeed's CPU accelerator) must give

- the engine asked for (the worker records ``accelerator.distributed_type``: a launch that
  silently falls back to plain data parallel fails here),
- the same per-rollout (MRPO: per-token) advantages,
- the same logged loss, and
- the same parameters after the step

as one process on the same batch. A second test lets the policy sample its own rollouts under
FSDP2 and ZeRO-3 (generation through the sharded model) and checks that the step completes; a
third stops an MRPO run after step 1 under each engine and resumes it from its checkpoint for
step 2, ending with the parameters of one process training both steps without a break.
Every test is slow (two processes each import torch and TRL;
the first DeepSpeed run JIT-builds its shared-memory op): ``pytest -m slow
tests/scenarios/test_multiprocess_backends.py``. Results and timings: docs/training.md, "Multi-process on CPU".
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synthetic import synthetic_records, teacher_text, wrong_text

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

REPO = Path(__file__).resolve().parents[2]
CONFIGS = Path(__file__).resolve().parents[1] / "accelerate_configs"
WORKER = Path(__file__).resolve().parents[1] / "mp_worker.py"

#: per engine: its config file, the environment its CPU processes need, what must have run.
#: Every engine's run also gets ``grpo.ddp_backend='gloo'`` (see :func:`_spec`).
ENGINES = {
    # gloo CPU processes (ACCELERATE_USE_CPU); the worker promotes accelerate's MULTI_CPU state to FSDP
    "fsdp": ("fsdp_cpu.yaml", {"ACCELERATE_USE_CPU": "true"},
             {"distributed_type": "DistributedType.FSDP", "fsdp_version": 2}),
    # DeepSpeed's CPU accelerator. ACCELERATE_USE_CPU would turn DeepSpeed off, and without
    # ddp_backend='gloo' accelerate finds no backend on CPU and gives each process world size 1
    "zero2": ("zero2_cpu.yaml", {"DS_ACCELERATOR": "cpu"},
              {"distributed_type": "DistributedType.DEEPSPEED", "zero_stage": 2}),
    "zero3": ("zero3_cpu.yaml", {"DS_ACCELERATOR": "cpu"},
              {"distributed_type": "DistributedType.DEEPSPEED", "zero_stage": 3}),
}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return synthetic_records(tmp_path_factory.mktemp("imgs"))[:2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, records):
    from medrl.models import build_tiny_vlm

    texts = [r.question for r in records] + [f(r) for r in records for f in (teacher_text, wrong_text)]
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "model", texts=texts)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(spec: dict, launcher_args: list[str], env: dict[str, str], timeout: int = 1200) -> float:
    """Run ``tests/mp_worker.py`` under ``accelerate launch <launcher_args>`` on CPU processes;
    returns the launch's wall time in seconds."""
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    spec = {**spec, "records": [dataclasses.asdict(r) for r in spec["records"]]}
    (out / "spec.json").write_text(json.dumps(spec, default=str))
    full_env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                    OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", CUDA_VISIBLE_DEVICES="")
    for key in ("ACCELERATE_USE_CPU", "DS_ACCELERATOR"):
        full_env.pop(key, None)
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(WORKER.parent), full_env.get("PYTHONPATH", "")])
    full_env.update(env)
    cmd = [sys.executable, "-m", "accelerate.commands.launch", *launcher_args, "--main_process_port",
           str(_free_port()), str(WORKER), str(out / "spec.json")]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=full_env, cwd=REPO, timeout=timeout, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    (out / "launch.log").write_text(proc.stdout + proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if "Error" in line and "Warning" not in line]
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-3000:]}\nerror lines:\n" + "\n".join(errors[-20:])
    return seconds


def _spec(recipe: str, model, records, out: Path, per_device: int) -> dict:
    # gloo for the two-process engines only: a single process given a backend looks for a process group
    return {"recipe": recipe, "model": str(model), "records": records, "out": str(out), "per_device": per_device,
            "overrides": ["grpo.ddp_backend='gloo'"] if per_device < 4 else []}


@pytest.fixture(scope="module")
def one_process(tiny, records, tmp_path_factory):
    """The reference: one CPU process, the whole batch (2 prompts x 2 rollouts), one step."""
    done: dict[str, Path] = {}

    def get(recipe: str) -> Path:
        if recipe not in done:
            out = tmp_path_factory.mktemp(f"one_{recipe}")
            seconds = launch(_spec(recipe, tiny, records, out, 4),
                             ["--cpu", "--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no",
                              "--dynamo_backend", "no"], {})
            print(f"\n[timing] {recipe} one process: launch {seconds:.0f} s")
            done[recipe] = out
        return done[recipe]

    return get


def advantages_per_question(res: dict) -> dict[str, list]:
    """question -> the advantages of its rollouts (per token where 2-D), sorted."""
    got: dict[str, list] = {}
    for batch in res["seen"]:
        adv = batch["advantages"]
        for i, q in enumerate(batch["questions"]):
            mask = batch["completion_mask"][i].bool()
            got.setdefault(q, []).append(adv[i][mask] if adv.dim() == 2 else adv[i].expand(int(mask.sum())))
    return {q: sorted(v, key=lambda t: t.tolist()) for q, v in got.items()}


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("recipe", ["grpo", "mrpo"])
def test_two_cpu_processes_match_one_process_after_a_step(engine, recipe, tiny, records, one_process, tmp_path):
    config, env, expected = ENGINES[engine]
    if engine.startswith("zero"):
        pytest.importorskip("deepspeed")
    ref_dir = one_process(recipe)
    out = tmp_path / engine
    seconds = launch(_spec(recipe, tiny, records, out, 2), ["--config_file", str(CONFIGS / config)], env)
    ref = torch.load(ref_dir / "step_0.pt")
    parts = [torch.load(out / f"step_{rank}.pt") for rank in (0, 1)]
    print(f"\n[timing] {recipe} {engine} two processes: launch {seconds:.0f} s, train() "
          f"{max(p['train_seconds'] for p in parts):.1f} s (one process: {ref['train_seconds']:.1f} s)")
    assert ref["world"] == 1 and ref["distributed_type"] == "DistributedType.NO"
    for rank, part in enumerate(parts):
        assert part["world"] == 2 and part["rank"] == rank
        ran = {k: part[k] for k in expected}
        assert ran == expected, f"{engine} did not run as configured: {ran}"

    # the same advantages, rollout by rollout (per token for MRPO)
    want = advantages_per_question(ref)
    got: dict[str, list] = {}
    for part in parts:
        for q, advs in advantages_per_question(part).items():
            got.setdefault(q, []).extend(advs)
    assert got.keys() == want.keys() and len(want) == 2
    for q in want:
        assert len(got[q]) == len(want[q]) == 2
        for a, b in zip(sorted(got[q], key=lambda t: t.tolist()), want[q]):
            torch.testing.assert_close(a, b)
    if recipe == "mrpo":  # the wrong rollout's tokens are reshaped: the comparison tests MRPO's token advantages
        assert any(not torch.allclose(a, a[0].expand_as(a)) for advs in want.values() for a in advs)

    # the same logged loss (mean over processes) and the same parameters after the step
    assert ref["loss"] and parts[0]["loss"]
    torch.testing.assert_close(torch.tensor(parts[0]["loss"]), torch.tensor(ref["loss"]), rtol=1e-4, atol=1e-5)
    p1, p2 = torch.load(ref_dir / "params.pt"), torch.load(out / "params.pt")
    assert p1.keys() == p2.keys()
    for k in p1:
        # lr 0.01: Adam's first step moves a weight by ~lr * g / (|g| + eps); gradients near eps turn a
        # different reduction order into differences up to ~3e-5
        torch.testing.assert_close(p2[k], p1[k], rtol=1e-3, atol=1e-4, msg=lambda m, k=k: f"{k}: {m}")
    before = torch.load(ref_dir / "params_before.pt")
    assert before.keys() == p1.keys()
    assert any(not torch.equal(p1[k], before[k]) for k in p1), "the step moved nothing: the comparison tests nothing"


@pytest.mark.parametrize("engine", ["fsdp", "zero3"])
def test_two_cpu_processes_sample_rollouts_through_the_sharded_engine(engine, tiny, records, tmp_path):
    """The policy's own generation under FSDP2 and ZeRO-3 (TRL gathers the sharded weights for
    ``generate``): one MRPO step where each group's first rollout is sampled, the second a
    teacher completion. Sampling differs between runs, so this checks that it runs, not numbers."""
    config, env, expected = ENGINES[engine]
    if engine.startswith("zero"):
        pytest.importorskip("deepspeed")
    out = tmp_path / engine
    seconds = launch({**_spec("mrpo", tiny, records, out, 2), "sample": True}, ["--config_file", str(CONFIGS / config)],
                     env)
    parts = [torch.load(out / f"step_{rank}.pt") for rank in (0, 1)]
    print(f"\n[timing] mrpo {engine} two processes, sampled rollouts: launch {seconds:.0f} s, train() "
          f"{max(p['train_seconds'] for p in parts):.1f} s")
    for part in parts:
        assert {k: part[k] for k in expected} == expected
        assert part["global_step"] == 1 and part["loss"] and all(math.isfinite(x) for x in part["loss"])


TWO_STEPS = ["grpo.max_steps=2"]


@pytest.fixture(scope="module")
def one_process_two_steps(tiny, records, tmp_path_factory) -> Path:
    """The reference for resuming: one process trains MRPO two steps without a break."""
    ref = tmp_path_factory.mktemp("one_two_steps")
    launch({**_spec("mrpo", tiny, records, ref, 4), "overrides": TWO_STEPS},
           ["--cpu", "--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no",
            "--dynamo_backend", "no"], {})
    return ref


@pytest.mark.parametrize("engine", list(ENGINES))
def test_two_cpu_processes_resume_a_checkpoint_under_the_engine(engine, tiny, records, one_process_two_steps,
                                                                 tmp_path):
    """Checkpoint and resume under each engine: an MRPO run stopped after step 1 (its sharded
    checkpoint saved) and resumed for step 2 ends with the parameters of one process training
    both steps without a break (fixed rollouts, as above)."""
    config, env, expected = ENGINES[engine]
    if engine.startswith("zero"):
        pytest.importorskip("deepspeed")
    ref = one_process_two_steps
    out = tmp_path / engine
    spec = _spec("mrpo", tiny, records, out, 2)
    spec["overrides"] = [*spec["overrides"], *TWO_STEPS]
    first = launch({**spec, "stop_after": 1}, ["--config_file", str(CONFIGS / config)], env)
    assert torch.load(out / "step_0.pt")["global_step"] == 1 and (out / "checkpoint-1").is_dir()
    second = launch({**spec, "resume_from": str(out / "checkpoint-1")}, ["--config_file", str(CONFIGS / config)], env)
    print(f"\n[timing] mrpo {engine}: stop after step 1 {first:.0f} s, resume for step 2 {second:.0f} s")
    parts = [torch.load(out / f"step_{rank}.pt") for rank in (0, 1)]
    for part in parts:
        assert {k: part[k] for k in expected} == expected and part["global_step"] == 2
        assert len(part["seen"]) == 1  # the resumed run made one step, not two
    want = torch.load(ref / "step_0.pt")
    torch.testing.assert_close(torch.tensor(parts[0]["loss"]), torch.tensor(want["loss"]), rtol=1e-4, atol=1e-5)
    p1, p2 = torch.load(ref / "params.pt"), torch.load(out / "params.pt")
    assert p1.keys() == p2.keys()
    for k in p1:
        torch.testing.assert_close(p2[k], p1[k], rtol=1e-3, atol=1e-4, msg=lambda m, k=k: f"{k}: {m}")
