"""Door checks: every public metric function x every bad input (house style, testing rule 7).

Each bad input must raise :class:`~medaudit.exceptions.MedauditError` whose message names
the offending parameter (``y_true``, ``p_true``, ``y_score``, ``y_prob``, or the option).
Nothing is coerced silently: no clipping, no dropping of NaN, no guessing of labels.

``PUBLIC_FUNCTIONS`` is the registry of metric functions walked here;
``test_every_public_function_is_registered`` fails when ``medaudit.stats.__all__`` gains a
function that is in neither that registry nor ``EXEMPT``.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import medaudit.stats
from medaudit.exceptions import MedauditError
from medaudit.stats import (
    aurc,
    auroc_cs,
    auroc_rci,
    average_precision,
    best_threshold,
    best_threshold_ci,
    brier_score,
    debiased_l2_calibration_error,
    ece,
    ece_equal_mass,
    log_loss,
    operating_point,
    partial_roc_auc,
    partial_roc_auc_ci,
    precision_at_recalls,
    precision_recall_band,
    precision_recall_curve,
    reliability_curve,
    reliability_diagram,
    risk_coverage_curve,
    roc_auc,
    roc_curve,
    roc_curve_band,
    selective_risk,
    sensitivity_at_specificities,
    sensitivity_at_specificity,
    soft_average_precision,
    soft_roc_auc,
    specificity_at_sensitivities,
    specificity_at_sensitivity,
    threshold_for_sensitivity,
    threshold_for_specificity,
    threshold_metrics,
    threshold_metrics_ci,
)


@dataclass(frozen=True)
class Spec:
    """How to call one public metric on (labels, scores) and what its inputs are called."""

    func: Callable[..., Any]
    soft: bool = False  # labels are soft (p_true in [0, 1]) rather than hard 0/1 (y_true)
    prob: bool = False  # scores must be probabilities in [0, 1] (y_prob) rather than y_score
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def label_name(self) -> str:
        return "p_true" if self.soft else "y_true"

    @property
    def score_name(self) -> str:
        return "y_prob" if self.prob else "y_score"

    def __call__(self, labels, scores):
        return self.func(labels, scores, **self.kwargs)


SPECS: dict[str, Spec] = {
    "roc_auc": Spec(roc_auc),
    "average_precision": Spec(average_precision),
    "brier_score": Spec(brier_score, prob=True),
    "ece": Spec(ece, prob=True),
    "log_loss": Spec(log_loss, prob=True),
    "reliability_diagram": Spec(reliability_diagram, prob=True),
    "sensitivity_at_specificity": Spec(sensitivity_at_specificity),
    "specificity_at_sensitivity": Spec(specificity_at_sensitivity),
    "threshold_for_sensitivity": Spec(threshold_for_sensitivity),
    "threshold_for_specificity": Spec(threshold_for_specificity),
    "operating_point": Spec(operating_point, kwargs={"threshold": 0.5}),
    "selective_risk": Spec(selective_risk, prob=True, kwargs={"coverage": 0.8}),
    "aurc": Spec(aurc, prob=True),
    "risk_coverage_curve": Spec(risk_coverage_curve, prob=True),
    "soft_roc_auc": Spec(soft_roc_auc, soft=True),
    "soft_average_precision": Spec(soft_average_precision, soft=True),
    # issue 17 (results are dataclasses or arrays where not floats)
    "partial_roc_auc": Spec(partial_roc_auc),
    "partial_roc_auc_ci": Spec(partial_roc_auc_ci, kwargs={"n_resamples": 20, "rng": 0}),
    "roc_curve": Spec(roc_curve),
    "precision_recall_curve": Spec(precision_recall_curve),
    "sensitivity_at_specificities": Spec(sensitivity_at_specificities,
                                         kwargs={"specificities": [0.5, 0.9]}),
    "specificity_at_sensitivities": Spec(specificity_at_sensitivities,
                                         kwargs={"sensitivities": [0.5, 0.9]}),
    "roc_curve_band": Spec(roc_curve_band, kwargs={"n_resamples": 20, "rng": 0}),
    "precision_at_recalls": Spec(precision_at_recalls, kwargs={"recalls": [0.5, 0.9]}),
    "precision_recall_band": Spec(precision_recall_band, kwargs={"n_resamples": 20, "rng": 0}),
    "best_threshold": Spec(best_threshold),
    "best_threshold_ci": Spec(best_threshold_ci, kwargs={"n_resamples": 20, "rng": 0}),
    "threshold_metrics": Spec(threshold_metrics, kwargs={"threshold": 0.5}),
    "threshold_metrics_ci": Spec(threshold_metrics_ci, kwargs={"threshold": 0.5,
                                                               "n_resamples": 20, "rng": 0}),
    "ece_equal_mass": Spec(ece_equal_mass, prob=True),
    "debiased_l2_calibration_error": Spec(debiased_l2_calibration_error, prob=True),
    "reliability_curve": Spec(reliability_curve, prob=True, kwargs={"n_resamples": 20, "rng": 0}),
    # issue 19 (cumulative looks over the cases in arrival order)
    "auroc_cs": Spec(auroc_cs, kwargs={"looks": [3]}),
    "auroc_rci": Spec(auroc_rci, kwargs={"looks": [3]}),
}

PUBLIC_FUNCTIONS = list(SPECS)

# covered in test_resampling.py / test_inference.py
EXEMPT = [
    "transport_to_targets",  # covered in test_transport.py / blocks/test_transport.py
    "bootstrap_ci",
    "bootstrap_metrics",
    "paired_bootstrap",
    "shared_positive_bootstrap",
    "threshold_transport",
    "negative_group_permutation_test",
    "delong_placements",
    "delong_variance",
    "delong_ci",
    "delong_test",
    "delong_test_unpaired",
    "adjust_pvalues",
    "fisher_exact",
    "cmh_test",
    "binomial_test",
    "cohen_kappa",
    "jaccard",
    "spearman",
    "kendall",
    # annotation tables, not (labels, scores): bad input covered in test_annotation_bootstrap.py
    "annotation_bootstrap",
    "labels_from_sums",
    "pearson_r2",
    "rank_stability_test",
    # a 3-way array, not (labels, scores): bad input covered in stats/test_decomposition.py
    "variance_decomposition",
    # replicate arrays / a table with group columns: covered in blocks/test_subgroups.py
    "bootstrap_pvalue",
    "subgroup_bootstrap",
    # issue 17, not (labels, scores): bad input covered in tests/stats/test_<module>.py
    "calibration_slope_intercept",  # (labels, probabilities) but separated by these inputs
    "calibration_slope_intercept_ci",
    "predictive_values",
    "proportion_ci",
    "pauc_metric",
    "equal_mass_bins",
    "breslow_day_test",
    "fleiss_kappa",
    "krippendorff_alpha",
    "auc_sample_size",
    "auc_power",
    "auc_variance",
    "paired_auc_sample_size",
    "paired_auc_power",
    "proportion_sample_size",
    "se_sp_sample_size",
    "cases_to_resolve",
    "cases_to_resolve_proportion",
    # issue 19, counts or information per look, not (labels, scores): tests/stats/test_sequential.py
    "proportion_cs",
    "proportion_rci",
    "spending_bounds",
    "spending_function",
    # issue 19, samples or tables, not (labels, scores): tests/stats/test_drift.py, test_monitor.py
    "score_drift",
    "population_stability_index",
    "ks_drift",
    "psi_edges",
    "monitor_claims",
]

HARD = [k for k, v in SPECS.items() if not v.soft]
SOFT = [k for k, v in SPECS.items() if v.soft]
PROB = [k for k, v in SPECS.items() if v.prob]
SCORE = [k for k, v in SPECS.items() if not v.prob]

Y = np.array([0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
S = np.array([0.1, 0.8, 0.35, 0.6, 0.9, 0.2])


def _raises(spec: Spec, labels, scores, *fragments: str):
    """Call and check that MedauditError is raised with every fragment in its message."""
    with pytest.raises(MedauditError) as info:
        spec(labels, scores)
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return msg


# ====================================================================== registry
def test_every_public_function_is_registered():
    public = {
        name
        for name in medaudit.stats.__all__
        if callable(getattr(medaudit.stats, name)) and not inspect.isclass(getattr(medaudit.stats, name))
    }
    unregistered = public - set(PUBLIC_FUNCTIONS) - set(EXEMPT)
    assert not unregistered, (
        f"{sorted(unregistered)} in medaudit.stats.__all__ but neither validated here "
        "(PUBLIC_FUNCTIONS) nor EXEMPT"
    )
    stale = (set(PUBLIC_FUNCTIONS) | set(EXEMPT)) - public
    assert not stale, f"{sorted(stale)} listed here but not public functions any more"
    assert not set(PUBLIC_FUNCTIONS) & set(EXEMPT)


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_registry_calls_are_valid(name):
    SPECS[name](Y, S)  # the good inputs used below really are good


def test_medaudit_error_is_a_value_error():
    assert issubclass(MedauditError, ValueError)


# ============================================================ non-finite values
@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_nan_in_scores(name):
    spec = SPECS[name]
    s = S.copy()
    s[2] = np.nan
    _raises(spec, Y, s, f"{spec.score_name} contains NaN", "at index 2")


@pytest.mark.parametrize("bad", [np.inf, -np.inf], ids=["+inf", "-inf"])
@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_inf_in_scores(name, bad):
    spec = SPECS[name]
    s = S.copy()
    s[4] = bad
    _raises(spec, Y, s, f"{spec.score_name} contains inf", "at index 4")


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_nan_in_labels(name):
    spec = SPECS[name]
    y = Y.copy()
    y[0] = np.nan
    _raises(spec, y, S, f"{spec.label_name} contains NaN", "at index 0")


@pytest.mark.parametrize("missing", ["NA", "NaT"])
@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_pandas_missing_among_numbers_is_called_missing(name, missing):
    # an object column holding pandas' NA (or NaT) cannot be cast to float: the message
    # says the value is missing, not that the column is not numeric
    import pandas as pd

    spec = SPECS[name]
    gone = pd.NA if missing == "NA" else pd.NaT
    s = S.astype(object)
    s[3] = gone
    _raises(spec, Y, s, f"{spec.score_name} contains missing values", "at index 3")
    y = Y.astype(object)
    y[1] = gone
    _raises(spec, y, S, f"{spec.label_name} contains missing values", "at index 1")


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_masked_values_are_refused_not_read(name):
    spec = SPECS[name]
    s = np.ma.masked_array(S, mask=np.arange(S.size) == 2)
    _raises(spec, Y, s, f"{spec.score_name} has masked values", "at index 2")


# ================================================================ label values
@pytest.mark.parametrize("bad", [2.0, -1.0, 0.5])
@pytest.mark.parametrize("name", HARD)
def test_hard_labels_outside_zero_one(name, bad):
    y = Y.copy()
    y[3] = bad
    _raises(SPECS[name], y, S, "y_true must contain only 0 and 1", repr(bad), "at index 3")


@pytest.mark.parametrize("bad", [2.0, -1.0, 1.5, -0.1])
@pytest.mark.parametrize("name", SOFT)
def test_soft_labels_outside_unit_interval(name, bad):
    p = Y.copy()
    p[3] = bad
    _raises(SPECS[name], p, S, "p_true must be soft labels in [0, 1]", repr(bad), "at index 3")


@pytest.mark.parametrize("name", SOFT)
def test_soft_labels_accept_fractions(name):
    p = np.array([0.0, 0.9, 0.25, 0.5, 1.0, 0.1])
    assert math.isfinite(SPECS[name](p, S))


# ======================================================== probabilities vs scores
@pytest.mark.parametrize("name", PROB)
def test_probability_metrics_refuse_scores_above_one(name):
    # leaderboard files in the wild hold "probabilities" up to 2.8; never clipped
    s = S * 2.8 / S.max()
    _raises(SPECS[name], Y, s, "y_prob must be probabilities in [0, 1]", "2.8")


@pytest.mark.parametrize("name", PROB)
def test_probability_metrics_refuse_negative_scores(name):
    s = S.copy()
    s[1] = -0.25
    _raises(SPECS[name], Y, s, "y_prob must be probabilities in [0, 1]", "at index 1")


@pytest.mark.parametrize("name", SCORE)
def test_score_metrics_accept_any_real_scores(name):
    # ranking metrics take any real score (logits, 0-2.8 leaderboard values, negatives)
    spec = SPECS[name]
    labels = np.array([0.0, 0.7, 0.2, 1.0, 0.9, 0.0]) if spec.soft else Y
    got = spec(labels, S * 2.8 / S.max())
    if isinstance(got, float):  # curves and results are dataclasses or arrays
        assert math.isfinite(got)
    if name in ("roc_auc", "average_precision", "soft_roc_auc", "soft_average_precision"):
        assert got == spec(labels, S)  # rank-based: the rescaling changes nothing
    spec(labels, S - 10.0)


# ============================================================ shapes and sizes
@pytest.mark.parametrize("longer", ["labels", "scores"])
@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_length_mismatch(name, longer):
    spec = SPECS[name]
    y, s = (Y, S[:-1]) if longer == "labels" else (Y[:-1], S)
    n_y, n_s = y.size, s.size
    _raises(
        spec,
        y,
        s,
        "Inputs must have the same length",
        f"{spec.label_name} has {n_y}",
        f"{spec.score_name} has {n_s}",
    )


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_empty_input(name):
    spec = SPECS[name]
    _raises(spec, [], [], f"{spec.label_name} is empty")
    _raises(spec, Y, [], f"{spec.score_name} is empty")


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_two_dimensional_input(name):
    spec = SPECS[name]
    _raises(spec, Y.reshape(2, 3), S.reshape(2, 3), f"{spec.label_name} must be 1-dimensional")
    _raises(spec, Y, S.reshape(6, 1), f"{spec.score_name} must be 1-dimensional")


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_non_numeric_input(name):
    spec = SPECS[name]
    _raises(spec, ["no", "yes", "no", "yes", "yes", "no"], S, f"{spec.label_name} must be numeric")
    _raises(spec, Y, ["low", "high", "low", "high", "high", "low"], f"{spec.score_name} must be numeric")


@pytest.mark.parametrize("name", [n for n in PUBLIC_FUNCTIONS if not SPECS[n].soft])
def test_word_labels_say_to_map_them(name):
    # probe finding: "yes"/"no" labels got only numpy's conversion error, no advice (soft
    # labels are probabilities, not classes, so their functions are not asked)
    spec = SPECS[name]
    msg = _raises(spec, ["no", "yes", "no", "yes", "yes", "no"], S, f"{spec.label_name} must be "
                  "numeric", "map your labels to 0/1 yourself")
    assert "\n" not in msg


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_complex_and_datetime_scores_refused(name):
    # probe finding: complex scores lost their imaginary part (a ComplexWarning only) and
    # dates became nanosecond counts, both silently scored
    spec = SPECS[name]
    _raises(spec, Y, S + 0.5j, f"{spec.score_name} must be real numbers", "complex")
    _raises(spec, Y, S.astype(complex), f"{spec.score_name} must be real numbers")
    dates = np.array(["2020-01-01", "2020-01-02", "2020-01-03", "2020-01-04", "2020-01-05",
                      "2020-01-06"], dtype="datetime64[D]")
    _raises(spec, Y, dates, f"{spec.score_name} must be numbers", "dates or durations")


def test_sum_overflow_of_finite_scores_warns_nothing():
    # probe finding: finite scores whose sum overflows leaked "overflow encountered in reduce"
    import warnings

    from medaudit._validation import as_1d_float

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = as_1d_float([1e308, 1e308, 0.0], name="y_score")
    assert out.tolist() == [1e308, 1e308, 0.0]
    with pytest.raises(MedauditError, match="y_score contains inf at index 1"):
        as_1d_float([1e308, np.inf, 0.0], name="y_score")


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_inputs_are_not_modified(name):
    y, s = Y.copy(), S.copy()
    SPECS[name](y, s)
    np.testing.assert_array_equal(y, Y)
    np.testing.assert_array_equal(s, S)


# ============================================================== string options
UNKNOWN_OPTIONS = [
    pytest.param(average_precision, {"ties": "pooledd"}, "ties", "pooled", id="ap-pooledd"),
    pytest.param(average_precision, {"ties": "individul"}, "ties", "individual", id="ap-individul"),
    pytest.param(soft_roc_auc, {"variant": "inclusiv"}, "variant", "inclusive", id="soft-auc-inclusiv"),
    pytest.param(soft_roc_auc, {"variant": "strikt"}, "variant", "strict", id="soft-auc-strikt"),
    pytest.param(soft_roc_auc, {"variant": "trapezoidal"}, "variant", "trapezoid", id="soft-auc-trapezoidal"),
    pytest.param(soft_roc_auc, {"ties": "grouped_"}, "ties", "grouped", id="soft-auc-ties"),
    pytest.param(soft_average_precision, {"ties": "stabel"}, "ties", "stable", id="soft-ap-ties"),
]


@pytest.mark.parametrize(("func", "kwargs", "param", "suggestion"), UNKNOWN_OPTIONS)
def test_unknown_option_suggests_closest(func, kwargs, param, suggestion):
    with pytest.raises(MedauditError, match=re.escape(f"Did you mean {suggestion!r}?")) as info:
        func(Y, S, **kwargs)
    msg = str(info.value)
    assert msg.startswith(f"{param}={kwargs[param]!r} is not a valid option")


@pytest.mark.parametrize(
    ("func", "kwargs"),
    [
        (average_precision, {"ties": None}),
        (average_precision, {"ties": "zzzz"}),
        (soft_roc_auc, {"variant": 1}),
    ],
)
def test_invalid_option_without_close_match(func, kwargs):
    ((param, value),) = kwargs.items()
    with pytest.raises(MedauditError, match=re.escape(f"{param}={value!r} is not a valid")) as info:
        func(Y, S, **kwargs)
    assert "Did you mean" not in str(info.value)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        average_precision(Y, S, "pooled")
    with pytest.raises(TypeError):
        average_precision(Y, S, tie="pooled")  # misspelt keyword *name*: Python refuses


# ============================================================= numeric options
NUMERIC_OPTIONS = [
    *[
        pytest.param(f, {k: v}, f"{k} must lie in [0.0, 1.0]", id=f"{f.__name__}-{v}")
        for f, k in [
            (sensitivity_at_specificity, "min_specificity"),
            (specificity_at_sensitivity, "min_sensitivity"),
            (threshold_for_sensitivity, "min_sensitivity"),
            (threshold_for_specificity, "min_specificity"),
        ]
        for v in (1.5, -0.1, math.nan)
    ],
    *[
        pytest.param(selective_risk, {"coverage": v}, "coverage must lie in (0.0, 1.0]", id=f"coverage-{v}")
        for v in (0.0, 1.2, -0.5, math.nan)
    ],
    *[
        pytest.param(
            f, {"prevalence": v}, "prevalence must lie in (0.0, 1.0)", id=f"{f.__name__}-prevalence-{v}"
        )
        for f in (brier_score, ece, log_loss)
        for v in (0.0, 1.0, 1.2, math.nan)
    ],
    *[
        pytest.param(f, {"n_bins": v}, "n_bins must be a positive integer", id=f"{f.__name__}-n_bins-{v}")
        for f in (ece, reliability_diagram)
        for v in (0, -3, 2.5, True)
    ],
    *[
        pytest.param(log_loss, {"eps": v}, "eps must lie in (0.0, 0.5)", id=f"eps-{v}")
        for v in (0.0, 0.5, -1e-15)
    ],
    *[
        pytest.param(
            operating_point, {"threshold": v}, "threshold must be a number or +/-inf",
            id=f"threshold-{v}"
        )
        for v in (math.nan, "high")  # -inf is accepted: everything predicted positive
    ],
]


@pytest.mark.parametrize(("func", "kwargs", "message"), NUMERIC_OPTIONS)
def test_numeric_option_out_of_range(func, kwargs, message):
    with pytest.raises(MedauditError, match=re.escape(message)):
        func(Y, S, **kwargs)


def test_value_kind_names_each_kind_once():
    import numpy as np

    from medaudit._validation import value_kind

    got = [value_kind(v) for v in (True, np.bool_(False), 1, np.int8(2), 1.0, np.float32(2),
                                   "1", None)]
    assert got == ["boolean", "boolean", "integer", "integer", "float", "float", "text",
                   "NoneType"]
