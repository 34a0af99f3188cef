"""The subgroups block and its resampling (issue 16, item 3).

Witnesses: fairlearn's ``MetricFrame`` over scikit-learn metrics (and the slow oracles of
``tests/_oracles.py`` for ECE15 and the operating points) for every point estimate per
group, the differences and ratios and fairlearn's ``difference()``/``ratio()``; replicates
recomputed with scikit-learn on materialised resamples (np.repeat of the drawn images) for
the one-draw design; a hand-worked eight-image case; R-style Holm from the oracle;
determinism across runs, backends and cell order; one clear error for a missing column.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score
from statsmodels.stats.multitest import multipletests

from medaudit.audit.spec import AuditSpec, check_spec_against_table
from medaudit.blocks import BLOCKS, subgroups
from medaudit.blocks.context import cell_rng
from medaudit.blocks.subgroups import ALL, MISSING, SubgroupCell, run_subgroups, subgroup_rows
from medaudit.exceptions import DegenerateDataWarning, SchemaError
from medaudit.io.schema import validate_score_table
from medaudit.stats import bootstrap_pvalue, subgroup_bootstrap
from medaudit.stats.designs import make_plan
from medaudit.stats.multiplicity import _bh, _holm
from tests import _oracles as O
from tests._support import context, one, run, select

SE = "sensitivity_at_specificity[min_specificity=0.95]"
SP = "specificity_at_sensitivity[min_sensitivity=0.95]"
ECE = "ece[n_bins=15]"
#: metric id -> an independent implementation (scikit-learn, or the slow oracles)
WITNESS = {
    "roc_auc": roc_auc_score,
    "average_precision": average_precision_score,  # no tied scores below, so no tie rule matters
    "brier_score": brier_score_loss,
    ECE: lambda y, s: O.ece(y, s, n_bins=15),
    SE: lambda y, s: O.se_at_sp(y, s, 0.95),
    SP: lambda y, s: O.sp_at_se(y, s, 0.95),
}


# ----------------------------------------------------------------------------- data
def _table(seed: int = 7, sizes=(("site_a", 240), ("site_b", 160)), extra=None) -> pd.DataFrame:
    """Two models on two sites with sex (some missing), scanner (one small) and a numeric age band."""
    rng = np.random.default_rng(seed)
    rows = []
    for cohort, n in sizes:
        y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)].astype(int)
        rng.shuffle(y)
        sex = rng.choice(["F", "M"], n).astype(object)
        sex[rng.choice(n, 6, replace=False)] = None
        scanner = np.where(np.arange(n) < 20, "Philips", rng.choice(["GE", "Siemens"], n))
        scanner[:20] = "Philips"
        # the small group needs both classes for scikit-learn: 10 positives, 10 negatives
        y[:10], y[10:20] = 1, 0
        age = rng.choice([1.0, 2.0, 3.0], n)
        age[rng.choice(n, 4, replace=False)] = np.nan
        for m, sep in (("alpha", 1.4), ("beta", 0.7)):
            # continuous scores: no ties (so every AP convention agrees)
            s = 1.0 / (1.0 + np.exp(-(sep * (2 * y - 1) + rng.normal(0, 1, n))))
            for i in range(n):
                rows.append({"image_id": f"{cohort}-{i:03d}", "cohort": cohort, "model": m,
                             "prompt": "none", "score": float(s[i]), "label": int(y[i]),
                             "sex": sex[i], "scanner": scanner[i], "age_band": age[i],
                             **({} if extra is None else extra(cohort, i, y[i]))})
    return pd.DataFrame(rows)


def _spec(section, *, cohorts=None, **kw) -> AuditSpec:
    return AuditSpec.model_validate({
        "name": "subgroups", "scores": "scores.csv", "n_resamples": kw.pop("n_resamples", 200),
        "cohorts": cohorts or {"site_a": {}, "site_b": {"design": "within_label"}},
        "blocks": ["subgroups"], "subgroups": section, **kw})


def _ctx(section=("sex", "scanner", "age_band"), table=None, **kw):
    spec = _spec(list(section) if isinstance(section, tuple) else section, **kw)
    t = validate_score_table(_table() if table is None else table,
                             probabilities=spec.score_scale == "probabilities")
    check_spec_against_table(spec, t, source="test table")
    return context(spec, scores=t)


@pytest.fixture(scope="module")
def result():
    return run(subgroups, _ctx())


def _filled(df: pd.DataFrame, cohort: str, model: str, column: str):
    """(labels, scores, levels) of one cohort and model, levels as the block reads them."""
    g = df[(df["cohort"] == cohort) & (df["model"] == model)].sort_values("image_id")
    lv = g[column]
    if lv.dtype.kind == "f":
        lv = lv.map(lambda v: v if pd.isna(v) else str(int(v)))
    return (g["label"].to_numpy(), g["score"].to_numpy(), lv.fillna(MISSING).astype(str).to_numpy())


# ----------------------------------------------------------------------------- fairlearn
@pytest.mark.parametrize("column", ["sex", "scanner", "age_band"])
def test_point_estimates_match_fairlearn_metricframe(result, column):
    table = _table()
    m_t, c_t, s_t = (result.tables[k] for k in ("metrics", "contrasts", "summary"))
    for cohort in ("site_a", "site_b"):
        for model in ("alpha", "beta"):
            y, s, lv = _filled(table, cohort, model, column)
            mf = MetricFrame(metrics=WITNESS, y_true=y, y_pred=s,
                             sensitive_features=pd.Series(lv, name=column))
            e = dict(cohort=cohort, model=model, subgroup=column)
            for mid in WITNESS:
                assert one(m_t, **e, criterion=mid, group=ALL)["estimate"] == pytest.approx(
                    mf.overall[mid], abs=1e-12)
                for level, want in mf.by_group[mid].items():
                    got = one(m_t, **e, criterion=mid, group=level)
                    assert got["estimate"] == pytest.approx(want, abs=1e-12), (mid, level)
                    assert got["n"] == int((lv == level).sum())
                    d = one(c_t, **e, criterion=f"{mid}_difference", group=f"{level} - all")
                    assert d["estimate"] == pytest.approx(want - mf.overall[mid], abs=1e-12)
                    r = one(c_t, **e, criterion=f"{mid}_ratio", group=f"{level} / all")
                    assert r["estimate"] == pytest.approx(want / mf.overall[mid], rel=1e-12)
                levels = sorted(mf.by_group[mid].index)
                for i, a in enumerate(levels):
                    for b in levels[i + 1:]:
                        d = one(c_t, **e, criterion=f"{mid}_difference", group=f"{a} - {b}")
                        assert d["estimate"] == pytest.approx(
                            mf.by_group[mid][a] - mf.by_group[mid][b], abs=1e-12)
                for method in ("between_groups", "to_overall"):
                    d = one(s_t, **e, criterion=f"{mid}_difference", group=method)
                    assert d["estimate"] == pytest.approx(mf.difference(method=method)[mid],
                                                          abs=1e-12)
                    r = one(s_t, **e, criterion=f"{mid}_ratio", group=method)
                    assert r["estimate"] == pytest.approx(mf.ratio(method=method)[mid], rel=1e-12)
                    assert d["n_groups"] == len(levels)


def test_every_level_of_every_column_is_reported_with_the_e_columns(result):
    m_t = result.tables["metrics"]
    assert list(m_t.columns[:13]) == ["model", "prompt", "cohort", "negatives", "prevalence",
                                      "threshold", "criterion", "design", "n_resamples", "seed",
                                      "family", "subgroup", "group"]
    assert set(m_t["negatives"]) == {"all"} and set(m_t["prevalence"]) == {"observed"}
    assert tuple(dict.fromkeys(m_t["criterion"])) == subgroups.METRICS == tuple(WITNESS)
    got = {c: sorted(set(select(m_t, subgroup=c, cohort="site_a")["group"])) for c in
           ("sex", "scanner", "age_band")}
    assert got == {"sex": [ALL, MISSING, "F", "M"], "scanner": [ALL, "GE", "Philips", "Siemens"],
                   "age_band": [ALL, MISSING, "1", "2", "3"]}
    # designs: the cohort's own, resampled once for the subgroup evaluation
    assert set(select(m_t, cohort="site_a")["design"]) == {"ordinary+subgroup"}
    assert set(select(m_t, cohort="site_b")["design"]) == {"within_label+subgroup"}
    # rows in declared order: cohorts, columns, models, then (all) before the levels
    order = m_t[["cohort", "subgroup"]].drop_duplicates().apply(tuple, axis=1).tolist()
    assert order == [(c, s) for c in ("site_a", "site_b") for s in ("sex", "scanner", "age_band")]


# ----------------------------------------------------------------------------- hand-worked
def test_hand_worked_eight_images():
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    s = np.array([.1, .9, .2, .8, .6, .4, .3, .7])
    g = np.array(["a"] * 4 + ["b"] * 4)
    with pytest.warns(DegenerateDataWarning, match="degenerate replicates"):  # 4 images a group
        r = subgroup_bootstrap(y, {"m": s}, g, metrics=["roc_auc", "brier_score"], n_resamples=20,
                               rng=0)
    # AUROC: all 15 of 16 pairs in order (0.4 < 0.6); a: 4/4; b: positives .4, .7 vs
    # negatives .6, .3 -> 3 of 4
    assert r.overall[("m", "roc_auc")].estimate == 15 / 16
    assert r.by_group[("m", "a", "roc_auc")].estimate == 1.0
    assert r.by_group[("m", "b", "roc_auc")].estimate == 0.75
    assert r.between[("m", "a", "b", "roc_auc", "difference")].estimate == 0.25
    assert r.between[("m", "a", "b", "roc_auc", "ratio")].estimate == pytest.approx(4 / 3)
    assert r.to_overall[("m", "b", "roc_auc", "difference")].estimate == pytest.approx(-3 / 16)
    # Brier: a = (.01 + .01 + .04 + .04) / 4 = .025; b = (.36 + .36 + .09 + .09) / 4 = .225
    assert r.by_group[("m", "a", "brier_score")].estimate == pytest.approx(0.025)
    assert r.by_group[("m", "b", "brier_score")].estimate == pytest.approx(0.225)
    assert r.overall[("m", "brier_score")].estimate == pytest.approx(0.125)
    summ = {k[2:]: v.estimate for k, v in r.summary.items() if k[1] == "brier_score"}
    assert summ[("difference", "between_groups")] == pytest.approx(0.2)
    assert summ[("ratio", "between_groups")] == pytest.approx(0.025 / 0.225)
    assert summ[("difference", "to_overall")] == pytest.approx(0.1)
    # to_overall ratio: min(.025/.125, .125/.225) = 0.2
    assert summ[("ratio", "to_overall")] == pytest.approx(0.2)


def test_bootstrap_pvalue_by_hand():
    # 1 of 4 replicates <= 0, 3 >= 0: p = 2 (1 + 1) / 5
    assert bootstrap_pvalue([0.1, 0.2, 0.3, -0.1]) == pytest.approx(0.8)
    assert bootstrap_pvalue([0.1, 0.2, 0.3, 0.4]) == pytest.approx(0.4)  # 2 (1 + 0) / 5
    assert bootstrap_pvalue([0.0, 0.0]) == 1.0  # capped
    assert bootstrap_pvalue([np.nan, 0.5, 0.7], null=0.6) == pytest.approx(1.0)  # 2 (1+1) / 3
    assert math.isnan(bootstrap_pvalue([np.nan]))


# ----------------------------------------------------------------------------- the design
@pytest.mark.parametrize("design", ["ordinary", "within_label"])
def test_replicates_are_each_groups_part_of_one_draw(design):
    """Every replicate is the metric on the materialised resample restricted to the group."""
    rng = np.random.default_rng(3)
    n, seed, b = 60, 11, 25
    y = np.r_[np.ones(25), np.zeros(35)]
    s = rng.random(n)
    g = rng.choice(["x", "y", "z"], n)
    res = subgroup_bootstrap(y, {"m": s}, g, metrics=["roc_auc", "brier_score"], design=design,
                             n_resamples=b, rng=seed)
    weights = np.vstack(list(make_plan(design, y).batches(b, np.random.default_rng(seed))))
    assert weights.shape == (b, n)
    if design == "within_label":  # class sizes of the whole draw are fixed, group sizes are not
        assert set(weights[:, y == 1].sum(axis=1)) == {25}
    sizes = {lv: weights[:, g == lv].sum(axis=1) for lv in "xyz"}
    assert len(set(sizes["x"])) > 1

    def metric(mid, keep, w):
        yy, ss = np.repeat(y[keep], w[keep].astype(int)), np.repeat(s[keep], w[keep].astype(int))
        if mid == "roc_auc":
            return roc_auc_score(yy, ss) if 0 < yy.sum() < yy.size else np.nan
        return brier_score_loss(yy, ss, labels=[0, 1]) if yy.size else np.nan

    for mid in ("roc_auc", "brier_score"):
        whole = np.array([metric(mid, np.ones(n, bool), w) for w in weights])
        np.testing.assert_allclose(res.overall[("m", mid)].replicates, whole, rtol=1e-12)
        part = {lv: np.array([metric(mid, g == lv, w) for w in weights]) for lv in "xyz"}
        for lv in "xyz":
            np.testing.assert_allclose(res.by_group[("m", lv, mid)].replicates, part[lv],
                                       rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(res.to_overall[("m", lv, mid, "difference")].replicates,
                                       part[lv] - whole, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(res.to_overall[("m", lv, mid, "ratio")].replicates,
                                       part[lv] / whole, rtol=1e-12)
        np.testing.assert_allclose(res.between[("m", "x", "z", mid, "difference")].replicates,
                                   part["x"] - part["z"], rtol=1e-12, atol=1e-15)
        stack = np.vstack([part[lv] for lv in "xyz"])
        np.testing.assert_allclose(
            res.summary[("m", mid, "difference", "between_groups")].replicates,
            stack.max(axis=0) - stack.min(axis=0), rtol=1e-12, atol=1e-15)
        lo, hi = np.percentile(part["x"] - whole, [2.5, 97.5])
        r = res.to_overall[("m", "x", mid, "difference")]
        assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), rel=1e-12)


def test_the_block_draws_each_cohort_once_for_every_column(result):
    m_t = result.tables["metrics"]
    whole = select(m_t, group=ALL)
    for (cohort, model, crit), g in whole.groupby(["cohort", "model", "criterion"]):
        # one key per cohort: the (all) rows of sex, scanner and age_band are the same draws
        assert g[["estimate", "ci_low", "ci_high"]].nunique().max() == 1, (cohort, model, crit)
    # and the block's cell is the stats call with the documented key
    ctx = _ctx(["sex"])
    w = ctx.wide("site_a")
    y, s, lv = _filled(_table(), "site_a", "alpha", "sex")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)  # the 6 images of (missing)
        direct = subgroup_bootstrap(w.label, {"alpha": s}, lv, metrics=["roc_auc"], n_resamples=200,
                                    rng=cell_rng(ctx.seed, "subgroups", "site_a", "none"))
    row = one(m_t, cohort="site_a", model="alpha", subgroup="sex", group="F", criterion="roc_auc")
    got = direct.by_group[("alpha", "F", "roc_auc")]
    assert (row["ci_low"], row["ci_high"]) == (got.ci_low, got.ci_high)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**16), n=st.integers(12, 40), design=st.sampled_from(
    ["ordinary", "within_label"]))
def test_a_single_level_is_the_whole_cohort_in_every_replicate(seed, n, design):
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)]
    s = rng.random(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        res = subgroup_bootstrap(y, {"m": s}, np.full(n, "only"), design=design,
                                 metrics=["roc_auc", "average_precision", "brier_score"],
                                 n_resamples=30, rng=seed)
    for mid in ("roc_auc", "average_precision", "brier_score"):
        whole = res.overall[("m", mid)]
        part = res.by_group[("m", "only", mid)]
        np.testing.assert_array_equal(part.replicates, whole.replicates)
        assert part.estimate == whole.estimate
        diff = res.to_overall[("m", "only", mid, "difference")].replicates
        assert np.all((diff == 0) | np.isnan(whole.replicates))
        # fairlearn's summaries of one group: difference 0, ratio 1
        assert res.summary[("m", mid, "difference", "between_groups")].estimate == 0.0
        assert res.summary[("m", mid, "ratio", "to_overall")].estimate == 1.0


@settings(max_examples=25)
@given(seed=st.integers(0, 2**16))
def test_point_estimates_do_not_depend_on_image_order(seed):
    rng = np.random.default_rng(seed)
    n = 30
    y = np.r_[np.ones(12), np.zeros(18)]
    s = rng.random(n)
    g = rng.choice(["p", "q"], n)
    perm = rng.permutation(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        a = subgroup_bootstrap(y, {"m": s}, g, n_resamples=10, rng=1)
        b = subgroup_bootstrap(y[perm], {"m": s[perm]}, g[perm], n_resamples=10, rng=1)
    for k, r in a.by_group.items():
        assert b.by_group[k].estimate == pytest.approx(r.estimate, abs=1e-12)


# ----------------------------------------------------------------------------- tests, Holm
def test_between_group_tests_are_holm_adjusted_within_their_family(result):
    c_t = result.tables["contrasts"]
    tested = select(c_t, contrast="between_groups")
    tested = tested[tested["criterion"].str.endswith("_difference")]
    assert tested["family"].notna().all()
    assert c_t.loc[c_t["criterion"].str.endswith("_ratio"), "pvalue"].isna().all()
    assert select(c_t, contrast="to_overall")["pvalue"].isna().all()
    n_families = 0
    for _, g in tested.groupby("family"):
        n_families += 1
        assert g[["cohort", "model", "subgroup", "criterion"]].nunique().max() == 1
        k = len(set(g["group_a"]) | set(g["group_b"]))
        assert len(g) == k * (k - 1) // 2  # every pair of the column's levels
        np.testing.assert_allclose(g["pvalue_adj"], O.holm(g["pvalue"].to_numpy()), rtol=1e-12)
        assert (g["significant"] == (g["pvalue_adj"] < 0.05)).all()
    assert n_families == 2 * 3 * 2 * len(WITNESS)  # cohorts x columns x models x criteria
    # the bootstrap p-value inverts the percentile interval: p < alpha => 0 outside it
    low = tested[tested["pvalue"] < 0.05]
    assert len(low) and ((low["ci_low"] > 0) | (low["ci_high"] < 0)).all()


@settings(max_examples=60)
@given(p=st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.01, 0.05, 1.0])),
                  min_size=1, max_size=12), alpha=st.sampled_from([0.05, 0.1, 0.2]))
def test_numpy_holm_and_bh_are_statsmodels(p, alpha):
    from unittest import mock

    p = np.array(p)
    for ours, theirs in ((_holm, "holm"), (_bh, "fdr_bh")):
        r, pa = ours(p, alpha)
        # statsmodels' Holm branch ends with gc.collect(), whose cost grows with the heap of
        # the whole test session (about 1 s per example late in a run); it changes no number
        with mock.patch("gc.collect", return_value=0):
            r_sm, pa_sm, _, _ = multipletests(p, alpha=alpha, method=theirs)
        np.testing.assert_array_equal(pa, pa_sm)  # to the last bit
        np.testing.assert_array_equal(r, r_sm)


def test_verdicts_follow_the_direction_of_each_metric(result):
    c_t = result.tables["contrasts"]
    diff = c_t[c_t["criterion"].str.endswith("_difference")]
    for _, r in diff.iterrows():
        lower_better = r["criterion"].startswith(("brier", "ece"))
        if np.isfinite(r["ci_low"]) and r["n_degenerate"] > 0:
            # an interval that left replicates out decides nothing (as in the claims matrix)
            assert r["verdict"] == "unresolved"
        elif r["ci_low"] > 0:
            assert r["verdict"] == ("b_better" if lower_better else "a_better")
        elif r["ci_high"] < 0:
            assert r["verdict"] == ("a_better" if lower_better else "b_better")
        elif np.isfinite(r["ci_low"]):
            assert r["verdict"] == "unresolved"


# ----------------------------------------------------------------------------- small / undefined
def test_small_groups_are_qualified_and_noted(result):
    m_t = result.tables["metrics"]
    small = select(m_t, subgroup="scanner", group="Philips")
    assert (small["n"] == 20).all()
    assert small["qualification"].str.contains("small group (n=20 < 30)", regex=False).all()
    assert not select(m_t, subgroup="scanner", group="GE")["qualification"].str.contains(
        "small group").any()
    note = next(n for n in result.notes if "small group(s)" in n)
    assert "site_a scanner=Philips (n=20)" in note and "site_b scanner=Philips (n=20)" in note
    pair = one(result.tables["contrasts"], cohort="site_a", model="alpha", subgroup="scanner",
               criterion="roc_auc_difference", group="GE - Philips")
    assert pair["qualification"] == "Philips: small group (n=20 < 30)"
    # the threshold is an option of the long form
    res = run(subgroups, _ctx({"columns": ["scanner"], "min_group_size": 10}))
    assert not res.tables["metrics"]["qualification"].str.contains("small group").any()


def test_a_group_without_positives_is_nan_and_counted_never_an_error():
    table = _table(extra=lambda cohort, i, y: {"site": "north" if y == 1 or i % 3 else "south"})
    res = run(subgroups, _ctx(["site"], table=table))
    m_t = res.tables["metrics"]
    south = select(m_t, subgroup="site", group="south")
    assert (south["n_pos"] == 0).all() and (south["n"] > 0).all()
    for crit in ("roc_auc", "average_precision", SE, SP):
        r = select(south, criterion=crit)
        assert r["estimate"].isna().all() and r["ci_low"].isna().all(), crit
        assert r["qualification"].str.contains("metric undefined: no positives in this group",
                                               regex=False).all()
    ratio = one(res.tables["contrasts"], cohort="site_a", model="alpha", criterion="roc_auc_ratio",
                group="north / south")
    assert math.isnan(ratio["estimate"])
    assert ratio["qualification"] == ("south: metric undefined: no positives in this group; ratio "
                                      "undefined: the denominator is 0 or undefined")
    # Brier and ECE are defined on a single class
    y, s, lv = _filled(table, "site_a", "alpha", "site")
    keep = lv == "south"
    got = one(south, cohort="site_a", model="alpha", criterion="brier_score")["estimate"]
    assert got == pytest.approx(brier_score_loss(y[keep], s[keep], labels=[0, 1]))
    assert any("single class" in n and "site_a site=south (no positives)" in n for n in res.notes)
    # an undefined group leaves the summaries, which say so
    summ = one(res.tables["summary"], cohort="site_a", model="alpha", criterion="roc_auc_difference",
               group="between_groups")
    assert summ["n_groups"] == 1 and "left out (metric undefined): south" in summ["qualification"]


def test_missing_values_are_their_own_level_and_counted(result):
    table = _table()
    m_t = result.tables["metrics"]
    for cohort in ("site_a", "site_b"):
        g = table[(table["cohort"] == cohort) & (table["model"] == "alpha")]
        n_missing = int(g["sex"].isna().sum())
        row = one(m_t, cohort=cohort, model="alpha", subgroup="sex", group=MISSING,
                  criterion="brier_score")
        assert row["n"] == n_missing == 6
        whole = one(m_t, cohort=cohort, model="alpha", subgroup="sex", group=ALL,
                    criterion="brier_score")
        levels = select(m_t, cohort=cohort, model="alpha", subgroup="sex", criterion="brier_score")
        assert levels[levels["group"] != ALL]["n"].sum() == whole["n"] == len(g)  # a partition
    note = next(n for n in result.notes if MISSING in n)
    assert "sex in site_a: 6 of 240" in note and "age_band in site_b: 4 of 160" in note


def test_logits_report_rank_metrics_only():
    table = _table()
    table["score"] = np.log(table["score"] / (1 - table["score"]))
    res = run(subgroups, _ctx(["sex"], table=table, score_scale="logits"))
    assert set(res.tables["metrics"]["criterion"]) == {"roc_auc", "average_precision", SE, SP}
    assert any("logits" in n for n in res.notes)


# ----------------------------------------------------------------------------- determinism
class _Reversed:
    """A backend that runs cells in reverse order (results still in input order)."""

    def map(self, fn, items):
        return [fn(x) for x in items[::-1]][::-1]


def test_same_inputs_and_seed_give_identical_tables(result):
    again = run(subgroups, _ctx())
    for name, df in result.tables.items():
        pd.testing.assert_frame_equal(df, again.tables[name])
    assert result.notes == again.notes
    import dataclasses
    rev = run(subgroups, dataclasses.replace(_ctx(), backend=_Reversed()))
    for name, df in result.tables.items():
        pd.testing.assert_frame_equal(df, rev.tables[name])
    other = run(subgroups, _ctx(seed=2027))
    assert not other.tables["metrics"]["ci_low"].equals(result.tables["metrics"]["ci_low"])


def test_cells_are_picklable_module_level_work():
    import pickle

    ctx = _ctx(["sex"])
    w = ctx.wide("site_a")
    cell = SubgroupCell(key=("subgroups", "site_a", "none"), label=w.label,
                        scores=w.vectors(["alpha"], "none"), groups=np.array(["u"] * w.label.size),
                        metrics=("roc_auc",))
    back = pickle.loads(pickle.dumps(cell))
    a, b = run_subgroups(cell, ctx.resampling), run_subgroups(back, ctx.resampling)
    np.testing.assert_array_equal(a.overall[("alpha", "roc_auc")].replicates,
                                  b.overall[("alpha", "roc_auc")].replicates)


# ----------------------------------------------------------------------------- spec and checks
def test_the_section_is_a_list_of_columns_or_the_options():
    block = BLOCKS["subgroups"]
    assert block.default_config() == [] and not block.enabled([])
    assert block.enabled(["sex"]) and block.enabled(_spec({"columns": ["sex"]}).subgroups)
    assert _spec(["sex", "age_band"]).subgroups == ["sex", "age_band"]
    long = _spec({"columns": ["sex"], "min_group_size": 5}).subgroups
    assert long.columns == ["sex"] and long.min_group_size == 5
    with pytest.raises(ValueError, match="repeat a name"):
        _spec(["sex", "sex"])
    with pytest.raises(ValueError, match="colums"):
        _spec({"colums": ["sex"]})
    assert block.multiplicity([]) is None and "Holm" in block.multiplicity(["sex"])


def test_the_block_runs_by_default_only_with_columns():
    base = {"name": "d", "scores": "scores.csv", "cohorts": {"site_a": {}}}
    assert "subgroups" not in AuditSpec.model_validate(base).blocks
    assert "subgroups" not in AuditSpec.model_validate({**base, "subgroups": []}).blocks
    assert "subgroups" in AuditSpec.model_validate({**base, "subgroups": ["sex"]}).blocks
    assert "subgroups" in AuditSpec.model_validate(
        {**base, "subgroups": {"columns": ["sex"]}}).blocks
    # every other block keeps its default
    others = [n for n in AuditSpec.model_validate(base).blocks]
    assert others == [n for n, b in BLOCKS.items() if b.requires == ("scores",) and n != "subgroups"
                      and b.enabled(b.default_config())]


def test_check_reports_what_the_table_lacks():
    block = BLOCKS["subgroups"]
    t = validate_score_table(_table())
    assert block.check(["sex", "scanner"], t, ["site_a", "site_b"]) == []
    errs = block.check(["sexx", "label"], t, ["site_a", "site_b"])
    assert len(errs) == 2
    assert "column 'label' is part of the score table's schema" in errs[0]
    assert "unknown subgroup column 'sexx' (did you mean 'sex'?)" in errs[1]
    bad = t.copy()
    bad.loc[(bad["model"] == "beta") & (bad["image_id"] == "site_a-030"), "sex"] = "X"
    (err,) = block.check(["sex"], bad, ["site_a", "site_b"])
    assert "differs between the rows of image 'site_a-030' in cohort 'site_a'" in err
    (err,) = block.check({"columns": ["image_num"], "max_levels": 20},
                         t.assign(image_num=t["image_id"]), ["site_a"])
    assert "has 240 levels in cohort 'site_a' (at most 20)" in err


def test_a_missing_subgroup_column_is_one_clear_error_at_the_cli(tmp_path, capsys):
    from medaudit.cli.main import main

    _table().to_csv(tmp_path / "scores.csv", index=False)
    (tmp_path / "spec.yaml").write_text(
        "name: own\nscores: scores.csv\ncohorts: {site_a: {}, site_b: {}}\nn_resamples: 20\n"
        "blocks: [subgroups]\nsubgroups: [sex, scaner]\n", encoding="utf-8")
    rc = main(["audit", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "unknown subgroup column 'scaner' (did you mean 'scanner'?)" in err
    assert err.startswith("medaudit: error: scores.csv: ") and not (tmp_path / "out").exists()


def test_no_columns_writes_no_table():
    res = run(subgroups, _ctx([]))
    assert res.tables == {} and "declares no subgroup columns" in res.notes[0]


def test_the_whole_cohort_label_is_reserved():
    table = _table()
    table.loc[table["image_id"] == "site_a-050", "sex"] = ALL
    with pytest.raises(SchemaError, match=r"value '\(all\)'"):
        run(subgroups, _ctx(["sex"], table=table))


# ----------------------------------------------------------------------------- reader
def test_subgroup_rows_reads_one_model_cohort_and_criterion(result):
    rows = subgroup_rows(result.tables, model="beta", cohort="site_b", criterion="roc_auc")
    assert set(rows["subgroup"]) == {"sex", "scanner", "age_band"}
    assert (rows["model"] == "beta").all() and (rows["cohort"] == "site_b").all()
    sex = subgroup_rows(result.tables, model="beta", cohort="site_b", criterion="roc_auc",
                        subgroup="sex")
    assert sex["group"].tolist() == [ALL, MISSING, "F", "M"]
    pairs = subgroup_rows(result.tables, model="beta", cohort="site_b", subgroup="sex",
                          criterion="roc_auc_difference", table="contrasts")
    assert "F - M" in set(pairs["group"])
    assert subgroup_rows({}, model="beta", cohort="site_b", criterion="roc_auc").empty


def test_one_level_has_no_between_group_contrast():
    """fairlearn's difference() of a single group is 0 and its ratio 1 ("no disparity");
    with one level there is no contrast, so the summary says so instead (nan)."""
    rng = np.random.default_rng(4)
    n = 120
    y = (rng.random(n) < 0.4).astype(int)
    table = pd.DataFrame({"image_id": [f"i{i}" for i in range(n)], "cohort": "c", "model": "m",
                          "prompt": "none", "score": 1 / (1 + np.exp(-(rng.normal(size=n) + y))),
                          "label": y, "site": "only"})
    mf = MetricFrame(metrics=roc_auc_score, y_true=y, y_pred=table["score"],
                     sensitive_features=table["site"])
    assert mf.difference() == 0.0  # the convention departed from, witnessed
    spec = AuditSpec.model_validate({"name": "t", "scores": "x.csv", "n_resamples": 50,
                                     "cohorts": {"c": {}}, "subgroups": ["site"],
                                     "blocks": ["subgroups"]})
    res = run("subgroups", context(spec, scores=validate_score_table(table, source="t")))
    summ = res.tables["summary"]
    between = summ[(summ["group"] == "between_groups") & (summ["criterion"] == "roc_auc_difference")]
    assert len(between) == 1 and np.isnan(between["estimate"].iloc[0])
    assert "no between-group contrast" in between["qualification"].iloc[0]


def test_a_constant_score_model_is_qualified_on_its_rank_metric_rows():
    """A model scoring every image alike (or every image of one level alike) ranks none above
    another: its AUROC is 0.5 from ties alone (scikit-learn agrees) and the row says so, as
    the discrimination block's does; Brier rows of a constant forecast carry no such caveat."""
    t = _table()
    flat = t["model"] == "beta"
    t.loc[flat, "score"] = 0.4  # beta: one score for every image
    # alpha: one score for every Philips image of site_a only
    philips = (t["model"] == "alpha") & (t["cohort"] == "site_a") & (t["scanner"] == "Philips")
    t.loc[philips, "score"] = 0.7
    res = run(subgroups, _ctx(section=("scanner",), table=t))
    m = res.tables["metrics"]
    auc = m[m["criterion"] == "roc_auc"]
    beta = auc[auc["model"] == "beta"]
    assert len(beta) and beta["qualification"].str.contains("constant scores", regex=False).all()
    whole = beta[beta["group"] == ALL]
    assert len(whole) == 2  # one per cohort
    for _, r in whole.iterrows():
        g = t[(t["cohort"] == r["cohort"]) & (t["model"] == "beta")]
        assert r["estimate"] == roc_auc_score(g["label"], g["score"]) == 0.5
    brier = m[(m["criterion"] == "brier_score") & (m["model"] == "beta")]
    assert len(brier) and not brier["qualification"].str.contains("constant", regex=False).any()
    alpha = auc[auc["model"] == "alpha"]
    marked = alpha[alpha["qualification"].str.contains("constant scores", regex=False)]
    assert list(zip(marked["cohort"], marked["group"], strict=True)) == [("site_a", "Philips")]
    g = t[philips]
    assert marked["estimate"].iloc[0] == roc_auc_score(g["label"], g["score"]) == 0.5


def test_an_unknown_subgroup_column_in_a_table_without_any_is_said_so():
    # probe finding: "unknown subgroup column 'sexx'; the table has []" read as an empty table
    import medaudit
    from medaudit.exceptions import SchemaError

    df = pd.DataFrame({"image_id": list("abcd"), "model": "m", "label": [1, 0, 1, 0],
                       "score": [0.9, 0.1, 0.8, 0.3]})
    with pytest.raises(SchemaError) as e:
        medaudit.audit(df, n_resamples=20, subgroups=["sexx"])
    assert "subgroups: the table has no column 'sexx'; it holds only the score table's own " \
           "columns (image_id, model, label, score" in str(e.value)
    assert "the table has []" not in str(e.value)


def test_a_subgroup_column_mixing_kinds_of_value_is_refused():
    # probe finding: an object column holding 1, "1" and 1.0 became groups "1" and "1.0"
    import medaudit

    n = 60
    codes = [1, "1", 1.0, 2, "2", 2.0]
    df = pd.DataFrame({"image_id": [f"i{i}" for i in range(n)], "model": "m",
                       "label": np.arange(n) % 2, "score": np.linspace(0, 1, n)})
    df["grp"] = pd.Series([codes[i % 6] for i in range(n)], dtype=object)
    with pytest.raises(SchemaError) as e:
        medaudit.audit(df, n_resamples=20, subgroups=["grp"])
    assert ("subgroups: column 'grp' mixes kinds of value (integer 1, text '1', float 1.0)"
            in str(e.value))
    # one kind each (text with empty cells, integers, categorical) is fine
    for col in (df["grp"].astype(str).where(np.arange(n) % 7 != 0, ""),
                pd.Series([1 + i % 2 for i in range(n)], dtype=object),
                df["grp"].astype(str).astype("category")):
        res = medaudit.audit(df.assign(grp=col), n_resamples=20, subgroups=["grp"])
        assert len(res.tables["subgroups.metrics"])
