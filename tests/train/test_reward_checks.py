"""A broken reward stops the run with one line naming it, the step and the value; a non-finite
value makes its rollout unscorable, and a reward that keeps giving them stops the run.

The check on its own, both ways, with generated outputs: every well-formed output (numbers,
None, UNSCORABLE) passes with its values kept; every output made wrong (text, a nested list, a
single number, one value too few or too many) is refused by name; every non-finite value (NaN,
inf, a magnitude whose square overflows float32) is an unscorable row. Then real training runs
with real broken rewards (``medrl train --reward file.py:fn``)."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medrl.train.reward_checks import MAX_ABS, PERSIST, RewardChecks, RewardError, check_output
from medrl.types import UNSCORABLE

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
good_value = st.one_of(finite, st.integers(-1000, 1000), st.none(), st.just(UNSCORABLE))
bad_number = st.one_of(st.just(math.nan), st.just(math.inf), st.just(-math.inf), st.just(1e308), st.just(-1e308),
                       st.floats(min_value=MAX_ABS, max_value=1e300), st.just(10 ** 400))
not_a_value = st.one_of(st.text(max_size=5), st.lists(finite, min_size=1, max_size=3), st.just({"r": 1.0}),
                        st.just(True), st.just(b"1"))


@settings(max_examples=60, deadline=None)
@given(st.lists(good_value, min_size=1, max_size=12))
def test_well_formed_outputs_pass_with_their_values(values):
    out, nonfinite, unscorable, _ = check_output("r", values, len(values), 3)
    assert nonfinite == [] and unscorable == [i for i, v in enumerate(values) if v is UNSCORABLE]
    assert out == [None if v is None or v is UNSCORABLE else float(v) for v in values]


@settings(max_examples=60, deadline=None)
@given(st.lists(good_value, min_size=1, max_size=12), st.data())
def test_a_value_that_is_not_a_number_is_refused_by_name(values, data):
    i = data.draw(st.integers(0, len(values) - 1))
    bad = data.draw(not_a_value)
    broken = [*values[:i], bad, *values[i + 1:]]
    with pytest.raises(RewardError, match=rf"reward 'my_reward' at step 7 returned .* for rollout {i};"):
        check_output("my_reward", broken, len(values), 7)


@settings(max_examples=40, deadline=None)
@given(st.lists(good_value, min_size=1, max_size=12), st.integers(-3, 3).filter(lambda d: d != 0))
def test_the_wrong_number_of_values_is_refused(values, delta):
    n = len(values) + delta
    if n < 0:
        return
    with pytest.raises(RewardError, match=rf"returned {len(values)} values for {n} rollouts"):
        check_output("r", values, n, 1)


@pytest.mark.parametrize("output", [0.5, "0.5", None, {"a": 1}, iter([1.0])])
def test_a_scalar_text_or_mapping_is_refused(output):
    with pytest.raises(RewardError, match="reward 'r' at step 2 returned .*not a list of one value per rollout"):
        check_output("r", output, 4, 2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(finite, st.none()), min_size=1, max_size=12), st.data())
def test_non_finite_values_are_unscorable_rows(values, data):
    rows = sorted(data.draw(st.sets(st.integers(0, len(values) - 1), min_size=1)))
    broken = list(values)
    for i in rows:
        broken[i] = data.draw(bad_number)
    out, nonfinite, _, first = check_output("r", broken, len(broken), 1)
    assert nonfinite == rows and first is broken[rows[0]]
    assert all(out[i] is None for i in rows)
    assert all(out[i] == (None if values[i] is None else float(values[i])) for i in range(len(values)) if i not in rows)


def test_array_and_tensor_outputs_are_taken_as_their_values():
    import numpy as np
    import torch

    out, *_ = check_output("r", np.array([0.5, 1.0]), 2, 1)
    assert out == [0.5, 1.0]
    out, *_ = check_output("r", [torch.tensor(0.25), np.float32(2.0)], 2, 1)
    assert out == [0.25, 2.0]
    with pytest.raises(RewardError, match="shape"):
        check_output("r", np.zeros((2, 2)), 2, 1)


def test_mostly_non_finite_batches_in_a_row_stop_the_run():
    checks = RewardChecks()
    for step in range(1, PERSIST):
        checks._record("r", [math.inf, math.inf, 1.0], 3, step)
    checks._record("r", [math.nan, 1.0, 1.0], 3, PERSIST)  # a minority: the streak ends
    for step in range(PERSIST + 1, 2 * PERSIST):
        checks._record("r", [math.inf, -math.inf, 1.0], 3, step)
    with pytest.raises(RewardError, match=rf"reward 'r' returned non-finite values \(inf\) .* at step {2 * PERSIST}"):
        checks._record("r", [math.inf, math.inf, math.inf], 3, 2 * PERSIST)


def test_a_raising_reward_is_named_sync_and_async():
    checks = RewardChecks()

    def boom(prompts, completions, **kw):
        raise ZeroDivisionError("division by zero")

    async def aboom(prompts, completions, **kw):
        raise KeyError("answer")

    with pytest.raises(RewardError, match="reward 'boom' raised ZeroDivisionError at step 5: division by zero"):
        checks.wrap(boom, "boom", 2, 5)(prompts=[], completions=[])
    with pytest.raises(RewardError, match="reward 'aboom' raised KeyError at step 5"):
        asyncio.run(checks.wrap(aboom, "aboom", 2, 5)(prompts=[], completions=[]))


def test_a_refused_judge_key_keeps_its_own_exit_code():
    from medrl.judges.base import JudgeAuthError

    def judged(prompts, completions, **kw):
        raise JudgeAuthError("HTTP 401")

    with pytest.raises(JudgeAuthError):
        RewardChecks().wrap(judged, "judged", 2, 1)(prompts=[], completions=[])


# ------------------------------------------------------------------ real runs with real broken rewards

BROKEN = '''
import math

def raises(prompts, completions, **kwargs):
    return [1.0 / 0 for _ in completions]

def text(prompts, completions, **kwargs):
    return ["0.5" for _ in completions]

def scalar(prompts, completions, **kwargs):
    return 0.5

def one_short(prompts, completions, **kwargs):
    return [0.5] * (len(completions) - 1)

def always_inf(prompts, completions, **kwargs):
    return [math.inf for _ in completions]

def huge(prompts, completions, **kwargs):
    return [1e308 * (i % 2 or -1) for i, _ in enumerate(completions)]

def nan_on_first(prompts, completions, **kwargs):
    texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]
    return [math.nan if i == 0 else len(set(t)) / 10.0 for i, t in enumerate(texts)]
'''


def _train(tmp_path, data_dir, fn: str, steps: int = 4) -> int:
    from medrl.cli import main

    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    return main(["train", "--recipe", "grpo", "--model", "tiny", "--data", "vqa_rad", "--data-dir", str(data_dir),
                 "--profile", "cpu", "--limit", "4", "--max-steps", str(steps), "--reward", f"{path}:{fn}",
                 "--out", str(tmp_path / "run")])


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("fn, said", [
    ("raises", "raised ZeroDivisionError at step 1: float division by zero"),
    pytest.param("text", "returned str '0.5' for rollout 0", marks=pytest.mark.slow),
    pytest.param("scalar", "returned float 0.5, not a list of one value per rollout", marks=pytest.mark.slow),
    pytest.param("one_short", "returned 1 values for 2 rollouts", marks=pytest.mark.slow),
])
def test_a_broken_reward_stops_the_run_with_one_line(tmp_path, data_dir, capsys, fn, said):
    from medrl.common.exit_codes import Exit

    assert _train(tmp_path, data_dir, fn) == Exit.REWARD == 11
    err = capsys.readouterr().err
    # the line may follow a progress bar's carriage return on the terminal
    line = next(x[x.index("medrl train: reward"):] for x in err.splitlines() if "medrl train: reward" in x)
    assert f"reward '{tmp_path / 'broken.py'}:{fn}'" in line and said in line
    assert "Traceback" not in err


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("fn, value", [("always_inf", "inf"), pytest.param("huge", "-1e+308", marks=pytest.mark.slow)])
def test_a_reward_that_keeps_returning_non_finite_values_stops_the_run(tmp_path, data_dir, capsys, fn, value):
    """Every rollout non-finite: never a silent run with a zero gradient - each step warns, the
    rows are unscorable (excluded), and after PERSIST steps the run stops naming the reward."""
    from medrl.common.exit_codes import Exit

    assert _train(tmp_path, data_dir, fn, steps=PERSIST + 2) == Exit.REWARD
    err = capsys.readouterr().err
    assert f"returned non-finite values ({value})" in err and f"at step {PERSIST}" in err
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["nonfinite_frac"] for r in rows] == [1.0] * (PERSIST - 1)
    assert not (tmp_path / "run" / "final").exists()


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_an_occasional_nan_is_an_unscorable_row_and_the_run_trains_on(tmp_path, data_dir):
    assert _train(tmp_path, data_dir, "nan_on_first") == 0
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "grad_norm" in r]
    assert len(rows) == 4 and all(r["nonfinite_frac"] == 0.5 and r["unscorable_frac"] == 0.5 for r in rows)
