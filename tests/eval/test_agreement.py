"""Agreement rate and Cohen's kappa (MRPO App. B.1) against a hand-worked case and scikit-learn."""

import json
import math
import random

import pytest

from medrl.eval.agreement import (agreement_rate, agreement_summary, cohen_kappa, labels_from_outputs,
                                  pair_labels, read_label_file)


def test_kappa_hand_case():
    a = [1, 1, 1, 0, 0, 1, 0, 1, 1, 0]
    b = [1, 1, 0, 0, 0, 1, 1, 1, 1, 0]
    # p_o = 8/10; both raters 6 ones / 4 zeros -> p_e = 0.6*0.6 + 0.4*0.4 = 0.52
    # kappa = (0.8 - 0.52) / (1 - 0.52) = 0.28 / 0.48 = 0.58333...
    assert agreement_rate(a, b) == 0.8
    assert math.isclose(cohen_kappa(a, b), 0.28 / 0.48)


def test_kappa_matches_sklearn():
    from sklearn.metrics import cohen_kappa_score

    rng = random.Random(0)
    for trial in range(30):
        n = rng.randint(5, 60)
        k = rng.choice([2, 2, 3])
        a = [rng.randrange(k) for _ in range(n)]
        b = [x if rng.random() < 0.7 else rng.randrange(k) for x in a]
        if len(set(a)) == 1 and len(set(b)) == 1 and a[0] == b[0]:
            continue
        assert math.isclose(cohen_kappa(a, b), cohen_kappa_score(a, b), abs_tol=1e-12), (a, b)


def test_kappa_edge_cases():
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # p_e = 1: undefined
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0  # perfect disagreement, balanced
    with pytest.raises(ValueError):
        cohen_kappa([1, 0], [1])
    with pytest.raises(ValueError):
        agreement_rate([], [])


def test_pairing_by_key_and_groups():
    a = {"ds1:1": 1, "ds1:2": 0, "ds2:3": 1, "ds2:4": 1}
    b = {"ds1:1": 1, "ds1:2": 1, "ds2:3": 1, "ds2:9": 0}
    pairs, counts = pair_labels(a, b)
    assert counts == {"paired": 3, "only_a": 1, "only_b": 1}
    s = agreement_summary(pairs, {"ds1:1": "ds1", "ds1:2": "ds1", "ds2:3": "ds2"})
    assert s["total"]["n"] == 3 and math.isclose(s["total"]["agreement"], 2 / 3)
    assert s["groups"]["ds1"]["agreement"] == 0.5 and s["groups"]["ds2"]["agreement"] == 1.0


def test_label_file_and_outputs(tmp_path):
    p = tmp_path / "human.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in [
        {"id": "vqa_rad:test:1", "label": "O"}, {"id": "vqa_rad:test:2", "label": 0},
        {"id": "vqa_rad:test:1", "step": 2, "label": "yes"}]) + "\n")
    labels = read_label_file(p)
    assert labels == {"vqa_rad:test:1": 1, "vqa_rad:test:2": 0, ("vqa_rad:test:1", 2): 1}
    csv = tmp_path / "h.csv"
    csv.write_text("id,label\nvqa_rad:test:1,maybe\n")
    with pytest.raises(ValueError, match="row 1"):
        read_label_file(csv)
    rows = [{"key": "vqa_rad:test:1", "dataset": "vqa_rad:test", "scores": {"judge_binary": 1.0},
             "step_verdicts": [{"gold_alignment": 0, "answer_contribution": 1}, {"gold_alignment": 0, "answer_contribution": 0}]},
            {"key": "vqa_rad:test:2", "dataset": "vqa_rad:test", "scores": {"judge_binary": None}, "step_verdicts": None}]
    lab, groups = labels_from_outputs(rows, "correct")
    assert lab == {"vqa_rad:test:1": 1}  # the unscored verdict is left out
    lab, _ = labels_from_outputs(rows, "step_valid")
    assert lab == {("vqa_rad:test:1", 1): 1, ("vqa_rad:test:1", 2): 0}
    lab, _ = labels_from_outputs(rows, "gold_alignment")
    assert lab == {("vqa_rad:test:1", 1): 0, ("vqa_rad:test:1", 2): 0}
