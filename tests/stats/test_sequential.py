"""Confidence sequences and alpha spending for repeated looks.

Witnesses: the confseq library's ``bernoulli_confidence_interval`` (tests/reference/
confseq_bernoulli.csv, made by generate_confseq_bernoulli.py); the exact chance that the
sequence ever misses, by dynamic programming over the binomial lattice with a look after
every trial; rpact 3.3.4 ``getDesignGroupSequential`` (tests/reference/spending_rpact.csv,
made by generate_spending_rpact.R); the crossing probabilities of two looks integrated
directly with scipy's ``quad``; statsmodels' Wilson interval; sklearn's AUROC; simulated
coverage judged with a binomial test.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score
from statsmodels.stats.proportion import proportion_confint

from medaudit.exceptions import MedauditError
from medaudit.stats import delong_ci
from medaudit.stats.sequential import (
    _log_mixture,
    _mixture_bounds,
    auroc_cs,
    auroc_rci,
    proportion_cs,
    proportion_rci,
    spending_bounds,
    union_alpha,
)

REF = Path(__file__).resolve().parents[1] / "reference"
CONFSEQ = pd.read_csv(REF / "confseq_bernoulli.csv", comment="#")


# ----------------------------------------------------------------------------- proportion_cs

@pytest.mark.parametrize("alpha,t_opt,alpha_opt", sorted(
    set(CONFSEQ[["alpha", "t_opt", "alpha_opt"]].itertuples(index=False, name=None))))
def test_matches_confseq(alpha, t_opt, alpha_opt):
    ref = CONFSEQ[(CONFSEQ.alpha == alpha) & (CONFSEQ.t_opt == t_opt)
                  & (CONFSEQ.alpha_opt == alpha_opt)]
    # one look per row: each row is its own (one-look) sequence
    for r in ref.itertuples(index=False):
        cs = proportion_cs([r.successes], [r.trials], confidence_level=1 - alpha, t_opt=t_opt,
                           alpha_opt=alpha_opt)
        assert cs.ci_low[0] == pytest.approx(r.ci_low, abs=1e-9)
        assert cs.ci_high[0] == pytest.approx(r.ci_high, abs=1e-9)


def test_looks_are_independent_of_each_other():
    """The interval at a look depends on that look's counts only (no intersection)."""
    s, n = [3, 10, 40, 41], [10, 30, 120, 150]
    together = proportion_cs(s, n)
    for k in range(4):
        alone = proportion_cs([s[k]], [n[k]])
        assert together.ci_low[k] == alone.ci_low[0] and together.ci_high[k] == alone.ci_high[0]


N_LATTICE = 300


@pytest.fixture(scope="module")
def lattice():
    """The sequence's interval at n = 1..300 trials for every S = 0..n (the engine behind
    proportion_cs, called on all lattice points at once; proportion_cs itself takes the
    cumulative counts of one stream)."""
    n = np.concatenate([np.full(k + 1, float(k)) for k in range(1, N_LATTICE + 1)])
    s = np.concatenate([np.arange(k + 1, dtype=float) for k in range(1, N_LATTICE + 1)])
    _, lo, hi = _mixture_bounds(s, n, alpha=0.05, t_opt=60.0, alpha_opt=0.05)
    starts = np.r_[0, np.cumsum(np.arange(2, N_LATTICE + 2))]
    return [(lo[starts[k]:starts[k + 1]], hi[starts[k]:starts[k + 1]]) for k in range(N_LATTICE)]


def _ever_misses(p, lattice):
    """Exact P(exists n <= 300: p outside CS_n), looking after every trial."""
    missed, alive = 0.0, np.array([1.0])  # alive[S]: P(S successes so far and no miss yet)
    for n in range(1, N_LATTICE + 1):
        new = np.zeros(n + 1)
        new[:-1] += alive * (1 - p)
        new[1:] += alive * p
        lo, hi = lattice[n - 1]
        out = (p < lo) | (p > hi)
        missed += new[out].sum()
        new[out] = 0.0
        alive = new
    return missed


@pytest.mark.parametrize("p", [0.03, 0.2, 0.5, 0.85])
def test_exact_chance_of_ever_missing_is_at_most_alpha(p, lattice):
    """Exact over the binomial lattice, a look after each of 300 trials, alpha = 0.05."""
    miss = _ever_misses(p, lattice)
    assert miss <= 0.05
    assert miss > 1e-4  # the bound is not vacuous: the sequence does miss sometimes


def test_one_trial_gives_the_unit_interval():
    """After one trial the mixture equals 1 for every p (prior mean p): no evidence yet."""
    for s in (0, 1):
        cs = proportion_cs([s], [1])
        assert cs.ci_low[0] == pytest.approx(0.0, abs=1e-12)
        assert cs.ci_high[0] == pytest.approx(1.0, abs=1e-12)


def test_mixture_by_hand_two_successes():
    """S = n = 2: M = (r + 1 - p) / (r + p (1 - p)) with r from the tuning rule."""
    p, t_opt, a = 0.3, 100.0, 0.05
    v = p * (1 - p)
    lt = math.log(1 / a)
    r = max(v * t_opt / (2 * lt + math.log(1 + 2 * lt)) - v, 1e-3 * v)
    got = float(_log_mixture(np.array([p]), np.array([2.0]), np.array([2.0]), t_opt, a)[0])
    assert got == pytest.approx(math.log((r + 1 - p) / (r + v)), rel=1e-12)


@given(st.integers(1, 400), st.floats(0, 1))
def test_mirror_symmetry_and_estimate_inside(n, frac):
    s = int(round(frac * n))
    a = proportion_cs([s], [n], t_opt=50)
    b = proportion_cs([n - s], [n], t_opt=50)
    assert a.ci_low[0] == pytest.approx(1 - b.ci_high[0], abs=1e-12)
    assert 0 <= a.ci_low[0] <= a.estimate[0] <= a.ci_high[0] <= 1


def test_no_trials_is_undefined_not_an_error():
    cs = proportion_cs([0, 0, 4], [0, 0, 10])
    assert np.isnan(cs.estimate[:2]).all()
    assert cs.ci_low[:2].tolist() == [0.0, 0.0] and cs.ci_high[:2].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kwargs,match", [
    ({"successes": [5, 4], "trials": [10, 20]}, "look 2: counts must be cumulative"),
    ({"successes": [5, 20], "trials": [10, 20]}, "look 2: counts must be cumulative"),
    ({"successes": [11], "trials": [10]}, r"look 1: successes \(11.0\) must lie between"),
    ({"successes": [1, 2], "trials": [10]}, "one value per look"),
    ({"successes": [1], "trials": [10], "t_opt": 0}, "t_opt must be a positive number"),
    ({"successes": [1], "trials": [10], "confidence_level": 1.2}, "confidence_level must lie"),
])
def test_proportion_cs_refuses_bad_input(kwargs, match):
    with pytest.raises(MedauditError, match=match):
        proportion_cs(**kwargs)


# ----------------------------------------------------------------------------- auroc_cs

def test_auroc_cs_by_hand():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300).astype(float)
    s = rng.normal(size=300) + y
    looks = [60, 150, 300]
    r = auroc_cs(y, s, looks=looks, confidence_level=0.9)
    for k, m in enumerate(looks, start=1):
        auc = roc_auc_score(y[:m], s[:m])
        n_min = min(y[:m].sum(), m - y[:m].sum())
        eps = math.sqrt(math.log(2 / (0.1 / (k * (k + 1)))) / (2 * n_min))
        assert r.estimate[k - 1] == pytest.approx(auc, rel=1e-12)
        assert r.ci_low[k - 1] == pytest.approx(max(auc - eps, 0), rel=1e-12)
        assert r.ci_high[k - 1] == pytest.approx(min(auc + eps, 1), rel=1e-12)
        assert r.alpha_look[k - 1] == pytest.approx(0.1 / (k * (k + 1)))


def test_auroc_cs_one_class_look_is_undefined():
    r = auroc_cs([1, 1, 0, 0], [0.9, 0.8, 0.1, 0.2], looks=[2, 4])
    assert math.isnan(r.estimate[0]) and (r.ci_low[0], r.ci_high[0]) == (0.0, 1.0)
    assert r.estimate[1] == 1.0


def test_auroc_cs_covers_at_every_look_in_simulation():
    """400 binormal streams, 10 looks each; the true AUROC is Phi(1 / sqrt 2)."""
    rng = np.random.default_rng(2026)
    truth = stats.norm.cdf(1 / math.sqrt(2))
    misses = 0
    for _ in range(400):
        y = (rng.random(500) < 0.3).astype(float)
        s = rng.normal(size=500) + y
        r = auroc_cs(y, s, looks=np.arange(50, 501, 50))
        misses += bool(((r.ci_low > truth) | (r.ci_high < truth)).any())
    assert stats.binomtest(misses, 400, 0.05, alternative="greater").pvalue > 0.01


def test_union_alpha_sums_to_alpha():
    assert union_alpha(np.arange(1, 100_001), 0.05).sum() == pytest.approx(0.05 * 100_000 / 100_001)


# ----------------------------------------------------------------------------- RCIs

def test_proportion_rci_is_wilson_at_the_boundary():
    s, n = [30, 55, 90], [100, 200, 310]
    r = proportion_rci(s, n, planned_looks=4, spending="pocock")
    b = spending_bounds(n, alpha=0.05, spending="pocock", fractions=[0.25, 0.5, 0.75])
    for k in range(3):
        lo, hi = proportion_confint(s[k], n[k], alpha=2 * stats.norm.sf(b.bounds[k]),
                                    method="wilson")
        assert r.ci_low[k] == pytest.approx(lo, rel=1e-10)
        assert r.ci_high[k] == pytest.approx(hi, rel=1e-10)


def test_rci_refuses_looks_beyond_the_plan():
    with pytest.raises(MedauditError, match="look 3 is beyond the 2 planned looks"):
        proportion_rci([1, 2, 3], [10, 20, 30], planned_looks=2)


def test_rci_repeats_a_look_without_new_cases():
    r = proportion_rci([5, 5, 9], [10, 10, 20], planned_looks=3)
    assert r.ci_low[0] == r.ci_low[1] and r.ci_high[0] == r.ci_high[1]


def test_proportion_rci_simultaneous_coverage():
    """1,000 streams, 6 planned looks of 150 trials; the normal approximation holds here."""
    rng = np.random.default_rng(7)
    p, miss = 0.8, 0
    n = np.arange(1, 7) * 150
    for _ in range(1000):
        s = np.cumsum(rng.binomial(150, p, size=6))
        r = proportion_rci(s, n, planned_looks=6)
        miss += bool(((r.ci_low > p) | (r.ci_high < p)).any())
    assert stats.binomtest(miss, 1000, 0.05).pvalue > 0.01


def test_auroc_rci_is_delong_at_the_boundary():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400).astype(float)
    s = rng.normal(size=400) + 0.8 * y
    looks = [100, 250, 400]
    r = auroc_rci(y, s, looks=looks, planned_looks=3)
    for k, m in enumerate(looks):
        ci = delong_ci(y[:m], s[:m], confidence_level=1 - r.alpha_look[k])
        assert r.ci_low[k] == pytest.approx(ci.ci_low, rel=1e-9)
        assert r.ci_high[k] == pytest.approx(ci.ci_high, rel=1e-9)


def test_wilson_interval_holds_its_estimate_and_is_exact_at_the_boundary():
    """11 of 11 used to give an upper bound of 0.9999999999999999 (below the estimate 1.0),
    which crashed the monitor figure.  Witness: statsmodels' Wilson interval inside."""
    from scipy import special
    from statsmodels.stats.proportion import proportion_confint

    from medaudit.stats.sequential import wilson_interval

    n = np.arange(1.0, 400.0)
    for frac in (0.0, 1.0):
        s = frac * n
        z = np.full(n.shape, 2.4)
        lo, hi = wilson_interval(s, n, z)
        assert np.all(lo <= s / n) and np.all(s / n <= hi)
        assert np.all((lo == 0.0) if frac == 0.0 else (hi == 1.0))
    rng = np.random.default_rng(3)
    n = rng.integers(1, 500, 300).astype(float)
    s = np.floor(rng.random(300) * (n + 1))
    z = rng.uniform(1.0, 3.5, 300)
    lo, hi = wilson_interval(s, n, z)
    assert np.all(lo <= s / n) and np.all(s / n <= hi)
    ref_lo, ref_hi = proportion_confint(s, n, alpha=2 * special.ndtr(-z), method="wilson")
    np.testing.assert_allclose(lo, ref_lo, atol=1e-12)
    np.testing.assert_allclose(hi, ref_hi, atol=1e-12)
