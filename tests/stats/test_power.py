"""Sample size and power.

Witnesses: pROC 1.18 ``power.roc.test`` — one curve (auc, kappa; size and power, both
alternatives) and two paired curves from pilot data (size and power; DeLong) —
(tests/reference/power_pROC.csv); brute-force binomial sums for the exact plans; the
resolution rule by hand and by simulation of its own assumption.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from medaudit.exceptions import MedauditError
from medaudit.stats import (
    auc_power,
    auc_sample_size,
    auc_variance,
    cases_to_resolve,
    cases_to_resolve_proportion,
    paired_auc_power,
    paired_auc_sample_size,
    proportion_ci,
    proportion_sample_size,
    se_sp_sample_size,
)

REF = Path(__file__).resolve().parents[1] / "reference"
POWER = pd.read_csv(REF / "power_pROC.csv", comment="#", keep_default_na=False)
DATA = pd.read_csv(REF / "peers_pROC_data.csv", comment="#")
ALT = {"two.sided": "two-sided", "one.sided": "one-sided"}


@pytest.mark.r_reference
@pytest.mark.parametrize("row", list(POWER.itertuples(index=False)),
                         ids=lambda r: f"{r.question}-{r.dataset}-{r.auc:.3f}-{r.kappa:.2f}-"
                                       f"{r.alternative}-{r.power:.3f}")
def test_matches_pROC(row):
    alt = ALT[row.alternative]
    if row.question == "one_curve_n":
        s = auc_sample_size(row.auc, alpha=row.sig_level, power=row.power, kappa=row.kappa,
                            alternative=alt)
        assert s.n_pos_exact == pytest.approx(row.ncases, rel=1e-12)
        assert s.n_neg_exact == pytest.approx(row.ncontrols, rel=1e-12)
        assert (s.n_pos, s.n_neg) == (math.ceil(row.ncases), math.ceil(row.ncontrols))
    elif row.question == "one_curve_power":
        got = auc_power(row.auc, n_pos=row.ncases, n_neg=row.ncontrols, alpha=row.sig_level,
                        alternative=alt)
        assert got == pytest.approx(row.power, rel=1e-12)
    else:
        d = DATA[DATA.dataset == row.dataset].sort_values("item")
        args = (d.y_true, d.score_a, d.score_b)
        if row.question == "two_curves_n":
            s = paired_auc_sample_size(*args, alpha=row.sig_level, power=row.power,
                                       alternative=alt)
            assert s.n_pos_exact == pytest.approx(row.ncases, rel=1e-9)
            assert s.n_neg_exact == pytest.approx(row.ncontrols, rel=1e-9)
            assert s.inputs["delta"] == pytest.approx(row.auc, rel=1e-12)
        else:
            got = paired_auc_power(*args, alpha=row.sig_level, alternative=alt)
            assert got == pytest.approx(row.power, rel=1e-9)


def test_obuchowski_variance_by_hand():
    assert auc_variance(0.5, kappa=2.0) == pytest.approx(0.0792 * 1.5, rel=1e-14)
    a = 1.414 * stats.norm.ppf(0.8)
    want = 0.0099 * math.exp(-a * a / 2) * ((5 * a * a + 8) + (a * a + 8) / 1.7)
    assert auc_variance(0.8, kappa=1.7) == pytest.approx(want, rel=1e-14)


def test_general_null_and_hanley_mcneil():
    s = auc_sample_size(0.85, auc_null=0.75, power=0.8)
    v0, va = auc_variance(0.75), auc_variance(0.85)
    want = (stats.norm.isf(0.025) * math.sqrt(v0) + stats.norm.ppf(0.8) * math.sqrt(va)) ** 2 / 0.01
    assert s.n_pos_exact == pytest.approx(want, rel=1e-12)
    assert s.power >= 0.8
    h = auc_sample_size(0.85, auc_null=0.75, power=0.8, method="hanley_mcneil", kappa=2.0)
    # the solved size makes the power equation hold exactly
    n1 = h.n_pos_exact
    gap = (stats.norm.isf(0.025) * math.sqrt(auc_variance(0.75, kappa=2, method="hanley_mcneil",
                                                          n_pos=n1))
           + stats.norm.ppf(0.8) * math.sqrt(auc_variance(0.85, kappa=2, method="hanley_mcneil",
                                                          n_pos=n1)))
    assert gap == pytest.approx(0.1, rel=1e-9)
    assert auc_power(0.85, n_pos=h.n_pos, n_neg=h.n_neg, auc_null=0.75,
                     method="hanley_mcneil") >= 0.8


def _brute_power(n, p1, p0, a):
    """Power of the one-sided exact test by explicit binomial sums."""
    def tail(k, p):  # P(X >= k)
        return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k, n + 1))
    k = next((k for k in range(n + 2) if tail(k, p0) <= a), n + 1)
    return tail(k, p1) if k <= n else 0.0


def test_exact_plan_against_brute_force():
    n, n_stable, pw = proportion_sample_size(0.95, 0.85, alpha=0.05, power=0.8)
    powers = [_brute_power(m, 0.95, 0.85, 0.025) for m in range(1, 2 * n + 1)]
    assert powers[n - 1] >= 0.8 > max(powers[: n - 1])
    assert pw == pytest.approx(powers[n - 1], rel=1e-9)
    assert all(p >= 0.8 for p in powers[n_stable - 1:]) and powers[n_stable - 2] < 0.8
    # the sawtooth is real: somewhere after n the power dips below target again
    assert n_stable > n and min(powers[n - 1:n_stable - 1]) < 0.8


def test_exact_test_is_the_clopper_pearson_bound():
    # at the critical count the one-sided CP lower bound just exceeds the claim
    n, p0, a = 60, 0.8, 0.025
    k = next(k for k in range(n + 1) if stats.binom.sf(k - 1, n, p0) <= a)
    lo_k = proportion_ci(k, n, method="clopper_pearson", confidence_level=0.95).ci_low
    lo_km1 = proportion_ci(k - 1, n, method="clopper_pearson", confidence_level=0.95).ci_low
    assert lo_km1 <= p0 < lo_k


def test_se_sp_plan_and_prevalence():
    s = se_sp_sample_size(0.95, 0.90, min_sensitivity=0.85, min_specificity=0.80,
                          prevalence=0.2)
    assert (s.n_pos, s.n_neg) == (proportion_sample_size(0.95, 0.85)[1],
                                  proportion_sample_size(0.90, 0.80)[1])
    assert s.n_total == max(math.ceil(s.n_pos / 0.2), math.ceil(s.n_neg / 0.8))
    assert s.n_total * 0.2 >= s.n_pos and s.n_total * 0.8 >= s.n_neg
    j = se_sp_sample_size(0.95, 0.90, min_sensitivity=0.85, min_specificity=0.80, joint=True)
    assert j.power >= 0.8 and j.n_pos >= s.n_pos
    with pytest.raises(MedauditError, match="exceed"):
        proportion_sample_size(0.8, 0.85)


def test_resolution_rule_by_hand():
    r = cases_to_resolve(0.83, 0.78, 0.88, claim_value=0.8, n_pos=60, n_neg=140)
    assert r.status == "unresolved" and r.direction == "holds"
    assert r.factor == pytest.approx((0.05 / 0.03) ** 2, rel=1e-12)
    assert (r.additional_pos, r.additional_neg) == (math.ceil(60 * r.factor) - 60,
                                                    math.ceil(140 * r.factor) - 140)
    # the other side: estimate below the claim, the upper end must come under it
    r = cases_to_resolve(0.77, 0.72, 0.81, claim_value=0.8, n_pos=50, n_neg=50,
                         scales_with="positives")
    assert r.direction == "does not hold" and r.factor == pytest.approx((0.04 / 0.03) ** 2)
    assert r.additional_neg == 0
    # already resolved, and never resolvable at this effect
    assert cases_to_resolve(0.9, 0.85, 0.95, claim_value=0.8, n_pos=5, n_neg=5).status == "holds"
    assert cases_to_resolve(0.7, 0.6, 0.75, claim_value=0.8, n_pos=5, n_neg=5).status == \
        "does not hold"
    assert cases_to_resolve(0.8, 0.7, 0.9, claim_value=0.8, n_pos=5, n_neg=5).status == "never"
    # a "less" claim mirrors it
    r = cases_to_resolve(0.12, 0.05, 0.2, claim_value=0.15, claim="less", n_pos=10, n_neg=10)
    assert r.direction == "holds" and r.factor == pytest.approx((0.08 / 0.03) ** 2)
    # asking for 80 % power multiplies the factor by ((z + z_beta) / z)^2
    p80 = cases_to_resolve(0.83, 0.78, 0.88, claim_value=0.8, n_pos=60, n_neg=140, power=0.8)
    z, zb = stats.norm.isf(0.025), stats.norm.ppf(0.8)
    assert p80.factor == pytest.approx((0.05 / 0.03) ** 2 * ((z + zb) / z) ** 2, rel=1e-12)


def test_resolution_rule_holds_under_its_own_assumption():
    # a Wald interval for a mean with sd 1: at the factor f the expected lower bound hits v,
    # and with power=0.8 about 80 % of intervals at the new size clear it
    rng = np.random.default_rng(0)
    n, est, sd, v = 100, 0.15, 1.0, 0.0  # interval [-0.046, 0.346]: open
    half = 1.959963984540054 * sd / math.sqrt(n)
    r = cases_to_resolve(est, est - half, est + half, claim_value=v, n_pos=n, n_neg=0,
                         scales_with="positives", power=0.8)
    assert r.status == "unresolved"
    n_new = n + r.additional_pos
    means = rng.normal(est, sd / math.sqrt(n_new), size=20000)
    frac = np.mean(means - 1.959963984540054 * sd / math.sqrt(n_new) > v)
    assert abs(frac - 0.8) < 0.01


def test_resolution_for_a_proportion_is_exact():
    r = cases_to_resolve_proportion(45, 50, claim_value=0.8)
    n_new = 50 + r.additional_pos
    assert proportion_ci(0.9 * n_new, n_new, method="clopper_pearson").ci_low > 0.8
    assert proportion_ci(0.9 * (n_new - 1), n_new - 1, method="clopper_pearson").ci_low <= 0.8
    assert r.direction == "holds" and r.additional_neg == 0
    low = cases_to_resolve_proportion(70, 100, claim_value=0.75)
    assert low.direction == "does not hold"
    m = 100 + low.additional_pos
    assert proportion_ci(0.7 * m, m, method="clopper_pearson").ci_high < 0.75
    done = cases_to_resolve_proportion(95, 100, claim_value=0.8)
    assert done.status == "holds" and done.additional_pos == 0


def test_bad_inputs():
    with pytest.raises(MedauditError, match="auc_null"):
        auc_sample_size(0.5)
    with pytest.raises(MedauditError, match="kappa"):
        auc_sample_size(0.8, kappa=0)
    with pytest.raises(MedauditError, match="alternative"):
        auc_sample_size(0.8, alternative="greater")
    with pytest.raises(MedauditError, match="ci_low"):
        cases_to_resolve(0.8, 0.85, 0.9, claim_value=0.7, n_pos=1, n_neg=1)
    y = [0, 1, 0, 1]
    with pytest.raises(MedauditError, match="equal"):
        paired_auc_sample_size(y, [0.1, 0.9, 0.2, 0.8], [0.1, 0.9, 0.2, 0.8])
    # probe finding: an infinite n_pos was blamed on kappa, which the caller never passed
    for n_pos, n_neg in ((math.inf, 10), (10, math.nan), ("x", 10), (-1, 10), (True, 10)):
        with pytest.raises(MedauditError, match=r"n_pos and n_neg must be positive finite numbers"):
            auc_power(0.8, n_pos=n_pos, n_neg=n_neg)
    ya = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    a = [.1, .3, .2, .6, .4, .5, .7, .9, .8, .35]
    b = [.2, .1, .5, .3, .4, .45, .6, .7, .55, .25]
    for n_pos in (math.inf, -5, 0, "x", True):  # inf gave power 1.0, -5 a math domain error
        with pytest.raises(MedauditError, match="n_pos must be a positive finite number"):
            paired_auc_power(ya, a, b, n_pos=n_pos)


def test_results_are_plain_records():
    import json

    s = json.loads(json.dumps(auc_sample_size(0.8).to_dict()))
    assert s["question"] == "AUROC > 0.5" and s["inputs"]["kappa"] == 1.0
    r = json.loads(json.dumps(cases_to_resolve(0.83, 0.78, 0.88, claim_value=0.8, n_pos=60,
                                               n_neg=140).to_dict()))
    assert r["status"] == "unresolved" and r["inputs"]["claim"] == "greater"


@pytest.mark.parametrize("power", [1e-9, 0.1, 0.49])
def test_a_power_below_even_odds_is_refused_where_sizes_would_grow_again(power):
    # (z_alpha + z_power)^2 grows again once z_power < 0: 1e-9 asked for more cases than 0.5
    from medaudit.exceptions import MedauditError
    from medaudit.stats import auc_sample_size, cases_to_resolve

    with pytest.raises(MedauditError, match=r"power must lie in \[0.5, 1.0\)"):
        auc_sample_size(0.8, power=power)
    with pytest.raises(MedauditError, match=r"power must lie in \[0.5, 1.0\)"):
        cases_to_resolve(0.83, 0.78, 0.88, claim_value=0.8, n_pos=60, n_neg=140, power=power)
    assert auc_sample_size(0.8, power=0.5).n_pos > 0


def test_a_pilot_whose_difference_has_no_spread_is_refused_in_one_line():
    # probe finding: a perfect model against an all-tied (or reversed) one gave a bare
    # ZeroDivisionError from both paired functions
    import warnings

    y = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    perfect = [.1, .2, .3, .4, .45, .5, .6, .7, .8, .9]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DeLong's own degenerate-variance warning
        for other in ([.5] * 10, perfect[::-1]):
            with pytest.raises(MedauditError, match="DeLong variance of the AUROC difference is 0"):
                paired_auc_sample_size(y, perfect, other)
            with pytest.raises(MedauditError, match="DeLong variance of the AUROC difference is 0"):
                paired_auc_power(y, perfect, other)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "x", -5, 1.9, True])
def test_cases_to_resolve_takes_whole_counts(bad):
    # probe finding: nan/inf/'x' gave Python's own errors, -5 was echoed back, 1.9 became 1
    with pytest.raises(MedauditError, match=r"n_pos must be a whole number of cases \(0 or more\)"):
        cases_to_resolve(0.83, 0.78, 0.88, claim_value=0.8, n_pos=bad, n_neg=140)
    assert cases_to_resolve(0.83, 0.78, 0.88, claim_value=0.8, n_pos=60.0, n_neg=140).n_pos == 60
