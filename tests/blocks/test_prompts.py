"""Block `prompts` (paper 000 M0.10-M0.11; Tables 6-8, Figure 2).

Witnesses: the published Table 6 -> Table 8 arithmetic (methods.md M0.11, M0.14),
statsmodels OLS ANOVA for the decomposition, a hand-written BH step-up on a
planted case, sklearn for every AUROC/Brier point value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import brier_score_loss, roc_auc_score

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import prompts as block
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.schema import validate_score_table
from medaudit.stats import variance_decomposition
from tests._support import SpecContext, context, run
from tests.blocks.conftest import small_context

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "paper000_table6_auroc.csv"
TERMS = list(block.DECOMPOSITION_TERMS)
PROMPTS = ["clinical", "good", "mid", "bad"]


# ----------------------------------------------------------------------------- helpers
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def planted_table(seed: int = 7, n: int = 120) -> pd.DataFrame:
    """Cohorts a, b (test) and d (descriptive); models m1 (strong) and m2 (weaker).

    Per model and cohort: ``good`` is a monotone transform of ``clinical`` (identical
    ranking, p = 1), ``mid`` adds moderate noise, ``bad`` is pure noise (AUROC ~ 0.5,
    a planted large drop).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for cohort in ("a", "b", "d"):
        y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)].astype(int)
        for model, strength in (("m1", 3.0), ("m2", 1.2)):
            lin = strength * (2 * y - 1) + rng.normal(size=n)
            fams = {"clinical": _sigmoid(lin),
                    "good": _sigmoid(lin) ** 2,
                    "mid": _sigmoid(lin + rng.normal(scale=1.5, size=n)),
                    "bad": _sigmoid(rng.normal(size=n))}
            for p, s in fams.items():
                for i in range(n):
                    rows.append({"image_id": f"{cohort}-{i:03d}", "cohort": cohort, "model": model,
                                 "prompt": p, "score": float(s[i]), "label": int(y[i])})
    return pd.DataFrame(rows)


def hand_context(table: pd.DataFrame | None = None, *, probabilities: bool = True,
                 **prompt_spec) -> SpecContext:
    table = planted_table() if table is None else table
    spec = AuditSpec.model_validate({
        "name": "planted", "scores": "inline.csv", "primary_prompt": "clinical",
        "score_scale": "probabilities" if probabilities else "logits",
        "seed": 11, "n_resamples": 300,
        "cohorts": {"a": {"role": "primary"}, "b": {"role": "primary"},
                    "d": {"role": "descriptive"}},
        "prompts": {"families": PROMPTS, **prompt_spec},
        "models": [{"name": "m2", "exposure": {"d": "seen d in pretraining"}}],
    })
    return context(scores=validate_score_table(table, probabilities=probabilities), spec=spec)


def hand_bh(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg step-up written out: adjusted p and rejections."""
    m = p.size
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    adj_sorted = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    adj = np.empty(m)
    adj[order] = adj_sorted
    ok = np.flatnonzero(p[order] <= alpha * np.arange(1, m + 1) / m)
    reject = np.zeros(m, dtype=bool)
    if ok.size:
        reject[order[: ok.max() + 1]] = True
    return adj, reject


def _vector(ctx: SpecContext, cohort: str, model: str, prompt: str) -> pd.DataFrame:
    g = ctx.scores[(ctx.scores["cohort"] == cohort) & (ctx.scores["model"] == model)
                   & (ctx.scores["prompt"] == prompt)]
    return g.set_index("image_id").sort_index()


@pytest.fixture(scope="module")
def fixture_result(ctx):
    return run(block, ctx)


@pytest.fixture(scope="module")
def planted():
    c = hand_context()
    return c, run(block, c)


# ----------------------------------------------------------------------------- (1) published table
def _table6_array() -> tuple[np.ndarray, pd.DataFrame]:
    d = pd.read_csv(REFERENCE, comment="#")
    models = ["CheXficient", "MedSigLIP", "BioMedCLIP", "OpenCLIP"]
    cohorts = ["montgomery", "shenzhen", "tbx11k-val"]
    prompts = ["clinical", "photo", "report", "presence", "normal"]
    cube = (d.set_index(["model", "cohort", "prompt"])["auroc"]
            .reindex(pd.MultiIndex.from_product([models, cohorts, prompts])))
    return cube.to_numpy().reshape(4, 3, 5), d


def test_table6_reference_file_is_the_60_primary_cells():
    arr, d = _table6_array()
    assert len(d) == 60 and not d.duplicated(["cohort", "model", "prompt"]).any()
    assert np.isfinite(arr).all()
    # spot checks against methods.md M0.14 Table 6 and the Table 4 clinical column
    assert arr[0, 0, 0] == 0.969 and arr[3, 2, 3] == 0.692 and arr[2, 1, 2] == 0.728


def test_table8_auroc_shares_from_table6():
    arr, _ = _table6_array()
    dec = variance_decomposition(arr)
    shares = np.array([dec.share_percent[t] for t in TERMS])
    published = np.array([76.6, 10.9, 0.8, 5.8, 1.9, 0.2, 3.8])  # Table 8, AUROC column
    exact = np.array([76.63, 10.87, 0.78, 5.80, 1.90, 0.22, 3.81])  # methods.md M0.11
    np.testing.assert_allclose(shares, published, atol=0.05)
    np.testing.assert_allclose(shares, exact, atol=0.005 + 1e-12)
    assert shares.sum() == pytest.approx(100.0, abs=1e-9)
    assert sum(dec.ss.values()) == pytest.approx(dec.ss_total, rel=1e-12)
    assert [dec.df[t] for t in TERMS] == [3, 2, 4, 6, 12, 8, 24]
    # the order of the levels within a factor does not matter
    perm = variance_decomposition(arr[::-1, [2, 0, 1], ::-1])
    np.testing.assert_allclose([perm.share_percent[t] for t in TERMS], shares, rtol=1e-12)


# ----------------------------------------------------------------------------- (2) statsmodels witness
@pytest.mark.parametrize(("shape", "seed"), [((4, 3, 5), 0), ((2, 3, 2), 1), ((3, 4, 6), 2)])
def test_decomposition_matches_statsmodels_anova(shape, seed):
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(seed)
    i, j, k = shape
    values = (rng.normal(size=(i, 1, 1)) + rng.normal(size=(1, j, 1)) + 0.5 * rng.normal(size=(i, j, 1))
              + 0.3 * rng.normal(size=(i, j, k)))
    long = pd.DataFrame([{"m": f"m{a}", "c": f"c{b}", "p": f"p{c}", "y": values[a, b, c]}
                         for a in range(i) for b in range(j) for c in range(k)])
    fit = smf.ols("y ~ C(m) + C(c) + C(p) + C(m):C(c) + C(m):C(p) + C(c):C(p)", data=long).fit()
    table = anova_lm(fit, typ=1)
    names = ["C(m)", "C(c)", "C(p)", "C(m):C(c)", "C(m):C(p)", "C(c):C(p)", "Residual"]
    dec = variance_decomposition(values)
    np.testing.assert_allclose([dec.ss[t] for t in TERMS], table.loc[names, "sum_sq"].to_numpy(),
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal([dec.df[t] for t in TERMS], table.loc[names, "df"].to_numpy())
    total = float(np.sum((long["y"] - long["y"].mean()) ** 2))
    assert dec.ss_total == pytest.approx(total, rel=1e-12)


def test_decomposition_refuses_incomplete_or_unbalanced():
    v = np.ones((2, 3, 4))
    v[1, 2, 0] = np.nan
    with pytest.raises(MedauditError, match=r"complete, balanced.*\(1, 2, 0\)"):
        variance_decomposition(v)
    with pytest.raises(MedauditError, match="3-way"):
        variance_decomposition(np.ones((4, 5)))
    with pytest.raises(MedauditError, match="ragged"):
        variance_decomposition([[[1.0, 2.0]], [[1.0]]])
    const = variance_decomposition(np.full((2, 2, 2), 0.7))  # no variation: shares undefined
    assert const.ss_total == 0.0 and all(np.isnan(list(const.share_percent.values())))


# ----------------------------------------------------------------------------- (3) BH on a planted case
def test_bh_family_planted(planted):
    ctx, res = planted
    c = res.tables["contrasts"]
    fam = c[c["family"] == block.BH_FAMILY]
    # declared family: primary cohorts a, b x 2 models x 3 alternatives
    assert len(fam) == 12 and set(fam["cohort"]) == {"a", "b"}
    adj, reject = hand_bh(fam["pvalue"].to_numpy(), alpha=0.05)
    np.testing.assert_allclose(fam["pvalue_adj"].to_numpy(), adj, rtol=1e-12)
    assert fam["significant"].to_numpy(dtype=bool).tolist() == reject.tolist()
    # planted: every 'bad' contrast is a large drop and survives; 'good' never does (p = 1)
    bad = fam[fam["prompt_a"] == "bad"]
    good = fam[fam["prompt_a"] == "good"]
    assert bad["significant"].all() and (bad["estimate"] < -0.2).all()
    assert (good["pvalue"] == 1.0).all() and not good["significant"].any()
    assert int(fam["significant"].sum()) == int(reject.sum())
    # the descriptive cohort is outside the family: no adjusted p, no verdict
    desc = c[c["cohort"] == "d"]
    assert (desc["family"] == "descriptive").all() and len(desc) == 6
    assert desc["pvalue_adj"].isna().all() and desc["significant"].isna().all()
    assert desc["pvalue"].notna().all()
    assert (desc.loc[desc["model"] == "m2", "qualification"] == "seen d in pretraining").all()


def test_bh_family_follows_declared_test_cohorts():
    ctx = hand_context(test_cohorts=["b"], alpha=0.10)
    c = run(block, ctx).tables["contrasts"]
    fam = c[c["family"] == block.BH_FAMILY]
    assert set(fam["cohort"]) == {"b"} and len(fam) == 6
    adj, reject = hand_bh(fam["pvalue"].to_numpy(), alpha=0.10)
    np.testing.assert_allclose(fam["pvalue_adj"].to_numpy(), adj, rtol=1e-12)
    assert fam["significant"].to_numpy(dtype=bool).tolist() == reject.tolist()
    assert c.loc[c["cohort"] != "b", "pvalue_adj"].isna().all()


# ----------------------------------------------------------------------------- (4) the average
def test_average_is_mean_of_family_scores(planted):
    ctx, res = planted
    av = res.tables["average"]
    assert set(av["cohort"]) == {"a", "b"} and len(av) == 2 * 2 * 2
    assert set(av["criterion"]) == {"roc_auc_difference", "brier_score_difference"}
    assert (av["design"] == "ordinary+paired").all() and (av["n_resamples"] == 300).all()
    for r in av.itertuples():
        vecs = [_vector(ctx, r.cohort, r.model, p) for p in PROMPTS]
        y = vecs[0]["label"].to_numpy()
        mean = np.mean([v["score"].to_numpy() for v in vecs], axis=0)
        clin = vecs[0]["score"].to_numpy()
        if r.criterion == "roc_auc_difference":
            a, b = roc_auc_score(y, mean), roc_auc_score(y, clin)
        else:
            a, b = brier_score_loss(y, mean), brier_score_loss(y, clin)
        assert r.value_a == pytest.approx(a, abs=1e-12)
        assert r.value_b == pytest.approx(b, abs=1e-12)
        assert r.estimate == pytest.approx(a - b, abs=1e-12)
        assert r.ci_low <= r.estimate <= r.ci_high


def test_average_can_be_switched_off():
    assert "average" not in run(block, hand_context(average=False)).tables  # no rows: not written


def test_logit_scores_keep_to_ranking_metrics():
    t = planted_table()
    t["score"] = np.log(t["score"] / (1 - t["score"]))
    res = run(block, hand_context(t, probabilities=False))
    assert set(res.tables["average"]["criterion"]) == {"roc_auc_difference"}
    assert set(res.tables["decomposition"]["criterion"]) == {"roc_auc"}
    assert any("logits" in n for n in res.notes)


# ----------------------------------------------------------------------------- (5) point values by sklearn
def test_contrast_estimates_and_matrix_match_sklearn(ctx, fixture_result):
    primary = ctx.spec.primary_prompt
    c = fixture_result.tables["contrasts"]
    for r in c.itertuples():
        pa, pb = _vector(ctx, r.cohort, r.model, r.prompt_a), _vector(ctx, r.cohort, r.model, primary)
        assert r.prompt == f"{r.prompt_a} - {primary}" and r.prompt_b == primary
        want = roc_auc_score(pa["label"], pa["score"]) - roc_auc_score(pb["label"], pb["score"])
        assert r.estimate == pytest.approx(want, abs=1e-12)
        assert r.ci_low <= r.estimate <= r.ci_high
    m = fixture_result.tables["auroc_matrix"]
    for r in m.itertuples():
        v = _vector(ctx, r.cohort, r.model, r.prompt)
        assert r.estimate == pytest.approx(roc_auc_score(v["label"], v["score"]), abs=1e-12)


def test_model_differences_by_prompt(planted):
    ctx, res = planted
    d = res.tables["model_differences_by_prompt"]
    assert len(d) == 2 * 4 * 1 and set(d["model"]) == {"m1 - m2"}
    for r in d.itertuples():
        a, b = _vector(ctx, r.cohort, r.model_a, r.prompt), _vector(ctx, r.cohort, r.model_b, r.prompt)
        want = roc_auc_score(a["label"], a["score"]) - roc_auc_score(b["label"], b["score"])
        assert r.estimate == pytest.approx(want, abs=1e-12)
        expected = ("a_better" if r.ci_low > 0 else "b_better" if r.ci_high < 0 else "unresolved")
        assert r.verdict == expected
    clin = d[d["prompt"] == "clinical"]
    assert (clin["verdict"] == "a_better").all()  # the planted stronger model under the primary prompt
    assert (d.loc[d["prompt"] == "good", "verdict"] == "a_better").all()


# ----------------------------------------------------------------------------- (6) pairing refused
def test_mismatched_image_sets_refused():
    t = planted_table()
    drop = (t["cohort"] == "a") & (t["model"] == "m1") & (t["prompt"] == "mid") & (t["image_id"] == "a-005")
    ctx = hand_context(t[~drop])
    with pytest.raises(SchemaError, match=r"(?s)identical image sets.*'m1'.*'mid'.*a-005"):
        run(block, ctx)


def test_primary_must_lead_the_families():
    with pytest.raises(SchemaError, match="start with the primary prompt"):
        run(block, hand_context(families=["good", "clinical", "mid", "bad"]))


# ----------------------------------------------------------------------------- (7) determinism
def test_deterministic(ctx, fixture_result):
    again = run(block, small_context())  # a fresh context: no shared cache
    assert list(again.tables) == list(fixture_result.tables)
    for name, frame in fixture_result.tables.items():
        pd.testing.assert_frame_equal(frame, again.tables[name], obj=name)
    assert again.notes == fixture_result.notes


# ----------------------------------------------------------------------------- fixture shapes
def test_fixture_run_shapes(ctx, fixture_result):
    t = fixture_result.tables
    models, prompts, cohorts = ctx.models(), ctx.prompts(ctx.spec.prompts.families), list(ctx.spec.cohorts)
    assert len(t["auroc_matrix"]) == len(cohorts) * 4 * 5
    c = t["contrasts"]
    fam = c[c["family"] == block.BH_FAMILY]
    assert len(fam) == 48 == 4 * 4 * 3  # 4 alternatives x 4 models x 3 primary cohorts
    assert set(fam["cohort"]) == {"montgomery", "shenzhen", "tbx11k-val"}
    assert set(c.loc[c["family"] == "descriptive", "cohort"]) == {"tbx11k-train", "vindr"}
    assert fam["pvalue_adj"].notna().all() and fam["significant"].notna().all()
    assert "family of 48" in fixture_result.notes[0]
    # exposure travels into the qualification of every CheXficient VinDr row
    vin = c[(c["cohort"] == "vindr") & (c["model"] == "sim-chexficient")]
    assert len(vin) == 4 and (vin["qualification"].str.len() > 0).all()
    assert len(t["average"]) == 3 * 4 * 2
    d = t["model_differences_by_prompt"]
    assert len(d) == 3 * 5 * 6 and set(d["verdict"]) <= {"a_better", "b_better", "unresolved"}
    assert (d["model_a"] < d["model_b"]).all()
    dec = t["decomposition"]
    assert len(dec) == 3 * 7 and list(dec["term"][:7]) == TERMS
    assert set(dec["criterion"]) == {"roc_auc", "brier_score", "ece[n_bins=15]"}
    np.testing.assert_allclose(dec.groupby("criterion")["share_percent"].sum(), 100.0, rtol=1e-12)
    # row order: cohorts as in the spec, models sorted, prompts in family order
    m = t["auroc_matrix"]
    order = (m["cohort"].map(cohorts.index) * 100 + m["model"].map(models.index) * 10
             + m["prompt"].map(prompts.index))
    assert order.is_monotonic_increasing


def test_decomposition_rows_equal_function_on_matrix(ctx, fixture_result):
    m = fixture_result.tables["auroc_matrix"]
    cohorts = ["montgomery", "shenzhen", "tbx11k-val"]
    prompts = ctx.prompts(ctx.spec.prompts.families)
    cube = (m.set_index(["model", "cohort", "prompt"])["estimate"]
            .reindex(pd.MultiIndex.from_product([ctx.models(), cohorts, prompts])))
    dec = variance_decomposition(cube.to_numpy().reshape(4, 3, 5))
    got = fixture_result.tables["decomposition"].query("criterion == 'roc_auc'")
    np.testing.assert_allclose(got["share_percent"], [dec.share_percent[t] for t in TERMS],
                               rtol=1e-12)


def test_single_prompt_has_nothing_to_vary():
    t = planted_table()
    t = t[t["prompt"] == "clinical"]
    ctx = hand_context(t, families=["clinical"])
    res = run(block, ctx)
    # one prompt: the block does not run, writes no table and says why
    assert res.tables == {} and res.provenance["skipped"].startswith("the score table has one prompt")
    assert res.notes == (f"Did not run: {res.provenance['skipped']}.",)
    # the block alone still copes with one family (its own note), for callers that run it
    from medaudit.blocks import BLOCKS

    direct = BLOCKS["prompts"].run(ctx, ctx.spec.prompts)
    assert len(direct.tables["auroc_matrix"]) == 3 * 2
    assert any("only one prompt family" in n for n in direct.notes)
