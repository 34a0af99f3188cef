"""Block ``spectrum`` (paper 000 M0.9, M0.10; Tables 9-11), checked against independent witnesses.

Witnesses: sklearn's ``roc_auc_score`` on the P ∪ G subset, the loop oracles of
``tests/_oracles.py`` (AURC, prevalence-weighted Brier, Holm), the M0.9 invariant
``AUROC(P, H ∪ S) = ½[AUROC(P, H) + AUROC(P, S)]`` when |H| = |S|, the (1+b)/(1+B)
form of the permutation p-value, and planted cohorts whose answer is known.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from medaudit.audit.spec import AuditSpec, check_spec_against_table
from medaudit.blocks import spectrum
from medaudit.blocks.rows import E_COLUMNS, PROVENANCE_COLUMNS
from medaudit.blocks.spectrum import SpectrumEntry as SpectrumSpec
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from tests import _oracles as O
from tests._support import SpecContext, context, run
from tests.blocks.conftest import small_context

PROMPT = "clinical"


# ----------------------------------------------------------------------------- helpers
def _table(cohort: str, pos: dict[str, np.ndarray], groups: dict[str, dict[str, np.ndarray]],
           prompt: str = PROMPT) -> pd.DataFrame:
    """Long score table: pos[model] = positive scores, groups[g][model] = group scores."""
    rows = []
    for m, s in pos.items():
        rows += [{"image_id": f"pos_{i}", "cohort": cohort, "model": m, "prompt": prompt,
                  "score": float(v), "label": 1, "negative_group": ""} for i, v in enumerate(s)]
        for g, by_model in groups.items():
            rows += [{"image_id": f"{g}_{i}", "cohort": cohort, "model": m, "prompt": prompt,
                      "score": float(v), "label": 0, "negative_group": g}
                     for i, v in enumerate(by_model[m])]
    return pd.DataFrame(rows)


def _context(df: pd.DataFrame, spectrum_entries: list[dict], *, check: bool = True,
             **spec_kw) -> SpecContext:
    spec = AuditSpec.model_validate({
        "name": "t", "scores": "scores.csv", "primary_prompt": PROMPT,
        "cohorts": {c: {} for c in df["cohort"].unique()}, "n_resamples": 200,
        "n_permutations": 199, "seed": 7, "spectrum": spectrum_entries, **spec_kw})
    table = validate_score_table(df, probabilities=spec.score_scale == "probabilities")
    if check:
        check_spec_against_table(spec, table, source="test")
    return context(scores=table, spec=spec)


def _subset(ctx: SpecContext, cohort: str, model: str, group: str):
    """(y, s) of P ∪ G straight from the long table (independent of the block's alignment).

    Ordered positives first, then the group, each by image_id: AURC breaks ties in
    confidence by item order (stable sort), and this is the order the block hands to the
    shared-positive engine.  AUROC and Brier do not depend on the order.
    """
    t = ctx.scores
    t = t[(t["cohort"] == cohort) & (t["model"] == model) & (t["prompt"] == ctx.spec.primary_prompt)]
    t = t[(t["label"] == 1) | (t["negative_group"] == group)]
    t = t.sort_values(["label", "image_id"], ascending=[False, True])
    return t["label"].to_numpy(dtype=float), t["score"].to_numpy(dtype=float)


def _mixed(seed=0):
    """Two models, three groups of different sizes, ties (scores rounded to 2 decimals)."""
    r = np.random.default_rng(seed)
    sizes = {"none": 40, "mild": 25, "severe": 15}
    pos = {m: np.round(r.beta(5, 2, 20), 2) for m in ("alpha", "beta")}
    groups = {g: {m: np.round(r.beta(2, 2 + k, n), 2) for m in ("alpha", "beta")}
              for k, (g, n) in enumerate(sizes.items())}
    return _table("c1", pos, groups)


# ----------------------------------------------------------------------------- witnesses
def test_group_metrics_match_sklearn_and_loop_oracles():
    ctx = _context(_mixed(), [{"cohort": "c1", "groups": ["none", "mild", "severe"],
                               "reference": "none", "test": "none", "prevalence": 0.1}])
    g = run(spectrum, ctx).tables["groups"]
    assert len(g) == 2 * 3 * 3  # models x groups x (roc_auc, aurc, brier at pi)
    for row in g.itertuples():
        y, s = _subset(ctx, "c1", row.model, row.group)
        assert (row.n, row.n_pos, row.n_neg) == (y.size, int(y.sum()), int((1 - y).sum()))
        # M0.10: group marginals follow the cohort's design (B-ORD on P ∪ G for an
        # 'ordinary' cohort such as TBX val; within-label = shared-positive on one group)
        expected = {"ordinary": "ordinary", "within_label": "shared_positive"}[ctx.cohort_design("c1")]
        assert row.negatives == row.group and row.design == expected
        assert row.ci_low <= row.estimate <= row.ci_high
        if row.criterion == "roc_auc":
            assert row.estimate == pytest.approx(roc_auc_score(y, s), abs=1e-12)
            assert row.prevalence == "observed"
        elif row.criterion == "aurc":
            assert row.estimate == pytest.approx(O.aurc(y, s), abs=1e-12)
        else:
            assert row.criterion == "brier_score[prevalence=0.1]" and row.prevalence == 0.1
            assert row.estimate == pytest.approx(O.brier_prevalence(y, s, 0.1), abs=1e-12)
    # qualification: groups under 30 images are flagged, the 40-image group is not
    q = g.drop_duplicates("group").set_index("group")["qualification"]
    assert q["none"] == "" and "small group (n<30)" in q["mild"] and "n=15" in q["severe"]


def test_m09_invariant_equal_group_sizes_hand_built():
    r = np.random.default_rng(11)
    pos = {"m": r.beta(4, 2, 25)}
    groups = {"healthy": {"m": r.beta(1.5, 4, 30)}, "sick": {"m": r.beta(3, 3, 30)}}
    df = _table("tb", pos, groups)
    ctx = _context(df, [{"cohort": "tb", "groups": ["healthy", "sick"]}])
    g = run(spectrum, ctx).tables["groups"].query("criterion == 'roc_auc'").set_index("group")
    union = roc_auc_score(df["label"], df["score"])  # P ∪ H ∪ S, one model
    assert 0.5 * (g.loc["healthy", "estimate"] + g.loc["sick", "estimate"]) == pytest.approx(
        union, abs=1e-12)


def test_m09_invariant_on_the_simulated_tbx_val(ctx):
    g = run(spectrum, ctx).tables["groups"]
    g = g[(g["cohort"] == "tbx11k-val") & (g["criterion"] == "roc_auc")]
    assert set(g["group"]) == {"healthy", "sick"}
    assert g.groupby("model")["n_neg"].nunique().eq(1).all()  # |H| = |S|
    for m, rows in g.groupby("model"):
        y, s = _subset(ctx, "tbx11k-val", m, "healthy")
        y2, s2 = _subset(ctx, "tbx11k-val", m, "sick")
        y_all, s_all = np.r_[y, y2[y2 == 0]], np.r_[s, s2[y2 == 0]]
        assert rows["estimate"].mean() == pytest.approx(roc_auc_score(y_all, s_all), abs=1e-12)


def test_contrast_is_difference_of_group_aurocs_and_oriented(ctx):
    res = run(spectrum, ctx).tables
    g = res["groups"].query("criterion == 'roc_auc'").set_index(["entry", "model", "group"])
    c = res["contrasts"]
    for row in c.itertuples():
        a = g.loc[(row.entry, row.model, row.group_a), "estimate"]
        b = g.loc[(row.entry, row.model, row.group_b), "estimate"]
        assert row.estimate == pytest.approx(a - b, abs=1e-12)
        assert (row.auroc_a, row.auroc_b) == (pytest.approx(a), pytest.approx(b))
        assert row.negatives == f"{row.group_a} - {row.group_b}"
        assert row.criterion == "roc_auc_difference" and row.design == "shared_positive"
        assert row.ci_low <= row.estimate <= row.ci_high
    tb = c[c["cohort"] == "tbx11k-val"]
    assert set(zip(tb["group_a"], tb["group_b"], strict=True)) == {("healthy", "sick")}  # Table 9: H - S
    vd = c[c["cohort"] == "vindr"]
    # Table 11: named minus no-finding; the remaining pair in declared order
    assert set(zip(vd["group_a"], vd["group_b"], vd["contrast"], strict=True)) == {
        ("pneumonia", "no_finding", "versus_reference"),
        ("lung_tumor", "no_finding", "versus_reference"),
        ("pneumonia", "lung_tumor", "pairwise")}
    assert (vd["family"] == "descriptive").all() and vd["pvalue"].isna().all()
    assert vd["pvalue_adj"].isna().all() and vd["significant"].isna().all()


def test_permutation_pvalue_has_the_plus_one_form(ctx):
    c = run(spectrum, ctx).tables["contrasts"]
    tested = c[c["test"] == "permutation"]
    assert len(tested) == len(ctx.models())
    B = ctx.spec.n_permutations
    assert (tested["n_permutations"] == B).all()
    k = tested["pvalue"].to_numpy() * (B + 1)
    np.testing.assert_allclose(k, np.round(k), atol=1e-9)  # p = (1 + b) / (1 + B)
    assert (tested["pvalue"] >= 1 / (B + 1)).all() and (tested["pvalue"] <= 1).all()
    assert (tested["family"] == spectrum.PERMUTATION_FAMILY).all()


def test_holm_over_the_whole_block_matches_loop_oracle():
    entries = [SpectrumSpec(cohort="tbx11k-val", groups=["healthy", "sick"]),
               SpectrumSpec(cohort="tbx11k-train", groups=["healthy", "sick"]),
               SpectrumSpec(cohort="vindr", groups=["no_finding", "pneumonia", "lung_tumor"],
                            reference="no_finding", test="none", prevalence=0.1)]
    ctx = small_context(spectrum=entries)
    res = run(spectrum, ctx)
    c = res.tables["contrasts"]
    fam = c[c["family"] == spectrum.PERMUTATION_FAMILY]
    assert len(fam) == 2 * len(ctx.models())  # both permutation entries, every model
    np.testing.assert_allclose(fam["pvalue_adj"], O.holm(fam["pvalue"]), rtol=0, atol=1e-15)
    assert (fam["significant"] == (fam["pvalue_adj"] < 0.05)).all()
    assert any("m = 8" in n for n in res.notes)
    assert c.loc[c["family"] == "descriptive", "pvalue_adj"].isna().all()


def test_planted_sick_group_indistinguishable_from_positives():
    r = np.random.default_rng(3)
    n = 60
    pos = {"planted": r.beta(6, 2, n), "null": r.beta(6, 2, n)}
    groups = {"healthy": {"planted": r.beta(2, 6, n), "null": r.beta(2, 6, n)},
              # planted: sick drawn like the positives; null: sick drawn like the healthy
              "sick": {"planted": r.beta(6, 2, n), "null": r.beta(2, 6, n)}}
    ctx = _context(_table("tb", pos, groups), [{"cohort": "tb", "groups": ["healthy", "sick"]}])
    c = run(spectrum, ctx).tables["contrasts"].set_index("model")
    B = ctx.spec.n_permutations
    p = c.loc["planted"]
    assert p["estimate"] > 0.35 and p["ci_low"] > 0.25  # AUROC loss about 0.5
    assert p["pvalue"] == pytest.approx(1 / (B + 1))  # no permutation reaches the observed loss
    assert p["pvalue_adj"] == pytest.approx(2 / (B + 1)) and bool(p["significant"])
    q = c.loc["null"]
    assert q["ci_low"] < 0 < q["ci_high"] and q["pvalue"] > 0.05 and not bool(q["significant"])


def test_shared_positives_narrow_the_interval_of_a_difference():
    # With few positives the shared positives dominate both AUROCs; their placements against H
    # and against S are both increasing in the positive's score, so Cov(A_H, A_S) > 0 and the
    # interval of A_H - A_S is narrower than independence would give (sqrt of summed squares).
    r = np.random.default_rng(5)
    pos = {"m": r.uniform(0.2, 0.95, 12)}
    healthy = r.uniform(0.0, 0.7, 400)
    groups = {"healthy": {"m": healthy}, "sick": {"m": np.clip(healthy + 0.15, 0, 1)}}
    ctx = _context(_table("tb", pos, groups), [{"cohort": "tb", "groups": ["healthy", "sick"],
                                                "test": "none"}], n_resamples=1000)
    res = run(spectrum, ctx).tables
    g = res["groups"].query("criterion == 'roc_auc'").set_index("group")
    w = (g["ci_high"] - g["ci_low"]).to_dict()
    d = res["contrasts"].iloc[0]
    assert d["ci_high"] - d["ci_low"] < 0.6 * np.hypot(w["healthy"], w["sick"])


def test_model_differences_match_sklearn_with_verdicts():
    r = np.random.default_rng(8)
    n = 80
    y = np.r_[np.ones(n), np.zeros(n)]
    good = np.where(y == 1, r.beta(8, 2, 2 * n), r.beta(2, 8, 2 * n))
    poor = r.uniform(size=2 * n)
    pos = {"a_good": good[:n], "b_poor": poor[:n], "c_good": good[:n] * 0.9}
    groups = {"g": {"a_good": good[n:], "b_poor": poor[n:], "c_good": good[n:] * 0.9}}
    # a second group so the entry is valid (an entry names at least two groups)
    groups["g2"] = {m: v[: n // 2] for m, v in groups["g"].items()}
    ctx = _context(_table("c", pos, groups), [{"cohort": "c", "groups": ["g", "g2"], "test": "none"}])
    md = run(spectrum, ctx).tables["model_differences"]
    assert len(md) == 2 * 3  # groups x model pairs
    assert list(md["model"].iloc[:3]) == ["a_good - b_poor", "a_good - c_good", "b_poor - c_good"]
    for row in md.itertuples():
        assert row.model == f"{row.model_a} - {row.model_b}" and row.model_a < row.model_b
        ya, sa = _subset(ctx, "c", row.model_a, row.group)
        yb, sb = _subset(ctx, "c", row.model_b, row.group)
        np.testing.assert_array_equal(ya, yb)
        assert row.estimate == pytest.approx(roc_auc_score(ya, sa) - roc_auc_score(yb, sb),
                                             abs=1e-12)
        assert row.design == f"{ctx.cohort_design('c')}+paired"
        assert row.criterion == "roc_auc_difference"
        expect = ("a_better" if row.ci_low > 0 else "b_better" if row.ci_high < 0
                  else "unresolved")
        assert row.verdict == expect
    v = md.set_index(["group", "model"])["verdict"]
    assert v[("g", "a_good - b_poor")] == "a_better"
    assert v[("g", "b_poor - c_good")] == "b_better"
    assert v[("g", "a_good - c_good")] == "unresolved"  # a rescaling: identical ranks, D = 0


# ----------------------------------------------------------------------------- refusals
def test_refuses_mismatched_image_sets():
    df = _mixed()
    df = df[~((df["model"] == "beta") & (df["image_id"] == "mild_3"))]
    ctx = _context(df, [{"cohort": "c1", "groups": ["none", "mild"]}])
    with pytest.raises(SchemaError, match=r"(?s)identical image sets.*'beta'.*mild_3"):
        run(spectrum, ctx)


def test_empty_declared_group_is_a_clear_error():
    df = _mixed()
    # the spec check rejects a group the table does not have, naming it
    with pytest.raises(SchemaError, match=r"spectrum\[0\]\.groups: unknown negative group 'ghost'"):
        _context(df, [{"cohort": "c1", "groups": ["none", "ghost"]}])
    # bypassing the check, the block refuses it itself
    ctx = _context(df, [{"cohort": "c1", "groups": ["none", "ghost"]}], check=False)
    with pytest.raises(SchemaError, match=r"spectrum\[0\].*\['ghost'\] have no negative images"):
        run(spectrum, ctx)
    # a group that exists only at another prompt passes the spec check but is empty at the
    # primary prompt, where the block works
    other = df[df["negative_group"] == "severe"].assign(prompt="other", image_id="x")
    other["image_id"] = [f"other_{i}" for i in range(len(other))]
    other["negative_group"] = "late"
    ctx = _context(pd.concat([df, other]), [{"cohort": "c1", "groups": ["none", "late"]}])
    with pytest.raises(SchemaError, match=r"\['late'\] have no negative images"):
        run(spectrum, ctx)


# ----------------------------------------------------------------------------- shape, determinism
def test_tables_shape_and_qualifications(ctx):
    res = run(spectrum, ctx)
    assert res.name == spectrum.NAME == "spectrum"
    assert set(res.tables) == {"groups", "contrasts", "model_differences"}
    for t in res.tables.values():
        assert list(t.columns[:11]) == [*E_COLUMNS, *PROVENANCE_COLUMNS]
        assert (t["prompt"] == ctx.spec.primary_prompt).all() and (t["seed"] == ctx.seed).all()
        assert (t["n_resamples"] == ctx.spec.n_resamples).all()
        assert list(dict.fromkeys(t["cohort"])) == ["tbx11k-val", "vindr"]  # spec cohort order
    g = res.tables["groups"]
    assert set(g.loc[g["cohort"] == "tbx11k-val", "criterion"]) == {"roc_auc", "aurc"}
    assert set(g.loc[g["cohort"] == "vindr", "criterion"]) == {
        "roc_auc", "aurc", "brier_score[prevalence=0.1]"}
    models = ctx.models()
    assert len(g) == len(models) * (2 * 2 + 3 * 3)
    assert len(res.tables["contrasts"]) == len(models) * (1 + 3)
    assert len(res.tables["model_differences"]) == 6 * (2 + 3)
    expo = ctx.exposure("sim-chexficient", "vindr")
    assert expo
    for name, t in res.tables.items():
        vd = t[t["cohort"] == "vindr"]
        chex = vd[vd["model"].str.contains("sim-chexficient")]
        assert chex["qualification"].str.contains(expo, regex=False).all(), name
        assert not vd[~vd["model"].str.contains("sim-chexficient")]["qualification"].str.contains(
            expo, regex=False).any(), name
        small = vd["qualification"].str.contains("small group (n<30)", regex=False)
        neg = vd["negatives"]
        assert small[neg.str.contains("lung_tumor")].all(), name
        assert not small[neg == "no_finding"].any(), name


def test_deterministic_and_independent_of_other_entries(ctx):
    a, b = run(spectrum, ctx), run(spectrum, ctx)
    for k in a.tables:
        pd.testing.assert_frame_equal(a.tables[k], b.tables[k])
    assert a.notes == b.notes
    only_tbx = small_context(spectrum=[ctx.spec.spectrum[0]])
    c = run(spectrum, only_tbx)
    for k in a.tables:
        sub = a.tables[k][a.tables[k]["cohort"] == "tbx11k-val"].reset_index(drop=True)
        pd.testing.assert_frame_equal(sub, c.tables[k])


def test_logit_scores_report_auroc_only():
    df = _mixed()
    df["score"] = np.log(df["score"].clip(0.01, 0.99) / (1 - df["score"].clip(0.01, 0.99))) * 3
    ctx = _context(df, [{"cohort": "c1", "groups": ["none", "mild"], "prevalence": 0.2}],
                   score_scale="logits")
    res = run(spectrum, ctx)
    assert set(res.tables["groups"]["criterion"]) == {"roc_auc"}
    assert any("logits" in n for n in res.notes)


def test_a_model_scoring_positives_and_a_group_alike_is_qualified():
    """A model that gives the positives and one negative group a single score ranks none of
    them above another: that group's AUROC is 0.5 from ties alone (scikit-learn agrees) and
    its roc_auc and aurc rows say so; the other group's rows and every Brier row do not."""
    r = np.random.default_rng(3)
    pos = {"flat": np.full(20, 0.6), "real": r.beta(5, 2, 20)}
    groups = {"same": {"flat": np.full(30, 0.6), "real": r.beta(2, 3, 30)},
              "other": {"flat": r.beta(2, 5, 30), "real": r.beta(2, 5, 30)}}
    ctx = _context(_table("c1", pos, groups), [{"cohort": "c1", "groups": ["same", "other"],
                                                "test": "none", "prevalence": 0.1}])
    g = run(spectrum, ctx).tables["groups"]
    marked = g[g["qualification"].str.contains("constant scores", regex=False)]
    assert sorted(zip(marked["model"], marked["group"], marked["criterion"], strict=True)) == [
        ("flat", "same", "aurc"), ("flat", "same", "roc_auc")]
    y, s = _subset(ctx, "c1", "flat", "same")
    auc = marked[marked["criterion"] == "roc_auc"]["estimate"].iloc[0]
    assert auc == roc_auc_score(y, s) == 0.5
