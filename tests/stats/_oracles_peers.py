"""Slow, obviously-correct references for the curve, cut-point and threshold statistics.

Written from the definitions with plain loops over thresholds and segments, sharing no
code with ``medaudit.stats._kernels_extra`` (no cumulative sums over tie blocks, no
flattened searches).  Weights are case weights; an integer weight ``k`` is ``k`` copies.
"""

import math

import numpy as np

_TOL = 1e-12


def roc_points(y, s, w=None):
    """[(threshold, tp, fp)] for +inf and every distinct score, descending (rule s >= t)."""
    y = [float(v) for v in y]
    s = [float(v) for v in s]
    w = [1.0] * len(y) if w is None else [float(v) for v in w]
    out = [(math.inf, 0.0, 0.0)]
    for t in sorted(set(si for si, wi in zip(s, w, strict=True) if wi > 0), reverse=True):
        tp = sum(wi for yi, si, wi in zip(y, s, w, strict=True) if si >= t and yi == 1)
        fp = sum(wi for yi, si, wi in zip(y, s, w, strict=True) if si >= t and yi == 0)
        out.append((t, tp, fp))
    return out


def curve_sp_se(y, s, w=None):
    """The ROC vertices as (specificity, sensitivity) in threshold order (+inf first)."""
    pts = roc_points(y, s, w)
    n_pos, n_neg = pts[-1][1], pts[-1][2]
    return [(1.0 - fp / n_neg, tp / n_pos) for _, tp, fp in pts]


def _area(xy, lo, hi):
    """Area under the polyline xy (x ascending along it) between x = lo and x = hi."""
    area = 0.0
    for (x0, y0), (x1, y1) in zip(xy[:-1], xy[1:], strict=True):
        if x1 == x0:
            continue  # a vertical segment has no width
        a, b = max(min(x0, x1), lo), min(max(x0, x1), hi)
        if b <= a:
            continue

        def at(x, x0=x0, y0=y0, x1=x1, y1=y1):
            return y0 + (x - x0) * (y1 - y0) / (x1 - x0)

        area += (b - a) * (at(a) + at(b)) / 2.0
    return area


def partial_auc(y, s, lo, hi, focus="specificity", correct=False, w=None):
    """Area under the ROC curve over a specificity (or sensitivity) range, by segments."""
    v = curve_sp_se(y, s, w)
    if focus == "specificity":
        xy = sorted(v, key=lambda p: (p[0], -p[1]))
    else:
        xy = sorted([(se, sp) for sp, se in v], key=lambda p: (p[0], -p[1]))
    a = _area(xy, lo, hi)
    if correct:
        amin = (hi - lo) * (1.0 - (lo + hi) / 2.0)
        a = 0.5 * (1.0 + (a - amin) / ((hi - lo) - amin))
    return a


def se_at_sp(y, s, x, w=None):
    """Sensitivity on the curve at specificity x: top of a vertical segment, else interpolated."""
    v = curve_sp_se(y, s, w)
    on = [se for sp, se in v if abs(sp - x) <= _TOL * max(x, 1.0)]
    if on:
        return max(on)
    for (sp0, se0), (sp1, se1) in zip(v[:-1], v[1:], strict=True):
        if min(sp0, sp1) < x < max(sp0, sp1):
            return se0 + (x - sp0) * (se1 - se0) / (sp1 - sp0)
    raise AssertionError("specificity outside the curve")


def best_threshold(y, s, method="youden", cost=1.0, prevalence=0.5, w=None):
    """(threshold, se, sp, all tied thresholds) by a loop over the candidate thresholds."""
    r = (1.0 - prevalence) / (cost * prevalence)
    pts = roc_points(y, s, w)
    n_pos, n_neg = pts[-1][1], pts[-1][2]
    rows = []
    for t, tp, fp in pts:
        se, sp = tp / n_pos, 1.0 - fp / n_neg
        crit = se + r * sp if method == "youden" else -((1 - se) ** 2 + r * (1 - sp) ** 2)
        rows.append((crit, t, se, sp))
    best = max(c for c, *_ in rows)
    tied = [row for row in rows if row[0] >= best - _TOL * max(abs(best), 1.0)]
    top = max(tied, key=lambda row: row[1])  # the highest threshold
    return top[1], top[2], top[3], sorted((row[1] for row in tied), reverse=True)


def cells(y, s, tau, w=None):
    """(tp, fp, fn, tn) at threshold tau with the rule s >= tau."""
    w = [1.0] * len(y) if w is None else list(w)
    tp = fp = fn = tn = 0.0
    for yi, si, wi in zip(y, s, w, strict=True):
        pos = si >= tau
        if yi == 1:
            tp, fn = (tp + wi, fn) if pos else (tp, fn + wi)
        else:
            fp, tn = (fp + wi, tn) if pos else (fp, tn + wi)
    return tp, fp, fn, tn


def materialise(y, s, counts):
    """The resample as data: each item repeated by its count."""
    c = np.asarray(counts).astype(np.int64)
    return np.repeat(np.asarray(y), c), np.repeat(np.asarray(s), c)
