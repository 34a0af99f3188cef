"""Helpers shared by the statistics tests: materialised resamples and their references.

A replicate is a row ``w`` of multinomial counts; the data set it stands for is
``idx = np.repeat(np.arange(n), w)`` (copies adjacent, items in input order: the
engine's documented tie semantics).  ``HARD_METRICS`` pairs every hard-label metric of
the engine with an independent reference (scikit-learn or ``tests/_oracles.py``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score

from medaudit.exceptions import DegenerateDataWarning
from medaudit.stats._metricspec import parse_metrics
from medaudit.stats.designs import make_plan
from tests import _oracles as O

RTOL = 1e-12
ATOL = 1e-15  # for values that are exactly 0 in one computation and ~1e-17 in the other


def materialise(w: np.ndarray) -> np.ndarray:
    """Index vector of the resampled data set: copies adjacent, items in input order."""
    wi = w.astype(int)
    assert np.array_equal(wi, w), "replicate weights must be integer counts"
    return np.repeat(np.arange(w.size), wi)


def draw_weights(design, y, n_resamples, seed, **kw) -> np.ndarray:
    """The weight rows a public function draws from integer seed ``seed``."""
    plan = make_plan(design, np.asarray(y, dtype=float), **kw)
    return np.vstack(list(plan.batches(n_resamples, np.random.default_rng(seed))))


def tied_data(seed: int, n_pos: int, n_neg: int):
    """Labels and probabilities on a 0.1 grid (0 and 1 included): heavy ties everywhere."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    rng.shuffle(y)
    s = np.round(np.clip(0.3 * y + 0.8 * rng.random(y.size) - 0.05, 0.0, 1.0), 1)
    return y, s


def _sk_auroc(y, s):
    return roc_auc_score(y, s)


def _sk_ap(y, s):
    return average_precision_score(y, s)


# (metric spec, reference on the materialised data, when defined: "two" = both classes,
# "pos" = at least one positive, "neg" = at least one negative, "any" = always)
HARD_METRICS = [
    ("roc_auc", _sk_auroc, "two"),
    ("average_precision", O.average_precision_individual, "pos"),
    (("average_precision", {"ties": "pooled"}), _sk_ap, "pos"),
    ("brier_score", brier_score_loss, "any"),
    (("brier_score", {"prevalence": 0.3}), lambda y, s: O.brier_prevalence(y, s, 0.3), "two"),
    ("ece", lambda y, s: O.ece(y, s, 15), "any"),
    (("ece", {"n_bins": 10, "prevalence": 0.3}), lambda y, s: O.ece(y, s, 10, 0.3), "two"),
    ("log_loss", O.log_loss, "any"),
    (("log_loss", {"prevalence": 0.5}), lambda y, s: O.log_loss(y, s, pi=0.5), "two"),
    ("aurc", O.aurc, "any"),
    (("selective_risk", {"coverage": 0.8}), lambda y, s: O.risk_at_coverage(y, s, 0.8), "any"),
    (("selective_risk", {"coverage": 0.37}), lambda y, s: O.risk_at_coverage(y, s, 0.37), "any"),
    ("sensitivity_at_specificity", lambda y, s: O.se_at_sp(y, s, 0.95), "two"),
    (("sensitivity_at_specificity", {"min_specificity": 0.7}),
     lambda y, s: O.se_at_sp(y, s, 0.7), "two"),
    ("specificity_at_sensitivity", lambda y, s: O.sp_at_se(y, s, 0.95), "two"),
    (("specificity_at_sensitivity", {"min_sensitivity": 0.6}),
     lambda y, s: O.sp_at_se(y, s, 0.6), "two"),
    (("sensitivity", {"threshold": 0.5}), lambda y, s: O.se_sp_at(y, s, 0.5)[0], "two"),
    (("specificity", {"threshold": 0.5}), lambda y, s: O.se_sp_at(y, s, 0.5)[1], "two"),
]
HARD_SPECS = [m for m, _, _ in HARD_METRICS]


def _metric_id(spec) -> str:
    return parse_metrics([spec])[0].id


def reference(fn, when, y, s) -> float:
    n_pos = float(np.sum(y))
    if when == "two" and (n_pos == 0 or n_pos == y.size):
        return math.nan
    if when == "pos" and n_pos == 0:
        return math.nan
    if when == "neg" and n_pos == y.size:
        return math.nan
    return float(fn(y, s))


def assert_reps_match(got, expected, label=""):
    got, expected = np.asarray(got), np.asarray(expected)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=f"{label}: NaN mask")
    ok = ~np.isnan(expected)
    np.testing.assert_allclose(got[ok], expected[ok], rtol=RTOL, atol=ATOL, err_msg=label)


def _quiet(fn, *args, **kwargs):
    """Call ``fn`` with DegenerateDataWarning silenced (single-class replicates are expected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return fn(*args, **kwargs)
