"""Block `discrimination`: Table 4 metrics and paired model differences (paper 000 M0.7).

Witnesses: sklearn (AUROC, AP on untied data, Brier), the loop oracles in
tests/_oracles.py (ECE15, AURC, brute-force DeLong z), arithmetic identities of a
shared paired draw, and hand-built cohorts where one model strictly dominates.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import discrimination as D
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from tests import _oracles as O
from tests._support import SpecContext, context, run

PROMPT = "clinical"
CRITERIA = ["roc_auc", "average_precision", "brier_score", "ece[n_bins=15]", "aurc"]


def make_context(cohorts: dict, *, designs: dict | None = None, exposure: dict | None = None,
                 n_resamples: int = 300, drop: tuple | None = None) -> SpecContext:
    """cohorts: name -> (labels, {model: scores}); drop: (cohort, model, image index) to omit."""
    rows = []
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            for i, (yi, si) in enumerate(zip(y, s, strict=True)):
                if drop == (c, m, i):
                    continue
                rows.append({"image_id": f"{c}-{i:03d}", "cohort": c, "model": m, "prompt": PROMPT,
                             "score": float(si), "label": int(yi)})
    designs = designs or {}
    spec = AuditSpec.model_validate({
        "name": "t", "simulate": "paper000", "primary_prompt": PROMPT, "seed": 7,
        "n_resamples": n_resamples,
        "cohorts": {c: {"design": designs.get(c, "ordinary")} for c in cohorts},
        "models": [{"name": m, "exposure": (exposure or {}).get(m, {})}
                   for m in sorted({m for _, bm in cohorts.values() for m in bm})],
    })
    return context(scores=validate_score_table(pd.DataFrame(rows)), spec=spec)


def _untied(rng, n_pos, n_neg, shift):
    """Continuous (untied) probabilities: positives shifted up by `shift` on the logit scale."""
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    z = rng.normal(size=y.size) + shift * y
    return y, 1.0 / (1.0 + np.exp(-z))


@pytest.fixture(scope="module")
def hand():
    rng = np.random.default_rng(11)
    y1, a1 = _untied(rng, 25, 35, 1.5)
    _, b1 = _untied(rng, 25, 35, 0.7)
    c1 = 1.0 / (1.0 + np.exp(-(rng.normal(size=y1.size) + 1.0 * y1)))
    y2, a2 = _untied(rng, 20, 60, 2.0)
    _, b2 = _untied(rng, 20, 60, 0.3)
    c2 = rng.uniform(size=y2.size)
    cohorts = {"alpha": (y1, {"mA": a1, "mB": b1, "mC": c1}),
               "beta": (y2, {"mA": a2, "mB": b2, "mC": c2})}
    ctx = make_context(cohorts, designs={"beta": "within_label"},
                       exposure={"mB": {"beta": "trained on beta"}})
    return cohorts, ctx, run(D, ctx)


def _value(df, **kw):
    sel = np.ones(len(df), dtype=bool)
    for k, v in kw.items():
        sel &= (df[k] == v).to_numpy()
    assert sel.sum() == 1, kw
    return df[sel].iloc[0]


def test_point_estimates_match_sklearn_and_oracles(hand):
    cohorts, _, res = hand
    t = res.tables["metrics"]
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            def est(crit, c=c, m=m):
                return _value(t, cohort=c, model=m, criterion=crit)["estimate"]
            assert est("roc_auc") == pytest.approx(roc_auc_score(y, s), abs=1e-12)
            assert est("average_precision") == pytest.approx(average_precision_score(y, s), abs=1e-12)
            assert est("brier_score") == pytest.approx(brier_score_loss(y, s), abs=1e-12)
            assert est("ece[n_bins=15]") == pytest.approx(O.ece(y, s, n_bins=15), abs=1e-12)
            assert est("aurc") == pytest.approx(O.aurc(y, s), abs=1e-12)


def test_average_precision_ranks_ties_individually():
    # tied scores: individual ranks in stable order (paper 000) differ from sklearn's pooled AP
    y = np.array([1, 0, 1, 0, 1, 0, 0, 1])
    s = np.array([0.9, 0.7, 0.7, 0.5, 0.5, 0.5, 0.2, 0.1])
    ctx = make_context({"c": (y, {"m": s})}, n_resamples=20)
    est = _value(run(D, ctx).tables["metrics"], criterion="average_precision")["estimate"]
    assert est == pytest.approx(O.average_precision_individual(y, s), abs=1e-12)
    assert O.average_precision_individual(y, s) != pytest.approx(O.average_precision_pooled(y, s))


def _note_value(note: str, model: str, cohort: str, what: str) -> float:
    import re

    num = r"(\d+(?:\.\d+)?(?:e-?\d+)?)"
    m = re.search(rf"{model} in {cohort} \(\d+ tied images\): reported {num}, ties pooled {num}",
                  note)
    assert m, note
    return float(m.group(1 if what == "reported" else 2))


def test_ap_note_gives_the_pooled_value_where_scores_tie():
    # witness: scikit-learn's average_precision_score pools tied scores
    rng = np.random.default_rng(4)
    y = np.r_[np.ones(15), np.zeros(25)]
    tied = np.round(rng.uniform(size=40) * 0.4 + 0.3 * y, 1)  # heavy ties
    untied = 1.0 / (1.0 + np.exp(-(rng.normal(size=40) + y)))
    ctx = make_context({"c": (y, {"tied": tied, "untied": untied})}, n_resamples=20)
    res = run(D, ctx)
    note = next(n for n in res.notes if n.startswith("average_precision ranks tied scores"))
    assert "pools each set of tied scores" in note and "untied in c" not in note
    est = _value(res.tables["metrics"], model="tied", criterion="average_precision")["estimate"]
    assert _note_value(note, "tied", "c", "reported") == est
    assert _note_value(note, "tied", "c", "pooled") == pytest.approx(
        average_precision_score(y, tied), abs=1e-12)
    n_tied = int(sum((tied == v).sum() for v in np.unique(tied) if (tied == v).sum() > 1))
    assert f"tied in c ({n_tied} tied images)" in note
    assert ("the row order matters" in note) == (
        abs(est - average_precision_score(y, tied)) > 1e-3)
    # no ties anywhere: the rule alone
    ctx = make_context({"c": (y, {"untied": untied})}, n_resamples=20)
    note = next(n for n in run(D, ctx).notes if n.startswith("average_precision ranks"))
    assert "Where scores tie" not in note


def test_aurc_note_gives_the_value_averaged_over_the_orders_of_tied_confidences():
    import itertools
    import re

    # 0.3 and 0.7 tie in confidence, and the tie holds errors and correct decisions
    y = np.array([1, 0, 1, 0, 1, 0, 0])
    tied = np.array([0.7, 0.7, 0.3, 0.9, 0.2, 0.3, 0.6])
    untied = np.array([0.91, 0.12, 0.83, 0.35, 0.64, 0.27, 0.45])
    ctx = make_context({"c": (y, {"tied": tied, "untied": untied})}, n_resamples=20)
    res = run(D, ctx)
    note = next(n for n in res.notes if n.startswith("aurc orders images by confidence"))
    assert "untied in c" not in note
    num = r"(\d+(?:\.\d+)?(?:e-?\d+)?)"
    m = re.search(rf"tied in c: reported {num}, averaged over the orders of the ties {num}", note)
    assert m, note
    est = _value(res.tables["metrics"], model="tied", criterion="aurc")["estimate"]
    assert float(m.group(1)) == est
    # witness: the loop oracle's AURC averaged over all 5040 row orders
    brute = np.mean([O.aurc(y[list(i)], tied[list(i)])
                     for i in itertools.permutations(range(y.size))])
    assert float(m.group(2)) == pytest.approx(brute, abs=1e-12)
    assert ("the row order matters" in note) == (abs(est - brute) > 1e-3)
    # no tie holding both kinds: no note, also where the engine's AURC (a harmonic-number
    # sum) and the point function's risk sum differ in the last bits (a larger cohort)
    rng = np.random.default_rng(8)
    yb = (rng.random(600) < 0.3).astype(int)
    pb = 1.0 / (1.0 + np.exp(-(rng.normal(size=600) + 1.5 * yb)))
    ctx = make_context({"c": (y, {"untied": untied}), "big": (yb, {"untied": pb})},
                       n_resamples=20)
    res = run(D, ctx)
    assert not any(n.startswith("aurc orders") for n in res.notes)


def test_auroc_significantly_below_chance_is_named():
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(40), np.zeros(60)]
    good = 1.0 / (1.0 + np.exp(-(rng.normal(size=100) + 2.0 * y)))
    inverted = 1.0 - 1.0 / (1.0 + np.exp(-(rng.normal(size=100) + 2.0 * y)))
    near = rng.uniform(size=100)  # AUROC near 0.5: its interval covers 0.5
    ctx = make_context({"c": (y, {"good": good, "inv": inverted, "near": near})})
    res = run(D, ctx)
    auc = res.tables["metrics"].query("criterion == 'roc_auc'").set_index("model")
    assert auc.loc["inv", "ci_high"] < 0.5 <= auc.loc["near", "ci_high"]
    assert auc.loc["inv", "estimate"] == pytest.approx(roc_auc_score(y, inverted), abs=1e-12)
    below = [n for n in res.notes if n.startswith("Below chance")]
    assert len(below) == 1
    assert f"inv in c (roc_auc {float(auc.loc['inv', 'estimate'])!r}" in below[0]
    assert "good in c" not in below[0] and "near in c" not in below[0]
    assert "replace every score s by 1 - s" in below[0] and "no direction option" in below[0]
    # inverting the scores as the note says turns the AUROC into 1 - AUROC
    assert roc_auc_score(y, 1.0 - inverted) == pytest.approx(1.0 - auc.loc["inv", "estimate"])


def test_a_constant_score_model_is_qualified_on_its_rank_metrics():
    y = np.r_[np.ones(30), np.zeros(50)]
    rng = np.random.default_rng(2)
    ctx = make_context({"c": (y, {"flat": np.full(80, 0.4), "real": 0.6 * rng.uniform(size=80) + 0.3 * y})})
    m = run(D, ctx).tables["metrics"].set_index(["model", "criterion"])
    flat = m.loc["flat"]
    # every positive-negative pair tied: AUROC 0.5 in every replicate (Mann-Whitney with ties)
    assert flat.loc["roc_auc", ["estimate", "ci_low", "ci_high"]].tolist() == [0.5, 0.5, 0.5]
    assert roc_auc_score(y, np.full(80, 0.4)) == 0.5
    assert "constant scores (all 80 images scored 0.4)" in flat.loc["roc_auc", "qualification"]
    assert "0.5 from ties alone" in flat.loc["roc_auc", "qualification"]
    assert "order in which the tied images" in flat.loc["average_precision", "qualification"]
    assert "order in which the tied images" in flat.loc["aurc", "qualification"]
    # a constant forecast's Brier score is a real number about it: no caveat
    assert "constant" not in str(flat.loc["brier_score", "qualification"])
    assert flat.loc["brier_score", "estimate"] == pytest.approx(brier_score_loss(y, np.full(80, 0.4)))
    assert not m.loc["real", "qualification"].astype(str).str.contains("constant").any()


def test_below_chance_note_for_logits():
    from medaudit.blocks.notes import below_chance_note

    m = pd.DataFrame({"model": ["a", "b"], "cohort": ["c", "c"], "criterion": ["roc_auc"] * 2,
                      "estimate": [0.3, 0.45], "ci_low": [0.2, 0.3], "ci_high": [0.4, 0.6]})
    (note,) = below_chance_note(m, probabilities=False)
    assert "a in c (roc_auc 0.3, interval [0.2, 0.4])" in note and "b in c" not in note
    assert "negate every score (s -> -s)" in note
    assert below_chance_note(m.iloc[1:], probabilities=True) == []
    assert below_chance_note(pd.DataFrame(), probabilities=True) == []


def test_shape_order_and_columns(hand):
    _, ctx, res = hand
    t = res.tables["metrics"]
    assert len(t) == 2 * 3 * 5
    assert list(t["cohort"].unique()) == ["alpha", "beta"]
    for _, g in t.groupby("cohort", sort=False):
        assert list(g["model"]) == sorted(g["model"])
        for _, gm in g.groupby("model"):
            assert list(gm["criterion"]) == CRITERIA
    for col in ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion",
                "design", "n_resamples", "seed", "family", "estimate", "ci_low", "ci_high",
                "n_degenerate", "n", "n_pos", "n_neg", "qualification"):
        assert col in t.columns
    assert (t["prompt"] == PROMPT).all() and (t["n_resamples"] == 300).all() and (t["seed"] == 7).all()
    d = res.tables["model_differences"]
    assert len(d) == 2 * 3 * 2
    pairs = list(zip(d["model_a"], d["model_b"], strict=True))
    assert all(a < b for a, b in pairs)
    assert list(d["model"].unique()) == ["mA - mB", "mA - mC", "mB - mC"]
    assert set(d["criterion"]) == {"roc_auc_difference", "brier_score_difference"}
    for col in ("delong_z", "pvalue", "delong_ci_low", "delong_ci_high", "pvalue_adj", "significant",
                "verdict", "qualification", "model_a", "model_b"):
        assert col in d.columns
    assert set(d["verdict"]) <= {"a_better", "b_better", "unresolved"}


def test_design_recorded_per_cohort(hand):
    _, _, res = hand
    for name in ("metrics", "model_differences"):
        t = res.tables[name]
        assert set(t.loc[t["cohort"] == "alpha", "design"]) == {"ordinary+paired"}
        assert set(t.loc[t["cohort"] == "beta", "design"]) == {"within_label+paired"}
    # within-label draws keep the class sizes: no degenerate replicates even for AP/AUROC
    assert (res.tables["metrics"].query("cohort == 'beta'")["n_degenerate"] == 0).all()


def test_differences_are_a_minus_b_from_the_same_draw(hand):
    _, _, res = hand
    t, d = res.tables["metrics"], res.tables["model_differences"]
    for _, r in d.iterrows():
        mid = r["criterion"].removesuffix("_difference")
        ea = _value(t, cohort=r["cohort"], model=r["model_a"], criterion=mid)["estimate"]
        eb = _value(t, cohort=r["cohort"], model=r["model_b"], criterion=mid)["estimate"]
        assert r["estimate"] == pytest.approx(ea - eb, abs=1e-12)
        assert r["ci_low"] <= r["estimate"] <= r["ci_high"]


def test_shared_draw_gives_zero_width_difference_for_same_ranking():
    # B is a strictly increasing transform of A: same ranking on every replicate iff the draw is
    # shared, so the AUROC difference interval collapses to [0, 0]; Brier differs and is not 0.
    rng = np.random.default_rng(3)
    y, a = _untied(rng, 30, 30, 1.0)
    b = a**2
    ctx = make_context({"c": (y, {"a": a, "b": b})}, n_resamples=200)
    d = run(D, ctx).tables["model_differences"]
    auc = _value(d, criterion="roc_auc_difference")
    assert (auc["estimate"], auc["ci_low"], auc["ci_high"]) == (0.0, 0.0, 0.0)
    assert auc["verdict"] == "unresolved"
    br = _value(d, criterion="brier_score_difference")
    assert br["ci_low"] < br["ci_high"]


def test_delong_columns_match_brute_force_oracle(hand):
    cohorts, _, res = hand
    d = res.tables["model_differences"].query("criterion == 'roc_auc_difference'")
    for _, r in d.iterrows():
        y, by_model = cohorts[r["cohort"]]
        delta, var, z = O.delong_paired_z(y, by_model[r["model_a"]], by_model[r["model_b"]])
        assert r["estimate"] == pytest.approx(delta, abs=1e-12)
        assert r["delong_z"] == pytest.approx(z, rel=1e-9)
        half = 1.959963984540054 * math.sqrt(var)
        assert r["delong_ci_low"] == pytest.approx(delta - half, abs=1e-9)
        assert r["delong_ci_high"] == pytest.approx(delta + half, abs=1e-9)
        assert 0.0 <= r["pvalue"] <= r["pvalue_adj"] <= 1.0
        assert r["family"].startswith("discrimination|") and r["cohort"] in r["family"]
        assert r["significant"] == (r["pvalue_adj"] < 0.05)
    brier = res.tables["model_differences"].query("criterion == 'brier_score_difference'")
    assert brier[["delong_z", "pvalue", "delong_ci_low", "delong_ci_high", "pvalue_adj"]].isna().all().all()


def test_holm_over_model_pairs_within_cohort(hand):
    _, _, res = hand
    d = res.tables["model_differences"].query("criterion == 'roc_auc_difference'")
    for _, g in d.groupby("cohort"):
        p = g["pvalue"].to_numpy()
        assert g["pvalue_adj"].to_numpy() == pytest.approx(O.holm(p), abs=1e-12)


def _dominance_cohort(rng):
    # "good" separates perfectly with calibrated-ish probabilities; "noise" is uninformative
    n_pos, n_neg = 40, 40
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    good = np.r_[rng.uniform(0.8, 0.95, n_pos), rng.uniform(0.05, 0.2, n_neg)]
    noise = rng.uniform(0.3, 0.7, y.size)
    return y, good, noise


@pytest.mark.parametrize("better,worse,expected", [("a_good", "b_noise", "a_better"),
                                                   ("z_good", "b_noise", "b_better")])
def test_verdict_when_one_model_strictly_dominates(better, worse, expected):
    y, good, noise = _dominance_cohort(np.random.default_rng(5))
    ctx = make_context({"c": (y, {better: good, worse: noise})}, designs={"c": "within_label"},
                       n_resamples=200)
    d = run(D, ctx).tables["model_differences"]
    auc = _value(d, criterion="roc_auc_difference")
    brier = _value(d, criterion="brier_score_difference")
    assert auc["verdict"] == expected and brier["verdict"] == expected
    # z has the sign of AUROC(a) - AUROC(b); Brier(a) - Brier(b) has the opposite sign
    sign = 1 if expected == "a_better" else -1
    assert np.sign(auc["delong_z"]) == sign and np.sign(auc["estimate"]) == sign
    assert np.sign(brier["estimate"]) == -sign
    assert auc["pvalue"] < 1e-6


def test_verdict_rule():
    assert D.verdict(0.01, 0.2, +1) == "a_better"
    assert D.verdict(-0.2, -0.01, +1) == "b_better"
    assert D.verdict(0.01, 0.2, -1) == "b_better"  # Brier A - B > 0: B lower, better
    assert D.verdict(-0.2, -0.01, -1) == "a_better"
    assert D.verdict(0.0, 0.2, +1) == "unresolved"  # touching 0 is not entirely above it
    assert D.verdict(-0.1, 0.1, -1) == "unresolved"
    assert D.verdict(float("nan"), 0.1, +1) == "not defined"


def test_exposure_qualifies_rows_of_that_model_and_cohort(hand):
    _, _, res = hand
    t = res.tables["metrics"]
    flagged = t["qualification"].str.contains("trained on beta")
    assert (flagged == ((t["model"] == "mB") & (t["cohort"] == "beta"))).all()
    d = res.tables["model_differences"]
    flagged = d["qualification"].str.contains("exposure \\(mB\\): trained on beta")
    involves = ((d["model_a"] == "mB") | (d["model_b"] == "mB")) & (d["cohort"] == "beta")
    assert (flagged == involves).all()


def test_refuses_mismatched_image_sets():
    rng = np.random.default_rng(1)
    y, a = _untied(rng, 10, 10, 1.0)
    _, b = _untied(rng, 10, 10, 1.0)
    ctx = make_context({"c": (y, {"a": a, "b": b})}, drop=("c", "b", 4), n_resamples=20)
    with pytest.raises(SchemaError, match=r"c-004") as err:
        run(D, ctx)
    assert "'b'" in str(err.value) and "lacks 1 image" in str(err.value)


def test_deterministic_and_order_independent(hand):
    cohorts, _, res = hand
    again = run(D, make_context(cohorts, designs={"beta": "within_label"},
                               exposure={"mB": {"beta": "trained on beta"}}))
    for name, t in res.tables.items():
        pd.testing.assert_frame_equal(t, again.tables[name])
    # a cohort's intervals do not depend on which other cohorts are audited
    alone = run(D, make_context({"beta": cohorts["beta"]}, designs={"beta": "within_label"},
                               exposure={"mB": {"beta": "trained on beta"}}))
    for name, t in res.tables.items():
        pd.testing.assert_frame_equal(t[t["cohort"] == "beta"].reset_index(drop=True), alone.tables[name])


def test_simulated_study_smoke(ctx):
    res = run(D, ctx)
    t, d = res.tables["metrics"], res.tables["model_differences"]
    cohorts, models = list(ctx.spec.cohorts), ctx.models()
    assert len(t) == len(cohorts) * len(models) * 5
    assert len(d) == len(cohorts) * math.comb(len(models), 2) * 2
    assert list(t["cohort"].unique()) == cohorts == list(d["cohort"].unique())
    for c in cohorts:
        assert set(t.loc[t["cohort"] == c, "design"]) == {f"{ctx.cohort_design(c)}+paired"}
    assert set(t.loc[t["cohort"] == "vindr", "design"]) == {"within_label+paired"}
    # exposure of the simulated CheXficient on VinDr
    cx = (t["model"] == "sim-chexficient") & (t["cohort"] == "vindr")
    assert t.loc[cx, "qualification"].str.contains("exposure").all()
    assert not t.loc[~cx, "qualification"].str.contains("exposure").any()
    auc = t[t["criterion"] == "roc_auc"]
    assert ((auc["estimate"] >= 0) & (auc["estimate"] <= 1)).all()
    ok = auc["ci_low"].notna()
    assert ((auc.loc[ok, "ci_low"] <= auc.loc[ok, "estimate"] + 1e-12)
            & (auc.loc[ok, "estimate"] <= auc.loc[ok, "ci_high"] + 1e-12)).all()
    assert res.name == "discrimination" and res.notes


def test_an_undefined_auroc_is_not_defined_not_does_not_hold():
    """A reliability claim's cell on a group without positives (AUROC NaN, no interval) is
    "not defined": NaN >= level is False, which used to read "does not hold"."""
    from medaudit.blocks.discrimination import _level_cell

    claim = {"claim_id": "L01", "claim": "m AUROC ≥ 0.9"}
    nan = float("nan")
    cell = _level_cell(claim, 0.9, "subgroup", "sex = (missing)",
                       {"estimate": nan, "ci_low": nan, "ci_high": nan, "qualification": ""})
    assert cell["verdict"] == "not defined"
    point = _level_cell(claim, 0.9, "C", "d", {"estimate": 0.95, "ci_low": nan, "ci_high": nan,
                                                "qualification": ""})
    assert point["verdict"] == "holds" and "point estimate, no interval" in point["qualification"]


def test_generated_claims_on_degenerate_replicates_are_unresolved():
    """Probe finding: on a two-image cohort (one positive, one negative, ordinary design)
    half the replicates have one class; the declared "AUROC ≥ 0.7" was judged unresolved
    for it, but the generated "AUROC ≥ 0.9" and ranking claims on the same interval said
    holds.  Every claim now goes no further than unresolved there, with the reason."""
    import medaudit

    rng = np.random.default_rng(4)
    n = 60
    y = np.r_[np.repeat([1, 0], n // 2), 1, 0]
    cohort = ["big"] * n + ["tiny", "tiny"]
    ids = [f"i{i}" for i in range(n + 2)]
    good = np.r_[0.5 * y[:n] + rng.uniform(0, 0.5, n), 0.9, 0.2]
    weak = np.r_[0.1 * y[:n] + rng.uniform(0, 0.9, n), 0.4, 0.6]  # misranks the tiny pair
    df = pd.DataFrame({"image_id": ids * 2, "cohort": cohort * 2, "model": ["a"] * (n + 2) +
                       ["b"] * (n + 2), "label": np.r_[y, y], "score": np.r_[good, weak]})
    res = medaudit.audit(df, n_resamples=200, claims={"generate": ["all"], "declared": [
        {"model": "a", "metric": "roc_auc", "at_least": 0.7, "cohort": "tiny"}]})
    tiny = res.claims[res.claims["cohort"] == "tiny"]
    assert set(tiny["kind"]) >= {"level", "ranking", "reliability"}
    for _, r in tiny.iterrows():
        assert (r["estimate"], r["ci_low"], r["ci_high"]) == (1.0, 1.0, 1.0)
        assert r["verdict"] == "unresolved", (r["claim"], r["verdict"])
        assert "holds by its interval, judged unresolved" in r["qualification"]
        assert "replicates undefined" in r["qualification"]
    m = res.matrix
    cells = m[(m["cohort"] == "tiny") & (m["kind"].isin(["ranking", "reliability"]))]
    assert "holds" not in set(cells.loc[cells["estimate"] == 1.0, "verdict"])
    big = res.claims[(res.claims["cohort"] == "big") & (res.claims["kind"] == "ranking")]
    assert set(big["verdict"]) <= {"holds", "unresolved", "reversed", "does not hold"}
    assert not big["qualification"].fillna("").str.contains("judged unresolved").any()


def test_repeated_patients_are_said_where_intervals_treat_images_as_independent():
    """Probe finding: patient_id was accepted and ignored, with intervals computed as if the
    images of one patient were independent and nothing saying so.  The counts are checked
    against pandas' own nunique per cohort."""
    import medaudit
    from medaudit.blocks.notes import clustered_images_note

    rng = np.random.default_rng(2)
    rows = []
    for c, n_pat, per in (("a", 20, 3), ("b", 30, 1)):
        for p in range(n_pat):
            y = int(p % 3 == 0)
            for j in range(per):
                rows.append({"image_id": f"{c}{p}-{j}", "patient_id": f"{c}{p}", "cohort": c,
                             "model": "m", "label": y, "score": float(rng.random() * 0.5 + 0.4 * y)})
    df = pd.DataFrame(rows)
    (note,) = clustered_images_note(df)
    per = df.groupby("cohort").agg(n=("image_id", "nunique"), p=("patient_id", "nunique"))
    assert note.startswith(f"patient_id repeats (a: {per.loc['a', 'n']} images of "
                           f"{per.loc['a', 'p']} patients): every interval here resamples images")
    assert "b:" not in note  # one image per patient there
    assert "design='cluster', cluster=patient_id" in note
    assert clustered_images_note(df.drop(columns="patient_id")) == []
    assert clustered_images_note(df[df["cohort"] == "b"]) == []
    notes = medaudit.audit(df, n_resamples=20).outcome.results["discrimination"].notes
    assert note in notes
