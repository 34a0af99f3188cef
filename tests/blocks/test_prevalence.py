"""Block `prevalence` (paper 000 M0.7; Tables 12-13): witnesses from sklearn, oracles and algebra.

* BS_pi against sklearn ``brier_score_loss`` with per-image weights pi/|P| and (1-pi)/|N|;
  at the cohort's observed prevalence it equals the raw (unweighted) Brier; linear in pi.
* LL_pi against sklearn ``log_loss`` with the same weights; ECE_pi against the loop oracle.
* Paired differences: estimate = BS_pi(A) - BS_pi(B); a model closer to the label on every
  image wins on every shared within-label replicate (verdict a_better / b_better).
* Reversals against a hand computation of BS_pi = B_N + pi (B_P - B_N).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import brier_score_loss
from sklearn.metrics import log_loss as sk_log_loss

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import prevalence
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from tests import _oracles as O
from tests._support import SpecContext, context, run

PROMPT = "clinical"


def _table(cohorts: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]) -> pd.DataFrame:
    rows = []
    for cohort, (y, scores) in cohorts.items():
        for model, s in scores.items():
            for i, (yi, si) in enumerate(zip(y, s, strict=True)):
                rows.append({"image_id": f"{cohort}-{i:03d}", "cohort": cohort, "model": model,
                             "prompt": PROMPT, "score": float(si), "label": int(yi)})
    return pd.DataFrame(rows)


def _ctx(df: pd.DataFrame, prevalence_entries: list[dict], n_resamples: int = 300) -> SpecContext:
    spec = AuditSpec.model_validate({
        "name": "hand", "scores": "hand.csv", "primary_prompt": PROMPT,
        "cohorts": {c: {"role": "primary"} for c in df["cohort"].unique()},
        "n_resamples": n_resamples, "blocks": ["prevalence"], "prevalence": prevalence_entries})
    return context(scores=validate_score_table(df), spec=spec)


def _weights(y: np.ndarray, pi: float) -> np.ndarray:
    n_pos, n_neg = y.sum(), (1 - y).sum()
    return np.where(y == 1, pi / n_pos, (1 - pi) / n_neg)


@pytest.fixture(scope="module")
def hand():
    rng = np.random.default_rng(7)
    y = np.r_[np.ones(8), np.zeros(12)]  # observed prevalence 8/20 = 0.4
    scores = {"m-a": rng.uniform(0.01, 0.99, y.size), "m-b": rng.uniform(0.01, 0.99, y.size),
              "m-c": np.clip(0.3 + 0.5 * y + rng.normal(0, 0.1, y.size), 0.01, 0.99)}
    df = _table({"coh": (y, scores)})
    ctx = _ctx(df, [{"cohorts": ["coh"], "grid": [0.1, 0.4, 0.5], "primary": 0.5}])
    return y, scores, ctx, run(prevalence, ctx)


def _cell(t: pd.DataFrame, **eq) -> pd.Series:
    m = np.ones(len(t), dtype=bool)
    for k, v in eq.items():
        m &= (t[k] == v).to_numpy()
    assert m.sum() == 1, eq
    return t[m].iloc[0]


def test_brier_log_loss_ece_match_weighted_sklearn_and_oracles(hand):
    y, scores, _, res = hand
    t = res.tables["metrics"]
    for m, s in scores.items():
        for pi in (0.1, 0.4, 0.5):
            w = _weights(y, pi)
            bs = _cell(t, model=m, prevalence=pi, criterion="brier_score")
            assert bs.estimate == pytest.approx(brier_score_loss(y, s, sample_weight=w), abs=1e-12)
            assert bs.estimate == pytest.approx(O.brier_prevalence(y, s, pi), abs=1e-12)
            ll = _cell(t, model=m, prevalence=pi, criterion="log_loss")
            assert ll.estimate == pytest.approx(sk_log_loss(y, s, sample_weight=w), abs=1e-12)
            ece = _cell(t, model=m, prevalence=pi, criterion="ece[n_bins=15]")
            assert ece.estimate == pytest.approx(O.ece(y, s, 15, pi=pi), abs=1e-12)
            for r in (bs, ll, ece):
                assert r.ci_low <= r.ci_high
                assert (r.n, r.n_pos, r.n_neg, r.n_degenerate) == (20, 8, 12, 0)


def test_at_observed_prevalence_bs_equals_raw_brier(hand):
    y, scores, _, res = hand
    t = res.tables["metrics"]
    for m, s in scores.items():
        raw = brier_score_loss(y, s)  # unweighted
        assert _cell(t, model=m, prevalence=0.4, criterion="brier_score").estimate == (
            pytest.approx(raw, abs=1e-12))
        assert _cell(t, model=m, prevalence=0.4, criterion="log_loss").estimate == (
            pytest.approx(sk_log_loss(y, s), abs=1e-12))


def test_bs_is_linear_in_pi(hand):
    y, scores, _, res = hand
    t = res.tables["metrics"]
    for m, s in scores.items():
        b_p = np.mean((1 - s[y == 1]) ** 2)
        b_n = np.mean(s[y == 0] ** 2)
        for pi in (0.1, 0.4, 0.5):
            est = _cell(t, model=m, prevalence=pi, criterion="brier_score").estimate
            assert est == pytest.approx(b_n + pi * (b_p - b_n), abs=1e-12)


def test_columns_primary_flag_family_design(hand):
    _, _, ctx, res = hand
    t = res.tables["metrics"]
    assert len(t) == 3 * 3 * 3
    assert list(t.columns[:11]) == ["model", "prompt", "cohort", "negatives", "prevalence",
                                    "threshold", "criterion", "design", "n_resamples", "seed",
                                    "family"]
    assert set(t["family"]) == {"prevalence-grid|primary=0.5"}
    assert set(t["design"]) == {"within_label+paired"}
    assert (t["n_resamples"] == 300).all() and (t["seed"] == ctx.seed).all()
    assert t["primary"].dtype == bool
    assert (t["primary"] == (t["prevalence"] == 0.5)).all()
    assert set(t["criterion"]) == {"brier_score", "ece[n_bins=15]", "log_loss"}
    assert (t["qualification"] == "").all()
    # sorted: models, then pi ascending, then metric
    assert t["model"].tolist() == sorted(t["model"].tolist())


def test_differences_are_paired_and_verdicts_follow_the_interval():
    rng = np.random.default_rng(11)
    y = np.r_[np.ones(10), np.zeros(15)]
    base = rng.uniform(0.05, 0.95, y.size)
    better = y + 0.5 * (base - y)  # strictly closer to the label on every image
    df = _table({"coh": (y, {"a-good": better, "b-bad": base, "c-same": base.copy()})})
    ctx = _ctx(df, [{"cohorts": ["coh"], "grid": [0.1, 0.5], "primary": 0.5}], n_resamples=200)
    res = run(prevalence, ctx)
    d, t = res.tables["differences"], res.tables["metrics"]
    assert len(d) == 3 * 2
    assert set(d["criterion"]) == {"brier_score_difference"}
    for pi in (0.1, 0.5):
        ab = _cell(d, model="a-good - b-bad", prevalence=pi)
        a = _cell(t, model="a-good", prevalence=pi, criterion="brier_score").estimate
        b = _cell(t, model="b-bad", prevalence=pi, criterion="brier_score").estimate
        assert ab.estimate == pytest.approx(a - b, abs=1e-14)
        assert (ab.model_a, ab.model_b) == ("a-good", "b-bad")
        assert ab.ci_high < 0 and ab.verdict == "a_better"
        ba = _cell(d, model="b-bad - c-same", prevalence=pi)  # identical scores
        assert (ba.estimate, ba.ci_low, ba.ci_high) == (0.0, 0.0, 0.0)
        assert ba.verdict == "unresolved"
        ac = _cell(d, model="a-good - c-same", prevalence=pi)
        assert ac.verdict == "a_better"
        assert ac.primary == (pi == 0.5)
    # verdicts of every row follow the interval
    for _, r in d.iterrows():
        want = ("a_better" if r.ci_high < 0 else "b_better" if r.ci_low > 0 else "unresolved")
        assert r.verdict == want


def test_b_better_verdict_when_the_first_model_is_worse():
    rng = np.random.default_rng(12)
    y = np.r_[np.ones(10), np.zeros(15)]
    base = rng.uniform(0.05, 0.95, y.size)
    df = _table({"coh": (y, {"a-bad": base, "b-good": y + 0.3 * (base - y)})})
    ctx = _ctx(df, [{"cohorts": ["coh"], "grid": [0.2], "primary": 0.2}], n_resamples=100)
    r = run(prevalence, ctx).tables["differences"].iloc[0]
    assert r.model == "a-bad - b-good" and r.ci_low > 0 and r.verdict == "b_better"


def test_reversals_against_hand_formula():
    # A: good on positives, poor on negatives; B the opposite -> ordering flips with pi
    y = np.r_[np.ones(4), np.zeros(6)]
    a = np.where(y == 1, 0.9, 0.5)  # B_P = 0.01, B_N = 0.25
    b = np.where(y == 1, 0.5, 0.2)  # B_P = 0.25, B_N = 0.04
    c = np.where(y == 1, 0.95, 0.05)  # best everywhere
    df = _table({"coh": (y, {"a": a, "b": b, "c": c})})
    grid = [0.1, 0.3, 0.9]
    ctx = _ctx(df, [{"cohorts": ["coh"], "grid": grid, "primary": 0.3}], n_resamples=20)
    rev = run(prevalence, ctx).tables["reversals"]
    assert len(rev) == 3

    def bs(s, pi):
        return pi * np.mean((1 - s[y == 1]) ** 2) + (1 - pi) * np.mean(s[y == 0] ** 2)

    for x, sx, z, sz in (("a", a, "b", b), ("a", a, "c", c), ("b", b, "c", c)):
        want = "|".join("a<b" if bs(sx, p) < bs(sz, p) else "a>b" for p in grid)
        r = _cell(rev, model_a=x, model_b=z)
        assert r.order_at_each_pi == want
        assert r.reversed == ("a<b" in want and "a>b" in want)
        assert r.prevalence == "0.1|0.3|0.9"
    assert _cell(rev, model_a="a", model_b="b").order_at_each_pi == "a>b|a>b|a<b"
    assert bool(_cell(rev, model_a="a", model_b="b").reversed) is True
    assert bool(_cell(rev, model_a="a", model_b="c").reversed) is False


def test_entries_with_different_primary_are_never_pooled():
    rng = np.random.default_rng(3)
    y = np.r_[np.ones(6), np.zeros(9)]
    df = _table({"coh": (y, {"m1": rng.uniform(0.05, 0.95, y.size),
                             "m2": rng.uniform(0.05, 0.95, y.size)})})
    ctx = _ctx(df, [{"cohorts": ["coh"], "grid": [0.1, 0.2, 0.5], "primary": 0.5},
                    {"cohorts": ["coh"], "grid": [0.05, 0.1, 0.2], "primary": 0.1}],
               n_resamples=50)
    res = run(prevalence, ctx)
    for name in ("metrics", "differences", "reversals"):
        t = res.tables[name]
        assert set(t["family"]) == {"prevalence-grid|primary=0.5", "prevalence-grid|primary=0.1"}
    t = res.tables["metrics"]
    e1, e2 = (t[t["family"] == f"prevalence-grid|primary={p}"] for p in ("0.5", "0.1"))
    assert sorted(set(e1["prevalence"])) == [0.1, 0.2, 0.5]
    assert sorted(set(e2["prevalence"])) == [0.05, 0.1, 0.2]
    assert set(e1.loc[e1["primary"], "prevalence"]) == {0.5}
    assert set(e2.loc[e2["primary"], "prevalence"]) == {0.1}
    # the same cell in both entries: same point estimate, separate rows
    for crit in ("brier_score", "log_loss"):
        a = _cell(e1, model="m1", prevalence=0.2, criterion=crit).estimate
        b = _cell(e2, model="m1", prevalence=0.2, criterion=crit).estimate
        assert a == b
    rev = res.tables["reversals"]
    assert rev["prevalence"].tolist() == ["0.1|0.2|0.5", "0.05|0.1|0.2"]


def test_refuses_mismatched_image_sets():
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(5), np.zeros(5)]
    df = _table({"coh": (y, {"m1": rng.uniform(size=10), "m2": rng.uniform(size=10)})})
    df = df[~((df["model"] == "m2") & (df["image_id"] == "coh-003"))]
    ctx = _ctx(df, [{"cohorts": ["coh"], "grid": [0.5], "primary": 0.5}], n_resamples=20)
    with pytest.raises(SchemaError, match=r"identical image sets[\s\S]*'m2'[\s\S]*coh-003"):
        run(prevalence, ctx)


def test_simulated_context_shape(ctx):
    res = run(prevalence, ctx)
    assert res.name == prevalence.NAME == "prevalence"
    t, d, rev = (res.tables[k] for k in ("metrics", "differences", "reversals"))
    n_models = len(ctx.models())
    n_pairs = n_models * (n_models - 1) // 2
    assert len(t) == (3 * 3 + 1 * 3) * n_models * 3
    assert len(d) == (3 * 3 + 1 * 3) * n_pairs
    assert len(rev) == 4 * n_pairs
    assert t["cohort"].drop_duplicates().tolist() == ["montgomery", "shenzhen", "tbx11k-val",
                                                       "vindr"]
    vin = t[t["cohort"] == "vindr"]
    assert set(vin["family"]) == {"prevalence-grid|primary=0.1"}
    assert set(vin.loc[vin["primary"], "prevalence"]) == {0.1}
    assert (t.loc[t["cohort"] != "vindr", "family"] == "prevalence-grid|primary=0.5").all()
    # exposure travels as a qualification
    expo = t[(t["cohort"] == "vindr") & (t["model"] == "sim-chexficient")]
    assert (expo["qualification"] != "").all()
    assert (t.loc[t["model"] != "sim-chexficient", "qualification"] == "").all()
    assert (t["n_resamples"] == ctx.spec.n_resamples).all()
    assert (t["n_degenerate"] == 0).all()
    assert t[["estimate", "ci_low", "ci_high"]].notna().all().all()
    assert set(d["verdict"]) <= {"a_better", "b_better", "unresolved"}
    assert rev["reversed"].dtype == bool


def test_deterministic(ctx):
    from tests.blocks.conftest import small_context

    a = run(prevalence, ctx)
    b = run(prevalence, small_context())  # a fresh context (no shared cache)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert a.notes == b.notes
