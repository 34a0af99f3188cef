"""Partial AUC (pROC ``partial.auc``), its engine metric ``pauc[...]`` and its bootstrap.

Witnesses: pROC 1.18 ``auc(partial.auc, partial.auc.focus, partial.auc.correct)`` on six
data sets (tests/reference/pauc_pROC.csv, generate_peers_pROC.R); scikit-learn's
``roc_auc_score(max_fpr=, sample_weight=)``; a segment-by-segment oracle
(tests/stats/_oracles_peers.py); hand-worked curves; replicates against the point
function on materialised resamples; invariances under hypothesis.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import (
    bootstrap_ci,
    paired_bootstrap,
    partial_roc_auc,
    partial_roc_auc_ci,
    pauc_metric,
    roc_auc,
)
from medaudit.stats.designs import make_plan
from tests.stats import _oracles_peers as O

REF = Path(__file__).resolve().parents[1] / "reference"
DATA = pd.read_csv(REF / "peers_pROC_data.csv", comment="#")
PAUC = pd.read_csv(REF / "pauc_pROC.csv", comment="#")

Y8 = [0, 0, 0, 0, 1, 1, 1, 1]
S8 = [.1, .2, .3, .6, .4, .7, .8, .9]


def _inputs(name, curve):
    d = DATA[DATA.dataset == name].sort_values("item")
    return d.y_true.to_numpy(float), d[f"score_{curve}"].to_numpy(float)


@pytest.mark.r_reference
@pytest.mark.parametrize("row", list(PAUC.itertuples(index=False)), ids=lambda r: (
    f"{r.dataset}-{r.curve}-{r.focus}-{r.lo}:{r.hi}-{'corr' if r.correct else 'raw'}"))
def test_matches_pROC(row):
    y, s = _inputs(row.dataset, row.curve)
    got = partial_roc_auc(y, s, bounds=(row.lo, row.hi), focus=row.focus,
                          correct=bool(row.correct))
    np.testing.assert_allclose(got, row.pauc, rtol=1e-12, atol=1e-15)


def test_pROC_reference_covers_both_corrections_and_below_diagonal_cases():
    assert set(PAUC.correct) == {0, 1} and set(PAUC.focus) == {"specificity", "sensitivity"}
    assert PAUC.below_diagonal.sum() > 0  # McClish's formula below 0.5 is compared too


def test_hand_worked_curve():
    # ROC: TPR rises to 3/4 at FPR 0, then the negative at .6, the positive at .4, ...
    assert partial_roc_auc(Y8, S8, bounds=(0.75, 1)) == 0.1875  # 1/4 x 3/4
    assert partial_roc_auc(Y8, S8, bounds=(0.5, 1)) == 0.1875 + 0.25  # Se = 1 over [.5, .75]
    # McClish: min = (1/4)(1 - 7/8) = 1/32, max = 1/4 -> (1 + (3/16 - 1/32)/(7/32)) / 2 = 6/7
    assert partial_roc_auc(Y8, S8, bounds=(0.75, 1), correct=True) == pytest.approx(6 / 7, rel=1e-15)
    # sensitivity focus over Se in [0.75, 1]: Sp = 1 up to Se 3/4, then 3/4 on [3/4, 1]
    assert partial_roc_auc(Y8, S8, bounds=(0.75, 1), focus="sensitivity") == 0.1875


def test_tied_block_is_a_diagonal():
    # one positive and one negative tied: the segment from (0, 0) to (1, 1) is diagonal
    y, s = [0, 1], [0.5, 0.5]
    assert partial_roc_auc(y, s, bounds=(0.5, 1)) == pytest.approx(0.125, rel=1e-15)
    assert partial_roc_auc(y, s, bounds=(0.5, 1), correct=True) == pytest.approx(0.5, rel=1e-15)


@pytest.mark.parametrize("seed", range(40))
def test_sklearn_max_fpr_and_weights(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 80))
    y = (rng.random(n) < 0.4).astype(float)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=n) + y, int(rng.integers(0, 3)))
    w = rng.integers(1, 4, size=n).astype(float) if seed % 2 else None
    m = float(rng.uniform(0.02, 0.99))
    got = partial_roc_auc(y, s, bounds=(1 - m, 1), correct=True, sample_weight=w)
    np.testing.assert_allclose(got, roc_auc_score(y, s, max_fpr=m, sample_weight=w),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("focus", ["specificity", "sensitivity"])
def test_segment_oracle(seed, focus):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(4, 40))
    y = (rng.random(n) < 0.5).astype(float)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=n), 1)
    lo, hi = np.sort(rng.uniform(0, 1, 2))
    for correct in (False, True):
        got = partial_roc_auc(y, s, bounds=(lo, hi), focus=focus, correct=correct)
        want = O.partial_auc(y, s, lo, hi, focus=focus, correct=correct)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-14)


scores = st.lists(st.integers(0, 6), min_size=4, max_size=30)


@given(scores, st.lists(st.booleans(), min_size=4, max_size=30),
       st.floats(0.0, 0.95), st.floats(0.05, 1.0))
def test_properties(svals, labels, a, width):
    n = min(len(svals), len(labels))
    y = np.array(labels[:n], dtype=float)
    y[:2] = [0, 1]
    s = np.array(svals[:n], dtype=float)
    lo, hi = a, min(1.0, a + width)
    if hi <= lo:
        return
    base = partial_roc_auc(y, s, bounds=(lo, hi))
    # strictly increasing transforms leave it unchanged
    assert partial_roc_auc(y, np.exp(s / 3.0), bounds=(lo, hi)) == pytest.approx(base, abs=1e-12)
    # additivity over adjacent ranges, and the whole range is the AUROC
    mid = (lo + hi) / 2
    parts = partial_roc_auc(y, s, bounds=(lo, mid)) + partial_roc_auc(y, s, bounds=(mid, hi))
    assert parts == pytest.approx(base, abs=1e-12)
    assert partial_roc_auc(y, s, bounds=(0, 1)) == pytest.approx(roc_auc(y, s), abs=1e-12)
    assert partial_roc_auc(y, s, bounds=(0, 1), focus="sensitivity") == pytest.approx(
        roc_auc(y, s), abs=1e-12)
    # bounded by the strip width
    assert -1e-12 <= base <= hi - lo + 1e-12
    # integer weights equal repeated rows
    w = (np.arange(n) % 3 + 1).astype(float)
    rep = partial_roc_auc(np.repeat(y, w.astype(int)), np.repeat(s, w.astype(int)), bounds=(lo, hi))
    assert partial_roc_auc(y, s, bounds=(lo, hi), sample_weight=w) == pytest.approx(rep, abs=1e-12)


def test_engine_replicates_equal_point_function_on_materialised_resamples():
    rng = np.random.default_rng(5)
    n = 60
    y = (rng.random(n) < 0.4).astype(float)
    s = np.round(rng.normal(size=n) + y, 1)
    for focus, short in (("specificity", "sp"), ("sensitivity", "se")):
        for correct in (False, True):
            res = partial_roc_auc_ci(y, s, bounds=(0.8, 1), focus=focus, correct=correct,
                                     design="ordinary", n_resamples=40, rng=11, batch=7)
            draws = np.concatenate(list(make_plan("ordinary", y).batches(
                40, np.random.default_rng(11), 7)))
            for b in range(40):
                yb, sb = O.materialise(y, s, draws[b])
                if yb.min() == yb.max():
                    assert np.isnan(res.replicates[b])
                    continue
                want = O.partial_auc(yb, sb, 0.8, 1.0, focus=focus, correct=correct)
                np.testing.assert_allclose(res.replicates[b], want, rtol=1e-11, atol=1e-14)
            eng = bootstrap_ci(y, s, metric=("pauc", {short: "0.8:1", **(
                {"correct": True} if correct else {})}), design="ordinary", n_resamples=40,
                rng=11, batch=13)
            np.testing.assert_array_equal(eng.replicates, res.replicates)  # same draws, same values
            assert eng.metric == res.metric


def test_large_sample_prefix_path_equals_full_curve():
    # at n = 4000 the kernel reads only the top of the ranking; compare with a full evaluation
    rng = np.random.default_rng(8)
    n = 4000
    y = (rng.random(n) < 0.3).astype(float)
    s = rng.normal(size=n) + y
    res = partial_roc_auc_ci(y, s, bounds=(0.9, 1), n_resamples=30, rng=2)
    draws = np.concatenate(list(make_plan("within_label", y).batches(30, np.random.default_rng(2))))
    for b in range(0, 30, 7):
        got = partial_roc_auc(y, s, bounds=(0.9, 1), sample_weight=draws[b])
        np.testing.assert_allclose(res.replicates[b], got, rtol=1e-12)


def test_fixed_seed_regression_and_determinism():
    y = np.array(Y8 * 3, dtype=float)
    s = np.array(S8, dtype=float)[np.arange(24) % 8] + np.repeat([0.0, 0.01, 0.02], 8)
    a = partial_roc_auc_ci(y, s, bounds=(0.8, 1), n_resamples=500, rng=2026)
    b = partial_roc_auc_ci(y, s, bounds=(0.8, 1), n_resamples=500, rng=2026, batch=17)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert (a.metric, a.design, a.n_resamples, a.seed) == ("pauc[sp=0.8:1]", "within_label", 500,
                                                           2026)
    assert a.estimate == partial_roc_auc(y, s, bounds=(0.8, 1))
    assert a.ci_low <= a.estimate <= a.ci_high


def test_paired_differences_through_the_engine():
    rng = np.random.default_rng(3)
    n = 300
    y = (rng.random(n) < 0.4).astype(float)
    a = rng.normal(size=n) + 1.2 * y
    b = a + rng.normal(scale=0.7, size=n)
    r = paired_bootstrap(y, {"a": a, "b": b}, metrics=[pauc_metric((0.9, 1))],
                         design="within_label", n_resamples=300, rng=4)
    d = r.differences[("a", "b", "pauc[sp=0.9:1]")]
    assert d.estimate == pytest.approx(partial_roc_auc(y, a) - partial_roc_auc(y, b), abs=1e-15)
    ma, mb = r.marginal[("a", "pauc[sp=0.9:1]")], r.marginal[("b", "pauc[sp=0.9:1]")]
    np.testing.assert_allclose(d.replicates, ma.replicates - mb.replicates, rtol=0, atol=0)


def test_bca_goes_through_the_engine():
    r = partial_roc_auc_ci(Y8 * 2, S8 * 2, bounds=(0.5, 1), n_resamples=100, rng=1,
                           ci_method="bca")
    assert r.ci_method == "bca" and r.metric == "pauc[sp=0.5:1]"


def test_ids_and_errors():
    assert pauc_metric("0.9:1") == ("pauc", {"sp": "0.9:1"})
    assert pauc_metric((1, 0.85), focus="sensitivity", correct=True) == (
        "pauc", {"se": "0.85:1", "correct": True})
    for bad in ("0.9", (0.5, 0.5), (-0.1, 1), "a:b", (0.2, 1.2)):
        with pytest.raises(MedauditError, match="bounds"):
            partial_roc_auc(Y8, S8, bounds=bad)
    with pytest.raises(MedauditError, match="focus"):
        partial_roc_auc(Y8, S8, focus="spec")
    with pytest.raises(MedauditError, match="exactly one range"):
        bootstrap_ci(Y8, S8, metric=("pauc", {}), n_resamples=5)
    with pytest.raises(MedauditError, match="exactly one range"):
        bootstrap_ci(Y8, S8, metric=("pauc", {"sp": "0.9:1", "se": "0.9:1"}), n_resamples=5)
    with pytest.raises(MedauditError, match="correct"):
        bootstrap_ci(Y8, S8, metric=("pauc", {"sp": "0.9:1", "correct": "yes"}), n_resamples=5)


def test_one_class_is_nan_with_a_warning():
    with pytest.warns(UndefinedMetricWarning, match="no positives"):
        assert np.isnan(partial_roc_auc([0, 0, 0], [0.1, 0.2, 0.3]))
