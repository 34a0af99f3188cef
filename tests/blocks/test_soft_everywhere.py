"""Soft labels in the prompts and spectrum blocks (issue 4 item 2: soft metrics everywhere).

Witnesses:
* the reduction to hard labels: with 0/1 soft labels (and untied scores) every soft row
  reproduces the ordinary row beside it -- estimate *and* interval, i.e. the same
  resampled images -- under the ordinary and the within-label design;
* the double-sum soft oracles of tests/_oracles.py and scikit-learn on the data set
  duplicated into a positive copy of weight p and a negative copy of weight 1 - p
  (anchors T9: Definition 2.2's s-AP equals sklearn's AP there, and the default s-AP adds
  the self-terms; the default strict s-AUROC is sklearn's AUROC less half the self-pair
  term);
* the ordinary rows are byte-identical with and without ``label_soft`` in the table;
* where a soft row has no ordinary bootstrap twin (prompt contrasts: the ordinary rows are
  DeLong), its interval is the hard-label engine's own interval for 0/1 labels;
* within-label strata are the hard labels even where ``label_soft > 0.5`` disagrees with
  them (witnessed against the hard-label within-label bootstrap on 0/1 data and against a
  direct call with the hard strata on soft data).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import discrimination, prompts, spectrum
from medaudit.blocks.context import cell_rng
from medaudit.io.schema import validate_score_table
from medaudit.stats import paired_bootstrap
from tests import _oracles as O
from tests._support import SpecContext, context, run
from tests._support import one as _one
from tests._support import select as _sel

PROMPTS = ["clinical", "photo", "report"]
MODELS = ["m1", "m2"]
GROUPS = ["healthy", "sick"]
SEED = 7
B = 200


# ----------------------------------------------------------------------------- data
def _labels(cohort: str, rng: np.random.Generator, n_pos=18, n_neg=(16, 12)):
    """Image ids, hard labels, negative groups and soft labels of one cohort.

    Soft labels straddle 0.5 against the hard label on purpose (a positive with p < 0.5,
    a control with p > 0.5), so ``p > 0.5`` strata would differ from the hard ones.
    """
    n = n_pos + sum(n_neg)
    y = np.r_[np.ones(n_pos), np.zeros(sum(n_neg))].astype(int)
    grp = np.array([""] * n_pos + [g for g, k in zip(GROUPS, n_neg, strict=True) for _ in range(k)])
    p = np.clip(np.where(y == 1, rng.beta(4, 2, n), rng.beta(2, 4, n)), 0, 1)
    p[0], p[n_pos] = 0.3, 0.7  # disagree with the hard label
    ids = np.array([f"{cohort}{i:03d}" for i in rng.permutation(n)])  # ids not in label order
    return ids, y, grp, p


def make_table(*, binary: bool = False, seed: int = 0) -> pd.DataFrame:
    """Two cohorts (a: ordinary design, b: within-label), 2 models x 3 prompts, untied scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for cohort in ("a", "b"):
        ids, y, grp, p = _labels(cohort, rng)
        for m in MODELS:
            for k, pr in enumerate(PROMPTS):
                s = 1 / (1 + np.exp(-(1.2 * (y - 0.5) + (p - 0.5) + rng.normal(0, 0.8 + 0.2 * k,
                                                                             y.size))))
                for i in range(y.size):
                    rows.append({"image_id": ids[i], "cohort": cohort, "model": m, "prompt": pr,
                                 "score": float(s[i]), "label": int(y[i]),
                                 "label_soft": float(y[i] if binary else p[i]),
                                 "negative_group": grp[i]})
    return pd.DataFrame(rows)


def make_ctx(table: pd.DataFrame, **spec_kw) -> SpecContext:
    spec = AuditSpec.model_validate({
        "name": "soft", "scores": "inline.csv", "primary_prompt": PROMPTS[0], "seed": SEED,
        "n_resamples": B, "n_permutations": 99,
        "cohorts": {"a": {"role": "primary"}, "b": {"role": "primary", "design": "within_label"}},
        "prompts": {"families": PROMPTS, "average": True},
        "spectrum": [{"cohort": "a", "groups": GROUPS, "test": "none"},
                     {"cohort": "b", "groups": GROUPS, "reference": "healthy", "test": "none"}],
        **spec_kw})
    return context(scores=validate_score_table(table), spec=spec)


def _cell(table: pd.DataFrame, cohort: str, model: str, prompt: str, group: str | None = None):
    """(y, p, s) straight from the long table: by image_id, or for P ∪ G positives first."""
    t = table[(table["cohort"] == cohort) & (table["model"] == model) & (table["prompt"] == prompt)]
    if group is None:
        t = t.sort_values("image_id")
    else:
        t = t[(t["label"] == 1) | (t["negative_group"] == group)]
        t = t.sort_values(["label", "image_id"], ascending=[False, True])
    return (t["label"].to_numpy(dtype=float), t["label_soft"].to_numpy(dtype=float),
            t["score"].to_numpy(dtype=float))


@pytest.fixture(scope="module")
def binary_run():
    table = make_table(binary=True)
    ctx = make_ctx(table)
    return table, run(prompts, ctx), run(spectrum, ctx)


@pytest.fixture(scope="module")
def soft_run():
    table = make_table()
    ctx = make_ctx(table)
    return table, run(prompts, ctx), run(spectrum, ctx)


def _same(a: pd.Series, b: pd.Series, cols=("estimate", "ci_low", "ci_high")):
    for c in cols:
        assert a[c] == pytest.approx(b[c], rel=1e-12, abs=1e-15), c


# ----------------------------------------------------------------------------- 0/1 soft labels
def test_binary_soft_labels_reproduce_prompt_rows(binary_run):
    table, pr, _ = binary_run
    mat = pr.tables["auroc_matrix"]
    for _, g in mat.groupby(["cohort", "model", "prompt"]):
        assert list(g["criterion"]) == ["roc_auc", "soft_roc_auc"]
        assert g["estimate"].iloc[1] == pytest.approx(g["estimate"].iloc[0], rel=1e-12)
    for name in ("average", "model_differences_by_prompt"):
        t = pr.tables[name]
        soft = _sel(t, criterion="soft_roc_auc_difference")
        assert len(soft) == len(_sel(t, criterion="roc_auc_difference")) > 0
        for _, s in soft.iterrows():
            h = _one(t, criterion="roc_auc_difference", cohort=s["cohort"], model=s["model"],
                     prompt=s["prompt"])
            _same(s, h)  # same images drawn: identical intervals, both designs
            assert s["design"] == h["design"]
            if name == "average":
                assert s["value_a"] == pytest.approx(h["value_a"], rel=1e-12)
            else:
                assert s["verdict"] == h["verdict"]
                assert s["auroc_a"] == pytest.approx(h["auroc_a"], rel=1e-12)
    assert set(_sel(pr.tables["model_differences_by_prompt"],
                    criterion="soft_roc_auc_difference")["design"]) == {"ordinary+paired",
                                                                        "within_label+paired"}
    dec = pr.tables["decomposition"]
    for col in ("ss", "share_percent"):
        np.testing.assert_allclose(_sel(dec, criterion="soft_roc_auc")[col].to_numpy(),
                                   _sel(dec, criterion="roc_auc")[col].to_numpy(), rtol=1e-9,
                                   atol=1e-15)


def test_binary_soft_contrasts_are_the_hard_bootstrap(binary_run):
    """Soft contrast rows: DeLong's estimate, and the hard-label bootstrap interval."""
    table, pr, _ = binary_run
    con = pr.tables["contrasts"]
    for _, s in _sel(con, criterion="soft_roc_auc_difference").iterrows():
        c, m, alt = s["cohort"], s["model"], s["prompt_a"]
        d = _one(con, criterion="roc_auc_difference", cohort=c, model=m, prompt_a=alt)
        assert s["estimate"] == pytest.approx(d["estimate"], rel=1e-12)  # DeLong's AUC_a - AUC_b
        y = _cell(table, c, m, PROMPTS[0])[0]
        hard = paired_bootstrap(y, {p: _cell(table, c, m, p)[2] for p in PROMPTS},
                                contrasts=[(p, PROMPTS[0]) for p in PROMPTS[1:]],
                                design="ordinary" if c == "a" else "within_label", n_resamples=B,
                                rng=cell_rng(SEED, "prompts", "contrasts", c, m, "soft_roc_auc"))
        h = hard.differences[(alt, PROMPTS[0], "roc_auc")]
        assert (s["ci_low"], s["ci_high"]) == pytest.approx((h.ci_low, h.ci_high), rel=1e-12)
        assert s["design"] == h.design


def test_binary_soft_labels_reproduce_spectrum_rows(binary_run):
    table, _, sp = binary_run
    groups = sp.tables["groups"]
    for _, s in _sel(groups, criterion="soft_roc_auc").iterrows():
        c, m, g = s["cohort"], s["model"], s["group"]
        h = _one(groups, criterion="roc_auc", cohort=c, model=m, group=g)
        assert s["estimate"] == pytest.approx(h["estimate"], rel=1e-12)
        assert (s["n"], s["n_pos"], s["n_neg"]) == (h["n"], h["n_pos"], h["n_neg"])
        y, _, sc = _cell(table, c, m, PROMPTS[0], g)
        if c == "a":  # B-ORD marginal: the very same draws as the ordinary row
            _same(s, h)
            assert s["design"] == h["design"] == "ordinary"
        else:  # within-label cohort: the shared-positive draw of the ordinary row itself
            _same(s, h)
            assert s["design"] == h["design"] == "shared_positive"
        ap = _one(groups, criterion="soft_average_precision", cohort=c, model=m, group=g)
        assert ap["estimate"] == pytest.approx(O.average_precision_individual(y, sc), rel=1e-12)
    md = sp.tables["model_differences"]
    soft = _sel(md, criterion="soft_roc_auc_difference")
    assert len(soft) == len(_sel(md, criterion="roc_auc_difference")) == 4
    for _, s in soft.iterrows():
        h = _one(md, criterion="roc_auc_difference", cohort=s["cohort"], group=s["group"])
        _same(s, h)
        assert s["design"] == h["design"] and s["verdict"] == h["verdict"]
        assert (s["n_pos"], s["n_neg"]) == (h["n_pos"], h["n_neg"])


# ----------------------------------------------------------------------------- soft values
def _t9_auroc(p, s):
    """Strict s-AUROC (the stats default, paper 001 Table 4) from sklearn on the duplicated
    data (anchors T9): the trapezoid less half the self pairs."""
    n = p.size
    trap = roc_auc_score(np.r_[np.ones(n), np.zeros(n)], np.r_[s, s], sample_weight=np.r_[p, 1 - p])
    return trap - 0.5 * np.sum(p * (1 - p)) / (p.sum() * (1 - p).sum())


def _t9_ap(p, s):
    """s-AP with the own label known (the stats default): sklearn on the duplicated data
    gives Definition 2.2, plus each item's self-term p_i (1 - p_i) / rank_i."""
    n = p.size
    written = average_precision_score(np.r_[np.ones(n), np.zeros(n)], np.r_[s, s],
                                      sample_weight=np.r_[p, 1 - p])
    o = np.argsort(-s, kind="stable")
    return written + np.sum(p[o] * (1 - p[o]) / np.arange(1, n + 1)) / p.sum()


def test_prompt_soft_values_match_double_sums_and_sklearn(soft_run):
    table, pr, _ = soft_run
    mat = pr.tables["auroc_matrix"]
    for (c, m, p), g in mat.groupby(["cohort", "model", "prompt"]):
        _, ps, s = _cell(table, c, m, p)
        soft = _one(g, criterion="soft_roc_auc")["estimate"]
        assert soft == pytest.approx(O.soft_auroc_strict(ps, s), rel=1e-12)
        assert soft == pytest.approx(_t9_auroc(ps, s), rel=1e-9)
    con = pr.tables["contrasts"]
    soft_con = _sel(con, criterion="soft_roc_auc_difference")
    assert len(soft_con) == len(_sel(con, criterion="roc_auc_difference")) == 2 * 2 * 2
    for _, r in soft_con.iterrows():
        _, ps, sa = _cell(table, r["cohort"], r["model"], r["prompt_a"])
        _, _, sb = _cell(table, r["cohort"], r["model"], r["prompt_b"])
        want = O.soft_auroc_strict(ps, sa) - O.soft_auroc_strict(ps, sb)
        assert r["estimate"] == pytest.approx(want, rel=1e-9)
        assert r["ci_low"] <= r["estimate"] <= r["ci_high"]
        assert r["family"] == prompts.DESCRIPTIVE and np.isnan(r["pvalue"]) and np.isnan(r["z"])
        assert pd.isna(r["significant"]) and np.isnan(r["pvalue_adj"])
        assert r["n_resamples"] == B
    assert any("DeLong" in n and "no soft form" in n for n in pr.notes)
    md = pr.tables["model_differences_by_prompt"]
    for _, r in _sel(md, criterion="soft_roc_auc_difference").iterrows():
        _, ps, sa = _cell(table, r["cohort"], r["model_a"], r["prompt"])
        _, _, sb = _cell(table, r["cohort"], r["model_b"], r["prompt"])
        assert r["auroc_a"] == pytest.approx(O.soft_auroc_strict(ps, sa), rel=1e-12)
        assert r["estimate"] == pytest.approx(O.soft_auroc_strict(ps, sa)
                                              - O.soft_auroc_strict(ps, sb), rel=1e-9)


def test_spectrum_soft_values_match_double_sums_and_sklearn(soft_run):
    table, _, sp = soft_run
    groups = sp.tables["groups"]
    soft = _sel(groups, criterion="soft_roc_auc")
    assert len(soft) == 2 * 2 * 2  # cohorts x models x groups
    for _, r in soft.iterrows():
        y, ps, s = _cell(table, r["cohort"], r["model"], PROMPTS[0], r["group"])
        assert r["estimate"] == pytest.approx(O.soft_auroc_strict(ps, s), rel=1e-12)
        assert r["estimate"] == pytest.approx(_t9_auroc(ps, s), rel=1e-9)
        ap = _one(groups, criterion="soft_average_precision", cohort=r["cohort"],
                  model=r["model"], group=r["group"])
        assert ap["estimate"] == pytest.approx(O.soft_ap_known_self(ps, s), rel=1e-12)
        assert ap["estimate"] == pytest.approx(_t9_ap(ps, s), rel=1e-9)
        assert (r["n_pos"], r["n_neg"]) == (int(y.sum()), int((1 - y).sum()))  # image counts
        assert r["ci_low"] <= r["estimate"] <= r["ci_high"] and r["n_resamples"] == B
    # soft group contrasts are descriptive (the permutation test is hard-label only)
    con = sp.tables["contrasts"]
    soft_con = con[con["criterion"] == "soft_roc_auc_difference"]
    assert len(soft_con) == 4 and (soft_con["family"] == spectrum.DESCRIPTIVE_FAMILY).all()
    assert any("Soft labels" in n and "negative_group" in n for n in sp.notes)


def test_spectrum_group_equals_discrimination_on_the_sub_cohort(soft_run):
    """Soft AUROC/AP(P, G) is the soft metric of the sub-cohort P ∪ G (the documented choice):
    the discrimination block on a cohort holding only P and G gives the same values."""
    table, _, sp = soft_run
    for g in GROUPS:
        sub = table[(table["cohort"] == "a") & ((table["label"] == 1) | (table["negative_group"] == g))]
        ctx = make_ctx(sub.assign(cohort="a_sub"), cohorts={"a_sub": {"role": "primary"}},
                       prompts={"families": PROMPTS}, spectrum=[])
        metrics = run(discrimination, ctx).tables["metrics"]
        for m in MODELS:
            for crit in discrimination.SOFT_METRICS:
                want = _one(metrics, criterion=crit, cohort="a_sub", model=m)["estimate"]
                got = _one(sp.tables["groups"], criterion=crit, cohort="a", model=m, group=g)
                assert got["estimate"] == pytest.approx(want, rel=1e-12)


def test_within_label_strata_are_the_hard_labels(soft_run):
    """Soft labels that disagree with the hard label at 0.5 do not move the strata."""
    table, pr, _ = soft_run
    md = pr.tables["model_differences_by_prompt"]
    y, ps, _ = _cell(table, "b", MODELS[0], PROMPTS[0])
    assert np.any((ps > 0.5) != (y == 1))  # the planted disagreement is there
    scores = {f"{m}|{p}": _cell(table, "b", m, p)[2] for m in MODELS for p in PROMPTS}
    contrasts = [(f"m1|{p}", f"m2|{p}") for p in PROMPTS]
    key = cell_rng(SEED, "prompts", "model_differences", "b")
    want = paired_bootstrap(ps, scores, metrics=["soft_roc_auc"], contrasts=contrasts,
                            design="ordinary", strata=y, n_resamples=B, rng=key)
    # the stats layer's own within-label split of soft labels (p > 0.5) is a different draw
    other = paired_bootstrap(ps, scores, metrics=["soft_roc_auc"], contrasts=contrasts,
                             design="within_label", n_resamples=B,
                             rng=cell_rng(SEED, "prompts", "model_differences", "b"))
    for p in PROMPTS:
        r = _one(md, criterion="soft_roc_auc_difference", cohort="b", prompt=p)
        d = want.differences[(f"m1|{p}", f"m2|{p}", "soft_roc_auc")]
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((d.ci_low, d.ci_high), rel=1e-12)
        assert r["design"] == "within_label+paired"
    assert any(other.differences[(a, b, "soft_roc_auc")].ci_low
               != want.differences[(a, b, "soft_roc_auc")].ci_low for a, b in contrasts)


def test_hard_within_label_is_ordinary_with_label_strata():
    """The identity soft_twin relies on: within_label == ordinary with strata = label."""
    rng = np.random.default_rng(5)
    y = (rng.random(60) < 0.4).astype(float)
    s = {"x": rng.random(60), "z": rng.random(60)}
    a = paired_bootstrap(y, s, design="within_label", n_resamples=150, rng=11)
    b = paired_bootstrap(y, s, design="ordinary", strata=y, n_resamples=150, rng=11)
    for k, r in a.marginal.items():
        np.testing.assert_array_equal(r.replicates, b.marginal[k].replicates)


# ----------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("block", [prompts, spectrum])
def test_ordinary_rows_byte_identical_with_and_without_soft_labels(block):
    table = make_table(seed=2)
    with_soft = run(block, make_ctx(table))
    without = run(block, make_ctx(table.drop(columns="label_soft")))
    for name, plain in without.tables.items():
        got = with_soft.tables[name]
        if "criterion" in got.columns:
            got = got[~got["criterion"].str.startswith("soft_")]
        got = got[list(plain.columns)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, plain, check_exact=True)
        assert got.to_csv(index=False) == plain.to_csv(index=False), name
    # soft notes are added (the contrast note is extended), never changed
    assert all(any(w.startswith(n) for w in with_soft.notes) for n in without.notes)
    n_soft = sum(int(t["criterion"].str.startswith("soft_").sum())
                 for t in with_soft.tables.values() if "criterion" in t)
    assert n_soft > 0  # the comparison is not vacuous


@pytest.mark.parametrize("block", [prompts, spectrum])
def test_soft_runs_are_deterministic(block):
    table = make_table(seed=4)
    a, b = run(block, make_ctx(table)), run(block, make_ctx(table))
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True)
    assert a.notes == b.notes
