"""The reliability estimators of paper 002 (methods.md M2.4), fitted on aggregated cells.

A fitting pool holds, per model, the judgments of the source institutions plus the
target institution's label shot.  Every estimator predicts the agreement probability
``P(c = 1)`` of a cell ``(institution d, finding k, direction r)``; no estimator has an
instance-level covariate, so a prediction is constant within a cell and the whole
design runs on cell counts ``(n_correct, n_total)``.  Logistic fits on cells use
``sample_weight`` = counts, which is the same likelihood as the row-level fit (tested).

Codes: institutions, findings are integer codes of their *sorted* names, direction is
``1`` = present, ``0`` = absent, so "reference coding, first sorted level dropped" is
"drop the smallest code seen in the pool".

Estimators (keys as in methods.md): ``naive``, ``additive``, ``hdcal``,
``hdcal_weighted``, ``glmm`` (see :mod:`medaudit.agreement.glmm`), ``has``,
``has_fixed_tau``, ``has_no_offset``, ``target_only``, ``beta_binomial``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from medaudit.agreement._base import ESTIMATORS, FAMILIES, SET_B, Estimator, Pool, codes, expit
from medaudit.exceptions import MedauditError

__all__ = ["Pool", "Naive", "Additive", "HDCal", "HDCalWeighted", "TargetOnly", "HAS",
           "HASFixedTau", "HASNoOffset", "BetaBinomial", "ESTIMATORS", "SET_B", "FAMILIES",
           "make_estimator", "logistic_settings"]

_LOGISTIC = {"penalty": "l2", "C": 1.0, "solver": "lbfgs", "max_iter": 1000,
             "fit_intercept": True, "coding": "reference (first sorted level in the pool dropped)"}


def logistic_settings() -> dict[str, Any]:
    """The logistic-family settings of M2.4 with the library versions that fit them.

    Solver results move across scikit-learn versions under separation (anchors T16),
    so every result records this dictionary.
    """
    import sklearn

    return {**_LOGISTIC, "sklearn": sklearn.__version__, "numpy": np.__version__}


def _pooled_rate(pool: Pool) -> float:
    n = pool.n_total.sum()
    if n == 0:
        raise MedauditError("the fitting pool is empty; no estimator can be fitted.")
    return float(pool.n_correct.sum() / n)


def _logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.log(p) - np.log1p(-p)


class Naive(Estimator):
    """Pooled-rate constant: ``P = mean(c)`` over the fitting pool (sources plus shot).

    Examples
    --------
    >>> pool = Pool(institution=[0, 1], finding=[0, 0], direction=[1, 0], n_correct=[3, 1],
    ...             n_total=[4, 4], target=1)
    >>> Naive().fit(pool).predict([1], [0], [1]).tolist()
    [0.5]
    """

    key = "naive"

    def fit(self, pool: Pool) -> Naive:
        self.rate_ = _pooled_rate(pool)
        self.info_ = {"estimator": self.key, "rate": self.rate_, "fallback": False}
        return self

    def predict(self, institution, finding, direction):
        self._check_fitted()
        return np.full(np.asarray(institution).shape, self.rate_, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# logistic family

_BLOCKS = {"additive": ("r", "k", "d"), "hdcal": ("r", "k", "d", "dk")}


#: combined (d, k) level = d * _DK_WIDTH + k.  A fixed width, never one taken from the pool:
#: with ``max(k in pool) + 1`` a test finding absent from the pool aliased another
#: institution's interaction level (d=0, k=K) == (d=1, k=0) and switched its indicator on
_DK_WIDTH = 1 << 31


def _combined(d: NDArray[np.int64], k: NDArray[np.int64]) -> NDArray[np.int64]:
    if k.size and int(k.max()) >= _DK_WIDTH:
        raise MedauditError(f"finding codes must be below {_DK_WIDTH}; got {int(k.max())}.")
    return d.astype(np.int64) * _DK_WIDTH + k


def _levels(pool: Pool) -> dict[str, NDArray[np.int64]]:
    """Non-reference levels of each factor in the pool (first sorted level dropped)."""
    d, k, r = pool.institution, pool.finding, pool.direction
    return {"r": np.unique(r)[1:], "k": np.unique(k)[1:], "d": np.unique(d)[1:],
            "dk": np.unique(_combined(d, k))[1:]}


def _design(levels: dict[str, NDArray[np.int64]], blocks: tuple[str, ...], d, k, r) -> NDArray:
    """One-hot indicators of the non-reference levels; unseen levels give all zeros."""
    value = {"r": r, "k": k, "d": d, "dk": _combined(d, k)}
    cols = [(value[b][:, None] == levels[b][None, :]) for b in blocks]
    return np.concatenate(cols, axis=1).astype(np.float64) if cols else np.zeros((d.size, 0))


class _Logistic(Estimator):
    blocks: ClassVar[tuple[str, ...]] = ()
    #: sklearn's default stopping tolerance (M2.4 fixes the defaults); tests tighten it to show
    #: that the cell fit and the row-level fit share one optimum
    _tol: float = 1e-4

    def __init__(self, *, C: float = 1.0, max_iter: int = 1000) -> None:
        self.C = float(C)
        self.max_iter = int(max_iter)

    def _weights(self, pool: Pool) -> NDArray[np.float64]:
        return np.ones(pool.n_total.size)

    def _fit_pool(self, pool: Pool, fallback_pool: Pool) -> None:
        """Fit on ``pool``; a single-class pool falls back to the constant on ``fallback_pool``."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        info: dict[str, Any] = {"estimator": self.key, **logistic_settings(), "C": self.C,
                                "max_iter": self.max_iter, "blocks": "+".join(self.blocks)}
        y, n = pool.n_correct, pool.n_total
        if n.sum() == 0 or y.sum() == 0 or y.sum() == n.sum():
            self.fallback_ = Naive().fit(fallback_pool)
            self.info_ = {**info, "fallback": True, "n_iter": 0, "converged": True}
            return
        self.fallback_ = None
        self.levels_ = _levels(pool)
        X = _design(self.levels_, self.blocks, pool.institution, pool.finding, pool.direction)
        cw = self._weights(pool)
        # each cell becomes a correct row (weight y) and an incorrect row (weight n - y)
        Xr = np.concatenate([X, X])
        yr = np.r_[np.ones(y.size), np.zeros(y.size)]
        wr = np.r_[y * cw, (n - y) * cw].astype(np.float64)
        keep = wr > 0
        lr = LogisticRegression(C=self.C, solver="lbfgs", max_iter=self.max_iter, tol=self._tol)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            if Xr.shape[1] == 0:  # intercept only (one level of every factor)
                lr.fit(np.zeros((int(keep.sum()), 1)), yr[keep], sample_weight=wr[keep])
            else:
                lr.fit(Xr[keep], yr[keep], sample_weight=wr[keep])
        self.model_ = lr
        self.info_ = {**info, "fallback": False, "n_iter": int(np.max(lr.n_iter_)),
                      "converged": not any(issubclass(w.category, ConvergenceWarning)
                                           for w in caught),
                      "n_features": int(X.shape[1])}

    def fit(self, pool: Pool) -> _Logistic:
        self._fit_pool(pool, pool)
        return self

    def predict(self, institution, finding, direction):
        self._check_fitted()
        d, k, r = (codes(institution, "institution"), codes(finding, "finding"),
                   codes(direction, "direction"))
        if self.fallback_ is not None:
            return self.fallback_.predict(d, k, r)
        X = _design(self.levels_, self.blocks, d, k, r)
        if X.shape[1] == 0:
            X = np.zeros((d.size, 1))
        eta = X @ self.model_.coef_[0] + self.model_.intercept_[0]
        return expit(eta)


class Additive(_Logistic):
    """Logistic ``logit P = b0 + b_r + b_k + b_d`` (reference-coded, L2, C = 1, L-BFGS)."""

    key = "additive"
    blocks = _BLOCKS["additive"]


class HDCal(_Logistic):
    """HD-Cal: ``logit P = b0 + b_r + b_k + b_d + b_{d,k}`` (M2.4 item 3, Eq. 1 reconstructed)."""

    key = "hdcal"
    blocks = _BLOCKS["hdcal"]


class HDCalWeighted(HDCal):
    """HD-Cal with weight 1 on source rows and ``n_source / n_shot`` on target-shot rows."""

    key = "hdcal_weighted"

    def _weights(self, pool: Pool) -> NDArray[np.float64]:
        w = np.ones(pool.n_total.size)
        if pool.n_shot > 0:
            w[pool.is_target] = pool.n_source / pool.n_shot  # no renormalisation (M2.4 item 4)
        return w


class TargetOnly(_Logistic):
    """The full specification fitted to the target shot only; within one institution ``r + k``.

    The institution and institution-by-finding blocks are constant or duplicate the
    finding block inside one institution; they are dropped (not duplicated), which is
    recorded as ``features = "r+k"``.  A single-class (or empty) shot falls back to the
    pooled-rate constant on the whole fold (sources plus shot), the most plausible reading
    of M2.4 item 9.
    """

    key = "target_only"
    blocks = ("r", "k")

    def fit(self, pool: Pool) -> TargetOnly:
        self._fit_pool(pool.select(pool.is_target), pool)
        self.info_["features"] = "r+k"
        return self


# ---------------------------------------------------------------------------------------------
# adaptive shrinkage (HAS), M2.4 items 6-8

class HAS(Estimator):
    r"""Hierarchical adaptive shrinkage: source offset plus target shift and finding deviations.

    Per finding ``a`` and source ``s``: ``l_{s,a} = logit((y+1/2)/(n+1))`` pooled over
    directions; ``tau2_hat_a`` is the ddof-1 variance of the source logits (with two
    sources, half the squared contrast); ``tau2_a = clip(0.5 tau2_hat_a + 0.5 mean tau2_hat,
    0.05, 25)``.  Offset ``o_{a,r} = logit((y+1/2)/(n+1))`` of the pooled sources.  On the
    shot only, MAP of ``logit P = o + delta + gamma_a`` with ``gamma_a ~ N(0, tau2_a)`` and
    ``delta ~ N(0, mean_a tau2_a)`` (L-BFGS).  Needs at least two source institutions.

    Notes
    -----
    Choices for the [AMBIG] points of M2.4: Jeffreys +1/2 smoothing; offset from smoothed
    pooled source counts; penalised delta; a finding observed at fewer than two sources
    takes the mean ``tau2_hat`` (recorded in ``info_``).
    """

    key = "has"
    fixed_tau: ClassVar[bool] = False
    offset: ClassVar[bool] = True

    def fit(self, pool: Pool) -> HAS:
        src = pool.select(~pool.is_target)
        sources = np.unique(src.institution)
        if sources.size < 2:
            raise MedauditError(
                f"{self.key} needs at least two source institutions to estimate its shrinkage "
                f"strength; this pool has {sources.size}.  Drop the HAS estimators "
                "(has, has_fixed_tau, has_no_offset) from `agreement.estimators` for this design.")
        nk = int(pool.finding.max()) + 1
        ysa = np.zeros((sources.size, nk))
        nsa = np.zeros((sources.size, nk))
        si = np.searchsorted(sources, src.institution)
        np.add.at(ysa, (si, src.finding), src.n_correct)
        np.add.at(nsa, (si, src.finding), src.n_total)
        ell = np.where(nsa > 0, _logit((ysa + 0.5) / (nsa + 1.0)), np.nan)
        seen = (nsa > 0).sum(axis=0)
        tau2_hat = np.full(nk, np.nan)
        ok = seen >= 2
        tau2_hat[ok] = np.nanvar(ell[:, ok], axis=0, ddof=1)
        fold_findings = seen >= 1
        defined = ok & fold_findings
        mean_hat = float(np.mean(tau2_hat[defined])) if defined.any() else 1.0
        tau2_hat = np.where(defined, tau2_hat, mean_hat)
        tau2 = np.clip(0.5 * tau2_hat + 0.5 * mean_hat, 0.05, 25.0)
        if self.fixed_tau:
            tau2 = np.full(nk, float(np.mean(tau2[fold_findings])) if fold_findings.any() else 1.0)
        tau2_delta = float(np.mean(tau2[fold_findings])) if fold_findings.any() else float(tau2.mean())
        # direction-stratified offset from the pooled sources
        yo = np.zeros((nk, 2))
        no = np.zeros((nk, 2))
        np.add.at(yo, (src.finding, src.direction), src.n_correct)
        np.add.at(no, (src.finding, src.direction), src.n_total)
        off = _logit((yo + 0.5) / (no + 1.0)) if self.offset else np.zeros((nk, 2))
        delta, gamma, conv = self._map(pool.select(pool.is_target), off, tau2, tau2_delta, nk)
        self.nk_, self.offset_, self.tau2_, self.delta_, self.gamma_ = nk, off, tau2, delta, gamma
        self.info_ = {"estimator": self.key, "solver": "scipy L-BFGS-B (MAP)", "smoothing": 0.5,
                      "tau2": tau2.tolist(), "tau2_delta": tau2_delta, "delta": delta,
                      "fixed_tau": self.fixed_tau, "offset": self.offset, "converged": conv,
                      "n_sources": int(sources.size), "fallback": False}
        return self

    @staticmethod
    def _map(shot: Pool, off, tau2, tau2_delta, nk) -> tuple[float, NDArray[np.float64], bool]:
        gamma = np.zeros(nk)
        if shot.n_total.size == 0:
            return 0.0, gamma, True  # zero shots: the offset alone
        from scipy.optimize import minimize

        o = off[shot.finding, shot.direction]
        y, n, a = shot.n_correct.astype(float), shot.n_total.astype(float), shot.finding
        found = np.unique(a)
        col = np.searchsorted(found, a)
        prec = np.r_[1.0 / tau2_delta, 1.0 / tau2[found]]

        def objective(theta):
            eta = o + theta[0] + theta[1:][col]
            # -loglik of Binomial(n, expit(eta)): n*log(1+e^eta) - y*eta
            nll = float(np.sum(n * np.logaddexp(0.0, eta) - y * eta))
            g_eta = n * expit(eta) - y
            grad = np.r_[g_eta.sum(), np.bincount(col, weights=g_eta, minlength=found.size)]
            return nll + 0.5 * float(np.sum(prec * theta ** 2)), grad + prec * theta

        res = minimize(objective, np.zeros(found.size + 1), jac=True, method="L-BFGS-B",
                       options={"maxiter": 1000, "gtol": 1e-10, "ftol": 1e-15})
        gamma[found] = res.x[1:]
        return float(res.x[0]), gamma, bool(res.success)

    def predict(self, institution, finding, direction):
        self._check_fitted()
        k, r = codes(finding, "finding"), codes(direction, "direction")
        inside = k < self.nk_
        kk = np.where(inside, k, 0)
        off = np.where(inside, self.offset_[kk, r], 0.0)
        gam = np.where(inside, self.gamma_[kk], 0.0)
        return expit(off + self.delta_ + gam)


class HASFixedTau(HAS):
    """HAS ablation: every ``tau2_a`` replaced by its fold mean."""

    key = "has_fixed_tau"
    fixed_tau = True


class HASNoOffset(HAS):
    """HAS ablation: offset ``o = 0``; the source-derived ``tau2_a`` are kept."""

    key = "has_no_offset"
    offset = False


# ---------------------------------------------------------------------------------------------
# Beta-Binomial empirical Bayes, M2.4 item 10

@dataclass(frozen=True, slots=True, kw_only=True)
class BetaPrior:
    """The constrained method-of-moments prior of :class:`BetaBinomial`."""

    mean: float  # mu_hat, the pooled rate
    variance: float  # v_hat, count-weighted raw variance of the cell rates
    concentration: float  # kappa_hat >= 1
    alpha: float
    beta: float
    eps: float = field(default=1e-12)

    def to_dict(self) -> dict[str, float]:
        return {"mu": self.mean, "v": self.variance, "kappa": self.concentration,
                "alpha": self.alpha, "beta": self.beta, "eps": self.eps}


class BetaBinomial(Estimator):
    r"""Constrained method-of-moments Beta-Binomial empirical Bayes (Eq. 2-3 reconstructed).

    Over every pool cell ``j`` (``n_j > 0``): :math:`\hat\mu = \sum y_j / \sum n_j`,
    :math:`\hat v = \sum n_j (r_j - \hat\mu)^2 / \sum n_j` (no binomial-noise subtraction),
    :math:`\hat\kappa = \max\{1, \hat\mu(1-\hat\mu)/\max(\hat v, \varepsilon) - 1\}`,
    :math:`\hat\alpha = \hat\mu\hat\kappa`, :math:`\hat\beta = (1-\hat\mu)\hat\kappa`.  A cell's
    posterior mean is :math:`(\hat\alpha + y_j)/(\hat\alpha + \hat\beta + n_j)` with its pool
    counts (for the target, its shot counts; an absent cell gets :math:`\hat\mu`).

    Examples
    --------
    The worked example of methods.md M2.4 item 10:

    >>> pool = Pool(institution=[0, 0, 1, 1, 2], finding=[0, 0, 0, 0, 0],
    ...             direction=[1, 0, 1, 0, 1], n_correct=[180, 20, 90, 10, 12],
    ...             n_total=[200, 40, 100, 20, 15], target=2)
    >>> bb = BetaBinomial().fit(pool)
    >>> round(bb.prior_.mean, 3), round(bb.prior_.concentration, 4)
    (0.832, 5.5389)
    >>> round(float(bb.predict([2], [0], [1])[0]), 5)
    0.80863
    """

    key = "beta_binomial"

    def __init__(self, *, eps: float = 1e-12) -> None:
        self.eps = float(eps)

    def fit(self, pool: Pool) -> BetaBinomial:
        mu = _pooled_rate(pool)
        n = pool.n_total.astype(np.float64)
        rate = pool.n_correct / n
        v = float(np.sum(n * (rate - mu) ** 2) / n.sum())
        kappa = max(1.0, mu * (1.0 - mu) / max(v, self.eps) - 1.0)
        self.prior_ = BetaPrior(mean=mu, variance=v, concentration=kappa, alpha=mu * kappa,
                                beta=(1.0 - mu) * kappa, eps=self.eps)
        width = int(pool.finding.max()) + 1
        self._width = width
        keys = (pool.institution * width + pool.finding) * 2 + pool.direction
        order = np.argsort(keys, kind="stable")
        self.keys_, self.y_, self.n_ = keys[order], pool.n_correct[order], pool.n_total[order]
        self.info_ = {"estimator": self.key, **self.prior_.to_dict(), "fallback": False}
        return self

    def counts(self, institution, finding, direction) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Pool counts ``(y, n)`` of the given cells (zeros for cells absent from the pool)."""
        self._check_fitted()
        d, k, r = (codes(institution, "institution"), codes(finding, "finding"),
                   codes(direction, "direction"))
        inside = k < self._width
        keys = (d * self._width + np.where(inside, k, 0)) * 2 + r
        pos = np.clip(np.searchsorted(self.keys_, keys), 0, self.keys_.size - 1)  # pool non-empty
        hit = inside & (self.keys_[pos] == keys)
        y = np.where(hit, self.y_[pos], 0)
        n = np.where(hit, self.n_[pos], 0)
        return y, n

    def predict(self, institution, finding, direction):
        y, n = self.counts(institution, finding, direction)
        p = self.prior_
        return (p.alpha + y) / (p.alpha + p.beta + n)


#: every estimator except the GLMM (built by :func:`make_estimator` from its own module)
_CLASSES: dict[str, type[Estimator]] = {c.key: c for c in (
    Naive, Additive, HDCal, HDCalWeighted, HAS, HASFixedTau, HASNoOffset, TargetOnly, BetaBinomial)}


def make_estimator(key: str, **options: Any) -> Estimator:
    """A fresh estimator for ``key`` (``glmm`` needs the optional numpyro extra)."""
    if key == "glmm":
        from medaudit.agreement.glmm import GLMM

        return GLMM(**options)
    if key not in _CLASSES:
        from medaudit._validation import check_option

        check_option(key, ESTIMATORS, name="estimator")
    return _CLASSES[key](**options)

