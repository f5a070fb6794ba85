"""pass@k (medrl.eval.passk; Chen et al. 2021 Eq. 1, CAPO Fig. 7) against hand computations, and
``run_eval(samples=n)`` end to end with a fake sampler and the offline reference judge."""

from __future__ import annotations

import json
from math import comb

import pytest

from medrl.data import VQARecord
from medrl.eval.passk import default_ks, item_counts, pass_at_k, summarize_pass_at_k
from medrl.eval.runner import EvalDataset, run_eval


@pytest.mark.parametrize("n, c, k, expected", [
    (5, 2, 1, 1 - 3 / 5),        # 1 - C(3,1)/C(5,1) = 0.4
    (5, 2, 2, 1 - 3 / 10),       # 1 - C(3,2)/C(5,2) = 0.7
    (5, 2, 3, 1 - 1 / 10),       # 1 - C(3,3)/C(5,3) = 0.9
    (5, 2, 4, 1.0),              # n - c = 3 < k: every draw of 4 holds a correct one
    (5, 0, 3, 0.0),              # nothing correct
    (10, 3, 5, 1 - 21 / 252),    # 1 - C(7,5)/C(10,5) = 0.91666...
    (4, 4, 1, 1.0),
])
def test_pass_at_k_by_hand(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_the_binomial_form_and_rejects_bad_input():
    for n in range(1, 12):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - comb(n - c, k) / comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
    with pytest.raises(ValueError, match="n >= k"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="k must be"):
        pass_at_k(3, 1, 0)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)


def test_summary_over_items_by_hand():
    rows = ([{"dataset": "a", "record_id": "x", "correct": v} for v in (True, False, False, False)]
            + [{"dataset": "a", "record_id": "y", "correct": False} for _ in range(4)]
            + [{"dataset": "b", "record_id": "z", "correct": v} for v in (True, None, False, True)])
    assert item_counts(rows) == {("a", "x"): (4, 1), ("a", "y"): (4, 0), ("b", "z"): (3, 2)}
    s = summarize_pass_at_k(rows)
    assert s["ks"] == [1, 2, 4] == default_ks(4)
    a = s["datasets"]["a"]
    assert a[1]["pass_at_k"] == pytest.approx((0.25 + 0) / 2)          # x: 1/4, y: 0
    assert a[2]["pass_at_k"] == pytest.approx((1 - 3 / 6 + 0) / 2)    # x: 1 - C(3,2)/C(4,2) = 0.5
    assert a[4]["pass_at_k"] == pytest.approx(0.5) and a[4]["n_items"] == 2
    b = s["datasets"]["b"]                                              # z: 3 decided samples, 2 correct
    assert b[1]["pass_at_k"] == pytest.approx(2 / 3) and b[2]["pass_at_k"] == pytest.approx(1.0)
    assert b[4] == {"pass_at_k": None, "n_items": 0}                    # fewer than 4 decided samples
    assert s["all"][1]["pass_at_k"] == pytest.approx((0.25 + 0 + 2 / 3) / 3)
    assert default_ks(5) == [1, 2, 4, 5] and default_ks(1) == [1]


class Sampler:
    """Greedy calls (temperature 0) answer right; sampled calls answer record r0 right on its
    first sample only and r1 never: r0 has c=1 of n=4, r1 c=0."""

    def __init__(self):
        self.sampled: dict[str, int] = {}
        self.calls = 0

    def __call__(self, recs, temperature: float = 0.0):
        self.calls += 1
        outs = []
        for r in recs:
            if temperature <= 0:
                ans = r.answer
            else:
                j = self.sampled.get(r.id, 0)
                self.sampled[r.id] = j + 1
                ans = r.answer if (r.id == "r0" and j == 0) else "stomach"
            outs.append(f"<think>The organ is shown.</think><answer>{ans}</answer>")
        return outs


def test_run_eval_samples_writes_pass_at_k_and_resumes(tmp_path):
    from medrl.judges import build_judge

    recs = [VQARecord(id=f"r{i}", images=[], question=f"Which organ {i}?", answer=a, answer_type="OPEN",
                      open_ended=True) for i, a in enumerate(["liver", "spleen"])]
    gen = Sampler()
    kw = dict(batch_size=3, text_metrics=False, verify_steps=False, n_boot=50, progress=False, model="fake",
              protocols=["standard"], samples=4, sample_temperature=0.7)
    m = run_eval([EvalDataset("toy:test", recs)], gen, build_judge("reference"), tmp_path / "ev", **kw)
    assert gen.sampled == {"r0": 4, "r1": 4}
    pk = json.loads((tmp_path / "ev" / "pass_at_k.json").read_text())
    assert pk["ks"] == [1, 2, 4] and pk["protocol"] == "standard" and pk["n_samples"] == 4
    curve = pk["datasets"]["toy:test"]
    assert curve["1"]["pass_at_k"] == pytest.approx(0.125)   # (1/4 + 0) / 2
    assert curve["2"]["pass_at_k"] == pytest.approx(0.25)    # (1/2 + 0) / 2
    assert curve["4"]["pass_at_k"] == pytest.approx(0.5)
    assert m["pass_at_k"]["ks"] == [1, 2, 4] and m["config"]["samples"]["n"] == 4
    assert (tmp_path / "ev" / "figures" / "pass_at_k.png").is_file()
    assert "pass@k" in (tmp_path / "ev" / "report.md").read_text()
    calls = gen.calls
    run_eval([EvalDataset("toy:test", recs)], gen, build_judge("reference"), tmp_path / "ev", **kw)
    assert gen.calls == calls  # resumed: nothing generated again
    with pytest.raises(ValueError, match="temperature > 0"):
        run_eval([EvalDataset("toy:test", recs)], gen, None, tmp_path / "ev2", **{**kw, "sample_temperature": 0})
