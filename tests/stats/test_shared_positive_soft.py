"""Soft labels in the shared-positive bootstrap (issue 4 item 2; paper 000 M0.10 x paper 001).

Witnesses:
* the draws are reproduced by hand from the documented protocol (one uniform per item,
  row by row; positives resampled within themselves once per replicate, each declared
  group within itself), with strata from the membership, never from ``p > 0.5``;
* every replicate equals the soft metric recomputed on the materialised resample of
  ``P ∪ G`` by the double-sum oracles of tests/_oracles.py and by scikit-learn on the data
  duplicated into a positive copy of weight p and a negative copy of weight 1 - p (anchors
  T9), after breaking tied scores in input order (the stable convention; sklearn pools
  ties, and a resample's copies of one item are always tied);
* with 0/1 soft labels the soft replicates equal the ordinary ones exactly (same draws);
* adding soft metrics to a call leaves the ordinary results bit-for-bit unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.exceptions import MedauditError
from medaudit.stats import shared_positive_bootstrap
from tests import _oracles as O

SOFT = ["soft_roc_auc", "soft_average_precision"]
# the defaults: strict s-AUROC and s-AP with the own label known (paper 001 Table 4)
ORACLE = {"soft_roc_auc": O.soft_auroc_strict, "soft_average_precision": O.soft_ap_known_self}


def hand_weights(sizes: list[int], n_resamples: int, seed: int) -> np.ndarray:
    """Replicate counts drawn by hand: items laid out stratum by stratum (P, G1, G2, ...);
    each item's slot takes one uniform u and draws item ``offset + floor(u * size)`` of its
    own stratum (the engine scales by 1 - 2**-52 so that u * size < size)."""
    n = sum(sizes)
    u = np.random.default_rng(seed).random((n_resamples, n))
    offset = np.repeat(np.cumsum([0] + sizes[:-1]), sizes)
    size = np.repeat(sizes, sizes)
    k = offset + np.floor(u * (size * (1.0 - 2.0**-52))).astype(int)
    return np.array([np.bincount(row, minlength=n) for row in k])


def untie(s):
    """Scores with ties broken in input order (earlier = higher), the order kept otherwise."""
    order = sorted(range(len(s)), key=lambda k: (-s[k], k))
    out = np.empty(len(s))
    out[order] = np.arange(len(s), 0, -1)
    return out


def t9_auroc(p, s):
    """Strict s-AUROC (the default) from sklearn on duplicated data: the trapezoid less half
    the self pairs (T9; the inclusive form adds them)."""
    n = p.size
    trap = roc_auc_score(np.r_[np.ones(n), np.zeros(n)], np.r_[s, s], sample_weight=np.r_[p, 1 - p])
    return trap - 0.5 * np.sum(p * (1 - p)) / (p.sum() * (1 - p).sum())


def t9_ap(p, s):
    """s-AP with the own label known (the default) from sklearn on duplicated data, which
    gives Definition 2.2, plus each item's self-term p_i (1 - p_i) / rank_i (untied s)."""
    n = p.size
    written = average_precision_score(np.r_[np.ones(n), np.zeros(n)], np.r_[s, s],
                                      sample_weight=np.r_[p, 1 - p])
    o = np.argsort(-s, kind="stable")
    return written + np.sum(p[o] * (1 - p[o]) / np.arange(1, n + 1)) / p.sum()


def data(seed: int = 3, tied: bool = True):
    """Positives and three control groups; soft labels straddle 0.5 against membership."""
    rng = np.random.default_rng(seed)
    sizes = {"pos": 9, "healthy": 11, "sick": 8, "tumor": 6}
    r = (lambda x: np.round(x, 1)) if tied else (lambda x: x)
    pos = r(0.3 + 0.7 * rng.random(sizes["pos"]))
    neg = {g: r(rng.random(k) * (0.6 + 0.2 * i)) for i, (g, k) in enumerate(list(sizes.items())[1:])}
    p_pos = rng.choice([1.0, 0.9, 0.6, 0.2], sizes["pos"])
    p_neg = {g: rng.choice([0.0, 0.1, 0.4, 0.8], v.size) for g, v in neg.items()}
    p_pos[0], p_neg["healthy"][0] = 0.2, 0.8  # certain disagreement with the membership
    return pos, neg, p_pos, p_neg


# ----------------------------------------------------------------------------- replicates
@pytest.mark.parametrize("tied", [True, False])
def test_soft_replicates_equal_oracles_on_hand_drawn_resamples(tied):
    pos, neg, p_pos, p_neg = data(tied=tied)
    n_res, seed = 30, 2026
    r = shared_positive_bootstrap(pos, neg, metrics=SOFT, p_true_pos=p_pos, p_true_negatives=p_neg,
                                  n_resamples=n_res, rng=seed)
    s = np.concatenate([pos, *neg.values()])
    p = np.concatenate([p_pos, *p_neg.values()])
    stratum = np.repeat(np.arange(4), [pos.size, *(v.size for v in neg.values())])
    W = hand_weights([pos.size, *(v.size for v in neg.values())], n_res, seed)
    # membership strata are kept: the positive count and every group size, in every replicate
    for k, size in enumerate([pos.size, *(v.size for v in neg.values())]):
        np.testing.assert_array_equal(W[:, stratum == k].sum(axis=1), size)
    expected = {}
    for g_i, g in enumerate(neg, start=1):
        keep = (stratum == 0) | (stratum == g_i)
        idxs = [np.repeat(np.arange(s.size), w * keep) for w in W]  # copies adjacent, P first
        for mid, fn in ORACLE.items():
            expected[g, mid] = np.array([fn(p[i], s[i]) for i in idxs])
            m = r.marginal[(g, mid)]
            np.testing.assert_allclose(m.replicates, expected[g, mid], rtol=1e-12, atol=1e-15,
                                       err_msg=f"{g} {mid}")
            assert m.estimate == pytest.approx(fn(p[keep], s[keep]), rel=1e-12)
            assert m.design == "shared_positive" and m.n_resamples == n_res and m.seed == seed
            assert m.n == keep.sum()
            assert m.n_pos == pytest.approx(p[keep].sum(), rel=1e-12)  # soft mass, documented
            assert m.n_neg == pytest.approx(keep.sum() - p[keep].sum(), rel=1e-12)
        # sklearn on the duplicated data set (T9), replicate by replicate, after breaking
        # ties in input order (the stable convention; sklearn would pool them)
        for i, v_auc, v_ap in zip(idxs, expected[g, "soft_roc_auc"],
                                  expected[g, "soft_average_precision"], strict=True):
            assert v_auc == pytest.approx(t9_auroc(p[i], untie(s[i])), rel=1e-9)
            assert v_ap == pytest.approx(t9_ap(p[i], untie(s[i])), rel=1e-9)
    for (a, b, mid), d in r.differences.items():
        np.testing.assert_allclose(d.replicates, expected[a, mid] - expected[b, mid], rtol=1e-12,
                                   atol=1e-14, err_msg=f"{a}-{b} {mid}")
        assert d.estimate == pytest.approx(r.marginal[(a, mid)].estimate
                                           - r.marginal[(b, mid)].estimate, rel=1e-12, abs=1e-15)
    assert set(r.differences) == {(a, b, m) for a, b in [("healthy", "sick"), ("healthy", "tumor"),
                                                         ("sick", "tumor")] for m in SOFT}


def test_soft_and_ordinary_metrics_share_one_draw_and_ordinary_results_are_unchanged():
    pos, neg, p_pos, p_neg = data(seed=8)
    kw = dict(contrasts=[("sick", "healthy"), ("tumor", "healthy")], n_resamples=60, rng=11)
    hard = ["roc_auc", "average_precision", "aurc"]
    alone = shared_positive_bootstrap(pos, neg, metrics=hard, **kw)
    mixed = shared_positive_bootstrap(pos, neg, metrics=hard + SOFT, p_true_pos=p_pos,
                                      p_true_negatives=p_neg, **kw)
    soft = shared_positive_bootstrap(pos, neg, metrics=SOFT, p_true_pos=p_pos,
                                     p_true_negatives=p_neg, **kw)
    for key, res in alone.marginal.items():
        assert mixed.marginal[key].to_dict() == res.to_dict()
        np.testing.assert_array_equal(mixed.marginal[key].replicates, res.replicates)
    for key, res in alone.differences.items():
        assert mixed.differences[key].to_dict() == res.to_dict()
        np.testing.assert_array_equal(mixed.differences[key].replicates, res.replicates)
    for key, res in soft.marginal.items():
        np.testing.assert_array_equal(mixed.marginal[key].replicates, res.replicates)
    for key, res in soft.differences.items():
        np.testing.assert_array_equal(mixed.differences[key].replicates, res.replicates)
    assert list(mixed.differences) == [(a, b, m) for a, b in kw["contrasts"] for m in hard + SOFT]
    assert mixed.options["metrics"] == hard + SOFT


def _binary_case(seed):
    """Untied scores (soft AUROC's stable ties equal mid-rank ties only without ties)."""
    rng = np.random.default_rng(seed)
    pos = rng.random(7) * 0.7 + 0.3
    neg = {"u": rng.random(9) * 0.8, "v": rng.random(5)}
    return pos, neg


@pytest.mark.parametrize("ci_method", ["percentile", "bca"])
def test_binary_soft_labels_reproduce_the_ordinary_results_exactly(ci_method):
    pos, neg = _binary_case(5)
    kw = dict(n_resamples=80, rng=42, ci_method=ci_method)
    hard = shared_positive_bootstrap(pos, neg, metrics=["roc_auc", "average_precision"], **kw)
    soft = shared_positive_bootstrap(pos, neg, metrics=SOFT, p_true_pos=np.ones(pos.size),
                                     p_true_negatives={g: np.zeros(v.size) for g, v in neg.items()},
                                     **kw)
    pairs = {"soft_roc_auc": "roc_auc", "soft_average_precision": "average_precision"}
    for g in neg:
        for smid, hmid in pairs.items():
            a, b = soft.marginal[(g, smid)], hard.marginal[(g, hmid)]
            np.testing.assert_array_equal(a.replicates, b.replicates)
            assert (a.estimate, a.ci_low, a.ci_high) == (b.estimate, b.ci_low, b.ci_high)
            assert (a.n, a.n_pos, a.n_neg) == (b.n, b.n_pos, b.n_neg)  # 0/1: mass = count
    for smid, hmid in pairs.items():
        a, b = soft.differences[("u", "v", smid)], hard.differences[("u", "v", hmid)]
        np.testing.assert_array_equal(a.replicates, b.replicates)
        assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)


@settings(derandomize=True, database=None, deadline=None, max_examples=25)
@given(n_pos=st.integers(1, 6), n_u=st.integers(1, 6), n_v=st.integers(1, 6),
       grid=st.sampled_from([10, 1000]), seed=st.integers(0, 2**32 - 1))
def test_binary_soft_ap_equals_ordinary_ap_even_with_ties(n_pos, n_u, n_v, grid, seed):
    """AP: the individual-rank convention of both metrics agrees for 0/1 labels, tied or not."""
    rng = np.random.default_rng(seed)
    pos = np.round(rng.random(n_pos) * grid) / grid
    neg = {"u": np.round(rng.random(n_u) * grid) / grid, "v": np.round(rng.random(n_v) * grid) / grid}
    kw = dict(n_resamples=15, rng=seed)
    hard = shared_positive_bootstrap(pos, neg, metrics=["average_precision"], **kw)
    soft = shared_positive_bootstrap(pos, neg, metrics=["soft_average_precision"],
                                     p_true_pos=np.ones(n_pos),
                                     p_true_negatives={"u": np.zeros(n_u), "v": np.zeros(n_v)}, **kw)
    for g in neg:
        np.testing.assert_array_equal(soft.marginal[(g, "soft_average_precision")].replicates,
                                      hard.marginal[(g, "average_precision")].replicates)


def test_batch_size_does_not_change_soft_replicates():
    pos, neg, p_pos, p_neg = data(seed=9)
    runs = [shared_positive_bootstrap(pos, neg, metrics=["roc_auc", *SOFT], p_true_pos=p_pos,
                                      p_true_negatives=p_neg, n_resamples=50, rng=4, batch=b)
            for b in (None, 3, 17)]
    for r in runs[1:]:
        for k, v in runs[0].differences.items():
            np.testing.assert_array_equal(r.differences[k].replicates, v.replicates)


def test_degenerate_soft_group_is_counted_not_dropped():
    """A group whose soft labels are all 1 has no negative mass: s-AUROC undefined (nan),
    every replicate degenerate and counted."""
    with pytest.warns(Warning, match="degenerate"):
        r = shared_positive_bootstrap([0.9, 0.8], {"u": [0.1, 0.5], "v": [0.7]},
                                      metrics=["soft_roc_auc"], p_true_pos=[1.0, 1.0],
                                      p_true_negatives={"u": [0.0, 0.5], "v": [1.0]},
                                      n_resamples=20, rng=1)
    v = r.marginal[("v", "soft_roc_auc")]
    assert math.isnan(v.estimate) and v.n_degenerate == 20 and math.isnan(v.ci_low)
    assert r.marginal[("u", "soft_roc_auc")].n_degenerate == 0


# ----------------------------------------------------------------------------- bad input
_POS, _NEG = [0.9, 0.8], {"healthy": [0.1, 0.3], "sick": [0.7]}
_PN = {"healthy": [0.0, 0.2], "sick": [0.4]}
BAD = {
    "soft metric without soft labels": (dict(metrics=SOFT), r"need p_true_pos and p_true_negatives"),
    "only the positives' soft labels": (dict(metrics=SOFT, p_true_pos=[1, 1]),
                                        r"p_true_negatives is missing"),
    "only the groups' soft labels": (dict(metrics=SOFT, p_true_negatives=_PN),
                                     r"p_true_pos is missing"),
    "soft labels without a soft metric": (dict(p_true_pos=[1, 1], p_true_negatives=_PN),
                                          r"no soft metric was asked for"),
    "group missing": (dict(metrics=SOFT, p_true_pos=[1, 1], p_true_negatives={"healthy": [0, 0]}),
                      r"missing \['sick'\], unknown \[\]"),
    "unknown group": (dict(metrics=SOFT, p_true_pos=[1, 1], p_true_negatives={**_PN, "x": [0]}),
                      r"missing \[\], unknown \['x'\]"),
    "not a mapping": (dict(metrics=SOFT, p_true_pos=[1, 1], p_true_negatives=[[0, 0], [0]]),
                      r"p_true_negatives must be a mapping"),
    "positive length": (dict(metrics=SOFT, p_true_pos=[1, 1, 1], p_true_negatives=_PN),
                        r"y_score_pos has 2, p_true_pos has 3"),
    "group length": (dict(metrics=SOFT, p_true_pos=[1, 1], p_true_negatives={**_PN, "sick": [0, 0]}),
                     r"negatives\['sick'\] has 1, p_true_negatives\['sick'\] has 2"),
    "outside [0, 1]": (dict(metrics=SOFT, p_true_pos=[1, 1.5], p_true_negatives=_PN),
                       r"p_true_pos must be soft labels in \[0, 1\]"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_soft_input_is_refused_with_a_clear_message(name):
    kw, pattern = BAD[name]
    with pytest.raises(MedauditError, match=pattern):
        shared_positive_bootstrap(_POS, _NEG, n_resamples=5, rng=0, **kw)
