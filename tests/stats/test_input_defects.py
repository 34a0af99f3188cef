"""Hostile inputs to the statistics API, one test per defect found by probing it as a user of
scikit-learn, scipy.stats, pROC and fairlearn would (the io layer's catalogue is
tests/io/test_input_defects.py).

Each test states what a user would expect: a refusal naming the argument, a warning with an
undefined (nan) value, or the right number, witnessed independently where a number is asked.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import medaudit.stats as S
from medaudit._validation import check_fraction, missing_mask
from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats.annotation_bootstrap import labels_from_sums
from medaudit.stats.designs import make_plan


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(float)
    y[:2] = (1.0, 0.0)
    return y, rng.random(n)


# ----------------------------------------------------------------------------- numbers as text, bools
@pytest.mark.parametrize("bad", [True, np.bool_(False), "0.95", b"0.9"])
def test_fractions_refuse_booleans_and_text(bad):
    with pytest.raises(MedauditError, match=r"^confidence_level must be a number; got"):
        check_fraction(bad, name="confidence_level")
    y, s = _data()
    with pytest.raises(MedauditError, match="confidence_level must be a number"):
        S.delong_ci(y, s, confidence_level=bad)
    assert check_fraction(np.float32(0.95), name="c") == pytest.approx(0.95, rel=1e-7)


def test_sensitivity_at_specificity_refuses_a_boolean_target():
    y, s = _data()
    with pytest.raises(MedauditError, match="min_specificity must be a number"):
        S.sensitivity_at_specificity(y, s, min_specificity=True)


# ----------------------------------------------------------------------------- missing values
@pytest.mark.parametrize("values", [
    np.array([1.0, np.nan]), np.array(["a", None], dtype=object), np.array([1, pd.NA], dtype=object),
    np.array(["2026-01-01", "NaT"], dtype="datetime64[D]"), np.array([1, pd.NaT], dtype=object),
    np.asarray(pd.Categorical(["a", None])), np.asarray(pd.Series(["a", pd.NA], dtype="string"))])
def test_missing_mask_reads_every_spelling_of_missing(values):
    assert missing_mask(values).tolist() == [False, True]
    assert not missing_mask(np.array(["a", "nan"])).any()  # the text 'nan' is a value


@pytest.mark.parametrize("kind", ["strata", "cluster"])
@pytest.mark.parametrize("missing", [
    lambda n: pd.Series(["a", "b"] * (n // 2 - 1) + ["a", pd.NA], dtype="string"),
    lambda n: pd.Series([f"p{i // 4}" for i in range(n - 1)] + [np.nan]),
    lambda n: pd.Categorical(["a", "b"] * (n // 2 - 1) + ["a", None]),
    lambda n: np.array(list(np.arange(n - 2) // 4) + [np.nan, np.nan], dtype=object),
    lambda n: pd.Series(pd.to_datetime(["2026-01-01", "2026-02-01"] * (n // 2 - 1)
                                       + ["2026-01-01", None]))])
def test_strata_and_clusters_refuse_missing_values_naming_the_argument(kind, missing):
    y, s = _data()
    design = "cluster" if kind == "cluster" else "ordinary"
    with pytest.raises(MedauditError, match=rf"^{kind} has \d+ missing value\(s\)"):
        S.bootstrap_ci(y, s, design=design, **{kind: missing(y.size)}, n_resamples=20, rng=0)


def test_strata_mixing_numbers_and_text_are_refused():
    y, s = _data()
    with pytest.raises(MedauditError, match=r"^strata mixes kinds of values \(int, str\)"):
        S.bootstrap_ci(y, s, strata=np.array([1, "a"] * 20, dtype=object), n_resamples=20, rng=0)


def test_subgroups_refuse_pandas_na():
    y, s = _data()
    for groups in (pd.Series([1, 2] * 19 + [1, pd.NA], dtype="Int64"),
                   pd.Series(["a", "b"] * 19 + ["a", pd.NA], dtype="string")):
        with pytest.raises(MedauditError, match=r"groups has 1 missing level\(s\) \(first at item 39\)"):
            S.subgroup_bootstrap(y, {"m": s}, groups, n_resamples=20, rng=0)


def test_score_drift_refuses_missing_periods():
    _, s = _data()
    for period in (np.repeat([0.0, 1.0, np.nan], [15, 15, 10]),
                   np.array([0, 1] * 19 + [1, None], dtype=object)):
        with pytest.raises(MedauditError, match=r"the period column has \d+ missing or blank value\(s\)"):
            S.score_drift(period, s)


# ----------------------------------------------------------------------------- silently wrong answers
def test_bootstrap_pvalue_refuses_a_nan_null():
    reps = np.random.default_rng(1).standard_normal(2000)
    with pytest.raises(MedauditError, match="null must be a finite number"):
        S.bootstrap_pvalue(reps, null=math.nan)
    assert S.bootstrap_pvalue(reps, null=0.0) > 0.5  # centred replicates: no evidence


@pytest.mark.parametrize("metric", ["sensitivity", "specificity"])
@pytest.mark.parametrize("tau", [math.nan, -math.inf, True])
def test_rate_at_threshold_refuses_nan_minus_inf_and_booleans(metric, tau):
    y, s = _data()
    with pytest.raises(MedauditError, match=rf"{metric} threshold must be a number"):
        S.bootstrap_ci(y, s, metric=(metric, {"threshold": tau}), n_resamples=20, rng=0)


def test_transport_refuses_a_design_for_an_unknown_target():
    y, s = _data()
    with pytest.raises(MedauditError, match=r"design names target\(s\) \['tt'\]"):
        S.transport_to_targets(y, s, {"t": (y, s)}, target_value=0.9, design={"tt": "fixed"},
                               n_resamples=20, rng=0)


def test_labels_from_sums_refuse_sums_off_the_scale():
    with pytest.raises(MedauditError, match=r"sum_raw must lie between count x 0 and count x 1.*item 0"):
        labels_from_sums([5], [4])
    with pytest.raises(MedauditError, match="count must be whole numbers"):
        labels_from_sums([1], [1.5])
    soft, hard = labels_from_sums([4, 0], [4, 3])  # the bounds themselves are fine
    assert soft.tolist() == [1.0, 0.0] and hard.tolist() == [1.0, 0.0]


def test_spending_refuses_fractions_beyond_the_plan_and_negative_information():
    with pytest.raises(MedauditError, match=r"fractions must give one non-decreasing value in \(0, 1\]"):
        S.spending_bounds([1, 2], fractions=[0.5, 1.5])
    with pytest.raises(MedauditError, match=r"t \(information fractions\) must be >= 0"):
        S.spending_function([1.5, -0.1])
    with pytest.raises(MedauditError, match="t"):
        S.spending_function([math.nan])
    assert S.spending_function([1.5]).tolist() == [0.05]  # past the plan: all of alpha, documented


@pytest.mark.parametrize("n_pos", [0, -3, math.nan, True])
def test_auc_variance_refuses_a_non_positive_sample(n_pos):
    with pytest.raises(MedauditError, match="n_pos must be a positive number"):
        S.auc_variance(0.8, n_pos=n_pos)


def test_sample_size_question_points_to_the_side_of_the_expected_auroc():
    assert S.auc_sample_size(0.4).question == "AUROC < 0.5"
    assert S.auc_sample_size(0.8).question == "AUROC > 0.5"


def test_one_item_per_stratum_is_refused_not_a_zero_width_interval():
    y, s = _data()
    with pytest.raises(MedauditError, match="every item a stratum of its own"):
        S.bootstrap_ci(y, s, strata=np.arange(y.size), n_resamples=50, rng=0)


def test_within_label_strata_of_one_item_per_class_are_refused_too():
    """Probe finding: under within_label, strata holding one item of each class (or one
    item) made every replicate the sample itself: a silent interval of zero width."""
    y, s = _data()
    pairs = np.empty(y.size, dtype=int)  # each stratum: at most one positive and one negative
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    pairs[pos] = np.arange(pos.size)
    pairs[neg] = np.arange(neg.size)
    for strata in (np.arange(y.size), pairs):
        with pytest.raises(MedauditError, match="at most one item of each class"):
            S.bootstrap_ci(y, s, design="within_label", strata=strata, n_resamples=50, rng=0)
        with pytest.raises(MedauditError, match="at most one item of each class"):
            S.roc_curve_band(y, s, design="within_label", strata=strata, n_resamples=50, rng=0)
    # one stratum with two items of a class is enough to resample
    strata = pairs.copy()
    strata[pos[1]] = strata[pos[0]]
    r = S.bootstrap_ci(y, s, design="within_label", strata=strata, n_resamples=50, rng=0)
    assert r.ci_low < r.ci_high


def test_cohen_kappa_refuses_mixed_kinds_and_two_dimensional_raters():
    with pytest.raises(MedauditError, match=r"mix kinds of values \(rater_a: number; rater_b: str\)"):
        S.cohen_kappa([1, 2, 1, 2], ["1", "2", "1", "2"])
    with pytest.raises(MedauditError, match=r"rater_a must be one-dimensional.*\(2, 2\)"):
        S.cohen_kappa([[0, 1], [1, 0]], [[0, 1], [1, 1]])
    # numbers of different types are one kind: 1 and 1.0 are the same verdict
    from sklearn.metrics import cohen_kappa_score
    assert S.cohen_kappa([1, 0, 1, 1], [1.0, 0.0, 0.0, 1.0]).estimate == pytest.approx(
        cohen_kappa_score([1, 0, 1, 1], [1, 0, 0, 1]), rel=1e-12)


def test_jaccard_names_unhashable_or_non_iterable_input():
    with pytest.raises(MedauditError, match="set_a must be a collection of hashable ids"):
        S.jaccard([[1], [2]], [[1]])
    with pytest.raises(MedauditError, match="set_a must be a collection of hashable ids"):
        S.jaccard(5, 6)


# ----------------------------------------------------------------------------- nan with its warning
def _warns_nan(fn):
    with pytest.warns(UndefinedMetricWarning):
        value = fn()
    return value


def test_undefined_values_come_with_a_warning():
    assert math.isnan(_warns_nan(lambda: S.delong_variance([0, 0, 1], [0.1, 0.2, 0.3])))
    assert math.isnan(_warns_nan(lambda: S.delong_ci([0, 0, 1], [0.1, 0.2, 0.3]).variance))
    for fn in (S.brier_score, S.log_loss, S.ece):
        assert math.isnan(_warns_nan(lambda fn=fn: fn([0, 1], [0.2, 0.8], sample_weight=[0, 0])))
    assert math.isnan(_warns_nan(lambda: S.cohen_kappa([1, 1, 1], [1, 1, 1]).estimate))
    assert math.isnan(_warns_nan(lambda: S.jaccard([], [])))
    with warnings.catch_warnings():  # a defined value warns nothing
        warnings.simplefilter("error")
        assert S.brier_score([0, 1], [0.2, 0.8], sample_weight=[1, 0]) == pytest.approx(0.04)


# ----------------------------------------------------------------------------- memory and batches
def test_a_batch_larger_than_the_draw_is_capped_not_allocated():
    y, s = _data()
    big = S.bootstrap_ci(y, s, n_resamples=10, batch=10**12, rng=0)
    small = S.bootstrap_ci(y, s, n_resamples=10, batch=3, rng=0)
    np.testing.assert_array_equal(big.replicates, small.replicates)
    plan = make_plan("ordinary", y)
    assert [w.shape[0] for w in plan.batches(10, np.random.default_rng(0), 10**12)] == [10]


def test_permutation_test_takes_automatic_batches_like_the_others():
    pos, a, b = [0.9, 0.8, 0.7], [0.1, 0.2, 0.3], [0.75, 0.85, 0.6]
    auto = S.negative_group_permutation_test(pos, a, b, n_resamples=99, rng=0, batch=None)
    fixed = S.negative_group_permutation_test(pos, a, b, n_resamples=99, rng=0, batch=1000)
    np.testing.assert_array_equal(auto.null_distribution, fixed.null_distribution)


def test_auroc_is_unchanged_by_the_strata_checks():
    y, s = _data()
    strata = np.repeat(["a", "b"], 20)
    r = S.bootstrap_ci(y, s, strata=strata, n_resamples=50, rng=0)
    assert r.estimate == pytest.approx(roc_auc_score(y, s), rel=1e-12)


# ----------------------------------------------------------------------------- monitoring
@pytest.mark.parametrize("correction", ["none", "alpha_spending"])
def test_complete_separation_on_a_handful_of_cases_is_not_holds(correction):
    """Two positives above two negatives: DeLong's variance is 0, so its normal interval has no
    width; no interval is given (the claim is unresolved), as with a single case per class."""
    from medaudit.stats.monitor import MonitorClaim, monitor_claims

    table = {"period": ["p1"] * 4, "label": [1, 1, 0, 0], "score": [0.9, 0.8, 0.2, 0.1]}
    kw = {"planned_looks": 1} if correction == "alpha_spending" else {}
    r = monitor_claims(table, [MonitorClaim(claim_id="A", criterion="roc_auc", level=0.95)],
                       correction=correction, **kw)
    rows = [row for row in r.series if row["scope"] == "cumulative"]
    assert rows[0]["estimate"] == 1.0 and rows[0]["verdict"] == "unresolved"
    assert (rows[0]["ci_low"], rows[0]["ci_high"]) == (0.0, 1.0)


def test_monitor_claims_refuses_a_table_that_is_not_a_table():
    from medaudit.stats.monitor import MonitorClaim, monitor_claims

    with pytest.raises(MedauditError, match="must be a DataFrame or a mapping"):
        monitor_claims([{"period": "p1", "label": 1, "score": 0.9}],
                       [MonitorClaim(claim_id="A", criterion="roc_auc", level=0.9)])
    with pytest.raises(MedauditError, match="missing or blank"):  # a list keeps its NaN
        monitor_claims({"period": [np.nan, "p1"], "label": [1, 0], "score": [0.9, 0.1]},
                       [MonitorClaim(claim_id="A", criterion="roc_auc", level=0.9)])


def test_replicate_ranges_of_non_integers_and_self_contrasts_are_refused():
    # probe findings: replicate_range=(0.5, 20) ran replicates 0..19 (int() truncated it), and
    # the contrast ("a", "a") gave a difference of 0 in every replicate, without a word
    y, s = _data()
    scores = {"a": s, "b": s[::-1].copy()}
    for bad in ((0.5, 20), (True, 20), (0, 20, 30), (0, "x")):
        with pytest.raises(MedauditError, match="replicate_range must be a"):
            S.paired_bootstrap(y, scores, n_resamples=50, rng=0, replicate_range=bad)
    whole = S.paired_bootstrap(y, scores, n_resamples=50, rng=0, replicate_range=(0.0, 20.0))
    assert whole.marginal[("a", "roc_auc")].replicates.size == 20
    with pytest.raises(MedauditError, match=r"contrast \('a', 'a'\) compares a name with itself"):
        S.paired_bootstrap(y, scores, n_resamples=50, rng=0, contrasts=[("a", "a")])


def test_integer_scores_beyond_two_to_the_53_are_refused_not_tied():
    # probe finding: int64 scores 10**17 + 1 and 10**17 became one float, a tie: AUROC 0.5
    # where scikit-learn (which compares the integers) gives 0.0
    with pytest.raises(MedauditError, match=r"y_score holds integers up to 100000000000000001 "
                                            r"in magnitude, beyond 2\^53"):
        S.roc_auc([0, 1], np.array([10**17 + 1, 10**17], dtype=np.int64))
    for given in ([10**17 + 1, 10**17], np.array([10**30, 1], dtype=object)):  # review finding
        with pytest.raises(MedauditError, match=r"beyond 2\^53"):
            S.roc_auc([0, 1], given)
    assert S.roc_auc([0, 1], np.array([2**53, 2**53 - 1], dtype=np.int64)) == 0.0


def test_a_resample_count_whose_replicates_cannot_fit_in_memory_is_refused_at_once(monkeypatch):
    # probe finding: n_resamples=10**12 ran for ten minutes, growing to 15 GB, before it was
    # killed; the replicates of one metric alone would need 7,451 GiB
    import medaudit._validation as V

    monkeypatch.setattr(V, "_physical_memory", lambda: 24 * 2**30)  # this machine's, anywhere
    y, s = _data()
    with pytest.raises(MedauditError, match=r"n_resamples=1,000,000,000,000 would need 7,451 GiB "
                                            r"for the replicates of one statistic alone, more "
                                            r"than this machine's 24 GiB"):
        S.bootstrap_ci(y, s, n_resamples=10**12, rng=0)
