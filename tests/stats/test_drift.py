"""Score drift: the two-sample KS test and the population stability index per period.

Witnesses: the KS statistic from its definition (both empirical distribution functions at
every observed value); the KS p-value from the permutation distribution of D enumerated in
full (small untied samples, where scipy's exact method is exact); the PSI by hand on a
worked case and from its formula with the bins counted by a loop; invariances (PSI is
symmetric in the two fraction vectors and zero for identical samples; both statistics are
unchanged by a strictly increasing transform of the scores).  The PSI's permutation null
against the statistic on each materialised split, its p-value against the permutation
distribution enumerated in full, its level by simulation where the bands alone flag most
null pairs, and its large-sample null against Yurdakul's (1/n + 1/m) chi-square.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from medaudit.exceptions import MedauditError
from medaudit.stats.drift import (
    DRIFT_COLUMNS,
    ks_drift,
    population_stability_index,
    psi_edges,
    score_drift,
)


def _ks_definition(a, b):
    xs = np.concatenate([a, b])
    fa = np.array([(a <= x).mean() for x in xs])
    fb = np.array([(b <= x).mean() for x in xs])
    return float(np.max(np.abs(fa - fb)))


def _ks_permutation_p(a, b):
    pooled = np.concatenate([a, b])
    d_obs = _ks_definition(a, b)
    count = total = 0
    for idx in itertools.combinations(range(pooled.size), a.size):
        mask = np.zeros(pooled.size, dtype=bool)
        mask[list(idx)] = True
        total += 1
        count += _ks_definition(pooled[mask], pooled[~mask]) >= d_obs - 1e-12
    return count / total


@pytest.mark.parametrize("seed", range(6))
def test_ks_matches_definition_and_full_permutation(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=5)
    b = rng.normal(size=6) + 0.8
    r = ks_drift(a, b)
    assert r.statistic == pytest.approx(_ks_definition(a, b), abs=1e-15)
    assert r.pvalue == pytest.approx(_ks_permutation_p(a, b), rel=1e-9)


@settings(max_examples=40)
@given(arrays(np.float64, st.integers(2, 25), elements=st.floats(-50, 50)),
       arrays(np.float64, st.integers(2, 25), elements=st.floats(-50, 50)))
def test_ks_statistic_is_the_definition_with_ties(a, b):
    r = ks_drift(a, b)
    assert r.statistic == pytest.approx(_ks_definition(a, b), abs=1e-12)
    assert 0.0 <= r.pvalue <= 1.0


def test_psi_by_hand():
    r = population_stability_index(np.arange(1, 11), np.arange(1, 9), n_bins=2)
    assert r.edges.tolist() == [5.5]
    assert r.expected.tolist() == [0.5, 0.5] and r.actual.tolist() == [5 / 8, 3 / 8]
    assert r.psi == pytest.approx(0.125 * math.log(1.25) - 0.125 * math.log(0.75), rel=1e-14)


def test_psi_empty_bin_uses_the_floor():
    r = population_stability_index([0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], n_bins=2)
    want = (1e-4 - 0.5) * math.log(1e-4 / 0.5) + 0.5 * math.log(2)
    assert r.psi == pytest.approx(want, rel=1e-14) and r.band == "major shift"


def _psi_loop(ref, cur, edges, floor=1e-4):
    bounds = [-math.inf, *edges, math.inf]
    total = 0.0
    for lo, hi in itertools.pairwise(bounds):
        e = max(sum(lo <= x < hi for x in ref) / len(ref), floor)
        a = max(sum(lo <= x < hi for x in cur) / len(cur), floor)
        total += (a - e) * math.log(a / e)
    return total


@pytest.mark.parametrize("seed", range(4))
def test_psi_matches_a_loop_over_declared_bins(seed):
    rng = np.random.default_rng(seed)
    ref = np.round(rng.beta(2, 5, 300), 2)  # rounded: ties on the edges
    cur = np.round(rng.beta(2.5, 5, 200), 2)
    edges = np.quantile(ref, np.arange(1, 10) / 10)
    r = population_stability_index(ref, cur, n_bins=10)
    assert r.edges.tolist() == np.unique(edges).tolist()
    assert r.psi == pytest.approx(_psi_loop(ref, cur, np.unique(edges)), rel=1e-12)


@given(arrays(np.float64, st.integers(5, 60), elements=st.floats(0, 1)))
def test_psi_of_a_sample_with_itself_is_zero(x):
    assert population_stability_index(x, x).psi == 0.0


def test_monotone_transform_changes_nothing():
    rng = np.random.default_rng(3)
    a, b = rng.random(200), rng.random(150) ** 1.3
    for f in (np.log, lambda v: 3 * v + 1):
        assert ks_drift(f(a), f(b)).statistic == ks_drift(a, b).statistic
        assert population_stability_index(f(a), f(b)).psi == pytest.approx(
            population_stability_index(a, b).psi, rel=1e-12)


def test_ks_says_when_scipy_falls_back_to_the_asymptotic_p_value():
    r = ks_drift(np.zeros(5), np.r_[1.0, np.zeros(4)])
    assert "asymptotic (the exact calculation did not finish)" in r.method


def test_psi_edges_merge_ties():
    assert psi_edges([1, 1, 1, 2], n_bins=4).tolist() == [1.0, 1.25]
    # a value holding several quantiles gets its own bin: an edge at the next value above it
    assert psi_edges([0] * 19 + [1], n_bins=10).tolist() == [0.0, 1.0]
    assert psi_edges([0] * 12 + [1, 2, 3, 4, 5, 6, 7, 8], n_bins=4).tolist() == [0.0, 1.0, 3.25]
    # one quantile on a tied value inside the sample is ordinary quantile binning: nothing
    # added; at the minimum the bin below it is empty, so the tie gets its own bin as well
    assert psi_edges([1, 2, 3, 4, 5, 5, 5, 6, 7, 8], n_bins=2).tolist() == [5.0]
    assert psi_edges([0] * 9 + list(range(1, 12)), n_bins=4).tolist() == [0.0, 1.0, 1.5, 6.25]
    # ... unless a quantile edge already comes first, or nothing lies above it
    assert psi_edges([1, 1, 1, 2], n_bins=4).tolist() == [1.0, 1.25]
    assert psi_edges([0] * 5 + [1] * 95, n_bins=10).tolist() == [1.0]  # [1, inf) holds the tie
    assert psi_edges([3.0] * 10, n_bins=10).tolist() == [3.0]


def test_psi_sees_a_shift_off_a_tied_minimum():
    # 95 % zeros becoming 50 %: the tied zeros have their own bin [0, 1), so PSI is the
    # definition's (0.5 - 0.95) log(0.5 / 0.95) + (0.5 - 0.05) log(0.5 / 0.05), as with
    # the edge declared by hand; before, every value fell in [0, inf) and PSI read 0
    ref, cur = np.r_[np.zeros(950), np.ones(50)], np.r_[np.zeros(500), np.ones(500)]
    r = population_stability_index(ref, cur, rng=0)
    want = (0.5 - 0.95) * math.log(0.5 / 0.95) + (0.5 - 0.05) * math.log(0.5 / 0.05)
    assert r.psi == pytest.approx(want, rel=1e-12) and r.band == "major shift"
    assert r.psi == pytest.approx(population_stability_index(ref, cur, edges=[0.5], n_resamples=0).psi)
    assert r.pvalue == 1 / 1000 and r.reading == "major shift"
    for n_bins in (2, 3):  # review finding: at two bins the one cut sat on the tie alone
        assert population_stability_index(ref, cur, n_bins=n_bins, n_resamples=0).psi == pytest.approx(want)
    # a continuous tail above a tied 0 is binned at its quantiles, the zeros alone
    rng = np.random.default_rng(4)
    ref = np.r_[np.zeros(920), rng.random(80)]
    e = psi_edges(ref)
    assert e[0] == 0.0 and e[1] == np.sort(ref)[920] and e.size == 2
    shifted = population_stability_index(ref, np.r_[np.zeros(300), rng.random(700)], rng=0)
    assert shifted.band == "major shift" and shifted.pvalue == 1 / 1000
    with pytest.raises(MedauditError, match="n_bins must be an integer of at least 2"):
        psi_edges([1, 2], n_bins=1)


# ----------------------------------------------------------------------------- per period

def _stream():
    rng = np.random.default_rng(11)
    per, y, s = [], [], []
    for k, month in enumerate(["2026-01", "2026-02", "2026-03"]):
        yy = (rng.random(400) < 0.3).astype(float)
        shift = 0.6 if k == 2 else 0.0  # the negatives' scores move in March
        ss = np.where(yy == 1, rng.normal(1.5, 1, 400), rng.normal(shift, 1, 400))
        per += [month] * 400
        y.append(yy)
        s.append(ss)
    y = np.concatenate(y)
    y[-50:] = np.nan  # the last cases are not labelled yet
    return np.array(per, dtype=object), y, np.concatenate(s)


def test_score_drift_rows_match_the_functions():
    per, y, s = _stream()
    r = score_drift(per, s, y_true=y, n_bins=10)
    assert [(row["period"], row["subset"]) for row in r.rows] == [
        (m, sub) for m in ("2026-01", "2026-02", "2026-03") for sub in ("all", "positives", "negatives")]
    ref = per == "2026-01"
    for row in r.rows:
        assert set(row) == set(DRIFT_COLUMNS)
        here = per == row["period"]
        mask = {"all": np.ones(s.size, bool), "positives": y == 1, "negatives": y == 0}[row["subset"]]
        assert row["ks_statistic"] == ks_drift(s[ref & mask], s[here & mask]).statistic
        assert row["psi"] == population_stability_index(s[ref & mask], s[here & mask]).psi
        assert row["n"] == int((here & mask).sum())
    march = {row["subset"]: row for row in r.rows if row["period"] == "2026-03"}
    assert march["negatives"]["ks_pvalue"] < 1e-4 and march["positives"]["ks_pvalue"] > 1e-3
    assert march["all"]["n"] == 400 and march["negatives"]["n"] + march["positives"]["n"] == 350


def test_score_drift_reference_rows_give_d_but_no_p_value():
    # a reference period is part of the reference it is compared with, so neither KS nor
    # PSI tests anything there (docs/claims-file.md: "Reference rows get no p-value")
    per, y, s = _stream()
    r = score_drift(per, s, y_true=y, reference=["2026-01", "2026-02"], n_bins=10, rng=0)
    ref = np.isin(per, ["2026-01", "2026-02"])
    for row in r.rows:
        here = per == row["period"]
        mask = {"all": np.ones(s.size, bool), "positives": y == 1, "negatives": y == 0}[row["subset"]]
        ks = ks_drift(s[ref & mask], s[here & mask])
        assert row["ks_statistic"] == ks.statistic
        if row["period"] == "2026-03":
            assert row["status"] != "reference"
            assert row["ks_pvalue"] == ks.pvalue and row["ks_method"] == ks.method
            assert not np.isnan(row["psi_pvalue"])
        else:
            assert row["status"] == "reference" and ks.statistic > 0
            assert np.isnan(row["ks_pvalue"]) and np.isnan(row["psi_pvalue"])
            assert "part of the reference" in row["ks_method"]


def test_score_drift_without_labels_and_with_declared_order():
    per = ["b", "b", "a", "a", "c"]
    r = score_drift(per, [1, 2, 3, 4, 5], periods=["b", "a", "c"], n_bins=2)
    assert [row["period"] for row in r.rows] == ["b", "a", "c"]
    assert {row["subset"] for row in r.rows} == {"all"}
    assert r.rows[0]["status"] == "reference"


def test_score_drift_empty_subset_is_reported():
    r = score_drift(["a", "a", "b", "b"], [0.1, 0.9, 0.2, 0.8], y_true=[0, 1, 0, 0], n_bins=2)
    pos_b = next(row for row in r.rows if row["period"] == "b" and row["subset"] == "positives")
    assert pos_b["status"] == "no scores in this period" and math.isnan(pos_b["psi"])


@pytest.mark.parametrize("kwargs,match", [
    ({"period": ["a", 1], "y_score": [0.1, 0.2]}, "mixes kinds of values"),
    ({"period": ["a", "b"], "y_score": [0.1, 0.2], "periods": ["a"]}, r"has \['b'\], which periods="),
    ({"period": ["a", "b"], "y_score": [0.1, 0.2], "reference": ["z"]}, "reference period"),
    ({"period": ["a", "b"], "y_score": [0.1, 0.2], "y_true": [0, 2]}, "y_true must be 0, 1 or NaN"),
    ({"period": ["a"], "y_score": [0.1, 0.2]}, "one value per score"),
])
def test_score_drift_refuses_bad_input(kwargs, match):
    with pytest.raises(MedauditError, match=match):
        score_drift(**kwargs)


def test_ks_drift_says_when_its_exact_p_value_is_conservative_because_of_ties():
    # scipy's exact distribution of D assumes continuous data: with ties the p-value is
    # conservative; the full permutation distribution of D (5 + 5 values, 252 splits) shows it
    from itertools import combinations

    a, b = np.array([0.1, 0.2, 0.2, 0.3, 0.4]), np.array([0.2, 0.3, 0.5, 0.5, 0.6])
    r = ks_drift(a, b)
    assert "conservative" in r.method and "tied" in r.method
    pooled = np.r_[a, b]

    def d(x, y):
        grid = np.unique(pooled)
        fx = np.searchsorted(np.sort(x), grid, side="right") / x.size
        fy = np.searchsorted(np.sort(y), grid, side="right") / y.size
        return np.abs(fx - fy).max()

    obs = d(a, b)
    ds = [d(pooled[list(c)], np.delete(pooled, list(c))) for c in combinations(range(10), 5)]
    perm_p = np.mean(np.array(ds) >= obs - 1e-12)
    assert r.pvalue >= perm_p - 1e-12
    assert "conservative" not in ks_drift([1.0, 2.0, 3.0], [1.5, 2.5, 3.5]).method


# ----------------------------------------------------------------------------- PSI beyond chance

def _splits(pooled, n_ref):
    """Every split of ``pooled`` into a reference of ``n_ref`` values and the rest."""
    for idx in itertools.combinations(range(pooled.size), n_ref):
        mask = np.zeros(pooled.size, dtype=bool)
        mask[list(idx)] = True
        yield pooled[mask], pooled[~mask]


@pytest.mark.parametrize("n_bins", [2, 10])
@pytest.mark.parametrize("declared", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_psi_null_is_the_psi_of_each_materialised_split(seed, declared, n_bins):
    # the fast null (one pooled sort, cumulative counts) against the statistic itself on the
    # split's two samples; rounded scores put ties on the edges
    from medaudit.stats.drift import _permutation_masks, _psi_null

    rng = np.random.default_rng(seed)
    ref, cur = np.round(rng.beta(2, 5, 60), 2), np.round(rng.beta(2.5, 5, 45), 2)
    if seed == 2:  # a tied minimum holding several deciles: a bin of its own in each split
        ref[:40], cur[:15] = 0.0, 0.0
    xs = np.sort(np.r_[ref, cur])
    edges = np.array([0.1, 0.2, 0.35, 0.5]) if declared else None
    masks = _permutation_masks(np.random.default_rng(seed), 50, ref.size, cur.size)
    fast = _psi_null(xs, masks, ref.size, 1e-4, n_bins=n_bins, edges=edges)
    slow = [population_stability_index(xs[m], xs[~m], n_bins=n_bins, edges=edges, n_resamples=0).psi
            for m in masks]
    np.testing.assert_allclose(fast, slow, rtol=1e-13, atol=1e-15)


def test_psi_pvalue_matches_the_permutation_distribution_enumerated_in_full():
    rng = np.random.default_rng(5)
    ref, cur = rng.normal(size=6), rng.normal(0.8, 1, size=5)
    obs = population_stability_index(ref, cur, n_bins=3, n_resamples=0).psi
    null = [population_stability_index(a, b, n_bins=3, n_resamples=0).psi
            for a, b in _splits(np.r_[ref, cur], ref.size)]  # 462 splits
    exact = np.mean(np.array(null) >= obs - 1e-12)
    r = population_stability_index(ref, cur, n_bins=3, n_resamples=20_000, rng=1)
    assert r.psi == obs
    assert r.pvalue == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4)
    assert r.critical == pytest.approx(np.quantile(null, 0.95), abs=0.15)


def test_psi_test_holds_its_level_where_the_bands_cry_wolf():
    # 20 scores against 20 from one distribution: the bands call most pairs a shift, the
    # permutation test rejects at most alpha of them (3 standard errors of Monte Carlo slack)
    rng = np.random.default_rng(7)
    res = [population_stability_index(rng.normal(size=20), rng.normal(size=20), n_resamples=199,
                                      rng=rng) for _ in range(300)]
    assert np.mean([r.band != "stable" for r in res]) > 0.8
    rejected = np.mean([r.pvalue < 0.05 for r in res])
    assert rejected <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)
    assert np.mean([r.reading == "within chance at this size" for r in res]) > 0.7


def test_psi_test_finds_a_real_shift_and_its_null_follows_yurdakul_at_large_sizes():
    rng = np.random.default_rng(8)
    r = population_stability_index(rng.normal(size=300), rng.normal(1.0, 1, 300), rng=0)
    assert r.pvalue == 1 / 1000 and r.reading == r.band == "major shift"
    # asymptotically PSI ~ (1/n + 1/m) chi2(k - 1) with no drift (Yurdakul 2018): mean
    # (k - 1)(1/n + 1/m) and the chi-square's 95th percentile as the critical value
    from scipy import stats

    n, m = 3000, 2000
    a, b = rng.normal(size=n), rng.normal(size=m)
    r = population_stability_index(a, b, n_resamples=999, method="permutation", rng=1)
    scale = 1 / n + 1 / m
    assert r.null_distribution.mean() == pytest.approx(9 * scale, rel=0.06)
    assert r.critical == pytest.approx(stats.chi2.ppf(0.95, 9) * scale, rel=0.1)
    # there "auto" takes the approximation: no draws, and the p-values agree
    auto = population_stability_index(a, b, rng=1)
    assert auto.method.startswith("asymptotic") and auto.null_distribution is None
    assert auto.n_resamples == 0 and auto.seed is None
    assert auto.pvalue == pytest.approx(stats.chi2.sf(auto.psi / scale, 9), rel=1e-12)
    assert auto.critical == pytest.approx(stats.chi2.ppf(0.95, 9) * scale, rel=1e-12)
    assert auto.pvalue == pytest.approx(r.pvalue, abs=0.05)


def test_auto_takes_the_approximation_only_where_every_bin_expects_100_of_each_sample():
    from medaudit.stats.drift import ASYMPTOTIC_MIN_EXPECTED

    rng = np.random.default_rng(13)
    ref = rng.normal(size=5000)
    big = population_stability_index(ref, rng.normal(size=10 * ASYMPTOTIC_MIN_EXPECTED), rng=0)
    small = population_stability_index(ref, rng.normal(size=10 * ASYMPTOTIC_MIN_EXPECTED - 1), rng=0)
    assert big.method.startswith("asymptotic") and small.method.startswith("permutation")
    # a bin the reference leaves empty expects nothing of either sample, and does not hold
    # the switch back: 15 % of the scores tied at 0 leave the bin below the first decile empty
    tied = np.where(rng.random(20_000) < 0.15, 0.0, rng.random(20_000))
    r = population_stability_index(tied[:10_000], tied[10_000:], rng=0)
    assert r.expected[0] == 0 and r.method.startswith("asymptotic")
    # forced on small samples, the approximation says it is anti-conservative there
    with pytest.warns(UserWarning, match="anti-conservative"):
        population_stability_index(rng.normal(size=20), rng.normal(size=20), method="asymptotic")


def test_psi_test_is_reproducible_and_batch_free_and_can_be_switched_off():
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=80), rng.normal(0.3, 1, 70)
    one = population_stability_index(a, b, rng=3)
    assert one.null_distribution.tolist() == population_stability_index(a, b, rng=3, batch=7
                                                                         ).null_distribution.tolist()
    assert one.seed == 3 and one.n_resamples == 999 and 0 < one.pvalue <= 1
    off = population_stability_index(a, b, n_resamples=0)
    assert math.isnan(off.pvalue) and math.isnan(off.critical) and off.reading == off.band
    assert off.null_distribution is None and off.psi == one.psi


@pytest.mark.parametrize("kwargs,match", [
    ({"n_resamples": -1}, "n_resamples must be a positive integer"),
    ({"n_resamples": True}, "n_resamples must be a positive integer"),
    ({"alpha": 1.5}, "alpha"),
    ({"batch": 0}, "batch must be a positive integer"),
    ({"method": "exact"}, "method"),
])
def test_psi_test_refuses_bad_options(kwargs, match):
    with pytest.raises(MedauditError, match=match):
        population_stability_index([0.1, 0.2, 0.3], [0.2, 0.4], **kwargs)


def test_score_drift_reads_small_periods_by_the_test_not_the_band():
    # monthly batches of 20 positives from one distribution: the band alone says "major
    # shift" for most months, the reading does not
    rng = np.random.default_rng(12)
    per = np.repeat([f"2026-{m:02d}" for m in range(1, 9)], 20)
    r = score_drift(per, rng.normal(size=per.size), rng=4)
    later = [row for row in r.rows if row["status"] != "reference"]
    assert sum(row["psi_band"] != "stable" for row in later) >= 4
    assert sum(row["psi_reading"] in ("moderate shift", "major shift") for row in later) <= 1
    first = r.rows[0]
    assert first["status"] == "reference" and math.isnan(first["psi_pvalue"]) and not first["psi_reading"]
    # each row draws from its own stream, spawned in row order from the run's generator
    s = rng.normal(size=per.size)
    rows = score_drift(per, s, rng=4).rows
    assert rows == score_drift(per, s, rng=4).rows
    third = population_stability_index(s[per == "2026-01"], s[per == "2026-03"],
                                       rng=np.random.SeedSequence(4, spawn_key=(2, 0)))
    assert rows[2]["psi_pvalue"] == third.pvalue and rows[2]["psi_critical"] == third.critical
    # the same SeedSequence object twice gives the same rows (it is not advanced), and the
    # "all" rows do not move when labels are given
    ss = np.random.SeedSequence(4)
    assert score_drift(per, s, rng=ss).rows == score_drift(per, s, rng=ss).rows == rows
    y = (rng.random(per.size) < 0.5).astype(float)
    labelled = [row for row in score_drift(per, s, y_true=y, rng=4).rows if row["subset"] == "all"]
    assert [row["psi_pvalue"] for row in labelled] == [row["psi_pvalue"] for row in rows]


def test_the_approximation_of_a_one_bin_reference_is_undefined_not_a_p_of_one():
    # a constant reference occupies one bin: chi-square(0) says nothing, so no p-value (a p of
    # 1 would have called a total shift "within chance"), and PSI is blind to a shift above
    # the reference's value: the reading says so, the drift row sends the reader to KS
    from medaudit.stats.drift import ONE_BIN

    with pytest.warns(UserWarning, match="anti-conservative"):
        r = population_stability_index(np.ones(50), np.r_[np.zeros(25), np.full(25, 2.0)],
                                       method="asymptotic")
    assert math.isnan(r.pvalue) and math.isnan(r.critical) and r.reading == ONE_BIN
    blind = population_stability_index(np.full(30, 0.5), np.full(30, 0.7), rng=0)
    assert blind.psi == 0.0 and blind.reading == ONE_BIN
    row = score_drift(["a"] * 30 + ["b"] * 30, np.r_[np.full(30, 0.5), np.full(30, 0.7)], rng=0).rows[1]
    assert row["psi_reading"] == ONE_BIN and "read the KS test" in row["status"]
    assert row["ks_statistic"] == 1.0


def test_the_critical_value_is_the_boundary_of_the_test():
    # a PSI above psi_critical has p < alpha and one at or below it has not, on continuous
    # and on discrete nulls (where a quantile of the null is not that boundary)
    rng = np.random.default_rng(21)
    for _ in range(150):
        n, m = rng.integers(5, 40, size=2)
        a = np.round(rng.normal(size=n), int(rng.integers(0, 3)))
        b = np.round(rng.normal(rng.uniform(0, 1.5), 1, size=m), int(rng.integers(0, 3)))
        r = population_stability_index(a, b, n_resamples=199, rng=int(rng.integers(1000)))
        assert (r.psi > r.critical) == (r.pvalue < 0.05), (r.psi, r.critical, r.pvalue)
        null = r.null_distribution
        assert (1 + np.sum(null >= r.critical - 1e-12)) / 200 >= 0.05
        above = null[null > r.critical + 1e-12]
        assert above.size == 0 or (1 + np.sum(null >= above.min() - 1e-12)) / 200 < 0.05


def test_alpha_below_the_smallest_permutation_p_value_is_refused():
    with pytest.raises(MedauditError, match=r"n_resamples=999 gives permutation p-values of at least "
                                            r"1/1000, never below alpha=0.0005"):
        population_stability_index([0.1, 0.2, 0.3], [0.5, 0.6], alpha=0.0005)
    # enough permutations, or no test at all, are accepted
    assert population_stability_index([0.1, 0.2, 0.3], [0.5, 0.6], alpha=0.0005, n_resamples=2000,
                                      rng=0).pvalue >= 1 / 2001
    assert math.isnan(population_stability_index([0.1, 0.2], [0.5], alpha=0.0005, n_resamples=0).pvalue)
    with pytest.raises(MedauditError, match="n_bins must be an integer of at least 2"):
        population_stability_index([0.1, 0.2], [0.5], edges=[0.3], n_bins=1)


def test_score_drift_refuses_an_empty_or_repeated_reference():
    for ref, match in (([], "one or more periods"), (["a", "a"], "each once"), ("a", "a list")):
        with pytest.raises(MedauditError, match=match):
            score_drift(["a", "b"], [0.1, 0.2], reference=ref)


@pytest.mark.parametrize("n_bins", [2, 10])
@pytest.mark.parametrize("zeros", [0, 250])
@pytest.mark.parametrize("few_are_reference", [False, True])
@pytest.mark.parametrize("declared", [False, True])
def test_the_sparse_null_of_uneven_sizes_is_the_psi_of_each_materialised_split(few_are_reference,
                                                                               declared, zeros, n_bins):
    # a small sample against a large one: the splits drawn as the small sample's positions,
    # against the statistic on the two samples each split materialises; rounded scores put
    # ties on the edges
    from medaudit.stats.drift import _linear_edges, _psi_null_sparse

    rng = np.random.default_rng(31)
    xs = np.round(rng.beta(2, 5, 400), 2)
    xs[:zeros] = 0.0  # a tied minimum holding several deciles of most splits
    xs = np.sort(xs)
    n_few = 37
    n_ref = n_few if few_are_reference else xs.size - n_few
    few = np.sort(np.stack([rng.choice(xs.size, n_few, replace=False) for _ in range(60)]), axis=1)
    edges = np.array([0.1, 0.2, 0.35, 0.5]) if declared else None
    fast = _psi_null_sparse(xs, few, n_ref, 1e-4, n_bins=n_bins, edges=edges,
                            few_are_reference=few_are_reference)
    slow = []
    for row in few:
        mask = np.zeros(xs.size, dtype=bool)
        mask[row] = True
        ref, cur = (xs[mask], xs[~mask]) if few_are_reference else (xs[~mask], xs[mask])
        slow.append(population_stability_index(ref, cur, n_bins=n_bins, edges=edges, n_resamples=0).psi)
    np.testing.assert_allclose(fast, slow, rtol=1e-13, atol=1e-15)
    # the edges' arithmetic is numpy's own, to the bit
    for n in (1, 2, 9, 10, 11, 37, 363):
        v = np.sort(rng.normal(size=n))
        assert _linear_edges(v.__getitem__, n, 10).tolist() == np.quantile(v, np.arange(1, 10) / 10).tolist()


def test_uneven_sizes_take_the_sparse_path_and_keep_the_level():
    # 15 against 500 with no drift: the sparse path's p-values reject at most alpha (+3 SE)
    rng = np.random.default_rng(32)
    res = [population_stability_index(rng.normal(size=500), rng.normal(size=15), n_resamples=199,
                                      rng=rng) for _ in range(200)]
    assert np.mean([r.pvalue < 0.05 for r in res]) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 200)
    big = population_stability_index(rng.normal(size=200_000), rng.normal(0.3, 1, 300), rng=0)
    assert big.method.startswith("permutation") and big.pvalue < 0.01
