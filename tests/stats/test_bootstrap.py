"""Tests of the resampling engine (designs, weight kernels, bootstrap intervals).

The central witness: a replicate is a row ``w`` of multinomial counts, and every
metric the engine evaluates on ``w`` must equal the same metric computed from
scratch (scikit-learn or the slow oracles in ``tests/_oracles.py``) on the data
set materialised as ``idx = np.repeat(np.arange(n), w)``.  ``np.repeat`` keeps the
copies of an item next to each other and the items in input order, which is the
engine's documented tie semantics (paper 000 M0.10; ``medaudit.stats._kernels``).

The weight rows are reproduced independently of the engine's evaluation by
compiling the same design with :func:`medaudit.stats.designs.make_plan` and drawing
from ``np.random.default_rng(seed)``, the generator the public functions build
from an integer seed.
"""

from __future__ import annotations

import math
import time
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score

from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import (
    bootstrap_ci,
    bootstrap_metrics,
    paired_bootstrap,
    shared_positive_bootstrap,
)
from medaudit.stats._metricspec import Prepared, evaluate, parse_metrics
from medaudit.stats.designs import make_plan
from tests import _oracles as O
from tests.stats._helpers import (
    ATOL,
    DESIGN_CASES,
    HARD_METRICS,
    HARD_SPECS,
    PATIENT,
    RTOL,
    S_CL,
    Y_CL,
    _metric_id,
    _quiet,
    _sk_auroc,
    assert_reps_match,
    draw_weights,
    materialise,
    reference,
    tied_data,
)


# ------------------------------------------------- replicates == materialised data sets
@pytest.mark.parametrize("case", list(DESIGN_CASES))
def test_replicates_equal_metrics_on_materialised_resamples(case):
    design, kw = DESIGN_CASES[case]
    y, s = Y_CL, S_CL
    n_res, seed = 20, 1234
    res = _quiet(bootstrap_metrics, y, s, metrics=HARD_SPECS, design=design,
                 n_resamples=n_res, rng=seed, **kw)
    W = draw_weights(design, y, n_res, seed, **kw)
    assert W.shape == (n_res, y.size)
    idxs = [materialise(w) for w in W]
    for spec, fn, when in HARD_METRICS:
        mid = _metric_id(spec)
        r = res[mid]
        # point estimate: the metric on the full sample
        assert r.estimate == pytest.approx(reference(fn, when, y, s), rel=RTOL, abs=ATOL), mid
        expected = [reference(fn, when, y[i], s[i]) for i in idxs]
        assert_reps_match(r.replicates, expected, f"{case} {mid}")
        assert r.n_degenerate == int(np.isnan(expected).sum())


def test_oracles_agree_with_sklearn_on_materialised_resamples():
    """Cross-check of the two witnesses (pairwise AUROC, pooled AP) on tied resamples."""
    y, s = tied_data(3, 12, 18)
    res = bootstrap_metrics(y, s, metrics=["roc_auc", ("average_precision", {"ties": "pooled"})],
                            design="within_label", n_resamples=15, rng=8)
    for w, auc, ap in zip(draw_weights("within_label", y, 15, 8),
                          res["roc_auc"].replicates,
                          res["average_precision[ties=pooled]"].replicates, strict=True):
        i = materialise(w)
        assert auc == pytest.approx(O.auroc_pairwise(y[i], s[i]), rel=RTOL)
        assert ap == pytest.approx(O.average_precision_pooled(y[i], s[i]), rel=RTOL)


def test_evaluate_on_hand_made_weight_rows():
    """Extreme rows: zero weights on the top items, one item drawn n times, tied copies."""
    y, s = tied_data(11, 7, 9)
    n = y.size
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    order = np.argsort(-s, kind="stable")
    rows = [np.ones(n)]
    w = np.zeros(n)
    w[pos[0]], w[neg[0]] = n - 1, 1  # one positive n-1 times
    rows.append(w)
    w = np.ones(n)
    w[order[:4]] = 0  # the four highest scores not drawn ...
    w[order[-1]] += 4  # ... and the lowest drawn five times
    rows.append(w)
    w = np.zeros(n)
    w[pos] = 1
    w[neg[:3]] = [4, 3, 2]
    rows.append(w)
    rows.append(np.random.default_rng(0).multinomial(n, np.full(n, 1 / n)).astype(float))
    W = np.vstack(rows)
    specs = parse_metrics(HARD_SPECS)
    got = evaluate(Prepared.build(y, s, need_conf=True), specs, W)
    for (_spec, fn, when), m in zip(HARD_METRICS, specs, strict=True):
        expected = [reference(fn, when, y[materialise(w)], s[materialise(w)]) for w in W]
        assert_reps_match(got[m.id], expected, m.id)


def _soft_grouped_auroc(p, s):
    """Tie-pooled soft AUROC: sklearn on a positive copy (weight p) and a negative copy (1-p)."""
    if p.sum() == 0 or p.sum() == p.size:
        return math.nan
    return roc_auc_score(np.r_[np.ones(p.size), np.zeros(p.size)], np.r_[s, s],
                         sample_weight=np.r_[p, 1 - p])


def _soft_grouped_ap(p, s):
    if p.sum() == 0:
        return math.nan
    return average_precision_score(np.r_[np.ones(p.size), np.zeros(p.size)], np.r_[s, s],
                                   sample_weight=np.r_[p, 1 - p])


SOFT_METRICS = [
    (("soft_roc_auc", {"variant": "inclusive"}), O.soft_auroc_inclusive),
    (("soft_roc_auc", {"variant": "strict"}), O.soft_auroc_strict),
    (("soft_roc_auc", {"variant": "trapezoid"}), O.soft_auroc_trapezoid),
    (("soft_average_precision", {"variant": "as_written"}), O.soft_ap),
    ("soft_roc_auc", O.soft_auroc_strict),  # the defaults (paper 001 Table 4)
    ("soft_average_precision", O.soft_ap_known_self),
    (("soft_roc_auc", {"variant": "trapezoid", "ties": "grouped"}), _soft_grouped_auroc),
    (("soft_average_precision", {"variant": "as_written", "ties": "grouped"}), _soft_grouped_ap),
]


@pytest.mark.parametrize("design", ["ordinary", "within_label"])
def test_soft_metric_replicates_equal_double_sums_on_materialised_resamples(design):
    rng = np.random.default_rng(21)
    p = rng.choice([0.0, 0.2, 0.5, 0.7, 1.0], 26)
    s = np.round(rng.random(26), 1)
    n_res, seed = 15, 99
    res = _quiet(bootstrap_metrics, p, s, metrics=[m for m, _ in SOFT_METRICS], design=design,
                 n_resamples=n_res, rng=seed)
    # the engine stratifies soft labels by p > 0.5
    W = draw_weights(design, (p > 0.5).astype(float), n_res, seed)
    for spec, fn in SOFT_METRICS:
        mid = _metric_id(spec)
        assert res[mid].estimate == pytest.approx(fn(p, s), rel=RTOL), mid
        expected = []
        for w in W:
            i = materialise(w)
            # the oracles need both label masses; nan where the engine reports degenerate
            if p[i].sum() == 0 or (p[i].sum() == p[i].size and "roc" in mid):
                expected.append(math.nan)
            else:
                expected.append(fn(p[i], s[i]))
        assert_reps_match(res[mid].replicates, expected, f"{design} {mid}")


@pytest.mark.parametrize("design", ["ordinary", "within_label"])
def test_paired_replicates_share_one_draw(design):
    y, s_a = tied_data(5, 14, 16)
    s_b = np.round(np.clip(s_a + np.random.default_rng(6).choice([-0.2, 0, 0.1], y.size), 0, 1), 1)
    metrics = ["roc_auc", "average_precision", "brier_score", ("selective_risk", {"coverage": 0.8})]
    refs = [(_sk_auroc, "two"), (O.average_precision_individual, "pos"), (brier_score_loss, "any"),
            (lambda y, s: O.risk_at_coverage(y, s, 0.8), "any")]
    n_res, seed = 20, 31
    r = _quiet(paired_bootstrap, y, {"a": s_a, "b": s_b}, metrics=metrics, design=design,
               n_resamples=n_res, rng=seed)
    W = draw_weights(design, y, n_res, seed)
    for spec, (fn, when) in zip(metrics, refs, strict=True):
        mid = _metric_id(spec)
        ea = np.array([reference(fn, when, y[materialise(w)], s_a[materialise(w)]) for w in W])
        eb = np.array([reference(fn, when, y[materialise(w)], s_b[materialise(w)]) for w in W])
        assert_reps_match(r.marginal[("a", mid)].replicates, ea, f"a {mid}")
        assert_reps_match(r.marginal[("b", mid)].replicates, eb, f"b {mid}")
        d = r.differences[("a", "b", mid)]
        assert_reps_match(d.replicates, ea - eb, f"a-b {mid}")
        assert d.estimate == pytest.approx(reference(fn, when, y, s_a) - reference(fn, when, y, s_b),
                                           rel=RTOL, abs=ATOL)


def _shared_positive_layout(pos, groups):
    s = np.concatenate([pos, *groups.values()])
    y = np.r_[np.ones(pos.size), np.zeros(s.size - pos.size)]
    strata = np.concatenate([np.zeros(pos.size, dtype=int)] + [
        np.full(v.size, i + 1, dtype=int) for i, v in enumerate(groups.values())])
    return s, y, strata


def test_shared_positive_replicates_and_counts():
    rng = np.random.default_rng(13)
    pos = np.round(0.4 + 0.6 * rng.random(9), 1)
    groups = {"healthy": np.round(0.6 * rng.random(11), 1),
              "sick": np.round(0.2 + 0.8 * rng.random(13), 1),
              "tumor": np.round(rng.random(7), 1)}
    n_res, seed = 25, 2026
    r = shared_positive_bootstrap(pos, groups, metrics=["roc_auc", "average_precision"],
                                  n_resamples=n_res, rng=seed)
    s, y, strata = _shared_positive_layout(pos, groups)
    W = draw_weights("shared_positive", y, n_res, seed, strata=strata)
    # the positive count and each negative group's size are kept in every replicate
    np.testing.assert_array_equal(W[:, strata == 0].sum(axis=1), pos.size)
    for g, (name, v) in enumerate(groups.items(), start=1):
        np.testing.assert_array_equal(W[:, strata == g].sum(axis=1), v.size, err_msg=name)
    assert np.unique(W[:, strata == 0], axis=0).shape[0] > 1  # the positives are resampled
    expected = {}
    for g, name in enumerate(groups, start=1):
        keep = (strata == 0) | (strata == g)
        idxs = [materialise(w * keep) for w in W]
        expected[name, "roc_auc"] = np.array([O.auroc_pairwise(y[i], s[i]) for i in idxs])
        expected[name, "average_precision"] = np.array(
            [O.average_precision_individual(y[i], s[i]) for i in idxs])
        for mid in ("roc_auc", "average_precision"):
            m = r.marginal[(name, mid)]
            assert_reps_match(m.replicates, expected[name, mid], f"{name} {mid}")
            assert (m.n_pos, m.n_neg, m.n) == (pos.size, groups[name].size,
                                                pos.size + groups[name].size)
            assert m.estimate == pytest.approx(
                (O.auroc_pairwise if mid == "roc_auc" else O.average_precision_individual)(
                    y[keep], s[keep]), rel=RTOL)
    # contrasts use the same positive resample in both terms of each replicate
    for a, b, mid in r.differences:
        assert_reps_match(r.differences[(a, b, mid)].replicates,
                          expected[a, mid] - expected[b, mid], f"{a}-{b} {mid}")
    assert set(r.differences) == {(a, b, m) for a, b in [("healthy", "sick"), ("healthy", "tumor"),
                                                         ("sick", "tumor")]
                                  for m in ("roc_auc", "average_precision")}


# -------------------------------------------------------------------- determinism
def test_same_seed_same_replicates_different_seed_different():
    y, s = tied_data(4, 15, 25)
    kw = dict(metrics=["roc_auc", "brier_score"], design="within_label", n_resamples=200)
    r1, r2 = bootstrap_metrics(y, s, rng=7, **kw), bootstrap_metrics(y, s, rng=7, **kw)
    r3 = bootstrap_metrics(y, s, rng=8, **kw)
    for mid in r1:
        np.testing.assert_array_equal(r1[mid].replicates, r2[mid].replicates)
        assert (r1[mid].ci_low, r1[mid].ci_high) == (r2[mid].ci_low, r2[mid].ci_high)
        assert not np.array_equal(r1[mid].replicates, r3[mid].replicates)
    # a SeedSequence or a fresh Generator from the same seed give the same draws
    gen = np.random.default_rng(7)
    r4 = bootstrap_metrics(y, s, rng=gen, **kw)
    np.testing.assert_array_equal(r4["roc_auc"].replicates, r1["roc_auc"].replicates)
    assert r4["roc_auc"].seed == 7 and "fresh" in r4["roc_auc"].options["rng"]["seed_source"]
    # probe finding: the same generator again draws on from where it stopped, so seed 7 no
    # longer reproduces the result, and the result must not claim it does
    r5 = bootstrap_metrics(y, s, rng=gen, **kw)
    assert not np.array_equal(r5["roc_auc"].replicates, r1["roc_auc"].replicates)
    assert r5["roc_auc"].seed is None
    assert "may have drawn before this call" in r5["roc_auc"].options["rng"]["seed_source"]
    words = np.random.default_rng(np.random.SeedSequence([1, 2, 3]))  # entropy as a word list
    assert bootstrap_metrics(y, s, rng=words, **kw)["roc_auc"].options["rng"]["entropy"] == [1, 2, 3]
    assert bootstrap_metrics(y, s, rng=words, **kw)["roc_auc"].options["rng"]["entropy"] is None
    for bit in (np.random.MT19937, np.random.Philox, np.random.SFC64):  # states holding arrays
        g = np.random.Generator(bit(3))
        assert bootstrap_metrics(y, s, rng=g, **kw)["roc_auc"].seed == 3
        assert bootstrap_metrics(y, s, rng=g, **kw)["roc_auc"].seed is None


# metrics computed from integer counts only (exact in floating point whatever the order)
_COUNT_METRICS = ["roc_auc", "sensitivity_at_specificity", "specificity_at_sensitivity",
                  ("sensitivity", {"threshold": 0.5}), ("selective_risk", {"coverage": 0.8})]


def _batch_runs(design, metrics, batches):
    kw = dict(metrics=metrics, design=design, n_resamples=150, ci_method="bca", rng=17)
    if design == "cluster":
        kw["cluster"] = PATIENT
    return [_quiet(bootstrap_metrics, Y_CL, S_CL, batch=b, **kw) for b in batches]


@pytest.mark.parametrize("design", ["ordinary", "within_label", "cluster"])
def test_batch_size_does_not_change_draws(design):
    """The same replicate weights are drawn whatever the batch size: count-based metrics
    are identical bit for bit, every other metric to rounding."""
    runs = _batch_runs(design, HARD_SPECS, (None, 1, 7, 64, 1000))
    exact = {_metric_id(m) for m in _COUNT_METRICS}
    for r in runs[1:]:
        for mid in r:
            a, b = r[mid], runs[0][mid]
            if mid in exact:
                np.testing.assert_array_equal(a.replicates, b.replicates, err_msg=mid)
                assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
            else:
                assert_reps_match(a.replicates, b.replicates, mid)
    # and so does the plan's own batching
    plan = make_plan(design, Y_CL, cluster=PATIENT if design == "cluster" else None)
    a = np.vstack(list(plan.batches(150, np.random.default_rng(3), batch=11)))
    b = np.vstack(list(plan.batches(150, np.random.default_rng(3))))
    np.testing.assert_array_equal(a, b)


def test_batch_size_gives_bit_identical_results():
    """Documented: "results do not depend on it" (bootstrap_metrics, ``batch``).

    FAILS (medaudit bug): the draws are batch-independent, but the weighted sums are
    not evaluated in a batch-independent order (``w @ v`` through BLAS in
    ``class_sums``/``mean_loss``, ``np.sum(..., axis=-1)`` over a (b, n) block in
    ``average_precision_stable``/``aurc``), so replicates differ in the last bits
    between ``batch=1``, ``batch=7`` and the default, and so can the reported
    interval endpoints (seen for log_loss).
    """
    metrics = ["brier_score", "log_loss", "average_precision", "aurc"]
    runs = _batch_runs("within_label", metrics, (None, 1, 7))
    for r in runs[1:]:
        for mid in r:
            np.testing.assert_array_equal(r[mid].replicates, runs[0][mid].replicates,
                                          err_msg=mid)
            assert (r[mid].ci_low, r[mid].ci_high) == (runs[0][mid].ci_low,
                                                       runs[0][mid].ci_high), mid


def test_batch_size_does_not_change_paired_or_shared_positive():
    y, s_a = tied_data(5, 10, 12)
    s_b = s_a[::-1].copy()
    pr = [paired_bootstrap(y, {"a": s_a, "b": s_b}, design="within_label", n_resamples=90, rng=5,
                           batch=b) for b in (None, 4, 13)]
    sp = [shared_positive_bootstrap(s_a[:6], {"x": s_b[:7], "z": s_a[6:]}, n_resamples=90, rng=5,
                                    batch=b) for b in (None, 4, 13)]
    for runs in (pr, sp):
        for r in runs[1:]:
            for k in runs[0].differences:
                np.testing.assert_array_equal(r.differences[k].replicates,
                                              runs[0].differences[k].replicates)
            for k in runs[0].marginal:
                np.testing.assert_array_equal(r.marginal[k].replicates,
                                              runs[0].marginal[k].replicates)


def test_results_record_seed_resamples_design_and_degenerate_count():
    y, s = tied_data(4, 15, 25)
    r = bootstrap_ci(y, s, metric=("brier_score", {"prevalence": 0.5}), design="within_label",
                     n_resamples=123, confidence_level=0.9, rng=2026)
    assert r.metric == "brier_score[prevalence=0.5]"
    assert (r.seed, r.n_resamples, r.design, r.n_degenerate) == (2026, 123, "within_label", 0)
    assert (r.confidence_level, r.ci_method, r.n, r.n_pos, r.n_neg) == (0.9, "percentile", 40,
                                                                        15, 25)
    assert r.replicates.shape == (123,) and r.n_valid == 123
    assert r.options["rng"]["seed"] == 2026 and r.options["prevalence"] == 0.5
    p = paired_bootstrap(y, {"a": s, "b": 1 - s}, design="within_label", n_resamples=11, rng=3)
    assert (p.design, p.n_resamples, p.seed) == ("within_label+paired", 11, 3)
    d = p.differences[("a", "b", "roc_auc")]
    assert (d.design, d.seed, d.n_resamples, d.metric) == ("within_label+paired", 3, 11,
                                                           "roc_auc:a-b")
    sp = shared_positive_bootstrap([0.9, 0.8], {"u": [0.1, 0.5], "v": [0.85]}, n_resamples=12,
                                   rng=4)
    assert (sp.design, sp.seed, sp.n_resamples) == ("shared_positive", 4, 12)


# --------------------------------------------------- paired identical scores: exact zero
_pair_data = st.integers(min_value=2, max_value=25).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n),
    st.lists(st.sampled_from([i / 10 for i in range(11)]), min_size=n, max_size=n),
)).filter(lambda t: 0 < sum(t[0]) < len(t[0]))


@settings(derandomize=True, database=None, deadline=None, max_examples=30)
@given(data=_pair_data, design=st.sampled_from(["ordinary", "within_label"]),
       seed=st.integers(0, 2**32 - 1))
def test_paired_identical_scores_differ_by_exactly_zero(data, design, seed):
    y, s = np.array(data[0]), np.array(data[1])
    metrics = ["roc_auc", "average_precision", "brier_score", "aurc",
               ("sensitivity_at_specificity", {"min_specificity": 0.8})]
    r = _quiet(paired_bootstrap, y, {"a": s, "b": s.copy()}, metrics=metrics, design=design,
               n_resamples=40, rng=seed)
    for m in parse_metrics(metrics):
        d = r.differences[("a", "b", m.id)]
        marg = r.marginal[("a", m.id)].replicates
        np.testing.assert_array_equal(np.isnan(d.replicates), np.isnan(marg))
        assert np.all(d.replicates[~np.isnan(d.replicates)] == 0.0)
        assert d.estimate == 0.0
        if d.n_valid:
            assert (d.ci_low, d.ci_high) == (0.0, 0.0)


# ----------------------------------------------------------------- degenerate replicates
def test_single_class_replicates_are_counted_warned_and_excluded():
    y = np.array([1.0, 0, 0, 0, 0, 0, 0])
    s = np.array([0.9, 0.1, 0.4, 0.35, 0.8, 0.2, 0.6])
    n_res, seed = 400, 3
    with pytest.warns(DegenerateDataWarning) as record:
        res = bootstrap_metrics(y, s, metrics=["roc_auc", "average_precision", "brier_score"],
                                design="ordinary", n_resamples=n_res, rng=seed)
    messages = [str(w.message) for w in record]
    assert len(messages) == 2  # roc_auc and average_precision; brier_score is always defined
    assert messages[0].startswith(f"roc_auc: {res['roc_auc'].n_degenerate} of 400 replicates")
    assert messages[1].startswith(
        f"average_precision: {res['average_precision'].n_degenerate} of 400")
    W = draw_weights("ordinary", y, n_res, seed)
    no_pos = W @ y == 0
    no_neg = W @ (1 - y) == 0
    assert no_pos.sum() > 50  # (6/7)^7 of the draws miss the positive
    r = res["roc_auc"]
    assert r.n_degenerate == int((no_pos | no_neg).sum())
    assert r.n_degenerate == int(no_pos.sum())  # no replicate drew only the positive here
    np.testing.assert_array_equal(np.isnan(r.replicates), no_pos | no_neg)
    assert r.n_valid == n_res - r.n_degenerate
    valid = r.replicates[~np.isnan(r.replicates)]
    assert (r.ci_low, r.ci_high) == pytest.approx(_pct(valid, [2.5, 97.5]), rel=1e-14)
    assert not math.isnan(r.ci_low)
    assert res["average_precision"].n_degenerate == int(no_pos.sum())
    assert res["brier_score"].n_degenerate == 0
    assert r.estimate == pytest.approx(O.auroc_pairwise(y, s))


# ---------------------------------------------------------------------- intervals
def _pct(x, q):
    return tuple(np.percentile(x, q, method="linear"))


@pytest.mark.parametrize("level, q", [(0.95, [2.5, 97.5]), (0.9, [5, 95]), (0.5, [25, 75])])
def test_percentile_interval_is_numpy_linear_percentile(level, q):
    y, s = tied_data(9, 20, 30)
    res = bootstrap_metrics(y, s, metrics=["roc_auc", "ece"], design="within_label",
                            n_resamples=301, confidence_level=level, rng=1)
    for r in res.values():
        assert (r.ci_low, r.ci_high) == pytest.approx(_pct(r.replicates, q), rel=1e-14)
    p = paired_bootstrap(y, {"a": s, "b": np.round(s ** 2, 2)}, design="within_label",
                         n_resamples=301, confidence_level=level, rng=1)
    d = p.differences[("a", "b", "roc_auc")]
    assert (d.ci_low, d.ci_high) == pytest.approx(_pct(d.replicates, q), rel=1e-14)


def test_percentile_interval_is_exactly_the_2_5_and_97_5_percentiles():
    """M0.10: "Percentile endpoints at 2.5% and 97.5%" (numpy's linear percentile).

    FAILS (medaudit bug, rounding level): ``percentile_interval`` asks numpy for the
    100 * (1 - 0.95) / 2 = 2.500000000000002 percentile (and 97.5), because 1 - 0.95 is
    not 0.05 in floating point, so the lower endpoint can differ in the last bits from
    ``np.percentile(replicates, [2.5, 97.5])`` (here: B = 2000, the analysis default).
    """
    y, s = tied_data(9, 20, 30)
    r = bootstrap_ci(y, s, design="within_label", n_resamples=2000, rng=0)
    assert (r.ci_low, r.ci_high) == _pct(r.replicates, [2.5, 97.5])


def _vectorised_auroc(y, s, axis=-1):
    """Mid-rank AUROC along the last axis (for scipy.stats.bootstrap with paired=True)."""
    r = stats.rankdata(s, axis=-1)
    n1 = y.sum(axis=-1)
    n0 = y.shape[-1] - n1
    return ((r * y).sum(axis=-1) - n1 * (n1 + 1) / 2) / (n1 * n0)


def _binormal(seed, n_pos, n_neg):
    rng = np.random.default_rng(seed)
    return (np.r_[np.ones(n_pos), np.zeros(n_neg)],
            np.r_[rng.normal(1.0, 1.0, n_pos), rng.normal(0.0, 1.0, n_neg)])


def test_bca_and_percentile_agree_with_scipy_bootstrap():
    """Independent Monte Carlo runs of 20,000: endpoints agree within 0.01."""
    y, s = _binormal(2026, 150, 150)
    for ours, theirs in (("bca", "BCa"), ("percentile", "percentile")):
        r = bootstrap_ci(y, s, design="ordinary", n_resamples=20_000, ci_method=ours, rng=1)
        ref = stats.bootstrap((y, s), _vectorised_auroc, paired=True, vectorized=True,
                              n_resamples=20_000, method=theirs, batch=2000,
                              random_state=np.random.default_rng(2)).confidence_interval
        assert r.estimate == pytest.approx(roc_auc_score(y, s), rel=RTOL)
        assert abs(r.ci_low - ref.low) < 0.01, (ours, r.ci_low, ref.low)
        assert abs(r.ci_high - ref.high) < 0.01, (ours, r.ci_high, ref.high)


def test_bca_on_identical_replicates_matches_scipy_exactly():
    """Fed the engine's own replicates, scipy's BCa (its jackknife acceleration on the data)
    gives the same endpoints.  No replicate equals the estimate here, so the two bias
    corrections (#{< est} vs scipy's mean of #{<} and #{<=}) coincide."""
    y, s = _binormal(7, 40, 60)
    r = bootstrap_ci(y, s, design="ordinary", n_resamples=3000, ci_method="bca", rng=11)
    assert not np.any(r.replicates == r.estimate)
    ref = stats.bootstrap((y, s), _vectorised_auroc, paired=True, vectorized=True,
                          n_resamples=0, method="BCa",
                          bootstrap_result=types.SimpleNamespace(
                              bootstrap_distribution=r.replicates)).confidence_interval
    assert r.ci_low == pytest.approx(ref.low, rel=1e-10)
    assert r.ci_high == pytest.approx(ref.high, rel=1e-10)


def _two_sample_auroc(x, y, axis=-1):
    """Mann-Whitney AUROC of positives ``x`` against negatives ``y`` (ties one half),
    vectorised over the leading axes as scipy.stats.bootstrap calls it."""
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    gt = (x[..., :, None] > y[..., None, :]).mean(axis=(-2, -1))
    eq = (x[..., :, None] == y[..., None, :]).mean(axis=(-2, -1))
    return gt + 0.5 * eq


@pytest.mark.parametrize("ties", [False, True])
def test_within_label_bca_matches_scipys_two_sample_bca_exactly(ties):
    """The within-label design resamples the classes as two samples; fed the engine's own
    replicates, scipy's two-sample BCa (each sample's jackknife centred on its own mean,
    scaled by (n_j - 1)/n_j) gives the same endpoints.  A pooled jackknife, centred on
    the mean over both classes, gives another acceleration."""
    y, s = _binormal(5, 35, 55)
    if ties:
        s = np.round(s, 1)
    r = bootstrap_ci(y, s, design="within_label", n_resamples=3000, ci_method="bca", rng=4)
    ref = stats.bootstrap((s[y == 1], s[y == 0]), _two_sample_auroc, vectorized=True,
                          n_resamples=0, method="BCa",
                          bootstrap_result=types.SimpleNamespace(
                              bootstrap_distribution=r.replicates)).confidence_interval
    assert r.ci_low == pytest.approx(ref.low, rel=1e-10)
    assert r.ci_high == pytest.approx(ref.high, rel=1e-10)
    # the pooled-jackknife acceleration moves the endpoints: the witness can tell them apart
    from medaudit.stats import _metricspec as MS
    from medaudit.stats.bootstrap import _bca_interval
    from medaudit.stats.designs import make_plan
    plan = make_plan("within_label", y)
    prep = MS.Prepared.build(y, s, need_conf=False)
    specs = MS.parse_metrics(["roc_auc"])
    jack = np.concatenate([MS.evaluate(prep, specs, w)["roc_auc"] for w in plan.jackknife()])
    pooled = _bca_interval(r.replicates, r.estimate, jack, 0.95)
    assert abs(pooled[0] - ref.low) + abs(pooled[1] - ref.high) > 1e-9


@pytest.mark.slow
def test_within_label_percentile_coverage_binormal():
    """400 binormal data sets (60 + 60): the 95% percentile interval covers Phi(1/sqrt 2)."""
    true_auc = stats.norm.cdf(1 / math.sqrt(2))
    rng = np.random.default_rng(2026)
    y = np.r_[np.ones(60), np.zeros(60)]
    t0 = time.perf_counter()
    covered = 0
    for i in range(400):
        s = np.r_[rng.normal(1.0, 1.0, 60), rng.normal(0.0, 1.0, 60)]
        r = bootstrap_ci(y, s, design="within_label", n_resamples=500, rng=i)
        covered += r.ci_low <= true_auc <= r.ci_high
    # the time is printed, not asserted: speed targets live in benchmarks/, and a loaded
    # machine must not fail a coverage test
    print(f"coverage {covered}/400 in {time.perf_counter() - t0:.1f} s")
    assert stats.binomtest(covered, 400, 0.95).pvalue > 0.01, covered


# ---------------------------------------------------------------------- bad input
_Y6 = [0, 0, 1, 1, 0, 1]
_S6 = [0.1, 0.4, 0.35, 0.8, 0.2, 0.9]

BAD_CALLS = {
    "design typo": (lambda: bootstrap_ci(_Y6, _S6, design="within_lable"),
                    r"design='within_lable' is not a valid option.*Did you mean 'within_label'"),
    "cluster without ids": (lambda: bootstrap_ci(_Y6, _S6, design="cluster"),
                            r"design='cluster' needs cluster="),
    "cluster ids without cluster design": (
        lambda: bootstrap_ci(_Y6, _S6, design="within_label", cluster=[0, 0, 1, 1, 2, 2]),
        r"cluster= is only used with design='cluster'"),
    "strata split a cluster": (
        lambda: bootstrap_ci(_Y6, _S6, design="cluster", cluster=[0, 0, 1, 1, 2, 2],
                             strata=[0, 1, 0, 0, 1, 1]),
        r"strata must contain whole clusters"),
    "cluster length": (lambda: bootstrap_ci(_Y6, _S6, design="cluster", cluster=[0, 1, 2]),
                       r"cluster must be 1-dimensional with one entry per item \(6\)"),
    "n_resamples zero": (lambda: bootstrap_ci(_Y6, _S6, n_resamples=0),
                         r"n_resamples must be a positive integer; got 0"),
    "n_resamples float": (lambda: bootstrap_ci(_Y6, _S6, n_resamples=100.0),
                          r"n_resamples must be a positive integer"),
    "confidence level": (lambda: bootstrap_ci(_Y6, _S6, confidence_level=1.5),
                         r"confidence_level must lie in \(0\.0, 1\.0\); got 1\.5"),
    "ci method": (lambda: bootstrap_ci(_Y6, _S6, ci_method="bcaa"),
                  r"ci_method='bcaa'.*Did you mean 'bca'"),
    "batch zero": (lambda: bootstrap_ci(_Y6, _S6, batch=0), r"batch must be a positive integer"),
    "metric typo": (lambda: bootstrap_ci(_Y6, _S6, metric="roc_acu"),
                    r"metric='roc_acu' is not a valid option.*Did you mean 'roc_auc'"),
    "metric option typo": (lambda: bootstrap_ci(_Y6, _S6, metric=("ece", {"nbins": 10})),
                           r"Did you mean 'n_bins'"),
    "selective risk without coverage": (
        lambda: bootstrap_ci(_Y6, _S6, metric="selective_risk"),
        r"metric 'selective_risk' needs option 'coverage'"),
    "probability metric, scores > 1": (
        lambda: bootstrap_ci(_Y6, [0.1, 0.4, 1.35, 0.8, 0.2, 0.9], metric="brier_score"),
        r"y_score must be probabilities in \[0, 1\].*index 2"),
    "paired probability metric": (
        lambda: paired_bootstrap(_Y6, {"a": _S6, "b": [2.0] * 6}, metrics=["log_loss"]),
        r"scores\['b'\] must be probabilities"),
    "paired lengths": (lambda: paired_bootstrap(_Y6, {"a": _S6, "b": _S6[:5]}),
                       r"scores\['b'\] has 5"),
    "unknown contrast": (lambda: paired_bootstrap(_Y6, {"a": _S6, "b": _S6},
                                                  contrasts=[("a", "c")]),
                         r"contrast name='c' is not a valid option; choose one of 'a', 'b'"),
    "contrast not a pair": (lambda: paired_bootstrap(_Y6, {"a": _S6, "b": _S6},
                                                     contrasts=["ab"]),
                            r"contrasts entries must be \(a, b\) pairs"),
    "unknown group contrast": (
        lambda: shared_positive_bootstrap([0.9, 0.8], {"healthy": [0.1], "sick": [0.7]},
                                          contrasts=[("healthy", "sickk")]),
        r"contrast group='sickk'.*Did you mean 'sick'"),
    "shared_positive via bootstrap_metrics": (
        lambda: bootstrap_ci(_Y6, _S6, design="shared_positive"),
        r"shared_positive_bootstrap"),
    "labels not 0/1": (lambda: bootstrap_ci([0, 2, 1, 1, 0, 1], _S6), r"y_true must contain only"),
    "lengths": (lambda: bootstrap_ci(_Y6, _S6[:4]), r"y_true has 6, y_score has 4"),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_input_is_refused_with_a_useful_message(name):
    call, pattern = BAD_CALLS[name]
    with pytest.raises(MedauditError, match=pattern):
        call()


def test_cluster_replicates_larger_than_the_sample():
    """Unequal clusters: a replicate can hold more items than the sample (a big cluster drawn
    twice).  The harmonic-number kernels (individual-rank AP, AURC) must still equal the
    metric on the materialised data set."""
    rng = np.random.default_rng(12)
    cluster = np.r_[np.zeros(12, dtype=int), np.arange(1, 9)]  # one cluster of 12, 8 singletons
    y = np.r_[(rng.random(12) < 0.5), (rng.random(8) < 0.5)].astype(float)
    y[[0, 12]] = [1.0, 0.0]
    s = np.round(np.clip(0.3 * y + 0.7 * rng.random(20), 0, 1), 1)
    metrics = ["average_precision", "aurc", "roc_auc"]
    refs = [(O.average_precision_individual, "pos"), (O.aurc, "any"), (_sk_auroc, "two")]
    n_res, seed = 60, 5
    res = _quiet(bootstrap_metrics, y, s, metrics=metrics, design="cluster", cluster=cluster,
                 n_resamples=n_res, rng=seed)
    W = draw_weights("cluster", y, n_res, seed, cluster=cluster)
    assert W.sum(axis=1).max() > y.size  # the case of interest occurs
    for mid, (fn, when) in zip(metrics, refs, strict=True):
        expected = [reference(fn, when, y[materialise(w)], s[materialise(w)]) for w in W]
        assert_reps_match(res[mid].replicates, expected, mid)


@pytest.mark.parametrize("design", ["ordinary", "within_label", "cluster"])
def test_every_metric_is_bit_identical_whatever_the_batch_size(design):
    """The one-pass layout kernels (shared cumulative sum, float copy for two or more
    calibration passes, AURC from harmonic numbers, AP over the positives) evaluate each
    row on its own, so every metric, not only the count-based ones, is identical to the
    last bit for any batch size, continuous and tied scores alike."""
    rng = np.random.default_rng(4)
    cont = np.clip(0.3 * Y_CL + 0.7 * rng.random(Y_CL.size), 0, 1)
    for s in (S_CL, cont):
        kw = dict(metrics=HARD_SPECS, design=design, n_resamples=90, rng=5)
        if design == "cluster":
            kw["cluster"] = PATIENT
        runs = [_quiet(bootstrap_metrics, Y_CL, s, batch=b, **kw) for b in (None, 1, 7, 64)]
        for r in runs[1:]:
            for mid in r:
                np.testing.assert_array_equal(r[mid].replicates, runs[0][mid].replicates,
                                              err_msg=f"{design} {mid}")


def test_percentile_interval_with_infinite_replicates_follows_numpys_linear_rule():
    """Witness: numpy's linear percentile with +inf replaced by a large finite M, as M grows:
    an end that moves with M is +inf, an end that does not is numpy's value."""
    from medaudit.stats.bootstrap import percentile_interval

    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        v = rng.normal(size=n)
        v[rng.random(n) < rng.uniform(0, 0.6)] = np.inf
        at = [np.percentile(np.where(np.isinf(v), m, v), [2.5, 97.5]) for m in (1e100, 1e150)]
        want = tuple(float(a) if a == b else np.inf for a, b in zip(*at, strict=True))
        got = percentile_interval(v, 0.95)
        assert np.allclose(got, want, rtol=1e-12, atol=0), (v, got, want)
