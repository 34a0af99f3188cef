"""Shared plumbing of the curve-type bootstraps: replicate counts drawn in rank order.

A ROC-type kernel reads weights in rank order.  The engine's general path gathers
each ``(B, n)`` batch into that order, which at n = 10^5 costs more than drawing it;
:meth:`~medaudit.stats.designs.WeightPlan.batches` can instead count every draw
straight into its rank position (``columns=``), giving the same counts — the same
replicates — with no gather.  Cluster designs count clusters, not items, so they take
the gather.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import as_1d_float, check_same_length
from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats.designs import WeightPlan, make_plan


def ranked_batches(plan: WeightPlan, order: NDArray[np.intp], n_resamples: int,
                   rng: np.random.Generator, batch: int | None) -> Iterator[NDArray]:
    """Yield replicate counts with column ``j`` holding the item at rank position ``j``."""
    if plan.unit_of_item is None:
        position = np.empty(order.size, dtype=np.intp)
        position[order] = np.arange(order.size)
        yield from plan.batches(n_resamples, rng, batch, columns=position)
    else:
        for w in plan.batches(n_resamples, rng, batch):
            yield np.take(w, order, axis=1)


def columns_batches(plan: WeightPlan, position: NDArray[np.intp], n_resamples: int,
                    rng: np.random.Generator, batch: int | None) -> Iterator[NDArray] | None:
    """Replicate counts with item ``i`` counted into column ``position[i]`` (a permutation),
    or None for a cluster design (clusters, not items, are drawn)."""
    if plan.unit_of_item is not None:
        return None
    return plan.batches(n_resamples, rng, batch, columns=position)


def bootstrap_plan(design: str, y: NDArray[np.float64], *, cluster: Any = None,
                   strata: Any = None) -> WeightPlan:
    """:func:`~medaudit.stats.designs.make_plan` for the single-score designs."""
    if design == "shared_positive":
        raise MedauditError("design='shared_positive' is run by shared_positive_bootstrap().")
    return make_plan(design, y, cluster=cluster, strata=strata)


def sample_weights(sample_weight: ArrayLike | None, n: int) -> NDArray[np.float64]:
    """Case weights (ones when None): finite, non-negative, one per item."""
    if sample_weight is None:
        return np.ones(n)
    w = as_1d_float(sample_weight, name="sample_weight")
    check_same_length(y_true=np.empty(n), sample_weight=w)
    if (w < 0).any():
        raise MedauditError(f"sample_weight must be non-negative; found {float(w.min())!r}.")
    return w


def ranked(y: NDArray[np.float64], s: NDArray[np.float64]) -> K.Ranked:
    """:func:`~medaudit.stats._kernels.rank` (one stable descending sort)."""
    return K.rank(y, s)


def nested_to_dict(obj, point: str, parts: tuple[str, ...], include_arrays: bool) -> dict[str, Any]:
    """``to_dict`` of a result holding one point result and several bootstrap results."""
    return {point: getattr(obj, point).to_dict(),
            **{k: getattr(obj, k).to_dict(include_arrays=include_arrays) for k in parts}}
