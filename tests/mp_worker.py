"""Worker of ``tests/scenarios/test_multiprocess_backends.py``, run under ``accelerate launch`` on CPU
processes: ``python tests/mp_worker.py SPEC.json``.

One optimizer step of a medrl recipe on the tiny model, on fixed rollouts (no sampling: every
prompt's group is a right-answer and a wrong-answer teacher completion, so the batch is the same
whatever the number of processes), through ``trainer.train()`` so that FSDP / DeepSpeed wrap the
model and optimizer as in a real run. With ``"sample": true`` in the spec the policy samples
each group's first rollout instead (generation through the wrapped model; not comparable).
``"stop_after": N`` stops the run after step N with a checkpoint; ``"resume_from": DIR`` resumes
one (``trainer.train(resume_from_checkpoint=DIR)``).

Each process writes ``step_<rank>.pt``: the engine that actually ran (``distributed_type``, ZeRO
stage, FSDP version), its advantages per question, the logged loss, the global step and the time
of ``train()``; process 0 also writes ``params_before.pt`` and ``params.pt``, the full
parameters before and after the step (gathered from FSDP / ZeRO-3 shards).

DeepSpeed on CPU: run with ``DS_ACCELERATOR=cpu``, without ``ACCELERATE_USE_CPU`` (which turns
DeepSpeed off) and with ``grpo.ddp_backend='gloo'`` in the spec's overrides (without a backend
accelerate gives every process ``num_processes=1``, ``process_index=0``).

FSDP on CPU: accelerate (1.15) sets up gloo CPU processes only as ``MULTI_CPU`` and switches to
FSDP only inside its GPU/NPU/XPU branch, so a launch with ``distributed_type: FSDP`` and
``ACCELERATE_USE_CPU=true`` silently runs plain data parallel. :func:`promote_multi_cpu_to_fsdp`
makes the accelerator state FSDP when an FSDP plugin was configured; torch's ``fully_shard``
itself runs on CPU tensors over gloo.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

MAX_LEN = 56


def promote_multi_cpu_to_fsdp() -> None:
    """Let accelerate run FSDP on gloo CPU processes: after ``AcceleratorState`` set itself up as
    ``MULTI_CPU`` with an FSDP plugin configured, make it ``FSDP`` with that plugin (what its GPU
    branch does). Every later ``AcceleratorState()`` copies ``PartialState``'s ``MULTI_CPU`` back
    over the shared state, so the promotion is redone on each construction. No effect on any
    other state."""
    from accelerate.state import AcceleratorState
    from accelerate.utils import DistributedType

    orig = AcceleratorState.__init__

    def init(self, *args, fsdp_plugin=None, **kwargs):
        orig(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        plugin = fsdp_plugin if fsdp_plugin is not None else self.__dict__.get("fsdp_plugin")
        if plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = plugin

    AcceleratorState.__init__ = init


def run(spec: dict) -> None:
    import torch

    torch.set_num_threads(1)
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        promote_multi_cpu_to_fsdp()

    from synthetic import teacher_text, wrong_text

    from medrl.data import VQARecord
    from medrl.judges import build_judge
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe
    from medrl.train.teacher import install_teacher

    records = [VQARecord(**r) for r in spec["records"]]
    out = Path(spec["out"])
    overrides = [f"grpo.max_completion_length={MAX_LEN}", "grpo.report_to='none'", "grpo.num_generations=2",
                 f"grpo.per_device_train_batch_size={spec['per_device']}", "grpo.gradient_accumulation_steps=1",
                 "grpo.max_steps=1", "grpo.save_strategy='no'", "grpo.learning_rate=0.01", "grpo.logging_steps=1",
                 *spec.get("overrides", [])]
    recipe = load_recipe(spec["recipe"], profile="cpu", overrides=overrides)
    tr = train_rl(recipe, spec["model"], records, out, judge=build_judge("reference"), train=False).trainer
    rank, world = tr.accelerator.process_index, tr.accelerator.num_processes

    calls = {"n": 0}

    def text(rec):  # rollouts alternate right, wrong: each group of 2 is (right, wrong)
        calls["n"] += 1
        return teacher_text(rec) if calls["n"] % 2 == 1 else wrong_text(rec)

    if spec.get("sample"):  # the policy samples each group's first rollout (through the engine)
        install_teacher(tr, records, teacher_text, every=2)
    else:
        install_teacher(tr, records, text, replace_all=True)
    seen = []
    orig = tr._generate_and_score_completions

    def capture(inputs):
        res = orig(inputs)
        seen.append({"questions": [x["question"] for x in inputs], "advantages": res["advantages"].detach().cpu(),
                     "completion_mask": res["completion_mask"].cpu()})
        return res

    tr._generate_and_score_completions = capture
    if rank == 0:  # not wrapped yet: the full parameters before the step
        torch.save({k: v.detach().float().cpu().clone() for k, v in tr.model.state_dict().items()},
                   out / "params_before.pt")
    if spec.get("stop_after"):  # an interrupted run: stop after this step (its checkpoint is saved)
        from transformers import TrainerCallback

        class Stop(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if state.global_step >= spec["stop_after"]:
                    control.should_save = control.should_training_stop = True

        tr.add_callback(Stop())
    start = time.perf_counter()
    tr.train(resume_from_checkpoint=spec.get("resume_from"))
    seconds = time.perf_counter() - start
    # the wrapped model (DeepSpeed's engine under ZeRO): gathers FSDP / ZeRO-3 shards (a collective)
    state = tr.accelerator.get_state_dict(tr.model_wrapped)
    ds = getattr(tr.accelerator.state, "deepspeed_plugin", None)
    fsdp = getattr(tr.accelerator.state, "fsdp_plugin", None)
    torch.save({"world": world, "rank": rank, "distributed_type": str(tr.accelerator.distributed_type),
                "zero_stage": ds.zero_stage if ds is not None else None,
                "fsdp_version": fsdp.fsdp_version if fsdp is not None else None,
                "seen": seen, "loss": [h["loss"] for h in tr.state.log_history if "loss" in h],
                "global_step": tr.state.global_step,
                "train_seconds": seconds}, out / f"step_{rank}.pt")
    if rank == 0:
        torch.save({k: v.detach().float().cpu() for k, v in state.items()}, out / "params.pt")


if __name__ == "__main__":
    run(json.loads(Path(sys.argv[1]).read_text()))
