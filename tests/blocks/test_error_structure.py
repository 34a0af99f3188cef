"""Error-structure block (paper 002, M2.9 and M2.11).

Witnesses: rates and 2x2 tables counted with pandas; Fisher vs scipy; BH vs statsmodels
``multipletests``; CMH vs statsmodels ``StratifiedTable``; kappa vs sklearn
``cohen_kappa_score``; AUROC vs sklearn ``roc_auc_score``; every cluster-bootstrap replicate
vs the rates recomputed on the materialised resample (rows repeated by the row-level cluster
plan's counts); the degeneracy detector on a planted constant-assertion model, with the
invariant accuracy = 1 - prevalence for a never-present system.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from statsmodels.stats.contingency_tables import StratifiedTable
from statsmodels.stats.multitest import multipletests

from medaudit.agreement.judgments import validate_judgments
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import error_structure as es
from medaudit.exceptions import SchemaError
from medaudit.stats.designs import make_plan
from tests._support import SpecContext, context, run

FINDINGS = ["atelectasis", "cardiomegaly", "edema", "pneumothorax"]
RATES = {"A": (0.25, 0.2), "B": (0.05, 0.45), "C": (0.12, 0.12)}  # (fpr, fnr)


def raw_table(seed: int = 0, n_studies: int = 40) -> pd.DataFrame:
    """Three institutions, two informative models (two protocols, logits) and a planted
    degenerate model: never 'present' under narrative, always under binary."""
    g = np.random.default_rng(seed)
    rows = []
    for inst, (fpr, fnr) in RATES.items():
        for s in range(n_studies + {"A": 0, "B": 10, "C": -8}[inst]):
            sid = f"{inst}-{s}"
            for f in FINDINGS:
                y = int(g.random() < 0.3)
                for m, shift in (("m1", 0.0), ("m2", 0.1)):
                    for prot in ("narrative", "binary"):
                        p = int(g.random() < (1 - fnr - shift if y else fpr + shift / 2))
                        ly = g.normal(1.5 * (2 * p - 1) + (y - 0.5))
                        rows.append([sid, f"pt-{sid}", inst, m, prot, f, p, y, ly, 0.0])
                for prot, p in (("narrative", 0), ("binary", 1)):
                    rows.append([sid, f"pt-{sid}", inst, "deg", prot, f, p, y, g.normal(), 0.0])
    return pd.DataFrame(rows, columns=["study_id", "patient_id", "institution", "model",
                                       "protocol", "finding", "prediction", "reference",
                                       "logit_yes", "logit_no"])


def make_ctx(table: pd.DataFrame | None = None, **es_kw) -> SpecContext:
    t, _ = validate_judgments(raw_table() if table is None else table)
    spec = AuditSpec.model_validate({
        "name": "es", "judgments": {"path": "unused.csv"}, "blocks": ["error_structure"],
        "error_structure": {"n_resamples": 200, "family_models": ["m1", "m2"], **es_kw}})
    return context(scores=pd.DataFrame(), spec=spec, judgments=t)


@pytest.fixture(scope="module")
def ctx() -> SpecContext:
    return make_ctx()


@pytest.fixture(scope="module")
def result(ctx):
    return run(es, ctx)


def _pandas_counts(t: pd.DataFrame) -> pd.DataFrame:
    n = t[t["protocol"] == "narrative"]
    neg, pos = n[n["reference"] == 0], n[n["reference"] == 1]
    keys = ["model", "institution", "finding"]
    return pd.DataFrame({
        "fpr_n": neg.groupby(keys).size(), "fpr_events": neg.groupby(keys)["prediction"].sum(),
        "fnr_n": pos.groupby(keys).size(),
        "fnr_events": (1 - pos["prediction"]).groupby([pos[k] for k in keys]).sum()}).fillna(0)


def test_rates_equal_pandas_counts(ctx, result):
    c = _pandas_counts(ctx.judgments)
    r = result.tables["rates"]
    assert len(r) == 3 * 3 * 4 * 2
    for row in r.itertuples():
        ref = c.loc[(row.model, row.cohort, row.negatives)]
        assert row.events == ref[f"{row.criterion}_events"] and row.n == ref[f"{row.criterion}_n"]
        assert row.estimate == pytest.approx(ref[f"{row.criterion}_events"] / ref[f"{row.criterion}_n"],
                                             rel=1e-15)
        assert row.ci_low <= row.estimate <= row.ci_high
    assert set(r["design"]) == {es.DESIGN} and set(r["prompt"]) == {"narrative"}


def test_fisher_and_bh_against_scipy_and_statsmodels(ctx, result):
    c = _pandas_counts(ctx.judgments)
    con = result.tables["contrasts"]
    assert len(con) == 3 * 4 * 3 * 2  # models x findings x institution pairs x metrics
    for row in con.itertuples():
        tab = []
        for inst in (row.cohort_a, row.cohort_b):
            k = c.loc[(row.model, inst, row.negatives)]
            m = row.criterion.split("_")[0]
            tab.append([k[f"{m}_events"], k[f"{m}_n"] - k[f"{m}_events"]])
        assert row.pvalue == pytest.approx(stats.fisher_exact(tab).pvalue, rel=1e-12)
        assert row.estimate == pytest.approx(tab[0][0] / sum(tab[0]) - tab[1][0] / sum(tab[1]),
                                             abs=1e-15)
    for metric in ("fpr", "fnr"):  # BH separately per metric, over the family models only
        fam = con[(con["criterion"] == f"{metric}_difference") & con["model"].isin(["m1", "m2"])]
        assert len(fam) == 24 and set(fam["family"]) == {f"bh[{metric}]"}
        rej, padj, _, _ = multipletests(fam["pvalue"], alpha=0.05, method="fdr_bh")
        np.testing.assert_allclose(fam["pvalue_adj"], padj, rtol=1e-12)
        assert fam["significant"].tolist() == rej.tolist()
        assert (fam["family_size"] == 24).all()
    desc = con[con["model"] == "deg"]
    assert set(desc["family"]) == {"descriptive"} and desc["pvalue_adj"].isna().all()


def test_cmh_against_statsmodels(ctx, result):
    c = _pandas_counts(ctx.judgments)
    cmh = result.tables["cmh"]
    for row in cmh[cmh["model"] != "deg"].itertuples():
        m = row.criterion.split("_")[0]
        tabs = []
        for f in FINDINGS:
            a, b = c.loc[(row.model, row.cohort_a, f)], c.loc[(row.model, row.cohort_b, f)]
            tabs.append([[a[f"{m}_events"], a[f"{m}_n"] - a[f"{m}_events"]],
                         [b[f"{m}_events"], b[f"{m}_n"] - b[f"{m}_events"]]])
        st = StratifiedTable(np.moveaxis(np.asarray(tabs, dtype=float), 0, -1))
        ref = st.test_null_odds(correction=True)
        assert row.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
        assert row.estimate == pytest.approx(st.oddsratio_pooled, rel=1e-10)
        assert row.direction == (f"higher at {row.cohort_a}" if st.oddsratio_pooled > 1
                                 else f"higher at {row.cohort_b}")
    # the degenerate model's FPR tables have no events anywhere: every stratum is dropped
    d = cmh[(cmh["model"] == "deg") & (cmh["criterion"] == "fpr_cmh")]
    assert (d["n_strata_used"] == 0).all() and d["pvalue"].isna().all()
    assert set(d["dropped_strata"]) == {", ".join(FINDINGS)}
    assert set(d["direction"]) == {"not defined"}


def test_cmh_drops_one_collapsed_stratum_and_names_it():
    raw = raw_table(1)
    # no events for m1 at A and B on pneumothorax under narrative: that stratum is uninformative
    sel = ((raw["model"] == "m1") & (raw["protocol"] == "narrative") & (raw["finding"] == "pneumothorax")
           & raw["institution"].isin(["A", "B"]) & (raw["reference"] == 0))
    raw.loc[sel, "prediction"] = 0
    r = run(es, make_ctx(raw)).tables["cmh"]
    row = r[(r["model"] == "m1") & (r["criterion"] == "fpr_cmh") & (r["cohort"] == "A - B")].iloc[0]
    assert row["dropped_strata"] == "pneumothorax" and row["n_strata_used"] == 3
    assert "1 empty or uninformative" in row["qualification"]


def test_jaccard_from_the_significant_sets(result):
    con, jac = result.tables["contrasts"], result.tables["jaccard"]
    for metric in ("fpr", "fnr"):
        sig = con[(con["criterion"] == f"{metric}_difference") & (con["significant"] == True)]  # noqa: E712
        sets = {m: set(zip(g["negatives"], g["cohort"], strict=True)) for m, g in sig.groupby("model")}
        a, b = sets.get("m1", set()), sets.get("m2", set())
        row = jac[(jac["criterion"] == f"jaccard[{metric}_significant]") & (jac["subset"] == "all")]
        assert len(row) == 1
        row = row.iloc[0]
        assert (row["n_intersection"], row["n_union"]) == (len(a & b), len(a | b))
        if a | b:
            assert row["estimate"] == len(a & b) / len(a | b)
    # every study-finding is judged by both family models here: the shared subset is identical
    for metric in ("fpr", "fnr"):
        j = jac[jac["criterion"] == f"jaccard[{metric}_significant]"].set_index("subset")
        assert j.loc["all", "n_union"] == j.loc["shared", "n_union"]


def test_paper_jaccard_arithmetic():
    # paper 002: Jaccard 6/17 = 0.353 (M2.13)
    from medaudit.stats import jaccard

    a = {f"x{i}" for i in range(6)} | {f"a{i}" for i in range(5)}
    b = {f"x{i}" for i in range(6)} | {f"b{i}" for i in range(6)}
    assert round(jaccard(a, b), 3) == 0.353 and jaccard(a, b) == 6 / 17


def test_cluster_bootstrap_replicates_equal_materialised_resamples(ctx):
    t = ctx.judgments
    t = t[(t["model"] == "m1") & (t["protocol"] == "narrative")].reset_index(drop=True)
    inst = ["A", "B", "C"]
    B = 6
    reps = es.rate_replicates(t, inst, FINDINGS, n_resamples=B, rng=np.random.default_rng(11))
    key = (t["institution"] + "\x1f" + t["study_id"]).to_numpy()
    plan = make_plan("cluster", np.zeros(len(t)), cluster=key, strata=t["institution"].to_numpy())
    w = np.concatenate(list(plan.batches(B, np.random.default_rng(11))))
    n_studies = t.groupby("institution")["study_id"].nunique()
    for b in range(B):
        res = t.loc[t.index.repeat(w[b])]
        # whole studies, and each institution keeps its number of studies
        per_study = pd.Series(w[b]).groupby(key).nunique()
        assert (per_study == 1).all()
        drawn = pd.Series(w[b], index=key).groupby(level=0).first()
        sizes = drawn.groupby([k.split("\x1f")[0] for k in drawn.index]).sum()
        assert sizes.to_dict() == n_studies.to_dict()
        for i, f in itertools.product(range(3), range(4)):
            g = res[(res["institution"] == inst[i]) & (res["finding"] == FINDINGS[f])]
            neg, pos = g[g["reference"] == 0], g[g["reference"] == 1]
            fpr = neg["prediction"].mean() if len(neg) else np.nan
            fnr = (1 - pos["prediction"]).mean() if len(pos) else np.nan
            np.testing.assert_allclose(reps["fpr"][b, i, f], fpr, rtol=1e-13)
            np.testing.assert_allclose(reps["fnr"][b, i, f], fnr, rtol=1e-13)


def test_degeneracy_detector_on_planted_model(ctx, result):
    a = result.tables["assertion"]
    summ = a[a["negatives"] == "all"].set_index(["model", "prompt", "cohort"])
    for inst in RATES:
        nev = summ.loc[("deg", "narrative", inst)]
        assert nev["degenerate"] and nev["kind"] == "never_present" and nev["estimate"] == 0
        # invariant (M2.11): a never-present system's accuracy is 1 - reference prevalence
        assert nev["accuracy"] == pytest.approx(1 - nev["reference_prevalence"], abs=1e-15)
        alw = summ.loc[("deg", "binary", inst)]
        assert alw["degenerate"] and alw["kind"] == "always_present"
        assert alw["accuracy"] == pytest.approx(alw["reference_prevalence"], abs=1e-15)
        for m in ("m1", "m2"):
            assert not summ.loc[(m, "narrative", inst), "degenerate"]
    r = result.tables["rates"]
    assert r.loc[r["model"] == "deg", "qualification"].str.contains("degenerate").all()
    assert not r.loc[r["model"] != "deg", "qualification"].str.contains("degenerate").any()
    # per-finding rates equal pandas
    t = ctx.judgments
    g = t.groupby(["model", "protocol", "institution", "finding"])["prediction"].mean()
    f = a[a["negatives"] != "all"]
    np.testing.assert_allclose(f["estimate"], [g.loc[(r.model, r.prompt, r.cohort, r.negatives)]
                                               for r in f.itertuples()], rtol=1e-15)


def test_concordance_against_sklearn(ctx, result):
    t = ctx.judgments
    conc = result.tables["concordance"]
    for m in ("m1", "m2", "deg"):
        for cohort in ("A", "all"):
            sub = t[(t["model"] == m) & ((t["institution"] == cohort) | (cohort == "all"))]
            w = sub.pivot_table(index=["study_id", "finding"], columns="protocol",
                                values=["prediction", "correct"])
            pa, pb = w[("prediction", "narrative")], w[("prediction", "binary")]
            rows = conc[(conc["model"] == m) & (conc["cohort"] == cohort)].set_index("criterion")
            assert rows.loc["raw_agreement", "estimate"] == pytest.approx((pa == pb).mean())
            k = rows.loc["cohen_kappa", "estimate"]
            assert k == pytest.approx(cohen_kappa_score(pa, pb), abs=1e-12)
            d = w[("correct", "narrative")].mean() - w[("correct", "binary")].mean()
            assert rows.loc["accuracy_difference", "estimate"] == pytest.approx(d, abs=1e-14)
            assert rows.loc["raw_agreement", "n"] == len(w)


def test_logit_auroc_against_sklearn(ctx, result):
    t = ctx.judgments
    la = result.tables["logit_auroc"]
    for row in la[la["negatives"].isin(["all", "edema"])].itertuples():
        g = t[(t["model"] == row.model) & (t["protocol"] == row.prompt)]
        g = g if row.cohort == "all" else g[g["institution"] == row.cohort]
        g = g if row.negatives == "all" else g[g["finding"] == row.negatives]
        p = 1 / (1 + np.exp(-(g["logit_yes"] - g["logit_no"])))
        if row.criterion == "roc_auc[reference]":
            ref = roc_auc_score(g["reference"], p)
        else:
            ref = roc_auc_score(g["correct"], np.where(g["prediction"] == 1, p, 1 - p))
        assert row.estimate == pytest.approx(ref, rel=1e-12)


def test_deterministic_and_point_estimates_do_not_depend_on_b(ctx, result):
    again = run(es, ctx)
    for k, df in result.tables.items():
        pd.testing.assert_frame_equal(df, again.tables[k])
    other = run(es, make_ctx(n_resamples=50)).tables["contrasts"]
    pd.testing.assert_series_equal(other["estimate"], result.tables["contrasts"]["estimate"])
    pd.testing.assert_series_equal(other["pvalue"], result.tables["contrasts"]["pvalue"])


def test_bad_settings_are_clear_errors():
    with pytest.raises(SchemaError, match="protocol is 'chat'"):
        run(es, make_ctx(protocol="chat"))
    with pytest.raises(SchemaError, match=r"family_models names \['m9'\]"):
        run(es, make_ctx(family_models=["m1", "m9"]))
    with pytest.raises(SchemaError, match=r"institutions names \['Z'\]"):
        run(es, make_ctx(institutions=["Z"]))
    spec = make_ctx().spec
    with pytest.raises(SchemaError, match="needs a judgment table"):
        run(es, context(scores=pd.DataFrame(), spec=spec))


def test_institution_order_sets_the_contrast_sign(result):
    r = run(es, make_ctx(institutions=["C", "B", "A"])).tables["contrasts"]
    a = result.tables["contrasts"]
    x = r[(r["cohort"] == "B - A") & (r["model"] == "m1")].set_index(["criterion", "negatives"])
    y = a[(a["cohort"] == "A - B") & (a["model"] == "m1")].set_index(["criterion", "negatives"])
    np.testing.assert_allclose(x["estimate"], -y.loc[x.index, "estimate"], atol=1e-15)
    np.testing.assert_allclose(x["pvalue"], y.loc[x.index, "pvalue"], rtol=1e-12)


def test_end_to_end_audit_with_judgments_only(tmp_path: Path):
    from medaudit.audit.run import audit, write_outcome

    raw_table(2, 15).to_csv(tmp_path / "judgments.csv", index=False)
    spec = AuditSpec.model_validate({
        "name": "judgments only", "judgments": {"path": "judgments.csv"},
        "blocks": ["error_structure"], "error_structure": {"n_resamples": 50}})
    out = audit(spec, tmp_path)
    res = out.results["error_structure"]
    assert set(res.tables) == {"rates", "contrasts", "cmh", "jaccard", "assertion", "concordance",
                               "logit_auroc"}
    assert out.provenance["inputs"]["judgments"]["filters"]["n_input_rows"] == len(raw_table(2, 15))
    write_outcome(out, tmp_path / "out")
    assert (tmp_path / "out" / "tables" / "error_structure__contrasts.csv").is_file()


def test_cmh_names_a_stratum_the_model_lacks_at_one_institution():
    # m1 has no narrative pneumothorax rows at B (m2 keeps them, so the table validates): the
    # empty stratum is dropped *and reported*, and the test equals statsmodels on the rest
    base = make_ctx(raw_table(3))
    t = base.judgments
    t = t[~((t["model"] == "m1") & (t["protocol"] == "narrative")
            & (t["finding"] == "pneumothorax") & (t["institution"] == "B"))].reset_index(drop=True)
    ctx = context(scores=pd.DataFrame(), spec=base.spec, judgments=t)
    r = run(es, ctx).tables["cmh"]
    row = r[(r["model"] == "m1") & (r["criterion"] == "fnr_cmh") & (r["cohort"] == "A - B")].iloc[0]
    assert row["dropped_strata"] == "pneumothorax" and row["n_strata"] == 4
    assert row["n_strata_used"] == 3 and "1 empty" in row["qualification"]
    c = _pandas_counts(ctx.judgments)
    tabs = [[[c.loc[("m1", i, f), "fnr_events"], c.loc[("m1", i, f), "fnr_n"]
              - c.loc[("m1", i, f), "fnr_events"]] for i in ("A", "B")] for f in FINDINGS[:3]]
    st = StratifiedTable(np.moveaxis(np.asarray(tabs, dtype=float), 0, -1))
    assert row["pvalue"] == pytest.approx(st.test_null_odds(correction=True).pvalue, rel=1e-10)


# ----------------------------------------------------------------------------- reader audit (M2.12)
def _with_reader(seed: int = 1) -> pd.DataFrame:
    raw = raw_table()
    g = np.random.default_rng(seed)
    pairs = raw[["study_id", "finding"]].drop_duplicates().sample(60, random_state=seed)
    pairs["reader_label"] = g.choice(["present", "absent", "uncertain"], size=len(pairs),
                                     p=[0.3, 0.6, 0.1])
    return raw.merge(pairs, on=["study_id", "finding"], how="left")


def test_reader_audit_table_reads_the_audit():
    from medaudit.agreement.reader_audit import reader_audit

    ctx = make_ctx(_with_reader())
    t = run(es, ctx).tables["reader_audit"]
    want = reader_audit(ctx.judgments, protocol="narrative", models=["m1", "m2"])
    k = t[(t["criterion"] == "cohen_kappa[reader,reference]") & (t["cohort"] == "all")].iloc[0]
    assert (k["estimate"], k["n"], k["n_pairs_evaluable"]) == (want.kappa, want.n_pairs,
                                                               want.n_pairs_evaluable)
    # kappa by hand with sklearn over the unique definite pairs (pandas, not the module)
    ev = ctx.judgments
    ev = ev[(ev["protocol"] == "narrative") & ev["model"].isin(["m1", "m2"])
            & ev["reader_label"].isin([0, 1])].drop_duplicates(["study_id", "finding"])
    assert k["estimate"] == pytest.approx(cohen_kappa_score(ev["reader_label"], ev["reference"]))
    per = t[(t["criterion"] == "cohen_kappa[reader,reference]") & (t["cohort"] != "all")]
    assert per["n"].sum() == k["n"] and set(per["cohort"]) == set(RATES)
    rates = t[t["criterion"] == "reader_flagged_error_rate"].set_index("risk_tertile")
    assert list(rates.index) == ["bottom", "middle", "top"]
    np.testing.assert_allclose(rates["estimate"], rates["n_errors"] / rates["n"])
    assert rates["n"].sum() == want.n_records_definite
    diff = t[t["criterion"] == "reader_flagged_error_rate_difference"].iloc[0]
    assert diff["estimate"] == pytest.approx(rates.loc["top", "estimate"] - rates.loc["bottom", "estimate"])
    assert set(t["model"]) == {"m1, m2"}  # the family models, pooled


def test_reader_audit_switch():
    assert "reader_audit" not in run(es, make_ctx()).tables  # no column, auto: skipped
    assert "reader_audit" not in run(es, make_ctx(_with_reader(), reader_audit=False)).tables
    with pytest.raises(SchemaError, match="reader_label"):
        run(es, make_ctx(reader_audit=True))
