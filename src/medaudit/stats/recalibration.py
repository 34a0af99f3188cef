"""Calibration slope and intercept by logistic recalibration (Cox 1958; Van Calster et al. 2016).

With ``x = logit(p)``:

* **slope** and **joint intercept**: ``logit P(y = 1) = a + b x`` (perfect calibration:
  ``b = 1``, ``a = 0``; ``b < 1`` means predictions too extreme);
* **calibration intercept** ("calibration-in-the-large"): ``logit P(y = 1) = a + x``, the
  slope fixed at 1 by an offset (``a > 0``: risks underestimated on average).

Point estimates and Wald intervals come from :class:`statsmodels.genmod.generalized_linear_model.GLM`
(binomial, logit link).  Bootstrap intervals refit every replicate by Newton's method on
the replicate weights, all replicates of a batch at once (a loop over Newton steps, not
over replicates); a replicate that does not converge — complete separation in the
resample — is degenerate (nan) and counted.  Probabilities of exactly 0 or 1 have no
logit: pass ``eps`` to clip them (recorded), or they are refused.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from medaudit._validation import RNGLike, as_generator, check_fraction
from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores, warn_if_one_class
from medaudit.stats._docs import fill_doc
from medaudit.stats._ranked import bootstrap_plan, nested_to_dict, sample_weights
from medaudit.stats._results import BootstrapResult, _ToDict
from medaudit.stats.bootstrap import _common_options, _result

__all__ = ["calibration_slope_intercept", "calibration_slope_intercept_ci", "CalibrationFit",
           "CalibrationFitCI"]

_MAX_STEPS = 60
_STEP_TOL = 1e-10
#: halvings of one Newton step at most (2^-30 of it: a row still not climbing is at its
#: maximum to rounding)
_MAX_HALVINGS = 30
#: a step is taken when the log-likelihood falls by less than this (relative): rounding
#: near the maximum, not the overshoot the halving is for
_LL_TOL = 1e-9
#: Newton steps longer than this (in a or b) are checked for a fall of the log-likelihood
_CHECK_STEP = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationFit(_ToDict):
    """Logistic recalibration estimates with Wald standard errors and intervals."""

    slope: float
    slope_se: float
    slope_ci_low: float
    slope_ci_high: float
    intercept: float
    intercept_se: float
    intercept_ci_low: float
    intercept_ci_high: float
    intercept_joint: float
    intercept_joint_se: float
    intercept_joint_ci_low: float
    intercept_joint_ci_high: float
    confidence_level: float
    n: int
    n_pos: float
    eps: float | None
    converged: bool
    method: str = "wald (statsmodels GLM, binomial logit)"


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationFitCI(_ToDict):
    """The Wald fit and bootstrap intervals of slope, calibration intercept and joint intercept."""

    fit: CalibrationFit
    slope: BootstrapResult
    intercept: BootstrapResult
    intercept_joint: BootstrapResult

    def to_dict(self, *, include_arrays: bool = False) -> dict[str, Any]:
        return nested_to_dict(self, "fit", ("slope", "intercept", "intercept_joint"),
                              include_arrays)


def _logit(y_true, y_prob, eps):
    y, p = labels_scores(y_true, y_prob, prob=True)
    if eps is not None:
        eps = check_fraction(eps, name="eps", low=0.0, high=0.5)
        p = np.clip(p, eps, 1.0 - eps)
    elif ((p == 0.0) | (p == 1.0)).any():
        bad = int(np.flatnonzero((p == 0.0) | (p == 1.0))[0])
        raise MedauditError(f"y_prob is exactly {float(p[bad])!r} at index {bad}, which has no logit; pass "
                            "eps (e.g. 1e-6) to clip the probabilities to [eps, 1 - eps] for the "
                            "recalibration model.")
    return y, special.logit(p), eps


def _nan_fit(level, n, n_pos, eps) -> CalibrationFit:
    nan = math.nan
    return CalibrationFit(slope=nan, slope_se=nan, slope_ci_low=nan, slope_ci_high=nan,
                          intercept=nan, intercept_se=nan, intercept_ci_low=nan,
                          intercept_ci_high=nan, intercept_joint=nan, intercept_joint_se=nan,
                          intercept_joint_ci_low=nan, intercept_joint_ci_high=nan,
                          confidence_level=level, n=n, n_pos=n_pos, eps=eps, converged=False)


@fill_doc
def calibration_slope_intercept(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    confidence_level: float = 0.95,
    eps: float | None = None,
    sample_weight: ArrayLike | None = None,
) -> CalibrationFit:
    """Calibration slope, calibration intercept and joint intercept with Wald intervals.

    Parameters
    ----------
    {y_true}
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    confidence_level : float, default=0.95
    eps : float in (0, 0.5), optional
        Clip probabilities to ``[eps, 1 - eps]`` before the logit; required when some are
        exactly 0 or 1.
    sample_weight : array-like of shape (n_samples,), optional
        Frequency weights (``freq_weights`` of the GLM).

    Returns
    -------
    CalibrationFit
        nan with :class:`~medaudit.exceptions.DegenerateDataWarning` where a fit does not
        exist: one class, or, for the slope and the joint intercept only, complete
        separation of the labels by ``logit(p)`` (the offset model's calibration intercept
        still has a finite fit then, and is returned).

    Notes
    -----
    Verified against R's ``glm(y ~ x, binomial)`` and ``glm(y ~ 1, offset = x, binomial)``
    with ``confint.default`` (tests/reference/recalibration_R.csv) and scikit-learn's
    unpenalised ``LogisticRegression``.

    Examples
    --------
    >>> y = [0, 0, 1, 0, 1, 1, 0, 1, 1, 0]
    >>> p = [0.1, 0.3, 0.4, 0.5, 0.6, 0.7, 0.35, 0.8, 0.55, 0.2]
    >>> fit = calibration_slope_intercept(y, p)
    >>> round(fit.slope, 4), round(fit.intercept, 4)
    (3.8491, 0.2447)
    """
    level = check_fraction(confidence_level, name="confidence_level")
    y, x, eps = _logit(y_true, y_prob, eps)
    w = sample_weights(sample_weight, y.size)
    n_pos = float(w @ y)
    if warn_if_one_class(n_pos, float(w.sum()) - n_pos, "calibration_slope_intercept"):
        return _nan_fit(level, int(y.size), n_pos, eps)
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

    fam = sm.families.Binomial()
    # a case of weight 0 adds nothing to the likelihood: fitted without it (the same MLE),
    # or statsmodels' separation check would see its fitted value and miss a separation
    keep = w > 0
    y, x, w = y[keep], x[keep], w[keep]

    def fit(exog, offset):
        """The GLM, or None where its MLE does not exist (separation)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", PerfectSeparationWarning)
                # IRLS to a tight deviance tolerance: the default 1e-8 leaves standard errors
                # off R's glm in the sixth digit
                return sm.GLM(y, exog, family=fam, offset=offset,
                              freq_weights=w).fit(tol=1e-13, maxiter=200)
        except (PerfectSeparationError, PerfectSeparationWarning, np.linalg.LinAlgError):
            return None

    # the two models are fitted on their own: logit(p) can separate the classes, so that the
    # slope model has no finite fit, while the offset model (intercept only) still has one
    # (R's glm(y ~ 1, offset = x) and statsmodels both converge there)
    # one value of logit(p) (every probability the same) leaves the slope unidentifiable: the
    # design is singular, and statsmodels would return a pseudo-inverse's arbitrary slope
    constant = bool(np.ptp(x) == 0)
    joint = None if constant else fit(np.column_stack([np.ones(y.size), x]), None)
    large = fit(np.ones((y.size, 1)), x)
    nan_fit = _nan_fit(level, int(keep.size), n_pos, eps)
    if constant:
        warnings.warn("calibration_slope_intercept: logit(p) takes one value (every probability "
                      "is the same), so the slope is not identifiable: slope and joint intercept "
                      "are nan" + ("" if large is None else ", the calibration intercept (offset "
                                   "model) is estimated") + ".", DegenerateDataWarning, stacklevel=2)
        if large is None:
            return nan_fit
    elif joint is None or large is None:
        lost = ("the recalibration models have no finite fit, returning nan" if large is None
                else "the slope model has no finite fit: slope and joint intercept are nan, "
                     "the calibration intercept (offset model) is estimated")
        warnings.warn(f"calibration_slope_intercept: logit(p) separates the classes completely; "
                      f"{lost}.", DegenerateDataWarning, stacklevel=2)
        if large is None:
            return nan_fit
    alpha = 1.0 - level
    out = {}
    if joint is not None:
        cj = joint.conf_int(alpha=alpha)
        out.update(slope=float(joint.params[1]), slope_se=float(joint.bse[1]),
                   slope_ci_low=float(cj[1, 0]), slope_ci_high=float(cj[1, 1]),
                   intercept_joint=float(joint.params[0]), intercept_joint_se=float(joint.bse[0]),
                   intercept_joint_ci_low=float(cj[0, 0]), intercept_joint_ci_high=float(cj[0, 1]))
    cl = large.conf_int(alpha=alpha)
    out.update(intercept=float(large.params[0]), intercept_se=float(large.bse[0]),
               intercept_ci_low=float(cl[0, 0]), intercept_ci_high=float(cl[0, 1]),
               converged=bool(large.converged and joint is not None and joint.converged))
    return dataclasses.replace(nan_fit, **out)


def logistic_rows(w: NDArray, x: NDArray[np.float64], y: NDArray[np.float64], *, slope: bool
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Maximum-likelihood ``(a, b)`` of ``logit P(y) = a + b x`` (or ``a + x``) for each weight row.

    Newton's method from ``(0, 1)`` (perfect calibration), vectorised over rows, with step
    halving: a full Newton step longer than 0.25 that lowers a row's log-likelihood is
    halved until it does not.  Plain Newton overshoots when the fit is far from ``(0, 1)`` (a slope near 0 or
    negative) and diverges there, which would drop well-defined replicates as degenerate,
    and only replicates of one kind (a biased interval); the log-likelihood is concave, so a
    halved Newton step always climbs until the maximum.  A row whose full steps all climb
    takes exactly the plain Newton path.  Rows not converged after 60 steps (separation: no
    maximum), or with a singular information matrix, are nan.
    """
    w2 = np.atleast_2d(w).astype(np.float64)
    b_rows = w2.shape[0]
    a = np.zeros(b_rows)
    b = np.ones(b_rows)
    done = np.zeros(b_rows, dtype=bool)
    failed = np.zeros(b_rows, dtype=bool)
    x2 = x * x
    eta = a[:, None] + b[:, None] * x
    ll = np.full(b_rows, np.nan)  # log-likelihood at (a, b), computed where a step needs it
    for _ in range(_MAX_STEPS):  # Newton steps; every replicate of the batch moves together
        mu = special.expit(eta)
        wv = w2 * (mu * (1.0 - mu))
        r = w2 * (y - mu)
        g0, h00 = K._rowsum(r), K._rowsum(wv)
        if slope:
            g1, h01, h11 = K._dot(r, x), K._dot(wv, x), K._dot(wv, x2)
            det = h00 * h11 - h01 * h01
            with np.errstate(divide="ignore", invalid="ignore"):
                da = (h11 * g0 - h01 * g1) / det
                db = (h00 * g1 - h01 * g0) / det
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                da = g0 / h00
            db = np.zeros(b_rows)
        step = np.maximum(np.abs(da), np.abs(db))
        failed |= ~done & ~np.isfinite(step)
        live = ~done & ~failed
        a_new = np.where(live, a + da, a)
        b_new = np.where(live, b + db, b)
        eta_new = a_new[:, None] + b_new[:, None] * x
        ll_new = np.full(b_rows, np.nan)
        # only long steps are checked (a logaddexp per item): Newton overshoots by long steps,
        # which grow as it diverges, while the short ones near the maximum converge
        # quadratically; most rows never take one, and so pay nothing here
        long = np.flatnonzero(live & (step > _CHECK_STEP))
        if long.size:
            unknown = long[np.isnan(ll[long])]
            if unknown.size:
                ll[unknown] = _loglik(w2[unknown], eta[unknown], y)
            ll_new[long] = _loglik(w2[long], eta_new[long], y)
            worse = long[~(ll_new[long] >= ll[long] - _LL_TOL * (1.0 + np.abs(ll[long])))]
            t = 1.0
            for _ in range(_MAX_HALVINGS):
                if not worse.size:
                    break
                t *= 0.5
                a_new[worse] = a[worse] + t * da[worse]
                b_new[worse] = b[worse] + t * db[worse]
                eta_new[worse] = a_new[worse, None] + b_new[worse, None] * x
                ll_new[worse] = _loglik(w2[worse], eta_new[worse], y)
                worse = worse[~(ll_new[worse] >= ll[worse] - _LL_TOL * (1.0 + np.abs(ll[worse])))]
            # a Newton direction climbs unless the row is at its maximum to rounding: kept there
            a_new[worse], b_new[worse], ll_new[worse] = a[worse], b[worse], ll[worse]
            eta_new[worse] = eta[worse]
            done[worse] = True
        done |= live & (step < _STEP_TOL * np.maximum(1.0, np.maximum(np.abs(a_new),
                                                                      np.abs(b_new))))
        a, b, eta, ll = a_new, b_new, eta_new, ll_new
        if (done | failed).all():
            break
    return np.where(done, a, np.nan), np.where(done, b, np.nan)


def _loglik(w: NDArray[np.float64], eta: NDArray[np.float64], y: NDArray[np.float64]
            ) -> NDArray[np.float64]:
    """Per row, the weighted Bernoulli log-likelihood ``sum w (y eta - log(1 + e^eta))``."""
    return K._rowsum(w * (y * eta - np.logaddexp(0.0, eta)))


def calibration_slope_intercept_ci(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    design: str = "ordinary",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
    eps: float | None = None,
) -> CalibrationFitCI:
    """Bootstrap intervals of calibration slope and intercepts (every replicate refitted).

    Parameters
    ----------
    y_true, y_prob, eps
        As in :func:`calibration_slope_intercept`.
    design, cluster, strata, n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`.

    Returns
    -------
    CalibrationFitCI
        ``fit`` holds the statsmodels point estimates and Wald intervals; the bootstrap
        results have the same point estimates and percentile intervals.

    Examples
    --------
    >>> gen = np.random.default_rng(0)
    >>> p = gen.uniform(0.05, 0.95, 200)
    >>> y = (gen.random(200) < special.expit(1.5 * special.logit(p))).astype(int)
    >>> res = calibration_slope_intercept_ci(y, p, n_resamples=200, rng=3)
    >>> res.slope.ci_low < res.slope.estimate < res.slope.ci_high, res.slope.n_degenerate
    (True, 0)
    """
    n_res, level, _, batch = _common_options(n_resamples, confidence_level, "percentile", batch)
    fit = calibration_slope_intercept(y_true, y_prob, confidence_level=level, eps=eps)
    y, x, eps = _logit(y_true, y_prob, eps)
    if math.isnan(fit.slope):
        raise MedauditError("calibration_slope_intercept_ci: the full-sample fit does not exist "
                            "(one class, complete separation, or one value of p for every case); there is "
                            "nothing to resample.")
    plan = bootstrap_plan(design, y, cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    a_j, b_j, a_l = [], [], []
    for w in plan.batches(n_res, gen, batch):
        aj, bj = logistic_rows(w, x, y, slope=True)
        al, _ = logistic_rows(w, x, y, slope=False)
        a_j.append(aj)
        b_j.append(bj)
        a_l.append(al)
    common = dict(level=level, ci_method="percentile", design=design, n_resamples=n_res,
                  seed=rec["seed"], n=int(y.size), n_pos=float(y.sum()),
                  n_neg=float(y.size - y.sum()), options={"eps": eps, "rng": rec})
    return CalibrationFitCI(
        fit=fit,
        slope=_result("calibration_slope", fit.slope, np.concatenate(b_j), None, **common),
        intercept=_result("calibration_intercept", fit.intercept, np.concatenate(a_l), None,
                          **common),
        intercept_joint=_result("calibration_intercept_joint", fit.intercept_joint,
                                np.concatenate(a_j), None, **common))
