"""Tests of threshold transport (B-THR-SRC, B-THR-FIX); the negative-group permutation test is in
test_permutation.py.

Draws are reproduced from the seed exactly as the implementation documents them:
``threshold_transport`` spawns two child generators (``gen.spawn(2)``: source, then
target) and draws within-label weights from each; every replicate is then checked
against the slow oracles of ``tests/_oracles.py`` on the materialised resamples
(``np.repeat(np.arange(n), w)``: copies adjacent, items in input order).
"""

from __future__ import annotations

import numpy as np
import pytest

from medaudit.exceptions import MedauditError
from medaudit.stats import threshold_transport
from medaudit.stats.designs import make_plan
from tests import _oracles as O

RTOL = 1e-12


def materialise(w):
    wi = w.astype(int)
    assert np.array_equal(wi, w)
    return np.repeat(np.arange(w.size), wi)


def transport_draws(ys, yt, n_resamples, seed):
    """(source weights, target weights) as threshold_transport draws them from ``seed``."""
    g_src, g_tgt = np.random.default_rng(seed).spawn(2)
    ws = np.vstack(list(make_plan("within_label", ys).batches(n_resamples, g_src)))
    wt = np.vstack(list(make_plan("within_label", yt).batches(n_resamples, g_tgt)))
    return ws, wt


def cohorts(seed=3):
    """Source and target cohorts with scores on a 0.1 grid (heavy ties)."""
    rng = np.random.default_rng(seed)
    ys = np.r_[np.ones(18), np.zeros(22)]
    ss = np.round(np.clip(0.35 * ys + 0.7 * rng.random(ys.size), 0, 1), 1)
    yt = np.r_[np.ones(13), np.zeros(17)]
    st = np.round(np.clip(0.25 * yt + 0.8 * rng.random(yt.size), 0, 1), 1)
    return ys, ss, yt, st


TAU = {"sensitivity": O.tau_sensitivity, "specificity": O.tau_specificity}


# ------------------------------------------------------------------- point estimates
@pytest.mark.parametrize("rule", ["sensitivity", "specificity"])
@pytest.mark.parametrize("x", [0.5, 0.8, 0.9, 0.95, 1.0])
def test_transport_point_estimates_match_oracles(rule, x):
    ys, ss, yt, st = cohorts()
    r = threshold_transport(ys, ss, yt, st, rule=rule, target_value=x, design="fixed",
                            n_resamples=20, rng=0)
    tau = TAU[rule](ys, ss, x)
    assert r.threshold == tau
    assert (r.source_sensitivity, r.source_specificity) == pytest.approx(O.se_sp_at(ys, ss, tau),
                                                                         rel=RTOL)
    se, sp = O.se_sp_at(yt, st, tau)
    assert r.target_sensitivity.estimate == pytest.approx(se, rel=RTOL)
    assert r.target_specificity.estimate == pytest.approx(sp, rel=RTOL)
    assert r.sensitivity_retained == (se >= x) and r.specificity_retained == (sp >= x)
    assert (r.rule, r.target_value) == (rule, x)


def test_retention_uses_point_estimates_at_exactly_the_target():
    # source: 20 positives, the 19 highest at 0.6 -> tau_sensitivity(0.95) = 0.6
    ys = np.r_[np.ones(20), np.zeros(20)]
    ss = np.r_[np.full(19, 0.6), 0.3, np.linspace(0.0, 0.55, 20)]
    assert O.tau_sensitivity(ys, ss, 0.95) == 0.6
    # target: 19 of 20 positives at >= 0.6 and 19 of 20 negatives below -> Se = Sp = 0.95
    yt = np.r_[np.ones(20), np.zeros(20)]
    st = np.r_[np.full(18, 0.8), 0.6, 0.59, np.full(19, 0.2), 0.6]
    r = threshold_transport(ys, ss, yt, st, target_value=0.95, design="fixed",
                            n_resamples=200, rng=1)
    assert r.threshold == 0.6
    assert (r.target_sensitivity.estimate, r.target_specificity.estimate) == (0.95, 0.95)
    assert r.sensitivity_retained and r.specificity_retained
    # retention is decided by the point estimate even though the interval reaches below 0.95
    assert r.target_sensitivity.ci_low < 0.95
    # one positive fewer above the threshold: Se = 0.9 -> not retained
    st2 = st.copy()
    st2[17] = 0.1
    r2 = threshold_transport(ys, ss, yt, st2, target_value=0.95, design="fixed",
                             n_resamples=50, rng=1)
    assert r2.target_sensitivity.estimate == 0.9
    assert not r2.sensitivity_retained and r2.specificity_retained


# ----------------------------------------------------------------------- designs
@pytest.mark.parametrize("rule", ["sensitivity", "specificity"])
def test_fixed_design_resamples_only_the_target(rule):
    ys, ss, yt, st = cohorts()
    n_res, seed = 60, 2026
    r = threshold_transport(ys, ss, yt, st, rule=rule, target_value=0.9, design="fixed",
                            n_resamples=n_res, rng=seed)
    tau = TAU[rule](ys, ss, 0.9)
    assert r.threshold_replicates.shape == (n_res,)
    assert np.all(r.threshold_replicates == tau)
    _, wt = transport_draws(ys, yt, n_res, seed)
    np.testing.assert_array_equal(wt @ yt, yt.sum())  # target class sizes kept
    np.testing.assert_array_equal(wt @ (1 - yt), (1 - yt).sum())
    expected = np.array([O.se_sp_at(yt[materialise(w)], st[materialise(w)], tau) for w in wt])
    np.testing.assert_allclose(r.target_sensitivity.replicates, expected[:, 0], rtol=RTOL)
    np.testing.assert_allclose(r.target_specificity.replicates, expected[:, 1], rtol=RTOL)
    assert np.unique(expected[:, 0]).size > 1
    lo, hi = np.percentile(r.target_sensitivity.replicates, [2.5, 97.5])
    assert (r.target_sensitivity.ci_low, r.target_sensitivity.ci_high) == pytest.approx(
        (lo, hi), rel=1e-14)
    assert (r.design, r.seed, r.n_resamples) == ("threshold_fixed", seed, n_res)
    assert r.target_sensitivity.design == "threshold_fixed"
    assert (r.target_sensitivity.n_pos, r.target_sensitivity.n_neg) == (13, 17)


@pytest.mark.parametrize("rule", ["sensitivity", "specificity"])
@pytest.mark.parametrize("x", [0.8, 0.95])
def test_reestimate_design_re_estimates_tau_on_each_source_resample(rule, x):
    ys, ss, yt, st = cohorts()
    n_res, seed = 60, 7
    r = threshold_transport(ys, ss, yt, st, rule=rule, target_value=x, design="reestimate",
                            n_resamples=n_res, rng=seed)
    ws, wt = transport_draws(ys, yt, n_res, seed)
    np.testing.assert_array_equal(ws @ ys, ys.sum())
    np.testing.assert_array_equal(ws @ (1 - ys), (1 - ys).sum())
    np.testing.assert_array_equal(wt @ yt, yt.sum())
    np.testing.assert_array_equal(wt @ (1 - yt), (1 - yt).sum())
    taus = np.array([TAU[rule](ys[materialise(w)], ss[materialise(w)], x) for w in ws])
    np.testing.assert_array_equal(r.threshold_replicates, taus)
    assert np.unique(taus).size > 1  # the threshold varies across replicates
    expected = np.array([O.se_sp_at(yt[materialise(w)], st[materialise(w)], t)
                         for w, t in zip(wt, taus, strict=True)])
    np.testing.assert_allclose(r.target_sensitivity.replicates, expected[:, 0], rtol=RTOL)
    np.testing.assert_allclose(r.target_specificity.replicates, expected[:, 1], rtol=RTOL)
    assert r.threshold == TAU[rule](ys, ss, x)
    assert (r.design, r.target_specificity.design) == ("threshold_reestimate",) * 2


def test_reestimate_tau_sensitivity_at_target_value_zero():
    """target_value=0 is accepted (closed interval).  Se(t) >= 0 holds for every t, so the
    rule "highest observed score with Se >= x" gives the largest score *in the source
    resample*.

    FAILS (medaudit bug): ``_kernels.tau_sensitivity`` takes the first tie block whose
    cumulative Se passes, and with x = 0 that is the first block even when it has zero
    weight in the replicate; the replicate threshold is then the full-sample maximum, a
    score that was not drawn.
    """
    ys, ss, yt, st = cohorts()
    n_res, seed = 40, 7
    r = threshold_transport(ys, ss, yt, st, rule="sensitivity", target_value=0.0,
                            design="reestimate", n_resamples=n_res, rng=seed)
    ws, _ = transport_draws(ys, yt, n_res, seed)
    taus = np.array([O.tau_sensitivity(ys[materialise(w)], ss[materialise(w)], 0.0) for w in ws])
    assert r.threshold == ss.max() == O.tau_sensitivity(ys, ss, 0.0)
    np.testing.assert_array_equal(r.threshold_replicates, taus)


@pytest.mark.parametrize("design", ["reestimate", "fixed"])
def test_transport_batch_size_does_not_change_results(design):
    ys, ss, yt, st = cohorts()
    runs = [threshold_transport(ys, ss, yt, st, design=design, target_value=0.9, n_resamples=70,
                                rng=5, batch=b) for b in (None, 1, 9)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.threshold_replicates, runs[0].threshold_replicates)
        np.testing.assert_array_equal(r.target_sensitivity.replicates,
                                      runs[0].target_sensitivity.replicates)
        np.testing.assert_array_equal(r.target_specificity.replicates,
                                      runs[0].target_specificity.replicates)


def test_transport_same_seed_same_result_and_target_draws_shared_by_designs():
    ys, ss, yt, st = cohorts()
    a = threshold_transport(ys, ss, yt, st, n_resamples=30, rng=9)
    b = threshold_transport(ys, ss, yt, st, n_resamples=30, rng=9)
    np.testing.assert_array_equal(a.threshold_replicates, b.threshold_replicates)
    np.testing.assert_array_equal(a.target_sensitivity.replicates, b.target_sensitivity.replicates)
    c = threshold_transport(ys, ss, yt, st, n_resamples=30, rng=10)
    assert not np.array_equal(a.threshold_replicates, c.threshold_replicates)


TRANSPORT_BAD = {
    "design typo": (dict(design="fixd"), r"design='fixd'.*Did you mean 'fixed'"),
    "rule typo": (dict(rule="sensitivty"), r"rule='sensitivty'.*Did you mean 'sensitivity'"),
    "target value": (dict(target_value=1.2), r"target_value must lie in \[0\.0, 1\.0\]"),
    "n_resamples": (dict(n_resamples=0), r"n_resamples must be a positive integer"),
    "confidence level": (dict(confidence_level=1.5), r"confidence_level must lie in"),
}


@pytest.mark.parametrize("name", list(TRANSPORT_BAD))
def test_transport_bad_options(name):
    kw, pattern = TRANSPORT_BAD[name]
    ys, ss, yt, st = cohorts()
    with pytest.raises(MedauditError, match=pattern):
        threshold_transport(ys, ss, yt, st, **kw)


def test_transport_refuses_single_class_cohorts_and_length_mismatch():
    ys, ss, yt, st = cohorts()
    with pytest.raises(MedauditError, match=r"the target cohort needs both positives and neg"):
        threshold_transport(ys, ss, np.ones(4), st[:4])
    with pytest.raises(MedauditError, match=r"y_score_source has 39"):
        threshold_transport(ys, ss[:-1], yt, st)


def test_transport_to_targets_shares_source_replicates():
    from medaudit.stats import threshold_transport, transport_to_targets

    rng = np.random.default_rng(8)
    ys = np.r_[np.ones(40), np.zeros(60)]
    ss = np.round(rng.random(100) * 0.7 + 0.3 * ys, 2)
    ya, sa = np.r_[np.ones(15), np.zeros(20)], np.round(rng.random(35), 2)
    yb, sb = np.r_[np.ones(10), np.zeros(30)], np.round(rng.random(40), 2)
    one = threshold_transport(ys, ss, ya, sa, n_resamples=120, rng=4)
    multi1 = transport_to_targets(ys, ss, {"target": (ya, sa)}, n_resamples=120, rng=4)["target"]
    # a single target reproduces threshold_transport exactly (same child streams)
    np.testing.assert_array_equal(one.target_sensitivity.replicates,
                                  multi1.target_sensitivity.replicates)
    both = transport_to_targets(ys, ss, {"a": (ya, sa), "b": (yb, sb)},
                                design={"a": "reestimate", "b": "fixed"}, n_resamples=120, rng=4)
    # one source resample per replicate serves every re-estimating target
    np.testing.assert_array_equal(both["a"].threshold_replicates, one.threshold_replicates)
    assert np.all(both["b"].threshold_replicates == both["b"].threshold)
    assert both["a"].design == "threshold_reestimate" and both["b"].design == "threshold_fixed"
    # each target's point estimates equal the oracle at the source threshold
    tau = O.tau_sensitivity(ys, ss, 0.95)
    assert both["b"].threshold == tau
    se, sp = O.se_sp_at(yb, sb, tau)
    assert both["b"].target_sensitivity.estimate == se and both["b"].target_specificity.estimate == sp


def test_transport_grid_is_each_model_and_rule_on_one_draw():
    """One draw per replicate and cohort for every model and rule: each (model, rule) of the
    grid is transport_to_targets of that model and rule with the same generator, to the last
    bit (the draws do not depend on the scores or the rule)."""
    from medaudit.stats import transport_to_targets
    from medaudit.stats.transport import transport_grid

    rng = np.random.default_rng(21)
    ys = np.r_[np.ones(40), np.zeros(60)]
    ya, yb = np.r_[np.ones(15), np.zeros(20)], np.r_[np.ones(10), np.zeros(30)]
    models = ("m1", "m2", "m3")
    src = {m: np.round(rng.random(100) * 0.7 + (0.2 + 0.1 * i) * ys, 2)
           for i, m in enumerate(models)}
    tgt = {"a": (ya, {m: np.round(rng.random(35) + 0.3 * ya, 2) for m in models}),
           "b": (yb, {m: np.round(rng.random(40) + 0.2 * yb, 2) for m in models})}
    rules = {"se": ("sensitivity", 0.9, None), "sp": ("specificity", 0.8, None),
             "youden": ("youden", None, None), "ctl": ("closest_topleft", None, (2.0, 0.2))}
    design = {"a": "reestimate", "b": "fixed"}
    grid = transport_grid(ys, src, tgt, rules=rules, design=design, n_resamples=90, rng=13,
                          batch=7)
    assert sorted(grid) == sorted((m, r) for m in models for r in rules)
    for m in models:
        for label, (rule, x, w) in rules.items():
            one = transport_to_targets(ys, src[m], {k: (y, s[m]) for k, (y, s) in tgt.items()},
                                       rule=rule, target_value=x, weights=w, design=design,
                                       n_resamples=90, rng=13)
            for k in tgt:
                got, want = grid[(m, label)][k], one[k]
                assert got.threshold == want.threshold
                np.testing.assert_array_equal(got.threshold_replicates, want.threshold_replicates)
                for a, b in ((got.target_sensitivity, want.target_sensitivity),
                             (got.target_specificity, want.target_specificity)):
                    np.testing.assert_array_equal(a.replicates, b.replicates)
                    assert (a.estimate, a.ci_low, a.ci_high) == (b.estimate, b.ci_low, b.ci_high)
                assert (got.sensitivity_retained, got.specificity_retained) == (
                    want.sensitivity_retained, want.specificity_retained)
    # and the thresholds of the source are the definitions'
    for m in models:
        assert grid[(m, "se")]["a"].threshold == O.tau_sensitivity(ys, src[m], 0.9)
        assert grid[(m, "sp")]["a"].threshold == O.tau_specificity(ys, src[m], 0.8)


@pytest.mark.parametrize("kw, message", [
    ({"rules": {}}, r"rules must be a non-empty mapping"),
    ({"rules": {"x": ("sensitivity", 0.9)}}, r"rules\['x'\] must be a \(rule, target_value"),
    ({"rules": {"x": ("youden", 0.9, None)}}, r"takes no target_value"),
    ({"targets": {"t": ([1, 0], {"other": [0.2, 0.1]})}}, r"must score the names of source_scores"),
    ({"targets": {"t": ([1, 0], [0.2, 0.1])}}, r"targets\['t'\] must be a \(y_true, mapping"),
])
def test_transport_grid_errors(kw, message):
    from medaudit.stats.transport import transport_grid

    args = {"rules": {"se": ("sensitivity", 0.9, None)},
            "targets": {"t": ([1, 1, 0], {"m": [0.9, 0.4, 0.2]})}, **kw}
    with pytest.raises(MedauditError, match=message):
        transport_grid([1, 1, 0, 0], {"m": [0.9, 0.8, 0.3, 0.1]}, args["targets"],
                       rules=args["rules"], n_resamples=10, rng=0)
