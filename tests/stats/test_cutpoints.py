"""Threshold selection (Youden, closest-to-(0, 1); pROC ``coords(x = "best")``) and its bootstrap.

Witnesses: pROC 1.18 for both ``best.method``s and four ``best.weights`` on six data sets,
every tied row included (tests/reference/coords_best_pROC.csv); a loop oracle over the
thresholds; hand-worked ties, one-class and zero-cell inputs; replicates against the
point function on materialised resamples; the engine metrics ``cutpoint_*``; transport
with ``rule="youden"``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.exceptions import DegenerateDataWarning, MedauditError, UndefinedMetricWarning
from medaudit.stats import (
    best_threshold,
    best_threshold_ci,
    bootstrap_metrics,
    operating_point,
    threshold_transport,
)
from medaudit.stats.designs import make_plan
from tests.stats import _oracles_peers as O

REF = Path(__file__).resolve().parents[1] / "reference"
DATA = pd.read_csv(REF / "peers_pROC_data.csv", comment="#")
BEST = pd.read_csv(REF / "coords_best_pROC.csv", comment="#")
METHODS = {"youden": "youden", "closest.topleft": "closest_topleft"}


def _midpoints(s, thresholds):
    u = np.unique(s)[::-1]
    out = []
    for t in thresholds:
        if math.isinf(t):
            out.append(math.inf)
            continue
        i = int(np.flatnonzero(u == t)[0])
        out.append(-math.inf if i == u.size - 1 else (u[i] + u[i + 1]) / 2)
    return out


GROUPS = list(BEST.groupby(["dataset", "curve", "method", "cost", "prevalence"], sort=False))


@pytest.mark.r_reference
@pytest.mark.parametrize("key, ref", GROUPS, ids=[str(k) for k, _ in GROUPS])
def test_matches_pROC_every_tied_threshold(key, ref):
    name, curve, method, cost, prev = key
    d = DATA[DATA.dataset == name].sort_values("item")
    y, s = d.y_true.to_numpy(float), d[f"score_{curve}"].to_numpy(float)
    c = best_threshold(y, s, method=METHODS[method], weights=(cost, prev))
    got = _midpoints(s, c.tied_thresholds)
    # every threshold pROC lists is tied in medaudit too
    for t in ref.threshold:
        assert any(t == g or abs(t - g) <= 1e-12 * abs(t) for g in got), (t, got)
    # medaudit may find more: pROC compares criteria with ==, so ties that are exact in
    # rational arithmetic can differ in the last bit and be missed; check those are exact
    crit = {t: _exact_criterion(y, s, t, METHODS[method], cost, prev) for t in c.tied_thresholds}
    assert len(set(crit.values())) == 1, crit
    # the one returned is the highest tied threshold, with its Se and Sp
    assert c.threshold == max(c.tied_thresholds)
    if c.threshold_midpoint in set(ref.threshold) or len(got) == len(ref):
        top = ref.loc[ref.threshold.idxmax()]
        assert c.threshold_midpoint == pytest.approx(top.threshold, rel=1e-12)
        assert c.sensitivity == pytest.approx(top.sensitivity, rel=1e-12, abs=1e-15)
        assert c.specificity == pytest.approx(top.specificity, rel=1e-12, abs=1e-15)


def _exact_criterion(y, s, t, method, cost, prev):
    """The criterion at threshold t in rational arithmetic (weights as their decimal values)."""
    from fractions import Fraction as F

    tp = sum(1 for yi, si in zip(y, s, strict=True) if yi == 1 and si >= t)
    tn = sum(1 for yi, si in zip(y, s, strict=True) if yi == 0 and si < t)
    n_pos, n_neg = int(sum(y)), int(len(y) - sum(y))
    pv, cv = F(repr(float(prev))), F(repr(float(cost)))
    r = (1 - pv) / (cv * pv)
    se, sp = F(tp, n_pos), F(tn, n_neg)
    return se + r * sp if method == "youden" else -((1 - se) ** 2 + r * (1 - sp) ** 2)


def test_reference_has_ties():
    assert (BEST.n_tied > 1).any()


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("method", ["youden", "closest_topleft"])
def test_loop_oracle(seed, method):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    y = (rng.random(n) < 0.5).astype(float)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=n) + y, int(rng.integers(0, 2)))
    w = rng.integers(1, 4, size=n).astype(float) if seed % 2 else None
    cost, prev = float(rng.uniform(0.3, 3)), float(rng.uniform(0.05, 0.95))
    c = best_threshold(y, s, method=method, weights=(cost, prev), sample_weight=w)
    thr, se, sp, tied = O.best_threshold(y, s, method, cost, prev, w)
    assert c.threshold == thr and c.tied_thresholds.tolist() == tied
    assert (c.sensitivity, c.specificity) == pytest.approx((se, sp), abs=1e-14)
    op = operating_point(y, s, threshold=c.threshold) if w is None else None
    if op is not None:
        assert (op.sensitivity, op.specificity) == pytest.approx((se, sp), abs=1e-14)


def test_hand_worked_tie_goes_to_the_highest_threshold():
    # J = Se + Sp: inf 1, t=4 1.5, t=3 1, t=2 1.5, t=1 1 -> thresholds 4 and 2 tie
    c = best_threshold([0, 1, 0, 1], [1, 2, 3, 4])
    assert c.threshold == 4.0 and c.tied_thresholds.tolist() == [4.0, 2.0]
    assert (c.sensitivity, c.specificity, c.criterion) == (0.5, 1.0, 1.5)
    assert c.threshold_midpoint == 3.5  # pROC reports 3.5 and 1.5
    # a cost that favours sensitivity breaks the tie the other way
    assert best_threshold([0, 1, 0, 1], [1, 2, 3, 4], weights=(2, 0.5)).threshold == 2.0


def test_zero_cells_and_a_useless_score():
    # perfect separation: Se = Sp = 1 at the lowest positive score, J = 2
    c = best_threshold([0, 0, 1, 1], [0.1, 0.2, 0.7, 0.9])
    assert (c.threshold, c.sensitivity, c.specificity, c.criterion) == (0.7, 1.0, 1.0, 2.0)
    # a constant score: only +inf (Sp 1) and everything positive (Se 1) exist, tied
    c = best_threshold([0, 1, 0, 1], [0.5] * 4)
    assert c.threshold == math.inf and c.tied_thresholds.tolist() == [math.inf, 0.5]
    assert c.threshold_midpoint == math.inf


def test_one_class_is_nan_with_a_warning():
    with pytest.warns(UndefinedMetricWarning, match="no negatives"):
        c = best_threshold([1, 1, 1], [0.2, 0.4, 0.6])
    assert math.isnan(c.threshold) and math.isnan(c.sensitivity)
    with pytest.raises(MedauditError, match="both positives and negatives"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            best_threshold_ci([1, 1, 1], [0.2, 0.4, 0.6], n_resamples=5)


def test_bootstrap_replicates_on_materialised_resamples():
    rng = np.random.default_rng(4)
    n = 50
    y = (rng.random(n) < 0.5).astype(float)
    s = np.round(rng.normal(size=n) + y, 1)
    res = best_threshold_ci(y, s, method="closest_topleft", weights=(1.5, 0.3),
                            design="within_label", n_resamples=40, rng=6, batch=9)
    draws = np.concatenate(list(make_plan("within_label", y).batches(40, np.random.default_rng(6), 9)))
    for b in range(40):
        yb, sb = O.materialise(y, s, draws[b])
        thr, se, sp, _ = O.best_threshold(yb, sb, "closest_topleft", 1.5, 0.3)
        assert res.threshold.replicates[b] == thr
        assert res.sensitivity.replicates[b] == pytest.approx(se, abs=1e-14)
        assert res.specificity.replicates[b] == pytest.approx(sp, abs=1e-14)
    # the threshold's interval ends are thresholds some replicate chose
    assert res.threshold.ci_low in res.threshold.replicates
    assert res.threshold.ci_high in res.threshold.replicates
    # the engine metrics give the same replicates
    eng = bootstrap_metrics(y, s, metrics=[(m, {"method": "closest_topleft", "cost": 1.5,
                                                "prevalence": 0.3})
                                           for m in ("cutpoint_threshold", "cutpoint_sensitivity",
                                                     "cutpoint_specificity")],
                            design="within_label", n_resamples=40, rng=6, batch=9)
    reps = [v.replicates for v in eng.values()]
    np.testing.assert_array_equal(reps[0], res.threshold.replicates)
    np.testing.assert_array_equal(reps[1], res.sensitivity.replicates)
    np.testing.assert_array_equal(reps[2], res.specificity.replicates)


def test_transport_with_the_youden_rule():
    rng = np.random.default_rng(2)
    ys = (rng.random(200) < 0.4).astype(float)
    ss = rng.normal(size=200) + 1.3 * ys
    yt = (rng.random(150) < 0.3).astype(float)
    st = rng.normal(size=150) + 0.8 * yt
    r = threshold_transport(ys, ss, yt, st, rule="youden", n_resamples=200, rng=1)
    c = best_threshold(ys, ss)
    assert r.threshold == c.threshold and math.isnan(r.target_value)
    op = operating_point(yt, st, threshold=c.threshold)
    assert r.target_sensitivity.estimate == op.sensitivity
    assert r.sensitivity_retained == (op.sensitivity >= c.sensitivity - 1e-12)
    # each re-estimating replicate's threshold is Youden's on that source resample
    draws = next(make_plan("within_label", ys).batches(200, np.random.default_rng(1).spawn(3)[0]))
    yb, sb = O.materialise(ys, ss, draws[0])
    assert r.threshold_replicates[0] == O.best_threshold(yb, sb)[0]
    fixed = threshold_transport(ys, ss, yt, st, rule="closest_topleft", weights=(2, 0.3),
                                design="fixed", n_resamples=50, rng=1)
    assert (fixed.threshold_replicates == fixed.threshold).all()
    assert fixed.threshold == best_threshold(ys, ss, method="closest_topleft",
                                             weights=(2, 0.3)).threshold
    with pytest.raises(MedauditError, match="target_value"):
        threshold_transport(ys, ss, yt, st, rule="youden", target_value=0.9, n_resamples=5)
    with pytest.raises(MedauditError, match="weights"):
        threshold_transport(ys, ss, yt, st, rule="sensitivity", weights=(1, 0.5), n_resamples=5)


def test_threshold_interval_has_no_infinite_end():
    """A weak score: in many replicates no threshold beats calling nothing positive (J <= 0
    everywhere), the rule keeps +inf ("above every score") and the upper order statistic
    is that atom.  The interval reports the end as nan (no finite threshold), counts the
    replicates and warns; the lower end is still the order statistic over *all* replicates."""
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(20), np.zeros(20)]
    s = rng.normal(size=40)
    with pytest.warns(DegenerateDataWarning, match="called nothing positive in 86 of 500"):
        res = best_threshold_ci(y, s, n_resamples=500, rng=1)
    reps = res.threshold.replicates
    assert res.n_no_positive == int(np.isinf(reps).sum()) == 86  # above the 2.5 % tail (12.5)
    assert np.isnan(res.threshold.ci_high) and np.isfinite(res.threshold.ci_low)
    # numpy's "lower" order statistic written out: index floor(q (B - 1)) of the sorted values
    assert res.threshold.ci_low == np.sort(reps)[int(np.floor(0.025 * 499))]
    # in those replicates the rule's Se and Sp are those of calling nothing positive
    assert (res.sensitivity.replicates[np.isinf(reps)] == 0).all()
    assert (res.specificity.replicates[np.isinf(reps)] == 1).all()
    assert res.to_dict()["n_no_positive"] == 86


def test_threshold_interval_of_a_constant_score():
    # hand-worked: every resample of a constant score is constant, so +inf (Sp 1) ties the
    # only observed threshold (Se 1) in every replicate and wins the tie: no finite end
    with pytest.warns(DegenerateDataWarning, match="called nothing positive in 50 of 50"):
        res = best_threshold_ci([0, 1, 0, 1, 1, 0], [0.5] * 6, n_resamples=50, rng=0)
    assert res.cutpoint.threshold == math.inf and res.n_no_positive == 50
    assert math.isnan(res.threshold.ci_low) and math.isnan(res.threshold.ci_high)
    assert (res.sensitivity.ci_low, res.sensitivity.ci_high) == (0.0, 0.0)
    assert (res.specificity.ci_low, res.specificity.ci_high) == (1.0, 1.0)


def test_engine_threshold_interval_with_no_positive_replicates():
    # the engine metric gives the same replicates as best_threshold_ci (test above); its
    # percentile interval must not trip over the +inf ones
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(20), np.zeros(20)]
    s = rng.normal(size=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        r = bootstrap_metrics(y, s, metrics=["cutpoint_threshold"], design="within_label",
                              n_resamples=500, rng=1)["cutpoint_threshold"]
    assert np.isnan(r.ci_high) and np.isfinite(r.ci_low)


def test_a_finite_interval_is_unchanged():
    # a good score never keeps +inf: no warning, no count, the order statistics as before
    rng = np.random.default_rng(3)
    y = np.r_[np.ones(30), np.zeros(30)]
    s = rng.normal(size=60) + 2.0 * y
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateDataWarning)
        res = best_threshold_ci(y, s, n_resamples=300, rng=2)
    reps = np.sort(res.threshold.replicates)
    assert res.n_no_positive == 0 and np.isfinite(reps).all()
    assert (res.threshold.ci_low, res.threshold.ci_high) == (
        reps[int(np.floor(0.025 * 299))], reps[int(np.ceil(0.975 * 299))])


def test_bad_options():
    with pytest.raises(MedauditError, match="method"):
        best_threshold([0, 1], [0.1, 0.2], method="youdens")
    for w in ((0, 0.5), (1, 1.0), (1,), "x"):
        with pytest.raises(MedauditError, match="weights"):
            best_threshold([0, 1], [0.1, 0.2], weights=w)
    with pytest.raises(MedauditError, match="cost"):
        bootstrap_metrics([0, 1], [0.1, 0.2], metrics=[("cutpoint_threshold", {"cost": -1})],
                          n_resamples=5)


def test_results_are_plain_records():
    import json

    res = best_threshold_ci([0, 1, 0, 1, 1, 0, 1, 0], [.1, .9, .3, .7, .6, .2, .8, .65],
                            n_resamples=30, rng=0)
    rec = json.loads(json.dumps(res.to_dict()))
    assert rec["cutpoint"]["method"] == "youden" and "replicates" not in rec["threshold"]
    assert len(res.to_dict(include_arrays=True)["threshold"]["replicates"]) == 30
