"""Paper 000, operating points: Table 5 and Tables 14-17 against Table 1's class sizes (M0.7, M0.8, M0.14).

Every sensitivity is a count of Table 1's positives and every specificity a count of its
negatives, so each printed value (and each bootstrap interval endpoint: the designs resample
within label, keeping both sizes) must be k/n for some integer k.  Risk at coverage c is a count
of errors over the k retained images; the Montgomery values fit ``k = ceil(c n)`` (medaudit's
rule, via ``selective_risk``) and fit no integer count under ``round(c n)`` (M0.7 [VERIFIED]).
The retention counts of Section 3.5 follow from the point estimates, not the interval bounds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from medaudit.stats import selective_risk
from tests.published import HALF, load

COUNTS = load("paper000_table1_cohorts.csv").pivot(index="cohort", columns="quantity", values="value")
TABLE5 = load("paper000_table5_operating_points.csv")
TRANSPORT = load("paper000_tables14_17_transport.csv")
TEXT = load("paper000_text.csv")


def _text(quantity, cohort=None):
    t = TEXT[(TEXT.quantity == quantity) & ((TEXT.cohort == cohort) if cohort else True)]
    (value,) = t["value"]
    return float(value)


def _counts(value: float, n: int) -> list[int]:
    """The integers k with k / n printing as ``value`` at three decimals."""
    k = np.arange(n + 1)
    return k[np.abs(k / n - value) <= HALF[3] + 1e-12].tolist()


def _sizes(cohort):
    return int(COUNTS.loc[cohort, "n_tb"]), int(COUNTS.loc[cohort, "n_non_tb"])


def test_table1_percentages_and_totals():
    for cohort in COUNTS.index:
        n_tb, n_non = _sizes(cohort)
        assert round(100 * n_tb / (n_tb + n_non), 1) == COUNTS.loc[cohort, "tb_percent"]
    original = sum(sum(_sizes(c)) for c in ("montgomery", "shenzhen", "tbx11k-val", "tbx11k-train"))
    assert original == _text("n_images_original") == 9200
    assert original + sum(_sizes("vindr")) == _text("n_images_total") == 12200
    assert _text("n_images_total") * 4 * 5 == _text("n_scores") == 244000  # models x prompt families
    assert COUNTS.loc["vindr", "n_no_finding"] + COUNTS.loc["vindr", "n_pneumonia"] <= sum(_sizes("vindr"))


def _risk_cohort(n: int, errors: int) -> tuple[np.ndarray, np.ndarray]:
    """n images, confidence strictly decreasing, the ``errors`` most confident ones wrong."""
    conf = 0.99 - np.arange(n) / (4 * n)
    y = np.ones(n)
    s = np.where(np.arange(n) < errors, 1 - conf, conf)  # s < 0.5 on a positive is an error
    return y, s


@pytest.mark.parametrize("row", range(len(TABLE5)), ids=[f"{c}-{m}" for c, m in
                                                           zip(TABLE5.cohort, TABLE5.model, strict=True)])
def test_table5_values_are_counts_and_fit_the_ceil_rule(row):
    r = TABLE5.iloc[row]
    n_tb, n_non = _sizes(r.cohort)
    n = n_tb + n_non
    assert _counts(r.se_at_sp95, n_tb) and _counts(r.sp_at_se95, n_non)
    for c, printed in ((0.8, r.risk_at_80), (0.9, r.risk_at_90)):
        k = math.ceil(round(c * n, 9))
        errors = _counts(printed, k)
        assert errors, (c, printed, k)
        y, s = _risk_cohort(n, errors[0])
        assert round(selective_risk(y, s, coverage=c), 3) == printed  # medaudit's k is ceil(c n)
        if r.cohort == "montgomery":  # 110.4 -> 110 and 124.2 -> 124 fit no count at all
            assert not _counts(printed, round(c * n))


def test_transport_values_and_interval_ends_are_counts_of_the_target():
    for r in TRANSPORT.itertuples():
        n_tb, n_non = _sizes(r.target)
        for col, n in (("se", n_tb), ("se_low", n_tb), ("se_high", n_tb),
                       ("sp", n_non), ("sp_low", n_non), ("sp_high", n_non)):
            v = getattr(r, col)
            if not np.isnan(v):
                assert _counts(v, n), (r.source, col, v, n)
    # Table 14's source constraints: 570 of 600 positives (ceil(0.95 x 600)), 5,700 of 6,000 negatives
    t14 = TRANSPORT[TRANSPORT.table == 14]
    assert (t14.loc[t14.rule == "se95", "se"] == 0.950).all()
    assert (t14.loc[t14.rule == "sp95", "sp"] == 0.950).all()
    assert _counts(0.950, 600) == [math.ceil(round(0.95 * 600, 9))] and 5700 in _counts(0.950, 6000)


def test_the_reordered_vindr_openclip_row_is_the_only_count_consistent_one():
    t15 = TRANSPORT[TRANSPORT.table == 15]
    r = t15[(t15.target == "vindr") & (t15.model == "OpenCLIP")].iloc[0]
    n_tb, n_non = _sizes("vindr")
    assert _counts(r.se, n_tb) == [153] and 281 in _counts(r.sp, n_non)  # 0.933 x 164, 0.099 x 2,836
    assert not _counts(r.sp, n_tb)  # as printed (0.099 first) it would be a sensitivity: 16.2 of 164


def test_retention_counts_use_point_estimates():
    t15, t16, t17 = (TRANSPORT[TRANSPORT.table == t] for t in (15, 16, 17))
    assert ((t15.se >= 0.95) == (t15.retains == "Yes")).all()
    assert ((t17.sp >= 0.95) == (t17.retains == "Yes")).all()
    assert len(t15) == _text("n_se_transports") and (t15.se >= 0.95).sum() == _text("n_se_retained") == 4
    assert len(t16) == _text("n_shenzhen_transports")
    assert (t16.se >= 0.95).sum() == _text("n_shenzhen_retained")
    assert (t17.sp >= 0.95).sum() == _text("n_sp_retained") == 11
    assert (t17.se.min(), t17.se.max()) == (_text("sp_rule_se_min"), _text("sp_rule_se_max"))
    # a lower-confidence-bound rule would retain two, not four (Section 2.8: it is not the rule)
    assert (t15.se_low >= 0.95).sum() == 2
    # Table 16: MedSigLIP on Montgomery prints 0.948 = 55/58, below 0.95 -> not retained
    assert _counts(0.948, 58) == [55] and 55 / 58 < 0.95


def test_vindr_named_group_specificities():
    n_pn, n_tu = int(COUNTS.loc["vindr", "n_pneumonia"]), int(COUNTS.loc["vindr", "n_lung_tumor"])
    assert round(_text("vindr_sp_pneumonia_count") / n_pn, 3) == _text("vindr_sp_pneumonia")
    assert round(_text("vindr_sp_lung_tumor_count") / n_tu, 3) == _text("vindr_sp_lung_tumor")
