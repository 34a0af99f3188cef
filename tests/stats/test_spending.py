"""Witnesses for medaudit.stats.spending: Lan-DeMets alpha spending by hand, group-sequential
boundaries against R's rpact (committed as tests/reference/spending_rpact.csv with the script
that made it, tests/reference/generate_spending_rpact.R), and the second boundary of two looks
against a direct numerical integration of the bivariate normal crossing probability."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from medaudit.exceptions import MedauditError
from medaudit.stats.spending import spending_bounds, spending_function

REF = Path(__file__).resolve().parents[1] / "reference"
RPACT = pd.read_csv(REF / "spending_rpact.csv", comment="#")
SPENDING = {"asOF": "obrien_fleming", "asP": "pocock"}
SIDED = {1: "one-sided", 2: "two-sided"}


# ----------------------------------------------------------------------------- spending

def test_spending_function_by_hand():
    z = stats.norm.isf(0.025 / 2)
    assert spending_function([0.25], alpha=0.025, alternative="one-sided")[0] == pytest.approx(
        2 * stats.norm.sf(z / 0.5), rel=1e-12)
    z2 = stats.norm.isf(0.05 / 4)
    assert spending_function([0.25], alpha=0.05)[0] == pytest.approx(4 * stats.norm.sf(z2 / 0.5),
                                                                     rel=1e-12)
    assert spending_function([0.3], alpha=0.05, spending="pocock")[0] == pytest.approx(
        0.05 * math.log(1 + (math.e - 1) * 0.3), rel=1e-12)
    assert spending_function([0.0, 1.0, 1.5], alpha=0.05).tolist() == [0.0, 0.05, 0.05]


@pytest.mark.r_reference
@pytest.mark.parametrize("design,spending,sided,alpha", sorted(
    set(RPACT[["design", "spending", "sided", "alpha"]].itertuples(index=False, name=None))))
def test_bounds_match_rpact(design, spending, sided, alpha):
    g = RPACT[(RPACT.design == design) & (RPACT.spending == spending) & (RPACT.sided == sided)
              & (RPACT.alpha == alpha)].sort_values("look")
    b = spending_bounds(g.information_rate.to_numpy(), alpha=alpha, spending=SPENDING[spending],
                        alternative=SIDED[sided])
    np.testing.assert_allclose(b.alpha_spent, g.alpha_spent, rtol=1e-6, atol=1e-12)
    inc = np.diff(np.r_[0.0, g.alpha_spent])
    cv = g.critical_value.to_numpy()
    # rpact solves each boundary to an absolute tolerance on the probability, so where a look
    # spends less than 1e-5 its boundary is off by up to 4e-3 (its first look at 5.6e-15 is
    # even given as Inf); those looks are checked by direct integration below instead
    ok = inc >= 1e-5
    np.testing.assert_allclose(b.bounds[ok], cv[ok], atol=1e-5, rtol=0)
    tiny = ~ok & np.isfinite(cv)
    np.testing.assert_allclose(b.bounds[tiny], cv[tiny], atol=5e-3, rtol=0)
    assert (b.bounds[np.isinf(cv)] > 7).all()


def _two_look_crossing(c1, c2, info, two_sided):
    rho = math.sqrt(info[0] / info[1])
    sd = math.sqrt(1 - rho ** 2)

    def f(z):
        up = stats.norm.sf((c2 - rho * z) / sd)
        down = stats.norm.cdf((-c2 - rho * z) / sd) if two_sided else 0.0
        return stats.norm.pdf(z) * (up + down)
    return integrate.quad(f, -c1 if two_sided else -12.0, c1, epsabs=1e-15, epsrel=1e-12,
                          limit=200)[0]


@pytest.mark.parametrize("info,fractions,spending,alt", [
    ((1.0, 8.0), None, "obrien_fleming", "two-sided"),   # a first look spending ~1e-9
    ((1.0, 3.0), (0.5, 1.0), "obrien_fleming", "two-sided"),  # spending by planned looks
    ((2.0, 3.0), (0.5, 1.0), "pocock", "one-sided"),
    ((5.0, 6.0), (0.3, 0.9), "pocock", "two-sided"),
])
def test_second_boundary_spends_its_increment_exactly(info, fractions, spending, alt):
    b = spending_bounds(info, alpha=0.05, spending=spending, fractions=fractions, alternative=alt)
    frac = np.asarray(info) / info[-1] if fractions is None else np.asarray(fractions)
    spent = spending_function(frac, alpha=0.05, spending=spending, alternative=alt)
    two = alt == "two-sided"
    assert b.bounds[0] == pytest.approx(stats.norm.isf(spent[0] / (2 if two else 1)), rel=1e-12)
    got = _two_look_crossing(b.bounds[0], b.bounds[1], info, two)
    assert got == pytest.approx(spent[1] - spent[0], rel=1e-6)


def test_bounds_refuse_bad_information():
    with pytest.raises(MedauditError, match="strictly increasing"):
        spending_bounds([1, 1, 2])
    with pytest.raises(MedauditError, match="spending='pocok' is not a valid option"):
        spending_bounds([1, 2], spending="pocok")
