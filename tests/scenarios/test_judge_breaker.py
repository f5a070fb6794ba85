"""The judge circuit breaker counts failed judge requests, not unscorable rows.

A real loopback judge that replies in prose fails every request it gets; the reward asks it
about half of the rollouts only (the other half carry no answer to judge, as early in an MRPO run
without warm-up), so the unscorable share of the rows is exactly 0.5 at every step - which a
breaker counting rows (more than 0.5) never trips on. Counting requests, the run saves, stops and
exits 9 naming the judge and its error."""

from __future__ import annotations

import pytest

from crash_train import register_reward

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")]


def test_a_judge_failing_every_request_trips_the_breaker_when_half_the_rows_never_ask_it(tmp_path, data_dir,
                                                                                        capsys):
    import json

    from medrl.cli import main
    from medrl.common.exit_codes import Exit
    from medrl.judges.server import create_app, serve_in_thread

    class Prose:
        name = "prose"

        async def complete(self, messages, max_tokens):
            return "Well, the reasoning seems broadly plausible to me.", 12, 9

    register_reward("half_judged", every=2)  # odd rollouts have nothing to judge: they never ask it
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
