"""Slow, obviously-correct reference implementations ("oracles") for tests.

Every function is written straight from its textbook definition using plain
Python loops, so that it shares no code or tricks (rank transforms, cumulative
sums, vectorised tie handling) with the fast implementations in ``medaudit``.
They are O(n) to O(n^2) and are meant for small test inputs only.

Conventions: ``y`` are labels in {0, 1}, ``s`` are scores, ``p`` are soft
labels in [0, 1]; ``P`` / ``N`` are the positive / negative index sets.
Scalar results are Python floats; vector results are float64 numpy arrays.
"Stable" descending sorts order items by the tuple ``(-s_i, i)``, so tied
scores keep their input order.

Worked soft-label example (scores 0.9, 0.8, 0.7, 0.6; p = 1, 0.5, 0, 0.5):

>>> s, p = [0.9, 0.8, 0.7, 0.6], [1.0, 0.5, 0.0, 0.5]
>>> soft_auroc_inclusive(p, s), soft_auroc_strict(p, s)
(0.8125, 0.6875)
>>> soft_auroc_trapezoid(p, s), soft_ap(p, s)
(0.75, 0.8125)
"""

import bisect
import math

import numpy as np

_TOL = 1e-12


# ----------------------------------------------------------------- helpers
def _as_floats(x):
    """Convert a sequence to a list of Python floats."""
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


def _split(y, s):
    """Return (positive scores, negative scores) as lists."""
    y, s = _as_floats(y), _as_floats(s)
    if len(y) != len(s):
        raise ValueError("y and s must have the same length")
    pos = [si for yi, si in zip(y, s, strict=True) if yi == 1]
    neg = [si for yi, si in zip(y, s, strict=True) if yi == 0]
    return pos, neg


def _stable_desc_order(s):
    """Indices sorted by (-s_i, i): descending score, ties in input order."""
    return [i for _, i in sorted((-si, i) for i, si in enumerate(s))]


def _psi(a, b):
    """Mann-Whitney kernel: 1 if a > b, 1/2 if a == b, 0 otherwise."""
    if a > b:
        return 1.0
    if a == b:
        return 0.5
    return 0.0


def _mean(xs):
    """Arithmetic mean by explicit summation."""
    total = 0.0
    for x in xs:
        total += x
    return total / len(xs)


def _cov(a, b):
    """Sample covariance (ddof=1) by explicit loop; NaN if fewer than 2 items."""
    if len(a) < 2:
        return float("nan")
    ma, mb = _mean(a), _mean(b)
    total = 0.0
    for ai, bi in zip(a, b, strict=True):
        total += (ai - ma) * (bi - mb)
    return total / (len(a) - 1)


def _se_sp(pos, neg, t):
    """Sensitivity and specificity of the rule s >= t, by counting."""
    tp = sum(1 for v in pos if v >= t)
    tn = sum(1 for v in neg if v < t)
    return tp / len(pos), tn / len(neg)


# ----------------------------------------------------------- 1. AUROC
def auroc_pairwise(y, s):
    """Definition 1: pairwise AUROC, ties counted as one half."""
    pos, neg = _split(y, s)
    if not pos or not neg:
        return float("nan")
    total = 0.0
    for a in pos:
        for b in neg:
            total += _psi(a, b)
    return total / (len(pos) * len(neg))


# ----------------------------------------------- 2. average precision
def average_precision_individual(y, s):
    """Definition 2a: AP over individual items in stable descending order."""
    y, s = _as_floats(y), _as_floats(s)
    n_pos = sum(1 for v in y if v == 1)
    if n_pos == 0:
        return float("nan")
    total, tp = 0.0, 0
    for k, i in enumerate(_stable_desc_order(s), start=1):
        if y[i] == 1:
            tp += 1
            total += tp / k
    return total / n_pos


def average_precision_pooled(y, s):
    """Definition 2b: AP over distinct thresholds, sum of (R_t - R_prev) * P_t."""
    y, s = _as_floats(y), _as_floats(s)
    n_pos = sum(1 for v in y if v == 1)
    if n_pos == 0:
        return float("nan")
    total, prev_recall = 0.0, 0.0
    for t in sorted(set(s), reverse=True):
        predicted = [i for i in range(len(s)) if s[i] >= t]
        tp = sum(1 for i in predicted if y[i] == 1)
        precision = tp / len(predicted)
        recall = tp / n_pos
        total += (recall - prev_recall) * precision
        prev_recall = recall
    return total


# ------------------------------------------------------------ 3. Brier
def brier(y, s):
    """Definition 3a: mean squared error (s - y)^2."""
    y, s = _as_floats(y), _as_floats(s)
    return _mean([(si - yi) ** 2 for yi, si in zip(y, s, strict=True)])


def brier_prevalence(y, s, pi):
    """Definition 3b: class-conditional Brier score reweighted to prevalence pi."""
    pos, neg = _split(y, s)
    if not pos or not neg:
        return float("nan")
    term_pos = sum((1.0 - v) ** 2 for v in pos) / len(pos)
    term_neg = sum(v**2 for v in neg) / len(neg)
    return float(pi * term_pos + (1.0 - pi) * term_neg)


# -------------------------------------------------------------- 4. ECE
def linspace_edges(n_bins):
    """The float64 edges numpy.linspace(0, 1, n_bins + 1) gives: i * (1 / n_bins), then 1."""
    step = 1.0 / n_bins
    return [i * step for i in range(n_bins)] + [1.0]


def bin_of(x, n_bins, binning="floor"):
    """Definition 4a: the bin of probability x.  "floor": min(floor(n x), n - 1) in float64
    (paper 000 M0.7); "linspace": e_b <= x < e_{b+1} on linspace_edges, x = 1.0 in bin n."""
    if binning == "floor":
        return min(int(math.floor(n_bins * x)), n_bins - 1)
    return bisect.bisect_right(linspace_edges(n_bins), x) - 1


def ece(y, s, n_bins=15, pi=None, binning="floor"):
    """Definition 4: expected calibration error with equal-width bins."""
    y, s = _as_floats(y), _as_floats(s)
    n = len(s)
    if pi is None:
        weights = [1.0 / n] * n
    else:
        n_pos = sum(1 for v in y if v == 1)
        n_neg = sum(1 for v in y if v == 0)
        if n_pos == 0 or n_neg == 0:
            return float("nan")
        weights = [pi / n_pos if yi == 1 else (1.0 - pi) / n_neg for yi in y]
    bins = [[] for _ in range(n_bins + 1)]
    for i in range(n):
        bins[bin_of(s[i], n_bins, binning)].append(i)
    total = 0.0
    for members in bins:
        if not members:
            continue
        if pi is None:
            # (|B|/n) * |mean(s) - mean(y)|
            gap = _mean([s[i] for i in members]) - _mean([y[i] for i in members])
            total += len(members) / n * abs(gap)
        else:
            total += abs(sum(weights[i] * (s[i] - y[i]) for i in members))
    return float(total)


# --------------------------------------------------------- 5. log loss
def log_loss(y, s, eps=1e-15, pi=None):
    """Definition 5: clipped binary cross-entropy, optionally prevalence-weighted."""
    y = _as_floats(y)
    s = [min(max(v, eps), 1.0 - eps) for v in _as_floats(s)]
    if pi is None:
        terms = [
            -(yi * math.log(si) + (1.0 - yi) * math.log(1.0 - si))
            for yi, si in zip(y, s, strict=True)
        ]
        return _mean(terms)
    pos, neg = _split(y, s)
    if not pos or not neg:
        return float("nan")
    term_pos = sum(math.log(v) for v in pos) / len(pos)
    term_neg = sum(math.log(1.0 - v) for v in neg) / len(neg)
    return float(-pi * term_pos - (1.0 - pi) * term_neg)


# -------------------------------------------------- 6. operating points
def _operating_points(y, s):
    """All (Se, Sp) pairs for thresholds = observed scores plus +inf."""
    pos, neg = _split(y, s)
    if not pos or not neg:
        return []
    thresholds = _as_floats(s) + [math.inf]
    return [_se_sp(pos, neg, t) for t in thresholds]


def se_at_sp(y, s, x):
    """Definition 6a: max sensitivity over thresholds with Sp >= x."""
    feasible = [se for se, sp in _operating_points(y, s) if sp >= x - _TOL]
    return float(max(feasible)) if feasible else float("nan")


def sp_at_se(y, s, x):
    """Definition 6b: max specificity over thresholds with Se >= x."""
    feasible = [sp for se, sp in _operating_points(y, s) if se >= x - _TOL]
    return float(max(feasible)) if feasible else float("nan")


# ------------------------------------------- 7. source-threshold rules
def tau_sensitivity(y, s, x=0.95):
    """Definition 7a: highest observed score t with Se(t) >= x."""
    pos, _ = _split(y, s)
    if not pos:
        return float("nan")
    feasible = []
    for t in _as_floats(s):
        se = sum(1 for v in pos if v >= t) / len(pos)
        if se >= x - _TOL:
            feasible.append(t)
    return float(max(feasible)) if feasible else float("nan")


def tau_specificity(y, s, x=0.95):
    """Definition 7b: observed t with Sp(t) >= x maximising (Se, Sp, t); +inf if none."""
    pos, neg = _split(y, s)
    if not pos or not neg:
        return float("nan")
    best_key, best_t = None, math.inf
    for t in _as_floats(s):
        se, sp = _se_sp(pos, neg, t)
        if sp >= x - _TOL:
            key = (se, sp, t)
            if best_key is None or key > best_key:
                best_key, best_t = key, t
    return float(best_t)


# ---------------------------------------------------- 8. Se/Sp at tau
def se_sp_at(y, s, tau):
    """Definition 8: (sensitivity, specificity) of the rule s >= tau."""
    pos, neg = _split(y, s)
    se = sum(1 for v in pos if v >= tau) / len(pos) if pos else float("nan")
    sp = sum(1 for v in neg if v < tau) / len(neg) if neg else float("nan")
    return float(se), float(sp)


# ------------------------------------------- 9. selective prediction
def _selective_risks(y, s):
    """Risk(k), k = 1..n, with items ordered by confidence (stable, descending)."""
    y, s = _as_floats(y), _as_floats(s)
    conf = [max(v, 1.0 - v) for v in s]
    errors = [1 if (1 if si >= 0.5 else 0) != yi else 0 for yi, si in zip(y, s, strict=True)]
    risks, n_err = [], 0
    for k, i in enumerate(_stable_desc_order(conf), start=1):
        n_err += errors[i]
        risks.append(n_err / k)
    return risks


def risk_at_coverage(y, s, c):
    """Definition 9a: selective risk at coverage c, k = ceil(round(c * n, 9))."""
    risks = _selective_risks(y, s)
    k = int(math.ceil(round(c * len(risks), 9)))
    if not 1 <= k <= len(risks):
        raise ValueError("coverage must give 1 <= k <= n")
    return float(risks[k - 1])


def aurc(y, s):
    """Definition 9b: trapezoid area of risk(k) vs coverage k/n, k = 1..n."""
    risks = _selective_risks(y, s)
    n = len(risks)
    area = 0.0
    for k in range(1, n):
        area += 0.5 * (risks[k - 1] + risks[k]) * (1.0 / n)
    return float(area)


# ---------------------------------------------------- 10. soft labels
def _soft_sorted(p, s):
    """Soft labels in stable descending-score order, plus n+ and n-."""
    p, s = _as_floats(p), _as_floats(s)
    if len(p) != len(s):
        raise ValueError("p and s must have the same length")
    ps = [p[i] for i in _stable_desc_order(s)]
    n_pos = sum(ps)
    n_neg = sum(1.0 - v for v in ps)
    return ps, n_pos, n_neg


def _soft_auroc(p, s, inclusive):
    """Double-loop soft AUROC; j <= i if inclusive else j < i."""
    ps, n_pos, n_neg = _soft_sorted(p, s)
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    total = 0.0
    for i in range(len(ps)):
        upper = i + 1 if inclusive else i
        for j in range(upper):
            total += (1.0 - ps[i]) * ps[j]
    return float(total / (n_pos * n_neg))


def soft_auroc_inclusive(p, s):
    """Definition 10a: soft AUROC, sum over j <= i of (1 - p_i) p_j / (n+ n-)."""
    return _soft_auroc(p, s, inclusive=True)


def soft_auroc_strict(p, s):
    """Definition 10b: soft AUROC, sum over j < i of (1 - p_i) p_j / (n+ n-)."""
    return _soft_auroc(p, s, inclusive=False)


def soft_auroc_trapezoid(p, s):
    """Definition 10c: mean of the inclusive and strict soft AUROC."""
    return 0.5 * (soft_auroc_inclusive(p, s) + soft_auroc_strict(p, s))


def soft_ap(p, s):
    """Definition 10d: soft AP, sum over j <= i of p_i p_j / (i n+)."""
    ps, n_pos, n_neg = _soft_sorted(p, s)
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    total = 0.0
    for i in range(len(ps)):
        for j in range(i + 1):
            total += ps[i] * ps[j] / (i + 1)
    return float(total / n_pos)


def soft_ap_known_self(p, s):
    """Definition 10e: soft AP with the own label known at its own rank (paper 001 Table 4),
    sum over i of p_i (1 + sum_{j < i} p_j) / (i n+)."""
    ps, n_pos, _ = _soft_sorted(p, s)
    if n_pos == 0:
        return float("nan")
    total = 0.0
    for i in range(len(ps)):
        above = 0.0
        for j in range(i):
            above += ps[j]
        total += ps[i] * (1.0 + above) / (i + 1)
    return float(total / n_pos)


# ------------------------------------------------------------ 11. DeLong
def delong_placements(y, s):
    """Definition 11a: brute-force DeLong placements (V10 over P, V01 over N)."""
    pos, neg = _split(y, s)
    v10 = [sum(_psi(a, b) for b in neg) / len(neg) for a in pos]
    v01 = [sum(_psi(a, b) for a in pos) / len(pos) for b in neg]
    return np.array(v10, dtype=float), np.array(v01, dtype=float)


def delong_var(y, s):
    """Definition 11b: DeLong variance var(V10)/|P| + var(V01)/|N| (ddof=1)."""
    v10, v01 = (list(v) for v in delong_placements(y, s))
    return float(_cov(v10, v10) / len(v10) + _cov(v01, v01) / len(v01))


def delong_paired_z(y, s_a, s_b):
    """Definition 11c: paired DeLong test; returns (delta, var_of_delta, z)."""
    v10a, v01a = (list(v) for v in delong_placements(y, s_a))
    v10b, v01b = (list(v) for v in delong_placements(y, s_b))
    n_pos, n_neg = len(v10a), len(v01a)
    delta = auroc_pairwise(y, s_a) - auroc_pairwise(y, s_b)
    var_a = _cov(v10a, v10a) / n_pos + _cov(v01a, v01a) / n_neg
    var_b = _cov(v10b, v10b) / n_pos + _cov(v01b, v01b) / n_neg
    cov = _cov(v10a, v10b) / n_pos + _cov(v01a, v01b) / n_neg
    var_delta = var_a + var_b - 2.0 * cov
    z = delta / math.sqrt(var_delta) if var_delta > 0 else float("nan")
    return float(delta), float(var_delta), float(z)


# ------------------------------------------------- 12. multiplicity
def holm(p):
    """Definition 12a: Holm step-down adjusted p-values, in input order."""
    p = _as_floats(p)
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order, start=1):  # rank = j, 1-based
        running = max(running, min(1.0, (m - rank + 1) * p[i]))
        adjusted[i] = running
    return np.array(adjusted, dtype=float)


def bh(p):
    """Definition 12b: Benjamini-Hochberg step-up adjusted p-values, in input order."""
    p = _as_floats(p)
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):  # from the largest p-value down
        i = order[rank - 1]
        running = min(running, min(1.0, m * p[i] / rank))
        adjusted[i] = running
    return np.array(adjusted, dtype=float)


# ------------------------------------------------- 13. permutation test
def permutation_pvalue(null, observed):
    """Definition 13: (1 + #{|d*| >= |d_obs|}) / (1 + B)."""
    null = _as_floats(null)
    count = sum(1 for d in null if abs(d) >= abs(float(observed)))
    return (1 + count) / (1 + len(null))
