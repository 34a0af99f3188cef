"""Typed analysis cells: one paired bootstrap, its soft-label twin, and the one function that runs it.

A block describes each independent resampling as a frozen :class:`BootstrapCell`
(aligned arrays and options, never a context or a table) and hands a list of them to
:meth:`AuditContext.map_cells`, which runs :func:`run_cell` in process or on a backend
such as Ray.  ``run_cell`` builds the cell's generator in the worker from the run seed
and the cell's key (:func:`~medaudit.blocks.context.cell_rng`), so the outcome does not
depend on the backend, on the order of cells or on which other cells ran; and it keeps
the degenerate-replicate bookkeeping in one place: replicates on which a metric is
undefined are counted in each result's ``n_degenerate`` (the rows qualify them), not
warned about once per cell.

The soft twin (paper 001).  When a cell carries ``label_soft``, ``run_cell`` also runs
the soft-label metrics on the *same* resampled images: same key (so the same
generator), B, level and contrasts, with the soft labels and soft metric ids.  Under
``within_label`` the strata are the *hard* labels of the cell (the cohort's sampling
classes), not ``label_soft > 0.5`` as the stats layer would take for soft labels: the
ordinary design with ``strata=label`` compiles to exactly the within-label plan, and the
twin's results are renamed to the design whose draws they reproduce.

Cutting large cells.  When the backend runs several cells at once
(``ctx.parallelism(work)`` > 1), :func:`run_cells` cuts a cell whose work is more than
a share of the map's into replicate ranges (``paired_bootstrap(replicate_range=...)``:
the generator of the cell's key skips the draws before its range) and joins them with
``concat_paired``: the same replicates, so the same bytes, whatever the cut and the
number of workers; only the wall time changes (one large cohort no longer keeps a
worker busy while the others wait).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from medaudit.backends.local import work_of
from medaudit.blocks.context import Resampling, cell_rng
from medaudit.exceptions import DegenerateDataWarning
from medaudit.stats import delong_test, paired_bootstrap
from medaudit.stats.bootstrap import PairedBootstrapResult, concat_paired

__all__ = ["SOFT_METRICS", "BootstrapCell", "CellResult", "DeLongCell", "run_cell", "run_cells",
           "run_delong", "run_delong_cells", "cell_ranges"]

#: a cut never leaves fewer replicates than this in a range (each range sorts its vectors anew)
MIN_RANGE = 100

#: the soft-label metrics a twin reports by default (paper 001)
SOFT_METRICS = ("soft_roc_auc", "soft_average_precision")


@dataclass(frozen=True, eq=False)
class BootstrapCell:
    """One paired bootstrap of several score vectors on the same images.

    Parameters
    ----------
    key : tuple
        The cell's name; with the run seed it fixes the generator (``cell_rng``).
    label : ndarray of shape (n,)
        Hard 0/1 labels shared by every score vector.
    scores : mapping of str to ndarray of shape (n,)
        Score vectors by name (models, prompt families, an ensemble).
    metrics : sequence
        Metric ids or ``(name, options)`` pairs (see ``medaudit.stats.paired_bootstrap``);
        empty when only the soft twin is wanted.
    design : {"ordinary", "within_label"}, default="ordinary"
    contrasts : sequence of (a, b), optional
        Differences to report; default every pair in order.
    label_soft : ndarray of shape (n,), optional
        Soft labels: the twin reports ``soft_metrics`` from the same draws.
    soft_metrics : sequence, default=SOFT_METRICS
    n_resamples : int, optional
        The block's own B (default: the run's).
    """

    key: tuple[Any, ...]
    label: np.ndarray
    scores: Mapping[str, np.ndarray]
    metrics: tuple[Any, ...]
    design: str = "ordinary"
    contrasts: tuple[tuple[str, str], ...] | None = None
    label_soft: np.ndarray | None = None
    soft_metrics: tuple[Any, ...] = SOFT_METRICS
    n_resamples: int | None = None


@dataclass(frozen=True, eq=False)
class CellResult:
    """What :func:`run_cell` returns: the ordinary results, the soft twin's, seed and key."""

    key: tuple[Any, ...]
    #: the run seed the cell's generator was derived from
    seed: int
    #: the ordinary results (None when the cell asked for soft metrics only)
    hard: PairedBootstrapResult | None
    soft: PairedBootstrapResult | None = None
    #: every (name, metric id) -> result, ordinary then soft
    marginal: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: every (a, b, metric id) -> result, ordinary then soft
    differences: dict[tuple[str, str, str], Any] = field(default_factory=dict)

    @property
    def metric_ids(self) -> list[str]:
        """The ordinary metric ids, in the order asked for."""
        return [] if self.hard is None else list(self.hard.options["metrics"])


def _paired(cell: BootstrapCell, label: np.ndarray, metrics: Sequence[Any], design: str,
            strata: np.ndarray | None, resampling: Resampling,
            replicates: tuple[int, int] | None = None) -> PairedBootstrapResult:
    with warnings.catch_warnings():
        # counted in n_degenerate and qualified in the rows instead
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return paired_bootstrap(label, dict(cell.scores), metrics=list(metrics),
                                contrasts=None if cell.contrasts is None else list(cell.contrasts),
                                design=design, strata=strata,
                                n_resamples=cell.n_resamples or resampling.n_resamples,
                                confidence_level=resampling.confidence_level,
                                rng=cell_rng(resampling.seed, *cell.key),
                                replicate_range=replicates)


def _renamed(res: PairedBootstrapResult, design: str) -> PairedBootstrapResult:
    return dataclasses.replace(
        res, design=design,
        marginal={k: dataclasses.replace(r, design=design) for k, r in res.marginal.items()},
        differences={k: dataclasses.replace(r, design=design) for k, r in res.differences.items()})


def run_cell(cell: BootstrapCell, resampling: Resampling,
             replicates: tuple[int, int] | None = None) -> CellResult:
    """Run one cell (and its soft twin) with the generator of its key.

    Module level, so a backend can ship it to a worker; it draws only from
    ``cell_rng(resampling.seed, *cell.key)``.  ``replicates``: only that range of the
    cell's replicates (the same draws as the whole run; see :func:`run_cells`).
    """
    hard = (_paired(cell, cell.label, cell.metrics, cell.design, None, resampling, replicates)
            if cell.metrics else None)
    soft = None
    if cell.label_soft is not None:
        soft_label = np.asarray(cell.label_soft, dtype=np.float64)
        if cell.design == "within_label":
            soft = _renamed(_paired(cell, soft_label, cell.soft_metrics, "ordinary",
                                    np.asarray(cell.label), resampling, replicates),
                            "within_label+paired")
        else:
            soft = _paired(cell, soft_label, cell.soft_metrics, cell.design, None, resampling,
                           replicates)
    return _cell_result(cell.key, resampling.seed, hard, soft)


def _cell_result(key: tuple[Any, ...], seed: int, hard: PairedBootstrapResult | None,
                 soft: PairedBootstrapResult | None) -> CellResult:
    parts = [r for r in (hard, soft) if r is not None]
    marginal = {k: v for r in parts for k, v in r.marginal.items()}
    differences = {k: v for r in parts for k, v in r.differences.items()}
    return CellResult(key=key, seed=seed, hard=hard, soft=soft, marginal=marginal,
                      differences=differences)


@dataclass(frozen=True, eq=False)
class _Range:
    """Replicates ``start`` to ``stop - 1`` of one cell (what a worker runs)."""

    cell: BootstrapCell
    start: int
    stop: int
    #: estimated work, for the backend's schedule (largest first)
    work: float


def _run_range(r: _Range, resampling: Resampling) -> CellResult:
    return run_cell(r.cell, resampling, (r.start, r.stop))


def cell_ranges(works: Sequence[float], n_resamples: Sequence[int], parallelism: int
                ) -> list[list[tuple[int, int]]]:
    """The replicate ranges each cell is cut into for ``parallelism`` cells at once.

    A cell whose work exceeds ``sum(works) / (2 * parallelism)`` is cut into that many
    equal shares (at least :data:`MIN_RANGE` replicates each), so that the map has at
    least about two ranges per worker of similar size and none dominates; the other
    cells stay whole.  With ``parallelism`` 1 nothing is cut.

    Examples
    --------
    >>> cell_ranges([8.0, 1.0, 1.0], [2000, 2000, 2000], 2)
    [[(0, 500), (500, 1000), (1000, 1500), (1500, 2000)], [(0, 2000)], [(0, 2000)]]
    >>> cell_ranges([8.0, 1.0], [2000, 2000], 1)
    [[(0, 2000)], [(0, 2000)]]
    """
    total = float(sum(works))
    out = []
    for w, b in zip(works, n_resamples, strict=True):
        share = total / (2 * parallelism) if parallelism > 1 else math.inf
        k = 1 if w <= share else min(math.ceil(w / share), max(b // MIN_RANGE, 1))
        edges = [round(i * b / k) for i in range(k + 1)]
        out.append([(edges[i], edges[i + 1]) for i in range(k)])
    return out


def _joined(cell: BootstrapCell, seed: int, parts: Sequence[CellResult]) -> CellResult:
    if len(parts) == 1:
        return parts[0]
    with warnings.catch_warnings():
        # counted in n_degenerate and qualified in the rows instead
        warnings.simplefilter("ignore", DegenerateDataWarning)
        hard = None if parts[0].hard is None else concat_paired([p.hard for p in parts])
        soft = None if parts[0].soft is None else concat_paired([p.soft for p in parts])
    return _cell_result(cell.key, seed, hard, soft)


def run_cells(ctx: Any, cells: Sequence[BootstrapCell]) -> list[CellResult]:
    """Run ``cells`` through ``ctx.map`` with the context's resampling settings.

    When the backend runs several cells at once, a large cell is cut into replicate
    ranges (:func:`cell_ranges`) that are run as cells of their own and joined: the
    results are those of the uncut cells to the last bit.
    """
    cells = list(cells)
    res = ctx.resampling
    n_res = [c.n_resamples or res.n_resamples for c in cells]
    fn = functools.partial(run_cell, resampling=res)
    works = [work_of(fn, c) for c in cells]
    ranges = cell_ranges(works, n_res, ctx.parallelism(sum(works)))
    if all(len(r) == 1 for r in ranges):
        return ctx.map(fn, cells)
    items = [_Range(c, a, b, w * (b - a) / n) for c, rs, w, n in zip(cells, ranges, works, n_res,
                                                                     strict=True)
             for a, b in rs]
    done = iter(ctx.map(functools.partial(_run_range, resampling=res), items))
    return [_joined(c, res.seed, [next(done) for _ in rs]) for c, rs in zip(cells, ranges,
                                                                          strict=True)]


@dataclass(frozen=True, eq=False)
class DeLongCell:
    """Paired DeLong tests of score-vector pairs on the same images (``a`` minus ``b``)."""

    label: np.ndarray
    scores: Mapping[str, np.ndarray]
    pairs: tuple[tuple[str, str], ...]


def run_delong(cell: DeLongCell, resampling: Resampling) -> list[Any]:
    """The paired DeLong test of every pair of ``cell``, at the run's interval level."""
    return [delong_test(cell.label, cell.scores[a], cell.scores[b],
                        confidence_level=resampling.confidence_level) for a, b in cell.pairs]


def run_delong_cells(ctx: Any, cells: Sequence[DeLongCell]) -> list[list[Any]]:
    """Run DeLong ``cells`` through ``ctx.map`` (one list of tests per cell)."""
    return ctx.map(functools.partial(run_delong, resampling=ctx.resampling), cells)
