"""Sample size and power: how many positives and negatives a claim needs, and how many more
would resolve an interval that is still open.

* :func:`auc_sample_size` / :func:`auc_power` — show AUROC > L (pROC's
  ``power.roc.test(auc =, sig.level =, power =, kappa =)`` for L = 0.5: Obuchowski's
  binormal variance; or the Hanley–McNeil variance);
* :func:`paired_auc_sample_size` / :func:`paired_auc_power` — detect the paired AUROC
  difference seen in pilot data (pROC's ``power.roc.test(roc1, roc2)``, DeLong);
* :func:`proportion_sample_size` / :func:`se_sp_sample_size` — show Se > x and Sp > y
  with the one-sided exact binomial test (equivalently, a Clopper–Pearson bound);
* :func:`cases_to_resolve` / :func:`cases_to_resolve_proportion` — for a claim whose
  interval straddles the claimed value, the further cases at which the interval at the
  observed effect would exclude it.

Sizes are reported unrounded (``n_pos_exact``, as pROC prints them) and rounded up.
``alpha`` is the two-sided level unless ``alternative="one-sided"`` (pROC's convention:
a two-sided test spends ``alpha / 2`` in the direction of the effect).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_fraction, check_number, check_option, shown
from medaudit.exceptions import MedauditError
from medaudit.stats._results import _ToDict

__all__ = ["MIN_POWER", "auc_sample_size", "auc_power", "paired_auc_sample_size", "paired_auc_power",
           "proportion_sample_size", "se_sp_sample_size", "cases_to_resolve",
           "cases_to_resolve_proportion", "SampleSize", "Resolution", "auc_variance"]

POWER_ALTERNATIVES = ("two-sided", "one-sided")
AUC_VARIANCES = ("obuchowski", "hanley_mcneil")


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleSize(_ToDict):
    """Positives and negatives needed (exact and rounded up), with the design inputs.

    ``n_total`` is given when a prevalence was declared: the cohort size that yields at
    least ``n_pos`` positives and ``n_neg`` negatives at that prevalence.  ``power`` is
    the power attained by the rounded sizes.
    """

    question: str
    n_pos: int
    n_neg: int
    n_pos_exact: float
    n_neg_exact: float
    alpha: float
    power: float
    alternative: str
    method: str
    n_total: int | None = None
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution(_ToDict):
    """How many further cases would resolve an interval-based claim at the observed effect.

    ``status`` is ``"holds"`` / ``"does not hold"`` (already resolved: nothing to add),
    ``"unresolved"`` (``additional_*`` say how many more) or ``"never"`` (the estimate
    sits on the claimed value, so no sample size resolves it at this effect).
    ``direction`` is the verdict the additional cases would reach.
    """

    status: str
    direction: str | None
    factor: float
    additional_pos: int
    additional_neg: int
    n_pos: int
    n_neg: int
    rule: str
    inputs: dict[str, Any] = field(default_factory=dict)


def _z(alpha: float, alternative: str) -> float:
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    return float(stats.norm.isf(alpha / 2.0 if alternative == "two-sided" else alpha))


#: the lowest target power a sample size is planned for: below even odds the normal-
#: approximation sizes ``(z_alpha + z_power)^2`` grow again as power falls (z_power < 0),
#: so a power of 1e-9 asked for more cases than 0.5 does (the spec, plan and port checks
#: read this one number)
MIN_POWER = 0.5


def _power(power) -> float:
    """A target power in [MIN_POWER, 1)."""
    return check_fraction(power, name="power", low=MIN_POWER, closed="left")


def _checks(alpha, power, alternative):
    alternative = check_option(alternative, POWER_ALTERNATIVES, name="alternative")
    return (check_fraction(alpha, name="alpha"),
            None if power is None else _power(power), alternative)


def _kappa(kappa) -> float:
    try:
        k = float(kappa)
    except (TypeError, ValueError):
        raise MedauditError(f"kappa (negatives per positive) must be a positive number; got "
                            f"{kappa!r}.") from None
    if not (math.isfinite(k) and k > 0):
        raise MedauditError(f"kappa (negatives per positive) must be a positive number; got "
                            f"{kappa!r}.")
    return k


def auc_variance(auc: float, *, kappa: float = 1.0, method: str = "obuchowski",
                 n_pos: float | None = None) -> float:
    r"""Variance of an AUROC estimate, per positive (``n_pos * Var``) or for ``n_pos`` positives.

    ``"obuchowski"`` (binormal with equal variances, Obuchowski 1994; pROC's
    ``var.theta.obuchowski``): with :math:`A = 1.414\,\Phi^{-1}(\theta)`,
    :math:`0.0099\,e^{-A^2/2}\,[(5A^2 + 8) + (A^2 + 8)/\kappa]` per positive.
    ``"hanley_mcneil"`` (1982): :math:`[\theta(1-\theta) + (n_1 - 1)(Q_1 - \theta^2) +
    (n_0 - 1)(Q_2 - \theta^2)] / (n_1 n_0)` with :math:`Q_1 = \theta/(2 - \theta)`,
    :math:`Q_2 = 2\theta^2/(1 + \theta)`, :math:`n_0 = \kappa n_1`; it needs ``n_pos``.

    Examples
    --------
    >>> round(auc_variance(0.5, kappa=1.0), 6)  # pROC's V0 = 0.0792 (1 + 1/kappa)
    0.1584
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    method = check_option(method, AUC_VARIANCES, name="method")
    theta = check_fraction(auc, name="auc")
    k = _kappa(kappa)
    if n_pos is not None:
        n_pos = check_number(n_pos, name="n_pos", positive=True)
    if method == "obuchowski":
        a = float(stats.norm.ppf(theta)) * 1.414
        v = 0.0099 * math.exp(-a * a / 2.0) * ((5.0 * a * a + 8.0) + (a * a + 8.0) / k)
        return v if n_pos is None else v / float(n_pos)
    if n_pos is None:
        raise MedauditError("method='hanley_mcneil' depends on the sample size: give n_pos.")
    n1, n0 = float(n_pos), k * float(n_pos)
    q1, q2 = theta / (2.0 - theta), 2.0 * theta * theta / (1.0 + theta)
    return (theta * (1 - theta) + (n1 - 1) * (q1 - theta * theta)
            + (n0 - 1) * (q2 - theta * theta)) / (n1 * n0)


def _auc_gap(n1, theta, null, k, method, za, zb):
    """zα √V(null) + zβ √V(θ) − |θ − null| at n1 positives (root in n1)."""
    v0 = auc_variance(null, kappa=k, method=method, n_pos=n1)
    va = auc_variance(theta, kappa=k, method=method, n_pos=n1)
    return za * math.sqrt(v0) + zb * math.sqrt(va) - abs(theta - null)


def auc_sample_size(
    auc: float,
    *,
    auc_null: float = 0.5,
    alpha: float = 0.05,
    power: float = 0.8,
    kappa: float = 1.0,
    alternative: str = "two-sided",
    method: str = "obuchowski",
    prevalence: float | None = None,
) -> SampleSize:
    r"""Positives and negatives needed to show that the AUROC differs from ``auc_null``, on
    the side of the expected ``auc``: above it when ``auc > auc_null`` ("AUROC > L"), below it
    otherwise ("AUROC < L"); the result's ``question`` says which.

    Parameters
    ----------
    auc : float
        The AUROC expected (e.g. the vendor's).
    auc_null : float, default=0.5
        The value to beat (pROC tests 0.5 only; any L in (0, 1) here).
    alpha : float, default=0.05
    power : float, default=0.8
    kappa : float, default=1.0
        Negatives per positive (pROC's ``kappa = ncontrols / ncases``).
    alternative : {"two-sided", "one-sided"}, default="two-sided"
    method : {"obuchowski", "hanley_mcneil"}, default="obuchowski"
        The AUROC variance (:func:`auc_variance`).
    prevalence : float in (0, 1), optional
        Also report the cohort size giving those counts at this prevalence.

    Returns
    -------
    SampleSize

    Notes
    -----
    Obuchowski: :math:`n_1 = (z_\alpha\sqrt{V(L)} + z_\beta\sqrt{V(\theta)})^2 / (\theta -
    L)^2` with per-positive variances; at L = 0.5 this is pROC 1.18's
    ``power.roc.test(auc, sig.level, power, kappa)`` (tests/reference/power_pROC.csv).
    Hanley–McNeil: the same equation solved numerically in :math:`n_1`.

    Examples
    --------
    >>> s = auc_sample_size(0.8, alpha=0.05, power=0.9, kappa=1.7)
    >>> round(s.n_pos_exact, 4), round(s.n_neg_exact, 4), s.n_pos, s.n_neg
    (13.4815, 22.9186, 14, 23)
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    alpha, power, alternative = _checks(alpha, power, alternative)
    method = check_option(method, AUC_VARIANCES, name="method")
    theta = check_fraction(auc, name="auc")
    null = check_fraction(auc_null, name="auc_null")
    if theta == null:
        raise MedauditError("auc equals auc_null: no sample size can show a difference of 0.")
    k = _kappa(kappa)
    za, zb = _z(alpha, alternative), float(stats.norm.ppf(power))
    if method == "obuchowski":
        n1 = (za * math.sqrt(auc_variance(null, kappa=k)) + zb * math.sqrt(auc_variance(
            theta, kappa=k))) ** 2 / (theta - null) ** 2
    else:
        f = lambda n: _auc_gap(n, theta, null, k, method, za, zb)  # noqa: E731
        hi = 2.0
        while f(hi) > 0:
            hi *= 2.0
            if hi > 1e12:
                raise MedauditError("auc_sample_size did not converge (effect too small).")
        from scipy import optimize  # here, as scipy.stats above: ~0.3 s to import

        n1 = float(optimize.brentq(f, 1.0 if f(1.0) > 0 else 1e-9, hi, xtol=1e-10, rtol=1e-14))
    n_pos, n_neg = math.ceil(n1 - 1e-9), math.ceil(k * n1 - 1e-9)
    attained = auc_power(theta, n_pos=n_pos, n_neg=n_neg, auc_null=null, alpha=alpha,
                         alternative=alternative, method=method)
    sign = ">" if theta > null else "<"  # the side the expected AUROC lies on
    return SampleSize(question=f"AUROC {sign} {null:g}", n_pos=n_pos, n_neg=n_neg, n_pos_exact=n1,
                      n_neg_exact=k * n1, alpha=alpha, power=attained, alternative=alternative,
                      method=method, n_total=_total(n_pos, n_neg, prevalence),
                      inputs={"auc": theta, "auc_null": null, "kappa": k, "power_target": power})


def auc_power(auc: float, *, n_pos: float, n_neg: float, auc_null: float = 0.5,
              alpha: float = 0.05, alternative: str = "two-sided",
              method: str = "obuchowski") -> float:
    r"""Power to show AUROC > ``auc_null`` with ``n_pos`` positives and ``n_neg`` negatives.

    :math:`\Phi\big((\sqrt{n_1}\,|\theta - L| - z_\alpha\sqrt{V(L)}) / \sqrt{V(\theta)}\big)`
    (pROC's ``power.roc.test(auc, ncases, ncontrols, sig.level)``).

    Examples
    --------
    >>> round(auc_power(0.8, n_pos=13.4815, n_neg=22.91856, alpha=0.05), 4)
    0.9
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    alpha, _, alternative = _checks(alpha, None, alternative)
    method = check_option(method, AUC_VARIANCES, name="method")
    theta, null = check_fraction(auc, name="auc"), check_fraction(auc_null, name="auc_null")
    try:
        counts = float(n_pos), float(n_neg)
    except (TypeError, ValueError):
        counts = (math.nan, math.nan)
    if isinstance(n_pos, bool) or isinstance(n_neg, bool) or not all(
            math.isfinite(c) and c > 0 for c in counts):
        raise MedauditError(f"n_pos and n_neg must be positive finite numbers; got {n_pos!r}, "
                            f"{n_neg!r}.")
    k = float(n_neg) / float(n_pos)
    za = _z(alpha, alternative)
    v0 = auc_variance(null, kappa=k, method=method, n_pos=float(n_pos))
    va = auc_variance(theta, kappa=k, method=method, n_pos=float(n_pos))
    return float(stats.norm.cdf((abs(theta - null) - za * math.sqrt(v0)) / math.sqrt(va)))


def _case_count(v: Any, name: str) -> int:
    """A whole number of cases, 0 or more (a rate of one class leaves the other's at 0), or a
    refusal naming ``name`` (int() would read 1.9 as 1, and raise numpy's or Python's own
    error on nan, inf or text)."""
    try:
        ok = not isinstance(v, bool) and float(v) == int(v) and int(v) >= 0
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise MedauditError(f"{name} must be a whole number of cases (0 or more); got {v!r}.")
    return int(v)


def _pilot(y_true, y_score_a, y_score_b):
    """(delta, per-positive var1, var2, cov12, n_pos, n_neg) from DeLong on pilot data."""
    from medaudit.stats.delong import delong_test, delong_variance

    test = delong_test(y_true, y_score_a, y_score_b)
    v1 = delong_variance(y_true, y_score_a)
    v2 = delong_variance(y_true, y_score_b)
    cov = (v1 + v2 - test.variance) / 2.0
    n_pos = test.n_pos
    if not test.variance > 0 and test.estimate != 0:
        # z = delta / 0: the normal approximation behind the formula has no spread to plan
        # with (probe finding: a bare ZeroDivisionError)
        raise MedauditError("the pilot's DeLong variance of the AUROC difference is 0 (each "
                            "model's placements are constant within each class, as for a "
                            "perfect model against an all-tied or reversed one): the sample-size "
                            "formula has no spread to plan with; use a pilot on which the models "
                            "disagree case by case.")
    return test.estimate, v1 * n_pos, v2 * n_pos, cov * n_pos, n_pos, test.n_neg, test


def paired_auc_sample_size(
    y_true: ArrayLike,
    y_score_a: ArrayLike,
    y_score_b: ArrayLike,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    kappa: float | None = None,
    alternative: str = "two-sided",
    prevalence: float | None = None,
) -> SampleSize:
    r"""Cases needed to detect the paired AUROC difference seen in pilot data (DeLong).

    pROC's ``power.roc.test(roc1, roc2, sig.level, power)`` with ``method = "delong"``:
    the DeLong variances and covariance of the pilot, scaled by its number of positives,
    give :math:`V_0 = 2(V_1 - C)` (both curves as curve a under the null) and
    :math:`V_a = V_1 + V_2 - 2C`; then
    :math:`n_1 = (z_\alpha\sqrt{V_0} + z_\beta\sqrt{V_a})^2/\Delta^2`, and the negatives keep
    the pilot's ratio (or ``kappa``).

    Examples
    --------
    >>> y = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    >>> a = [.1, .3, .2, .6, .4, .5, .7, .9, .8, .35]
    >>> b = [.2, .1, .5, .3, .4, .45, .6, .7, .55, .25]
    >>> s = paired_auc_sample_size(y, a, b, power=0.8)
    >>> s.n_pos == s.n_neg, s.method
    (True, 'delong (pROC power.roc.test(roc1, roc2))')
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    alpha, power, alternative = _checks(alpha, power, alternative)
    delta, v1, v2, cov, n_pos, n_neg, _ = _pilot(y_true, y_score_a, y_score_b)
    if delta == 0:
        raise MedauditError("the two pilot AUROCs are equal: no sample size detects a difference "
                            "of 0.")
    k = n_neg / n_pos if kappa is None else _kappa(kappa)
    v0, va = 2.0 * v1 - 2.0 * cov, v1 + v2 - 2.0 * cov
    za, zb = _z(alpha, alternative), float(stats.norm.ppf(power))
    n1 = (za * math.sqrt(max(v0, 0.0)) + zb * math.sqrt(max(va, 0.0))) ** 2 / delta ** 2
    npos, nneg = math.ceil(n1 - 1e-9), math.ceil(k * n1 - 1e-9)
    attained = float(stats.norm.cdf((math.sqrt(npos * delta ** 2) - za * math.sqrt(max(v0, 0)))
                                    / math.sqrt(va)))
    return SampleSize(question="paired AUROC difference", n_pos=npos, n_neg=nneg, n_pos_exact=n1,
                      n_neg_exact=k * n1, alpha=alpha, power=attained, alternative=alternative,
                      method="delong (pROC power.roc.test(roc1, roc2))",
                      n_total=_total(npos, nneg, prevalence),
                      inputs={"delta": delta, "v0": v0, "va": va, "kappa": k,
                              "pilot_n_pos": n_pos, "pilot_n_neg": n_neg, "power_target": power})


def paired_auc_power(y_true: ArrayLike, y_score_a: ArrayLike, y_score_b: ArrayLike, *,
                     n_pos: float | None = None, alpha: float = 0.05,
                     alternative: str = "two-sided") -> float:
    """Power of the paired DeLong test for the pilot's difference with ``n_pos`` positives
    (default: the pilot's own), negatives in the pilot's ratio (pROC's ``zbeta.obuchowski``).

    Examples
    --------
    >>> y = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    >>> a = [.1, .3, .2, .6, .4, .5, .7, .9, .8, .35]
    >>> b = [.2, .1, .5, .3, .4, .45, .6, .7, .55, .25]
    >>> 0 < paired_auc_power(y, a, b) < paired_auc_power(y, a, b, n_pos=500) <= 1
    True
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    alpha, _, alternative = _checks(alpha, None, alternative)
    delta, v1, v2, cov, pilot_pos, _, _ = _pilot(y_true, y_score_a, y_score_b)
    try:
        n = float(pilot_pos if n_pos is None else n_pos)
    except (TypeError, ValueError):
        n = math.nan
    if not (math.isfinite(n) and n > 0) or isinstance(n_pos, bool):
        raise MedauditError(f"n_pos must be a positive finite number of positives; got {n_pos!r}.")
    v0, va = 2.0 * v1 - 2.0 * cov, v1 + v2 - 2.0 * cov
    za = _z(alpha, alternative)
    return float(stats.norm.cdf((math.sqrt(n * delta ** 2) - za * math.sqrt(max(v0, 0.0)))
                                / math.sqrt(va)))


# ------------------------------------------------------------------ exact binomial
def _exact_power(n: np.ndarray, p_true: float, p_claim: float, alpha: float) -> np.ndarray:
    """Power of the one-sided exact test of H0: p <= p_claim at level alpha, per n."""
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    # smallest k with P(X >= k | p_claim) <= alpha; ppf gives a candidate, then one check
    k = stats.binom.ppf(1.0 - alpha, n, p_claim) + 1.0
    too_small = stats.binom.sf(k - 1.0, n, p_claim) > alpha
    k = np.where(too_small, k + 1.0, k)
    lower_ok = stats.binom.sf(k - 2.0, n, p_claim) <= alpha
    k = np.where(lower_ok & (k > 1), k - 1.0, k)
    return stats.binom.sf(k - 1.0, n, p_true)


def proportion_sample_size(
    p_expected: float,
    p_claim: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
    n_max: int = 1_000_000,
) -> tuple[int, int, float]:
    """Smallest n for the exact binomial test to show ``p > p_claim`` when ``p = p_expected``.

    Returns ``(n, n_stable, power_at_n)``.  Exact power is not monotone in n (it saws up
    and down as the critical count steps); ``n`` is the smallest size reaching the
    power, ``n_stable`` the smallest beyond which power never falls below it again (up
    to ``2 n``, checked); plan with ``n_stable`` to be safe.  The test rejecting is the
    same event as the one-sided Clopper–Pearson bound exceeding ``p_claim``.

    Examples
    --------
    >>> n, n_stable, pw = proportion_sample_size(0.95, 0.85, alpha=0.05, power=0.8)
    >>> n, n_stable, round(pw, 4)
    (75, 84, 0.8276)
    """
    alpha, power, alternative = _checks(alpha, power, alternative)
    p1 = check_fraction(p_expected, name="p_expected", closed="both")
    p0 = check_fraction(p_claim, name="p_claim", closed="left")
    if p1 <= p0:
        raise MedauditError(f"p_expected ({p1!r}) must exceed p_claim ({p0!r}) for the claim "
                            "p > p_claim to be shown.")
    a = alpha / 2.0 if alternative == "two-sided" else alpha
    start, n_found = 1, None
    while start <= n_max:
        stop = min(n_max, start * 4 + 64)
        ns = np.arange(start, stop + 1, dtype=np.float64)
        pw = _exact_power(ns, p1, p0, a)
        hit = np.flatnonzero(pw >= power)
        if hit.size:
            n_found = int(ns[hit[0]])
            break
        start = stop + 1
    if n_found is None:
        raise MedauditError(f"no n up to n_max={n_max} reaches power {power}.")
    ns = np.arange(n_found, 2 * n_found + 64, dtype=np.float64)
    pw = _exact_power(ns, p1, p0, a)
    below = np.flatnonzero(pw < power)
    n_stable = int(ns[below[-1] + 1]) if below.size else n_found
    return n_found, n_stable, float(pw[0])


def se_sp_sample_size(
    sensitivity: float,
    specificity: float,
    *,
    min_sensitivity: float,
    min_specificity: float,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
    joint: bool = False,
    stable: bool = True,
    prevalence: float | None = None,
) -> SampleSize:
    """Positives and negatives to show Se > ``min_sensitivity`` and Sp > ``min_specificity``.

    Each rate gets the exact binomial plan of :func:`proportion_sample_size` on its own
    class (positives for Se, negatives for Sp) at the expected ``sensitivity`` and
    ``specificity``.  ``joint=True`` plans each at power ``sqrt(power)`` so that both
    claims succeed together with probability ``power`` (the classes are independent).
    ``stable=True`` uses the size beyond which power stays above target.

    Examples
    --------
    >>> s = se_sp_sample_size(0.95, 0.90, min_sensitivity=0.85, min_specificity=0.80,
    ...                       prevalence=0.2)
    >>> s.n_pos, s.n_neg, s.n_total
    (84, 113, 420)
    """
    alpha, power, alternative = _checks(alpha, power, alternative)
    per = math.sqrt(power) if joint else power
    se = proportion_sample_size(sensitivity, min_sensitivity, alpha=alpha, power=per,
                                alternative=alternative)
    sp = proportion_sample_size(specificity, min_specificity, alpha=alpha, power=per,
                                alternative=alternative)
    n_pos, n_neg = (se[1], sp[1]) if stable else (se[0], sp[0])
    a = alpha / 2.0 if alternative == "two-sided" else alpha
    pw_se = float(_exact_power(np.array([float(n_pos)]), sensitivity, min_sensitivity, a)[0])
    pw_sp = float(_exact_power(np.array([float(n_neg)]), specificity, min_specificity, a)[0])
    return SampleSize(question=f"Se > {min_sensitivity:g} and Sp > {min_specificity:g}",
                      n_pos=n_pos, n_neg=n_neg, n_pos_exact=float(n_pos), n_neg_exact=float(n_neg),
                      alpha=alpha, power=pw_se * pw_sp if joint else min(pw_se, pw_sp),
                      alternative=alternative, method="exact binomial (one-sided test per class)",
                      n_total=_total(n_pos, n_neg, prevalence),
                      inputs={"sensitivity": sensitivity, "specificity": specificity,
                              "min_sensitivity": min_sensitivity,
                              "min_specificity": min_specificity, "joint": joint,
                              "stable": stable, "power_sensitivity": pw_se,
                              "power_specificity": pw_sp, "first_n_pos": se[0],
                              "first_n_neg": sp[0], "power_target": power})


def _total(n_pos, n_neg, prevalence) -> int | None:
    if prevalence is None:
        return None
    pi = check_fraction(prevalence, name="prevalence")
    return int(max(math.ceil(n_pos / pi - 1e-9), math.ceil(n_neg / (1.0 - pi) - 1e-9)))


# ------------------------------------------------------------------- resolution
CLAIMS = ("greater", "less")
SCALES = ("both", "positives", "negatives")


def cases_to_resolve(
    estimate: float,
    ci_low: float,
    ci_high: float,
    *,
    claim_value: float,
    claim: str = "greater",
    n_pos: int,
    n_neg: int,
    scales_with: str = "both",
    power: float | None = None,
    confidence_level: float = 0.95,
) -> Resolution:
    r"""Further positives/negatives that would resolve an interval claim at the observed effect.

    The rule.  A claim "metric > v" (``claim="greater"``) *holds* when the interval's
    lower end is above v, *does not hold* when its upper end is below v, and is
    unresolved otherwise (``"less"`` mirrors this).  Assume the observed estimate is
    the truth and that the interval's half-width on the side facing v shrinks as
    :math:`1/\sqrt{n}` with the class mix kept (true of DeLong, Wald and bootstrap
    intervals to first order).  The interval then excludes v once the sample grows by
    the factor

    .. math:: f = \Big(\frac{h}{|\hat\theta - v|}\Big)^2 \Big(\frac{z + z_\beta}{z}\Big)^2,

    with :math:`h` the current half-width on the side of v and :math:`z` the interval's
    normal quantile; :math:`z_\beta = 0` (``power=None``) asks for the *expected*
    interval to just exclude v (even odds), ``power = 0.8`` for an 80 % chance that it
    does.  Additional cases are ``ceil(f n) - n`` for each class in ``scales_with``
    (``"positives"`` for a sensitivity, ``"negatives"`` for a specificity).

    Examples
    --------
    AUROC 0.83 [0.78, 0.88] with 60 positives and 140 negatives, claim AUROC > 0.8:
    the lower half-width 0.05 must shrink to 0.03, so f = (0.05 / 0.03)^2 = 2.78.

    >>> r = cases_to_resolve(0.83, 0.78, 0.88, claim_value=0.8, n_pos=60, n_neg=140)
    >>> r.status, r.direction, round(r.factor, 4), r.additional_pos, r.additional_neg
    ('unresolved', 'holds', 2.7778, 107, 249)
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    claim = check_option(claim, CLAIMS, name="claim")
    scales_with = check_option(scales_with, SCALES, name="scales_with")
    level = check_fraction(confidence_level, name="confidence_level")
    pw = None if power is None else _power(power)
    est, lo, hi, v = (float(x) for x in (estimate, ci_low, ci_high, claim_value))
    if not all(math.isfinite(x) for x in (est, lo, hi, v)) or not lo <= est <= hi:
        raise MedauditError(f"need finite ci_low <= estimate <= ci_high; got {lo!r}, {est!r}, "
                            f"{hi!r} (claim_value {v!r}).")
    npos, nneg = _case_count(n_pos, "n_pos"), _case_count(n_neg, "n_neg")
    inputs = {"estimate": est, "ci_low": lo, "ci_high": hi, "claim_value": v, "claim": claim,
              "confidence_level": level, "power": pw, "scales_with": scales_with}
    rule = "half-width ~ 1/sqrt(n), class mix kept, at the observed effect"
    holds = lo > v if claim == "greater" else hi < v
    fails = hi < v if claim == "greater" else lo > v
    if holds or fails:
        return Resolution(status="holds" if holds else "does not hold", direction=None,
                          factor=1.0, additional_pos=0, additional_neg=0, n_pos=npos,
                          n_neg=nneg, rule=rule, inputs=inputs)
    if est == v:
        return Resolution(status="never", direction=None, factor=math.inf, additional_pos=-1,
                          additional_neg=-1, n_pos=npos, n_neg=nneg, rule=rule, inputs=inputs)
    above = est > v
    half = (est - lo) if above else (hi - est)
    direction = ("holds" if above else "does not hold") if claim == "greater" else (
        "does not hold" if above else "holds")
    z = float(stats.norm.isf((1.0 - level) / 2.0))
    zb = 0.0 if pw is None else float(stats.norm.ppf(pw))
    f = (half / abs(est - v)) ** 2 * ((z + zb) / z) ** 2
    add_p = max(math.ceil(f * npos - 1e-9) - npos, 0) if scales_with != "negatives" else 0
    add_n = max(math.ceil(f * nneg - 1e-9) - nneg, 0) if scales_with != "positives" else 0
    return Resolution(status="unresolved", direction=direction, factor=f, additional_pos=add_p,
                      additional_neg=add_n, n_pos=npos, n_neg=nneg, rule=rule, inputs=inputs)


def cases_to_resolve_proportion(
    count: float,
    nobs: float,
    *,
    claim_value: float,
    claim: str = "greater",
    method: str = "clopper_pearson",
    confidence_level: float = 0.95,
    n_max: int = 10_000_000,
) -> Resolution:
    """Further cases that would resolve a proportion claim (e.g. Se > 0.9) at the observed rate.

    The exact counterpart of :func:`cases_to_resolve` for one proportion: the smallest
    ``n' >= nobs`` whose interval (``method``, via
    :func:`~medaudit.stats.proportion_ci`) at the expected count ``p̂ n'`` excludes the
    claimed value.  The count is the class the rate is about (positives for
    sensitivity); ``additional_pos`` holds the answer and ``additional_neg`` is 0.

    Examples
    --------
    Se = 45/50 = 0.90 [0.78, 0.97 Clopper–Pearson], claim Se > 0.8:

    >>> r = cases_to_resolve_proportion(45, 50, claim_value=0.8)
    >>> r.status, r.direction, r.additional_pos
    ('unresolved', 'holds', 15)
    """
    from medaudit.stats.proportions import proportion_ci

    claim = check_option(claim, CLAIMS, name="claim")
    v = check_fraction(claim_value, name="claim_value")
    k, n = float(count), float(nobs)
    if not (n > 0 and 0 <= k <= n):
        raise MedauditError(f"need 0 <= count <= nobs and nobs > 0; got {shown(count)}, {shown(nobs)}.")
    p = k / n
    ci = proportion_ci(k, n, method=method, confidence_level=confidence_level)
    base = cases_to_resolve(p, ci.ci_low, ci.ci_high, claim_value=v, claim=claim, n_pos=int(n),
                            n_neg=0, scales_with="positives", confidence_level=confidence_level)
    if base.status != "unresolved":
        return Resolution(**{**_fields(base), "rule": f"exact ({method}) at the observed rate",
                             "inputs": {**base.inputs, "method": method}})
    above = p > v

    def resolved(m: float) -> bool:
        c = proportion_ci(p * m, m, method=method, confidence_level=confidence_level)
        return c.ci_low > v if above else c.ci_high < v

    lo_n, hi_n = int(n), max(int(n) + 1, int(math.ceil(base.factor * n)))
    while not resolved(hi_n):
        lo_n, hi_n = hi_n, hi_n * 2
        if hi_n > n_max:
            raise MedauditError(f"no size up to n_max={n_max} resolves the claim.")
    while hi_n - lo_n > 1:  # the interval at a fixed rate narrows as n grows
        mid = (lo_n + hi_n) // 2
        lo_n, hi_n = (lo_n, mid) if resolved(mid) else (mid, hi_n)
    return Resolution(status="unresolved", direction=base.direction, factor=hi_n / n,
                      additional_pos=hi_n - int(n), additional_neg=0, n_pos=int(n), n_neg=0,
                      rule=f"exact ({method}) interval at the observed rate p*n'",
                      inputs={**base.inputs, "method": method})


def _fields(r: Resolution) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
