"""Paper 001/002 claims read verdicts from hand-built block tables (nothing recomputed)."""

import math

import pandas as pd

from medaudit.audit.claims_extra import agreement_claims, institution_claims, label_claims
from medaudit.blocks._base import BlockResult


def _res(block, **tables):
    return {block: BlockResult(name=block, tables={k: pd.DataFrame(v) for k, v in tables.items()})}


def test_label_claim_orients_by_hard_order_and_reads_soft_order():
    rc = [{"model_a": "A", "model_b": "B", "prompt": "none", "cohort": "c", "negatives": "all",
           "criterion": "soft_roc_auc", "ordinary_criterion": "roc_auc", "ordinary_a": 0.70,
           "ordinary_b": 0.75, "soft_a": 0.72, "soft_b": 0.69},
          {"model_a": "A", "model_b": "C", "prompt": "none", "cohort": "c", "negatives": "all",
           "criterion": "soft_roc_auc", "ordinary_criterion": "roc_auc", "ordinary_a": 0.70,
           "ordinary_b": 0.70, "soft_a": 0.72, "soft_b": 0.69}]  # hard tie: no claim
    st = [{"prompt": "none", "cohort": "c", "criterion": "soft_roc_auc",
           "ordinary_criterion": "roc_auc", "pvalue": 0.01, "significant": True, "k": 30, "n": 40,
           "stability_soft": 0.9, "stability_ordinary": 0.7, "qualification": ""}]
    rows = pd.DataFrame(label_claims(_res("label_uncertainty", rank_changes=rc, stability_test=st),
                                     None))
    rank = rows[rows["kind"] == "ranking"]
    assert rank["claim"].iloc[0] == "B ranks above A on roc_auc (hard labels)"
    y = rank[rank["change"] == "y"].iloc[0]
    # B - A under soft labels = 0.69 - 0.72 < 0: the hard-label order reverses
    assert y["verdict"] == "reversed" and math.isclose(y["estimate"], -0.03)
    stab = rows[rows["kind"] == "stability"].iloc[0]
    assert stab["verdict"] == "holds" and math.isclose(stab["estimate"], 0.2)


def test_institution_claim_verdicts_follow_bh_significance():
    base = {"model": "m", "prompt": "narrative", "criterion": "fpr_difference",
            "negatives": "edema", "cohort_a": "x", "family": "bh[fpr]", "qualification": ""}
    con = [{**base, "cohort_b": "y", "estimate": 0.2, "ci_low": 0.1, "ci_high": 0.3,
            "pvalue": 0.001, "pvalue_adj": 0.002, "significant": True},
           {**base, "cohort_b": "z", "estimate": 0.01, "ci_low": -0.05, "ci_high": 0.07,
            "pvalue": 0.6, "pvalue_adj": 0.6, "significant": False}]
    rates = [{"model": "m", "prompt": "narrative", "cohort": "x", "negatives": "edema",
              "criterion": "fpr", "estimate": 0.3, "ci_low": 0.25, "ci_high": 0.35}]
    rows = pd.DataFrame(institution_claims(
        _res("error_structure", contrasts=con, rates=rates), None))
    assert list(rows["change"]) == ["at E", "C", "C"]
    at_e, to_y, to_z = (rows.iloc[i] for i in range(3))
    assert at_e["estimate"] == 0.3 and at_e["verdict"] == "holds"
    # the cell reads rate(b) - rate(a) = -(a - b), interval flipped
    assert to_y["verdict"] == "does not hold" and to_y["estimate"] == -0.2
    assert (to_y["ci_low"], to_y["ci_high"]) == (-0.3, -0.1)
    assert to_z["verdict"] == "unresolved" and "equality not shown" in to_z["qualification"]


def test_agreement_claims_coverage_and_family_gap():
    cov = [{"model": "all", "prompt": "n", "cohort": "all", "criterion": "coverage[level=0.95]",
            "analysis": "primary", "stratum": "all", "direction": "all", "estimate": 0.96, "n": 50},
           {"model": "all", "prompt": "n", "cohort": "a", "criterion": "coverage[level=0.95]",
            "analysis": "primary", "stratum": "institution", "direction": "all", "estimate": 0.90,
            "n": 20}]
    gap = [{"model": "all", "prompt": "n", "cohort": "all", "estimator": "hdcal - beta_binomial",
            "design": "cluster(institution)", "estimate": -0.02, "ci_low": -0.03, "ci_high": -0.01},
           {"model": "all", "prompt": "n", "cohort": "a", "estimator": "hdcal - beta_binomial",
            "design": "loio", "estimate": 0.01, "ci_low": float("nan"), "ci_high": float("nan")}]
    rows = pd.DataFrame(agreement_claims(_res("agreement", coverage=cov, family_gap=gap), None))
    c = rows[rows["kind"] == "coverage"]
    assert list(c["verdict"]) == ["holds", "does not hold"]
    g = rows[rows["kind"] == "estimator"]
    # Brier(hdcal) - Brier(bb) < 0 with an interval below 0: hdcal is better, and it holds
    assert g["claim"].iloc[0].startswith("hdcal estimates reference agreement with lower Brier")
    assert g["verdict"].tolist() == ["holds", "reversed"]
    assert g["estimate"].tolist() == [0.02, -0.01]
