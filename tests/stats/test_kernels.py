"""Tests of the weight kernels (:mod:`medaudit.stats._kernels`) called directly.

The engine hands kernels count matrices gathered with ``np.take`` (C order), but a
kernel must not depend on how its input is laid out in memory: ``w[:, cols]`` returns
a Fortran-ordered block, a slice returns a strided view.  Every kernel is fed the
same counts as C- and F-ordered, contiguous and strided, integer and float matrices,
and each result is compared with the metric computed from scratch on the materialised
resample (``tests/stats/_helpers.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from medaudit.stats import _kernels as K
from tests import _oracles as O
from tests.stats._helpers import assert_reps_match, materialise, reference, tied_data


def _layouts(a: np.ndarray):
    """The same matrix in every memory layout a caller can produce."""
    yield "C", np.ascontiguousarray(a)
    yield "F", np.asfortranarray(a)
    wide = np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype)
    wide[:, ::2] = a
    yield "column-strided", wide[:, ::2]
    tall = np.zeros((2 * a.shape[0], a.shape[1]), dtype=a.dtype)
    tall[::2] = a
    yield "row-strided", tall[::2]
    yield "F column-strided", np.asfortranarray(wide)[:, ::2]
    yield "float C", a.astype(np.float64)
    yield "float F", np.asfortranarray(a.astype(np.float64))


def _counts(n: int, b: int, seed: int) -> np.ndarray:
    """Poisson(1) counts with many items drawn 2+ times (the copies_sum slow path) and a
    row of ones (the point estimate)."""
    w = np.random.default_rng(seed).poisson(1.2, (b, n))
    w[0] = 1
    return w


Y, S = tied_data(41, 23, 31)  # heavy ties
W = _counts(Y.size, 12, 5)
R = K.rank(Y, S)
C = K.rank_confidence(Y, S)
PL = K.placement(Y, S)
IDX = [materialise(w) for w in W]

# kernel on (counts in the order it reads, layout applied) -> values; the order it reads;
# the reference on materialised data and when it is defined
KERNELS = {
    "auroc": (lambda w: K.auroc(w, R), "ranked", O.auroc_pairwise, "two"),
    "auroc_placement": (lambda w: K.auroc_placement(w, PL), "original", O.auroc_pairwise, "two"),
    "average_precision_stable": (lambda w: K.average_precision_stable(w, R), "ranked",
                                 O.average_precision_individual, "pos"),
    "average_precision_grouped": (lambda w: K.average_precision_grouped(w, R), "ranked",
                                  O.average_precision_pooled, "pos"),
    "se_at_sp": (lambda w: K.se_at_sp(w, R, 0.7), "ranked", lambda y, s: O.se_at_sp(y, s, 0.7),
                 "two"),
    "sp_at_se": (lambda w: K.sp_at_se(w, R, 0.6), "ranked", lambda y, s: O.sp_at_se(y, s, 0.6),
                 "two"),
    "tau_sensitivity": (lambda w: K.tau_sensitivity(w, R, 0.8), "ranked",
                        lambda y, s: O.tau_sensitivity(y, s, 0.8), "two"),
    "tau_specificity": (lambda w: K.tau_specificity(w, R, 0.8), "ranked",
                        lambda y, s: O.tau_specificity(y, s, 0.8), "two"),
    "rates_at (Se)": (lambda w: K.rates_at(w, R, 0.5)[0], "ranked",
                      lambda y, s: O.se_sp_at(y, s, 0.5)[0], "two"),
    "rates_at (Sp)": (lambda w: K.rates_at(w, R, 0.5)[1], "ranked",
                      lambda y, s: O.se_sp_at(y, s, 0.5)[1], "two"),
    "mean_loss": (lambda w: K.mean_loss(w, Y, (S - Y) ** 2, None), "original", O.brier, "any"),
    "mean_loss (prevalence)": (lambda w: K.mean_loss(w, Y, (S - Y) ** 2, 0.3), "original",
                               lambda y, s: O.brier_prevalence(y, s, 0.3), "two"),
    "ece": (lambda w: K.ece(w, R, 10, None), "ranked", lambda y, s: O.ece(y, s, 10), "any"),
    "ece (prevalence)": (lambda w: K.ece(w, R, 10, 0.3), "ranked",
                         lambda y, s: O.ece(y, s, 10, 0.3), "two"),
    "selective_risk": (lambda w: K.selective_risk(w, C, 0.7), "confidence",
                       lambda y, s: O.risk_at_coverage(y, s, 0.7), "any"),
    "aurc": (lambda w: K.aurc(w, C), "confidence", O.aurc, "any"),
}
_ORDERS = {"ranked": R.order, "original": np.arange(Y.size), "confidence": C.order}


@pytest.mark.parametrize("name", list(KERNELS))
def test_every_kernel_is_independent_of_memory_layout(name):
    fn, order, ref, when = KERNELS[name]
    expected = [reference(ref, when, Y[i], S[i]) for i in IDX]
    w_in_order = np.take(W, _ORDERS[order], axis=1)
    for layout, w in _layouts(w_in_order):
        assert_reps_match(fn(w), expected, f"{name}, {layout}")


P_SOFT = np.random.default_rng(8).choice([0.0, 0.25, 0.5, 0.8, 1.0], Y.size)
R_SOFT = K.rank(P_SOFT, S)
SOFT_KERNELS = {
    "soft_auroc_stable inclusive": (lambda w: K.soft_auroc_stable(w, R_SOFT, "inclusive"),
                                    O.soft_auroc_inclusive),
    "soft_auroc_stable strict": (lambda w: K.soft_auroc_stable(w, R_SOFT, "strict"),
                                 O.soft_auroc_strict),
    "average_precision_stable (soft)": (lambda w: K.average_precision_stable(w, R_SOFT),
                                        O.soft_ap),
}


@pytest.mark.parametrize("name", list(SOFT_KERNELS))
def test_soft_kernels_are_independent_of_memory_layout(name):
    fn, ref = SOFT_KERNELS[name]
    expected = [ref(P_SOFT[i], S[i]) for i in IDX]
    for layout, w in _layouts(np.take(W, R_SOFT.order, axis=1)):
        assert_reps_match(fn(w), expected, f"{name}, {layout}")


def test_auroc_binned_equals_auroc_placement():
    from medaudit.stats.designs import make_plan
    plan = make_plan("ordinary", Y)
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    full = np.vstack(list(plan.batches(30, rng_a)))
    binned = np.vstack(list(plan.batches(30, rng_b, columns=PL.bins)))
    for layout, w in _layouts(binned):
        np.testing.assert_array_equal(K.auroc_binned(w, PL), K.auroc_placement(full, PL),
                                      err_msg=layout)


def test_copies_sum_of_fortran_counts_keeps_the_copies():
    """The reported defect: ``w[:, order]`` (F order) lost the terms of items drawn 2+ times."""
    rng = np.random.default_rng(0)
    n = 500
    y = (rng.random(n) < 0.2) * 1.0
    s = rng.normal(size=n) + y
    w = rng.poisson(1.0, (50, n))
    r = K.rank(y, s)
    c_order = K.average_precision_stable(np.take(w, r.order, axis=1), r)
    f_order = K.average_precision_stable(w[:, r.order], r)
    assert w[:, r.order].flags.f_contiguous
    np.testing.assert_array_equal(c_order, f_order)
    i = materialise(w[7])
    assert c_order[7] == pytest.approx(O.average_precision_individual(y[i], s[i]), rel=1e-12)
    assert not math.isnan(c_order[7])


# ------------------------------------------------------- one-pass kernels on the layout
def _layout_data(kind: str, seed: int = 3, n: int = 41):
    """Labels and probabilities: continuous; tied on a grid with no confidence tie across
    0.5 (so the layout's confidence cuts apply, partial tie blocks included); and tied
    on the 0.1 grid, where 0.3 and 0.7 tie in confidence (the general path)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(float)
    y[:2] = [0.0, 1.0]
    if kind == "continuous":
        s = np.clip(0.25 * y + 0.75 * rng.random(n), 0.0, 1.0)
    elif kind == "grid":  # k/10 + 0.013: s and 1 - s never coincide
        s = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 0.95), 1) + 0.013
    else:
        s = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0), 1)
    return y, s


LAYOUT_METRICS = [
    ("roc_auc", O.auroc_pairwise, "two"),
    ("average_precision", O.average_precision_individual, "pos"),
    (("average_precision", {"ties": "pooled"}), O.average_precision_pooled, "pos"),
    ("brier_score", O.brier, "any"),
    (("brier_score", {"prevalence": 0.3}), lambda y, s: O.brier_prevalence(y, s, 0.3), "two"),
    (("log_loss", {"prevalence": 0.4}), lambda y, s: O.log_loss(y, s, pi=0.4), "two"),
    ("ece", lambda y, s: O.ece(y, s, 15), "any"),
    (("ece", {"n_bins": 7, "prevalence": 0.3}), lambda y, s: O.ece(y, s, 7, 0.3), "two"),
    (("ece", {"n_bins": 10, "binning": "linspace"}),
     lambda y, s: O.ece(y, s, 10, binning="linspace"), "any"),
    ("aurc", O.aurc, "any"),
    (("selective_risk", {"coverage": 0.37}), lambda y, s: O.risk_at_coverage(y, s, 0.37), "any"),
    (("selective_risk", {"coverage": 1.0}), lambda y, s: O.risk_at_coverage(y, s, 1.0), "any"),
    (("sensitivity_at_specificity", {"min_specificity": 0.7}),
     lambda y, s: O.se_at_sp(y, s, 0.7), "two"),
    (("specificity_at_sensitivity", {"min_sensitivity": 0.6}),
     lambda y, s: O.sp_at_se(y, s, 0.6), "two"),
    (("specificity_at_sensitivity", {"min_sensitivity": 0.0}),
     lambda y, s: O.sp_at_se(y, s, 0.0), "two"),
    # a rate at a fixed threshold needs only its own class
    (("sensitivity", {"threshold": 0.513}), lambda y, s: O.se_sp_at(y, s, 0.513)[0], "pos"),
    (("specificity", {"threshold": 0.5}), lambda y, s: O.se_sp_at(y, s, 0.5)[1], "neg"),
]


@pytest.mark.parametrize(("kind", "n"), [("continuous", 41), ("grid", 41), ("cross-ties", 41),
                                         ("continuous", 703), ("grid", 703)])
def test_layout_kernels_equal_the_definitions_on_materialised_resamples(kind, n):
    """n = 703: every cumulated row (all items, the positives, the error items) is long
    enough for the pair-summed cumulative sum (:func:`K.cumsum_counts`)."""
    from medaudit.stats._metricspec import Prepared, evaluate_columns, parse_metrics
    y, s = _layout_data(kind, n=n)
    p = Prepared.build(y, s, need_conf=True)
    assert (p.layout.cuts is not None) == (kind != "cross-ties")
    if n > 500:
        assert min(p.layout.n_pos, p.layout.err_col.size) > 2 * K._PAIR_MIN
    if kind == "grid":  # some cut falls inside a low-score tie block
        assert p.layout.cuts.partial
    w = _counts(y.size, 25, 9)
    w[1] = 0
    w[1, :3] = [5, 0, 2]  # most items absent, one drawn five times
    specs = parse_metrics([m for m, _, _ in LAYOUT_METRICS])
    # the definitions on the materialised resamples, once: they do not depend on the memory
    # layout of the counts (recomputing them per layout made this the slowest stats test)
    samples = [(y[materialise(r)], s[materialise(r)]) for r in w]
    expected = [[reference(ref, when, ys, ss) for ys, ss in samples]
                for _, ref, when in LAYOUT_METRICS]
    scratch: dict = {}
    for layout_name, wl in _layouts(np.take(w, p.columns, axis=1)):
        got = evaluate_columns(p, specs, wl, scratch)
        for want, m in zip(expected, specs, strict=True):
            assert_reps_match(got[m.id], want, f"{kind} {m.id} {layout_name}")


def test_layout_kernels_equal_the_general_kernels():
    """Same replicates as the per-order kernels: bit for bit where the integer
    arithmetic is shared (AUROC, Se/Sp, selective risk), within 1e-12 where only the
    summation order changed (AP, calibration, AURC)."""
    from medaudit.stats._metricspec import REGISTRY, Prepared, evaluate_columns, parse_metrics
    y, s = _layout_data("continuous", seed=11)
    p = Prepared.build(y, s, need_conf=True)
    w = _counts(y.size, 40, 2)
    wl = np.take(w, p.columns, axis=1)
    wr = np.take(w, p.ranked.order, axis=1)
    wc = np.take(w, p.conf.order, axis=1)
    exact = {"roc_auc", "sensitivity_at_specificity", "specificity_at_sensitivity",
             "selective_risk[coverage=0.37]", "sensitivity[threshold=0.513]",
             "specificity[threshold=0.5]", "specificity_at_sensitivity[min_sensitivity=0.0]"}
    specs = parse_metrics([m for m, _, _ in LAYOUT_METRICS])
    got = evaluate_columns(p, specs, wl)
    for m in specs:
        general = REGISTRY[m.name][3](p, lambda: w, lambda: wr, lambda: wc, m.options, {})
        if m.id in exact or m.name in exact:
            np.testing.assert_array_equal(got[m.id], general, err_msg=m.id)
        else:
            np.testing.assert_allclose(got[m.id], general, rtol=1e-12, atol=1e-15, err_msg=m.id)


@pytest.mark.parametrize("absent", [1.0, 0.0])
def test_layout_kernels_with_a_class_that_has_no_item(absent):
    """A sub-cohort with no positives (or no negatives) at all: the class's layout segment is
    empty; the calibration and any-class metrics still equal their definitions (a group of a
    subgroup analysis can be like this), and the two-class ones are nan."""
    from medaudit.stats._metricspec import Prepared, evaluate_columns, parse_metrics
    y, s = _layout_data("continuous", seed=5)
    keep = y != absent
    y, s = y[keep], s[keep]
    p = Prepared.build(y, s, need_conf=True)
    w = _counts(y.size, 12, 4)
    specs = parse_metrics([m for m, _, when in LAYOUT_METRICS if when == "any"] + ["roc_auc"])
    got = evaluate_columns(p, specs, np.take(w, p.columns, axis=1))
    for m, (_, ref, _) in zip(specs, [x for x in LAYOUT_METRICS if x[2] == "any"], strict=False):
        expected = [ref(y[materialise(r)], s[materialise(r)]) for r in w]
        assert_reps_match(got[m.id], expected, f"{m.id} without class {absent}")
    assert np.isnan(got["roc_auc"]).all()


# ------------------------------------------------ threshold transport on the layout
@pytest.mark.parametrize("kind", ["ties", "continuous"])
@pytest.mark.parametrize("x", [0.0, 0.5, 0.8, 0.95, 1.0])
def test_transport_layout_kernels_equal_the_definitions(kind, x):
    """tau by each rule and Se/Sp at per-row thresholds from the layout's cumulative sum:
    the definitions (tests/_oracles.py) on every materialised resample, and the ranked
    kernels to the last bit, whatever the memory layout of the counts."""
    if kind == "ties":
        y, s = Y, S
    else:
        y, s = _layout_data("continuous", seed=7)
    r = K.rank(y, s)
    lay = K.layout(y, s, r, None)
    w = _counts(y.size, 30, 12)
    w[1] = 0
    w[1, np.flatnonzero(y == 1)[:1]] = 3  # one positive only: no negative drawn (nan)
    w[2] = 0
    w[2, np.flatnonzero(y == 0)[:4]] = 1  # only negatives, a few (nan)
    w[3, y == 1] = 0
    w[3, np.flatnonzero(y == 1)[-1]] = 1  # a single low positive: Sp rules fall back
    idx = [materialise(row) for row in w]
    wr = np.take(w, r.order, axis=1)
    ranked_se, ranked_sp = K.tau_sensitivity(wr, r, x), K.tau_specificity(wr, r, x)
    want_se = [reference(lambda a, b: O.tau_sensitivity(a, b, x), "two", y[i], s[i]) for i in idx]
    want_sp = [reference(lambda a, b: O.tau_specificity(a, b, x), "two", y[i], s[i]) for i in idx]
    for name, wl in _layouts(np.take(w, lay.order, axis=1)):
        t = K.LayoutSums(wl, lay)
        got_se, got_sp = K.tau_sensitivity_layout(t, r, x), K.tau_specificity_layout(t, r, x)
        assert_reps_match(got_se, want_se, f"tau_sensitivity {name}")
        assert_reps_match(got_sp, want_sp, f"tau_specificity {name}")
        np.testing.assert_array_equal(got_se, ranked_se, err_msg=name)
        np.testing.assert_array_equal(got_sp, ranked_sp, err_msg=name)
        for tau in (got_se, got_sp, np.full(w.shape[0], s[0]), np.full(w.shape[0], np.inf),
                    np.full(w.shape[0], np.nan)):
            se, sp = K.rates_at_layout(t, tau)
            want = [O.se_sp_at(y[i], s[i], tv) if not np.isnan(tv) else (math.nan, math.nan)
                    for i, tv in zip(idx, tau, strict=True)]
            assert_reps_match(se, [a for a, _ in want], f"Se at tau {name}")
            assert_reps_match(sp, [b for _, b in want], f"Sp at tau {name}")
            rse, rsp = K.rates_at(wr, r, tau)
            np.testing.assert_array_equal(se, rse, err_msg=name)
            np.testing.assert_array_equal(sp, rsp, err_msg=name)


# ----------------------------------------------------------------------------- many copies
@pytest.mark.parametrize(("x", "y"), [(1, 2), (1, 1000), (65, 66), (100, 300), (127, 129), (128, 129),
                                      (5, 5), (3e5, 3e5 + 64), (1e6, 2e6 + 3)])
def test_harmonic_gap_is_the_sum_of_reciprocals(x, y):
    want = math.fsum(1.0 / k for k in np.arange(x, y))
    got = K._harmonic_gap(np.array([x]), np.array([y]))[0]
    assert got == pytest.approx(want, rel=4e-16, abs=0)


def test_harmonic_gap_keeps_its_digits_far_from_the_origin():
    # H_{x+100} - H_x at x = 10^9: 100 terms of ~1e-9, which a difference of digammas
    # (each ~20.7) would get right to only 8 digits
    x = 1e9
    want = math.fsum(1.0 / (x + k) for k in range(100))
    assert K._harmonic_gap(np.array([x]), np.array([x + 100]))[0] == pytest.approx(want, rel=1e-15)


def _ap_by_copies(p, s, w, own_is_one=False):
    """AP with individual ranks by expanding every item into its copies (long double sums)."""
    o = np.argsort(-np.asarray(s), kind="stable")
    pp = np.repeat(np.asarray(p, dtype=float)[o], np.asarray(w, dtype=int)[o]).astype(np.longdouble)
    before = np.cumsum(pp) - pp
    rank = np.arange(1, pp.size + 1, dtype=np.longdouble)
    own = np.ones_like(pp) if own_is_one else pp
    return float(np.sum(pp * (before + own) / rank) / pp.sum())


@pytest.mark.parametrize("soft", [False, True])
def test_average_precision_with_large_integer_weights_is_the_copies_ap(soft):
    """Weights above the copy loop's limit take the closed-form tail: the same AP as the
    data written out copy by copy."""
    rng = np.random.default_rng(3)
    n = 10
    p = rng.random(n) if soft else (rng.random(n) < 0.5).astype(float)
    p[:2] = (1.0, 0.0)
    s = np.round(rng.normal(size=n), 1)
    w = rng.integers(1, 3000, n).astype(float)
    w[:3] = (64.0, 65.0, 2999.0)  # the loop's last copy, the tail's first, a long tail
    r = K.rank(p, s)
    for variant in ("as_written", "known_self"):
        got = float(K.average_precision_stable(w[r.order], r, variant))
        want = _ap_by_copies(p, s, w, own_is_one=variant == "known_self")
        assert got == pytest.approx(want, rel=1e-14)


def test_average_precision_with_a_billion_copies_is_fast_and_right():
    # a negative, then a positive, each 10^9 copies: AP = (1/W) sum_j j / (W + j)
    # = 1 - (H_2W - H_W) = 1 - ln 2 + 1/(4W) + O(W^-2)
    from medaudit.stats import average_precision

    W = 10**9
    got = average_precision([0, 1], [0.9, 0.1], sample_weight=[W, W])
    assert got == pytest.approx(1.0 - math.log(2.0) + 1.0 / (4.0 * W), rel=1e-14)


# ------------------------------------------------------------ pair-summed cumulative sum
def _cumsum_inputs():
    rng = np.random.default_rng(4)
    for n in (0, 1, 2, 127, 128, 129, 130, 257, 1000, 1001):
        for dtype in (bool, np.int8, np.int32, np.int64, np.uint16, np.float64):
            x = rng.integers(0, 4, (3, n)).astype(dtype)
            yield f"n={n} {np.dtype(dtype).name}", x
    big = rng.integers(0, 2**40, (2, 999), dtype=np.int64)  # sums far beyond 32 bits
    yield "int64 large", big
    yield "1-D", rng.integers(0, 9, 4097)
    yield "3-D", rng.integers(0, 9, (2, 3, 300))


@pytest.mark.parametrize(("name", "x"), list(_cumsum_inputs()), ids=lambda v: v if isinstance(v, str) else "")
def test_cumsum_counts_equals_numpy_in_every_layout(name, x):
    """Integers are summed exactly whatever the grouping, so the pair-summed cumulative sum
    is numpy's to the last bit, for every memory layout and with ``out`` a padded view (as
    :class:`K.LayoutSums` writes ``c[:, 1:]``); floats take numpy's own order."""
    want = np.cumsum(x, axis=-1)
    for layout, xl in (list(_layouts(x))[:5] if x.ndim == 2 else [("C", x)]):
        got = K.cumsum_counts(xl)
        assert got.dtype == want.dtype, (name, layout)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {layout}")
        if x.ndim == 2:
            c = np.full((x.shape[0], x.shape[1] + 1), 7, dtype=want.dtype)
            c[:, 0] = 0
            K.cumsum_counts(xl, out=c[:, 1:])
            np.testing.assert_array_equal(c[:, 1:], want, err_msg=f"{name} {layout} out=")
            assert (c[:, 0] == 0).all()


def test_cumsum_counts_into_a_narrow_integer_buffer():
    """DeLong cumulates a boolean class indicator into int32: the same values as numpy's
    ``cumsum(dtype=int32)``."""
    ys = np.random.default_rng(2).random(10_001) < 0.11
    got = K.cumsum_counts(ys, out=np.empty(ys.size, dtype=np.int32))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.cumsum(ys, dtype=np.int32))
