"""Block `discrimination` with soft labels (issue 4 item 2: soft metrics beside the ordinary ones).

Witnesses: the double-sum soft oracles of tests/_oracles.py; scikit-learn on the data set
duplicated into a positive copy of weight p and a negative copy of weight 1 - p (anchors
T9: soft AP equals sklearn's AP on it, and inclusive soft AUROC equals sklearn's AUROC
plus half the self-pair term); and the reduction to hard labels: with 0/1 soft labels
the soft rows must reproduce the ordinary rows' estimates and intervals (same design,
same draws).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import discrimination as D
from medaudit.io.schema import validate_score_table
from tests import _oracles as oracle
from tests._support import SpecContext, context, run
from tests._support import one as _row

PROMPT = "none"


def make_ctx(cohorts: dict, designs: dict | None = None) -> SpecContext:
    """cohorts: name -> (label, label_soft or None, {model: scores})."""
    rows = []
    for c, (y, p, by_model) in cohorts.items():
        for m, s in by_model.items():
            for i in range(len(y)):
                r = {"image_id": f"{c}{i:03d}", "cohort": c, "model": m, "prompt": PROMPT,
                     "score": float(s[i]), "label": int(y[i])}
                r["label_soft"] = float(p[i]) if p is not None else 0.0
                rows.append(r)
    table = pd.DataFrame(rows)
    if all(p is None for _, p, _ in cohorts.values()):
        table = table.drop(columns="label_soft")
    spec = AuditSpec.model_validate({
        "name": "t", "scores": "unused.csv", "primary_prompt": PROMPT, "seed": 5,
        "n_resamples": 150, "blocks": ["discrimination"],
        "cohorts": {c: {"design": (designs or {}).get(c, "ordinary")} for c in cohorts}})
    return context(scores=validate_score_table(table), spec=spec)


def _study(seed=1, n=50):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, n)
    y = (p > 0.5).astype(int)
    models = {m: 1 / (1 + np.exp(-(3 * (p - 0.5) + rng.normal(0, k, n))))
              for m, k in (("a", 0.5), ("b", 1.5))}
    return y, p, models


@pytest.fixture(scope="module")
def soft_run():
    y, p, models = _study()
    return (y, p, models), run(D, make_ctx({"k": (y, p, models)}))


def test_soft_rows_match_the_double_sums(soft_run):
    (_, p, models), res = soft_run
    t = res.tables["metrics"]
    for m, s in models.items():
        # the stats defaults: strict s-AUROC, s-AP with the own label known (paper 001 Table 4)
        assert _row(t, model=m, criterion="soft_roc_auc")["estimate"] == pytest.approx(
            oracle.soft_auroc_strict(p, s), rel=1e-12)
        assert _row(t, model=m, criterion="soft_average_precision")["estimate"] == pytest.approx(
            oracle.soft_ap_known_self(p, s), rel=1e-12)
    assert any("label_soft" in n for n in res.notes)
    # the note names the forms the rows use (strict, own label known), not the inclusive one
    (note,) = [n for n in res.notes if n.startswith("Soft labels")]
    assert "soft_roc_auc (strict" in note and "own label known" in note and "inclusive" not in note


def test_soft_rows_match_sklearn_on_duplicated_data(soft_run):
    (_, p, models), res = soft_run
    t = res.tables["metrics"]
    n = p.size
    y_dup = np.r_[np.ones(n), np.zeros(n)]
    w_dup = np.r_[p, 1 - p]
    n_pos, n_neg = p.sum(), (1 - p).sum()
    for m, s in models.items():
        s_dup = np.r_[s, s]
        trap = roc_auc_score(y_dup, s_dup, sample_weight=w_dup)
        want = trap - 0.5 * np.sum(p * (1 - p)) / (n_pos * n_neg)  # strict (T9)
        assert _row(t, model=m, criterion="soft_roc_auc")["estimate"] == pytest.approx(want,
                                                                                      rel=1e-12)
        # sklearn's AP on the duplicated data is Definition 2.2; the default adds each
        # item's self-term p_i (1 - p_i) / i (ranks in descending score order, untied)
        ap = average_precision_score(y_dup, s_dup, sample_weight=w_dup)
        o = np.argsort(-s, kind="stable")
        ap += np.sum(p[o] * (1 - p[o]) / np.arange(1, n + 1)) / n_pos
        assert _row(t, model=m, criterion="soft_average_precision")["estimate"] == pytest.approx(
            ap, rel=1e-12)


@pytest.mark.parametrize("design", ["ordinary", "within_label"])
def test_binary_soft_labels_reproduce_the_ordinary_rows(design):
    y, _, models = _study(seed=3)
    res = run(D, make_ctx({"k": (y, y.astype(float), models)}, designs={"k": design}))
    t = res.tables["metrics"]
    for m in models:
        for soft, hard in (("soft_roc_auc", "roc_auc"),
                           ("soft_average_precision", "average_precision")):
            a, b = _row(t, model=m, criterion=soft), _row(t, model=m, criterion=hard)
            for col in ("estimate", "ci_low", "ci_high"):
                assert a[col] == pytest.approx(b[col], rel=1e-12), (m, soft, col)
            assert a["design"] == b["design"] == f"{design}+paired"
            assert a["n_resamples"] == b["n_resamples"] == 150
    d = res.tables["model_differences"]
    sd, hd = (_row(d, criterion=c) for c in ("soft_roc_auc_difference", "roc_auc_difference"))
    for col in ("estimate", "ci_low", "ci_high"):
        assert sd[col] == pytest.approx(hd[col], rel=1e-9, abs=1e-12)
    assert sd["verdict"] == hd["verdict"]


def test_soft_difference_rows(soft_run):
    _, res = soft_run
    t, d = res.tables["metrics"], res.tables["model_differences"]
    row = _row(d, criterion="soft_roc_auc_difference")
    want = (_row(t, model="a", criterion="soft_roc_auc")["estimate"]
            - _row(t, model="b", criterion="soft_roc_auc")["estimate"])
    assert row["estimate"] == pytest.approx(want, rel=1e-12)
    assert np.isnan(row["pvalue"]) and row["ci_low"] <= row["estimate"] <= row["ci_high"]


def test_cohorts_without_soft_labels_are_unchanged():
    y, _, models = _study(seed=4)
    res = run(D, make_ctx({"k": (y, None, models)}))
    assert not res.tables["metrics"]["criterion"].str.startswith("soft_").any()
    assert not res.tables["model_differences"]["criterion"].str.startswith("soft_").any()


def test_tied_scores_with_soft_labels_are_noted():
    y, p, models = _study(seed=6)
    models = {**models, "coarse": np.round(models["a"], 1)}  # a few distinct values: ties
    res = run(D, make_ctx({"k": (y, p, models)}))
    note = [n for n in res.notes if n.startswith("Tied scores")]
    n_tied = int(np.sum(np.unique(models["coarse"], return_counts=True)[1][
        np.unique(models["coarse"], return_inverse=True)[1]] > 1))
    assert note and f"coarse: {n_tied}" in note[0] and "a:" not in note[0]


class _ReversingBackend:
    """Runs cells last-to-first (as a pool might) and returns them in item order; records them."""

    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def map(self, fn, items):
        items = list(items)
        self.calls.append((getattr(fn, "func", fn).__name__, len(items)))  # partial: its function
        out = [fn(x) for x in reversed(items)]
        return out[::-1]


def test_cells_go_through_ctx_map_with_identical_results():
    y, p, models = _study(seed=7)
    y2, p2, models2 = _study(seed=8, n=40)
    cohorts = {"k": (y, p, models), "j": (y2, p2, models2)}
    plain = run(D, make_ctx(cohorts, designs={"j": "within_label"}))
    backend = _ReversingBackend()
    ctx = make_ctx(cohorts, designs={"j": "within_label"})
    mapped = run(D, context(scores=ctx.scores, spec=ctx.spec, backend=backend))
    # two cohorts: one bootstrap cell each (its soft twin rides along), one DeLong cell each
    assert backend.calls == [("run_cell", 2), ("run_delong", 2)]
    for name, df in plain.tables.items():
        pd.testing.assert_frame_equal(mapped.tables[name], df, check_exact=True)
    assert mapped.notes == plain.notes


def test_within_label_soft_strata_are_the_hard_labels():
    """Soft labels that cross 0.5 against the hard label: the soft rows still resample the
    hard classes (the draws of the ordinary rows), not label_soft > 0.5."""
    y, p, models = _study(seed=9)
    p = p.copy()
    p[np.flatnonzero(y == 1)[:3]] = 0.2  # positives the readers mostly call negative
    p[np.flatnonzero(y == 0)[:3]] = 0.9
    ctx = make_ctx({"k": (y, p, models)}, designs={"k": "within_label"})
    t = run(D, ctx).tables["metrics"]
    from medaudit.blocks.cells import SOFT_METRICS
    from medaudit.blocks.context import cell_rng
    from medaudit.stats import paired_bootstrap

    key = ("discrimination", "k", PROMPT)
    want = paired_bootstrap(p, models, metrics=SOFT_METRICS, design="ordinary", strata=y,
                            n_resamples=150, rng=cell_rng(5, *key))
    other = paired_bootstrap(p, models, metrics=SOFT_METRICS, design="within_label",
                             n_resamples=150, rng=cell_rng(5, *key))
    for m in models:
        for mid in SOFT_METRICS:
            r, w = _row(t, model=m, criterion=mid), want.marginal[(m, mid)]
            assert (r["ci_low"], r["ci_high"]) == pytest.approx((w.ci_low, w.ci_high), rel=1e-12)
            assert r["design"] == "within_label+paired"
    assert any(other.marginal[(m, "soft_roc_auc")].ci_low != want.marginal[(m, "soft_roc_auc")].ci_low
               for m in models)
