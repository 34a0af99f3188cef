"""``medaudit.port``: a source audit's claims on a second cohort whose truth is known.

Source: the simulated paper-000 study, cohort Shenzhen (tests/port/_source.py); site: the
same simulation's Montgomery cohort drawn with another seed.  Witnesses:

* the truth of the simulation (``TRUTH``, worked out from its parameters) for each verdict;
* each local estimate recomputed here from the simulated table (scikit-learn's
  ``roc_auc_score``; counts for Se and Sp at the source's τ);
* the verdict rule applied by hand to each local interval;
* the sample that would resolve an unresolved claim: the half-width formula worked out
  here with scipy's normal quantiles (AUROC), and the exact Clopper-Pearson size found by
  brute force with scipy's beta quantiles (a rate).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

import medaudit
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.claimsfile import export_claims, read_claims_file, seal_claims
from medaudit.port import PORT_COLUMNS
from medaudit.simulate import simulate_paper000
from tests.port._source import (  # noqa: F401 - session fixtures
    LOCAL_SPEC,
    N_RESAMPLES,
    SOURCE_SPEC,
    TRUTH,
    claims_file,
    local_spec,
    source_audit,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "claims.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ported(claims_file):  # noqa: F811
    return medaudit.port(claims_file, spec=LOCAL_SPEC)


@pytest.fixture(scope="module")
def site_table():
    """The local cohort as the simulation draws it (seed of the local spec)."""
    t = pd.DataFrame(simulate_paper000(rng=LOCAL_SPEC["seed"])["table"])
    return t[(t["cohort"] == "montgomery") & (t["prompt"] == "clinical")]


def _scores(site, model):
    s = site[site["model"] == model].sort_values("image_id")
    return s["label"].to_numpy(), s["score"].to_numpy()


def _row(ported, cid):
    return ported.claims.set_index("claim_id").loc[cid]


def test_one_row_per_source_claim_in_source_order(ported, claims_file):  # noqa: F811
    doc = read_claims_file(claims_file)
    assert list(ported.claims["claim_id"]) == [c["id"] for c in doc["claims"]]
    assert list(ported.claims.columns) == list(PORT_COLUMNS)
    for col in ("design", "n_resamples", "seed", "family"):
        judged = ported.claims[ported.claims["verdict"] != "not assessable here"]
        assert judged[col].notna().all(), col


@pytest.mark.parametrize("cid", sorted(TRUTH))
def test_verdict_matches_the_truth_and_the_interval(ported, cid):
    truth, want = TRUTH[cid]
    r = _row(ported, cid)
    assert r["verdict"] == want, (cid, truth, r["local_estimate"], r["local_ci_low"], r["local_ci_high"])
    lo, hi, level = r["local_ci_low"], r["local_ci_high"], r["level"]
    if r["kind"] == "comparison":  # A better than B: against 0
        by_hand = "holds" if lo > 0 else "reversed" if hi < 0 else "unresolved"
    else:
        by_hand = "holds" if lo >= level else "does not hold" if hi < level else "unresolved"
    assert r["verdict"] == by_hand
    assert lo <= r["local_estimate"] <= hi


def test_local_estimates_by_hand(ported, site_table):
    for cid, model in (("D01", "sim-chexficient"), ("D02", "sim-openclip"), ("D03", "sim-biomedclip")):
        y, s = _scores(site_table, model)
        assert _row(ported, cid)["local_estimate"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    ya, sa = _scores(site_table, "sim-openclip")
    yb, sb = _scores(site_table, "sim-biomedclip")
    assert _row(ported, "D04")["local_estimate"] == pytest.approx(
        roc_auc_score(ya, sa) - roc_auc_score(yb, sb), abs=1e-12)
    y, s = _scores(site_table, "sim-biomedclip")
    r = _row(ported, "D06")
    assert r["local_estimate"] == np.mean(s[y == 1] >= 0.2)
    assert (r["local_n_pos"], r["local_n_neg"]) == ((y == 1).sum(), (y == 0).sum())


def test_thresholds_are_the_source_numbers(ported, claims_file):  # noqa: F811
    doc = {c["id"]: c for c in read_claims_file(claims_file)["claims"]}
    for cid in ("D05", "D06"):
        r = _row(ported, cid)
        assert r["threshold"] == doc[cid]["E"]["threshold"] == SOURCE_SPEC["claims"]["declared"][
            int(cid[1:]) - 1]["threshold"]
        assert r["threshold_origin"] == "source τ, fixed"
    assert all("cohort shenzhen → montgomery (the site)" in c for c in ported.claims["changes"])


def test_auroc_sample_size_by_hand(ported):
    """D03: AUROC below the claimed 0.88 with an interval spanning it: the half-width on the side
    of the level must shrink to |estimate - level| at 80 % power."""
    r = _row(ported, "D03")
    est, lo, hi, v = r["local_estimate"], r["local_ci_low"], r["local_ci_high"], 0.88
    half = (hi - est) if est < v else (est - lo)
    z, zb = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    f = (half / abs(est - v)) ** 2 * ((z + zb) / z) ** 2
    n_pos, n_neg = r["local_n_pos"], r["local_n_neg"]
    assert r["resolve_n_pos"] == math.ceil(f * n_pos - 1e-9)
    assert r["resolve_n_neg"] == math.ceil(f * n_neg - 1e-9)
    assert r["additional_pos"] == r["resolve_n_pos"] - n_pos
    assert r["resolves_to"] == ("does not hold" if est < v else "holds")


def test_rate_sample_size_exact_binomial_by_brute_force(ported):
    """D06: Se at τ = 0.2 claimed ≥ 0.55; the smallest n' whose Clopper-Pearson interval at the
    observed rate (count p n') excludes 0.55."""
    r = _row(ported, "D06")
    n = int(r["local_n_pos"])
    k = round(r["local_estimate"] * n)
    p = k / n

    def cp(m):
        x = p * m
        lo = stats.beta.ppf(0.025, x, m - x + 1) if x > 0 else 0.0
        hi = stats.beta.ppf(0.975, x + 1, m - x) if x < m else 1.0
        return lo, hi

    m = n
    while not (cp(m)[0] > 0.55 if p > 0.55 else cp(m)[1] < 0.55):
        m += 1
    assert r["exact_additional"] == m - n
    assert r["resolve_n_neg"] == r["local_n_neg"]  # a sensitivity scales with positives only


def test_claims_file_and_folder_give_the_same_table(ported, source_audit):  # noqa: F811
    again = medaudit.port(source_audit, spec=LOCAL_SPEC)
    pd.testing.assert_frame_equal(again.claims, ported.claims)


def test_written_twice_byte_identical_and_schema_valid(ported, tmp_path):
    a, b = ported.write(tmp_path / "a"), ported.write(tmp_path / "b")
    names = sorted(p.name for p in a.iterdir())
    assert names == [".medaudit-output", "port.json", "port__claims.csv", "report.html",
                     "source.claims.json", "summary.md"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    jsonschema.Draft202012Validator(SCHEMA).validate(
        json.loads((a / "source.claims.json").read_text(encoding="utf-8")))
    summary = (a / "summary.md").read_text(encoding="utf-8")
    assert summary.index("## The source's claims at this site") < summary.index("## Provenance")
    assert "### Source audit" in summary and "### Local data" in summary
    # the full records are folded, each a JSON block that reads back
    folded = summary[summary.index("## Provenance"):]
    assert folded.count("<details>") == 3 == folded.count("</details>")
    block = folded.split("```json\n", 2)[1].split("\n```", 1)[0]
    assert json.loads(block)["content_hash"]


def test_export_carries_declared_levels_and_specs(source_audit):  # noqa: F811
    doc = {c["id"]: c for c in export_claims(source_audit)["claims"]}
    assert (doc["D04"]["level"], doc["D04"]["side"]) == (0.0, "greater")
    assert doc["D04"]["declared"]["than"] == "sim-biomedclip"
    assert doc["D05"]["declared"]["specificity_at_least"] == 0.7
    assert doc["L01"]["declared"] == {}


def test_model_absent_locally_is_not_assessable(claims_file, site_table):  # noqa: F811
    local = site_table[site_table["model"] != "sim-openclip"].drop(columns=["split"])
    res = medaudit.port(claims_file, local, n_resamples=N_RESAMPLES, seed=7,
                        primary_prompt="clinical")
    t = res.claims.set_index("claim_id")
    for cid in ("D02", "D04"):
        assert t.loc[cid, "verdict"] == "not assessable here"
        assert "model sim-openclip is absent from the local data" in t.loc[cid, "reason"]
    assert t.loc["D01", "verdict"] == "holds"


def test_model_renamed_locally_is_named_in_the_reason(claims_file, site_table):  # noqa: F811
    # probe finding: a site table naming the model 'SIM_OPENCLIP' got only "model
    # sim-openclip is absent" on every claim of it, with nothing pointing at the rename
    local = site_table.drop(columns=["split"]).assign(model=lambda d: d["model"].replace(
        {"sim-openclip": "SIM_OPENCLIP"}))
    res = medaudit.port(claims_file, local, n_resamples=N_RESAMPLES, seed=7,
                        primary_prompt="clinical")
    r = res.claims.set_index("claim_id").loc["D02"]
    assert r["verdict"] == "not assessable here"
    assert r["reason"].startswith("model sim-openclip is absent from the local data (cohort ")
    assert r["reason"].endswith("; the local data has 'SIM_OPENCLIP': if it is the same model, "
                                "give it the source's name 'sim-openclip' in the local table")
    gone = medaudit.port(claims_file, site_table[site_table["model"] != "sim-openclip"].drop(
        columns=["split"]), n_resamples=N_RESAMPLES, seed=7, primary_prompt="clinical")
    assert "the local data has" not in gone.claims.set_index("claim_id").loc["D02", "reason"]


def test_tampered_and_future_files_are_refused(claims_file, tmp_path):  # noqa: F811
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    doc["claims"][0]["estimate"] = 0.99
    bad = tmp_path / "tampered.claims.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(SchemaError, match="changed after it was written") as e:
        medaudit.port(bad, spec=LOCAL_SPEC)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    future = tmp_path / "future.claims.json"
    future.write_text(json.dumps(seal_claims({**json.loads(claims_file.read_text()),
                                              "schema_version": "1.7"})), encoding="utf-8")
    with pytest.raises(SchemaError, match="newer than this medaudit reads .* upgrade medaudit"):
        medaudit.port(future, spec=LOCAL_SPEC)
    # probe finding: a hand-edited number 1.0 for the text "1.0" was "unknown ... (reads 1.0)"
    number = tmp_path / "number.claims.json"
    number.write_text(json.dumps({**json.loads(claims_file.read_text()), "schema_version": 1.0}),
                      encoding="utf-8")
    with pytest.raises(SchemaError, match=r"schema_version must be the text '1\.0', not the number 1\.0"):
        medaudit.port(number, spec=LOCAL_SPEC)


def test_options_are_checked(claims_file):  # noqa: F811
    with pytest.raises(MedauditError, match="cohort 'nowhere' is not in the local data"):
        medaudit.port(claims_file, spec=LOCAL_SPEC, cohort="nowhere")
    with pytest.raises(MedauditError, match="thresholds must be"):
        medaudit.port(claims_file, spec=LOCAL_SPEC, thresholds="guess")
    # probe finding: a power below even odds planned more cases as it fell; refused at the
    # door, before the local audit runs
    with pytest.raises(MedauditError, match=r"power = 0\.2 is below 0\.5: .* \[0\.5, 1\)"):
        medaudit.port(claims_file, spec=LOCAL_SPEC, power=0.2)


def test_one_class_reason_is_given(claims_file, site_table):  # noqa: F811
    """Positives only: every claim is not assessable here, and the reason says why."""
    local = site_table[site_table["label"] == 1].drop(columns=["split"])
    res = medaudit.port(claims_file, local, n_resamples=N_RESAMPLES, primary_prompt="clinical")
    assert set(res.claims["verdict"]) == {"not assessable here"}
    assert all("one class only (58 positives, 0 negatives)" in r for r in res.claims["reason"])


def test_a_declared_cohort_the_table_lacks_is_refused_as_the_audit_refuses_it(
        claims_file, site_table):  # noqa: F811
    """Probe finding: a local spec naming a cohort the table does not have read as a
    one-class site: exit 0, every claim "not assessable here", blamed on absent models."""
    local = site_table.drop(columns=["split"]).assign(cohort="Zürich 東京")
    with pytest.raises(SchemaError) as e:
        medaudit.port(claims_file, local, n_resamples=N_RESAMPLES, primary_prompt="clinical",
                      cohorts={"montgomery": {"role": "primary"}})
    msg = str(e.value)
    assert "cohorts: unknown cohort 'montgomery'; the table has ['Zürich 東京']" in msg
    with pytest.raises(SchemaError) as a:
        medaudit.audit(local, n_resamples=N_RESAMPLES, primary_prompt="clinical",
                       cohorts={"montgomery": {"role": "primary"}})
    assert msg.split(": ", 1)[1] == str(a.value).split(": ", 1)[1]


def test_prevalence_becomes_the_sites_or_the_declared_one(ported, claims_file, site_table):  # noqa: F811
    """D07, Brier ≤ 0.2: at the site's observed prevalence it is the raw Brier score
    (scikit-learn); at a declared π = 0.1, paper 000 eq. 6 by hand."""
    from sklearn.metrics import brier_score_loss

    y, s = _scores(site_table, "sim-chexficient")
    r = _row(ported, "D07")
    assert r["local_estimate"] == pytest.approx(brier_score_loss(y, s), abs=1e-12)
    assert r["local_prevalence"] == pytest.approx(y.mean())
    assert f"prevalence observed → the site's observed ({y.mean():.6g})" in r["changes"]
    at = medaudit.port(claims_file, spec=LOCAL_SPEC, prevalence=0.1).claims.set_index("claim_id")
    by_hand = 0.1 * np.mean((1 - s[y == 1]) ** 2) + 0.9 * np.mean(s[y == 0] ** 2)
    assert at.loc["D07", "local_estimate"] == pytest.approx(by_hand, abs=1e-12)
    assert at.loc["D07", "local_prevalence"] == 0.1
    assert "prevalence observed → declared 0.1" in at.loc["D07", "changes"]
    # AUROC does not depend on π: the same estimate at any declared prevalence
    assert at.loc["D01", "local_estimate"] == _row(ported, "D01")["local_estimate"]


def test_rule_threshold_is_carried_fixed_or_re_estimated_when_asked(ported, claims_file, source_audit,  # noqa: F811
                                                                    site_table):
    """D08: τ chosen on Shenzhen for Se ≥ 0.9 is the source's number at the site (the Se there
    counted by hand); with thresholds='local' it is chosen again on Montgomery, where the Se
    it was chosen for holds by construction (and is not counted as holding)."""
    doc = {c["id"]: c for c in read_claims_file(claims_file)["claims"]}
    tau = doc["D08"]["E"]["threshold"]
    src = pd.DataFrame(simulate_paper000(rng=SOURCE_SPEC["seed"])["table"])
    sz = src[(src["cohort"] == "shenzhen") & (src["prompt"] == "clinical")
             & (src["model"] == "sim-medsiglip") & (src["label"] == 1)]
    assert np.mean(sz["score"] >= tau) >= 0.9  # the rule's target is met on its source
    r = _row(ported, "D08")
    assert r["threshold"] == tau and r["threshold_origin"].startswith("source τ (chosen on shenzhen")
    y, s = _scores(site_table, "sim-medsiglip")
    assert r["local_estimate"] == np.mean(s[y == 1] >= tau)
    local = medaudit.port(claims_file, spec=LOCAL_SPEC, thresholds="local").claims.set_index("claim_id")
    assert local.loc["D08", "verdict"] == "by construction"
    assert local.loc["D08", "threshold_origin"].startswith("re-estimated on montgomery")
    assert np.mean(s[y == 1] >= local.loc["D08", "threshold"]) >= 0.9
    assert local.loc["D06", "threshold"] == 0.2  # a number in the source claim stays fixed


def test_a_hand_written_claims_file_without_declared_specs(claims_file, tmp_path):  # noqa: F811
    """A vendor's file whose level / comparison / operating-point claims carry ``declared: {}``
    is re-stated from kind, E, level and side: the same local numbers as the declared specs."""
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    for c in doc["claims"]:
        if c["id"] in ("D01", "D04", "D06"):
            c["declared"] = {}
    path = tmp_path / "hand.claims.json"
    path.write_text(json.dumps(seal_claims(doc)), encoding="utf-8")
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(path.read_text(encoding="utf-8")))
    a = medaudit.port(path, spec=LOCAL_SPEC).claims.set_index("claim_id")
    b = medaudit.port(claims_file, spec=LOCAL_SPEC).claims.set_index("claim_id")
    for cid in ("D01", "D04", "D06"):
        assert a.loc[cid, "verdict"] == b.loc[cid, "verdict"]
        assert a.loc[cid, "local_estimate"] == b.loc[cid, "local_estimate"]


def test_operating_point_shows_both_constraints(ported, site_table):
    """D05: Se and Sp at τ = 0.1, the deciding one in local_*, the other beside it (counted here)."""
    y, s = _scores(site_table, "sim-medsiglip")
    r = _row(ported, "D05")
    got = {r["criterion"]: r["local_estimate"], r["other_criterion"]: r["other_estimate"]}
    assert got == {"sensitivity": np.mean(s[y == 1] >= 0.1), "specificity": np.mean(s[y == 0] < 0.1)}
    assert r["other_ci_low"] <= r["other_estimate"] <= r["other_ci_high"]


def test_row_keeps_the_source_constraint_when_the_site_is_decided_by_the_other(
        ported, claims_file, tmp_path):  # noqa: F811
    """Probe finding: where the source's verdict was decided by one constraint (say Sp) and
    the site's by the other (Se), the row named the site's criterion beside the source's
    level and source estimate, which belong to the other rate ("sensitivity; claimed >=
    0.95" with the source's Sp).  The row now keeps the source's constraint, with the local
    numbers of that same rate, and the site's deciding constraint beside it."""
    r = _row(ported, "D05")
    deciding, other = r["criterion"], r["other_criterion"]
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    for c in doc["claims"]:
        if c["id"] == "D05":  # the source as if its Sp had decided there
            c["E"]["criterion"] = other
            c["level"] = c["declared"][f"{other}_at_least"]
    path = tmp_path / "other.claims.json"
    path.write_text(json.dumps(seal_claims(doc)), encoding="utf-8")
    s = medaudit.port(path, spec=LOCAL_SPEC).claims.set_index("claim_id").loc["D05"]
    assert s["criterion"] == other and s["other_criterion"] == deciding
    assert s["level"] == doc["claims"][[c["id"] for c in doc["claims"]].index("D05")]["level"]
    assert (s["local_estimate"], s["local_ci_low"], s["local_ci_high"]) == (
        r["other_estimate"], r["other_ci_low"], r["other_ci_high"])
    assert (s["other_estimate"], s["other_ci_low"], s["other_ci_high"]) == (
        r["local_estimate"], r["local_ci_low"], r["local_ci_high"])
    assert s["verdict"] == r["verdict"]
    # probe finding: a claim that holds (D05 does: Se 0.946, Sp 0.88 against 0.8 and 0.7) was
    # said to be "decided here by" one of its constraints; both hold, so neither decides
    assert s["verdict"] == "holds"
    assert s["reason"].startswith(f"holds here too: {deciding} ≥ ")


def test_source_tau_is_carried_to_a_site_whose_scores_are_logits(claims_file, site_table,  # noqa: F811
                                                                 tmp_path):
    """The claims file records its score scale; a site scoring in logits gets logit(τ), so the
    local Se at the source's probability τ = 0.2 is the same count as on probabilities (a probe
    found τ = 0.5 applied to logits as if it were a logit)."""
    doc = read_claims_file(claims_file)
    assert doc["source"]["score_scale"] == "probabilities"
    t = site_table.copy()
    t["score"] = np.log(t["score"] / (1 - t["score"]))
    spec = {"name": "logit-site", "primary_prompt": "clinical", "score_scale": "logits",
            "cohorts": {"montgomery": {"role": "primary"}}, "seed": 7, "n_resamples": 100}
    r = medaudit.port(claims_file, t, spec=spec).claims.set_index("claim_id")
    y, s = _scores(site_table, "sim-biomedclip")
    assert r.loc["D06", "threshold"] == pytest.approx(math.log(0.2 / 0.8), abs=1e-15)
    assert r.loc["D06", "local_estimate"] == np.mean(s[y == 1] >= 0.2)
    assert "logit(τ) on the local logits" in r.loc["D06", "threshold_origin"]
    # a file written before the scale was recorded: read on the local scale, and said so
    old = json.loads(claims_file.read_text(encoding="utf-8"))
    del old["source"]["score_scale"]
    path = tmp_path / "old.claims.json"
    path.write_text(json.dumps(seal_claims(old)), encoding="utf-8")
    r_old = medaudit.port(path, t, spec=spec).claims.set_index("claim_id")
    assert r_old.loc["D06", "threshold"] == 0.2
    assert "does not record its score scale" in r_old.loc["D06", "threshold_origin"]


@pytest.mark.parametrize("tau,src,local,want", [
    (0.2, "probabilities", "logits", math.log(0.25)), (0.0, "logits", "probabilities", 0.5),
    (-1000.0, "logits", "probabilities", 0.0), (1000.0, "logits", "probabilities", 1.0),
    (0.7, "logits", "logits", 0.7)])
def test_tau_on_the_local_scale_against_scipy(tau, src, local, want):
    from scipy.special import expit, logit

    from medaudit.port import _on_local_scale

    got, _ = _on_local_scale(tau, src, local)
    ref = logit(tau) if (src, local) == ("probabilities", "logits") else \
        expit(tau) if src != local else tau
    assert got == pytest.approx(ref, abs=1e-15) and got == pytest.approx(want, abs=1e-15)
    assert _on_local_scale(1.0, "probabilities", "logits")[0] is None  # no logit of 1


def test_a_tau_outside_0_1_on_a_probability_site_is_a_claim_reason_not_the_sites_fault(
        claims_file, tmp_path):  # noqa: F811
    """Probe finding: a claims file without its score scale (an older one) whose τ is a logit
    (2.0) was refused as a fault of the site's score table and spec ("the audit spec names
    what this score table lacks ... claims.declared[3]"), though the site declares no claims.
    Now that claim is not assessable, with the reason, and the others are judged."""
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    doc["source"].pop("score_scale", None)
    (d05,) = [c for c in doc["claims"] if c["id"] == "D05"]
    d05["E"]["threshold"] = 2.0
    d05["declared"]["threshold"] = 2.0
    path = tmp_path / "old.claims.json"
    path.write_text(json.dumps(seal_claims(doc)), encoding="utf-8")
    # bookkeeping, not intervals: a small B
    res = medaudit.port(path, spec=LOCAL_SPEC, n_resamples=50).claims.set_index("claim_id")
    assert res.loc["D05", "verdict"] == "not assessable here"
    assert res.loc["D05", "reason"].startswith("the source τ = 2 lies outside [0, 1] and the "
                                               "claims file does not record its score scale")
    assert res.loc["D01", "verdict"] not in ("not assessable here",)


def test_a_level_no_metric_can_reach_is_a_reason_in_plain_words(claims_file, tmp_path):  # noqa: F811
    # probe finding: the reason leaked pydantic's wording ("~level: Value error, ...")
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    (d01,) = [c for c in doc["claims"] if c["id"] == "D01"]
    d01["level"] = d01["declared"]["at_least"] = 1.7
    path = tmp_path / "level.claims.json"
    path.write_text(json.dumps(seal_claims(doc)), encoding="utf-8")
    r = medaudit.port(path, spec=LOCAL_SPEC, n_resamples=50).claims.set_index("claim_id").loc["D01"]
    assert r["verdict"] == "not assessable here"
    assert r["reason"] == ("the claim cannot be re-stated here: `at_least: 1.7` lies outside the "
                           "values roc_auc can take ([0, 1]); the claim could never be judged")


# ----------------------------------------------------------------------------- probe findings
def test_one_class_site_without_a_cohort_column_is_answered(claims_file, site_table):  # noqa: F811
    """The README says a table without a cohort column is one site: a one-class one is answered
    ("not assessable here") as when the column is given, not refused."""
    local = site_table[site_table["label"] == 1].drop(columns=["split", "cohort"])
    res = medaudit.port(claims_file, local, n_resamples=N_RESAMPLES, primary_prompt="clinical")
    assert set(res.claims["verdict"]) == {"not assessable here"}
    assert all("one class only (58 positives, 0 negatives)" in r for r in res.claims["reason"])


def test_a_table_that_looks_one_class_is_validated_before_it_is_answered(claims_file,  # noqa: F811
                                                                          site_table):
    """Probe finding: labels written 'TB'/'normal' read as no class at all, and a one-class
    table skipped validation, so every claim came back 'not assessable here' (and 'normal'
    rows were dropped without a word); a missing column was a pandas KeyError."""
    local = site_table.drop(columns=["split"])
    text = local.assign(label=np.where(local["label"] == 1, "TB", "normal"))
    with pytest.raises(MedauditError, match=r"column 'label' must be 0 or 1 .* has 'TB'"):
        medaudit.port(claims_file, text, n_resamples=N_RESAMPLES, primary_prompt="clinical")
    half = local.astype({"label": object})
    half.loc[half["label"] == 0, "label"] = "normal"
    with pytest.raises(MedauditError, match=r"column 'label' must be 0 or 1 .* has 'normal'"):
        medaudit.port(claims_file, half, n_resamples=N_RESAMPLES, primary_prompt="clinical")
    positives = local[local["label"] == 1]
    for col in ("image_id", "model"):
        with pytest.raises(MedauditError, match=rf"missing column\(s\) \['{col}'\]"):
            medaudit.port(claims_file, positives.drop(columns=col), n_resamples=N_RESAMPLES,
                          primary_prompt="clinical")
    with pytest.raises(MedauditError, match="column 'score' must be finite"):
        medaudit.port(claims_file, positives.assign(score=np.nan), n_resamples=N_RESAMPLES,
                      primary_prompt="clinical")


@pytest.mark.parametrize("source", [None, {"a": 1}, 3])
def test_a_source_that_is_not_a_path_is_one_line(source, site_table):
    with pytest.raises(SchemaError, match=r"^the source must be a path \(an audit folder"):
        medaudit.port(source, site_table)


def test_overwrite_never_replaces_the_source_audit_folder(ported, source_audit, tmp_path):  # noqa: F811
    """An audit folder is medaudit's, but its results.json is where its claims are verified:
    a port written over it would destroy the source of the claims it checked."""
    from medaudit.io.output import OutputPathError

    before = (source_audit / "results.json").read_bytes()
    with pytest.raises(OutputPathError, match="holds an audit .* a port replaces only an earlier port"):
        ported.write(source_audit, overwrite=True)
    assert (source_audit / "results.json").read_bytes() == before
    out = ported.write(tmp_path / "p")  # an earlier port output is replaced as before
    assert ported.write(out, overwrite=True) == out


def test_an_exact_plan_of_nothing_more_is_said_in_words():
    # probe finding: "unresolved ... exact binomial: +0" read as a contradiction
    from medaudit.report.port import _resolve_text

    row = {"verdict": "unresolved", "resolve_n_pos": 12, "resolve_n_neg": 16,
           "additional_pos": 30, "additional_neg": 0, "resolves_to": "does not hold"}
    assert _resolve_text({**row, "exact_additional": 7}).endswith("; exact binomial: +7")
    text = _resolve_text({**row, "exact_additional": 0})
    assert "exact binomial: +0" not in text and text.endswith(
        "the exact binomial (Clopper–Pearson) interval already resolves it at this sample, the "
        "bootstrap interval the verdict is read from does not")


def test_the_sites_own_declared_claims_are_said_to_be_left_to_an_audit(claims_file):  # noqa: F811
    # probe finding: a local spec's `claims: declared:` vanished without a word in a port
    spec = {**LOCAL_SPEC, "claims": {"declared": [
        {"id": "Z1", "model": "sim-openclip", "metric": "roc_auc", "at_least": 0.5}]}}
    with pytest.warns(UserWarning, match=r"its 1 declared claim\(s\) under `claims:` are not "
                                         r"judged here .* run `medaudit audit` on this spec"):
        res = medaudit.port(claims_file, spec=spec, n_resamples=50)
    assert "Z1" not in set(res.claims["claim_id"])



def test_a_source_claim_on_a_soft_metric_is_not_re_stated_on_hard_labels():
    """Probe finding: a claim on soft_roc_auc, re-stated at a site, would be judged on the
    site's hard labels (the ordinary AUROC under the soft metric's name). A generated soft
    claim has no local counterpart, and says why."""
    from medaudit.port import restate

    c = {"id": "Y01", "kind": "ranking", "text": "a ranks above b on soft_roc_auc",
         "models": ["a", "b"], "declared": {}, "level": 0.0, "side": "greater",
         "E": {"model": "a vs b", "prompt": "none", "cohort": "src", "negatives": "all",
               "prevalence": "observed", "threshold": None,
               "criterion": "soft_roc_auc_difference"}}
    d, origin = restate(c, cohort="site", present={"a": {"none"}, "b": {"none"}},
                        primary_prompt="none", negative_groups=set(), n_pos=10, n_neg=10)
    assert isinstance(d, str) and origin == ""
    assert d.startswith("the source claim is about soft_roc_auc, a metric against the source's "
                        "soft labels")
