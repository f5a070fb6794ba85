"""The judge circuit breaker counts failed judge requests, not unscorable rows.

A real loopback judge that replies in prose fails every request it gets; the reward asks it
about half of the rollouts only (the other half carry no answer to judge, as early in an MRPO run
without warm-up), so the unscorable share of the rows is exactly 0.5 at every step - which a
breaker counting rows (more than 0.5) never trips on. Counting requests, the run saves, stops and
exits 9 naming the judge and its error."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]


def _register_half_judged() -> None:
    from medrl.rewards import REWARDS

    if "half_judged" in REWARDS:
        return

    def half_judged(judge):
        import asyncio

        from medrl.judges.base import run_sync
        from medrl.types import UNSCORABLE, record_unscorable

        def reward(prompts, completions, question=None, answer=None, **kwargs):
            texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]

            async def ask(i):  # odd rollouts have nothing to judge: no request, a score of 0
                return await judge.consistency(question[i], texts[i], str(answer[i])) if i % 2 == 0 else None

            async def ask_all():
                return await asyncio.gather(*(ask(i) for i in range(len(texts))))

            verdicts = run_sync(ask_all())
            out = [0.0 if v is None else (UNSCORABLE if not v.scored else float(bool(v.value))) for v in verdicts]
            return record_unscorable(reward, out)

        reward.__name__ = "half_judged"
        return reward

    REWARDS.register("half_judged")(half_judged)


def test_a_judge_failing_every_request_trips_the_breaker_when_half_the_rows_never_ask_it(tmp_path, data_dir,
                                                                                        capsys):
    import json

    from medrl.cli import main
    from medrl.exit_codes import Exit
    from medrl.judges.server import create_app, serve_in_thread

    class Prose:
        name = "prose"

        async def complete(self, messages, max_tokens):
            return "Well, the reasoning seems broadly plausible to me.", 12, 9

    _register_half_judged()
    out = tmp_path / "run"
    with serve_in_thread(create_app(Prose())) as url:
        code = main(["train", "--recipe", "grpo", "--model", "tiny", "--data", "vqa_rad", "--data-dir", str(data_dir),
                     "--profile", "cpu", "--limit", "4", "--max-steps", "4", "--reward", "half_judged",
                     "--judge", "openai:prose", "--judge-base-url", url, "--judge-cache", str(tmp_path / "c.sqlite"),
                     "--judge-max-unscored-steps", "2", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == Exit.JUDGE == 9, err[-2000:]
    assert "judge openai:prose: more than 50% of its requests failed for 2 consecutive steps" in err
    assert "unparseable verdict" in err and "final model ->" not in err
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["unscorable_frac"] for r in rows if "unscorable_frac" in r] == [0.5, 0.5]  # rows alone: no trip
    assert (out / "checkpoint-2").is_dir() and not (out / "final").exists()
