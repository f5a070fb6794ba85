"""Credit evidence written during training (issue 15): ``<run>/credit.jsonl`` holds exactly the
advantages ``_compute_loss`` received, MRPO's shaped values on the invalid steps of wrong-answer
rollouts (MRPO Eq. 7), and GRPO's A_i constant over each rollout.

One real optimizer step per estimator on a tiny Qwen2.5-VL with teacher rollouts
(:func:`medrl.train.teacher.install_teacher`, ``replace_all``): per prompt, a right answer with a
sound reasoning and a wrong answer whose first step is meta-commentary.
"""

from __future__ import annotations

import math

import pytest
import torch

from medrl.common.jsonl import read_jsonl
from medrl.train.recipes import load_recipe

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def records(data_dir):
    from medrl.data import load_records

    return load_records("vqa_rad", split="train", data_dir=data_dir, open_only=True, limit=2)


def right(rec) -> str:
    return (f"<think>This is a {rec.modality or 'medical'} image. The answer is {rec.answer}.</think>"
            f"<answer>{rec.answer}</answer>")


def wrong(rec) -> str:
    return (f"<think>Let me think about this. This is a {rec.modality or 'medical'} image. It looks fine."
            f"</think><answer>banana {rec.id}</answer>")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, records):
    from medrl.models import build_tiny_vlm

    texts = [r.question for r in records] + [f(r) for r in records for f in (right, wrong)]
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"), texts=texts, seed=0)


@pytest.fixture(scope="module")
def runs(tiny, records, tmp_path_factory):
    """One training step per estimator; the tensors handed to ``_compute_loss`` are captured."""
    from medrl.judges import build_judge
    from medrl.train.pipeline import train_rl
    from medrl.train.teacher import install_teacher

    judge = build_judge("reference")
    result = {}
    for name in ("mrpo", "grpo"):
        out = tmp_path_factory.mktemp(name)
        recipe = load_recipe(name, profile="cpu", overrides=[
            "grpo.max_completion_length=48", "grpo.per_device_train_batch_size=4", "grpo.max_steps=1",
            "grpo.save_strategy='no'", "algorithm.log_credit_every=1", "algorithm.log_credit_rollouts=4"])
        tr = train_rl(recipe, tiny, records, out, judge=judge, train=False,
                      grpo_overrides={"report_to": "none"}).trainer
        calls = {"n": 0}

        def text(rec):  # rows alternate right / wrong within each group of 2
            calls["n"] += 1
            return right(rec) if calls["n"] % 2 else wrong(rec)

        install_teacher(tr, records, text, replace_all=True)
        seen = []
        orig = tr._compute_loss

        def compute_loss(model, inputs, _orig=orig):
            seen.append({k: inputs[k].detach().clone() for k in ("advantages", "completion_ids", "completion_mask")})
            return _orig(model, inputs)

        tr._compute_loss = compute_loss
        tr.train()
        result[name] = (tr, seen, read_jsonl(out / "credit.jsonl"))
    return result


def _match(tr, seen, rows):
    """Each credit row with the loss-input row of the same completion (TRL shuffles the batch)."""
    tok = tr._tokenizer
    loss_rows = [(b["advantages"][j], b["completion_ids"][j], b["completion_mask"][j])
                 for b in seen for j in range(b["completion_ids"].shape[0])]
    pairs = []
    for row in rows:
        hits = [x for x in loss_rows if tok.decode(x[1][x[2].bool()], skip_special_tokens=True) == row["text"]]
        assert len(hits) == 1, row["text"]
        pairs.append((row, *hits[0]))
    return pairs


def test_credit_rows_hold_exactly_the_advantages_the_loss_used(runs):
    for name, (tr, seen, rows) in runs.items():
        assert len(seen) == 1 and len(rows) == 4, name  # one step; 4 rollouts logged at step 1
        assert {r["step"] for r in rows} == {1} and [r["rollout"] for r in rows] == [0, 1, 2, 3]
        assert all(r["estimator"] == name and r["in_loss"] for r in rows)
        for row, adv, ids, mask in _match(tr, seen, rows):
            n = len(row["token_advantages"])
            assert n == int(mask.sum()) == len(row["tokens"]) == len(row["offsets"])
            if name == "mrpo":
                assert adv.dim() == 1 and adv.shape[0] == ids.shape[0]  # a row of the (B, T) tensor
                assert torch.equal(torch.tensor(row["token_advantages"], dtype=adv.dtype), adv[:n])
                assert not mask[n:].any()  # the rest is padding, outside the loss
            else:
                assert adv.dim() == 0  # (B,) advantages: one per rollout, broadcast by the loss
                assert row["token_advantages"] == [float(adv)] * n
            assert "".join(row["tokens"]) == row["text"]  # token pieces tile the text (EOS: "")


def test_mrpo_wrong_answer_rows_carry_the_shaped_step_values(runs):
    tr, _, rows = runs["mrpo"]
    wrong_rows = [r for r in rows if r["r_ans"] is not None and r["r_ans"] <= r["tau"]]
    right_rows = [r for r in rows if r["r_ans"] is not None and r["r_ans"] > r["tau"]]
    assert len(wrong_rows) == 2 and len(right_rows) == 2
    for r in wrong_rows:
        a = abs(r["advantage"])
        assert r["advantage"] < 0 and a > 0
        steps = r["steps"]
        K = len(steps)
        assert K >= 2 and steps[0]["valid"] is False and any(s["valid"] for s in steps)
        assert r["text"][steps[0]["start"]:steps[0]["end"]] == "Let me think about this."
        for k, s in enumerate(steps, start=1):
            p = (k - 1) / (K - 1)
            want = a if s["valid"] else -math.exp(1 - p) * a  # Eq. 7, exponential shaping
            got = r["token_advantages"][s["token_start"]:s["token_end"]]
            assert got and all(math.isclose(v, want, rel_tol=1e-6) for v in got), (k, got, want)
        outside = set(range(len(r["tokens"]))) - {t for s in steps for t in range(s["token_start"], s["token_end"])}
        assert outside and all(r["token_advantages"][t] == r["advantage"] for t in outside)
    for r in right_rows:  # selective strategy: right answers keep A_i everywhere
        assert set(r["token_advantages"]) == {r["advantage"]}


def test_grpo_rows_are_constant_per_rollout_and_match_mrpo_sequence_advantages(runs):
    _, _, g_rows = runs["grpo"]
    _, _, m_rows = runs["mrpo"]
    for r in g_rows:
        assert len(set(r["token_advantages"])) == 1 and r["token_advantages"][0] == r["advantage"]
        assert r["steps"] and all(s["valid"] is not None for s in r["steps"])  # same process reward
    # same fixed completions, same rewards: the sequence advantages A_i agree
    by_text = {r["text"]: r for r in m_rows}
    for r in g_rows:
        assert r["advantage"] == pytest.approx(by_text[r["text"]]["advantage"])
        assert r["r_ans"] == by_text[r["text"]]["r_ans"]


def test_credit_writer_schedule_and_settings(tmp_path):
    from medrl.train.credit import CreditWriter
    from medrl.train.recipes import RecipeError

    w = CreditWriter(tmp_path, every=10)
    # completed steps at generation time (steps_per_generation 4): logs steps 1, 13 (first >= 10), 21
    assert [s for s in range(0, 30, 4) if w.due(s)] == [0, 12, 20]
    assert w.due(0) and not w.due(4)  # train() again on the same trainer: the schedule starts over
    assert not any(CreditWriter(tmp_path, every=0).due(s) for s in range(5))
    assert not CreditWriter(tmp_path, every=1, rollouts=0).due(0)
    broken = CreditWriter(tmp_path, every=1)
    assert broken.due(0) and broken.log(None, [], {}, None, None, None) == []  # fails inside: warns only
    assert broken.every == 0 and not broken.due(5) and not (tmp_path / "credit.jsonl").exists()
    with pytest.raises(ValueError, match="log_credit_every"):
        CreditWriter(tmp_path, every=-1)
    with pytest.raises(RecipeError, match="log_credit_rollouts"):
        load_recipe("grpo", overrides=["algorithm.log_credit_rollouts=two"])
    assert load_recipe("grpo").algorithm["log_credit_every"] == 10
