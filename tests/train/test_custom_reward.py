"""Custom rewards (``./file.py:fn``, ``module:fn``): the wrapper that names them after their spec
returns what the function returns - its typed result with the rows it could not score, which
are excluded, never paid 0 or 1 - keeps its signature (the columns it names) and carries its
checkpointed state."""

from __future__ import annotations

import asyncio

from medrl.train.custom_reward import custom_reward
from medrl.train.reward_checks import RewardChecks

MODULE = '''
from medrl.types import UNSCORABLE, RewardResult


def judged(prompts, completions, **kw):
    # rows whose completion says "?" cannot be scored: marked in the result
    return RewardResult([UNSCORABLE if "?" in c else 1.0 for c in completions])

async def judged_async(prompts, completions, correct=None, **kw):
    # names the trainer's correct column: the trainer fills it for this reward
    return RewardResult([None if "?" in c else 1.0 for c in completions],
                        unscorable=[i for i, c in enumerate(completions) if "?" in c])

def plain(prompts, completions, **kw):
    return [UNSCORABLE if "?" in c else 0.5 for c in completions]  # TRL's plain list, UNSCORABLE understood

class Stateful:
    checkpoint_state = True

    def __init__(self):
        self.calls = 0

    def __call__(self, prompts, completions, **kw):
        self.calls += 1
        return RewardResult([0.5 for _ in completions], unscorable=[0], outputs={"step_verdicts": [[]]})

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]

stateful = Stateful()
'''


def _checked(fn, n, completions):
    """What the trainer reads of one call: the reward's typed result, as its checks keep it."""
    checks = RewardChecks()
    wrapped = checks.wrap(fn, fn.__name__, n, step=1)
    out = wrapped(prompts=["q"] * n, completions=completions)
    values = asyncio.run(out) if asyncio.iscoroutine(out) else out
    return values, checks.results[fn.__name__], sorted(checks.rows)


def test_a_custom_reward_marks_rows_unscorable_sync_and_async(tmp_path):
    from medrl.rewards.correctness import uses_correctness

    (tmp_path / "mine.py").write_text(MODULE)
    sync = custom_reward(f"{tmp_path}/mine.py:judged")
    asy = custom_reward(f"{tmp_path}/mine.py:judged_async")
    plain = custom_reward(f"{tmp_path}/mine.py:plain")
    assert sync.__name__ == f"{tmp_path}/mine.py:judged"
    assert sync(prompts=["q"] * 3, completions=["a", "?", "b"]) == [1.0, None, 1.0]
    assert sync(prompts=["q"] * 3, completions=["a", "?", "b"]).unscorable == (1,)
    values, result, rows = _checked(sync, 3, ["a", "?", "b"])
    assert values == [1.0, None, 1.0] and result.unscorable == (1,) and rows == [1]
    values, result, rows = _checked(asy, 3, ["?", "a", "?"])
    assert values == [None, 1.0, None] and result.unscorable == (0, 2) and rows == [0, 2]
    values, result, rows = _checked(plain, 2, ["?", "a"])
    assert values == [None, 0.5] and result.unscorable == (0,) and rows == [0]
    # each call's result stands alone: a batch scored fully leaves no rows behind
    assert _checked(sync, 2, ["a", "b"])[1].unscorable == ()
    # the wrapper keeps the function's signature: the columns it names
    assert uses_correctness(asy) and not uses_correctness(sync)


def test_an_object_reward_keeps_its_state_outputs_and_marks(tmp_path, monkeypatch):
    from medrl.train.callbacks import stateful_rewards

    (tmp_path / "pkg_rewards_mine.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    fn = custom_reward("pkg_rewards_mine:stateful")  # an object: its class attributes and methods count
    assert fn.checkpoint_state is True
    values, result, rows = _checked(fn, 1, ["a"])
    assert values == [0.5] and result.unscorable == (0,) and result.outputs == {"step_verdicts": [[]]}
    assert fn.state_dict() == {"calls": 1}
    assert stateful_rewards([fn]) == {"pkg_rewards_mine:stateful": fn}
