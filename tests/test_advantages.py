"""Advantages: GRPO / GDPO against hand-worked numbers and TRL 1.16's own code; MRPO Eq. 7."""

from __future__ import annotations

import ast
import importlib.util
import math
import random
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from medrl.advantages import (
    ADVANTAGES,
    get_advantage_fn,
    group_size,
    SHAPING,
    gdpo_advantages,
    grpo_advantages,
    mrpo_token_advantages,
    shaping_factor,
)
from medrl.types import StepVerdict

E = math.e


def close(a, b, tol=1e-5):
    a, b = (torch.as_tensor(x, dtype=torch.float64) for x in (a, b))
    return torch.allclose(a, b, atol=tol)


# ---------------------------------------------------------------- TRL's own code, run in isolation
#
# GRPOTrainer computes advantages inline in `_generate_and_score_completions` (TRL 1.16,
# trl/trainer/grpo_trainer.py, the `if self.multi_objective_aggregation == "sum_then_normalize":`
# / `elif ... == "normalize_then_sum":` block, lines ~2761-2810 in 1.16.0), so it cannot be
# called on its own. We take the two branch bodies out of the *installed* TRL source with `ast`
# (TRL is not imported: that takes ~10 s) and run them on our inputs, with `nanstd` taken the
# same way from trl/trainer/utils.py. If TRL restructures this code the lookup fails loudly.


def _trl_file(rel: str) -> Path:
    spec = importlib.util.find_spec("trl")
    assert spec is not None and spec.submodule_search_locations, "trl is not installed"
    return Path(list(spec.submodule_search_locations)[0]) / rel


@pytest.fixture(scope="module")
def trl_code():
    assert version("trl").startswith("1.16"), f"checked against TRL 1.16, found {version('trl')}"
    utils = ast.parse(_trl_file("trainer/utils.py").read_text())
    nanstd_def = next(
        n for n in utils.body if isinstance(n, ast.FunctionDef) and n.name == "nanstd"
    )
    ns = {"torch": torch}
    module = ast.Module(body=[nanstd_def], type_ignores=[])
    exec(compile(module, "trl/trainer/utils.py", "exec"), ns)

    src = _trl_file("trainer/grpo_trainer.py").read_text()
    tree = ast.parse(src)
    branches = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            for name in ("sum_then_normalize", "normalize_then_sum"):
                if test == f"self.multi_objective_aggregation == '{name}'":
                    module = ast.Module(body=node.body, type_ignores=[])
                    branches[name] = compile(module, f"trl grpo_trainer.py [{name}]", "exec")
    assert set(branches) == {"sum_then_normalize", "normalize_then_sum"}, "TRL advantage code moved"
    # right after the branches TRL zeroes the advantage of unscorable (NaN) completions:
    assert "advantages = torch.nan_to_num(advantages, nan=0.0)" in src
    return ns["nanstd"], branches


def _run_trl(trl_code, name, rewards_per_func, weights, num_generations, scale_rewards="group"):
    nanstd, branches = trl_code
    ns = {
        "torch": torch,
        "nanstd": nanstd,
        "device": "cpu",
        "num_generations": num_generations,
        "rewards_per_func": rewards_per_func,
        # TRL: unscorable_mask = torch.isnan(rewards_per_func).all(dim=1)
        "unscorable_mask": torch.isnan(rewards_per_func).all(dim=1),
        "self": SimpleNamespace(
            scale_rewards=scale_rewards,
            reward_weights=torch.as_tensor(weights, dtype=torch.float32),
            reward_funcs=[None] * rewards_per_func.shape[1],
        ),
    }
    exec(branches[name], ns)
    return torch.nan_to_num(ns["advantages"], nan=0.0)


def _random_rewards(rng: torch.Generator, n: int, r: int, nan_frac: float = 0.15) -> torch.Tensor:
    x = torch.rand(n, r, generator=rng)
    x[torch.rand(n, r, generator=rng) < nan_frac] = float("nan")
    ties = torch.rand(n, generator=rng) < 0.2  # some binary-ish rewards with equal values
    x[ties] = (x[ties] > 0.5).float()
    return x


# ---------------------------------------------------------------- GRPO


def test_grpo_hand_worked():
    # group 1 = [1, 0, 0, 1]: mean 0.5, unbiased std = sqrt((4 * 0.25) / 3) = 0.577350
    #   A = +-0.5 / (0.577350 + 1e-4) = +-0.865876;  group 2 = [2, 2, 2, 2]: A = 0
    r = [1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0]
    a = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    assert close(grpo_advantages(r, 4), [a, -a, -a, a, 0, 0, 0, 0])
    # batch scale: mean per group, std over the batch: mean 1.25, squared deviations
    #   0.0625 + 1.5625 + 1.5625 + 0.0625 + 4 * 0.5625 = 5.5 -> std = sqrt(5.5 / 7) = 0.886405
    b = 0.5 / (math.sqrt(5.5 / 7) + 1e-4)
    assert close(grpo_advantages(r, 4, scale="batch"), [b, -b, -b, b, 0, 0, 0, 0])
    # Dr. GRPO: no std
    assert close(grpo_advantages(r, 4, scale="none"), [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0])
    # CAPO Eq. 5 with delta = 0.1: 0.5 / (0.577350 + 0.1) = 0.738170
    c = 0.5 / (math.sqrt(1 / 3) + 0.1)
    assert close(grpo_advantages(r, 4, eps=0.1)[:4], [c, -c, -c, c])


def test_grpo_unscorable_rewards_excluded():
    # [1, None, 0, 1]: mean over 3 = 2/3, deviations 1/3, -2/3, 1/3
    #   -> var = (6/9) / 2 -> std = 0.577350
    s = math.sqrt(1 / 3) + 1e-4
    out = grpo_advantages([1.0, None, 0.0, 1.0], 4)
    assert close(out, [(1 / 3) / s, 0.0, (-2 / 3) / s, (1 / 3) / s])
    assert close(grpo_advantages([float("nan")] * 4, 2), [0, 0, 0, 0])


def test_grpo_group_size_one_gives_zero():
    assert close(grpo_advantages([0.3, 0.9], 1), [0.0, 0.0])


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
@pytest.mark.parametrize("group_size", [1, 2, 4, 8])
def test_grpo_equals_trl(trl_code, scale, group_size):
    rng = torch.Generator().manual_seed(group_size)
    for _ in range(5):
        x = _random_rewards(rng, 4 * group_size, 1)
        ours = grpo_advantages(x[:, 0], group_size, scale=scale)
        theirs = _run_trl(trl_code, "sum_then_normalize", x, [1.0], group_size, scale)
        assert torch.allclose(ours, theirs, atol=1e-6), (ours, theirs)


def test_grpo_validates():
    with pytest.raises(ValueError, match="multiple of group_size"):
        grpo_advantages([1.0, 2.0, 3.0], 2)
    with pytest.raises(ValueError, match="shape"):
        grpo_advantages([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="scale"):
        grpo_advantages([1.0, 2.0], 2, scale="global")
    with pytest.raises(ValueError, match="group_size"):
        grpo_advantages([1.0, 2.0], 0)
    with pytest.raises(ValueError, match="numeric"):
        grpo_advantages(["a", "b"], 2)


# ---------------------------------------------------------------- GDPO


def test_gdpo_hand_worked():
    # rewards (N=4, R=2), two groups of 2, weights (1, 0.5)
    r = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0]]
    # group std of [1, 0] (unbiased, n-1 = 1) = sqrt(0.5) = 0.707107
    z = 0.5 / (math.sqrt(0.5) + 1e-4)  # 0.706996
    # group 1: reward 0 -> (+z, -z); reward 1 -> (-z, +z); group 2: reward 0 -> (+z, -z);
    # reward 1 = [1, 1] -> 0 / (0 + 1e-4) = 0
    s = [z - 0.5 * z, -z + 0.5 * z, z, -z]  # weighted sums
    mean = sum(s) / 4  # 0
    std = math.sqrt(sum((v - mean) ** 2 for v in s) / 3)  # sqrt(2.5 z^2 / 3)
    want = [(v - mean) / (std + 1e-4) for v in s]
    assert close(gdpo_advantages(r, [1.0, 0.5], 2), want)


@pytest.mark.parametrize("group_size", [1, 2, 4, 8])
def test_gdpo_equals_trl_normalize_then_sum(trl_code, group_size):
    rng = torch.Generator().manual_seed(100 + group_size)
    for n_rewards in (1, 2, 3):
        for _ in range(4):
            x = _random_rewards(rng, 3 * group_size, n_rewards)
            x[0] = float("nan")  # one completion unscorable by every reward function
            w = (torch.rand(n_rewards, generator=rng) * 2).tolist()
            ours = gdpo_advantages(x, w, group_size)
            theirs = _run_trl(trl_code, "normalize_then_sum", x, w, group_size)
            assert torch.allclose(ours, theirs, atol=1e-6), (ours, theirs)
            assert ours[0] == 0


def test_gdpo_validates():
    with pytest.raises(ValueError, match="weights"):
        gdpo_advantages([[1.0, 2.0], [0.0, 1.0]], [1.0], 2)
    with pytest.raises(ValueError, match=r"\(N, R\)"):
        gdpo_advantages([1.0, 2.0], [1.0], 2)
    with pytest.raises(ValueError, match="multiple"):
        gdpo_advantages([[1.0], [2.0], [3.0]], [1.0], 2)


def test_every_registered_estimator_has_the_one_signature():
    # verl's shape: estimator(*, rewards, mask, index, config, **inputs); unknown inputs are ignored
    assert ADVANTAGES.names() == ["gdpo", "grpo", "mrpo"]
    rewards = torch.tensor([[1.0, 0.2], [0.0, 0.4], [0.5, 0.5], [1.0, 0.0]])
    mask, index = torch.ones(4, 3), torch.tensor([0, 0, 1, 1])
    extra = {"weights": torch.tensor([1.0, 0.5]), "reward_names": ["a", "b"], "something_else": object(),
             "advantages": torch.tensor([0.3, -0.3, 0.2, -0.2]), "step_valid": [[False]] + [None] * 3,
             "step_token_spans": [[(0, 2)]] + [None] * 3}
    for name in ADVANTAGES.names():  # a config key an estimator does not read is ignored
        out = get_advantage_fn(name)(rewards=rewards, mask=mask, index=index, config={"answer_reward": "b"}, **extra)
        assert out.shape[0] == 4, name
    total = rewards[:, 0] + 0.5 * rewards[:, 1]
    grpo = get_advantage_fn("grpo")(rewards=rewards, mask=mask, index=index, **extra)
    assert torch.equal(grpo, grpo_advantages(total, 2))
    assert torch.equal(get_advantage_fn("grpo")(rewards=rewards, mask=None, index=index, config={"scale": "none"},
                                                weights=extra["weights"]), grpo_advantages(total, 2, scale="none"))
    gdpo = get_advantage_fn("gdpo")(rewards=rewards, mask=mask, index=index, **extra)
    assert torch.equal(gdpo, gdpo_advantages(rewards, extra["weights"], 2))
    # mrpo: R_ans is the column config.answer_reward names; Eq. 7 on the given A_i
    mrpo = get_advantage_fn("mrpo")(rewards=rewards, mask=mask, index=index, config={"answer_reward": "b"}, **extra)
    want = mrpo_token_advantages(extra["advantages"], rewards[:, 1], extra["step_valid"], extra["step_token_spans"], 3)
    assert torch.equal(mrpo, want) and close(mrpo[0], [-0.3, -0.3, 0.3])  # K = 1: -1 x |A|
    # TRL computes grpo and gdpo itself: their TRL setting is named; mrpo is not TRL's
    assert get_advantage_fn("gdpo").trl_options == {"multi_objective_aggregation": "normalize_then_sum"}
    assert not hasattr(get_advantage_fn("mrpo"), "trl_options")
    with pytest.raises(KeyError, match="unknown advantage 'nope'"):
        get_advantage_fn("nope")


def test_group_ids_must_be_contiguous_groups_of_one_size():
    assert group_size([0, 0, 1, 1, 2, 2]) == 2 and group_size([7, 7, 7]) == 3
    with pytest.raises(ValueError, match="not groups of 2"):
        group_size([0, 0, 1])
    with pytest.raises(ValueError, match="row 2"):
        group_size([0, 0, 1, 0])


# ---------------------------------------------------------------- MRPO Eq. 7


def test_mrpo_hand_worked_exponential():
    # K = 3 steps, A = -0.5, R_ans = 0.3 <= tau = 0.6 (answer judged incorrect), validity F, T, F.
    # Tokens: 0 outside, step 1 = [1, 3), step 2 = [3, 5), 5 outside, step 3 = [6, 8), 8-9 outside.
    #   step 1 invalid, p = 0:   -exp(1 - 0) * |-0.5| = -e * 0.5 = -1.359141
    #   step 2 valid:            +|-0.5| = +0.5
    #   step 3 invalid, p = 1:   -exp(1 - 1) * 0.5 = -0.5
    #   outside tokens keep A = -0.5
    out = mrpo_token_advantages(
        torch.tensor([-0.5]),
        torch.tensor([0.3]),
        [[False, True, False]],
        [[(1, 3), (3, 5), (6, 8)]],
        10,
    )
    h = -E * 0.5
    assert out.shape == (1, 10)
    assert close(out[0], [-0.5, h, h, 0.5, 0.5, -0.5, -0.5, -0.5, -0.5, -0.5])


def test_mrpo_positive_advantage_still_penalises_invalid_steps():
    # A = +0.8 but the answer is wrong (R_ans = 0.2): invalid step 1 of K = 2 gets -e * 0.8,
    # valid step 2 gets +0.8
    out = mrpo_token_advantages([0.8], [0.2], [[0, 1]], [[(0, 2), (2, 4)]], 4)
    assert close(out[0], [-E * 0.8, -E * 0.8, 0.8, 0.8])
    # invalid *last* step (k = K = 2, p = (2-1)/(2-1) = 1): -exp(1 - 1) * |0.5| = -0.5, which
    # differs from the untouched A = +0.5; the valid first step gets +|A| = +0.5 (Eq. 7)
    out = mrpo_token_advantages([0.5], [0.3], [[True, False]], [[(0, 1), (1, 3)]], 3)
    assert close(out[0], [0.5, -0.5, -0.5])


@pytest.mark.parametrize(
    "shaping, f_mid",
    # K = 3, invalid middle step: p = (2 - 1) / (3 - 1) = 0.5, A = -0.5 -> -f(0.5) * 0.5
    [("exponential", math.exp(0.5)), ("linear", 0.5), ("quadratic", 0.25), ("uniform", 1.0)],
)
def test_mrpo_shaping_functions(shaping, f_mid):
    out = mrpo_token_advantages(
        [-0.5], [0.0], [[True, False, True]], [[(0, 1), (1, 2), (2, 3)]], 3, shaping=shaping
    )
    assert close(out[0], [0.5, -f_mid * 0.5, 0.5])
    assert math.isclose(shaping_factor(2, 3, shaping), f_mid, rel_tol=1e-12)
    # first step p = 0: exp(1) = e, linear 1, quadratic 1, uniform 1; last step p = 1: 1, 0, 0, 1
    assert math.isclose(shaping_factor(1, 3, shaping), E if shaping == "exponential" else 1.0)
    last = 0.0 if shaping in ("linear", "quadratic") else 1.0
    assert math.isclose(shaping_factor(3, 3, shaping), last)


def test_mrpo_single_step_follows_the_released_code():
    # K = 1 has no relative position. dmis-lab/MRPO (grpo_trainer_MRPO_Qwen2_5.py, the else branch of
    # `len(sentences) > 1`) multiplies A_i by +1 when (valid and A > 0) or (invalid and A < 0), else by -1:
    #   invalid, A = +1.2: -1 x 1.2 = -1.2 (Eq. 7 with f(0) = e would give -3.261938)
    #   invalid, A = -0.7: +1 x -0.7 = -0.7 = -1 x |A|
    #   valid,   A = -0.7: -1 x -0.7 = +0.7 = +|A|
    out = mrpo_token_advantages([1.2, -0.7, -0.7], [0.0, 0.0, 0.0], [[False], [False], [True]],
                                [[(1, 3)], [(0, 2)], [(0, 2)]], 4)
    assert close(out[0], [1.2, -1.2, -1.2, 1.2])
    assert close(out[1], [-0.7, -0.7, -0.7, -0.7]) and close(out[2], [0.7, 0.7, -0.7, -0.7])
    for shaping in SHAPING:
        assert shaping_factor(1, 1, shaping) == 1.0
    # soft halves it like any reshaped value: -0.5 x 1 x 1.2
    out = mrpo_token_advantages([1.2], [0.9], [[False]], [[(0, 1)]], 1, strategy="soft")
    assert close(out[0], [-0.6])


def _released_multiplier(valid: bool, a: float, k: int, n_steps: int, r_ans: float) -> float:
    """The released code's per-step multiplier of A_i (dmis-lab/MRPO, step-wise advantage
    reweighting), in our words: 1 when R_ans > 0.6; with several steps +/-1 for a valid step and
    -/+ exp(1 - k/(K-1)) rounded to 2 decimals for an invalid one (sign so the token value is
    negative); with one step +/-1 by the same sign rule."""
    if r_ans > 0.6:
        return 1.0
    sign = 1.0 if a > 0 else -1.0
    if valid:
        return sign
    factor = round(math.exp(1 - k / (n_steps - 1)), 2) if n_steps > 1 else 1.0
    return -sign * factor


def test_mrpo_selective_matches_the_released_code_on_random_traces():
    rnd = random.Random(7)
    for _ in range(200):
        n_steps = rnd.randint(1, 8)
        a = rnd.choice([-1, 1]) * rnd.uniform(0.05, 2.0)
        r_ans = rnd.choice([rnd.random(), 0.6, 0.61])
        valid = [rnd.random() < 0.5 for _ in range(n_steps)]
        spans = [(k, k + 1) for k in range(n_steps)]
        ours = mrpo_token_advantages([a], [r_ans], [valid], [spans], n_steps)[0].tolist()
        released = [a * _released_multiplier(v, a, k, n_steps, r_ans) for k, v in enumerate(valid)]
        # the released code rounds exp(1 - p) to 2 decimals (e -> 2.72): equal up to that rounding
        assert all(abs(x - y) <= 0.005 * abs(a) + 1e-9 for x, y in zip(ours, released)), (valid, a, r_ans)


def test_mrpo_correct_answers_and_missing_steps_unchanged():
    a = torch.tensor([0.7, -0.4, 0.1, -1.0, 0.3])
    r_ans = torch.tensor([0.61, 0.9, 0.0, 0.2, 0.1])
    valid = [[False, False], [False], [], None, [True]]
    spans = [[(0, 1), (1, 3)], [(0, 4)], [], None, [(2, 2)]]  # last: an empty token span
    out = mrpo_token_advantages(a, r_ans, valid, spans, 4)
    assert torch.equal(out, a.unsqueeze(1).expand(5, 4))
    # an unscorable answer reward (None -> NaN) is not judged incorrect: no reshaping
    out = mrpo_token_advantages([0.5], [None], [[False]], [[(0, 2)]], 2)
    assert close(out[0], [0.5, 0.5])
    out = mrpo_token_advantages(a, r_ans, valid, spans, 4)
    # rollouts 0-1: R_ans > tau (correct) -> untouched; 2: no steps; 3: no verdicts; 4: empty span
    assert torch.equal(out, a.unsqueeze(1).expand(5, 4))


def test_mrpo_tau_boundary_is_inclusive():
    # R_ans == tau counts as incorrect (Eq. 7: R_ans <= tau); K = 2, invalid first step: -e * 0.5
    out = mrpo_token_advantages([0.5], [0.6], [[False, True]], [[(0, 1), (1, 2)]], 2)
    assert close(out[0], [-E * 0.5, 0.5])


def test_mrpo_strategies_full_and_soft():
    # correct answer (R_ans = 0.9 > tau), A = 0.4, K = 2 with validity (F, T):
    #   selective: unchanged; full: step 1 -> -e * 0.4 = -1.087313, step 2 -> +0.4;
    #   soft: the reshaped values x 0.5 -> -0.543656, +0.2; the outside token keeps 0.4
    args = ([0.4], [0.9], [[False, True]], [[(0, 1), (1, 2)]], 3)
    assert close(mrpo_token_advantages(*args)[0], [0.4, 0.4, 0.4])
    assert close(mrpo_token_advantages(*args, strategy="full")[0], [-E * 0.4, 0.4, 0.4])
    assert close(mrpo_token_advantages(*args, strategy="soft")[0], [-0.5 * E * 0.4, 0.2, 0.4])


def test_mrpo_accepts_step_verdicts():
    verdicts = [StepVerdict(0, 0), StepVerdict(1, 0), StepVerdict(0, 1)]
    out = mrpo_token_advantages([-1.0], [0.0], [verdicts], [[(0, 1), (1, 2), (2, 3)]], 3)
    assert close(out[0], [-E, 1.0, 1.0])


def _reference_loop(a, r_ans, valid, spans, t_len, tau, shaping, strategy):
    """Eq. 7 + App. D.2/D.3 token by token, written as plainly as possible."""
    f = {
        "exponential": lambda p: math.exp(1 - p),
        "linear": lambda p: 1 - p,
        "quadratic": lambda p: (1 - p) ** 2,
        "uniform": lambda p: 1.0,
    }[shaping]
    out = []
    for i in range(len(a)):
        row = []
        for t in range(t_len):
            value = a[i]
            reshape = strategy != "selective" or r_ans[i] <= tau
            if valid[i] is not None and reshape:
                n_steps = len(spans[i])
                for k, (s, e) in enumerate(spans[i], start=1):
                    if s <= t < e:
                        penalty = f((k - 1) / (n_steps - 1)) if n_steps > 1 else 1.0  # K = 1: released code
                        value = abs(a[i]) if valid[i][k - 1] else -penalty * abs(a[i])
                        if strategy == "soft":
                            value *= 0.5
            row.append(value)
        out.append(row)
    return torch.tensor(out, dtype=torch.float64)


def _random_case(rnd: random.Random):
    b, t_len = rnd.randint(1, 6), rnd.randint(0, 30)
    a = [rnd.uniform(-2, 2) for _ in range(b)]
    r_ans = [rnd.choice([rnd.random(), 0.6, 1.0, 0.0]) for _ in range(b)]
    valid, spans = [], []
    for _ in range(b):
        if rnd.random() < 0.1:
            valid.append(None)
            spans.append(None)
            continue
        cuts = sorted(rnd.randint(0, t_len) for _ in range(2 * rnd.randint(0, 6)))
        sp = [(cuts[j], cuts[j + 1]) for j in range(0, len(cuts), 2)]
        spans.append(sp)
        valid.append([rnd.random() < 0.5 for _ in sp])
    return a, r_ans, valid, spans, t_len


@pytest.mark.parametrize("strategy", ["selective", "full", "soft"])
@pytest.mark.parametrize("shaping", sorted(SHAPING))
def test_mrpo_vectorised_equals_loop(shaping, strategy):
    rnd = random.Random(f"{shaping}-{strategy}")
    for _ in range(25):
        a, r_ans, valid, spans, t_len = _random_case(rnd)
        tau = rnd.choice([0.6, 0.3])
        ours = mrpo_token_advantages(
            torch.tensor(a, dtype=torch.float64), r_ans, valid, spans, t_len,
            tau=tau, shaping=shaping, strategy=strategy,
        )
        want = _reference_loop(a, r_ans, valid, spans, t_len, tau, shaping, strategy)
        assert ours.dtype == torch.float64 and ours.shape == (len(a), t_len)
        assert torch.allclose(ours, want, atol=1e-12), (a, r_ans, valid, spans)


def test_mrpo_validates():
    ok = dict(advantages=[0.1, 0.2], answer_rewards=[0.0, 0.0], num_tokens=4)
    with pytest.raises(ValueError, match="answer_rewards"):
        mrpo_token_advantages([0.1, 0.2], [0.0], [[], []], [[], []], 4)
    with pytest.raises(ValueError, match="answer_rewards"):
        mrpo_token_advantages([0.1], 0.3, [[]], [[]], 4)
    with pytest.raises(ValueError, match="one entry per rollout"):
        mrpo_token_advantages(step_valid=[[]], step_token_spans=[[], []], **ok)
    with pytest.raises(ValueError, match="rollout 1: 1 step verdicts but 2"):
        mrpo_token_advantages(
            step_valid=[[], [True]], step_token_spans=[[], [(0, 1), (1, 2)]], **ok
        )
    with pytest.raises(ValueError, match="outside"):
        mrpo_token_advantages(step_valid=[[True], []], step_token_spans=[[(2, 5)], []], **ok)
    with pytest.raises(ValueError, match="overlaps"):
        mrpo_token_advantages(
            step_valid=[[True, True], []], step_token_spans=[[(0, 3), (2, 4)], []], **ok
        )
    with pytest.raises(ValueError, match="must be a bool"):
        mrpo_token_advantages(step_valid=[[0.5], []], step_token_spans=[[(0, 1)], []], **ok)
    with pytest.raises(ValueError, match="shaping"):
        mrpo_token_advantages(step_valid=[[], []], step_token_spans=[[], []], shaping="cubic", **ok)
    with pytest.raises(ValueError, match="strategy"):
        mrpo_token_advantages(step_valid=[[], []], step_token_spans=[[], []], strategy="half", **ok)
    with pytest.raises(ValueError, match="num_tokens"):
        mrpo_token_advantages([0.1], [0.0], [[]], [[]], -1)
    with pytest.raises(ValueError, match=r"\(B,\)"):
        mrpo_token_advantages([[0.1]], [0.0], [[]], [[]], 2)
