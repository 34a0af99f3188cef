"""Block `retained`: target-composition effect (M0.13 comparison (i)) and Table 19 counts.

Witnesses: sklearn's roc_auc_score on the full and on the retained target sets; each
bootstrap replicate recomputed with sklearn on the materialised resample (np.repeat of
the replicate's counts) and on its retained part; a plain-numpy stratified bootstrap with
brute-force pair counting for the interval; Table 19 counts by hand on a small synthetic
exclusion; hypothesis for invariance of every replicate to increasing score transforms.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from medaudit.audit.spec import AuditSpec, ModelCard
from medaudit.blocks import retained
from medaudit.blocks.context import Resampling, cell_rng
from medaudit.blocks.retained import RetainedEntry as RetainedSpec
from medaudit.exceptions import SchemaError
from medaudit.io.modelcard import card_exclusion_counts, exclusion_card_entries
from medaudit.stats.designs import make_plan
from tests._support import context, run
from tests.blocks.conftest import small_context
from tests.blocks.test_retained import ENTRY, make_ctx, seeded_table

# retr lacks c1-00 (positive) and c1-13 (negative) and c1-05 (positive); it also scores an
# image orig lacks (c1-99), which belongs to neither of orig's target sets
DROPPED = ["c1-00", "c1-05", "c1-13"]


def excluded_table(**kw) -> pd.DataFrame:
    table = seeded_table(**kw)
    drop = (table["model"] == "retr") & table["image_id"].isin(DROPPED)
    table = table[~drop].reset_index(drop=True)
    extra = table[(table["model"] == "retr") & (table["image_id"] == "c1-01")].assign(
        image_id="c1-99")
    return pd.concat([table, extra], ignore_index=True)


def orig_ensemble(table: pd.DataFrame, cohort: str) -> pd.DataFrame:
    g = table[(table["model"] == "orig") & (table["cohort"] == cohort)]
    return g.groupby("image_id").agg(score=("score", "mean"), label=("label", "first"))


def composition_cell(y, s, keep, n_resamples=300, key=("k",)):
    return {"label": np.asarray(y, float), "score": np.asarray(s, float),
            "retained": np.asarray(keep, bool), "n_resamples": n_resamples,
            "confidence_level": 0.95, "seed": 2026, "key": key}


def run_composition(cell):
    """The block's composition cell on ``cell`` (the dict above), as the block runs it."""
    typed = retained.CompositionCell(key=cell["key"], label=cell["label"], score=cell["score"],
                                     retained=cell["retained"])
    return retained.run_composition(typed, Resampling(seed=cell["seed"],
                                                      n_resamples=cell["n_resamples"],
                                                      confidence_level=cell["confidence_level"]))


def materialised_replicates(cell):
    """Every replicate recomputed from scratch: draw counts, np.repeat, sklearn."""
    y, s, keep = cell["label"], cell["score"], cell["retained"]
    plan = make_plan("within_label", y, strata=keep)  # the design the block names
    counts = np.concatenate(list(plan.batches(cell["n_resamples"],
                                              cell_rng(cell["seed"], *cell["key"]))))
    rep_all, rep_ret, sizes = [], [], set()
    for w in counts:
        idx = np.repeat(np.arange(y.size), w)
        r = idx[keep[idx]]
        sizes.add((int(y[idx].sum()), int(y[r].sum()), r.size))
        rep_all.append(roc_auc_score(y[idx], s[idx]))
        rep_ret.append(roc_auc_score(y[r], s[r]))
    return np.array(rep_all), np.array(rep_ret), sizes


# ----------------------------------------------------------------------------- estimates
def test_composition_matches_sklearn_on_both_target_sets():
    table = excluded_table()
    res = run(retained, make_ctx(table, [ENTRY]))
    comp = res.tables["composition"]
    assert comp["cohort"].tolist() == ["c1", "c2"]
    r = comp.iloc[0]
    ens = orig_ensemble(table, "c1")
    assert len(ens) == 14  # orig's full targets: every image it scores
    kept = ens.drop(index=DROPPED)
    auc_all = roc_auc_score(ens["label"], ens["score"])
    auc_ret = roc_auc_score(kept["label"], kept["score"])
    assert (r["model"], r["targets_from"], r["contrast"]) == ("orig", "retr", "retained - all")
    assert r["auroc_all"] == pytest.approx(auc_all, abs=1e-12)
    assert r["auroc_retained"] == pytest.approx(auc_ret, abs=1e-12)
    assert r["estimate"] == pytest.approx(auc_ret - auc_all, abs=1e-12)
    # by hand: c1-00..06 positive; dropped c1-00, c1-05 (positives) and c1-13 (negative)
    assert (r["n"], r["n_pos"], r["n_neg"]) == (14, 7, 7)
    assert (r["n_retained"], r["n_pos_retained"], r["n_neg_retained"]) == (11, 5, 6)
    assert (r["n_excluded"], r["n_pos_excluded"], r["n_neg_excluded"]) == (3, 2, 1)
    assert "1 image(s) only 'retr' scores are in neither target set" in r["qualification"]
    assert r["design"] == retained.COMPOSITION_DESIGN and r["criterion"] == "roc_auc_difference"
    assert r["ci_low"] <= r["estimate"] <= r["ci_high"] and r["n_degenerate"] == 0
    assert r["auroc_all_ci_low"] <= r["auroc_all"] <= r["auroc_all_ci_high"]
    assert r["auroc_retained_ci_low"] <= r["auroc_retained"] <= r["auroc_retained_ci_high"]
    # AUROC(a, retained) is the Table 20 column "original ens" of the comparisons table
    c = res.tables["comparisons"].iloc[0]
    assert r["auroc_retained"] == pytest.approx(c["auroc_a"], abs=1e-12)
    # nothing excluded on c2: both target sets coincide, the difference is exactly 0
    r2 = comp.iloc[1]
    assert (r2["estimate"], r2["ci_low"], r2["ci_high"]) == (0.0, 0.0, 0.0)
    assert "target sets coincide" in r2["qualification"]


def test_composition_does_not_need_aligned_image_sets():
    """a and b score different images, which ctx.wide refuses for paired analyses."""
    ctx = make_ctx(excluded_table(), [ENTRY])
    with pytest.raises(SchemaError, match="c1-99|c1-00"):
        ctx.wide("c1", keys=[("orig", "p"), ("retr", "p")])
    assert len(run(retained, ctx).tables["composition"]) == 2


# ----------------------------------------------------------------------------- interval
def test_replicates_are_recomputations_on_materialised_resamples():
    gen = np.random.default_rng(5)
    y = np.r_[np.ones(9), np.zeros(13)]
    s = np.round(gen.uniform(size=y.size) + 0.4 * y, 1)  # rounded: many ties
    keep = np.ones(y.size, bool)
    keep[[0, 3, 10, 11, 20]] = False  # 2 positives and 3 negatives excluded
    cell = composition_cell(y, s, keep)
    out = run_composition(cell)
    rep_all, rep_ret, sizes = materialised_replicates(cell)
    np.testing.assert_allclose(out["rep_all"], rep_all, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["rep_retained"], rep_ret, rtol=0, atol=1e-12)
    assert sizes == {(9, 7, 17)}  # both target sets keep their class counts in every replicate
    lo, hi = np.percentile(rep_ret - rep_all, [2.5, 97.5])
    assert out["ci_difference"] == pytest.approx((lo, hi), abs=1e-12)
    assert out["ci_retained"] == pytest.approx(tuple(np.percentile(rep_ret, [2.5, 97.5])),
                                               abs=1e-12)
    assert out["auroc_all"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert out["auroc_retained"] == pytest.approx(roc_auc_score(y[keep], s[keep]), abs=1e-12)


def test_interval_agrees_with_plain_numpy_stratified_bootstrap():
    gen = np.random.default_rng(3)
    y = np.r_[np.ones(30), np.zeros(50)]
    s = gen.normal(size=y.size) + 1.2 * y
    keep = np.ones(y.size, bool)
    keep[gen.choice(30, 8, replace=False)] = False  # excluded positives: hard ones and easy ones
    keep[30 + gen.choice(50, 10, replace=False)] = False
    out = run_composition(composition_cell(y, s, keep, n_resamples=2000))
    B = 3000
    draws = [gen.choice(np.flatnonzero((y == c) & (keep == k)), (B, int(((y == c) & (keep == k))
                                                                           .sum())))
             for c in (1, 0) for k in (True, False)]
    pr, pe, nr, ne = draws

    def auc(pos, neg):  # Mann-Whitney by brute-force pair comparison, ties 1/2
        d = s[pos][:, :, None] - s[neg][:, None, :]
        return (d > 0).mean(axis=(1, 2)) + 0.5 * (d == 0).mean(axis=(1, 2))

    diff = auc(pr, nr) - auc(np.hstack([pr, pe]), np.hstack([nr, ne]))
    lo, hi = np.percentile(diff, [2.5, 97.5])
    assert out["ci_difference"][0] == pytest.approx(lo, abs=0.015)
    assert out["ci_difference"][1] == pytest.approx(hi, abs=0.015)


@settings(max_examples=25, deadline=None)
@given(n_pos=st.integers(2, 7), n_neg=st.integers(2, 7), seed=st.integers(0, 2**16))
def test_replicates_invariant_to_increasing_score_transform(n_pos, n_neg, seed):
    gen = np.random.default_rng(seed)
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    s = gen.integers(0, 5, y.size).astype(float)  # small integer scores: ties everywhere
    keep = gen.random(y.size) < 0.7
    keep[[0, n_pos]] = True  # the retained set keeps both classes
    a = run_composition(composition_cell(y, s, keep, n_resamples=50))
    b = run_composition(composition_cell(y, np.exp(s) - 7.0, keep, n_resamples=50))
    np.testing.assert_allclose(a["rep_all"], b["rep_all"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a["rep_retained"], b["rep_retained"], rtol=0, atol=1e-12)
    assert a["auroc_retained"] - a["auroc_all"] == pytest.approx(
        roc_auc_score(y[keep], s[keep]) - roc_auc_score(y, s), abs=1e-12)


# ----------------------------------------------------------------------------- Table 19
CARD_ENTRIES = {
    "exclusion[src]": "original=24, excluded=3, retained=21, positives_retained=10, "
                      "negatives_retained=11",
    "exclusion[src optimisation]": "original=20, excluded=2, retained=18, "
                                   "positives_retained=8, negatives_retained=10",
    # disagrees with the score table on c1 (excluded 3 there): stated, not silently used
    "exclusion[c1]": "original=14, excluded=2, retained=12, positives_retained=6, "
                     "negatives_retained=6",
}


def _ctx_with_card(table, training):
    spec = AuditSpec.model_validate({
        "name": "t", "scores": "t.csv", "primary_prompt": "p", "n_resamples": 50,
        "cohorts": {"c1": {}, "c2": {}}, "retained": [ENTRY],
        "models": [{"name": "retr", "training": {"seeds": "1,2,3", **training}}]})
    base = make_ctx(table, [ENTRY])
    return context(scores=base.scores, spec=spec, seed_scores=base.seed_scores)


def test_exclusion_counts_by_hand_and_from_the_card():
    t19 = run(retained, _ctx_with_card(excluded_table(), CARD_ENTRIES)).tables["exclusion"]
    cols = ["n_original", "n_excluded", "n_retained", "n_pos_retained", "n_neg_retained"]
    assert t19["cohort"].tolist() == ["c1", "c2", "src", "src optimisation"]
    assert t19["source"].tolist() == ["scores", "scores", "model card", "model card"]
    # by hand: c1 has 14 images (c1-00..06 positive); c1-00, c1-05, c1-13 excluded
    assert t19.iloc[0][cols].tolist() == [14, 3, 11, 5, 6]
    assert t19.iloc[1][cols].tolist() == [10, 0, 10, 5, 5]
    assert t19.iloc[2][cols].tolist() == [24, 3, 21, 10, 11]
    assert t19.iloc[3][cols].tolist() == [20, 2, 18, 8, 10]
    assert "records excluded=2, retained=12, positives_retained=6" in t19.iloc[0]["qualification"]
    assert t19.iloc[1]["qualification"] == "" and (t19["model"] == "retr").all()
    assert (t19["model_a"] == "orig").all() and (t19["criterion"] == "exclusion_counts").all()


def test_card_entries_round_trip_and_malformed_entry_is_an_error():
    counts = pd.DataFrame([{"cohort": "src selection", "original": 4, "excluded": 1,
                            "retained": 3, "positives_retained": 2, "negatives_retained": 1}])
    entries = exclusion_card_entries(counts)
    card = ModelCard(name="m", training={"device": "cpu", **entries})
    assert card_exclusion_counts(card) == {
        "src selection": {"original": 4, "excluded": 1, "retained": 3, "positives_retained": 2,
                          "negatives_retained": 1}}
    bad = {"exclusion[src]": "original=24, excluded=three"}
    with pytest.raises(SchemaError, match=r"'retr'.*exclusion\[src\]"):
        run(retained, _ctx_with_card(excluded_table(), bad))
    with pytest.raises(SchemaError, match="lack column"):
        exclusion_card_entries(counts.drop(columns="excluded"))


# ----------------------------------------------------------------------------- determinism
class ReversedBackend:
    """Runs cells last-to-first (another worker order) and returns them in order."""

    def map(self, fn, items):
        return [fn(x) for x in items[::-1]][::-1]


def test_deterministic_and_backend_independent():
    table = excluded_table()
    a = run(retained, make_ctx(table, [ENTRY]))
    ctx = make_ctx(table.sample(frac=1, random_state=2), [ENTRY])
    b = run(retained, context(scores=ctx.scores, spec=ctx.spec, seed_scores=ctx.seed_scores,
                                  backend=ReversedBackend()))
    assert list(a.tables) == ["comparisons", "seeds", "composition", "exclusion"]
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert a.notes == b.notes


def test_smoke_on_simulated_study_with_exposure():
    ctx = small_context()
    exposed = next(m for m in ctx.models() if ctx.exposure(m, "vindr"))
    other = next(m for m in ctx.models() if m != exposed)
    ctx = small_context(retained=[RetainedSpec(a=exposed, b=other, cohorts=["vindr", "montgomery"])])
    res = run(retained, ctx)
    comp = res.tables["composition"]
    assert comp["cohort"].tolist() == ["montgomery", "vindr"]
    assert comp.loc[comp["cohort"] == "vindr", "qualification"].str.contains("exposure|" + exposed
                                                                            ).all()
    assert (comp["estimate"] == 0).all()  # both models score every image: nothing excluded
    assert (res.tables["exclusion"]["n_excluded"] == 0).all()
