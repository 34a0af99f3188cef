"""medaudit.stats.subgroups: per-group metrics and fairlearn's summaries (witness:
fairlearn's MetricFrame on the same data), and the bootstrap p-value by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.exceptions import MedauditError
from medaudit.stats.subgroups import bootstrap_pvalue, subgroup_bootstrap


def _data(seed=2):
    rng = np.random.default_rng(seed)
    n = 300
    g = rng.choice(["F", "M", "X"], n, p=[0.45, 0.45, 0.1])
    y = (rng.random(n) < 0.4).astype(int)
    s = 1 / (1 + np.exp(-(rng.normal(size=n) + y * np.where(g == "X", 0.5, 1.5))))
    return y, s, g


@pytest.mark.parametrize("metric, fn", [("roc_auc", roc_auc_score),
                                        ("average_precision", average_precision_score)])
def test_point_estimates_are_fairlearns(metric, fn):
    y, s, g = _data()
    r = subgroup_bootstrap(y, {"m": s}, g, metrics=[metric], n_resamples=20, rng=0)
    mf = MetricFrame(metrics=fn, y_true=y, y_pred=s, sensitive_features=g)
    for lv in ("F", "M", "X"):
        assert r.by_group[("m", lv, metric)].estimate == pytest.approx(mf.by_group[lv], abs=1e-12)
    assert r.overall[("m", metric)].estimate == pytest.approx(mf.overall, abs=1e-12)
    for method in ("between_groups", "to_overall"):
        assert r.summary[("m", metric, "difference", method)].estimate == pytest.approx(
            mf.difference(method=method), abs=1e-12)
        assert r.summary[("m", metric, "ratio", method)].estimate == pytest.approx(
            mf.ratio(method=method), abs=1e-12)


def test_bootstrap_pvalue_by_hand():
    # 9 finite replicates, 2 at or below 0 and 7 at or above: p = 2 (1 + 2) / 10
    reps = [-0.2, 0.0, 0.1, 0.2, 0.3, 0.1, 0.4, 0.5, 0.6, np.nan]
    assert bootstrap_pvalue(reps) == pytest.approx(0.6)
    assert bootstrap_pvalue([1.0, 2.0, 3.0]) == pytest.approx(0.5)  # 2 (1 + 0) / 4
    assert np.isnan(bootstrap_pvalue([np.nan]))


def test_a_missing_level_is_refused():
    y, s, g = _data()
    g = g.astype(object)
    g[5] = None
    with pytest.raises(MedauditError, match="missing level"):
        subgroup_bootstrap(y, {"m": s}, g, n_resamples=10, rng=0)


@pytest.mark.parametrize("mixed", [[1, "1"], [1, 1.0], [True, 1], ["a", 2.5]])
def test_levels_of_mixed_kinds_are_refused(mixed):
    # levels are named by their text: 1 and "1" would merge into one group (pandas keeps
    # two), 1 and 1.0 would split into two (one value to pandas); neither is guessed
    y, s, _ = _data()
    g = np.array([mixed[i % 2] for i in range(y.size)], dtype=object)
    with pytest.raises(MedauditError, match="mixes kinds of level"):
        subgroup_bootstrap(y, {"m": s}, g, n_resamples=10, rng=0)
    with pytest.raises(MedauditError, match="mixes kinds of level"):
        subgroup_bootstrap(y, {"m": s}, list(g), n_resamples=10, rng=0)


def test_levels_of_one_kind_are_the_groups_pandas_sees():
    y, s, _ = _data()
    for g in (np.arange(y.size) % 3, pd.Series(np.arange(y.size) % 3).astype("category"),
              pd.array(["a", "b", "c"] * (y.size // 3), dtype="string")):
        r = subgroup_bootstrap(y, {"m": s}, g, metrics=["roc_auc"], n_resamples=10, rng=0)
        assert len(r.levels) == pd.Series(np.asarray(g, dtype=object)).nunique() == 3
