"""Multi-process correctness on CPU: ``accelerate launch --cpu --num_processes 2``.

1. MRPO and CAPO run two steps with teacher rollouts in two processes (gloo), end to end.
   Launcher note: ``accelerate launch --cpu --num_processes 2`` starts a single process (the
   simple launcher ignores the count without an MPI hostfile); two CPU processes come from
   ``accelerate launch --multi_gpu --num_processes 2`` with no visible GPU (``MULTI_CPU``).
2. Each process's MRPO token advantages equal the matching rows of a single-process run on the
   same batch: process 0 scores prompt A's group, process 1 prompt B's; TRL gathers the rewards,
   normalises per group over the global batch and hands each process its slice; MRPO's token
   shaping then runs on the local rows. The single process scores [A, A, B, B] at once.
3. One optimizer step of GRPO and MRPO on fixed rollouts under DDP with two CPU processes gives
   the same per-rollout (token) advantages, the same logged loss and the same parameters as one
   process (gloo). FSDP2 and DeepSpeed ZeRO-2/3 on CPU are proven the same way in
   ``tests/scenarios/test_multiprocess_backends.py``.

The worker is this file run as a script (``--worker SPEC.json``) under ``accelerate launch``.
Everything here is slow (two processes each import torch/TRL): ``pytest -m slow``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from synthetic import score_right_and_wrong, synthetic_records, teacher_text, wrong_text

REPO = Path(__file__).resolve().parents[2]
MAX_LEN = 40


# ------------------------------------------------------------------------------ worker (subprocess)


def _worker(spec_path: str) -> None:
    import torch

    from medrl.data import VQARecord
    from medrl.judges import build_judge
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe
    from medrl.train.teacher import install_teacher

    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())
    records = [VQARecord(**r) for r in spec["records"]]
    out = Path(spec["out"])
    overrides = [f"grpo.max_completion_length={MAX_LEN}", "grpo.report_to='none'", *spec.get("overrides", [])]
    recipe = load_recipe(spec["recipe"], profile="cpu", overrides=overrides)
    tr = train_rl(recipe, spec["model"], records, out, judge=build_judge("reference"), train=False).trainer
    rank, world = tr.accelerator.process_index, tr.accelerator.num_processes
    if spec["mode"] == "train":
        install_teacher(tr, records, teacher_text, every=2)
        tr.train()
        (out / f"result_{rank}.json").write_text(json.dumps({
            "world": world, "global_step": tr.state.global_step,
            "logs": [h for h in tr.state.log_history if "reward" in h]}))
        return
    if spec["mode"] == "step":
        _one_step(tr, records, out, rank, world)
        return
    # mode "advantages": fixed rollouts (right, wrong) per prompt, no sampling
    rows = [0, 0, 1, 1]
    per = len(rows) // world
    local = rows[rank * per:(rank + 1) * per]
    res = score_right_and_wrong(tr, records[:2], local)
    torch.save({"world": world, "rank": rank, "rows": local, "advantages": res["advantages"].cpu(),
                "completion_ids": res["completion_ids"].cpu(), "completion_mask": res["completion_mask"].cpu()},
               out / f"adv_{rank}.pt")


def _one_step(tr, records, out: Path, rank: int, world: int) -> None:
    """One optimizer step on fixed rollouts (right, wrong) per prompt, through ``tr.train()`` (so
    FSDP / DeepSpeed wrap the model as in a real run): saves this process's advantages per
    prompt, the logged loss and (rank 0) the full parameters after the step."""
    import torch

    from synthetic import teacher_text as right
    from synthetic import wrong_text as wrong

    from medrl.train.teacher import install_teacher

    calls = {"n": 0}

    def text(rec):
        calls["n"] += 1
        return right(rec) if calls["n"] % 2 == 1 else wrong(rec)

    install_teacher(tr, records, text, replace_all=True)
    seen = []
    orig = tr._generate_and_score_completions

    def capture(inputs):
        res = orig(inputs)
        seen.append({"questions": [x["question"] for x in inputs], "advantages": res["advantages"].detach().cpu(),
                     "completion_mask": res["completion_mask"].cpu()})
        return res

    tr._generate_and_score_completions = capture
    tr.train()
    state = tr.accelerator.get_state_dict(tr.model_wrapped)  # gathers FSDP / ZeRO-3 shards (collective)
    torch.save({"world": world, "seen": seen, "loss": [h["loss"] for h in tr.state.log_history if "loss" in h],
                "engine": str(tr.accelerator.distributed_type).split(".")[-1], "device": str(tr.accelerator.device),
                "zero_stage": (tr.accelerator.state.deepspeed_plugin.zero_stage if tr.is_deepspeed_enabled else None),
                "fsdp": tr.is_fsdp_enabled},
               out / f"step_{rank}.pt")
    if rank == 0:
        torch.save({k: v.detach().float().cpu() for k, v in state.items()}, out / "params.pt")


if __name__ == "__main__" and "--worker" in sys.argv:
    _worker(sys.argv[sys.argv.index("--worker") + 1])
    sys.exit(0)


# ------------------------------------------------------------------------------ tests

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]



@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return synthetic_records(tmp_path_factory.mktemp("imgs"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, records):
    from medrl.models import build_tiny_vlm

    texts = [r.question for r in records] + [f(r) for r in records for f in (teacher_text, wrong_text)]
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "model", texts=texts)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_worker(spec: dict, workdir: Path, launcher_args: list[str], *, env: dict | None = None,
                  timeout: int = 900) -> None:
    """Run this file's worker under ``accelerate launch <launcher_args>`` (also used by the GPU
    suite with DeepSpeed / FSDP / vLLM arguments)."""
    import dataclasses

    spec = {**spec, "records": [r if isinstance(r, dict) else dataclasses.asdict(r) for r in spec["records"]]}
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"spec_{abs(hash(json.dumps(spec, default=str))) % 10**8}.json"
    path.write_text(json.dumps(spec, default=str))
    full_env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                    OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1")
    # the worker is this file run as a script: REPO for medrl, tests/ for the shared test helpers
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests"), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "accelerate.commands.launch", *launcher_args, "--num_machines", "1",
           "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
           str(Path(__file__).resolve()), "--worker", str(path)]
    proc = subprocess.run(cmd, env=full_env, cwd=REPO, timeout=timeout, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-4000:]}"


def _launch(spec: dict, tmp_path: Path, num_processes: int) -> None:
    # `accelerate launch --cpu` starts ONE process whatever --num_processes says (its simple
    # launcher; several CPU processes would need an MPI hostfile). The torch.distributed launcher
    # (`--multi_gpu`) on a machine without visible GPUs starts N CPU processes joined by gloo
    # (accelerate's MULTI_CPU); the worker checks the world size it got.
    mode = "--cpu" if num_processes == 1 else "--multi_gpu"
    launch_worker(spec, tmp_path, [mode, "--num_processes", str(num_processes), "--mixed_precision", "no"],
                  env={"CUDA_VISIBLE_DEVICES": ""})  # CPU processes even on a GPU machine


@pytest.mark.parametrize("recipe", ["mrpo", "capo"])
def test_two_processes_run_two_steps_with_teacher_rollouts(recipe, tiny, records, tmp_path):
    out = tmp_path / "run"
    _launch({"mode": "train", "recipe": recipe, "model": str(tiny), "records": records, "out": str(out),
             "overrides": ["grpo.save_strategy='no'"]}, tmp_path, 2)
    results = [json.loads((out / f"result_{r}.json").read_text()) for r in (0, 1)]
    for res in results:
        assert res["world"] == 2 and res["global_step"] == 2
        assert res["logs"] and all(h["reward"] == h["reward"] for h in res["logs"])
    # metrics are gathered: both processes log the same global reward
    assert [h["reward"] for h in results[0]["logs"]] == [h["reward"] for h in results[1]["logs"]]
    if recipe == "mrpo":
        assert "mrpo/reshaped_frac" in results[0]["logs"][-1]
    else:
        assert "capo/corrupted_mean_length" in results[0]["logs"][-1]


def test_each_process_token_advantages_match_a_single_process_run(tiny, records, tmp_path):
    spec = {"mode": "advantages", "recipe": "mrpo", "model": str(tiny), "records": records,
            "overrides": [f"grpo.max_completion_length={MAX_LEN + 16}"]}
    _launch({**spec, "out": str(tmp_path / "one"), "overrides": [*spec["overrides"],
                                                                 "grpo.per_device_train_batch_size=4"]}, tmp_path, 1)
    _launch({**spec, "out": str(tmp_path / "two"), "overrides": [*spec["overrides"],
                                                                 "grpo.per_device_train_batch_size=2"]}, tmp_path, 2)
    single = torch.load(tmp_path / "one" / "adv_0.pt")
    assert single["world"] == 1 and single["advantages"].shape[0] == 4
    reshaped = False
    for rank in (0, 1):
        part = torch.load(tmp_path / "two" / f"adv_{rank}.pt")
        assert part["world"] == 2 and part["rank"] == rank
        rows = slice(2 * rank, 2 * rank + 2)
        mask = part["completion_mask"].bool()
        t = mask.shape[1]
        assert torch.equal(part["completion_ids"][mask], single["completion_ids"][rows, :t][mask])
        torch.testing.assert_close(part["advantages"][mask], single["advantages"][rows, :t][mask])
        adv = part["advantages"][1][mask[1]]  # the wrong-answer rollout of this prompt
        reshaped |= not torch.allclose(adv, adv[0].expand_as(adv))
    assert reshaped, "no token was reshaped: the comparison would not test MRPO's token advantages"


# ------------------------------------------------------------------------------ sharded engines on CPU

#: accelerate launch arguments of the engine checked here (FSDP and DeepSpeed: test_multiprocess_backends.py)
ENGINES = {"ddp": ["--multi_gpu"]}


def _step_spec(recipe: str, model, records, out: Path, per_device: int) -> dict:
    return {"mode": "step", "recipe": recipe, "model": str(model), "records": records[:2], "out": str(out),
            "overrides": [f"grpo.max_completion_length={MAX_LEN + 16}", "grpo.num_generations=2",
                          f"grpo.per_device_train_batch_size={per_device}", "grpo.gradient_accumulation_steps=1",
                          "grpo.max_steps=1", "grpo.save_strategy='no'", "grpo.learning_rate=0.01",
                          "grpo.logging_steps=1"]}


@pytest.fixture(scope="module")
def single_step(tiny, records, tmp_path_factory):
    """One-process reference: one step of each recipe on the same fixed rollouts."""
    done = {}

    def get(recipe: str) -> Path:
        if recipe not in done:
            out = tmp_path_factory.mktemp(f"one_{recipe}")
            _launch(_step_spec(recipe, tiny, records, out, 4), out, 1)
            done[recipe] = out
        return done[recipe]

    return get


def _per_question(path: Path) -> dict:
    res = torch.load(path)
    got = {}
    for batch in res["seen"]:
        for i, q in enumerate(batch["questions"]):
            mask = batch["completion_mask"][i].bool()
            got.setdefault(q, []).append(batch["advantages"][i][mask] if batch["advantages"].dim() == 2
                                         else batch["advantages"][i].expand(int(mask.sum())))
    return got


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("recipe", ["grpo", "mrpo"])
def test_two_process_engines_match_one_process_after_a_step(engine, recipe, tiny, records, single_step, tmp_path):
    """Two CPU processes under DDP (gloo): the same per-rollout
    (token) advantages, the same logged loss and the same parameters after one step as one
    process on the same fixed rollouts."""
    gpus = False
    one = single_step(recipe)
    out = tmp_path / engine
    launch_worker(_step_spec(recipe, tiny, records, out, 2), tmp_path,
                  [*ENGINES[engine], "--num_processes", "2", "--mixed_precision", "no"],
                  # CPU processes (not ACCELERATE_USE_CPU: with it DeepSpeed falls back to plain DDP)
                  env={} if gpus else {"CUDA_VISIBLE_DEVICES": ""})
    ran = torch.load(out / "step_0.pt")
    assert ran["device"].startswith("cuda" if gpus else "cpu"), ran
    assert ran["engine"] == "MULTI_CPU", ran
    ref = _per_question(one / "step_0.pt")
    got = {}
    for rank in (0, 1):
        assert torch.load(out / f"step_{rank}.pt")["world"] == 2
        for q, advs in _per_question(out / f"step_{rank}.pt").items():
            got.setdefault(q, []).extend(advs)
    assert got.keys() == ref.keys()
    for q in ref:
        for a, b in zip(sorted(got[q], key=lambda t: t.tolist()), sorted(ref[q], key=lambda t: t.tolist())):
            torch.testing.assert_close(a, b)
    loss_one = torch.load(one / "step_0.pt")["loss"]
    loss_two = torch.load(out / "step_0.pt")["loss"]
    assert loss_one and loss_two
    torch.testing.assert_close(torch.tensor(loss_two), torch.tensor(loss_one), rtol=1e-4, atol=1e-5)
    p1, p2 = torch.load(one / "params.pt"), torch.load(out / "params.pt")
    assert p1.keys() == p2.keys()
    for k in p1:
        # lr 0.01: Adam's first step moves a weight by ~lr * g / (|g| + eps), so gradients near eps
        # turn float rounding (a different reduction order) into differences up to ~3e-5
        torch.testing.assert_close(p2[k], p1[k], rtol=1e-3, atol=1e-4, msg=lambda m, k=k: f"{k}: {m}")
