"""FFP, FAR, stages, bins, paired tables and transition matrices against hand-worked cases
(MRPO Sec. 3, Sec. 5.3, App. E.2)."""

import math

import pytest

from medrl.eval import analysis as A

T, F = True, False


@pytest.mark.parametrize(
    "flags, k, ffp, far",
    [
        # K=5, first invalid step k=3 -> FFP 3/5 = 0.6; after it: [T, F] -> 1 failed of 2 = 0.5
        ([T, T, F, T, F], 3, 0.6, 0.5),
        # K=4, k=1 -> FFP 0.25; after it [F, F, T] -> 2 of 3
        ([F, F, F, T], 1, 0.25, 2 / 3),
        # K=10, k=8 -> FFP 0.8; after it [T, T] -> 0 of 2
        ([T] * 7 + [F, T, T], 8, 0.8, 0.0),
        # first failure at the last step: FFP 1.0, FAR 0/0 -> undefined (None)
        ([T, T, T, F], 4, 1.0, None),
        # single failing step
        ([F], 1, 1.0, None),
        # no failure: no FFP, no FAR
        ([T, T, T], None, None, None),
        ([], None, None, None),
    ],
)
def test_ffp_far_hand_cases(flags, k, ffp, far):
    assert A.first_failure_index(flags) == k
    got_ffp = A.first_failure_point(flags)
    got_far = A.failure_accumulation_rate(flags)
    assert (got_ffp is None) == (ffp is None) and (ffp is None or math.isclose(got_ffp, ffp))
    assert (got_far is None) == (far is None) and (far is None or math.isclose(got_far, far))


@pytest.mark.parametrize(
    "ffp, stage",
    [(None, "no_ffp"), (0.1, "early"), (0.25, "early"), (0.39, "early"), (2 / 5, "mid"), (0.4, "mid"),
     (0.6, "mid"), (0.699, "mid"), (7 / 10, "late"), (0.7, "late"), (0.8, "late"), (1.0, "late")],
)
def test_stage_boundaries(ffp, stage):
    # MRPO Sec. 5.3: Early [0.0, 0.4), Mid [0.4, 0.7), Late [0.7, 1.0]
    assert A.stage_of(ffp) == stage


def test_stage_rejects_out_of_range():
    with pytest.raises(ValueError):
        A.stage_of(1.5)
    with pytest.raises(ValueError):
        A.stage_of(-0.1)


def test_bins_are_left_closed_and_last_holds_one():
    assert A.ffp_bin(0.05, 0.1) == 0
    assert A.ffp_bin(3 / 10, 0.1) == 3  # 0.3 starts bin [0.3, 0.4) despite floating point
    assert A.ffp_bin(0.1, 0.1) == 1
    assert A.ffp_bin(1.0, 0.1) == 9  # FFP 1.0 is in [0.9, 1.0]
    assert A.ffp_bin(3 / 5, 0.2) == 3  # 0.6 / 0.2 = 2.9999... in floating point, still bin 3
    assert A.ffp_bin(0.4, 0.2) == 2
    assert A.bin_labels(0.2) == ["0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0"]
    assert len(A.bin_labels(0.1)) == 10
    with pytest.raises(ValueError):
        A.bin_labels(0.3)


def test_incorrect_rate_by_bin_hand_case():
    ffps = [0.25, 0.25, 0.6, 1.0, None, 0.25]
    correct = [F, T, F, T, F, None]  # the None-FFP and the unscored output are skipped
    rows = A.incorrect_rate_by_ffp_bin(ffps, correct, 0.1)
    by = {r["bin"]: r for r in rows}
    # bin [0.2, 0.3): two outputs, one incorrect -> 0.5
    assert (by["0.2-0.3"]["n"], by["0.2-0.3"]["incorrect"], by["0.2-0.3"]["rate"]) == (2, 1, 0.5)
    assert (by["0.6-0.7"]["n"], by["0.6-0.7"]["rate"]) == (1, 1.0)
    assert (by["0.9-1.0"]["n"], by["0.9-1.0"]["rate"]) == (1, 0.0)
    assert by["0.0-0.1"]["rate"] is None and by["0.0-0.1"]["n"] == 0
    assert sum(r["n"] for r in rows) == 4


def test_far_by_bin_hand_case():
    ffps = [0.25, 0.2, 0.6, 1.0, None]
    fars = [2 / 3, 0.5, 0.5, None, None]
    correct = [F, T, F, T, T]
    rows = A.far_by_ffp_bin(ffps, fars, correct, 0.2)
    b1 = rows[1]  # [0.2, 0.4): 0.25 (FAR 2/3, incorrect) and 0.2 (FAR 1/2, correct)
    assert b1["n"] == 2 and math.isclose(b1["far"], (2 / 3 + 0.5) / 2)  # = 7/12
    assert math.isclose(b1["far_correct"], 0.5) and math.isclose(b1["far_incorrect"], 2 / 3)
    b3 = rows[3]  # [0.6, 0.8): 0.6 (FAR 1/2, incorrect)
    assert (b3["n"], b3["far"], b3["n_correct"], b3["far_correct"], b3["far_incorrect"]) == (1, 0.5, 0, None, 0.5)
    assert rows[4]["n"] == 0 and rows[4]["far"] is None  # FFP 1.0 has no FAR


def test_stage_shares_over_failed_outputs():
    ffps = [0.2, 0.25, 0.5, 0.8, 1.0, None, None]
    s = A.stage_shares(ffps)
    # 5 failed outputs: early 2, mid 1, late 2 -> 40%, 20%, 40%; two without a failure
    assert s["counts"] == {"early": 2, "mid": 1, "late": 2}
    assert s["n_failed"] == 5 and s["no_ffp"] == 2
    assert s["shares"] == {"early": 0.4, "mid": 0.2, "late": 0.4}
    assert A.stage_shares([None])["shares"] == {"early": None, "mid": None, "late": None}


def test_paired_table_hand_case():
    a = [T, T, F, F, F, T]
    b = [T, F, T, F, F, T]
    assert A.paired_table(a, b) == {"both_correct": 2, "a_only": 1, "b_only": 1, "both_wrong": 2, "n": 6}


def test_transition_matrix_hand_case():
    m = A.transition_matrix(["early", "early", "mid", "no_ffp"], ["no_ffp", "late", "late", "no_ffp"])
    assert m["labels"] == ["no_ffp", "early", "mid", "late"]
    assert m["counts"] == [[1, 0, 0, 0],
                           [1, 0, 0, 1],
                           [0, 0, 0, 1],
                           [0, 0, 0, 0]]
    assert m["row_sums"] == [1, 2, 1, 0] and m["col_sums"] == [2, 0, 0, 2] and m["n"] == 4
    with pytest.raises(ValueError):
        A.transition_matrix(["early"], ["sideways"])


def test_compare_runs_selects_discordant_inputs():
    # A = GRPO (rows), B = MRPO (columns), keyed by input
    a = {"q1": {"correct": F, "ffp": 0.2}, "q2": {"correct": F, "ffp": 0.5}, "q3": {"correct": T, "ffp": None},
         "q4": {"correct": T, "ffp": 0.9}, "q5": {"correct": None, "ffp": 0.1}, "q6": {"correct": F, "ffp": 0.3}}
    b = {"q1": {"correct": T, "ffp": None}, "q2": {"correct": T, "ffp": 0.8}, "q3": {"correct": F, "ffp": 0.75},
         "q4": {"correct": T, "ffp": None}, "q5": {"correct": T, "ffp": None}, "q7": {"correct": T, "ffp": None}}
    r = A.compare_runs(a, b)
    assert r["paired_table"] == {"both_correct": 1, "a_only": 1, "b_only": 2, "both_wrong": 0, "n": 4}
    # B-only-correct: q1 early -> no_ffp, q2 mid -> late
    m = r["transitions_b_only_correct"]["counts"]
    assert m[1][0] == 1 and m[2][3] == 1 and r["transitions_b_only_correct"]["n"] == 2
    # A-only-correct: q3 no_ffp -> late
    assert r["transitions_a_only_correct"]["counts"][0][3] == 1
    assert (r["only_in_a"], r["only_in_b"], r["unscored_pairs"]) == (1, 1, 1)


def test_paper_table12_row_percentages():
    """The report's row percentages reproduce MRPO Table 12's highlighted Early row:
    47/154 = 30.5%, 11/154 = 7.1%, 27/154 = 17.5%, 69/154 = 44.8%."""
    from medrl.eval.workflows import _matrix_table

    counts = [[209, 8, 17, 46], [47, 11, 27, 69], [91, 24, 33, 35], [138, 17, 42, 61]]
    stages_a, stages_b = [], []
    for i, row in enumerate(counts):
        for j, v in enumerate(row):
            stages_a += [A.STAGES_WITH_NONE[i]] * v
            stages_b += [A.STAGES_WITH_NONE[j]] * v
    m = A.transition_matrix(stages_a, stages_b)
    assert m["row_sums"] == [280, 154, 183, 258] and m["col_sums"] == [485, 60, 119, 211] and m["n"] == 875
    _, body = _matrix_table(m, "GRPO", "MRPO", "row")
    assert body[1][1:5] == ["47 (30.5%)", "11 (7.1%)", "27 (17.5%)", "69 (44.8%)"]
    _, body = _matrix_table(m, "GRPO", "MRPO", "sum")
    assert body[-1] == ["SUM", "485 (55.4%)", "60 (6.9%)", "119 (13.6%)", "211 (24.1%)", 875]


def test_paper_table13_sum_row():
    """MRPO Table 13's highlighted SUM row: 364 (47.4%), 67 (8.7%), 145 (18.9%), 192 (25.0%) of 768."""
    from medrl.eval.workflows import _matrix_table

    counts = [[252, 25, 66, 105], [11, 13, 6, 31], [35, 18, 57, 13], [66, 11, 16, 43]]
    sa, sb = [], []
    for i, row in enumerate(counts):
        for j, v in enumerate(row):
            sa += [A.STAGES_WITH_NONE[i]] * v
            sb += [A.STAGES_WITH_NONE[j]] * v
    m = A.transition_matrix(sa, sb)
    _, body = _matrix_table(m, "GRPO", "MRPO", "sum")
    assert body[-1] == ["SUM", "364 (47.4%)", "67 (8.7%)", "145 (18.9%)", "192 (25.0%)", 768]
    assert m["row_sums"] == [448, 61, 123, 136]
