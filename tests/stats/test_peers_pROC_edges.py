"""Peer witness (R + pROC 1.18): degenerate and large inputs of the DeLong routines,
``coords(x = "best")``, partial AUC with McClish's correction and ``power.roc.test`` —
the edges the other pROC references (delong_pROC.csv, peers_pROC_data.csv) skip:

* DeLong on perfect, all-tied, inverted and identical curves (variance 0), a single
  positive (variance undefined), ties across both classes; conf.level 0.5 / 0.9 / 0.999;
  the paired test for all three alternatives;
* n = 100 000 with integer scores (heavy ties), paired and unpaired (t) tests;
* best thresholds and partial AUCs of constant, perfect, inverted and two-level curves;
* power.roc.test at AUC 0.51 / 0.55 / 0.99, kappa 0.25 / 10, sig.level 0.01 / 0.2.

Values: tests/reference/edges_pROC.csv from tests/reference/generate_peers_edges_pROC.R
(the inputs are literal in the script, the large one an integer formula rebuilt here).

Documented conventions tested as relations:
* pROC clips ``ci.auc`` to [0, 1]; medaudit does not (T12, delong_ci docstring): the
  clipped medaudit bounds equal pROC's.
* A comparison with zero variance and zero difference: medaudit reports ``z = 0, p = 1``
  for every alternative (delong_test docstring: 'A model compared with itself gives
  z = 0, p = 1'); pROC reports the one-sided p-values as Phi(0) = 0.5.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.exceptions import UndefinedMetricWarning
from medaudit.stats import (
    auc_power,
    auc_sample_size,
    best_threshold,
    delong_ci,
    delong_test,
    delong_test_unpaired,
    delong_variance,
    partial_roc_auc,
    roc_auc,
)

pytestmark = pytest.mark.r_reference

_REF = pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "edges_pROC.csv",
                   comment="#", keep_default_na=False)
REF = {(c, q): (math.nan if v == "NA" else float(v))
       for c, q, v in _REF.itertuples(index=False)}

SMALL = {
    "perfect": ([0, 0, 0, 1, 1, 1], [1, 2, 3, 4, 5, 6], [1, 3, 2, 5, 4, 6]),
    "alltied": ([0, 0, 0, 1, 1, 1], [1] * 6, [1, 2, 3, 4, 5, 6]),
    "inverted": ([0, 0, 0, 1, 1, 1], [6, 5, 4, 3, 2, 1], [2, 1, 3, 4, 6, 5]),
    "identical": ([0, 0, 1, 0, 1, 1], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]),
    "onepos": ([0, 0, 0, 0, 1], [1, 2, 3, 5, 4], [1, 2, 4, 3, 5]),
    "tiesboth": ([0, 0, 0, 0, 1, 1, 1, 1], [1, 2, 2, 3, 2, 3, 3, 4], [2, 2, 2, 2, 2, 2, 2, 3]),
}
ALT = {"two.sided": "two-sided", "greater": "greater", "less": "less"}
ZERO_VARIANCE_TIES = ("perfect", "identical")  # var = 0 and delta = 0


def same(got, want, rel=1e-9):
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return abs(got - want) <= rel * max(1.0, abs(want))


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return f(*a, **k)


@pytest.mark.parametrize("case", list(SMALL))
def test_degenerate_delong_auc_variance_and_interval(case):
    y, a, _ = SMALL[case]
    assert same(roc_auc(y, a), REF[(case, "auc_a")])
    assert same(_quiet(delong_variance, y, a), REF[(case, "var_a")])
    for lv in (0.5, 0.9, 0.999):
        r = _quiet(delong_ci, y, a, confidence_level=lv)
        clip = (lambda v: v) if math.isnan(r.ci_low) else (lambda v: min(max(v, 0.0), 1.0))
        assert same(clip(r.ci_low), REF[(case, f"ci_a_low_{lv:g}")]), lv
        assert same(clip(r.ci_high), REF[(case, f"ci_a_high_{lv:g}")]), lv


def test_unclipped_interval_is_the_documented_convention():
    y, a, _ = SMALL["identical"]
    r = delong_ci(y, a, confidence_level=0.9)
    assert r.ci_high > 1.0 and REF[("identical", "ci_a_high_0.9")] == 1.0
    half = (r.ci_high - r.ci_low) / 2
    assert r.estimate - half == pytest.approx(REF[("identical", "ci_a_low_0.9")], abs=1e-12)


@pytest.mark.parametrize("alt", list(ALT))
@pytest.mark.parametrize("case", list(SMALL))
def test_degenerate_paired_delong(case, alt):
    y, a, b = SMALL[case]
    t = _quiet(delong_test, y, a, b, alternative=ALT[alt])
    assert same(t.statistic, REF[(case, f"paired_z_{alt}")])
    if alt == "two.sided":
        assert same(t.ci_low, REF[(case, "paired_ci_low")])
        assert same(t.ci_high, REF[(case, "paired_ci_high")])
    want = REF[(case, f"paired_p_{alt}")]
    if case in ZERO_VARIANCE_TIES and alt != "two.sided":
        # documented: z = 0, p = 1 for every alternative; pROC: Phi(0) = 0.5
        assert t.statistic == 0.0 and t.pvalue == 1.0 and want == 0.5
    else:
        assert same(t.pvalue, want)


def _large():
    n = 100_000
    i = np.arange(1, n + 1, dtype=np.int64)
    y = (((i * 7919) % 10) < 3).astype(int)
    a = ((i * 104729) % 1009) + 250 * y
    b = ((i * 7907) % 997) + 150 * y + ((i * 31) % 200)
    return i, y, a.astype(float), b.astype(float)


def test_large_n_delong_with_ties():
    i, y, a, b = _large()
    assert same(roc_auc(y, a), REF[("large", "auc_a")], 1e-12)
    assert same(roc_auc(y, b), REF[("large", "auc_b")], 1e-12)
    assert same(delong_variance(y, a), REF[("large", "var_a")], 1e-9)
    assert same(delong_variance(y, b), REF[("large", "var_b")], 1e-9)
    r = delong_ci(y, a)
    assert same(r.ci_low, REF[("large", "ci_a_low_0.95")], 1e-12)
    assert same(r.ci_high, REF[("large", "ci_a_high_0.95")], 1e-12)
    t = delong_test(y, a, b)
    assert same(t.statistic, REF[("large", "paired_z_two.sided")], 1e-9)
    assert same(t.pvalue, REF[("large", "paired_p_two.sided")], 1e-6)  # p ~ 1e-215
    assert same(t.ci_low, REF[("large", "paired_ci_low")], 1e-9)
    assert same(t.ci_high, REF[("large", "paired_ci_high")], 1e-9)
    h = i <= i.size // 2
    u = delong_test_unpaired(y[h], a[h], y[~h], b[~h], distribution="t")
    assert same(u.statistic, REF[("large", "unpaired_d")], 1e-9)
    assert same(u.df, REF[("large", "unpaired_df")], 1e-9)
    assert same(u.pvalue, REF[("large", "unpaired_p")], 1e-6)


CURVES = {
    "constant": ([0, 0, 1, 1, 1], [5] * 5),
    "perfect": ([0, 0, 0, 1, 1], [1, 2, 3, 4, 5]),
    "inverted": ([0, 0, 0, 1, 1], [5, 4, 3, 2, 1]),
    "twolevel": ([0, 0, 1, 1, 0, 1], [0, 0, 0, 1, 1, 1]),
}


@pytest.mark.parametrize("weights", [(1, 0.5), (3, 0.1)])
@pytest.mark.parametrize("method", ["youden", "closest.topleft"])
@pytest.mark.parametrize("case", list(CURVES))
def test_best_threshold_on_degenerate_curves(case, method, weights):
    y, s = CURVES[case]
    cp = best_threshold(y, s, method=method.replace(".", "_"), weights=weights)
    key = f"best_{method}_{weights[0]:g}_{weights[1]:g}"
    assert len(cp.tied_thresholds) == REF[(case, key + "_n_tied")]
    assert same(cp.threshold_midpoint, REF[(case, key + "_threshold")])
    assert same(cp.sensitivity, REF[(case, key + "_sensitivity")])
    assert same(cp.specificity, REF[(case, key + "_specificity")])


@pytest.mark.parametrize("focus", ["specificity", "sensitivity"])
@pytest.mark.parametrize("bounds", [(0.8, 1.0), (0.5, 0.9)])
@pytest.mark.parametrize("case", list(CURVES))
def test_partial_auc_on_degenerate_curves(case, bounds, focus):
    y, s = CURVES[case]
    key = f"pauc_{focus}_{bounds[0]:g}_{bounds[1]:g}"
    assert same(partial_roc_auc(y, s, bounds=bounds, focus=focus), REF[(case, key + "_raw")],
                1e-12)
    assert same(partial_roc_auc(y, s, bounds=bounds, focus=focus, correct=True),
                REF[(case, key + "_mcclish")], 1e-12)


@pytest.mark.parametrize("sig", [0.01, 0.2])
@pytest.mark.parametrize("kappa", [0.25, 10])
@pytest.mark.parametrize("auc", [0.51, 0.55, 0.99])
def test_power_roc_test_extremes(auc, kappa, sig):
    key = f"auc{auc:g}_kappa{kappa:g}_sig{sig:g}"
    s = auc_sample_size(auc, alpha=sig, power=0.99, kappa=kappa)
    assert same(s.n_pos_exact, REF[("power", key + "_ncases")], 1e-10)
    assert s.n_pos == math.ceil(REF[("power", key + "_ncases")])
    got = auc_power(auc, n_pos=5, n_neg=5 * kappa, alpha=sig)
    assert same(got, REF[("power", key + "_power_n5")], 1e-8)


@pytest.mark.parametrize("case", list(SMALL))
def test_degenerate_unpaired_delong(case):
    """Agreement where the variance is positive; where it is 0 pROC's 0/0 gives NaN and
    medaudit's documented rule gives D = 0, p = 1 (equal AUCs) or D = +-inf, p = 0."""
    y, a, b = SMALL[case]
    u = _quiet(delong_test_unpaired, y, a, y, b, distribution="t")
    d, df, p = (REF[(case, f"unpaired_{k}")] for k in ("d", "df", "p"))
    if case == "onepos":  # variance undefined: NaN in both
        assert math.isnan(u.statistic) and math.isnan(u.pvalue) and math.isnan(p)
    elif u.variance > 0:
        assert same(u.statistic, d) and same(u.df, df) and same(u.pvalue, p)
    elif u.estimate == 0:  # perfect vs perfect: pROC D = 0/0
        assert math.isnan(d) and (u.statistic, u.pvalue) == (0.0, 1.0)
    else:  # a difference with zero variance: both say D = -inf, pROC has no df / p
        assert u.statistic == d == -math.inf
        assert math.isnan(p) and u.pvalue == 0.0
