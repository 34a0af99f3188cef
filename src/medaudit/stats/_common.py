"""Small helpers shared by the public metric modules (validation of label pairs, NaN policy)."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import (
    as_binary_labels,
    as_probabilities,
    as_sample_weight,
    as_scores,
    as_soft_labels,
    check_same_length,
)
from medaudit.exceptions import UndefinedMetricWarning


def labels_scores(
    y_true: ArrayLike, y_score: ArrayLike, *, prob: bool = False, score_name: str | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate a (labels, scores) pair; ``prob=True`` also requires scores in [0, 1]."""
    y = as_binary_labels(y_true)
    if prob:
        s = as_probabilities(y_score, name=score_name or "y_prob")
    else:
        s = as_scores(y_score, name=score_name or "y_score")
    check_same_length(y_true=y, **{score_name or ("y_prob" if prob else "y_score"): s})
    return y, s


def soft_scores(
    p_true: ArrayLike, y_score: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate a (soft labels, scores) pair."""
    p = as_soft_labels(p_true)
    s = as_scores(y_score)
    check_same_length(p_true=p, y_score=s)
    return p, s


def warn_if_one_class(n_pos: float, n_neg: float, metric: str, *, stacklevel: int = 3) -> bool:
    """Warn and return True when a two-class metric is undefined (one class absent)."""
    if n_pos > 0 and n_neg > 0:
        return False
    which = "positives" if n_pos <= 0 else "negatives"
    warnings.warn(
        f"{metric} is undefined: the sample has no {which}; returning nan.",
        UndefinedMetricWarning,
        stacklevel=stacklevel,
    )
    return True


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
