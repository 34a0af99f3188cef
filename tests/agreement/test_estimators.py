"""Witnesses for the ten reliability estimators of paper 002 (methods.md M2.4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, logit
from scipy.stats import betabinom
from sklearn.linear_model import LogisticRegression

from medaudit.agreement.estimators import (
    ESTIMATORS,
    HAS,
    BetaBinomial,
    HASFixedTau,
    HASNoOffset,
    Naive,
    Pool,
    make_estimator,
)
from medaudit.exceptions import MedauditError


def _rows(seed: int = 0, n: int = 1500, n_inst: int = 3, n_find: int = 4, target: int = 2):
    """Row-level judgments with institution x finding structure (codes)."""
    g = np.random.default_rng(seed)
    d = g.integers(0, n_inst, n)
    k = g.integers(0, n_find, n)
    r = g.integers(0, 2, n)
    eta = 0.8 + 0.6 * r - 0.4 * d + 0.3 * k - 0.5 * (d == 1) * (k == 2)
    c = (g.random(n) < expit(eta)).astype(int)
    return d, k, r, c


def _row_design(d, k, r, blocks, ref):
    """Reference-coded dummies built with pandas (first sorted level of the pool dropped)."""
    frame = pd.DataFrame({"r": r, "k": k, "d": d, "dk": [f"{a}:{b}" for a, b in zip(d, k, strict=True)]})
    cols = []
    for b in blocks:
        levels = sorted(set(ref[b]))[1:]
        for lv in levels:
            cols.append((frame[b] == lv).to_numpy(float))
    return np.column_stack(cols) if cols else np.zeros((len(d), 0))


@pytest.mark.parametrize("key,blocks", [("additive", ["r", "k", "d"]),
                                        ("hdcal", ["r", "k", "d", "dk"])])
def test_aggregated_logistic_equals_row_level_sklearn(key, blocks):
    d, k, r, c = _rows()
    pool = Pool.from_rows(d, k, r, c, target=2)
    est = make_estimator(key).fit(pool)  # the paper's settings (tol 1e-4)
    tight = make_estimator(key)
    tight._tol = 1e-10
    tight.fit(pool)
    ref = {"r": r, "k": k, "d": d, "dk": [f"{a}:{b}" for a, b in zip(d, k, strict=True)]}
    X = _row_design(d, k, r, blocks, ref)
    lr = LogisticRegression(C=1.0, solver="lbfgs", max_iter=1000, tol=1e-10).fit(X, c)
    grid_d, grid_k, grid_r = np.meshgrid(np.arange(3), np.arange(4), np.arange(2), indexing="ij")
    gd, gk, gr = grid_d.ravel(), grid_k.ravel(), grid_r.ravel()
    expected = lr.predict_proba(_row_design(gd, gk, gr, blocks, ref))[:, 1]
    # same penalised likelihood, same optimum; the default stopping point differs slightly
    np.testing.assert_allclose(tight.predict(gd, gk, gr), expected, atol=1e-7)
    np.testing.assert_allclose(est.predict(gd, gk, gr), expected, atol=2e-3)
    assert est.info_["solver"] == "lbfgs" and est.info_["sklearn"]


def test_weighted_hdcal_equals_row_level_with_weights():
    d, k, r, c = _rows(seed=1)
    pool = Pool.from_rows(d, k, r, c, target=2)
    est = make_estimator("hdcal_weighted")
    est._tol = 1e-10
    est.fit(pool)
    n_shot, n_source = int((d == 2).sum()), int((d != 2).sum())
    w = np.where(d == 2, n_source / n_shot, 1.0)
    ref = {"r": r, "k": k, "d": d, "dk": [f"{a}:{b}" for a, b in zip(d, k, strict=True)]}
    blocks = ["r", "k", "d", "dk"]
    lr = LogisticRegression(C=1.0, max_iter=1000, tol=1e-10).fit(
        _row_design(d, k, r, blocks, ref), c, sample_weight=w)
    gd, gk, gr = np.full(8, 2), np.repeat(np.arange(4), 2), np.tile([0, 1], 4)
    np.testing.assert_allclose(est.predict(gd, gk, gr),
                               lr.predict_proba(_row_design(gd, gk, gr, blocks, ref))[:, 1], atol=1e-7)


def test_target_only_is_r_plus_k_on_the_shot():
    d, k, r, c = _rows(seed=2)
    pool = Pool.from_rows(d, k, r, c, target=2)
    est = make_estimator("target_only")
    est._tol = 1e-10
    est.fit(pool)
    m = d == 2
    ref = {"r": r[m], "k": k[m]}
    lr = LogisticRegression(C=1.0, max_iter=1000, tol=1e-10).fit(
        _row_design(d[m], k[m], r[m], ["r", "k"], ref), c[m])
    gd, gk, gr = np.full(8, 2), np.repeat(np.arange(4), 2), np.tile([0, 1], 4)
    np.testing.assert_allclose(est.predict(gd, gk, gr),
                               lr.predict_proba(_row_design(gd, gk, gr, ["r", "k"], ref))[:, 1],
                               atol=1e-7)
    assert est.info_["features"] == "r+k"


def test_naive_is_the_pooled_rate_by_hand():
    pool = Pool(institution=[0, 0, 1], finding=[0, 1, 0], direction=[1, 1, 0],
                n_correct=[3, 0, 5], n_total=[4, 2, 10], target=1)
    assert Naive().fit(pool).predict([1, 0], [0, 3], [1, 0]).tolist() == [0.5, 0.5]  # 8 / 16


def test_single_class_pool_falls_back_to_constant():
    pool = Pool(institution=[0, 1], finding=[0, 1], direction=[1, 0], n_correct=[5, 3],
                n_total=[5, 3], target=1)
    for key in ("additive", "hdcal", "hdcal_weighted", "target_only"):
        est = make_estimator(key).fit(pool)
        assert est.info_["fallback"] is True
        assert est.predict([1], [0], [0]).tolist() == [1.0]


def test_target_only_single_class_shot_uses_the_fold_constant():
    pool = Pool(institution=[0, 0, 1], finding=[0, 1, 0], direction=[1, 0, 1],
                n_correct=[2, 6, 4], n_total=[10, 10, 4], target=1)
    est = make_estimator("target_only").fit(pool)
    assert est.info_["fallback"] and est.predict([1], [0], [1])[0] == pytest.approx(12 / 24)


def test_separated_interaction_still_gives_finite_probabilities():
    # one (d, k) cell is all-correct while its neighbours are mixed: quasi-separation (T16)
    pool = Pool(institution=[0, 0, 1, 1, 2, 2], finding=[0, 1, 0, 1, 0, 1],
                direction=[1, 1, 1, 1, 1, 1], n_correct=[40, 10, 30, 20, 8, 0],
                n_total=[50, 50, 50, 50, 8, 6], target=2)
    est = make_estimator("hdcal").fit(pool)
    p = est.predict([2, 2], [0, 1], [1, 1])
    assert np.all((p > 0) & (p < 1)) and p[0] > 0.8 > 0.3 > p[1]
    assert est.info_["converged"] is True


def test_beta_binomial_worked_example_of_methods():
    pool = Pool(institution=[0, 0, 1, 1, 2], finding=[0, 0, 0, 0, 0], direction=[1, 0, 1, 0, 1],
                n_correct=[180, 20, 90, 10, 12], n_total=[200, 40, 100, 20, 15], target=2)
    bb = BetaBinomial().fit(pool)
    pr = bb.prior_
    assert pr.mean == pytest.approx(0.832, abs=1e-12)
    assert pr.variance == pytest.approx(0.021376, abs=1e-9)
    assert pr.concentration == pytest.approx(5.5389, abs=1e-4)
    assert (pr.alpha, pr.beta) == (pytest.approx(4.6084, abs=1e-4), pytest.approx(0.9305, abs=1e-4))
    assert bb.predict([2], [0], [1])[0] == pytest.approx(0.80863, abs=1e-5)
    # an absent target cell gets the pooled rate
    assert bb.predict([2], [0], [0])[0] == pytest.approx(0.832, abs=1e-12)


def test_beta_binomial_by_hand_on_a_tiny_table():
    # cells 3/4 and 1/4: mu = 1/2, v = (4*(1/4)^2 + 4*(1/4)^2)/8 = 1/16, kappa = (1/4)/(1/16) - 1 = 3
    pool = Pool(institution=[0, 1], finding=[0, 0], direction=[1, 1], n_correct=[3, 1],
                n_total=[4, 4], target=1)
    bb = BetaBinomial().fit(pool)
    assert (bb.prior_.alpha, bb.prior_.beta) == (pytest.approx(1.5), pytest.approx(1.5))
    assert bb.predict([1], [0], [1])[0] == pytest.approx((1.5 + 1) / (3 + 4))
    # kappa floor: identical rates give v = 0 -> guarded, kappa = huge; heterogeneous -> >= 1
    het = Pool(institution=[0, 1], finding=[0, 0], direction=[1, 1], n_correct=[10, 0],
               n_total=[10, 10], target=1)
    assert BetaBinomial().fit(het).prior_.concentration == 1.0


def test_beta_binomial_posterior_predictive_pmf_matches_scipy():
    a, b, n = 4.6084 + 12, 0.9305 + 3, 30
    y = np.arange(n + 1)
    from scipy.special import betaln, comb

    pmf = comb(n, y) * np.exp(betaln(y + a, n - y + b) - betaln(a, b))  # from the definition
    np.testing.assert_allclose(betabinom.pmf(y, n, a, b), pmf, rtol=1e-10)


def test_has_needs_two_sources():
    pool = Pool(institution=[0, 1], finding=[0, 0], direction=[1, 1], n_correct=[3, 1],
                n_total=[4, 4], target=1)
    with pytest.raises(MedauditError, match="two source institutions"):
        HAS().fit(pool)


def _has_pool(shot: bool = True) -> Pool:
    inst = [0, 0, 0, 0, 1, 1, 1, 1] + ([2, 2] if shot else [])
    find = [0, 0, 1, 1, 0, 0, 1, 1] + ([0, 1] if shot else [])
    dirn = [0, 1, 0, 1, 0, 1, 0, 1] + ([1, 1] if shot else [])
    y = [30, 10, 40, 5, 20, 8, 44, 2] + ([3, 9] if shot else [])
    n = [40, 20, 50, 10, 40, 20, 50, 10] + ([10, 10] if shot else [])
    return Pool(institution=inst, finding=find, direction=dirn, n_correct=y, n_total=n, target=2)


def test_has_shrinkage_strength_by_hand_and_zero_shot_offset():
    h = HAS().fit(_has_pool(shot=False))
    l00, l10 = logit((40 + 0.5) / 61), logit((28 + 0.5) / 61)  # finding 0 at sources 0 and 1
    l01, l11 = logit((45 + 0.5) / 61), logit((46 + 0.5) / 61)
    t0, t1 = 0.5 * (l00 - l10) ** 2, 0.5 * (l01 - l11) ** 2
    mean = (t0 + t1) / 2
    expected = np.clip([0.5 * t0 + 0.5 * mean, 0.5 * t1 + 0.5 * mean], 0.05, 25)
    np.testing.assert_allclose(h.tau2_, expected, rtol=1e-12)
    # zero shots: the prediction is the direction-stratified pooled source offset
    assert h.predict([2], [0], [1])[0] == pytest.approx((18 + 0.5) / 41, rel=1e-12)


def test_has_map_matches_a_direct_optimisation_and_ablations_differ():
    from scipy.optimize import minimize

    pool = _has_pool()
    h = HAS().fit(pool)
    o = h.offset_[[0, 1], [1, 1]]
    tau2 = h.tau2_
    y, n = np.array([3, 9]), np.array([10, 10])

    def f(t):  # delta, gamma_0, gamma_1; written from the definition, no gradient
        eta = o + t[0] + t[1:]
        ll = np.sum(y * np.log(expit(eta)) + (n - y) * np.log(expit(-eta)))
        return -ll + t[0] ** 2 / (2 * tau2.mean()) + np.sum(t[1:] ** 2 / (2 * tau2))

    t = minimize(f, np.zeros(3), method="Nelder-Mead",
                 options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}).x
    np.testing.assert_allclose(h.predict([2, 2], [0, 1], [1, 1]), expit(o + t[0] + t[1:]), atol=1e-6)
    fixed = HASFixedTau().fit(pool)
    assert np.allclose(fixed.tau2_, fixed.tau2_.mean())
    no_off = HASNoOffset().fit(pool)
    assert np.all(no_off.offset_ == 0.0)


@settings(max_examples=25)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 1),
                          st.integers(0, 1)), min_size=8, max_size=60))
def test_constant_and_beta_binomial_invariant_to_row_order(rows):
    d, k, r, c = (np.array(x) for x in zip(*rows, strict=True))
    perm = np.random.default_rng(0).permutation(len(d))
    a = Pool.from_rows(d, k, r, c, target=2)
    b = Pool.from_rows(d[perm], k[perm], r[perm], c[perm], target=2)
    for key in ("naive", "beta_binomial"):
        pa = make_estimator(key).fit(a).predict(d, k, r)
        pb = make_estimator(key).fit(b).predict(d, k, r)
        assert np.array_equal(pa, pb) and np.all((pa >= 0) & (pa <= 1))


def test_pool_rejects_duplicate_cells_and_bad_counts():
    with pytest.raises(MedauditError, match="twice"):
        Pool(institution=[0, 0], finding=[0, 0], direction=[1, 1], n_correct=[1, 1],
             n_total=[2, 2], target=0)
    with pytest.raises(MedauditError, match="n_correct <= n_total"):
        Pool(institution=[0], finding=[0], direction=[1], n_correct=[3], n_total=[2], target=0)
    with pytest.raises(MedauditError, match="did you mean|must be one of|estimator"):
        make_estimator("hd_cal")


def test_glmm_recovers_planted_rates_and_is_deterministic():
    pytest.importorskip("numpyro", reason="the GLMM is an optional extra (medaudit[glmm])")
    g = np.random.default_rng(3)
    d = np.repeat(np.arange(3), 8)
    k = np.tile(np.repeat(np.arange(4), 2), 3)
    r = np.tile([0, 1], 12)
    p = expit(1.0 + 0.8 * r - 0.6 * (d == 1) + 0.4 * (k == 3))
    n = np.full(24, 2000)
    y = g.binomial(n, p)
    pool = Pool(institution=d, finding=k, direction=r, n_correct=y, n_total=n, target=2)
    a = make_estimator("glmm", n_steps=400, seed=7).fit(pool)
    np.testing.assert_allclose(a.predict(d, k, r), p, atol=0.03)
    b = make_estimator("glmm", n_steps=400, seed=7).fit(pool)
    assert np.array_equal(a.predict(d, k, r), b.predict(d, k, r))
    # an unseen institution contributes 0: b0 + b_r + u_k only
    pr = a.params_
    assert a.predict([5], [0], [1])[0] == pytest.approx(float(expit(pr["b0"] + pr["b_r"] + pr["u"][0])))
    assert a.info_["n_steps"] == 400 and a.info_["numpyro"]


def test_every_estimator_key_builds():
    assert len(ESTIMATORS) == 10
    for key in ESTIMATORS:
        if key != "glmm":
            assert make_estimator(key).key == key


def test_interaction_of_a_finding_absent_from_the_pool_is_not_aliased():
    # the pool has findings 0, 1 only.  A test row (d=0, k=2) must get no interaction
    # indicator; an earlier coding d * (max k + 1) + k mapped it onto the level (d=1, k=0)
    pool = Pool(institution=[0, 0, 1, 1, 0, 1], finding=[0, 1, 0, 1, 0, 1],
                direction=[1, 1, 1, 1, 0, 0], n_correct=[5, 9, 2, 8, 3, 4],
                n_total=[10, 10, 10, 10, 10, 10], target=2)
    h = make_estimator("hdcal")
    h._tol = 1e-10
    h.fit(pool)
    b, w = h.model_.intercept_[0], dict(zip(["r1", "k1", "d1", "d0k1", "d1k0", "d1k1"],
                                            h.model_.coef_[0], strict=True))
    # by hand from the fitted coefficients: reference levels r=0, k=0, d=0, (d,k)=(0,0)
    want = expit([b + w["r1"],                     # (d=0, k=2): unseen finding -> k, dk zero
                  b + w["r1"] + w["d1"] + w["d1k0"],  # (d=1, k=0)
                  b + w["r1"] + w["d1"]])          # (d=1, k=2): unseen interaction
    np.testing.assert_allclose(h.predict([0, 1, 1], [2, 0, 2], [1, 1, 1]), want, rtol=1e-12)
    # the witness: sklearn on pandas dummies of the same pool rows
    d, k, r, c = [], [], [], []
    for i in range(pool.n_total.size):
        for correct in (1, 0):
            m = int(pool.n_correct[i] if correct else pool.n_total[i] - pool.n_correct[i])
            d += [pool.institution[i]] * m
            k += [pool.finding[i]] * m
            r += [pool.direction[i]] * m
            c += [correct] * m
    d, k, r = np.array(d), np.array(k), np.array(r)
    ref = {"r": r, "k": k, "d": d, "dk": [f"{a}:{e}" for a, e in zip(d, k, strict=True)]}
    blocks = ["r", "k", "d", "dk"]
    lr = LogisticRegression(C=1.0, max_iter=1000, tol=1e-10).fit(_row_design(d, k, r, blocks, ref), c)
    grid = _row_design(np.array([0, 1, 1]), np.array([2, 0, 2]), np.array([1, 1, 1]), blocks, ref)
    np.testing.assert_allclose(h.predict([0, 1, 1], [2, 0, 2], [1, 1, 1]),
                               lr.predict_proba(grid)[:, 1], atol=1e-7)


def test_beta_binomial_three_cell_example_by_hand():
    # sources 8/10 and 4/10, target shot 4/5 (all one finding, direction present):
    # mu = 16/25 = 0.64; v = (10*0.16^2 + 10*0.24^2 + 5*0.16^2)/25 = 0.96/25 = 0.0384;
    # kappa = 0.64*0.36/0.0384 - 1 = 6 - 1 = 5; alpha = 3.2, beta = 1.8;
    # target posterior Beta(3.2 + 4, 1.8 + 1) = Beta(7.2, 2.8), mean 7.2/10 = 0.72
    pool = Pool(institution=[0, 1, 2], finding=[0, 0, 0], direction=[1, 1, 1],
                n_correct=[8, 4, 4], n_total=[10, 10, 5], target=2)
    bb = BetaBinomial().fit(pool)
    pr = bb.prior_
    assert (pr.mean, pr.variance) == (pytest.approx(0.64, abs=1e-15), pytest.approx(0.0384, abs=1e-15))
    assert (pr.concentration, pr.alpha, pr.beta) == (pytest.approx(5.0), pytest.approx(3.2),
                                                     pytest.approx(1.8))
    assert bb.predict([2, 2], [0, 0], [1, 0]).tolist() == [pytest.approx(0.72), pytest.approx(0.64)]
    # source cells keep their own counts in the posterior mean: (3.2 + 8)/(5 + 10)
    assert bb.predict([0], [0], [1])[0] == pytest.approx(11.2 / 15)
