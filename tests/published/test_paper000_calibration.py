"""Paper 000, Table 12 (BS_pi) against Table 4 (raw Brier) and Table 1 (observed prevalence); M0.7, M0.14.

BS_pi = (1 - pi) B_N + pi B_P is linear in pi (Eq. 6), and at the observed prevalence it is the
raw Brier score.  So each Table 12 row, three rounded points on one line, must meet its Table 4
Brier at pi_obs = n_TB / n (Table 1).  Witnesses: a least-squares line (numpy), an exact
feasibility check over the rounding intervals (scipy ``linprog``), and medaudit's own
``brier_score`` on a two-point cohort built from the feasible class errors, which must print
every Table 12 and Table 4 value to the digit.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from medaudit.stats import brier_score
from tests.published import HALF, load

TABLE4 = load("paper000_table4_clinical.csv")
TABLE12 = load("paper000_table12_brier_pi.csv")
COUNTS = load("paper000_table1_cohorts.csv").pivot(index="cohort", columns="quantity", values="value")
ROWS = [(r.cohort, r.model) for r in TABLE4.itertuples()]


def _row(cohort, model):
    t12 = TABLE12[(TABLE12.cohort == cohort) & (TABLE12.model == model)]
    brier = TABLE4.set_index(["cohort", "model"]).loc[(cohort, model), "brier"]
    n_tb, n_non = int(COUNTS.loc[cohort, "n_tb"]), int(COUNTS.loc[cohort, "n_non_tb"])
    return t12.prevalence.to_numpy(), t12.bs_pi.to_numpy(), float(brier), n_tb, n_non


def test_table12_rows_are_lines_that_meet_table4_at_the_observed_prevalence():
    devs = {}
    for cohort, model in ROWS:
        pi, bs, brier, n_tb, n_non = _row(cohort, model)
        slope, intercept = np.polyfit(pi, bs, 1)
        assert np.abs(bs - (intercept + slope * pi)).max() <= HALF[3]  # three rounded points, one line
        devs[cohort, model] = intercept + slope * n_tb / (n_tb + n_non) - brier
    worst = max(devs, key=lambda k: abs(devs[k]))
    # all 16 rows within 0.00075 (the "0.0007" is this maximum, rounded); the largest is
    # Montgomery/CheXficient: the line gives 0.13375 where Table 4 prints 0.133
    assert max(abs(d) for d in devs.values()) <= 0.00075
    assert worst == ("montgomery", "CheXficient") and devs[worst] == pytest.approx(0.000746, abs=1e-6)


def _class_errors(pi, bs, brier, pi_obs):
    """(B_N, B_P) deepest inside every rounding interval: max t with |BS(pi_j) - v_j| <= h - t."""
    pts = [*zip(pi, bs, strict=True), (pi_obs, brier)]
    a_ub, b_ub = [], []
    for p, v in pts:
        a_ub += [[1 - p, p, 1.0], [-(1 - p), -p, 1.0]]
        b_ub += [v + HALF[3], -(v - HALF[3])]
    res = linprog([0.0, 0.0, -1.0], A_ub=a_ub, b_ub=b_ub, bounds=[(0, 1), (0, 1), (None, None)])
    assert res.status == 0
    return res.x


@pytest.mark.parametrize(("cohort", "model"), ROWS, ids=[f"{c}-{m}" for c, m in ROWS])
def test_one_pair_of_class_errors_prints_table12_and_table4(cohort, model):
    pi, bs, brier, n_tb, n_non = _row(cohort, model)
    b_neg, b_pos, margin = _class_errors(pi, bs, brier, n_tb / (n_tb + n_non))
    assert margin > 1e-4  # strictly inside: the printed numbers are mutually consistent
    # BS_pi depends on the scores only through B_P and B_N, so a cohort of Table 1's size whose
    # positives all score 1 - sqrt(B_P) and negatives sqrt(B_N) stands for the real one
    y = np.r_[np.ones(n_tb), np.zeros(n_non)]
    s = np.r_[np.full(n_tb, 1 - np.sqrt(b_pos)), np.full(n_non, np.sqrt(b_neg))]
    assert round(brier_score(y, s), 3) == brier  # Table 4
    for p, v in zip(pi, bs, strict=True):
        assert round(brier_score(y, s, prevalence=p), 3) == v  # Table 12


def test_text_brier_differences_and_the_reversal_at_ten_percent():
    text = load("paper000_text.csv").set_index(["quantity", "cohort"])["value"]
    t12 = TABLE12.set_index(["cohort", "model", "prevalence"])["bs_pi"]
    for cohort in ("montgomery", "shenzhen", "tbx11k-val"):
        d50 = t12[cohort, "CheXficient", 0.5] - t12[cohort, "MedSigLIP", 0.5]
        assert d50 == pytest.approx(text["bs50_cx_minus_ms", cohort], abs=2 * HALF[3] + 1e-12)
        assert d50 > 0 and t12[cohort, "CheXficient", 0.1] < t12[cohort, "MedSigLIP", 0.1]
    assert text["n_cohorts_bs10_order_reversed", "primary"] == 3
