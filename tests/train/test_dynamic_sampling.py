"""DAPO dynamic sampling (medrl.train.dynamic_sampling; DAPO Sec. 3.2): pure decisions worked by
hand, batch rows split and merged, and a tiny Qwen2.5-VL trainer whose teacher rollouts make two
of four prompts all-right / all-wrong: no all-equal group is left in the batch, and one process
and two processes (slow) build the same batch."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import torch

from medrl.train.dynamic_sampling import (DynamicSamplingConfig, extra_prompt_indices, flat_groups, merge_rows,
                                          select_groups, split_rows)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

NAN = float("nan")
QUESTIONS = ["Which organ shows the abnormality?", "What imaging modality was used?",
             "Where is the mass located?", "Which bone is fractured?"]
ANSWERS = ["liver", "CT", "kidney", "femur"]
#: per record: the answers of its G=2 rollouts (r0 all right, r2 all wrong: all-equal groups)
SCRIPT = {"liver": ("liver", "liver"), "CT": ("CT", "banana"), "kidney": ("banana", "banana"),
          "femur": ("banana", "femur")}


def test_flat_groups_by_hand():
    # G = 2; weights (1, 0.5): totals 1.5 / 1.5 (flat), 1 / 0.5, NaN-row + 1 (one scored: flat)
    m = [[1, 1], [1, 1], [1, 0], [0, 1], [NAN, NAN], [1, 0]]
    assert flat_groups(m, [1.0, 0.5], 2) == [True, False, True]
    # sum_then_normalize: equal totals from different columns are flat; GDPO looks per column
    m = [[1, 0], [0, 1]]
    assert flat_groups(m, [1.0, 1.0], 2) == [True]
    assert flat_groups(m, [1.0, 1.0], 2, "normalize_then_sum") == [False]
    # a reward that did not score one row (NaN) is left out of that column only
    assert flat_groups([[1, NAN], [0, 1]], [1, 1], 2, "normalize_then_sum") == [False]


def test_select_groups_by_hand():
    flags = [[True, False, True, False], [False, True, True, True], [True, False, False, False]]
    picks, short = select_groups(flags, 4)
    assert picks == [(0, 1), (0, 3), (1, 0), (2, 1)] and short == 0
    picks, short = select_groups([[True, False], [True, True]], 2)
    assert picks == [(0, 0), (0, 1)] and short == 1  # topped up with the first all-equal group


def test_extra_prompts_are_a_fixed_stream():
    a = extra_prompt_indices(5, seed=3, start=0, count=12)
    assert sorted(a[:5]) == list(range(5)) and sorted(a[5:10]) == list(range(5))  # whole passes
    assert extra_prompt_indices(5, 3, 4, 6) == a[4:10]  # any split of the stream gives the same prompts


def test_config():
    assert not DynamicSamplingConfig.from_value(False).enabled
    assert DynamicSamplingConfig.from_value(True).max_rounds == 4
    assert DynamicSamplingConfig.from_value({"max_rounds": 2}) == DynamicSamplingConfig(True, 2)
    with pytest.raises(ValueError, match="did you mean 'max_rounds'"):
        DynamicSamplingConfig.from_value({"max_round": 2})
    with pytest.raises(ValueError, match="max_rounds"):
        DynamicSamplingConfig.from_value({"max_rounds": -1})


def test_rows_split_and_merge_with_padding():
    a = {"prompt_ids": torch.tensor([[0, 5, 6], [7, 8, 9]]), "prompt_mask": torch.tensor([[0, 1, 1], [1, 1, 1]]),
         "completion_ids": torch.tensor([[1, 2], [3, 4]]), "completion_mask": torch.ones(2, 2),
         "advantages": torch.tensor([0.5, -0.5]), "num_items_in_batch": torch.tensor(4.0)}
    b = {"prompt_ids": torch.tensor([[4, 4]]), "prompt_mask": torch.tensor([[1, 1]]),
         "completion_ids": torch.tensor([[6, 6, 6]]), "completion_mask": torch.ones(1, 3),
         "advantages": torch.tensor([1.0]), "num_items_in_batch": torch.tensor(3.0)}
    ra, la = split_rows(a, 2)
    rb, lb = split_rows(b, 1)
    m = merge_rows([ra[1], rb[0]], la | lb, pad_token_id=0)
    assert m["prompt_ids"].tolist() == [[7, 8, 9], [0, 4, 4]]  # prompts padded on the left
    assert m["prompt_mask"].tolist() == [[1, 1, 1], [0, 1, 1]]
    assert m["completion_ids"].tolist() == [[3, 4, 0], [6, 6, 6]]  # completions on the right
    assert m["completion_mask"].tolist() == [[1, 1, 0], [1, 1, 1]]
    assert m["advantages"].tolist() == [-0.5, 1.0]


# ----------------------------------------------------------------------------- trainer


def _text(answer):
    return f"<think>The study shows a focal finding.</think><answer>{answer}</answer>"


def exact_reward(completions, answer, **kw):
    from medrl.answers.completion import completion_text, parse_response

    return [float((parse_response(completion_text(c)).answer or "").casefold() == ref.casefold())
            for c, ref in zip(completions, answer)]


def build(records, tiny, out, per_device, max_steps=1, dynamic=True):
    """A MedGRPOTrainer with G=2 whose rollouts follow SCRIPT (install_teacher)."""
    from trl import GRPOConfig

    from medrl.data import to_hf_dataset
    from medrl.models import load_policy
    from medrl.train.teacher import install_teacher
    from medrl.train.trainer import MedGRPOTrainer

    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=per_device, num_generations=2,
                      max_completion_length=32, max_steps=max_steps, learning_rate=1e-6, beta=0.0, logging_steps=1,
                      save_strategy="no", report_to="none", use_cpu=True, seed=0)
    policy, processor = load_policy(str(tiny))
    tr = MedGRPOTrainer(model=policy, processing_class=processor, reward_funcs=[exact_reward], args=args,
                        train_dataset=to_hf_dataset(records, "think_answer"),
                        algorithm={"log_credit_every": 0, "dynamic_sampling": {"max_rounds": 6} if dynamic else False},
                        monitor=False)
    seen: dict[str, int] = {}

    def text(rec):
        k = seen.get(rec.answer, 0)
        seen[rec.answer] = k + 1
        return _text(SCRIPT[rec.answer][k % 2])

    install_teacher(tr, records, text, replace_all=True)
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    return tr


def kept(tr, out) -> list[tuple[str, str]]:
    """(question, answer) of every row of a merged batch, decoded."""
    from medrl.answers.completion import parse_response

    tok = tr._tokenizer
    prompts = tok.batch_decode(out["prompt_ids"], skip_special_tokens=True)
    comps = tok.batch_decode(out["completion_ids"], skip_special_tokens=True)
    return [(next(q for q in QUESTIONS if q in p), parse_response(c).answer) for p, c in zip(prompts, comps)]


def fixed_batch(tr, rows):
    from medrl.data import to_hf_dataset

    ds = tr.train_dataset
    return [dict(ds[i]) for i in rows for _ in range(2)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from synthetic import synthetic_records

    from medrl.models import build_tiny_vlm

    records = synthetic_records(tmp_path_factory.mktemp("data"), QUESTIONS, ANSWERS)
    texts = QUESTIONS + [_text(a) for a in ANSWERS + ["banana"]]
    return records, build_tiny_vlm(tmp_path_factory.mktemp("tiny"), texts=texts, seed=0)


def _check_no_flat_group(rows):
    groups = [rows[i:i + 2] for i in range(0, len(rows), 2)]
    for g in groups:
        assert g[0][0] == g[1][0], g  # a group is one prompt
        ref = ANSWERS[QUESTIONS.index(g[0][0])]
        assert len({a == ref for _, a in g}) == 2, g  # one right, one wrong: not all equal


@pytest.mark.usefixtures("one_torch_thread")
def test_no_all_equal_group_is_left_and_training_runs(setup, tmp_path):
    records, tiny = setup
    tr = build(records, tiny, tmp_path / "one", per_device=8)
    out = tr._generate_and_score_completions(fixed_batch(tr, [0, 1, 2, 3]))  # r0 and r2 are all-equal
    rows = kept(tr, out)
    assert len(rows) == 8 and out["advantages"].shape == (8,)
    _check_no_flat_group(rows)
    assert rows[:4] == [(QUESTIONS[1], "CT"), (QUESTIONS[1], "banana"), (QUESTIONS[3], "banana"),
                        (QUESTIONS[3], "femur")]  # round 0's groups with signal come first, in order
    assert out["num_items_in_batch"] == out["completion_mask"].sum()
    assert (out["advantages"].abs() > 0.5).all()  # every kept rollout carries signal
    assert tr._metrics["train"]["dynamic_sampling/rounds"][-1] >= 2
    # a full optimizer step through TRL's buffering, loss and backward on the merged batch
    tr2 = build(records, tiny, tmp_path / "train", per_device=4, max_steps=2)
    tr2.train()
    assert tr2.state.global_step == 2
    logged = [h for h in tr2.state.log_history if "dynamic_sampling/rounds" in h]
    assert logged and all(h["dynamic_sampling/short"] == 0 for h in logged)


# ----------------------------------------------------------------------------- two processes


def _worker(spec_path: str) -> None:
    from medrl.data import VQARecord

    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())
    records = [VQARecord(**r) for r in spec["records"]]
    tr = build(records, spec["model"], Path(spec["out"]), per_device=spec["per_device"])
    rank, world = tr.accelerator.process_index, tr.accelerator.num_processes
    rows = [0, 1, 2, 3]
    per = len(rows) // world
    out = tr._generate_and_score_completions(fixed_batch(tr, rows[rank * per:(rank + 1) * per]))
    Path(spec["out"], f"rank{rank}.json").write_text(json.dumps({
        "world": world, "rows": kept(tr, out), "advantages": out["advantages"].tolist(),
        "picks": tr._dynamic.last_picks}))


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_one_and_two_processes_build_the_same_batch(setup, tmp_path):
    from dataclasses import asdict

    import os
    import socket
    import subprocess

    records, tiny = setup
    results = {}
    for world in (1, 2):
        out = tmp_path / f"w{world}"
        out.mkdir()
        spec = {"records": [asdict(r) for r in records], "model": str(tiny), "out": str(out),
                "per_device": 8 // world}
        path = out / "spec.json"
        path.write_text(json.dumps(spec, default=str))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        # two CPU processes (gloo): the torch.distributed launcher with no visible GPU (MULTI_CPU)
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--cpu" if world == 1 else "--multi_gpu",
               "--num_processes", str(world), "--mixed_precision", "no", "--num_machines", "1",
               "--dynamo_backend", "no", "--main_process_port", str(port), str(Path(__file__).resolve()),
               "--worker", str(path)]
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
                   MASTER_ADDR="127.0.0.1", CUDA_VISIBLE_DEVICES="",
                   PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run(cmd, env=env, timeout=900, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
        assert all(x["world"] == world for x in ranks)
        assert all(x["picks"] == ranks[0]["picks"] for x in ranks)  # the same decision on every rank
        results[world] = ([tuple(row) for x in ranks for row in x["rows"]],
                          [a for x in ranks for a in x["advantages"]])
        _check_no_flat_group(results[world][0])
    assert results[1][0] == results[2][0]
    assert results[1][1] == pytest.approx(results[2][1])


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--worker":
    _worker(sys.argv[2])
