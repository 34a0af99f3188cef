"""Error-rate figure (paper 002 Fig. 3): drawn from error_structure.rates only.

Tested through the data on the returned axes (marker positions = the table's estimates,
error-bar extents = its intervals), not pixels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.blocks import error_structure as es
from medaudit.report._figures_agreement import build_error_rates, plot_error_rates
from tests._support import run
from tests.blocks.test_error_structure import make_ctx


@pytest.fixture(scope="module")
def rates() -> pd.DataFrame:
    return run(es, make_ctx(n_resamples=50)).tables["rates"]


def _points(ax):
    return {ln.get_label(): (ln.get_xdata(), ln.get_ydata()) for ln in ax.get_lines()
            if not ln.get_label().startswith("_")}


def test_markers_are_the_table_estimates(rates):
    fig = plot_error_rates(rates)
    assert len(fig.axes) == 2 * 3  # (fpr, fnr) x models deg, m1, m2
    ax = fig.axes[1]  # fpr, m1
    assert ax.get_title() == "m1"
    pts = _points(ax)
    sub = rates[(rates["model"] == "m1") & (rates["criterion"] == "fpr")]
    for inst in ("A", "B", "C"):
        want = sub[sub["cohort"] == inst].sort_values("negatives")["estimate"].to_numpy()
        np.testing.assert_allclose(pts[inst][1], want, rtol=0, atol=0)
        assert np.all(np.diff(pts[inst][0]) > 0)  # one x per finding, in finding order


def test_interval_extents_are_the_table_intervals(rates):
    fig = plot_error_rates(rates, model="m2", criterion="fnr")
    ax = fig.axes[0]
    segs = np.concatenate([np.asarray(c.get_segments()) for c in ax.collections])
    got = sorted(zip(np.round(segs[:, 0, 1], 12), np.round(segs[:, 1, 1], 12), strict=True))
    sub = rates[(rates["model"] == "m2") & (rates["criterion"] == "fnr")]
    want = sorted(zip(np.round(sub["ci_low"], 12), np.round(sub["ci_high"], 12), strict=True))
    assert got == want


def test_given_ax_needs_one_panel(rates):
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    assert plot_error_rates(rates, ax=ax, model="m1", criterion="fpr") is ax.figure
    assert ax.get_ylabel() == "false-positive rate"
    with pytest.raises(ValueError, match="pass model= and criterion="):
        plot_error_rates(rates, ax=Figure().add_subplot())
    with pytest.raises(ValueError, match="lacks column"):
        plot_error_rates(rates.drop(columns="ci_low"))
    with pytest.raises(ValueError, match="no rows"):
        plot_error_rates(rates, model="nobody")


def test_builder_for_the_report(rates):
    ax, title, caption = build_error_rates({"error_structure": {"rates": rates}})
    assert "error_structure.rates" in caption and "B = 50" in caption
    assert title.startswith("False-positive")
    assert build_error_rates({}) is None
