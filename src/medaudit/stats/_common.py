"""Small helpers shared by the public metric modules (validation of label pairs, NaN policy).

This is the one home, inside ``medaudit.stats``, of what several statistics modules need:
label/score validation, warnings attributed to the caller, and the checks of the
resampling arguments (:func:`check_n_resamples`, :func:`check_batch`, defined in
:mod:`medaudit._validation` so that layers above ``stats`` use the same rule).
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import (
    as_binary_labels,
    as_probabilities,
    as_sample_weight,
    as_scores,
    as_soft_labels,
    check_batch,
    check_n_resamples,
    check_same_length,
)
from medaudit.exceptions import UndefinedMetricWarning

__all__ = ["labels_scores", "soft_scores", "warn", "stacklevel_outside", "warn_if_one_class",
           "weights", "check_n_resamples", "check_batch", "STATS_DIR"]


def labels_scores(
    y_true: ArrayLike, y_score: ArrayLike, *, prob: bool = False, score_name: str | None = None,
    label_name: str = "y_true",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate a (labels, scores) pair; ``prob=True`` also requires scores in [0, 1].
    Messages name the arguments ``label_name`` and ``score_name``."""
    y = as_binary_labels(y_true, name=label_name)
    if prob:
        s = as_probabilities(y_score, name=score_name or "y_prob")
    else:
        s = as_scores(y_score, name=score_name or "y_score")
    check_same_length(**{label_name: y, score_name or ("y_prob" if prob else "y_score"): s})
    return y, s


def soft_scores(
    p_true: ArrayLike, y_score: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate a (soft labels, scores) pair."""
    p = as_soft_labels(p_true)
    s = as_scores(y_score)
    check_same_length(p_true=p, y_score=s)
    return p, s


#: warnings raised in the statistics core are attributed to the first frame outside it
STATS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SKIP_PREFIXES = sys.version_info >= (3, 12)  # warnings.warn(skip_file_prefixes=...)


def warn(message: str | Warning, category: type[Warning] | None = None) -> None:
    """Warn at the caller of the public function, whatever the depth of the call.

    A fixed ``stacklevel`` is right for one call path only: a direct
    ``bootstrap_metrics(...)`` call and the same warning reached through
    ``paired_bootstrap`` sit at different depths, and Python 3.12 inlines comprehensions,
    which removes frames.  So the frames inside ``medaudit/stats`` are skipped: by
    ``skip_file_prefixes`` on Python >= 3.12, by counting them on older versions.
    """
    if _SKIP_PREFIXES:
        warnings.warn(message, category, skip_file_prefixes=(STATS_DIR,))
    else:
        warnings.warn(message, category, stacklevel=stacklevel_outside(STATS_DIR))


def stacklevel_outside(prefix: str) -> int:
    """``stacklevel`` for a ``warnings.warn`` made in the caller of this function's caller
    (:func:`warn`) that names the first frame whose file is not under ``prefix``."""
    frame = sys._getframe(2)  # the frame that called warn()
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(prefix):
        frame = frame.f_back
        level += 1
    return level


def warn_if_one_class(n_pos: float, n_neg: float, metric: str, *, stacklevel: int | None = None
                      ) -> bool:
    """Warn and return True when a two-class metric is undefined (one class absent).

    The warning names the caller outside ``medaudit.stats`` (:func:`warn`); ``stacklevel``
    is accepted for old callers and ignored."""
    if n_pos > 0 and n_neg > 0:
        return False
    if n_pos <= 0 and n_neg <= 0:  # cases there are (an empty sample is refused before)
        warn(f"{metric} is undefined: every case has weight 0 (sample_weight); returning nan.",
             UndefinedMetricWarning)
        return True
    which = "positives" if n_pos <= 0 else "negatives"
    warn(f"{metric} is undefined: the sample has no {which}; returning nan.",
         UndefinedMetricWarning)
    return True


def unit_scaled(w: NDArray[np.float64]) -> NDArray[np.float64]:
    """``w`` times the power of two that brings its largest value into [0.5, 1), where
    that value lies outside [2**-20, 2**20).

    For metrics that are ratios of weighted sums (AUROC, partial AUROC, Se at Sp): a power
    of two only moves exponents, so such a ratio is unchanged to the last bit by the
    scaling itself, while weights of any scale (1e-170, 1e160) no longer underflow or
    overflow in products of class totals, nor fall below the kernels' absolute guards.
    Uniform weights of any size then give the unweighted value to rounding.
    """
    m = float(w.max(initial=0.0))
    if not (m > 0.0 and math.isfinite(m)) or 2.0**-20 <= m < 2.0**20:
        return w  # ordinary scales (unit weights among them) are left as they are
    return np.ldexp(w, -math.frexp(m)[1])


def weights(sample_weight: ArrayLike | None, y: NDArray[np.float64]
            ) -> tuple[NDArray[np.float64], float, float]:
    """The kernels' weight row (ones without ``sample_weight``) and the weighted class
    masses (n_pos, n_neg): with weights, a class is absent when its weight is zero."""
    w = as_sample_weight(sample_weight, y.size)
    if w is None:
        n_pos = float(y.sum())
        return np.ones(y.size), n_pos, y.size - n_pos
    n_pos = float(w @ y)
    return w, n_pos, float(w.sum()) - n_pos
