"""Witnesses for the LOIO design, the strict selector, the oracle and the interval audit (M2.6-M2.10)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import betabinom, binomtest
from sklearn.metrics import brier_score_loss

from medaudit.agreement.design import (
    FoldKey,
    JudgmentData,
    decide,
    fold_rows,
    institution_cluster_bootstrap,
    oracle_brier,
    predictive_interval,
    relative_excess,
    run_design,
)
from medaudit.exceptions import MedauditError

FAST = ("naive", "additive", "hdcal", "hdcal_weighted", "has", "has_fixed_tau", "has_no_offset",
        "target_only", "beta_binomial")
SET_B_FAST = ("naive", "additive", "hdcal", "hdcal_weighted", "target_only", "beta_binomial")


def _table(seed: int = 0, n_studies: int = 120, n_inst: int = 3, models=("m1", "m2")):
    """A small judgment table with institution-by-finding structure."""
    g = np.random.default_rng(seed)
    cols = {k: [] for k in ("model", "institution", "finding", "direction", "correct", "study_id")}
    for m_i, m in enumerate(models):
        for d in range(n_inst):
            for s in range(n_studies):
                for k in range(4):
                    r = int(g.random() < 0.3 + 0.1 * k)
                    p = expit(1.0 + 0.7 * r - 0.8 * d * (k == 1) + 0.3 * m_i)
                    cols["model"].append(m)
                    cols["institution"].append(f"inst{d}")
                    cols["finding"].append(f"f{k}")
                    cols["direction"].append("present" if r else "absent")
                    cols["correct"].append(int(g.random() < p))
                    cols["study_id"].append(f"i{d}-s{s:04d}")
    return {k: np.asarray(v) for k, v in cols.items()}


@pytest.fixture(scope="module")
def data() -> JudgmentData:
    return JudgmentData.from_columns(**_table())


@pytest.fixture(scope="module")
def result(data):
    return run_design(data, estimators=FAST, budgets=(0, 25, 50), repeats=2,
                      candidates=SET_B_FAST)


def test_nested_budgets_are_prefixes_of_one_draw(data):
    for rep in range(3):
        shots = {}
        for b in (25, 50, 100):
            pool, test = fold_rows(data, FoldKey("loio", 0, 1, (0, 2), b, rep))
            shots[b] = set(pool[data.institution[pool] == 1].tolist())
            assert len(shots[b]) == b
        assert shots[25] < shots[50] < shots[100]
    a = set(fold_rows(data, FoldKey("loio", 0, 1, (0, 2), 25, 0))[0].tolist())
    b = set(fold_rows(data, FoldKey("loio", 0, 1, (0, 2), 25, 1))[0].tolist())
    assert a != b  # different repeats, different shots


def test_no_target_test_row_in_a_fitting_pool(data):
    for b in (0, 25, 100):
        pool, test = fold_rows(data, FoldKey("loio", 1, 2, (0, 1), b, 4))
        target = data.rows(1, 2)
        assert not set(pool.tolist()) & set(test.tolist())
        assert set(test.tolist()) | set(pool[data.institution[pool] == 2].tolist()) == \
            set(target.tolist())
        assert (data.model[pool] == 1).all() and (data.model[test] == 1).all()
        assert (data.institution[test] == 2).all()


def test_selector_never_sees_the_receiving_institution(result):
    data = result.data
    assert len(result.decisions) == 2 * 3 * 2 * 2  # models x institutions x budgets>0 x repeats
    for x in result.decisions:
        for key in result.dev:
            if key.model == x.model and key.budget == x.budget and key.rep == x.rep and \
                    key.target != x.target and x.target not in key.sources:
                pool, test = fold_rows(data, key)
                assert not (data.institution[pool] == x.target).any()
                assert not (data.institution[test] == x.target).any()
    # every decision used exactly the two development folds that exclude its target
    for x in result.decisions:
        used = [k for k in result.dev if k.model == x.model and k.budget == x.budget and
                k.rep == x.rep and k.target != x.target and x.target not in k.sources]
        assert len(used) == 2


def test_brier_and_ece_from_cells_equal_row_level_witnesses(data, result):
    f = next(f for f in result.loio if f.key.budget == 25 and f.key.model == 0 and f.key.target == 0)
    _, test = fold_rows(data, f.key)
    cell_of = {(int(k), int(r)): i for i, (k, r) in enumerate(zip(f.finding, f.direction, strict=True))}
    for est in ("hdcal", "beta_binomial"):
        p = np.array([f.prob[est][cell_of[(int(k), int(r))]]
                      for k, r in zip(data.finding[test], data.direction[test], strict=True)])
        y = data.correct[test]
        assert f.brier[est] == pytest.approx(brier_score_loss(y, p), rel=1e-12)
        # slow ECE from the definition: 10 equal-width bins, last bin closed
        bins = np.minimum((p * 10).astype(int), 9)
        slow = sum(abs(y[bins == b].mean() - p[bins == b].mean()) * (bins == b).mean()
                   for b in range(10) if (bins == b).any())
        assert f.ece[est] == pytest.approx(slow, rel=1e-10, abs=1e-14)


def test_decide_tie_break_and_strict_gate():
    from medaudit.agreement.design import FoldResult

    def fold(key, brier, n_test=10):
        one = np.array([1])
        return FoldResult(key=key, n_shot=0, n_test=n_test, finding=one * 0, direction=one,
                          y_test=one * 5, n_test_cell=one * n_test, y_train=one * 0,
                          n_train=one * 0, prob={c: np.array([0.5]) for c in brier},
                          brier=brier, ece=dict.fromkeys(brier, 0.0), info={})

    target = fold(FoldKey("loio", 0, 0, (1, 2), 25, 0), {"naive": 0.3, "hdcal": 0.2, "beta_binomial": 0.1})
    dev = {FoldKey("dev", 0, 1, (2,), 25, 0): fold(FoldKey("dev", 0, 1, (2,), 25, 0),
                                                    {"naive": 0.2, "hdcal": 0.1, "beta_binomial": 0.1}),
           FoldKey("dev", 0, 2, (1,), 25, 0): fold(FoldKey("dev", 0, 2, (1,), 25, 0),
                                                    {"naive": 0.2, "hdcal": 0.1, "beta_binomial": 0.1})}
    d = decide([target], dev, candidates=["naive", "hdcal", "beta_binomial"], n_institutions=3)[0]
    assert d.best == "hdcal" and d.selected == "hdcal"  # exact tie -> earlier in the fixed order
    assert d.test_brier == 0.2
    for v in dev.values():
        v.brier["hdcal"] = v.brier["beta_binomial"] = 0.2  # equal to naive: gate keeps naive
    d = decide([target], dev, candidates=["naive", "hdcal", "beta_binomial"], n_institutions=3)[0]
    assert d.selected == "naive" and d.gate_returned_naive


def test_oracle_is_per_cell_minimum(result):
    f = next(f for f in result.loio if f.key.budget == 50)
    cands = list(SET_B_FAST)
    per_cell = np.min([[f.sse(c)[i] for c in cands] for i in range(f.y_test.size)], axis=1)
    assert oracle_brier(f, cands) == pytest.approx(per_cell.sum() / f.n_test, rel=1e-12)
    assert oracle_brier(f, cands) <= min(f.brier[c] for c in cands) + 1e-15


def test_relative_excess_paper_arithmetic():
    assert relative_excess(0.1083, 0.0799) == pytest.approx(0.3554, abs=5e-4)  # 35.5%
    assert (0.1177 - 0.1083) / 0.1177 == pytest.approx(0.080, abs=5e-4)  # selector 8.0% below naive


def test_family_gap_cluster_bootstrap_endpoints_are_the_extremes():
    r = institution_cluster_bootstrap([0.0841, 0.0080, -0.0005], n_resamples=10_000, rng=42)
    assert r["estimate"] == pytest.approx(0.0305, abs=5e-5)
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(-0.0005), pytest.approx(0.0841))
    assert (0.0080 - 0.0005) / 2 == pytest.approx(0.0038, abs=1e-4)  # "0.0038 without MIMIC"


def test_predictive_interval_matches_its_definition():
    g = np.random.default_rng(0)
    n = g.integers(1, 60, 40)
    a, b = g.uniform(0.2, 30, 40), g.uniform(0.2, 30, 40)
    lo, hi = predictive_interval(n, a, b)
    for i in range(40):
        cdf = np.cumsum(betabinom.pmf(np.arange(n[i] + 1), n[i], a[i], b[i]))
        assert lo[i] == np.flatnonzero(cdf >= 0.025 - 1e-12)[0]
        assert hi[i] == np.flatnonzero(cdf >= 0.975 - 1e-12)[0]
    lo, hi = predictive_interval([30], [4.6084 + 12], [0.9305 + 3])  # methods.md worked example
    assert (int(lo[0]), int(hi[0])) == (17, 29)
    lo, hi = predictive_interval([10, 10], [0.0, 2.0], [3.0, 0.0])  # degenerate priors
    assert lo.tolist() == [0, 10] and hi.tolist() == [0, 10]


def test_interval_coverage_on_beta_binomial_data():
    # cells drawn from the Beta-Binomial model itself: the predictive interval covers ~95%
    g = np.random.default_rng(2026)
    alpha, beta = 6.0, 2.0
    n_cells, n_train, n_test = 800, 30, 40
    theta = g.beta(alpha, beta, n_cells)
    s = g.binomial(n_train, theta)
    y = g.binomial(n_test, theta)
    a_post, b_post = alpha + s, beta + n_train - s
    lo, hi = predictive_interval(np.full(n_cells, n_test), a_post, b_post)
    covered = int(((lo <= y) & (y <= hi)).sum())
    # the truth: given s, Y_test is exactly BetaBinomial(n_test, a_post, b_post) here, so a
    # cell's coverage probability is F(U) - F(L - 1) under that law (scipy), never below 95%
    p_cover = betabinom.cdf(hi, n_test, a_post, b_post) - betabinom.cdf(lo - 1, n_test, a_post, b_post)
    assert np.all(p_cover >= 0.95)
    # observed coverage agrees with the exact expected count (Poisson-binomial, 4 sd)
    sd = np.sqrt(np.sum(p_cover * (1 - p_cover)))
    assert abs(covered - p_cover.sum()) < 4 * sd
    assert binomtest(covered, n_cells, 0.95, alternative="less").pvalue > 0.01
    # a deliberately overconfident interval (prior concentration x 50) under-covers: the
    # check has power
    lo2, hi2 = predictive_interval(np.full(n_cells, n_test), 50 * a_post, 50 * b_post)
    assert ((lo2 <= y) & (y <= hi2)).mean() < 0.9


def test_determinism_and_input_order_invariance():
    cols = _table(seed=5, n_studies=60)
    d1 = JudgmentData.from_columns(**cols)
    perm = np.random.default_rng(1).permutation(cols["model"].size)
    d2 = JudgmentData.from_columns(**{k: v[perm] for k, v in cols.items()})
    kw = dict(estimators=("naive", "hdcal", "target_only", "beta_binomial"), budgets=(25,),
              repeats=2, candidates=("naive", "hdcal", "target_only", "beta_binomial"))
    a, b = run_design(d1, **kw), run_design(d2, **kw)
    assert [f.brier for f in a.loio] == [f.brier for f in b.loio]
    assert [f.ece for f in a.loio] == [f.ece for f in b.loio]
    assert [(x.selected, x.test_brier) for x in a.decisions] == \
        [(x.selected, x.test_brier) for x in b.decisions]


def test_bad_designs_raise_clear_errors(data):
    with pytest.raises(MedauditError, match="label budget 100000 exceeds"):
        run_design(data, estimators=("naive",), budgets=(100000,), repeats=1, selection=False)
    two = JudgmentData.from_columns(**_table(n_inst=2, n_studies=30))
    with pytest.raises(MedauditError, match="at least three institutions"):
        run_design(two, estimators=("naive", "has"), budgets=(25,), repeats=1, selection=False)
    with pytest.raises(MedauditError, match="selection needs at least three"):
        run_design(two, estimators=("naive",), budgets=(25,), repeats=1, candidates=("naive",))
    with pytest.raises(MedauditError, match="'naive'"):
        run_design(data, estimators=("naive", "hdcal"), budgets=(25,), repeats=1,
                   candidates=("hdcal",))
    with pytest.raises(MedauditError, match="direction"):
        JudgmentData.from_columns(**{**_table(n_studies=2), "direction": np.array(["maybe"] * 48)})


def test_coverage_records_eligibility(result):
    from medaudit.agreement.design import coverage_records

    recs = coverage_records(result, min_test=20)
    assert recs and all(r["budget"] > 0 for r in recs)
    for r in recs:
        assert r["eligible"] == (r["n_train"] >= 1 and r["n_test"] >= 20)
        assert r["covered"] == (r["lower"] <= r["y_test"] <= r["upper"])


def test_model_absent_from_an_institution_is_a_clear_error():
    cols = _table(n_studies=30)
    drop = (cols["model"] == "m2") & (cols["institution"] == "inst2")
    data = JudgmentData.from_columns(**{k: v[~drop] for k, v in cols.items()})
    with pytest.raises(MedauditError, match=r"\('m2', 'inst2'\).*agreement.models"):
        run_design(data, estimators=("naive", "beta_binomial"), budgets=(0, 25), repeats=1,
                   selection=False)
    # restricted to the model judged everywhere, the design runs
    res = run_design(data, estimators=("naive", "beta_binomial"), budgets=(0, 25), repeats=1,
                     selection=False, models=["m1"])
    assert {f.key.model for f in res.loio} == {data.models.index("m1")}
