"""medrl.train.batching: the papers' global batch split over P processes (hand-worked numbers)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from medrl.train.batching import BatchError, derive_batch, describe, process_count, summary


def test_medix_r1_batch_over_eight_processes():
    # MediX-R1 (App. A.8): 128 prompts per update, 4 updates per rollout of 512 prompts; G=8, P=8.
    # completions per update 128*8 = 1024 -> 128 per process; micro 4 -> accumulation 32;
    # steps per generation 32*4 = 128.
    batch = {"global_prompts": 128, "updates_per_rollout": 4, "micro_batch": 4}
    d = derive_batch(batch, num_generations=8, num_processes=8)
    assert d == {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 32, "steps_per_generation": 128}
    s = summary(batch, d, 8, 8)
    assert s["completions_per_update"] == 1024
    assert s["prompts_per_update"] == 128
    assert s["prompts_per_rollout"] == 512
    assert s["steps_per_generation"] == 128


def test_micro_batch_is_the_largest_divisor_not_above_the_cap():
    # 3 prompts x 4 = 12 completions on one process; cap 5 -> micro 4, accumulation 3
    d = derive_batch({"global_prompts": 3, "micro_batch": 5}, num_generations=4, num_processes=1)
    assert d == {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 3}
    # no cap: the whole per-process update in one pass; on-policy: no steps_per_generation
    assert derive_batch({"global_prompts": 3}, 4, 2) == {"per_device_train_batch_size": 6,
                                                         "gradient_accumulation_steps": 1}


def test_indivisible_batch_names_the_numbers_and_the_possible_counts():
    with pytest.raises(BatchError) as e:
        derive_batch({"global_prompts": 3}, num_generations=3, num_processes=2)
    msg = str(e.value)
    assert "batch.global_prompts=3 x grpo.num_generations=3 = 9 completions" in msg
    assert "over 2 processes" in msg and "[1, 3, 9]" in msg


@pytest.mark.parametrize("value, expected", [("4", 4), (None, 1), ("zero", 1), ("0", 1)])
def test_process_count_reads_world_size(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("WORLD_SIZE", value)
    assert process_count() == expected


def test_describe_lists_each_process_count_and_marks_this_run():
    recipe = SimpleNamespace(batch={"global_prompts": 4, "num_processes": 2}, grpo={"num_generations": 2})
    lines = describe(recipe, num_processes_list=(1, 3))
    assert lines[0].startswith("batch: 4 prompts x 2 completions per update, 1 update(s) per rollout")
    by_count = {int(l.split()[0]): l for l in lines[1:]}
    assert sorted(by_count) == [1, 2, 3]
    assert "per_device_train_batch_size=8 gradient_accumulation_steps=1" in by_count[1]
    assert by_count[2].endswith("<- this run") and "per_device_train_batch_size=4" in by_count[2]
    assert "cannot divide" in by_count[3]


def test_describe_without_global_batch_or_when_grpo_sets_it():
    plain = SimpleNamespace(batch={}, grpo={"per_device_train_batch_size": 2})
    assert describe(plain) == ["batch: as given in grpo (per_device_train_batch_size=2, "
                               "gradient_accumulation_steps=1); no batch.global_prompts"]
    explicit = SimpleNamespace(batch={"global_prompts": 8, "applied": False,
                                      "explicit": ["per_device_train_batch_size"]}, grpo={})
    assert describe(explicit) == ["batch: grpo sets per_device_train_batch_size itself; batch.global_prompts=8 "
                                  "is not applied"]
