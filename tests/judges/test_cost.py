"""Judge cost accounting (medrl.judges.cost): prices, budgets, per-step tokens and cost against a
fake OpenAI-compatible server that returns ``usage``, cache/merge savings, the budget stop with a
resumable checkpoint, and the dry-run estimate against the measured count."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from fastapi import FastAPI, Request

from medrl.judges.cost import Budget, Price, cost_fields, judge_price, parse_budget

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]

QUESTIONS = ["Which organ shows the abnormality?", "What imaging modality was used?",
             "Where is the mass located?", "Which bone is fractured?"]
ANSWERS = ["liver", "CT", "kidney", "femur"]
PRICE = Price(0.25, 2.0)  # $ per million input / output tokens


def test_parse_budget():
    assert parse_budget("2M tokens") == Budget(tokens=2_000_000)
    assert parse_budget("500k") == Budget(tokens=500_000)
    assert parse_budget("1500") == Budget(tokens=1500)
    assert parse_budget("$5") == Budget(dollars=5.0)
    assert parse_budget("2.5 USD") == Budget(dollars=2.5)
    assert parse_budget(None) is None
    for bad in ("five dollars", "-3", "0", "2M apples"):
        with pytest.raises(ValueError, match="judge-budget"):
            parse_budget(bad)


def test_prices_by_hand():
    assert PRICE.cost(1_000_000, 100_000) == pytest.approx(0.25 + 0.2)
    assert Price().cost(10, 10) is None  # no price: cost unknown, tokens still counted
    f = cost_fields({"calls": 3, "cache_hits": 2, "deduplicated": 1, "input_tokens": 400, "output_tokens": 20,
                     "saved_input_tokens": 300, "saved_output_tokens": 10}, PRICE)
    assert f["requests"] == 6 and f["tokens"] == 420 and f["saved_tokens"] == 310
    assert f["cost_usd"] == pytest.approx((400 * 0.25 + 20 * 2.0) / 1e6)
    assert judge_price({"price_in_per_mtok": 1, "price_out_per_mtok": 3}) == Price(1.0, 3.0)
    with pytest.raises(ValueError, match="judge.price_out_per_mtok"):
        judge_price({"price_in_per_mtok": 1, "price_out_per_mtok": -3})


def test_reference_judge_reports_zero():
    from medrl.judges import build_judge, run_sync
    from medrl.judges.cost import cost_summary

    j = build_judge("reference")
    run_sync(j.answer_correct("What organ?", "liver", "kidney"))
    s = cost_summary(j, PRICE)
    assert s["tokens"] == 0 and s["cost_usd"] == 0.0


# ----------------------------------------------------------------------------- fake server


def _usage(content: str) -> tuple[int, int]:
    """What the fake server bills: a quarter of the prompt's characters in, 2 tokens out."""
    return len(content) // 4, 2


@pytest.fixture(scope="module")
def server():
    from fake_openai import chat_completion

    from medrl.judges.server import serve_in_thread

    app = FastAPI()
    app.state.billed = {}  # (question, prediction) -> (prompt_tokens, completion_tokens)

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        content = "".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))
        tin, tout = _usage(content)
        q = next(q for q in QUESTIONS if q in content)
        pred = next(p for p in ("banana", "kiwi") if re.search(rf"\b{p}\b", content))
        app.state.billed[(q, pred)] = (tin, tout)
        return chat_completion("NO", body["model"], prompt_tokens=tin, completion_tokens=tout)

    with serve_in_thread(app) as url:
        yield url, app


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from synthetic import synthetic_records

    from medrl.models import build_tiny_vlm

    records = synthetic_records(tmp_path_factory.mktemp("data"), QUESTIONS, ANSWERS)
    texts = QUESTIONS + [_text(r, p) for r in records for p in ("banana", "kiwi")]
    return records, build_tiny_vlm(tmp_path_factory.mktemp("tiny"), texts=texts, seed=0)


def _text(rec, pred):
    return f"<think>The {rec.organ} study shows a focal finding.</think><answer>{pred}</answer>"


RECIPE = """\
name: cost_test
rewards:
  - {name: medix_llm, weight: 1.0, options: {check: strict}}   # reads the trainer's judged column
algorithm: {correctness: judge, log_credit_every: 0}
data: {prompt_style: think_answer}
judge: {price_in_per_mtok: 0.25, price_out_per_mtok: 2.0}
grpo: {num_generations: 4, per_device_train_batch_size: 8, max_completion_length: 32, max_steps: 3,
       learning_rate: 1.0e-6, beta: 0.0, logging_steps: 1, save_strategy: "no", report_to: none, use_cpu: true,
       seed: 0}
"""


def _run(setup, server, out, budget=None, resume=None, ledger=False):
    from medrl.judges.cost import configure_judge_cost
    from medrl.train.callbacks import RunLedgerCallback, RunOutcome
    from medrl.judges.openai_judge import OpenAIJudge
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe
    from medrl.train.teacher import install_teacher

    records, tiny = setup
    path = out.parent / "cost_test.yaml"
    path.write_text(RECIPE)
    recipe = load_recipe(str(path))
    judge = OpenAIJudge("m", base_url=server[0], cache_path=":memory:", timeout=5, max_retries=0)
    configure_judge_cost(judge, recipe.judge, budget)
    cbs = [RunLedgerCallback(RunOutcome())] if ledger else []  # what `medrl train` adds: costs carried over a resume
    tr = train_rl(recipe, tiny, records, out, judge=judge, train=False, grpo_overrides={"report_to": "none"},
                  callbacks=cbs).trainer
    asked = []  # (step, question, prediction) of every rollout, in order

    def text(rec):
        pred = ("banana", "kiwi")[len(asked) % 2]
        asked.append((tr.state.global_step + 1, rec.question, pred))
        return _text(rec, pred)

    install_teacher(tr, records, text, replace_all=True)
    tr.train(resume_from_checkpoint=resume)
    judge.close()
    return tr, asked, recipe, records


@pytest.mark.usefixtures("one_torch_thread")
def test_tokens_cost_and_savings_per_step_equal_the_hand_computed_sums(setup, server, tmp_path):
    out = tmp_path / "run"
    tr, asked, recipe, records = _run(setup, server, out)
    billed = server[1].state.billed
    # by hand: the first request of a (question, answer) pair is sent and billed; every later one
    # (same step: merged in flight; later step: cache hit) saves what the first cost
    seen, want = set(), {}
    for step, q, p in asked:
        row = want.setdefault(step, {"requests": 0, "input_tokens": 0, "output_tokens": 0, "saved_tokens": 0})
        row["requests"] += 1
        tin, tout = billed[(q, p)]
        if (q, p) in seen:
            row["saved_tokens"] += tin + tout
        else:
            seen.add((q, p))
            row["input_tokens"] += tin
            row["output_tokens"] += tout
    cost = json.loads((out / "judge_cost.json").read_text())
    got = {s["step"]: {k: s[k] for k in ("requests", "input_tokens", "output_tokens", "saved_tokens")}
           for s in cost["steps"]}
    assert got == want
    assert any(r["saved_tokens"] for r in want.values())  # the cache / merging did save something
    for s in cost["steps"]:
        assert s["cost_usd"] == pytest.approx((s["input_tokens"] * 0.25 + s["output_tokens"] * 2.0) / 1e6)
    run = cost["run"]
    assert run["tokens"] == sum(r["input_tokens"] + r["output_tokens"] for r in want.values())
    assert run["sent"] == len(seen) and run["requests"] == len(asked)
    assert sum(e["tokens"] for e in cost["epochs"].values()) == run["tokens"]
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    per_step = {r["step"]: r for r in logged if "judge/input_tokens" in r}
    assert {k: v["judge/input_tokens"] for k, v in per_step.items()} == {k: v["input_tokens"] for k, v in want.items()}
    assert per_step[3]["judge/total_cost_usd"] == pytest.approx(run["cost_usd"])

    # the dry-run estimate, from the recipe and the data alone, within 20% of what was asked
    from medrl.train.cost_estimate import describe_estimate, estimate_judge_cost

    est = estimate_judge_cost(recipe, records)
    assert "requests 24 (answer_correct 24)" in "\n".join(describe_estimate(est))  # 3 steps x 8 rollouts
    assert est["requests_total"] == pytest.approx(run["requests"], rel=0.2)
    assert est["input_tokens"] == pytest.approx(run["input_tokens"] + run["saved_input_tokens"], rel=0.2)
    assert est["cost_usd"] is not None


@pytest.mark.usefixtures("one_torch_thread")
def test_budget_stop_leaves_a_resumable_checkpoint(setup, server, tmp_path):
    out = tmp_path / "budget"
    tr, asked, _, _ = _run(setup, server, out, budget="10 tokens", ledger=True)  # step 1 alone spends more
    assert tr.state.global_step == 1
    ckpt = out / "checkpoint-1"
    assert (ckpt / "trainer_state.json").is_file() and (ckpt / "model.safetensors").is_file()
    assert not (out / "final").exists()
    cost = json.loads((out / "judge_cost.json").read_text())
    assert cost["budget_stop_step"] == 1 and cost["budget"] == "10 tokens"
    # resumed with the same, spent budget: it stops before a step (nothing more asked of the judge)
    tr_same, asked_same, _, _ = _run(setup, server, out, budget="10 tokens", resume=str(ckpt), ledger=True)
    assert tr_same.state.global_step == 1 and not (out / "checkpoint-2").exists() and asked_same == []
    assert json.loads((out / "judge_cost.json").read_text())["budget_stop_step"] == 1
    tr2, _, _, _ = _run(setup, server, out, budget="2M tokens", resume=str(ckpt), ledger=True)
    assert tr2.state.global_step == 3


def test_cache_keeps_tokens_and_upgrades_old_files(tmp_path):
    import sqlite3

    from medrl.judges.cache import JudgeCache

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)  # a cache written before token columns existed
    db.execute("CREATE TABLE judge_cache (key TEXT PRIMARY KEY, model TEXT NOT NULL, reply TEXT NOT NULL, "
               "created REAL NOT NULL)")
    db.execute("INSERT INTO judge_cache VALUES ('old', 'm', 'YES', 0)")
    db.commit()
    db.close()
    c = JudgeCache(path)
    assert c.get("old") == "YES" and c.get_usage("old") == (0, 0)  # kept; its cost unknown -> 0 saved
    c.put("new", "m", "NO", usage=(120, 3))
    assert c.get("new") == "NO" and c.get_usage("new") == (120, 3)
    assert c.get_usage("missing") is None
    c.close()


def test_spend_paid_before_a_crash_counts_once_when_the_replay_hits_the_cache(server, tmp_path):
    """Attempt 1 pays for two requests after its checkpoint and dies; attempt 2 (a new judge
    client on the same cache file) replays them from the cache: their tokens count as spent, once
    each - a third ask of the same request is a saving again - and a payment before the
    checkpoint is never claimed."""
    from medrl.judges.base import run_sync
    from medrl.judges.cost import SpendJournal
    from medrl.judges.openai_judge import OpenAIJudge

    cache, journal_path = tmp_path / "cache.sqlite", tmp_path / "judge_spend.jsonl"
    q = QUESTIONS[0]

    def ask(judge, pred):
        return run_sync(judge.answer_correct(q, "apple", pred))

    first = OpenAIJudge("m", base_url=server[0], cache_path=cache, timeout=5, max_retries=0)
    first.spend_journal = SpendJournal(journal_path)
    ask(first, "banana")  # step 1: before the checkpoint
    checkpoint_offset = first.spend_journal.size()
    ask(first, "kiwi")  # step 2: paid, then the process dies before checkpoint 2 is committed
    paid = first.stats.input_tokens + first.stats.output_tokens
    kiwi = server[1].state.billed[(q, "kiwi")]
    first.close()
    with open(journal_path, "a") as fh:
        fh.write('{"key": "torn')  # the kill cut a line short: skipped

    second = OpenAIJudge("m", base_url=server[0], cache_path=cache, timeout=5, max_retries=0)
    second.spend_journal = SpendJournal(journal_path, since=checkpoint_offset)
    assert second.spend_journal.unclaimed == 1
    ask(second, "banana")  # replayed step 1 is not replayed here: a hit before the checkpoint is a saving
    assert (second.stats.input_tokens, second.stats.replayed) == (0, 0)
    ask(second, "kiwi")  # the replayed step 2: from the cache, but paid by attempt 1 after the checkpoint
    assert (second.stats.input_tokens, second.stats.output_tokens) == kiwi and second.stats.replayed == 1
    assert second.stats.calls == 0 and second.stats.saved_input_tokens == server[1].state.billed[(q, "banana")][0]
    ask(second, "kiwi")  # asked again later: a saving, not a second payment
    assert second.stats.input_tokens == kiwi[0] and second.stats.saved_input_tokens > kiwi[0]
    assert first.stats.input_tokens + first.stats.output_tokens == paid
    second.close()
