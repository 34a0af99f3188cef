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
import pytest
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score, roc_curve
from sklearn.metrics import log_loss as sklearn_log_loss

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


# ------------------------------------------------- point metrics (tests of ranking,
# calibration, thresholds, selective and their shared properties)
# Absolute slack only where the exact value can be 0 (ECE of a calibrated bin, the log loss
# of a perfect prediction clipped at eps): there a relative tolerance means nothing.
ATOL_ZERO = 1e-15
EPS = 1e-15  # medaudit's default log-loss clipping

def _approx(expected, rel=RTOL, abs=0.0):  # noqa: A002 - pytest.approx's own keyword
    """pytest.approx without its default abs=1e-12, which would swamp small values."""
    return pytest.approx(expected, rel=rel, abs=abs)


def _random_case(rng: np.random.Generator, n: int, *, tied: bool):
    """Labels with >= 1 positive and >= 1 negative (n >= 2); probabilities, tied or not.

    The tied grid {0, 0.2, ..., 1} gives heavy ties and also exact 0 and 1.
    """
    y = rng.integers(0, 2, n).astype(float)
    if n >= 2:  # n = 1 is only asked for by metrics defined on one class (AURC)
        i, j = rng.choice(n, size=2, replace=False)
        y[i], y[j] = 1.0, 0.0
    s = rng.integers(0, 6, n) / 5.0 if tied else rng.random(n)
    return y, s


def _cases(seed: int, *, tied: bool, n_cases: int = 150, n_min: int = 2, n_max: int = 30):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        yield _random_case(rng, int(rng.integers(n_min, n_max + 1)), tied=tied)


def _prevalence_weights(y, pi):
    """Per-image weights of M0.7: pi/|P| for positives, (1-pi)/|N| for negatives."""
    y = np.asarray(y, dtype=float)
    n_pos = y.sum()
    return np.where(y == 1, pi / n_pos, (1.0 - pi) / (y.size - n_pos))


def _reference_sklearn_log_loss(y, s, *, eps=EPS, sample_weight=None):
    # sklearn >= 1.5 dropped ``eps``; clip ourselves exactly as medaudit declares it does.
    return sklearn_log_loss(
        y,
        np.clip(np.asarray(s, dtype=float), eps, 1 - eps),
        labels=[0, 1],
        sample_weight=sample_weight,
    )


def _reference_manual_log_loss(y, s, *, eps=EPS):
    y = np.asarray(y, dtype=float)
    c = np.clip(np.asarray(s, dtype=float), eps, 1 - eps)
    return float(np.mean(-(y * np.log(c) + (1 - y) * np.log1p(-c))))


def _reference_sklearn_threshold_for_sensitivity(y, s, x, *, drop_intermediate):
    """Highest ROC threshold with TPR >= x, read off sklearn's roc_curve."""
    _, tpr, thr = roc_curve(y, s, drop_intermediate=drop_intermediate)
    return float(thr[np.argmax(tpr >= x)])


# ------------------------------------------------------------------ hypothesis strategies
@st.composite
def labelled(
    draw, *, prob: bool, ties: bool | None = None, min_size: int = 2, max_size: int = 30, unique: bool = False
):
    """(y, s) with at least one positive and one negative.

    ``prob``: scores in [0, 1] (else in [-1e3, 1e3]).  ``ties``: draw scores from a coarse
    grid (heavy ties); ``None`` lets hypothesis choose.  ``unique``: no tied scores.
    """
    n = draw(st.integers(min_size, max_size))
    y = draw(arrays(np.int8, n, elements=st.integers(0, 1))).astype(float)
    i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    y[i], y[j] = 1.0, 0.0
    use_grid = (draw(st.booleans()) if ties is None else ties) and not unique
    if use_grid:
        k = draw(arrays(np.int64, n, elements=st.integers(0, 10)))
        s = k / 10.0 if prob else (k - 5.0) * 7.0
    else:
        lo, hi = (0.0, 1.0) if prob else (-1e3, 1e3)
        s = draw(
            arrays(
                np.float64,
                n,
                unique=unique,
                elements=st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False),
            )
        )
    return y, s


@st.composite
def labelled_grid(draw, max_size: int = 30):
    """(y, s) with s on the grid k/50, k in [-500, 500]: both tied and untied values.

    On this grid s**3 + 2 and exp(s) are strictly increasing *in floating point too*
    (neighbours stay distinct), so rank invariance can be asserted exactly.
    """
    n = draw(st.integers(2, max_size))
    y = draw(arrays(np.int8, n, elements=st.integers(0, 1))).astype(float)
    i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    y[i], y[j] = 1.0, 0.0
    s = draw(arrays(np.int64, n, elements=st.integers(-500, 500))) / 50.0
    return y, s


# clusters (patients) of 1-3 items and sites holding whole patients
_N_PATIENTS = 22


def _cluster_data():
    rng = np.random.default_rng(77)
    sizes = rng.integers(1, 4, _N_PATIENTS)
    patient = np.repeat(np.arange(_N_PATIENTS), sizes)
    site_of_patient = rng.integers(0, 3, _N_PATIENTS)
    site = site_of_patient[patient]
    n = patient.size
    y = (rng.random(n) < 0.45).astype(float)
    y[:2] = [0.0, 1.0]
    s = np.round(np.clip(0.3 * y + 0.8 * rng.random(n) - 0.05, 0.0, 1.0), 1)
    return y, s, patient, site


Y_CL, S_CL, PATIENT, SITE = _cluster_data()

DESIGN_CASES = {
    "ordinary": ("ordinary", {}),
    "ordinary+strata": ("ordinary", {"strata": SITE}),
    "within_label": ("within_label", {}),
    "within_label+strata": ("within_label", {"strata": SITE}),
    "cluster": ("cluster", {"cluster": PATIENT}),
    "cluster+strata": ("cluster", {"cluster": PATIENT, "strata": SITE}),
}
