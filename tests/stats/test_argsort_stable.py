"""``_kernels.argsort_stable``: the packed-key sort equals ``np.argsort(kind="stable")``.

Witness: numpy's own stable sort, on every input family where a packed key could go
wrong -- exact ties (the index breaks them), near ties that collide in the truncated key
and must be re-sorted by value, both signs (the bit flip), -0.0 against 0.0 (equal for
numpy, different bits), infinities, subnormals, NaN (numpy's sorts), sizes at the switch
between numpy's sort and the packed one, and the descending form against ``-x``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from medaudit.stats import _kernels as K

MIN = K._PACKED_SORT_MIN


def _family(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if name == "normal":
        return rng.normal(size=n)
    if name == "rounded":  # heavy exact ties
        return np.round(rng.random(n), 2)
    if name == "binary":
        return (rng.random(n) < 0.3) * 1.0
    if name == "near ties":  # differ only in bits the key drops: one colliding run, re-sorted
        return 1.0 + rng.integers(0, 50, n) * 2.0**-50
    if name == "near, distinct":  # collide in the key, never tie: re-sorted, no tie reported
        return 1.0 + rng.permutation(n) * 2.0**-50
    if name == "near ties, negative":
        return -1.0 - rng.integers(0, 50, n) * 2.0**-50
    if name == "signed zeros":
        return np.where(rng.random(n) < 0.5, 0.0, -0.0)
    if name == "infinities":
        x = rng.normal(size=n)
        x[rng.random(n) < 0.2] = np.inf
        x[rng.random(n) < 0.2] = -np.inf
        return x
    if name == "subnormal":
        return rng.normal(size=n) * 1e-310
    if name == "nan":
        return np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))
    if name == "sorted":
        return np.sort(rng.normal(size=n))
    if name == "constant":
        return np.full(n, 0.3)
    raise AssertionError(name)


FAMILIES = ("normal", "rounded", "binary", "near ties", "near, distinct", "near ties, negative",
            "signed zeros", "infinities", "subnormal", "nan", "sorted", "constant")


@pytest.mark.parametrize("n", [0, 1, 2, MIN - 1, MIN, MIN + 1, 50_000])
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("descending", [False, True])
def test_equals_numpy_stable_argsort(family, n, descending):
    x = _family(family, n, np.random.default_rng(n + len(family)))
    got = K.argsort_stable(x, descending=descending)
    want = np.argsort(-x if descending else x, kind="stable")
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.intp


@pytest.mark.parametrize("n", [1, 2, MIN - 1, MIN, 20_000])
@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "nan"])
def test_the_tie_flag_says_whether_two_values_are_equal(family, n):
    x = _family(family, n, np.random.default_rng(7 * n + len(family)))
    for descending in (False, True):
        order, tied = K.argsort_stable(x, descending=descending, return_ties=True)
        np.testing.assert_array_equal(order, np.argsort(-x if descending else x, kind="stable"))
        assert tied is (np.unique(x).size < x.size)


def test_near_ties_take_the_resort_path():
    """The family meant to reach the re-sort does: the keys collide and index order is
    not value order (so a sort that trusted the truncated key would be wrong)."""
    n = MIN * 4
    x = _family("near ties", n, np.random.default_rng(0))
    bits = (n - 1).bit_length()
    key = x.view(np.uint64) >> np.uint64(bits)
    assert np.unique(key).size == 1
    assert not np.array_equal(np.arange(n), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(K.argsort_stable(x), np.argsort(x, kind="stable"))


def test_order_desc_is_the_stable_descending_order():
    rng = np.random.default_rng(5)
    s = np.round(rng.normal(size=20_000), 1)
    order, ss = K.order_desc(s)
    np.testing.assert_array_equal(order, np.argsort(-s, kind="stable"))
    np.testing.assert_array_equal(ss, s[order])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(MIN, MIN + 300),
                  elements=st.sampled_from([0.0, -0.0, 1.0, -1.0, 1.0 + 2.0**-52, 1.0 - 2.0**-53,
                                            -1.0 - 2.0**-52, 5e-324, -5e-324, np.inf, -np.inf,
                                            1e300, -1e300, 0.5, 0.25])),
       st.booleans())
def test_property_equals_numpy_on_adversarial_values(x, descending):
    """Values chosen to collide in the truncated key or to differ only in the sign bit."""
    np.testing.assert_array_equal(K.argsort_stable(x, descending=descending),
                                  np.argsort(-x if descending else x, kind="stable"))


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.integers(MIN, MIN + 500),
                  elements=st.floats(allow_nan=False, width=64)))
def test_property_equals_numpy_on_any_finite_or_infinite_floats(x):
    np.testing.assert_array_equal(K.argsort_stable(x), np.argsort(x, kind="stable"))


def test_input_is_not_modified_and_views_are_accepted():
    rng = np.random.default_rng(2)
    base = rng.normal(size=3 * MIN)
    view = base[::3]  # strided
    keep = view.copy()
    np.testing.assert_array_equal(K.argsort_stable(view), np.argsort(keep, kind="stable"))
    np.testing.assert_array_equal(view, keep)


def _bits(u: int) -> float:
    return float(np.array([u], dtype=np.uint64).view(np.float64)[0])


@pytest.mark.parametrize("nan", [np.nan, -np.nan, _bits(0x7FF0_0000_0000_0001),
                                 _bits(0xFFF0_0000_0000_0001)],
                         ids=["nan", "negative nan", "signalling nan", "negative signalling nan"])
@pytest.mark.parametrize("n_nan", [1, 2, 30])
def test_every_nan_is_sent_to_numpy_and_sorted_last(nan, n_nan):
    """A NaN's packed key lies beyond -inf's (sign bit set) or +inf's; one whose payload is
    only in the low bits truncates onto the infinity's key and is still caught."""
    rng = np.random.default_rng(n_nan)
    x = rng.normal(size=3 * MIN)
    x[rng.choice(x.size, n_nan, replace=False)] = nan
    x[:3] = [np.inf, -np.inf, np.inf]
    for descending in (False, True):
        order, tied = K.argsort_stable(x, descending=descending, return_ties=True)
        np.testing.assert_array_equal(order, np.argsort(-x if descending else x, kind="stable"))
        assert tied  # the two +inf
    y = rng.normal(size=3 * MIN)
    y[5] = nan
    assert K.argsort_stable(y, return_ties=True)[1] is False  # one NaN ties nothing
    y[9] = nan
    assert K.argsort_stable(y, return_ties=True)[1] is True  # two NaNs sort as equal


def test_only_one_dimension():
    with pytest.raises(ValueError, match="1-D"):
        K.argsort_stable(np.zeros((2, 3)))
