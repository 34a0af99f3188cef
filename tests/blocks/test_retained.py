"""Block `retained`: retained-target comparisons (Table 20) and per-seed summaries (Table 18).

Witnesses: sklearn's roc_auc_score on seed columns and on their row mean, statistics.stdev
for the seed SD, hand-built image-set intersections, the brute-force DeLong oracle of
tests/_oracles.py with scipy's normal tail, and a plain-numpy within-label bootstrap.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from medaudit.audit.context import ensemble_seeds
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import retained
from medaudit.blocks.retained import RetainedEntry as RetainedSpec
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from tests import _oracles as O
from tests._support import SpecContext, context, run
from tests.blocks.conftest import small_context

SEED_KEY = ("model", "prompt", "cohort", "image_id", "seed")
DATA_DIR = (Path(__file__).resolve().parents[3] / "shared" / "data"
            / "tb_cross_cohort_predictions_kwang311")


# ----------------------------------------------------------------------------- helpers
def seeded_table(seeds=(1, 2, 3), models=("orig", "retr"), cohorts=(("c1", 14), ("c2", 10)),
                 rng=7) -> pd.DataFrame:
    """Per-seed scores: each model x seed draws uniform noise shifted up for positives."""
    gen = np.random.default_rng(rng)
    rows = []
    for cohort, n in cohorts:
        y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)].astype(int)
        for k, m in enumerate(models):
            for s in seeds:
                score = (gen.uniform(size=n) + (0.25 + 0.2 * k) * y) / (1.25 + 0.2 * k)
                rows += [dict(image_id=f"{cohort}-{j:02d}", cohort=cohort, model=m, prompt="p",
                              seed=s, score=float(score[j]), label=int(y[j])) for j in range(n)]
    return pd.DataFrame(rows)


def make_ctx(table: pd.DataFrame, retained_entries=(), seeds=True, n_resamples=200,
             cohorts=None) -> SpecContext:
    cohorts = cohorts or sorted(set(table["cohort"]))
    spec = AuditSpec.model_validate({
        "name": "t", "scores": "t.csv", "primary_prompt": "p", "n_resamples": n_resamples,
        "cohorts": {c: {} for c in cohorts}, "retained": list(retained_entries)})
    if not seeds:
        return context(scores=validate_score_table(table), spec=spec)
    t = validate_score_table(table, key=SEED_KEY)
    return context(scores=ensemble_seeds(t), spec=spec, seed_scores=t)


def wide_seeds(table, model, cohort):
    g = table[(table["model"] == model) & (table["cohort"] == cohort)]
    w = g.pivot(index="image_id", columns="seed", values="score").sort_index()
    y = g.drop_duplicates("image_id").set_index("image_id").loc[w.index, "label"].to_numpy()
    return w, y


def delong_p(y, a, b):
    _, var, z = O.delong_paired_z(list(y), list(a), list(b))
    assert var > 0, "witness data must not make the DeLong variance vanish"
    return z, 2 * stats.norm.sf(abs(z))


ENTRY = {"a": "orig", "b": "retr", "cohorts": ["c1", "c2"]}


# ----------------------------------------------------------------------------- seeds table
def test_seed_rows_match_sklearn_and_stdev():
    table = seeded_table()
    ctx = make_ctx(table)
    res = run(retained, ctx)
    assert "comparisons" not in res.tables  # no entries: no rows, not written
    seeds = res.tables["seeds"]
    assert list(seeds["cohort"].unique()) == ["c1", "c2"]
    for (cohort, model), g in seeds.groupby(["cohort", "model"]):
        w, y = wide_seeds(table, model, cohort)
        per_seed = g[g["kind"] == "seed"]
        assert per_seed["model_seed"].tolist() == [1, 2, 3]
        expect = [roc_auc_score(y, w[s]) for s in (1, 2, 3)]
        np.testing.assert_allclose(per_seed["estimate"], expect, rtol=0, atol=1e-12)
        assert (per_seed["criterion"] == "roc_auc").all()
        summ = g[g["kind"] == "seed_summary"].iloc[0]
        assert summ["estimate"] == pytest.approx(statistics.mean(expect), abs=1e-12)
        assert summ["sd"] == pytest.approx(statistics.stdev(expect), abs=1e-12)
        assert summ["sd_ddof"] == 1 and summ["n_seeds"] == 3
        ens = g[g["kind"] == "ensemble"].iloc[0]
        ens_auc = roc_auc_score(y, w.mean(axis=1))
        assert ens["estimate"] == pytest.approx(ens_auc, abs=1e-12)
        assert ens["ci_low"] <= ens["estimate"] <= ens["ci_high"]
        assert ens["design"] == "delong"
        # DeLong across seeds: each seed vs the ensemble, against the brute-force oracle
        for s, row in zip((1, 2, 3), per_seed.itertuples(), strict=True):
            z, p = delong_p(y, w[s].to_numpy(), w.mean(axis=1).to_numpy())
            assert row.z == pytest.approx(z, rel=1e-9)
            assert row.pvalue == pytest.approx(p, rel=1e-9)
            assert row.difference_vs_ensemble == pytest.approx(expect[s - 1] - ens_auc, abs=1e-12)
        assert (g["seed"] == ctx.seed).all()  # `seed` is the analysis seed


def test_single_seed_models_are_noted_not_summarised():
    t1 = seeded_table(seeds=(1,), models=("solo",))
    t3 = seeded_table(seeds=(1, 2), models=("multi",), rng=3)
    res = run(retained, make_ctx(pd.concat([t1, t3], ignore_index=True)))
    assert set(res.tables["seeds"]["model"]) == {"multi"}
    assert any("solo" in n and "single seed" in n for n in res.notes)


# ----------------------------------------------------------------------------- comparisons
def test_comparison_on_intersection_matches_hand_witness():
    table = seeded_table()
    # retr lacks c1-00 and c1-13; orig lacks c1-07 (every seed), so 11 of 14 are retained
    drop = (((table["model"] == "retr") & table["image_id"].isin(["c1-00", "c1-13"]))
            | ((table["model"] == "orig") & (table["image_id"] == "c1-07")))
    table = table[~drop].reset_index(drop=True)
    ctx = make_ctx(table, [ENTRY])
    res = run(retained, ctx)
    comp = res.tables["comparisons"]
    assert comp["cohort"].tolist() == ["c1", "c2"]
    r = comp.iloc[0]
    assert (r["model"], r["model_a"], r["model_b"]) == ("retr - orig", "orig", "retr")
    assert (r["n_retained"], r["n_only_a"], r["n_only_b"]) == (11, 2, 1)
    assert (comp.iloc[1][["n_retained", "n_only_a", "n_only_b"]] == [10, 0, 0]).all()
    wa, y = wide_seeds(table, "orig", "c1")
    wb, _ = wide_seeds(table, "retr", "c1")
    keep = sorted(set(wa.index) & set(wb.index))
    assert len(keep) == 11 and "c1-07" not in keep and "c1-00" not in keep
    ya = table.drop_duplicates("image_id").set_index("image_id").loc[keep, "label"].to_numpy()
    ea, eb = wa.loc[keep].mean(axis=1).to_numpy(), wb.loc[keep].mean(axis=1).to_numpy()
    assert r["auroc_a"] == pytest.approx(roc_auc_score(ya, ea), abs=1e-12)
    assert r["auroc_b"] == pytest.approx(roc_auc_score(ya, eb), abs=1e-12)
    assert r["estimate"] == pytest.approx(r["auroc_b"] - r["auroc_a"], abs=1e-12)
    z, p = delong_p(ya, eb, ea)
    assert r["z"] == pytest.approx(z, rel=1e-9) and r["pvalue"] == pytest.approx(p, rel=1e-9)
    assert (r["n_pos"], r["n_neg"]) == (int(ya.sum()), int(len(ya) - ya.sum()))
    assert r["design"] == "within_label+paired" and r["criterion"] == "roc_auc_difference"
    assert r["ci_low"] <= r["estimate"] <= r["ci_high"] and r["n_degenerate"] == 0
    # seed-paired changes on the same retained targets
    sd = res.tables["seeds"]
    d = sd[(sd["criterion"] == "roc_auc_difference") & (sd["cohort"] == "c1")]
    per = d[d["kind"] == "seed"]
    expect = [roc_auc_score(ya, wb.loc[keep, s]) - roc_auc_score(ya, wa.loc[keep, s])
              for s in (1, 2, 3)]
    np.testing.assert_allclose(per["estimate"], expect, rtol=0, atol=1e-12)
    assert (per["n_retained"] == 11).all()
    summ = d[d["kind"] == "seed_summary"].iloc[0]
    assert summ["estimate"] == pytest.approx(statistics.mean(expect), abs=1e-12)
    assert summ["sd"] == pytest.approx(statistics.stdev(expect), abs=1e-12)
    assert r["seed_delta_mean"] == summ["estimate"] and r["seed_delta_sd"] == summ["sd"]
    assert r["seed_delta_n_seeds"] == 3


def test_within_label_interval_agrees_with_numpy_bootstrap():
    table = seeded_table(cohorts=(("c1", 40),), seeds=(1, 2))
    ctx = make_ctx(table, [{"a": "orig", "b": "retr", "cohorts": ["c1"]}], n_resamples=2000)
    r = run(retained, ctx).tables["comparisons"].iloc[0]
    wa, y = wide_seeds(table, "orig", "c1")
    wb, _ = wide_seeds(table, "retr", "c1")
    ea, eb = wa.mean(axis=1).to_numpy(), wb.mean(axis=1).to_numpy()
    gen = np.random.default_rng(11)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    # resample positives and negatives separately, one index draw shared by a and b
    ip = gen.choice(pos, (4000, pos.size))
    ineg = gen.choice(neg, (4000, neg.size))

    def auc(s):  # Mann-Whitney by brute-force pair comparison, ties 1/2
        d = s[ip][:, :, None] - s[ineg][:, None, :]
        return (d > 0).mean(axis=(1, 2)) + 0.5 * (d == 0).mean(axis=(1, 2))

    lo, hi = np.percentile(auc(eb) - auc(ea), [2.5, 97.5])
    assert r["ci_low"] == pytest.approx(lo, abs=0.03)
    assert r["ci_high"] == pytest.approx(hi, abs=0.03)


def test_comparisons_without_seed_column():
    table = seeded_table(seeds=(1,)).drop(columns="seed")
    res = run(retained, make_ctx(table, [ENTRY], seeds=False))
    assert "seeds" not in res.tables
    comp = res.tables["comparisons"]
    assert len(comp) == 2 and comp["seed_delta_mean"].isna().all()
    assert (comp["seed_delta_n_seeds"] == 0).all()
    assert any("no `seed` column" in n for n in res.notes)


def test_empty_intersection_is_an_error():
    table = seeded_table(cohorts=(("c1", 8),))
    table.loc[table["model"] == "retr", "image_id"] += "-new"
    with pytest.raises(SchemaError, match="share no image"):
        run(retained, make_ctx(table, [{"a": "orig", "b": "retr", "cohorts": ["c1"]}]))


def test_one_class_on_retained_targets_is_an_error():
    table = seeded_table(cohorts=(("c1", 8),))  # c1-00..03 positive, c1-04..07 negative
    drop = (table["model"] == "retr") & table["image_id"].isin(["c1-00", "c1-01", "c1-02",
                                                                "c1-03"])
    with pytest.raises(SchemaError, match="all 4 image.*negatives"):
        run(retained, make_ctx(table[~drop], [{"a": "orig", "b": "retr", "cohorts": ["c1"]}]))


def test_paired_seed_analysis_refuses_mismatched_seed_images():
    # same number of seeds per image (so ensemble_seeds accepts it) but different seed sets:
    # seed 2 lacks c1-03 and seed 3 scores only c1-03.
    table = seeded_table(cohorts=(("c1", 8),), models=("orig",), seeds=(1, 2, 3))
    bad = ((table["seed"] == 2) & (table["image_id"] == "c1-03")) | (
        (table["seed"] == 3) & (table["image_id"] != "c1-03"))
    with pytest.raises(SchemaError, match=r"seed 2 lacks 1 image\(s\): \['c1-03'\]") as err:
        run(retained, make_ctx(table[~bad].reset_index(drop=True)))
    assert "seed 3 lacks 7 image(s)" in str(err.value)


def test_self_comparison_and_unknown_cohort_are_errors():
    table = seeded_table()
    with pytest.raises(SchemaError, match="with itself"):
        run(retained, make_ctx(table, [{"a": "orig", "b": "orig", "cohorts": ["c1"]}]))
    with pytest.raises(SchemaError, match="does not declare"):
        run(retained, make_ctx(table, [{"a": "orig", "b": "retr", "cohorts": ["zz"]}]))


def test_nothing_to_do_writes_no_table_and_says_why(ctx):
    res = run(retained, ctx)
    assert res.name == "retained" and res.tables == {}
    assert res.notes == ("Did not run: the spec has no `retained:` entries and the score table has "
                         "no `seed` column.",)


def test_smoke_on_simulated_study_and_exposure_qualification():
    ctx = small_context()
    models = ctx.models()
    exposed = next(m for m in models if ctx.exposure(m, "vindr"))
    other = next(m for m in models if m != exposed)
    ctx = small_context(retained=[RetainedSpec(a=other, b=exposed,
                                               cohorts=["vindr", "montgomery"])])
    res = run(retained, ctx)
    comp = res.tables["comparisons"]
    assert comp["cohort"].tolist() == ["montgomery", "vindr"]  # spec cohort order
    assert (comp["n_only_a"] == 0).all() and (comp["n_only_b"] == 0).all()
    assert comp.loc[comp["cohort"] == "vindr", "qualification"].str.contains(exposed).all()
    assert comp.loc[comp["cohort"] == "montgomery", "qualification"].eq("").all()
    assert ((comp["ci_low"] <= comp["estimate"]) & (comp["estimate"] <= comp["ci_high"])).all()
    for col in ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion",
                "design", "n_resamples", "seed", "family"):
        assert col in comp.columns
    assert "seeds" not in res.tables


def test_deterministic():
    table = seeded_table()
    a = run(retained, make_ctx(table, [ENTRY]))
    b = run(retained, make_ctx(table.sample(frac=1, random_state=1), [ENTRY]))
    for name in ("comparisons", "seeds"):
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])


# ----------------------------------------------------------------------------- real data
def _kwang311_long() -> pd.DataFrame:
    frames = []
    for cohort in ("Montgomery", "Shenzhen"):
        d = pd.read_csv(DATA_DIR / f"resnet50_full_test-{cohort}.csv")
        long = d.melt(id_vars=["stem", "label"], var_name="col", value_name="score")
        parts = long["col"].str.extract(r"^s(?P<seed>\d+)_(?P<source>.+)$")
        frames.append(pd.DataFrame({
            "model": "resnet50-" + parts["source"], "seed": parts["seed"].astype(int),
            "cohort": cohort, "image_id": long["stem"], "prompt": "none",
            "score": long["score"], "label": long["label"]}))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.skipif(not DATA_DIR.is_dir(), reason=f"real-data folder {DATA_DIR} is absent (it "
                    "lives outside the repository, in ../shared/data relative to the root)")
def test_end_to_end_kwang311_resnet50_seeds():
    long = _kwang311_long()
    t = validate_score_table(long, key=SEED_KEY)
    spec = AuditSpec.model_validate({
        "name": "kwang311", "scores": "kwang311.csv", "primary_prompt": "none",
        "n_resamples": 200, "cohorts": {"Montgomery": {}, "Shenzhen": {}},
        "retained": [{"a": "resnet50-Montgomery", "b": "resnet50-Shenzhen",
                      "cohorts": ["Montgomery", "Shenzhen"]}]})
    ctx = context(scores=ensemble_seeds(t), spec=spec, seed_scores=t)
    res = run(retained, ctx)
    seeds = res.tables["seeds"]
    per_model = seeds[seeds["criterion"] == "roc_auc"]
    assert len(per_model) == 2 * 4 * (5 + 2)  # cohorts x sources x (5 seeds + summary + ens)
    sources = ("TBX11K", "Shenzhen", "Montgomery", "Qatar")
    for cohort in ("Montgomery", "Shenzhen"):
        d = pd.read_csv(DATA_DIR / f"resnet50_full_test-{cohort}.csv")
        y = d["label"].to_numpy()
        for src in sources:
            g = per_model[(per_model["cohort"] == cohort) & (per_model["model"] == f"resnet50-{src}")]
            cols = [f"s{s}_{src}" for s in range(42, 47)]
            expect = [roc_auc_score(y, d[c]) for c in cols]
            got = g[g["kind"] == "seed"].sort_values("model_seed")
            assert got["model_seed"].tolist() == list(range(42, 47))
            np.testing.assert_allclose(got["estimate"], expect, rtol=0, atol=1e-12)
            summ = g[g["kind"] == "seed_summary"].iloc[0]
            assert summ["sd"] == pytest.approx(statistics.stdev(expect), abs=1e-12)
            ens = g[g["kind"] == "ensemble"].iloc[0]
            assert ens["estimate"] == pytest.approx(roc_auc_score(y, d[cols].mean(axis=1)),
                                                    abs=1e-12)
            assert ens["ci_low"] <= ens["estimate"] <= ens["ci_high"]
    comp = res.tables["comparisons"]
    assert (comp["n_only_a"] == 0).all() and comp["n_retained"].tolist() == [28, 114]
    for row in comp.itertuples():
        d = pd.read_csv(DATA_DIR / f"resnet50_full_test-{row.cohort}.csv")
        deltas = [roc_auc_score(d["label"], d[f"s{s}_Shenzhen"])
                  - roc_auc_score(d["label"], d[f"s{s}_Montgomery"]) for s in range(42, 47)]
        assert row.seed_delta_mean == pytest.approx(statistics.mean(deltas), abs=1e-12)
        assert row.seed_delta_sd == pytest.approx(statistics.stdev(deltas), abs=1e-12)
        assert not math.isnan(row.pvalue)
