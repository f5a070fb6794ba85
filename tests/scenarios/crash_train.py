"""Run ``medrl train`` with a judged test reward and, optionally, a real crash at one phase of one
checkpoint save (the tests of the checkpoint commit).

    python tests/scenarios/crash_train.py [--crash PHASE@STEP] -- <medrl train arguments>

The reward ``judged_consistency`` asks the run's judge (``--judge openai:...`` on a loopback
server) one consistency question per rollout, so the run pays real judge tokens. ``--crash``
makes the process write part of one file of the save of checkpoint ``STEP`` and then kill itself
with SIGKILL (no Python clean-up runs, as with ``kill -9``):

- ``weights``: half of ``model.safetensors``;
- ``optimizer``: half of ``optimizer.pt``;
- ``trainer_state``: half of ``trainer_state.json``;
- ``ledger``: half of the ledger's temporary file (the ledger itself never appears);
- ``rotation``: the save is committed; while deleting an old checkpoint, after its weights are gone.

Used in-process too: :func:`register_reward` and :func:`install_crash` with ``kill=False`` raise
:class:`Crashed` instead of killing.
"""

from __future__ import annotations

import os
import signal
import sys

PHASES = ("weights", "optimizer", "trainer_state", "ledger", "rotation")


class Crashed(BaseException):
    """Stands in for the kill in an in-process test (a BaseException: nothing catches it)."""


def register_reward(name: str = "judged_consistency", every: int = 1) -> None:
    """Register the reward factory ``name``: it takes the run's judge and asks it one consistency
    question for every ``every``-th rollout (the others carry nothing to judge: no request, a
    score of 0). A judged rollout scores its verdict plus a tenth of its distinct characters (so
    the rollouts of a group differ and the weights move); an unscored verdict is UNSCORABLE."""
    from medrl.rewards import REWARDS

    if name in REWARDS:
        return

    def factory(judge):
        import asyncio

        from medrl.judges.base import run_sync
        from medrl.types import UNSCORABLE, record_unscorable

        def reward(prompts, completions, question=None, answer=None, **kwargs):
            texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]

            async def ask(i):
                return await judge.consistency(question[i], texts[i], str(answer[i])) if i % every == 0 else None

            async def ask_all():
                return await asyncio.gather(*(ask(i) for i in range(len(texts))))

            out = [0.0 if v is None else UNSCORABLE if not v.scored else float(bool(v.value)) + len(set(t)) / 10.0
                   for v, t in zip(run_sync(ask_all()), texts)]
            return record_unscorable(reward, out)

        reward.__name__ = name
        return reward

    REWARDS.register(name)(factory)


def _die(kill: bool):
    if kill:
        os.kill(os.getpid(), signal.SIGKILL)
    raise Crashed


def _cut(path, kill: bool):
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(size // 2)
    _die(kill)


def install_crash(phase: str, step: int, kill: bool = True, patch=setattr) -> None:
    """Make the save of ``checkpoint-<step>`` fail at ``phase`` (see the module docstring);
    ``patch(obj, name, value)`` sets each hook (pytest's ``monkeypatch.setattr`` undoes them)."""
    import shutil
    from pathlib import Path

    import torch
    import transformers.modeling_utils as mu
    import transformers.trainer_callback as tc

    import medrl.train.checkpoints as ck

    folder = f"checkpoint-{step}"
    if phase not in PHASES:
        raise SystemExit(f"unknown phase {phase!r}; one of {PHASES}")
    if phase == "weights":
        orig = mu.safe_save_file

        def save_file(tensors, filename, *a, **k):
            orig(tensors, filename, *a, **k)
            if Path(filename).parent.name == folder:
                _cut(filename, kill)

        patch(mu, "safe_save_file", save_file)
    elif phase == "optimizer":
        orig_save = torch.save

        def save(obj, f, *a, **k):
            orig_save(obj, f, *a, **k)
            if isinstance(f, (str, os.PathLike)) and Path(f).name == "optimizer.pt" and Path(f).parent.name == folder:
                _cut(f, kill)

        patch(torch, "save", save)
    elif phase == "trainer_state":
        orig_json = tc.TrainerState.save_to_json

        def save_to_json(self, json_path):
            orig_json(self, json_path)
            if Path(json_path).parent.name == folder:
                _cut(json_path, kill)

        patch(tc.TrainerState, "save_to_json", save_to_json)
    elif phase == "ledger":
        orig_write = ck.write_json_atomic

        def write_json_atomic(path, data):
            path = Path(path)
            if path.name == ck.LEDGER_FILE and path.parent.name == folder:
                import json

                text = json.dumps(data)
                path.with_name(path.name + ".tmp").write_text(text[: len(text) // 2])
                _die(kill)
            return orig_write(path, data)

        patch(ck, "write_json_atomic", write_json_atomic)
    elif phase == "rotation":
        orig_rmtree = shutil.rmtree
        saved = {"done": False}

        def rmtree(path, *a, **k):
            p = Path(path)
            if p.name.startswith("checkpoint-") and not saved["done"] and (p.parent / folder / ck.LEDGER_FILE).exists():
                saved["done"] = True
                (p / "model.safetensors").unlink()
                _die(kill)
            return orig_rmtree(path, *a, **k)

        patch(shutil, "rmtree", rmtree)


def main(argv: list[str]) -> int:
    crash = None
    if argv and argv[0] == "--crash":
        crash, argv = argv[1], argv[2:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    register_reward()
    if crash:
        phase, step = crash.split("@")
        install_crash(phase, int(step))
    from medrl.cli import main as medrl_main

    return medrl_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
