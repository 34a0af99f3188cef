"""Soft labels in the spectrum group contrasts and in the retained block (issue 4 item 2).

Witnesses:
* reduction to hard labels: with 0/1 soft labels (untied scores) every soft row equals the
  ordinary row beside it, estimate *and* interval, i.e. the very same resampled images;
* recomputation: the intervals are the percentiles of replicates recomputed with the
  double-sum oracle of tests/_oracles.py on resamples drawn by hand from the cell's
  generator (one uniform per item, row by row, each item drawing within its stratum:
  positives once per replicate and each declared group, or each hard label class);
* the ordinary rows are byte-identical with and without ``label_soft`` in the table;
* the permutation test stays hard-label (soft contrasts are descriptive, Holm's m unchanged).
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest

from medaudit.blocks import retained, spectrum
from medaudit.blocks.context import cell_rng
from medaudit.exceptions import SchemaError
from tests import _oracles as O
from tests._support import one as _one
from tests._support import run
from tests._support import select as _sel
from tests.blocks import test_retained as TR
from tests.blocks.test_soft_everywhere import GROUPS, MODELS, PROMPTS, SEED, make_ctx, make_table

B = 200
SEED_RETAINED = TR.make_ctx(TR.seeded_table(), [TR.ENTRY]).seed  # the spec's analysis seed


def hand_draw(strata: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Replicate counts: item slot j takes one uniform u and draws member floor(u * m) of
    its own stratum (members in item order, m of them); one row of uniforms per replicate."""
    strata = np.asarray(strata)
    u = rng.random((n_resamples, strata.size))
    members = {c: np.flatnonzero(strata == c) for c in np.unique(strata)}
    W = np.zeros((n_resamples, strata.size), dtype=int)
    for j, c in enumerate(strata):
        m = members[c]
        picks = m[np.floor(u[:, j] * (m.size * (1.0 - 2.0**-52))).astype(int)]
        np.add.at(W, (np.arange(n_resamples), picks), 1)
    return W


def percentile_ci(reps) -> tuple[float, float]:
    lo, hi = np.percentile(np.asarray(reps)[~np.isnan(reps)], [2.5, 97.5])
    return float(lo), float(hi)


def _same(a: pd.Series, b: pd.Series, cols=("estimate", "ci_low", "ci_high")):
    for c in cols:
        assert a[c] == b[c], c  # the same draws and the same arithmetic: exactly equal


# ============================================================================= spectrum
@pytest.fixture(scope="module")
def spectra():
    return {binary: run(spectrum, make_ctx(make_table(binary=binary))) for binary in (True, False)}


def test_binary_soft_contrasts_and_shared_positive_group_rows_equal_ordinary(spectra):
    res = spectra[True]
    con = res.tables["contrasts"]
    soft = _sel(con, criterion="soft_roc_auc_difference")
    assert len(soft) == len(_sel(con, criterion="roc_auc_difference")) == 2 * 2  # cohorts x models
    for _, s in soft.iterrows():
        h = _one(con, criterion="roc_auc_difference", cohort=s["cohort"], model=s["model"])
        _same(s, h, ("estimate", "ci_low", "ci_high", "auroc_a", "auroc_b"))
        assert (s["group_a"], s["group_b"], s["contrast"], s["negatives"]) == (
            h["group_a"], h["group_b"], h["contrast"], h["negatives"])  # same orientation
        assert (s["n"], s["n_pos"], s["n_neg"], s["design"]) == (h["n"], h["n_pos"], h["n_neg"],
                                                                 "shared_positive")
    # within-label cohort: soft group rows now come from the shared-positive draw itself
    groups = res.tables["groups"]
    for _, s in _sel(groups, cohort="b", criterion="soft_roc_auc").iterrows():
        h = _one(groups, cohort="b", criterion="roc_auc", model=s["model"], group=s["group"])
        _same(s, h)
        assert s["design"] == h["design"] == "shared_positive"
        assert (s["n"], s["n_pos"], s["n_neg"]) == (h["n"], h["n_pos"], h["n_neg"])


def _layout(table, cohort, model):
    """The block's shared-positive layout: positives by image_id, then each group by image_id."""
    t = table[(table["cohort"] == cohort) & (table["model"] == model)
              & (table["prompt"] == PROMPTS[0])].sort_values("image_id")
    parts = [t[t["label"] == 1]] + [t[t["negative_group"] == g] for g in GROUPS]
    lay = pd.concat(parts)
    strata = np.repeat(np.arange(len(parts)), [len(x) for x in parts])
    return lay["label_soft"].to_numpy(float), lay["score"].to_numpy(float), strata


def test_soft_contrasts_and_group_rows_recomputed_on_hand_drawn_resamples(spectra):
    table = make_table()
    res = spectra[False]
    con, groups = res.tables["contrasts"], res.tables["groups"]
    for cohort in ("a", "b"):
        for m in MODELS:
            p, s, strata = _layout(table, cohort, m)
            W = hand_draw(strata, B, cell_rng(SEED, "spectrum", cohort, m, "shared_positive",
                                              tuple(GROUPS)))
            reps, est = {}, {}
            for k, g in enumerate(GROUPS, start=1):
                keep = (strata == 0) | (strata == k)
                est[g] = O.soft_auroc_strict(p[keep], s[keep])
                reps[g] = np.array([O.soft_auroc_strict(p[i], s[i]) for i in
                                    (np.repeat(np.arange(s.size), w * keep) for w in W)])
                if cohort == "b":  # within-label cohort: the shared-positive marginal
                    row = _one(groups, cohort=cohort, model=m, group=g, criterion="soft_roc_auc")
                    assert row["estimate"] == pytest.approx(est[g], rel=1e-12)
                    assert (row["ci_low"], row["ci_high"]) == pytest.approx(
                        percentile_ci(reps[g]), rel=1e-12)
            r = _one(con, cohort=cohort, model=m, criterion="soft_roc_auc_difference")
            a, b = r["group_a"], r["group_b"]
            assert r["estimate"] == pytest.approx(est[a] - est[b], rel=1e-9)
            assert (r["auroc_a"], r["auroc_b"]) == pytest.approx((est[a], est[b]), rel=1e-12)
            assert (r["ci_low"], r["ci_high"]) == pytest.approx(percentile_ci(reps[a] - reps[b]),
                                                                rel=1e-9, abs=1e-15)
            assert (r["family"], r["test"], r["n_permutations"]) == (spectrum.DESCRIPTIVE_FAMILY,
                                                                     "none", 0)
            assert math.isnan(r["pvalue"]) and math.isnan(r["pvalue_adj"])
    assert set(_sel(con, cohort="b", criterion="soft_roc_auc_difference")["negatives"]) == {
        "sick - healthy"}  # named - reference, as the ordinary rows
    assert any("soft_roc_auc_difference group contrasts" in n for n in res.notes)


def test_permutation_family_stays_hard_label():
    table = make_table(seed=6)
    kw = dict(spectrum=[{"cohort": "a", "groups": GROUPS, "test": "permutation"},
                        {"cohort": "b", "groups": GROUPS, "reference": "healthy",
                         "test": "permutation"}])
    with_soft = run(spectrum, make_ctx(table, **kw))
    without = run(spectrum, make_ctx(table.drop(columns="label_soft"), **kw))
    con = with_soft.tables["contrasts"]
    hard = con[~con["criterion"].str.startswith("soft_")].reset_index(drop=True)
    plain = without.tables["contrasts"]
    assert hard[list(plain.columns)].to_csv(index=False) == plain.to_csv(index=False)
    soft = _sel(con, criterion="soft_roc_auc_difference")
    assert len(soft) == 4 and (soft["family"] == spectrum.DESCRIPTIVE_FAMILY).all()
    assert soft["pvalue"].isna().all() and soft["significant"].isna().all()
    assert (_sel(con, family=spectrum.PERMUTATION_FAMILY)["criterion"] == "roc_auc_difference").all()
    holm = [n for n in with_soft.notes if "Holm-adjusted" in n]
    assert holm == [n for n in without.notes if "Holm-adjusted" in n] and "m = 4 tests" in holm[0]


# ============================================================================= retained
def soft_seeded_table(binary: bool = False, seed: int = 3) -> pd.DataFrame:
    """test_retained's per-seed table with one soft label per image (straddling 0.5 against
    the hard label for some images), and three images that ``retr`` does not score."""
    t = TR.seeded_table()
    rng = np.random.default_rng(seed)
    img = t.drop_duplicates(["cohort", "image_id"])[["cohort", "image_id", "label"]]
    p = np.clip(img["label"] * 0.6 + 0.2 + rng.normal(0, 0.2, len(img)), 0, 1)
    soft = dict(zip(zip(img["cohort"], img["image_id"], strict=True), img["label"] if binary else p,
                    strict=True))
    t["label_soft"] = [float(soft[k]) for k in zip(t["cohort"], t["image_id"], strict=True)]
    drop = (t["model"] == "retr") & t["image_id"].isin(["c1-03", "c1-10", "c2-01"])
    return t[~drop].reset_index(drop=True)


def _retained_run(table):
    return run(retained, TR.make_ctx(table, [TR.ENTRY], n_resamples=B))


@pytest.fixture(scope="module")
def retained_runs():
    return {binary: (soft_seeded_table(binary), _retained_run(soft_seeded_table(binary)))
            for binary in (True, False)}


def test_retained_binary_soft_rows_equal_ordinary_rows(retained_runs):
    _, res = retained_runs[True]
    comp = res.tables["comparisons"]
    assert comp["criterion"].tolist() == ["roc_auc_difference", "soft_roc_auc_difference"] * 2
    for cohort in ("c1", "c2"):
        s = _one(comp, cohort=cohort, criterion="soft_roc_auc_difference")
        h = _one(comp, cohort=cohort, criterion="roc_auc_difference")
        _same(s, h, ("estimate", "ci_low", "ci_high", "auroc_a", "auroc_b", "seed_delta_mean",
                     "seed_delta_sd", "n", "n_pos", "n_neg", "n_retained", "n_only_a", "n_only_b"))
        assert s["design"] == h["design"] == "within_label+paired"
        assert math.isnan(s["z"]) and math.isnan(s["pvalue"]) and math.isnan(s["delong_ci_low"])
    seeds = res.tables["seeds"]
    for crit in ("roc_auc", "roc_auc_difference"):
        soft = _sel(seeds, criterion=f"soft_{crit}").reset_index(drop=True)
        hard = _sel(seeds, criterion=crit).reset_index(drop=True)
        assert len(soft) == len(hard) > 0
        for col in ("estimate", "sd", "difference_vs_ensemble", "auroc_a", "auroc_b"):
            np.testing.assert_allclose(soft[col].to_numpy(float), hard[col].to_numpy(float),
                                       rtol=1e-12, atol=1e-15, err_msg=f"{crit} {col}")
        assert soft[["cohort", "model", "kind", "model_seed"]].equals(
            hard[["cohort", "model", "kind", "model_seed"]])


def test_retained_soft_values_and_interval_recomputed(retained_runs):
    table, res = retained_runs[False]
    comp, seeds = res.tables["comparisons"], res.tables["seeds"]
    for cohort in ("c1", "c2"):
        wa, _ = TR.wide_seeds(table, "orig", cohort)
        wb, _ = TR.wide_seeds(table, "retr", cohort)
        ids = sorted(set(wa.index) & set(wb.index))
        meta = table[table["cohort"] == cohort].drop_duplicates("image_id").set_index("image_id")
        y, p = meta.loc[ids, "label"].to_numpy(float), meta.loc[ids, "label_soft"].to_numpy(float)
        assert np.any((p > 0.5) != (y == 1))  # soft labels disagree with the hard strata somewhere
        ea, eb = wa.loc[ids].mean(axis=1).to_numpy(), wb.loc[ids].mean(axis=1).to_numpy()
        r = _one(comp, cohort=cohort, criterion="soft_roc_auc_difference")
        sa, sb = O.soft_auroc_strict(p, ea), O.soft_auroc_strict(p, eb)
        assert (r["auroc_a"], r["auroc_b"]) == pytest.approx((sa, sb), rel=1e-12)
        assert r["estimate"] == pytest.approx(sb - sa, rel=1e-9, abs=1e-15)
        # the comparison's own generator, strata = the hard labels (not p > 0.5)
        W = hand_draw(y, B, cell_rng(SEED_RETAINED, "retained", "comparisons", cohort, "orig",
                                     "retr", "p"))
        reps = [O.soft_auroc_strict(p[i], eb[i]) - O.soft_auroc_strict(p[i], ea[i])
                for i in (np.repeat(np.arange(y.size), w) for w in W)]
        assert (r["ci_low"], r["ci_high"]) == pytest.approx(percentile_ci(reps), rel=1e-9,
                                                            abs=1e-15)
        assert (r["n"], r["n_pos"], r["n_retained"]) == (len(ids), int(y.sum()), len(ids))
        # seed-paired soft changes on the retained targets
        d = _sel(seeds, cohort=cohort, criterion="soft_roc_auc_difference")
        want = [O.soft_auroc_strict(p, wb.loc[ids, s].to_numpy())
                - O.soft_auroc_strict(p, wa.loc[ids, s].to_numpy()) for s in (1, 2, 3)]
        np.testing.assert_allclose(_sel(d, kind="seed")["estimate"], want, rtol=1e-9, atol=1e-15)
        summ = _one(d, kind="seed_summary")
        assert summ["estimate"] == pytest.approx(statistics.mean(want), rel=1e-9)
        assert summ["sd"] == pytest.approx(statistics.stdev(want), rel=1e-9)
        assert r["seed_delta_mean"] == summ["estimate"] and r["seed_delta_n_seeds"] == 3
        # per-seed soft AUROC of each model on all its images, and its seed ensemble
        for model, w in (("orig", wa), ("retr", wb)):
            pm = meta.loc[w.index, "label_soft"].to_numpy(float)
            g = _sel(seeds, cohort=cohort, model=model, criterion="soft_roc_auc")
            per = [O.soft_auroc_strict(pm, w[s].to_numpy()) for s in (1, 2, 3)]
            ens = O.soft_auroc_strict(pm, w.mean(axis=1).to_numpy())
            np.testing.assert_allclose(_sel(g, kind="seed")["estimate"], per, rtol=1e-12)
            np.testing.assert_allclose(_sel(g, kind="seed")["difference_vs_ensemble"],
                                       np.array(per) - ens, rtol=1e-9, atol=1e-15)
            assert _one(g, kind="seed_summary")["sd"] == pytest.approx(statistics.stdev(per),
                                                                        rel=1e-9)
            e = _one(g, kind="ensemble")
            assert e["estimate"] == pytest.approx(ens, rel=1e-12) and math.isnan(e["ci_low"])
            assert e["design"] == "point_estimate"
    assert not res.tables["composition"]["criterion"].str.startswith("soft_").any()
    assert any("Soft labels" in n and "composition" in n for n in res.notes)


def test_retained_ordinary_rows_byte_identical_with_and_without_soft_labels(retained_runs):
    table, with_soft = retained_runs[False]
    without = _retained_run(table.drop(columns="label_soft"))
    for name, plain in without.tables.items():
        got = with_soft.tables[name]
        got = got[~got["criterion"].str.startswith("soft_")].reset_index(drop=True)
        got = got[list(plain.columns)]
        pd.testing.assert_frame_equal(got, plain, check_exact=True)
        assert got.to_csv(index=False) == plain.to_csv(index=False), name
    assert all(n in with_soft.notes for n in without.notes)
    again = _retained_run(table)
    for name, t in with_soft.tables.items():
        pd.testing.assert_frame_equal(again.tables[name], t, check_exact=True)


def test_retained_refuses_soft_labels_that_differ_between_score_sets():
    table = soft_seeded_table()
    hit = (table["model"] == "retr") & (table["image_id"] == "c2-04")
    table.loc[hit, "label_soft"] = 1.0 - table.loc[hit, "label_soft"]
    # refused where the table is validated, as a label differing between rows is
    with pytest.raises(SchemaError, match=r"image 'c2-04' in cohort 'c2' has different \['label_soft'\]"):
        _retained_run(table)
