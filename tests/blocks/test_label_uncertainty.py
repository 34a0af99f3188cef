"""Block `label_uncertainty` (paper 001 M1.4-M1.8; issue 4 item 3).

Witnesses: scikit-learn (AUROC, pooled AP) and the double-sum soft oracles of
tests/_oracles.py on hand-aggregated labels; a planted cohort where the hard and the soft
ranking must differ (checked by the oracles before the block is asked); numpy's
correlation for R^2; scipy.stats.binomtest for the stability test; the stats engine
called directly with the block's cell generator; determinism; refusal of mismatched
image sets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as ss
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import label_uncertainty as LU
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from medaudit.labels import RatingScale, attach_labels, validate_annotations
from medaudit.stats.annotation_bootstrap import annotation_bootstrap, rank_stability_test
from tests import _oracles as oracle
from tests._support import SpecContext, context, run
from tests._support import one as _row


def make_ctx(votes: dict, scores: dict, *, ann: dict | None = None, lu: dict | None = None,
             scale=(0, 1), drop=None, codes=None) -> SpecContext:
    """votes: image -> list of ratings; scores: model -> {image: score}."""
    ann_spec = {"path": "unused.csv", "scale": {"codes": codes} if codes else
                {"min": scale[0], "max": scale[1]}, **(ann or {})}
    spec = AuditSpec.model_validate({
        "name": "t", "scores": "unused.csv", "cohorts": {"c": {}}, "seed": 11, "n_resamples": 200,
        "annotations": ann_spec, "blocks": ["label_uncertainty"],
        "label_uncertainty": {"n_resamples": 300, **(lu or {})}})
    rows = [{"item_id": i, "annotator": f"r{a}", "rating": v}
            for i, vs in votes.items() for a, v in enumerate(vs)]
    sc = RatingScale.from_spec(spec.annotations.scale)
    frame = validate_annotations(pd.DataFrame(rows), scale=sc)
    table = pd.DataFrame([{"image_id": i, "cohort": "c", "model": m, "prompt": "none",
                           "score": float(s)} for m, by in scores.items() for i, s in by.items()
                          if (m, i) != drop])
    table = attach_labels(table, frame, spec.annotations, source="test")
    return context(scores=validate_score_table(table), spec=spec, annotations=frame)


# the planted cohort: 4 readers; P* are majority-positive, N* majority-negative
VOTES = {"P1": [1, 1, 1, 1], "P2": [1, 1, 1, 1], "P3": [1, 1, 1, 0], "P4": [1, 1, 1, 0],
         "N1": [1, 1, 0, 0], "N2": [1, 1, 0, 0], "N3": [0, 0, 0, 0], "N4": [0, 0, 0, 0]}
# A separates the hard labels perfectly but puts the half-positive N1, N2 at the very bottom;
# B follows the vote fraction but lets N1 above P4 (one hard error)
ORDER = {"A": ["P3", "P4", "P1", "P2", "N3", "N4", "N1", "N2"],
         "B": ["P1", "P2", "P3", "N1", "P4", "N2", "N3", "N4"],
         "C": ["P1", "N3", "P2", "N1", "P3", "N4", "P4", "N2"]}
SCORES = {m: {i: 1.0 - k / 10 for k, i in enumerate(order)} for m, order in ORDER.items()}
IDS = sorted(VOTES)


def _labels():
    soft = np.array([np.mean(VOTES[i]) for i in IDS])
    return soft, (soft > 0.5).astype(int)


def _oracle_metrics(m):
    soft, hard = _labels()
    s = np.array([SCORES[m][i] for i in IDS])
    return {"roc_auc": roc_auc_score(hard, s),
            "average_precision[ties=pooled]": average_precision_score(hard, s),
            "soft_roc_auc": oracle.soft_auroc_strict(soft, s),
            "soft_average_precision": oracle.soft_ap_known_self(soft, s)}


@pytest.fixture(scope="module")
def planted():
    ctx = make_ctx(VOTES, SCORES)
    return ctx, run(LU, ctx)


def test_premise_of_the_planted_case():
    a, b = _oracle_metrics("A"), _oracle_metrics("B")
    assert a["roc_auc"] == 1.0 and b["roc_auc"] < 1.0
    assert a["soft_roc_auc"] < b["soft_roc_auc"]


def test_estimates_match_sklearn_and_double_sums(planted):
    _, res = planted
    t = res.tables["metrics"]
    for m in ORDER:
        for crit, v in _oracle_metrics(m).items():
            assert _row(t, model=m, criterion=crit)["estimate"] == pytest.approx(v, rel=1e-12)


def test_soft_and_hard_rankings_differ_where_planted(planted):
    _, res = planted
    t = res.tables["metrics"]
    assert _row(t, model="A", criterion="roc_auc")["rank"] == 1
    assert _row(t, model="B", criterion="roc_auc")["rank"] == 2
    assert _row(t, model="B", criterion="soft_roc_auc")["rank"] == 1
    rc = res.tables["rank_changes"]
    ab = _row(rc, model_a="A", model_b="B", criterion="soft_roc_auc")
    assert (ab["order_ordinary"], ab["order_soft"], bool(ab["changed"])) == (
        "a_higher", "b_higher", True)
    # every flagged change is a real reversal of the two estimates
    for _, r in rc.iterrows():
        flip = np.sign(r["ordinary_a"] - r["ordinary_b"]) != np.sign(r["soft_a"] - r["soft_b"])
        assert bool(r["changed"]) == bool(flip)


def test_r2_between_ordinary_and_soft_values(planted):
    _, res = planted
    ag = res.tables["agreement"]
    for o, s in (("roc_auc", "soft_roc_auc"),
                 ("average_precision[ties=pooled]", "soft_average_precision")):
        x = [_oracle_metrics(m)[o] for m in sorted(ORDER)]
        y = [_oracle_metrics(m)[s] for m in sorted(ORDER)]
        r = _row(ag, criterion=s)
        assert r["r2"] == pytest.approx(np.corrcoef(x, y)[0, 1] ** 2, rel=1e-10)
        assert r["n_models"] == 3 and r["ordinary_criterion"] == o


def test_annotation_bootstrap_and_binomial_test(planted):
    ctx, res = planted
    # the engine called directly with the block's cell generator (the engine itself is
    # witnessed by the loop oracle in tests/stats/test_annotation_bootstrap.py)
    item = np.repeat(np.arange(len(IDS)), 4)
    ratings = np.concatenate([VOTES[i] for i in IDS]).astype(float)
    scores = {m: np.array([SCORES[m][i] for i in IDS]) for m in sorted(ORDER)}
    ab = annotation_bootstrap(ratings, item, scores, n_resamples=300,
                              rng=ctx.rng(LU.NAME, "c", "none", "annotations"))
    st = res.tables["stability"]
    for mid in ab.metrics:
        for meth in ("spearman", "kendall"):
            got = _row(st, criterion=mid, correlation=meth)
            assert got["estimate"] == pytest.approx(ab.stability(mid, meth), rel=1e-12)
            assert got["n_degenerate"] == ab.n_degenerate[mid]
    tests = res.tables["stability_test"]
    for o, s in zip(ab.metrics[:2], ab.metrics[2:], strict=True):
        row = _row(tests, criterion=s)
        t = rank_stability_test(ab.spearman[s], ab.spearman[o])
        assert (row["k"], row["n"]) == (t.statistic, t.n)
        assert row["pvalue"] == pytest.approx(
            ss.binomtest(int(row["k"]), int(row["n"]), 0.5, alternative="greater").pvalue, rel=1e-12)
        assert row["significant"] == (row["pvalue"] < 0.05)
    assert (tests["pvalue_adj"] >= tests["pvalue"]).all()
    ai = res.tables["annotation_intervals"]
    lo_ok = ai["ci_low"] <= ai["ci_high"]
    assert lo_ok.all() and (ai["design"] == "annotation_bootstrap").all()


def test_every_row_carries_its_specification(planted):
    _, res = planted
    for name, df in res.tables.items():
        assert len(df), name
        assert {"model", "prompt", "cohort", "criterion", "design", "seed"} <= set(df.columns), name
        assert (df["seed"] == 11).all()


def test_deterministic(planted):
    ctx, res = planted
    again = run(LU, make_ctx(VOTES, SCORES))
    for k in res.tables:
        pd.testing.assert_frame_equal(res.tables[k], again.tables[k])


def test_enhance_threshold_rule_and_hedges():
    # scale 0..2 with a hedge code; hard = mean > 1 after hedges count as the midpoint
    codes = {"0": 0, "1": 1, "2": 2, "?": "hedge"}
    votes = {"a": ["2", "2", "1"], "b": ["1", "1", "?"], "c": ["0", "1", "0"],
             "d": ["2", "?", "2"], "e": ["0", "0", "1"]}
    scores = {"m1": {"a": .9, "b": .6, "c": .3, "d": .8, "e": .1},
              "m2": {"a": .2, "b": .9, "c": .5, "d": .4, "e": .7},
              "m3": {"a": .5, "b": .4, "c": .6, "d": .9, "e": .2}}
    ctx = make_ctx(votes, scores, codes=codes, ann={"hard": "threshold", "threshold": 1,
                                                     "hedge": "half"}, lu={"n_resamples": 50})
    res = run(LU, ctx)
    means = {"a": 5 / 3, "b": 1.0, "c": 1 / 3, "d": 5 / 3, "e": 1 / 3}  # "?" counts 1
    ids = sorted(votes)
    hard = np.array([means[i] > 1 for i in ids], dtype=int)
    soft = np.array([means[i] / 2 for i in ids])
    for m in scores:
        s = np.array([scores[m][i] for i in ids])
        t = res.tables["metrics"]
        assert _row(t, model=m, criterion="roc_auc")["estimate"] == pytest.approx(
            roc_auc_score(hard, s), rel=1e-12)
        assert _row(t, model=m, criterion="soft_roc_auc")["estimate"] == pytest.approx(
            oracle.soft_auroc_strict(soft, s), rel=1e-12)
        # the annotation bootstrap starts from the same labels
        ai = res.tables["annotation_intervals"]
        assert _row(ai, model=m, criterion="soft_roc_auc")["estimate"] == pytest.approx(
            oracle.soft_auroc_strict(soft, s), rel=1e-12)


def test_one_rating_per_item_is_said_to_be_stable_by_construction():
    # probe finding: with one annotator (or one rating per item) every stability row read
    # 1.0 [1.0, 1.0] with an empty qualification, as if the ranking had been tested
    votes = {i: [v[0]] for i, v in VOTES.items()}
    res = run(LU, make_ctx(votes, SCORES, lu={"n_resamples": 50}))
    st = res.tables["stability"]
    assert (st["ci_low"] == st["ci_high"]).all()
    assert (st["qualification"] == "one rating per item: stable by construction").all()
    assert any("every item has one rating, so the annotation bootstrap cannot change any label"
               in n for n in res.notes)
    planted = run(LU, make_ctx(VOTES, SCORES, lu={"n_resamples": 50}))
    assert not planted.tables["stability"]["qualification"].str.contains("one rating").any()


def test_refuses_mismatched_image_sets():
    ctx = make_ctx(VOTES, SCORES, drop=("B", "N2"))
    with pytest.raises(SchemaError, match=r"model 'B'.*N2"):
        run(LU, ctx)


def test_unknown_models_and_cohorts_are_errors():
    with pytest.raises(SchemaError, match=r"\['Z'\]"):
        run(LU, make_ctx(VOTES, SCORES, lu={"models": ["A", "Z"]}))
    with pytest.raises(SchemaError, match=r"\['nope'\]"):
        run(LU, make_ctx(VOTES, SCORES, lu={"cohorts": ["nope"]}))


def test_crowd_model_labels_are_not_bootstrapped():
    res = run(LU, make_ctx(VOTES, SCORES, ann={"soft": "dawid_skene"}, lu={"n_resamples": 20}))
    assert "stability" not in res.tables and len(res.tables["metrics"]) == 12  # no rows: not written
    assert any("not annotation-bootstrapped" in n for n in res.notes)


def _duplicated_auroc(p, s):
    # tie-aware soft AUROC: scikit-learn on the data set duplicated into a positive copy of
    # weight p and a negative copy of weight 1 - p (M1.2 grouped = trapezoid, anchors T9)
    return roc_auc_score(np.r_[np.ones(p.size), np.zeros(p.size)], np.r_[s, s],
                         sample_weight=np.r_[p, 1 - p])


def test_tied_scores_are_flagged_and_grouped_ties_are_tie_aware():
    # model T gives only three distinct scores: under stable ties the soft metrics follow the
    # image-id order inside each tie; grouped ties must match sklearn on duplicated data
    tied = {i: (0.9 if i in ("P1", "P2", "N1") else 0.5 if i in ("P3", "N3", "P4") else 0.1)
            for i in IDS}
    scores = {**SCORES, "T": tied}
    stable = run(LU, make_ctx(VOTES, scores, lu={"n_resamples": 30}))
    note = [n for n in stable.notes if "tied scores" in n]
    assert note and "T: 8" in note[0] and "A:" not in note[0]
    # the duplicated-data witness pairs each item with itself at a tie (one half: the
    # trapezoid form) and weights AP as Definition 2.2 is written
    grouped = run(LU, make_ctx(VOTES, scores, lu={"n_resamples": 30, "soft_ties": "grouped",
                                                  "soft_variant": "trapezoid",
                                                  "soft_ap_variant": "as_written"}))
    assert not any("tied scores" in n for n in grouped.notes)
    soft, _ = _labels()
    crit = "soft_roc_auc[ties=grouped,variant=trapezoid]"
    for m, by in scores.items():
        s = np.array([by[i] for i in IDS])
        want = _duplicated_auroc(soft, s)
        # the case bootstrap's metric and the annotation bootstrap's engine agree with sklearn
        assert _row(grouped.tables["metrics"], model=m, criterion=crit)["estimate"] == \
            pytest.approx(want, rel=1e-12)
        assert _row(grouped.tables["annotation_intervals"], model=m, criterion=crit)["estimate"] == \
            pytest.approx(want, rel=1e-12)
        ap = average_precision_score(np.r_[np.ones(soft.size), np.zeros(soft.size)], np.r_[s, s],
                                     sample_weight=np.r_[soft, 1 - soft])
        assert _row(grouped.tables["metrics"], model=m,
                    criterion="soft_average_precision[ties=grouped,variant=as_written]")["estimate"] == \
            pytest.approx(ap, rel=1e-12)


def test_every_soft_variant_applies_under_both_tie_rules():
    # the one rule of stats.soft: variant and ties are independent options
    from medaudit.blocks.label_uncertainty import LabelUncertaintyConfig as LabelUncertaintySpec

    for ties in ("stable", "grouped"):
        for v in ("inclusive", "strict", "trapezoid"):
            for ap in ("known_self", "as_written"):
                c = LabelUncertaintySpec(soft_ties=ties, soft_variant=v, soft_ap_variant=ap)
                assert (c.soft_ties, c.soft_variant, c.soft_ap_variant) == (ties, v, ap)
    # unset options stay unset in the spec; the defaults are resolved by stats.soft
    assert LabelUncertaintySpec(soft_ties="grouped").soft_variant is None
