"""Paper 000, negative spectrum: Table 9 vs Table 4, its Holm p, Table 10 vs Table 11 (M0.9, M0.10).

* With |H| = |S| (800 healthy, 800 sick; Table 1), AUROC(P, H u S) is the mean of AUROC(P, H) and
  AUROC(P, S), so Table 9's two columns average to Table 4's TBX11K-val AUROC (methods.md M0.9
  [INV]); medaudit's ``roc_auc`` witnesses the identity on a cohort of Table 1's sizes.
* Holm p = 0.0004 for all four models is 4 x 1/10,001: the smallest permutation p-value under the
  (1 + b)/(1 + B) convention with B = 10,000, Holm-adjusted by medaudit's ``adjust_pvalues``.
* Table 11 is Table 10's named-group AUROC minus the no-finding AUROC; that fixes the scrambled
  OpenCLIP row of Table 10 (only one order of its three cells reproduces Table 11).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from medaudit.stats import adjust_pvalues, roc_auc
from tests.published import HALF, load

TABLE9 = load("paper000_table9_negative_spectrum.csv").set_index("model")
TABLE4 = load("paper000_table4_clinical.csv").set_index(["cohort", "model"])
COUNTS = load("paper000_table1_cohorts.csv").pivot(index="cohort", columns="quantity", values="value")
VINDR = load("paper000_table10_table11_vindr.csv")
TEXT = load("paper000_text.csv").set_index("quantity")["value"]


def test_table9_columns_average_to_table4_tbx11k_auroc():
    for model, r in TABLE9.iterrows():
        mean = (r.auroc_healthy + r.auroc_sick) / 2
        # a mean of two rounded values (+-0.0005) against a rounded value (+-0.0005)
        assert mean == pytest.approx(TABLE4.loc[("tbx11k-val", model), "auroc"], abs=2 * HALF[3] + 1e-12)
        assert r.auroc_healthy - r.auroc_sick == pytest.approx(r.loss, abs=3 * HALF[3] + 1e-12)
        assert r.loss_low < r.loss < r.loss_high
    # the abstract's range is Table 9's smallest and largest loss
    assert (TABLE9.loss.min(), TABLE9.loss.max()) == (TEXT["spectrum_loss_min"], TEXT["spectrum_loss_max"])


def test_the_invariant_holds_in_medaudit_at_table1_sizes():
    n_p, n_h, n_s = (int(COUNTS.loc["tbx11k-val", q]) for q in ("n_tb", "n_healthy", "n_sick"))
    assert n_h == n_s and n_h + n_s == COUNTS.loc["tbx11k-val", "n_non_tb"]
    rng = np.random.default_rng(9)
    pos, healthy, sick = rng.normal(1.0, 1, n_p), rng.normal(-0.5, 1, n_h), rng.normal(0.6, 1, n_s)
    pos[:20] = sick[:20]  # ties across groups count half, on both sides of the identity
    s = np.r_[pos, healthy, sick]
    y = np.r_[np.ones(n_p), np.zeros(n_h + n_s)]
    h, k = np.r_[pos, healthy], np.r_[pos, sick]
    yh = np.r_[np.ones(n_p), np.zeros(n_h)]
    assert roc_auc(y, s) == pytest.approx((roc_auc(yh, h) + roc_auc(yh, k)) / 2, rel=1e-12)
    # unequal groups weight the two AUROCs by their sizes instead: the mean is then not exact
    y2, s2 = np.r_[np.ones(n_p), np.zeros(n_h + 100)], np.r_[pos, healthy, sick[:100]]
    assert roc_auc(y2, s2) != pytest.approx(
        (roc_auc(yh, h) + roc_auc(np.r_[np.ones(n_p), np.zeros(100)], np.r_[pos, sick[:100]])) / 2, rel=1e-6)


def test_holm_p_is_four_times_the_smallest_permutation_p():
    b = int(TEXT["permutations"])
    smallest = (1 + 0) / (1 + b)  # no permuted |D*| reaches |D_obs|
    adj = adjust_pvalues([smallest] * len(TABLE9), method="holm").pvalues_adjusted
    assert np.round(adj, 4).tolist() == TABLE9.holm_p.tolist()  # 0.0004 for all four
    # without the +1 the smallest p is 0, which would print 0.0000
    assert np.round(adjust_pvalues([0 / b] * 4, method="holm").pvalues_adjusted, 4).tolist() != \
        TABLE9.holm_p.tolist()


def _t10(model):
    return VINDR[(VINDR.table == 10) & (VINDR.model == model)].set_index("group")["value"]


def test_table11_is_table10_named_minus_no_finding():
    t11 = VINDR[VINDR.table == 11]
    for r in t11.itertuples():
        t10 = _t10(r.model)
        assert t10[r.group] - t10["no_finding"] == pytest.approx(r.value, abs=3 * HALF[3] + 1e-12)
        assert r.low < r.value < r.high
    # all six medical-model named-group AUROCs are below 0.5 (Section 3.3), OpenCLIP's are not
    named = VINDR[(VINDR.table == 10) & (VINDR.group != "no_finding")]
    medical = named.model != "OpenCLIP"
    assert (named[medical].value < 0.5).all() and (named[~medical].value > 0.5).all()


def test_only_one_order_of_the_scrambled_openclip_row_reproduces_table11():
    cells = _t10("OpenCLIP")
    want = VINDR[(VINDR.table == 11) & (VINDR.model == "OpenCLIP")].set_index("group")["value"]
    fits = [order for order in itertools.permutations(cells.to_numpy())
            if all(abs(order[i] - order[0] - want[g]) <= 3 * HALF[3] + 1e-12
                   for i, g in ((1, "pneumonia"), (2, "lung_tumor")))]
    assert fits == [tuple(cells[["no_finding", "pneumonia", "lung_tumor"]])]
