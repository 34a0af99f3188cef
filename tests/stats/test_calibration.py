"""Calibration metrics (methods.md M0.7): the bin rule, ECE and reliability diagrams.

Witnesses: the slow oracles of ``tests/_oracles.py`` (pure-Python bin rule), the bin edges
checked exactly for every k/n, n = 2..50, and torchmetrics' ``binary_calibration_error``
for the ``"linspace"`` rule (the anchors' netcal/torchmetrics convention, trap T3/T4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import bootstrap_metrics, ece, reliability_diagram
from tests import _oracles as O

NS = range(2, 51)


# ------------------------------------------------------------------- the bin rule, exactly
@pytest.mark.parametrize("n", NS)
def test_every_edge_k_over_n_under_both_rules(n):
    x = np.array([k / n for k in range(n + 1)])  # the doubles a user types as k/n
    floor, lin = K.bin_index(x, n, "floor"), K.bin_index(x, n, "linspace")
    edges = np.linspace(0, 1, n + 1)
    assert edges.tolist() == O.linspace_edges(n)  # the oracle's edges are numpy's
    for k, v in enumerate(x.tolist()):
        assert floor[k] == O.bin_of(v, n, "floor") == min(math.floor(n * v), n - 1)
        assert lin[k] == O.bin_of(v, n, "linspace")
        if k < n:
            # floor: the double k/n lands in bin k or, where n * (k/n) rounds below k, k - 1
            assert floor[k] in (k - 1, k)
            # linspace: the bin whose float64 edges bracket the value
            assert edges[lin[k]] <= v < edges[lin[k] + 1]
        else:  # 1.0: the last bin (floor), a bin of its own (linspace, torchmetrics)
            assert (floor[k], lin[k]) == (n - 1, n)


def test_the_rules_differ_where_the_anchors_say():
    def differing(n):
        x = np.array([k / n for k in range(n)])
        return [k for k in range(n) if K.bin_index(x, n)[k] != K.bin_index(x, n, "linspace")[k]]
    assert differing(10) == [3, 6, 7]
    assert len(differing(20)) == 7
    assert differing(15) == []  # the 15-bin default is not affected


def test_anchor_example_both_rules():
    y, s = [1, 0, 0], [0.3, 0.3, 0.25]
    assert ece(y, s, n_bins=10) == pytest.approx((0.4 + 0.25) / 3, rel=1e-12)  # 0.2167
    assert ece(y, s, n_bins=10, binning="linspace") == pytest.approx(0.05, rel=1e-12)


@pytest.mark.parametrize("binning", ["floor", "linspace"])
@pytest.mark.parametrize("n_bins", [2, 7, 10, 15, 20])
def test_ece_matches_the_oracle_on_edge_values(binning, n_bins):
    rng = np.random.default_rng(n_bins)
    grid = np.r_[np.arange(n_bins + 1) / n_bins, rng.random(30)]
    s = rng.choice(grid, 80)
    y = (rng.random(80) < s).astype(float)
    assert ece(y, s, n_bins=n_bins, binning=binning) == pytest.approx(
        O.ece(y, s, n_bins, binning=binning), rel=1e-12, abs=1e-15)
    assert ece(y, s, n_bins=n_bins, binning=binning, prevalence=0.3) == pytest.approx(
        O.ece(y, s, n_bins, 0.3, binning=binning), rel=1e-12, abs=1e-15)


def test_linspace_rule_reproduces_torchmetrics():
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.functional.classification")
    rng = np.random.default_rng(5)

    def theirs(y, s, n):
        return float(tm.binary_calibration_error(torch.tensor(s, dtype=torch.float64),
                                                 torch.tensor(y, dtype=torch.int64),
                                                 n_bins=n, norm="l1"))
    assert theirs([1, 0, 0], [0.3, 0.3, 0.25], 10) == pytest.approx(0.05, rel=1e-12)
    for n in (2, 4, 8, 10, 15, 16, 32):
        s = rng.random(200)
        s[:5] = [0.0, 1.0, 1.0, 0.5, 0.25]
        if n in (2, 4, 8, 16, 32):  # torch.linspace gives numpy's edges exactly here
            s[5:5 + n + 1] = np.arange(n + 1) / n
        y = (rng.random(200) < s).astype(int)
        assert ece(y, s, n_bins=n, binning="linspace") == pytest.approx(theirs(y, s, n),
                                                                        rel=1e-12, abs=1e-15)


def test_reliability_diagram_uses_the_same_rule():
    y, s = [1, 0, 0, 1], [0.3, 0.3, 0.25, 1.0]
    rf = reliability_diagram(y, s, n_bins=10)
    rl = reliability_diagram(y, s, n_bins=10, binning="linspace")
    assert rf.bin_index.tolist() == [2, 3, 9]
    assert rl.bin_index.tolist() == [2, 10]  # 1.0 in its own bin
    assert rl.bin_low.tolist() == [0.2, 1.0] and rl.bin_high.tolist()[1] == 1.0
    assert rl.count.tolist() == [3, 1]


def test_bootstrap_ece_takes_the_rule():
    y, s = np.array([1, 0, 0, 1, 0, 1.0]), np.array([0.3, 0.3, 0.25, 0.7, 0.6, 0.9])
    r = bootstrap_metrics(y, s, metrics=[("ece", {"n_bins": 10, "binning": "linspace"}), "ece"],
                          n_resamples=20, rng=1, design="within_label")
    assert r["ece[binning=linspace,n_bins=10]"].estimate == pytest.approx(
        ece(y, s, n_bins=10, binning="linspace"), rel=1e-12)
    with pytest.raises(MedauditError, match="binning"):
        ece(y, s, binning="edges")
