"""The multiplicity methods added beside Holm/BH: Hochberg, Hommel, Sidak, Holm-Sidak (against
R's p.adjust and the Sidak formulas written out in R, tests/reference/multiplicity_R.csv) and
the two-stage BH / BKY procedures (against a loop over their definition)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from medaudit.stats import adjust_pvalues
from tests import _oracles as O

REF = pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "multiplicity_R.csv",
                  comment="#")


@pytest.mark.r_reference
@pytest.mark.parametrize("family", sorted(set(REF.family)))
@pytest.mark.parametrize("method", ["hochberg", "hommel", "sidak", "holm_sidak"])
def test_matches_R(family, method):
    d = REF[REF.family == family].sort_values("index")
    got = adjust_pvalues(d.p, method=method).pvalues_adjusted
    np.testing.assert_allclose(got, d[method], rtol=1e-12, atol=1e-15)


def _bh_loop(p):
    return np.array(O.bh(p))


def _two_stage(p, alpha, bky):
    """Two-stage BH (Benjamini, Krieger & Yekutieli 2006) adjusted p-values, by definition.

    Stage 1: BH at q1 = alpha / (1 + alpha) (BKY) or alpha (BH variant) gives r1 rejections;
    m0 = m - r1 estimates the true nulls; the stage-2 BH adjusted values are scaled by
    m0 / m (and by 1 + alpha for BKY), capped at 1.  With r1 = 0 or m the first stage stands.
    """
    p = np.asarray(p, float)
    m = p.size
    fact = 1.0 + alpha if bky else 1.0
    adj = _bh_loop(p)
    r1 = int((adj <= alpha / fact).sum())
    if r1 in (0, m):
        return np.minimum(adj * fact, 1.0)
    return np.minimum(adj * (m - r1) / m * fact, 1.0)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("bky", [False, True])
def test_two_stage_against_definition(seed, bky):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 25))
    p = np.where(rng.random(m) < 0.4, rng.random(m) * 0.01, rng.random(m))
    alpha = float(rng.choice([0.05, 0.1, 0.2]))
    r = adjust_pvalues(p, method="bky_two_stage" if bky else "bh_two_stage", alpha=alpha)
    np.testing.assert_allclose(r.pvalues_adjusted, _two_stage(p, alpha, bky), rtol=1e-12)
    assert (r.reject == (r.pvalues_adjusted <= alpha)).all()


@given(st.lists(st.floats(0, 1), min_size=1, max_size=15))
def test_orderings(ps):
    p = np.array(ps)
    get = {m: adjust_pvalues(p, method=m).pvalues_adjusted
           for m in ("bonferroni", "sidak", "holm", "holm_sidak", "hochberg", "hommel", "bh")}
    tol = 1e-12
    assert (get["sidak"] <= get["bonferroni"] + tol).all()
    assert (get["holm_sidak"] <= get["holm"] + tol).all()
    assert (get["hochberg"] <= get["holm"] + tol).all()
    assert (get["hommel"] <= get["hochberg"] + tol).all()
    assert (get["bh"] <= get["hochberg"] + tol).all()
    for v in get.values():
        assert (v >= p - tol).all() and (v <= 1 + tol).all()


def test_nan_policies_carry_over():
    p = [0.01, float("nan"), 0.03, 0.2]
    omit = adjust_pvalues(p, method="hochberg")
    assert omit.m == 3 and np.isnan(omit.pvalues_adjusted[1])
    count = adjust_pvalues(p, method="hochberg", nan_policy="count")
    assert count.m == 4
    np.testing.assert_allclose(count.pvalues_adjusted[[0, 2, 3]],
                               adjust_pvalues([0.01, 0.03, 0.2, 1.0], method="hochberg")
                               .pvalues_adjusted[:3])
