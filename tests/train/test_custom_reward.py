"""Custom rewards (``./file.py:fn``, ``module:fn``): the wrapper that names them after their spec
carries what the trainer reads from a reward besides its values - above all the rows the
reward could not score (``last_unscorable``), which are excluded, never paid 0 or 1."""

from __future__ import annotations

import asyncio
import types

import torch

from medrl.train.custom_reward import custom_reward
from medrl.train.trainer import MedGRPOTrainer

MODULE = '''
def judged(prompts, completions, **kw):
    # rows whose completion says "?" cannot be scored: None there, and marked
    judged.last_unscorable = [i for i, c in enumerate(completions) if "?" in c]
    return [None if "?" in c else 1.0 for c in completions]

async def judged_async(prompts, completions, **kw):
    judged_async.last_unscorable = [i for i, c in enumerate(completions) if "?" in c]
    return [None if "?" in c else 1.0 for c in completions]

class Stateful:
    checkpoint_state = True
    outputs = ("step_verdicts",)

    def __init__(self):
        self.calls = 0
        self.last_unscorable = None

    def __call__(self, prompts, completions, **kw):
        self.calls += 1
        self.last_unscorable = [0]
        return [0.5 for _ in completions]

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]

    def batch_outputs(self):
        return {"step_verdicts": [[]]}

stateful = Stateful()
'''


def _unscorable_rows(funcs, n):
    """What the trainer makes of the rewards' marks (its own method, on a stand-in trainer)."""
    fake = types.SimpleNamespace(reward_funcs=funcs, reward_func_names=[f.__name__ for f in funcs])
    return MedGRPOTrainer._unscorable_rows(fake, n, torch.device("cpu")).tolist()


def test_a_custom_reward_marks_rows_unscorable_sync_and_async(tmp_path):
    (tmp_path / "mine.py").write_text(MODULE)
    sync = custom_reward(f"{tmp_path}/mine.py:judged")
    asy = custom_reward(f"{tmp_path}/mine.py:judged_async")
    assert sync.__name__ == f"{tmp_path}/mine.py:judged"
    assert sync(prompts=["q"] * 3, completions=["a", "?", "b"]) == [1.0, None, 1.0]
    assert sync.last_unscorable == [1]
    assert asyncio.run(asy(prompts=["q"] * 3, completions=["?", "a", "?"])) == [None, 1.0, None]
    assert asy.last_unscorable == [0, 2]
    assert _unscorable_rows([sync, asy], 3) == [1, 1, 1]
    # the trainer clears the marks before each batch (fn.last_unscorable = None); a batch the
    # function scores fully leaves none behind, not the previous batch's rows
    sync.last_unscorable = None
    assert sync(prompts=["q"] * 2, completions=["a", "b"]) == [1.0, 1.0]
    assert not sync.last_unscorable and _unscorable_rows([sync], 2) == [0, 0]


def test_an_object_reward_keeps_its_state_outputs_and_marks(tmp_path, monkeypatch):
    from medrl.train.callbacks import stateful_rewards

    (tmp_path / "pkg_rewards_mine.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    fn = custom_reward("pkg_rewards_mine:stateful")  # an object: its class attributes and methods count
    assert fn.checkpoint_state is True and fn.outputs == ("step_verdicts",)
    assert fn(prompts=["q"], completions=["a"]) == [0.5] and fn.last_unscorable == [0]
    assert fn.state_dict() == {"calls": 1} and fn.batch_outputs() == {"step_verdicts": [[]]}
    assert stateful_rewards([fn]) == {"pkg_rewards_mine:stateful": fn}
