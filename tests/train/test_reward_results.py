"""Rewards talk to the trainer through their typed result (:class:`medrl.types.RewardResult`:
values, unscorable rows, step outputs) and their signature (the columns they name), never through
attributes left on the function: the trainer reads none, and a plain TRL callable still works."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

from medrl.types import UNSCORABLE, RewardResult

TRAINER = Path(__file__).resolve().parents[2] / "medrl" / "train" / "trainer.py"
#: what rewards used to leave on themselves for the trainer to read or set
FUNCTION_ATTRIBUTES = {"last_unscorable", "batch_outputs", "outputs", "uses_correctness",
                       "uses_corrupted_correctness", "frozen", "last_steps", "last_step_verdicts"}


def test_the_trainer_reads_no_reward_function_attribute():
    tree = ast.parse(TRAINER.read_text())
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr", "setattr")
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in FUNCTION_ATTRIBUTES):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Attribute) and node.attr in FUNCTION_ATTRIBUTES - {"outputs"}):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Attribute) and node.attr == "outputs"
              and ast.unparse(node.value) not in ("result", "r")):  # a RewardResult's outputs
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    assert not found, found


def test_a_result_is_the_list_trl_takes():
    r = RewardResult([1.0, UNSCORABLE, None, 0.0], outputs={"steps": [[], [], [], []]})
    assert r == [1.0, None, None, 0.0] and list(r) == [1.0, None, None, 0.0]  # TRL's values
    assert r.unscorable == (1,) and r.outputs == {"steps": [[], [], [], []]}
    again = pickle.loads(pickle.dumps(r))  # reward workers in other processes
    assert again == r and again.unscorable == (1,) and again.outputs == r.outputs
    assert RewardResult.of(r) is r and RewardResult.of([0.5]).unscorable == ()  # a plain list: no extras
    assert RewardResult([None], unscorable=[0]).unscorable == (0,)
