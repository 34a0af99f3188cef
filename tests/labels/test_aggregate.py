"""Aggregation of ratings to soft and hard labels (paper 001 M1.1; issue 4 item 1).

Witnesses: tiny tables aggregated by hand (means, majority with each tie rule, ENHANCE's
threshold, each hedge policy, dropped items); a planted crowd (three reliable readers,
two answering at random) whose truth Dawid-Skene / GLAD must recover; the crowd plumbing
is checked against crowd-kit called directly on the same long table.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.exceptions import MedauditError
from medaudit.labels import RatingScale, aggregate_labels, aggregate_with_spec, validate_annotations
from medaudit.labels.spec import AnnotationsSpec


def _table(rows, scale=(0, 1), codes=None):
    t = pd.DataFrame(rows, columns=["item_id", "annotator", "rating"])
    sc = RatingScale.from_codes(codes) if codes else RatingScale.numeric(*scale)
    return validate_annotations(t, scale=sc), sc


def _by_item(agg):
    return {r.item_id: (r.label_soft, r.label) for r in agg.labels.itertuples()}


TINY = [("p", "a", 1), ("p", "b", 1), ("p", "c", 0),   # 2/3 -> soft .667, hard 1
        ("q", "a", 0), ("q", "b", 1),                  # 1/2 -> a tie
        ("r", "a", 0), ("r", "b", 0), ("r", "c", 0)]   # 0   -> 0


def test_mean_and_majority_by_hand():
    t, sc = _table(TINY)
    got = _by_item(aggregate_labels(t, scale=sc))
    assert got["p"] == (pytest.approx(2 / 3, rel=1e-15), 1)
    assert got["q"] == (0.5, 0) and got["r"] == (0.0, 0)  # default tie: negative (strict majority)
    assert _by_item(aggregate_labels(t, scale=sc, tie="positive"))["q"] == (0.5, 1)


def test_tie_exclude_drops_and_reports():
    t, sc = _table(TINY)
    agg = aggregate_labels(t, scale=sc, tie="exclude")
    assert agg.labels["item_id"].tolist() == ["p", "r"]
    assert agg.dropped.to_dict("records") == [
        {"item_id": "q", "reason": "hard label is a tie (tie: exclude)"}]
    assert agg.counts["n_items"] == 3 and agg.counts["n_items_dropped"] == 1
    assert agg.counts["n_positive"] == 1 and agg.counts["n_negative"] == 1


def test_enhance_threshold_on_the_original_scale():
    # ENHANCE-like: scale 0..2, soft = mean/2, hard = mean > 1 (M1.1)
    rows = [("u", "s1", 2), ("u", "s2", 1), ("u", "s3", 1),   # mean 4/3 -> 1
            ("v", "s1", 1), ("v", "s2", 1), ("v", "s3", 1),   # mean 1   -> 0 (not > 1)
            ("w", "s1", 0), ("w", "s2", 2), ("w", "s3", 0)]   # mean 2/3 -> 0
    t, sc = _table(rows, scale=(0, 2))
    got = _by_item(aggregate_labels(t, scale=sc, hard="threshold", threshold=1))
    assert got["u"] == (pytest.approx(2 / 3, rel=1e-15), 1)
    assert got["v"] == (0.5, 0)
    assert got["w"] == (pytest.approx(1 / 3, rel=1e-15), 0)
    # majority instead: the normalised mean 1/2 of v is a tie
    assert _by_item(aggregate_labels(t, scale=sc, tie="positive"))["v"] == (0.5, 1)


HEDGED = [("x", "a", "YES"), ("x", "b", "UNSURE"), ("x", "c", "NO"),
          ("y", "a", "UNSURE"), ("y", "b", "UNSURE"),
          ("z", "a", "NO"), ("z", "b", "NO")]
CODES = {"YES": 1, "NO": 0, "UNSURE": "hedge"}


@pytest.mark.parametrize("policy, x, y", [
    ("negative", (1 / 3, 0), (0.0, 0)),
    ("positive", (2 / 3, 1), (1.0, 1)),
    ("half", (0.5, 0), (0.5, 0)),   # x: (1 + .5 + 0)/3 = .5 -> tie -> negative
])
def test_hedge_policies_by_hand(policy, x, y):
    t, sc = _table(HEDGED, codes=CODES)
    got = _by_item(aggregate_labels(t, scale=sc, hedge=policy))
    assert got["x"] == (pytest.approx(x[0], rel=1e-15), x[1])
    assert got["y"] == (pytest.approx(y[0], rel=1e-15), y[1])
    assert got["z"] == (0.0, 0)


def test_hedge_exclude_drops_items_without_usable_ratings():
    t, sc = _table(HEDGED, codes=CODES)
    agg = aggregate_labels(t, scale=sc, hedge="exclude")
    assert _by_item(agg)["x"] == (0.5, 0)  # YES, NO remain: a tie
    row = agg.labels.set_index("item_id").loc["x"]
    assert (row.n_ratings, row.n_hedged, row.n_used) == (3, 1, 2)
    assert agg.dropped.to_dict("records") == [
        {"item_id": "y", "reason": "every rating excluded (hedge: exclude)"}]
    assert agg.counts["n_ratings_excluded"] == 3 and agg.counts["n_hedged"] == 3


def test_undeclared_hedges_are_refused():
    t, sc = _table(HEDGED, codes=CODES)
    with pytest.raises(MedauditError, match="declare"):
        aggregate_labels(t, scale=sc)


def test_cohort_keys_and_deterministic_order():
    t = validate_annotations(pd.DataFrame({
        "cohort": ["k2", "k1", "k1", "k2"], "item_id": ["a", "a", "a", "a"],
        "annotator": ["r", "r", "s", "s"], "rating": [1, 0, 0, 1]}), scale=RatingScale.numeric(0, 1))
    agg = aggregate_labels(t, scale=(0, 1))
    assert agg.labels[["cohort", "item_id", "label"]].values.tolist() == [["k1", "a", 0],
                                                                          ["k2", "a", 1]]
    shuffled = aggregate_labels(t.iloc[::-1].reset_index(drop=True), scale=(0, 1))
    pd.testing.assert_frame_equal(shuffled.labels, agg.labels)


def _planted_crowd(seed=4, n_items=60):
    """Three reliable readers (90 % correct) and two who answer at random."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_items)
    rows = []
    for i in range(n_items):
        for a in range(5):
            ok = rng.random() < (0.9 if a < 3 else 0.5)
            rows.append((f"i{i:02d}", f"r{a}", int(truth[i] if ok else 1 - truth[i])))
    return truth, rows


@pytest.mark.parametrize("model", ["dawid_skene", "glad"])
def test_crowd_models_recover_the_planted_truth(model):
    truth, rows = _planted_crowd(n_items=40)
    t, sc = _table(rows)
    # few EM iterations keep GLAD (a scipy optimisation per step) quick; the planted
    # reliable majority is found long before convergence
    agg = aggregate_labels(t, scale=sc, soft=model, hard="posterior", crowd_iterations=20)
    post = agg.labels.set_index("item_id")["label_soft"]
    ids = [f"i{i:02d}" for i in range(len(truth))]
    hard = (post.loc[ids].to_numpy() > 0.5).astype(int)
    assert (hard == truth).mean() >= 0.9
    assert post.between(0, 1).all()
    assert agg.rules["soft"] == model and agg.rules["crowd_iterations"] == 20


def test_dawid_skene_plumbing_matches_crowdkit_directly():
    from crowdkit.aggregation import DawidSkene

    _, rows = _planted_crowd(seed=9, n_items=30)
    t, sc = _table(rows)
    agg = aggregate_labels(t, scale=sc, soft="dawid_skene")
    with warnings.catch_warnings():  # crowd-kit 1.4 uses pandas APIs pandas 3 deprecates
        warnings.simplefilter("ignore", DeprecationWarning)
        direct = DawidSkene(n_iter=100).fit_predict_proba(
            pd.DataFrame(rows, columns=["task", "worker", "label"]))
    np.testing.assert_allclose(agg.labels.set_index("item_id")["label_soft"].sort_index(),
                               direct[1].sort_index(), rtol=1e-9)
    # hard: majority still means the vote majority, not the posterior
    votes = pd.DataFrame(rows, columns=["i", "a", "v"]).groupby("i")["v"].mean()
    assert (agg.labels.set_index("item_id")["label"] == (votes > 0.5).astype(int)).all()


def test_crowd_models_need_binary_ratings():
    t, sc = _table([("a", "r", 1), ("a", "s", 2)], scale=(0, 2))
    with pytest.raises(MedauditError, match="binary"):
        aggregate_labels(t, scale=sc, soft="glad")


def test_aggregate_with_spec_follows_the_spec():
    t, _ = _table(HEDGED, codes=CODES)
    spec = AnnotationsSpec(path="x.csv", scale={"codes": CODES}, hedge="positive", tie="positive")
    agg = aggregate_with_spec(t, spec)
    assert _by_item(agg)["x"] == (pytest.approx(2 / 3, rel=1e-15), 1)
    assert agg.rules["hedge"] == "positive" and agg.to_dict()["counts"]["n_items"] == 3


# --------------------------------------------------- crowd-kit aggregators beyond DS / GLAD
TINY_CROWD = [("p", "a", 1), ("p", "b", 1), ("p", "c", 0),
              ("q", "a", 0), ("q", "b", 1), ("q", "c", 1),
              ("r", "a", 0), ("r", "b", 0), ("r", "c", 0),
              ("s", "a", 1), ("s", "b", 0)]


def test_weighted_majority_by_hand():
    t, sc = _table(TINY_CROWD)
    w = {"a": 3.0, "b": 1.0, "c": 1.0}
    got = _by_item(aggregate_labels(t, scale=sc, soft="majority_vote", annotator_weights=w,
                                    hard="posterior"))
    # P(1) = weight voting 1 / weight voting: p 4/5, q 2/5, r 0, s 3/4
    assert got["p"] == (pytest.approx(0.8, rel=1e-12), 1)
    assert got["q"] == (pytest.approx(0.4, rel=1e-12), 0)
    assert got["r"] == (0.0, 0) and got["s"] == (pytest.approx(0.75, rel=1e-12), 1)
    plain = _by_item(aggregate_labels(t, scale=sc, soft="majority_vote"))
    assert plain["q"][0] == pytest.approx(2 / 3, rel=1e-12)  # without weights: the vote share


def test_wawa_by_hand():
    # Wawa: skill = agreement with the plain majority (ties broken by crowd-kit, here none on
    # p, q, r; s is a 1-1 tie), then the majority weighted by those skills
    rows = [r for r in TINY_CROWD if r[0] != "s"]
    t, sc = _table(rows)
    agg = aggregate_labels(t, scale=sc, soft="wawa")
    mv = {"p": 1, "q": 1, "r": 0}
    votes = pd.DataFrame(rows, columns=["i", "a", "v"])
    skill = votes.assign(ok=votes.v == votes.i.map(mv)).groupby("a").ok.mean()
    want = votes.assign(w=votes.a.map(skill)).groupby("i").apply(
        lambda g: (g.w * g.v).sum() / g.w.sum(), include_groups=False)
    got = agg.labels.set_index("item_id")["label_soft"]
    np.testing.assert_allclose(got.loc[want.index], want, rtol=1e-12)


def test_zero_based_skill_uses_its_fitted_skills():
    from crowdkit.aggregation import ZeroBasedSkill

    _, rows = _planted_crowd(seed=2, n_items=30)
    t, sc = _table(rows)
    agg = aggregate_labels(t, scale=sc, soft="zero_based_skill", crowd_iterations=30)
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        skills = ZeroBasedSkill(n_iter=30).fit(data).skills_
    w = data.worker.map(skills)
    want = (data.assign(w=w, wl=w * data.label).groupby("task")[["wl", "w"]].sum()
            .pipe(lambda g: g.wl / g.w))
    got = agg.labels.set_index("item_id")["label_soft"]
    np.testing.assert_allclose(got.loc[want.index], want, rtol=1e-12)


def test_mace_matches_crowdkit_directly_and_recovers_the_truth():
    from crowdkit.aggregation import MACE

    truth, rows = _planted_crowd(seed=5, n_items=30)
    t, sc = _table(rows)
    agg = aggregate_labels(t, scale=sc, soft="mace", hard="posterior", crowd_iterations=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        direct = MACE(n_iter=10, random_state=0).fit_predict_proba(
            pd.DataFrame(rows, columns=["task", "worker", "label"]))
    got = agg.labels.set_index("item_id")["label_soft"].sort_index()
    np.testing.assert_allclose(got, direct[1].sort_index(), rtol=1e-9)
    ids = [f"i{i:02d}" for i in range(len(truth))]
    assert ((got.loc[ids].to_numpy() > 0.5).astype(int) == truth).mean() >= 0.9


def test_new_rules_check_their_inputs():
    t, sc = _table(TINY_CROWD)
    with pytest.raises(MedauditError, match="lacks reader"):
        aggregate_labels(t, scale=sc, soft="majority_vote", annotator_weights={"a": 1.0})
    with pytest.raises(MedauditError, match="only"):
        aggregate_labels(t, scale=sc, soft="wawa", annotator_weights={"a": 1, "b": 1, "c": 1})
    with pytest.raises(MedauditError, match="non-negative"):
        aggregate_labels(t, scale=sc, soft="majority_vote",
                         annotator_weights={"a": -1, "b": 1, "c": 1})
    agg = aggregate_labels(t, scale=sc, soft="majority_vote", annotator_weights={"a": 2, "b": 1,
                                                                               "c": 1})
    assert agg.rules["annotator_weights"] == {"a": 2.0, "b": 1.0, "c": 1.0}


NIH = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / \
    "nih_cxr14_google_expert_readers"


@pytest.mark.skipif(not NIH.is_dir(), reason="the NIH reader data live in ../shared/data")
def test_nih_readers_as_a_test_bed():
    # five radiologists on 810 images: every crowd model must agree closely with the plain
    # majority on a finding most images are read unanimously for
    from medaudit.datasets.annotations import read_nih_readers

    loaded = read_nih_readers(NIH, findings=["Pneumothorax"])
    t = validate_annotations(loaded.table, scale=RatingScale.numeric(0, 1))
    mv = aggregate_labels(t, scale=(0, 1)).labels.set_index(["cohort", "item_id"])["label"]
    for model in ("wawa", "zero_based_skill", "mace", "majority_vote"):
        agg = aggregate_labels(t, scale=(0, 1), soft=model, hard="posterior", crowd_iterations=10)
        lab = agg.labels.set_index(["cohort", "item_id"])["label"]
        assert len(lab) == 810 and agg.labels["label_soft"].between(0, 1).all()
        assert (lab == mv.loc[lab.index]).mean() > 0.95, model


@pytest.mark.parametrize("soft", ["dawid_skene", "glad", "mace", "wawa", "zero_based_skill"])
def test_a_crowd_model_with_nothing_to_learn_from_is_refused(soft):
    # probe finding: with one annotator the crowd models ran and gave soft labels that were
    # artefacts of their initialisation (GLAD 0.062 and 0.938, MACE 0.311 and 0.724)
    one, sc = _table([r for r in TINY if r[1] == "a"])
    with pytest.raises(MedauditError, match=rf"soft='{soft}' learns annotator reliability from "
                                            r"agreement between annotators, but the annotations "
                                            r"have 1 annotator\(s\) and at most 1 usable"):
        aggregate_labels(one, scale=sc, soft=soft)
    # one rating per item from several annotators: nothing to compare either
    spread, sc = _table([("p", "a", 1), ("q", "b", 0), ("r", "c", 1)])
    with pytest.raises(MedauditError, match="at most 1 usable rating"):
        aggregate_labels(spread, scale=sc, soft=soft)
    # majority_vote is a count, not a model: one annotator's votes are their labels
    got = _by_item(aggregate_labels(one, scale=sc, soft="majority_vote"))
    assert {k: v[0] for k, v in got.items()} == {"p": 1.0, "q": 0.0, "r": 0.0}
