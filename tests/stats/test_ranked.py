"""Witnesses for medaudit.stats._ranked: counts drawn straight into rank order are the
counts of the ordinary draw, gathered into that order (the same replicates, no gather),
for every design; and the small validators it holds.
"""

from __future__ import annotations

import numpy as np
import pytest

from medaudit.exceptions import MedauditError
from medaudit.stats import _ranked as R
from medaudit.stats.designs import make_plan


def _data(n=37, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(float)
    y[:2] = (1.0, 0.0)
    s = np.round(rng.normal(size=n) + y, 1)  # ties, so the rank order is the stable one
    cluster = rng.integers(0, 9, n)
    strata = cluster % 3  # whole clusters in each stratum
    return y, s, cluster, strata


@pytest.mark.parametrize(("design", "extra"), [
    ("ordinary", ()), ("within_label", ()), ("ordinary", ("strata",)), ("cluster", ("cluster",)),
    ("cluster", ("cluster", "strata"))])
@pytest.mark.parametrize("batch", [None, 7])
def test_ranked_batches_are_the_ordinary_draw_gathered(design, extra, batch):
    y, s, cluster, strata = _data()
    kw = {k: {"cluster": cluster, "strata": strata}[k] for k in extra}
    plan = R.bootstrap_plan(design, y, **kw)
    order = R.ranked(y, s).order
    got = np.vstack(list(R.ranked_batches(plan, order, 50, np.random.default_rng(5), batch)))
    plain = np.vstack(list(make_plan(design, y, **kw).batches(50, np.random.default_rng(5), batch)))
    np.testing.assert_array_equal(got, plain[:, order])
    assert got.shape == (50, y.size)


def test_columns_batches_count_each_item_into_its_column_and_refuse_clusters():
    y, _, cluster, _ = _data()
    position = np.random.default_rng(1).permutation(y.size)
    plan = R.bootstrap_plan("ordinary", y)
    got = np.vstack(list(R.columns_batches(plan, position, 20, np.random.default_rng(2), None)))
    plain = np.vstack(list(plan.batches(20, np.random.default_rng(2))))
    want = np.empty_like(plain)
    want[:, position] = plain
    np.testing.assert_array_equal(got, want)
    assert R.columns_batches(R.bootstrap_plan("cluster", y, cluster=cluster), position, 20,
                             np.random.default_rng(2), None) is None


def test_ranked_is_the_stable_descending_order():
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    s = np.array([0.5, 0.9, 0.5, 0.1, 0.7])
    r = R.ranked(y, s)
    assert r.order.tolist() == [1, 4, 0, 2, 3]  # ties (items 0 and 2) keep input order
    assert r.label.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0] and r.has_ties


def test_shared_positive_is_sent_to_its_own_function():
    with pytest.raises(MedauditError, match="shared_positive_bootstrap"):
        R.bootstrap_plan("shared_positive", np.array([1.0, 0.0]))


def test_sample_weights_default_to_ones_and_are_checked():
    np.testing.assert_array_equal(R.sample_weights(None, 3), np.ones(3))
    np.testing.assert_array_equal(R.sample_weights([0, 2, 0.5], 3), [0.0, 2.0, 0.5])
    with pytest.raises(MedauditError, match="non-negative; found -1.0"):
        R.sample_weights([1, -1, 0], 3)
    with pytest.raises(MedauditError, match="sample_weight"):
        R.sample_weights([1, 1], 3)
