"""Peer witness (fairlearn 0.15 ``MetricFrame``): ``subgroup_bootstrap``'s point estimates
(``overall``, ``by_group``) and the four summaries (``difference``/``ratio``, method
``between_groups``/``to_overall``), plus ``group_min``/``group_max`` read from ``by_group``,
on edges test_subgroups.py skips: a group with one class (its metric undefined: NaN,
skipped by fairlearn's summaries), a group whose metric is 0 (ratio 0), every group 0
(ratio 0/0), a single level, a one-item group, numeric group codes, twelve groups.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fairlearn.metrics import MetricFrame
from sklearn.metrics import brier_score_loss, recall_score, roc_auc_score

from medaudit.stats import subgroup_bootstrap


def _sens(yt, yp):
    return recall_score(yt, yp >= 0.5, zero_division=np.nan)


_METRICS = {
    "brier_score": ("brier_score", brier_score_loss),
    "sensitivity": (("sensitivity", {"threshold": 0.5}), _sens),
}


def _compare(y, s, g, metric):
    spec, fn = _METRICS[metric]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = subgroup_bootstrap(y, {"m": s}, g, metrics=[spec], n_resamples=5, rng=0)
        mf = MetricFrame(metrics=fn, y_true=y, y_pred=s, sensitive_features=g)
    mid = next(iter(r.overall))[1]
    assert r.overall[("m", mid)].estimate == pytest.approx(mf.overall, abs=1e-13, nan_ok=True)
    by = {str(k): v for k, v in mf.by_group.items()}
    assert set(r.levels) == set(by)
    ours = {lv: r.by_group[("m", lv, mid)].estimate for lv in r.levels}
    for lv in r.levels:
        assert ours[lv] == pytest.approx(by[lv], abs=1e-13, nan_ok=True), lv
    for stat in ("difference", "ratio"):
        for method in ("between_groups", "to_overall"):
            got = r.summary[("m", mid, stat, method)].estimate
            want = getattr(mf, stat)(method=method)
            assert got == pytest.approx(want, abs=1e-13, nan_ok=True), (stat, method)
    finite = [v for v in ours.values() if not math.isnan(v)]
    assert min(finite) == pytest.approx(mf.group_min(), abs=1e-13)
    assert max(finite) == pytest.approx(mf.group_max(), abs=1e-13)


def _data(seed=1, n=120):
    rng = np.random.default_rng(seed)
    g = rng.choice(["A", "B", "C"], n)
    y = (rng.random(n) < 0.4).astype(int)
    return y, rng.random(n), g


@pytest.mark.parametrize("metric", list(_METRICS))
def test_group_with_one_class(metric):
    y, s, g = _data()
    y[g == "C"] = 0  # sensitivity undefined in C, Brier still defined
    _compare(y, s, g, metric)


def test_group_whose_metric_is_zero_and_all_zero():
    y, s, g = _data()
    y[g == "C"] = 0
    s0 = s.copy()
    s0[g == "A"] = 0.0  # sensitivity 0 in A: ratio between groups 0
    _compare(y, s0, g, "sensitivity")
    _compare(y, np.zeros_like(s), g, "sensitivity")  # every group 0: ratio 0/0 = nan


@pytest.mark.parametrize("kind", ["single_level", "one_item_group", "numeric_codes_12"])
def test_group_layouts(kind):
    rng = np.random.default_rng(4)
    n = 60
    y = (rng.random(n) < 0.4).astype(int)
    s = rng.random(n)
    g = {"single_level": np.array(["A"] * n),
         "one_item_group": np.r_[np.zeros(n - 1, dtype=int), [7]],
         "numeric_codes_12": rng.integers(0, 12, n)}[kind]
    _compare(y, s, g, "brier_score")


def test_auroc_by_group_where_every_group_has_both_classes():
    rng = np.random.default_rng(9)
    n = 400
    g = rng.choice(["site1", "site2", "site3", "site4"], n)
    y = (rng.random(n) < 0.3).astype(int)
    s = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y)))
    r = subgroup_bootstrap(y, {"m": s}, g, metrics=["roc_auc"], n_resamples=5, rng=0)
    mf = MetricFrame(metrics=roc_auc_score, y_true=y, y_pred=s, sensitive_features=g)
    for stat in ("difference", "ratio"):
        for method in ("between_groups", "to_overall"):
            assert r.summary[("m", "roc_auc", stat, method)].estimate == pytest.approx(
                getattr(mf, stat)(method=method), abs=1e-13)
