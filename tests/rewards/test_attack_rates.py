"""`medrl audit-rewards --strict` reports the answer decision's rates on generated attacks
(medrl.rewards.attack_rates) and fails when one is over its target; here on 32 real VQA-RAD test
and SLAKE validate records (the 10,000-variant runs are recorded in docs/judges.md)."""

from __future__ import annotations

import json

import pytest

from medrl.rewards.attack_rates import TARGETS, Rates, format_rates, measure


@pytest.mark.parametrize("source", ["vqa_rad:test", "slake:validate"])
def test_audit_rewards_strict_reports_generated_rates(source, data_dir, tmp_path, capsys):
    from medrl.cli import main

    out = tmp_path / "gen.json"
    code = main(["audit-rewards", "--recipe", "medix_r1", "--data", source, "--data-dir", str(data_dir), "--n", "32",
                 "--generated", "8", "--generated-only", "--strict", "--json", str(out)])
    text = capsys.readouterr().out
    assert f"generated attacks ({source}):" in text and "training and evaluation disagree" in text
    report = json.loads(out.read_text())["generated"]
    assert report["n_variants"] >= 100
    assert code == 0, text
    for key, target in TARGETS.items():
        r = report["rates"][key]
        assert target is None or r["rate"] is None or r["rate"] <= target, (key, r, report["examples"].get(key))


def test_rates_and_targets_by_hand():
    r = Rates(n_references=1)
    for hit in (True, False, False, False, False, False, False):
        r._count("refused_offline", hit, ("Liver", "x", "why"), "frame")
    assert r.rate("refused_offline") == pytest.approx(1 / 7) and r.ok  # under the 15% target
    assert "target <= 15%" in format_rates(r) and "1/7" in format_rates(r)  # per class: 1 of 7
    r._count("refused_offline", True, ("Liver", "x", "why"), "frame")
    assert not r.ok  # 2 of 8: over
    r = Rates(n_references=1)
    for hit in [True] + [False] * 199:
        r._count("refused_before_judge", hit, ("Liver", "x", "why"))
    assert r.rate("refused_before_judge") == 0.005 and r.ok  # 0.5%: at the target
    r._count("refused_before_judge", True, ("Liver", "x", "why"))
    assert not r.ok and "OVER TARGET" in format_rates(r)
    ok = measure([("Liver", "Which organ?")], per_reference=6, agreement=False)
    assert ok.rate("paid_unknown") in (0.0, None) and ok.total >= 6
