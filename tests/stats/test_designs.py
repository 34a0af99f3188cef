"""Resampling designs (medaudit.stats.designs; paper 000 M0.10, paper 002 M2.9).

The weight rows a design draws are checked directly: class and stratum sizes kept,
whole clusters resampled, every unit drawn once on average.  Their evaluation, and the
independence of draws and results from the batch size, are tested in test_bootstrap.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.stats._helpers import (
    _N_PATIENTS,
    PATIENT,
    SITE,
    Y_CL,
    draw_weights,
    tied_data,
)


# ------------------------------------------------------------------------- designs
def test_within_label_keeps_class_sizes_ordinary_keeps_n():
    y, _ = tied_data(1, 9, 21)
    W = draw_weights("within_label", y, 500, 4)
    np.testing.assert_array_equal(W @ y, 9)
    np.testing.assert_array_equal(W @ (1 - y), 21)
    W = draw_weights("ordinary", y, 500, 4)
    np.testing.assert_array_equal(W.sum(axis=1), y.size)
    n_pos = W @ y
    assert np.unique(n_pos).size > 5  # the class mix varies ...
    assert abs(n_pos.mean() - 9) < 6 * math.sqrt(30 * 0.3 * 0.7 / 500)  # ... around the sample's
    assert np.all(W >= 0) and np.array_equal(W, np.round(W))


def test_within_label_with_strata_keeps_each_stratum_class_cell():
    y, site = Y_CL, SITE
    W = draw_weights("within_label", y, 300, 5, strata=site)
    for g in np.unique(site):
        for c in (0, 1):
            cell = (site == g) & (y == c)
            np.testing.assert_array_equal(W[:, cell].sum(axis=1), cell.sum())


@pytest.mark.parametrize("with_strata", [False, True])
def test_cluster_design_resamples_whole_clusters(with_strata):
    kw = {"cluster": PATIENT, "strata": SITE} if with_strata else {"cluster": PATIENT}
    W = draw_weights("cluster", Y_CL, 400, 6, **kw)
    first_item = np.array([np.flatnonzero(PATIENT == c)[0] for c in range(_N_PATIENTS)])
    per_cluster = W[:, first_item]
    # every item of a cluster has its cluster's count
    np.testing.assert_array_equal(W, per_cluster[:, PATIENT])
    if with_strata:
        site_of_patient = SITE[first_item]
        for g in np.unique(site_of_patient):
            np.testing.assert_array_equal(per_cluster[:, site_of_patient == g].sum(axis=1),
                                          np.sum(site_of_patient == g))
    else:
        np.testing.assert_array_equal(per_cluster.sum(axis=1), _N_PATIENTS)
        # the number of items varies with the cluster sizes drawn
        assert np.unique(W.sum(axis=1)).size > 1


@pytest.mark.parametrize("case", ["ordinary", "within_label", "cluster+strata", "shared_positive"])
def test_every_unit_is_drawn_once_on_average(case):
    """Mean count ~ 1 per unit; bound from the multinomial variance 1 - 1/m (m = stratum size)."""
    n_res = 20_000
    if case == "shared_positive":
        y = np.r_[np.ones(7), np.zeros(15)]
        strata = np.r_[np.zeros(7), np.ones(6), np.full(9, 2)].astype(int)
        W = draw_weights("shared_positive", y, n_res, 9, strata=strata)
        units, m = W, np.bincount(strata)[strata]
    elif case == "cluster+strata":
        W = draw_weights("cluster", Y_CL, n_res, 9, cluster=PATIENT, strata=SITE)
        first_item = np.array([np.flatnonzero(PATIENT == c)[0] for c in range(_N_PATIENTS)])
        units = W[:, first_item]
        site_of_patient = SITE[first_item]
        m = np.bincount(site_of_patient)[site_of_patient]
    else:
        y, _ = tied_data(2, 8, 17)
        W = draw_weights(case, y, n_res, 9)
        units = W
        m = np.full(y.size, y.size) if case == "ordinary" else np.where(y == 1, 8, 17)
    mean = units.mean(axis=0)
    sd = np.sqrt((1 - 1 / m) / n_res)
    assert np.all(np.abs(mean - 1) < 5 * sd), (mean, sd)
    # and the per-unit variance is the multinomial one
    np.testing.assert_allclose(units.var(axis=0), 1 - 1 / m, rtol=0.1)


def test_a_cluster_design_with_nothing_to_redraw_is_refused():
    # one cluster (or one per stratum) gives every replicate the same sample: a zero-width
    # interval with no degenerate replicate to say so
    from medaudit.exceptions import MedauditError
    from medaudit.stats import designs

    y = np.r_[np.zeros(10), np.ones(10)]
    with pytest.raises(MedauditError, match="at least two clusters to resample"):
        designs.make_plan("cluster", y, cluster=np.zeros(20))
    with pytest.raises(MedauditError, match="at least two clusters in any stratum"):
        designs.make_plan("cluster", y, cluster=np.arange(20) % 2, strata=np.arange(20) % 2)
    assert designs.make_plan("cluster", y, cluster=np.arange(20) % 4).n_units == 4
