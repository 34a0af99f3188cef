"""The metric registry of the resampling engine (medaudit.stats._metricspec): ids, options,
and the rule that every metric's kernels agree with its point function."""

from __future__ import annotations

import numpy as np
import pytest

from medaudit.exceptions import MedauditError
from medaudit.stats import _metricspec as MS
from medaudit.stats import average_precision, brier_score, ece, roc_auc, soft_roc_auc


def test_ids_are_stable_and_options_sorted():
    specs = MS.parse_metrics(["roc_auc", ("ece", {"prevalence": 0.5, "n_bins": 10})])
    assert [m.id for m in specs] == ["roc_auc", "ece[n_bins=10,prevalence=0.5]"]
    assert MS.parse_metrics("brier_score")[0].id == "brier_score"


@pytest.mark.parametrize(("metrics", "message"), [
    ([], "metrics is empty"),
    (["roc_auc", "roc_auc"], "lists a metric twice"),
    (["auroc"], "metric 'auroc' is written 'roc_auc'"),
    (["rocauc_typo"], "metric='rocauc_typo' is not a valid option"),
    ([("roc_auc", {"ties": "pooled"})], "roc_auc option='ties' is not a valid option"),
    (["selective_risk"], "needs option 'coverage'"),
    ([("ece", {"binning": "edges"})], "ece binning"),
    ([("soft_roc_auc", {"variant": "strikt"})], "Did you mean 'strict'"),
    ([("soft_average_precision", {"variant": "inclusive"})], "variant='inclusive'"),
    ([("ece", {"n_bins": 0})], "n_bins must be a positive integer"),
])
def test_bad_metric_lists_are_refused(metrics, message):
    with pytest.raises(MedauditError, match=message):
        MS.parse_metrics(metrics)


def test_what_a_metric_needs():
    assert not MS.needs_probabilities(MS.parse_metrics(["roc_auc", "average_precision"]))
    assert MS.needs_probabilities(MS.parse_metrics(["roc_auc", "ece"]))
    assert MS.needs_confidence(MS.parse_metrics(["aurc"]))
    assert not MS.needs_confidence(MS.parse_metrics(["brier_score"]))


def test_the_full_sample_row_gives_each_point_function():
    """evaluate() on a row of ones is the point estimate of the public function."""
    rng = np.random.default_rng(3)
    y = (rng.random(50) < 0.4).astype(float)
    s = np.round(rng.random(50), 2)
    specs = MS.parse_metrics(["roc_auc", ("average_precision", {"ties": "pooled"}),
                              "brier_score", ("ece", {"n_bins": 10})])
    got = MS.evaluate(MS.Prepared.build(y, s, need_conf=False), specs, np.ones((1, 50)))
    want = [roc_auc(y, s), average_precision(y, s, ties="pooled"), brier_score(y, s),
            ece(y, s, n_bins=10)]
    for m, v in zip(specs, want, strict=True):
        assert got[m.id][0] == pytest.approx(v, rel=1e-12, abs=1e-15), m.id
    p = rng.random(50)
    soft = MS.evaluate(MS.Prepared.build(p, s, need_conf=False, soft=True),
                       MS.parse_metrics(["soft_roc_auc"]), np.ones((1, 50)))
    assert soft["soft_roc_auc"][0] == pytest.approx(soft_roc_auc(p, s), rel=1e-12)


def test_another_tools_metric_name_is_refused_with_the_id_to_write():
    import numpy as np

    from medaudit.exceptions import MedauditError
    from medaudit.stats import bootstrap_metrics

    y, s = np.array([0, 1, 0, 1]), np.array([0.1, 0.9, 0.2, 0.8])
    with pytest.raises(MedauditError, match="'AUROC' is written 'roc_auc'"):
        bootstrap_metrics(y, s, metrics=["AUROC"], n_resamples=5)
    with pytest.raises(MedauditError, match=r"^ece option='n_binz' is not a valid option.*'n_bins'"):
        bootstrap_metrics(y, s, metrics=[("ece", {"n_binz": 3})], n_resamples=5)


def test_a_function_or_a_bare_value_as_metrics_is_one_clear_error():
    from sklearn.metrics import roc_auc_score

    from medaudit.stats import bootstrap_ci, bootstrap_metrics
    y, s = np.r_[0, 0, 1, 1, 0, 1], np.r_[0.1, 0.4, 0.35, 0.8, 0.2, 0.9]
    with pytest.raises(MedauditError, match="^metric must be a metric name.*the function "
                                            "roc_auc_score.*write 'roc_auc'"):
        bootstrap_ci(y, s, metric=roc_auc_score, n_resamples=10, rng=0)
    for bad in (42, None, {"roc_auc": 1}):
        with pytest.raises(MedauditError, match="^metrics must be a metric name"):
            bootstrap_metrics(y, s, metrics=bad, n_resamples=10, rng=0)
    with pytest.raises(MedauditError, match="entries must be a name.*the function roc_auc_score"):
        bootstrap_metrics(y, s, metrics=[roc_auc_score], n_resamples=10, rng=0)
    # a numpy array of names is a list of names, keyed by plain strings
    r = bootstrap_metrics(y, s, metrics=np.array(["roc_auc"]), n_resamples=10, rng=0)
    assert [type(k) for k in r] == [str]
