"""Label stability under the annotation bootstrap, without model scores (issue 4, LIDC item).

Witnesses:
* exact bootstrap probabilities: a resample of an item's k ratings is k draws from their
  empirical distribution, so P(hard label positive) is a finite sum computed here by
  enumerating all k^k index tuples with exact fractions; the Monte-Carlo flip rates must
  agree within 4.5 binomial standard errors, and the soft-label standard deviation with
  the exact sqrt(population variance / k) / (max - min);
* hand-worked cases (votes 1, 1, 0 flip with probability 7/27; two ratings 3, 4 on 1-5
  give soft labels 0.5 / 0.625 / 0.75 with probabilities 1/4, 1/2, 1/4);
* a loop oracle that materialises every replicate from the documented draw contract
  (one uniform per rating slot, items in sorted key order, index floor(u k)) and counts
  flips item by item — equal to the engine exactly;
* batch-size independence; items with one rating or identical ratings never move.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

from medaudit.exceptions import MedauditError, SchemaError
from medaudit.labels import RatingScale, label_stability, label_stability_with_spec, validate_annotations
from medaudit.labels.spec import AnnotationsSpec


def _table(votes: dict, *, codes=None, scale=(0, 1)) -> pd.DataFrame:
    rows = [{"item_id": i, "annotator": f"r{a}", "rating": v}
            for i, vs in votes.items() for a, v in enumerate(vs)]
    sc = RatingScale.from_codes(codes) if codes else RatingScale.numeric(*scale)
    return validate_annotations(pd.DataFrame(rows), scale=sc)


def _exact_p_positive(ratings, *, lo, hi, threshold=None) -> Fraction:
    """P(resampled hard label = 1) by enumerating all k^k draws (strict majority / mean > t)."""
    k = len(ratings)
    pos = 0
    for idx in itertools.product(range(k), repeat=k):
        mean = sum(Fraction(ratings[j]) for j in idx) / k
        if threshold is None:
            pos += (mean - lo) / (hi - lo) > Fraction(1, 2)
        else:
            pos += mean > threshold
    return Fraction(pos, k**k)


def test_hand_worked_flip_and_soft_distribution():
    # binary item x (1, 1, 0): P(>= 2 ones in 3 draws at 2/3) = 20/27, so it flips w.p. 7/27
    st = label_stability(_table({"x": [1, 1, 0]}), scale=(0, 1), n_resamples=6000, rng=4)
    se = math.sqrt((7 / 27) * (20 / 27) / 6000)
    assert abs(st.items.loc[0, "flip_rate"] - 7 / 27) < 4.5 * se
    assert st.items.loc[0, "p_positive"] == pytest.approx(1 - st.items.loc[0, "flip_rate"])
    # ordinal 1-5, ratings (3, 4), hard = mean > 3: soft is 0.5, 0.625, 0.75 w.p. 1/4, 1/2, 1/4
    t = _table({"y": [3, 4], "z": [5]}, scale=(1, 5))
    st = label_stability(t, scale=(1, 5), hard="threshold", threshold=3, n_resamples=4000, rng=9)
    y = st.items.set_index("item_id").loc["y"]
    assert (y["label_soft"], y["label"], y["n_ratings"]) == (0.625, 1.0, 2)
    assert (y["soft_ci_low"], y["soft_ci_high"]) == (0.5, 0.75)
    assert abs(y["flip_rate"] - 0.25) < 4.5 * math.sqrt(0.25 * 0.75 / 4000)
    assert y["soft_sd"] == pytest.approx(math.sqrt(0.125**2 / 2), rel=0.05)
    z = st.items.set_index("item_id").loc["z"]  # one rating: nothing can move
    assert (z["flip_rate"], z["soft_ci_low"], z["soft_ci_high"], z["soft_sd"]) == (0, 1, 1, 0)


def _problem(seed, n_items=25, hi=4):
    rng = np.random.default_rng(seed)
    votes = {f"i{j:02d}": rng.integers(0, hi + 1, size=rng.integers(1, 5)).tolist()
             for j in range(n_items)}
    return votes


@pytest.mark.parametrize("rule", [{"hard": "majority"}, {"hard": "threshold", "threshold": 2.0},
                                  {"hard": "majority", "tie": "exclude"}])
def test_flip_rates_agree_with_exact_probabilities(rule):
    votes = _problem(3)
    B = 3000
    st = label_stability(_table(votes, scale=(0, 4)), scale=(0, 4), n_resamples=B, rng=1, **rule)
    items = st.items.set_index("item_id")
    for i, rs in votes.items():
        row = items.loc[i]
        k = len(rs)
        if rule.get("tie") == "exclude":
            # P(excluded) = P(normalised mean exactly 1/2), also by enumeration
            ties = sum(Fraction(sum(rs[j] for j in idx), k) == 2
                       for idx in itertools.product(range(k), repeat=k))
            p_ex = ties / k**k
            assert abs(row["p_excluded"] - p_ex) <= 4.5 * math.sqrt(p_ex * (1 - p_ex) / B) + 1e-12
            continue
        p_pos = float(_exact_p_positive(rs, lo=0, hi=4, threshold=rule.get("threshold")))
        assert abs(row["p_positive"] - p_pos) <= 4.5 * math.sqrt(p_pos * (1 - p_pos) / B) + 1e-12
        want_flip = p_pos if row["label"] == 0 else 1 - p_pos
        assert row["flip_rate"] == pytest.approx(
            row["p_positive"] if row["label"] == 0 else 1 - row["p_positive"], abs=1e-12)
        assert abs(row["flip_rate"] - want_flip) <= 4.5 * math.sqrt(p_pos * (1 - p_pos) / B) + 1e-12
        # exact bootstrap sd of the mean: sqrt(population variance / k) / (max - min)
        exact_sd = math.sqrt(np.var(rs) / k) / 4
        assert row["soft_sd"] == pytest.approx(exact_sd, rel=0.08, abs=1e-12)


def _loop_oracle(votes, B, seed, *, lo, hi):
    """Materialise each replicate from the draw contract and count flips item by item."""
    ids = sorted(votes)
    gen = np.random.default_rng(seed)
    slots = [(i, len(votes[i])) for i in ids for _ in votes[i]]
    orig = {i: Fraction(sum(votes[i]), len(votes[i])) for i in ids}
    half = Fraction(lo + hi, 2)
    flips = dict.fromkeys(ids, 0)
    per_rep = []
    for _ in range(B):
        u = gen.random(len(slots))
        drawn = {i: [] for i in ids}
        for (i, k), x in zip(slots, u, strict=True):
            drawn[i].append(votes[i][int(x * k * (1.0 - 2.0**-52))])
        n = 0
        for i in ids:
            m = Fraction(sum(drawn[i]), len(drawn[i]))
            if (m > half) != (orig[i] > half):
                flips[i] += 1
                n += 1
        per_rep.append(n)
    return np.array([flips[i] / B for i in ids]), np.array(per_rep)


def test_engine_equals_the_materialised_resample():
    votes = _problem(11, n_items=12, hi=1)
    B = 60
    st = label_stability(_table(votes), scale=(0, 1), n_resamples=B, rng=7)
    flip, per_rep = _loop_oracle(votes, B, 7, lo=0, hi=1)
    assert_array_equal(st.items["flip_rate"].to_numpy(), flip)
    allrow = st.summary[st.summary["n_ratings"] == "all"].iloc[0]
    assert allrow["flips_mean"] == pytest.approx(per_rep.mean(), rel=1e-12)
    assert (allrow["flips_ci_low"], allrow["flips_ci_high"]) == tuple(
        np.percentile(per_rep, [2.5, 97.5]))


@pytest.mark.parametrize("batch", [1, 7])
def test_batch_size_changes_nothing(batch):
    t = _table(_problem(5), scale=(0, 4))
    a = label_stability(t, scale=(0, 4), n_resamples=50, rng=3)
    b = label_stability(t, scale=(0, 4), n_resamples=50, rng=3, batch=batch)
    pd.testing.assert_frame_equal(a.items, b.items)
    pd.testing.assert_frame_equal(a.summary, b.summary)


def test_summary_groups_by_number_of_ratings_and_cohort():
    votes = {"a": [1, 1, 1], "b": [0, 1], "c": [1], "d": [0, 0, 1]}
    t = _table(votes)
    t.insert(0, "cohort", np.where(t["item_id"].isin(["a", "b"]), "c1", "c2"))
    st = label_stability(t, scale=(0, 1), n_resamples=200, rng=0)
    s = st.summary.set_index(["cohort", "n_ratings"])
    assert s.loc[("c1", "all"), "n_items"] == 2 and s.loc[("c2", "all"), "n_items"] == 2
    assert set(s.index) == {("c1", "all"), ("c1", "2"), ("c1", "3"), ("c2", "all"), ("c2", "1"),
                            ("c2", "3")}
    # identical ratings (a) and a single rating (c) never move
    items = st.items.set_index("item_id")
    assert items.loc["a", "flip_rate"] == 0 and items.loc["c", "flip_rate"] == 0
    assert s.loc[("c1", "all"), "flips_mean"] == pytest.approx(
        s.loc[("c1", "2"), "flips_mean"] + s.loc[("c1", "3"), "flips_mean"])


def test_hedges_follow_the_declared_policy_and_dropped_items_are_listed():
    codes = {"YES": 1, "NO": 0, "?": "hedge"}
    t = _table({"a": ["YES", "?", "NO"], "b": ["?", "?"], "c": ["NO", "NO"]}, codes=codes)
    with pytest.raises(MedauditError, match="hedged"):
        label_stability(t, scale=(0, 1), n_resamples=20)
    st = label_stability(t, scale=(0, 1), hedge="exclude", n_resamples=20, rng=0)
    assert st.dropped["item_id"].tolist() == ["b"] and "b" not in st.items["item_id"].tolist()
    assert st.items.set_index("item_id").loc["a", "n_ratings"] == 2
    assert st.options["n_ratings_excluded"] == 3
    half = label_stability(t, scale=(0, 1), hedge="half", n_resamples=20, rng=0)
    assert half.items.set_index("item_id").loc["b", "label_soft"] == 0.5


def test_spec_rules_and_bad_input():
    t = _table({"a": [1, 2], "b": [4, 5]}, scale=(1, 5))
    spec = AnnotationsSpec(path="x.csv", scale={"min": 1, "max": 5}, hard="threshold", threshold=3)
    st = label_stability_with_spec(t, spec, n_resamples=30, rng=1)
    assert st.items["label"].tolist() == [0.0, 1.0] and st.options["threshold"] == 3
    with pytest.raises(SchemaError, match="mean-vote"):
        label_stability_with_spec(t, AnnotationsSpec(path="x.csv", soft="glad"), n_resamples=10)
    with pytest.raises(SchemaError, match="validate them first"):
        label_stability(t.drop(columns="value"), scale=(1, 5))
    with pytest.raises(MedauditError, match="n_resamples"):
        label_stability(t, scale=(1, 5), n_resamples=0)
