"""Invariances of the receiving-site runs (hypothesis, deterministic profile of the suite).

* the order of the local table's rows changes nothing in ``medaudit.port`` (the claims are
  judged on images aligned by id, each cell drawn from its own key);
* relabelling the periods by an order-preserving map changes nothing in ``monitor`` but the
  period names, and the order of its rows changes nothing at all;
* renaming the site's cohort changes only the cohort columns and the text naming it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import medaudit
from medaudit.monitor import monitor
from medaudit.simulate import simulate_paper000
from tests.port._source import LOCAL_SPEC, N_RESAMPLES, claims_file, source_audit  # noqa: F401

_SITE = None


def _site() -> pd.DataFrame:
    global _SITE
    if _SITE is None:
        t = pd.DataFrame(simulate_paper000(rng=LOCAL_SPEC["seed"], scale=0.5)["table"])
        _SITE = t[(t["cohort"] == "montgomery") & (t["prompt"] == "clinical")].drop(
            columns=["split"]).reset_index(drop=True)
    return _SITE


def _port(claims_file, df):  # noqa: F811
    return medaudit.port(claims_file, df, n_resamples=N_RESAMPLES, seed=11,
                         primary_prompt="clinical").claims


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_row_order_changes_nothing(claims_file, seed):  # noqa: F811
    df = _site()
    base = _port(claims_file, df)
    shuffled = df.sample(frac=1.0, random_state=np.random.RandomState(seed % 2**32))
    pd.testing.assert_frame_equal(_port(claims_file, shuffled.reset_index(drop=True)), base)


@settings(max_examples=3, deadline=None)
@given(name=st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=3, max_size=12).filter(
    lambda s: s.strip("-") == s and s != "montgomery"))
def test_cohort_name_changes_only_the_names(claims_file, name):  # noqa: F811
    df = _site()
    a = _port(claims_file, df)
    b = _port(claims_file, df.assign(cohort=name))
    assert (b["local_cohort"] == name).all()
    cols = [c for c in a.columns if c not in ("local_cohort", "changes", "reason")]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert list(b["changes"]) == [c.replace("montgomery", name) for c in a["changes"]]


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_monitor_does_not_depend_on_the_order_of_the_rows(claims_file, seed):  # noqa: F811
    """Probe finding: shuffled rows moved the monitor's estimates and intervals by about 1e-16
    (sums in another order) and could move its drift permutations; byte-identical now."""
    df = _site().copy()
    df["period"] = df.groupby("model").cumcount().mod(3).map({0: "2026-01", 1: "2026-02", 2: "2026-03"})
    a = monitor(claims_file, df, primary_prompt="clinical")
    b = monitor(claims_file, df.sample(frac=1.0, random_state=seed % 2**32), primary_prompt="clinical")
    pd.testing.assert_frame_equal(a.series, b.series, check_exact=True)
    pd.testing.assert_frame_equal(a.drift, b.drift, check_exact=True)
    pd.testing.assert_frame_equal(a.claims, b.claims, check_exact=True)


@settings(max_examples=3, deadline=None)
@given(offset=st.integers(0, 30))
def test_monitor_period_names_order_preserving(claims_file, offset):  # noqa: F811
    df = _site().sort_values(["model", "image_id"]).reset_index(drop=True)
    # each image in one period (the same for every model): its rank within the model, mod 3
    df["period"] = df.groupby("model").cumcount().mod(3).map({0: "p1", 1: "p2", 2: "p3"})
    a = monitor(claims_file, df, primary_prompt="clinical")
    names = {f"p{i}": f"{2000 + offset + i}-01" for i in (1, 2, 3)}
    b = monitor(claims_file, df.assign(period=df["period"].map(names)), primary_prompt="clinical")
    sa, sb = a.series.copy(), b.series.copy()
    assert list(sb["period"]) == [names[p] for p in sa["period"]]
    cols = [c for c in sa.columns if c != "period"]
    pd.testing.assert_frame_equal(sa[cols], sb[cols])
    pd.testing.assert_frame_equal(a.claims.drop(columns="reason"), b.claims.drop(columns="reason"))
