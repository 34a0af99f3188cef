"""``claimkit.PairIndex`` finds the row the filters it replaced found.

Witness: the boolean filter it replaced, written out here, and its first row, on random
tables with repeated keys, both model orders, NaN and None keys, and criteria that are
absent.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from medaudit.blocks import claimkit as ck

MODELS = ["m1", "m2", "m3"]
CRITERIA = ["roc_auc_difference", "brier_score_difference"]
KEYS = ["a", "b", None]
PREVALENCE = [0.1, 0.25, math.nan]


def _keyed(df, **key):
    """The rows of ``df`` whose key columns equal ``key`` (pandas ``==``: None, NaN never)."""
    sub = df
    for col, v in key.items():
        sub = sub[sub[col] == v]
    return sub


def _filtered_first(sub, a, b, criterion):
    m = (sub["criterion"] == criterion) & (((sub["model_a"] == a) & (sub["model_b"] == b))
                                           | ((sub["model_a"] == b) & (sub["model_b"] == a)))
    rows = sub[m]
    return rows.iloc[0] if len(rows) else None


@settings(max_examples=25)
@given(st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(PREVALENCE),
                          st.sampled_from(CRITERIA), st.sampled_from(MODELS),
                          st.sampled_from(MODELS)), min_size=0, max_size=25))
def test_first_row_is_the_first_row_the_filter_finds(rows):
    df = pd.DataFrame(rows, columns=["cohort", "prevalence", "criterion", "model_a", "model_b"])
    df["estimate"] = np.arange(len(df), dtype=float)  # which row was found
    index = ck.PairIndex(df, ["cohort", "prevalence"])
    for cohort in KEYS:
        for pi in PREVALENCE:
            # the key filter once per key (the same rows for every criterion and pair)
            sub = None if df.empty else _keyed(df, cohort=cohort, prevalence=pi)
            for crit in [*CRITERIA, "soft_roc_auc_difference"]:
                for a in MODELS:
                    for b in MODELS:
                        want = None if sub is None else _filtered_first(sub, a, b, crit)
                        got = index.first(a, b, crit, cohort, pi)
                        if want is None:
                            assert got is None
                        else:
                            assert got is not None and got["estimate"] == want["estimate"]
                            pd.testing.assert_series_equal(got, want)


def test_an_empty_table_finds_nothing():
    empty = pd.DataFrame(columns=["cohort", "criterion", "model_a", "model_b"])
    assert ck.PairIndex(empty, ["cohort"]).first("m1", "m2", "roc_auc_difference", "a") is None
