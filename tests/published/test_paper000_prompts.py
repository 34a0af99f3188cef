"""Paper 000, prompt families: Figure 2 against Table 6, its 21 stars, and Table 7's counts (M0.10, M0.14).

* Figure 2's delta AUROC is an alternative family's AUROC minus Clinical's (Table 6); three
  rounded numbers, so each of the 64 cells agrees within 3 x 0.0005.
* The stars: 21 of the 48 primary contrasts survive Benjamini-Hochberg at q = 0.05, 24 pass the
  unadjusted 0.05 (Section 3.2).  The paper prints no p-value and a p-value cannot be rebuilt
  from a delta (the paired DeLong variance needs the per-image scores), so the stars are not
  recomputable; what the text does fix is checked with medaudit's ``adjust_pvalues``: the two
  counts are jointly possible under BH, and they imply that every starred contrast had
  p <= 21 q / 48 and every other one p > 22 q / 48.
* Table 7: the text's counts (5/12 AUROC up, 8/12 Brier down) and its quoted OpenCLIP interval
  hold only with the last row's two columns swapped back (methods.md M0.14 [RECON]).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.stats import adjust_pvalues
from tests.published import HALF, REFERENCE, load

FIG2 = load("paper000_figure2_delta_auroc.csv")
TABLE6 = pd.concat([pd.read_csv(REFERENCE / "paper000_table6_auroc.csv", comment="#"),
                    load("paper000_table6_auroc_extension.csv").drop(columns="source")],
                   ignore_index=True).set_index(["cohort", "model", "prompt"])["auroc"]
TEXT = load("paper000_text.csv")


def _text(quantity, cohort=None, model=None):
    t = TEXT[TEXT.quantity == quantity]
    if cohort is not None:
        t = t[t.cohort == cohort]
    if model is not None:
        t = t[t.model == model]
    (value,) = t["value"]
    return float(value)


def test_figure2_deltas_are_table6_differences():
    assert len(TABLE6) == 100 and not TABLE6.index.duplicated().any()  # all 100 Table 6 cells
    assert len(FIG2) == 64
    diff = np.array([TABLE6[r.cohort, r.model, r.prompt] - TABLE6[r.cohort, r.model, "clinical"]
                     for r in FIG2.itertuples()])
    gap = np.abs(FIG2["delta_auroc"].to_numpy() - diff)
    assert gap.max() <= 3 * HALF[3] + 1e-12
    # the deltas come from unrounded AUROCs: 14 of the 64 cells differ from the subtraction of
    # the rounded Table 6 values, none by more than 0.001
    assert int((gap > 1e-9).sum()) == 14 and gap.max() == pytest.approx(0.001, abs=1e-9)


def test_figure2_stars_count_and_bh_consistency():
    primary = FIG2[FIG2.cohort != "vindr"]
    assert FIG2.loc[FIG2.cohort == "vindr", "bh_star"].isna().all()  # panel (d): no test family
    stars = primary["bh_star"].astype(int).to_numpy()
    per_panel = primary.groupby("cohort", sort=False)["bh_star"].sum().astype(int).to_dict()
    assert per_panel == {"montgomery": 2, "shenzhen": 11, "tbx11k-val": 8}
    m, q = int(_text("n_prompt_contrasts")), _text("bh_q")
    assert len(primary) == m == 48 and stars.sum() == _text("n_prompt_contrasts_bh") == 21
    n_unadjusted = int(_text("n_prompt_contrasts_unadjusted"))
    # the most extreme p-values the published counts allow: starred at 21 q / m, three more
    # between 24 q / m and 0.05 (24 below 0.05 in all), the rest above 0.05
    p = np.where(stars == 1, 21 * q / m, 0.5)
    unstarred = np.flatnonzero(stars == 0)
    p[unstarred[: n_unadjusted - 21]] = [0.0251, 0.03, 0.049]
    res = adjust_pvalues(p, method="bh", alpha=q)
    assert (p < q).sum() == n_unadjusted
    np.testing.assert_array_equal(res.reject, stars == 1)  # exactly the starred cells
    # and the bounds are sharp: a starred p just above 21 q / m, or an unstarred one at
    # 22 q / m, changes the count, so neither can have been printed with these stars
    over = p.copy()
    over[np.flatnonzero(stars == 1)[0]] = 21 * q / m + 1e-9
    assert adjust_pvalues(over, method="bh", alpha=q).reject.sum() < 21
    under = p.copy()
    under[unstarred[0]] = 22 * q / m
    assert adjust_pvalues(under, method="bh", alpha=q).reject.sum() == 22


def test_text_prompt_aurocs_are_table6_cells():
    for r in TEXT[TEXT.quantity.str.match(r"auroc_(clinical|report|presence|normal)$")].itertuples():
        assert TABLE6[r.cohort, r.model, r.quantity.removeprefix("auroc_")] == r.value, r.source


def _table7_counts(t7):
    positive = int((t7.d_auroc > 0).sum())
    zero = int((t7.d_auroc == 0).sum())  # a printed 0.000 may be a small positive
    return positive, positive + zero, int((t7.d_brier < 0).sum())


def test_table7_counts_need_the_last_row_swapped():
    printed = load("paper000_table7_prompt_average.csv")
    cells, up, down = _text("n_average_cells"), _text("n_average_auroc_up"), _text("n_average_brier_down")
    assert len(printed) == cells == 12
    lo, hi, brier_down = _table7_counts(printed)
    assert hi < up and brier_down != down  # as printed, neither count of Section 3.2 can hold
    swapped = printed.copy()
    last = swapped.index[-1]
    a, b = ["d_auroc", "d_auroc_low", "d_auroc_high"], ["d_brier", "d_brier_low", "d_brier_high"]
    swapped.loc[last, a + b] = printed.loc[last, b + a].to_numpy()
    lo, hi, brier_down = _table7_counts(swapped)
    assert brier_down == down == 8
    # 5 up needs the one printed 0.000 (TBX11K val./CheXficient) to be a positive below 0.0005
    assert (lo, hi) == (4, 5) and up == 5
    row = swapped.loc[last]
    quoted = [_text(f"average_d_auroc{s}", "tbx11k-val", "OpenCLIP") for s in ("", "_low", "_high")]
    assert [row.d_auroc, row.d_auroc_low, row.d_auroc_high] == quoted  # "+0.024 ... -0.007 to 0.055"
    for t in (printed, swapped):  # every point estimate inside its interval either way
        assert ((t.d_auroc_low <= t.d_auroc) & (t.d_auroc <= t.d_auroc_high)).all()
        assert ((t.d_brier_low <= t.d_brier) & (t.d_brier <= t.d_brier_high)).all()
