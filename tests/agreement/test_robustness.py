"""Witnesses for the M2.12 robustness machinery: estimator labels and C, study-disjoint shots,
the data changes (one study per patient, size-matched control, subsample, left-out finding)
and the variants built from a spec section.

Independent witnesses: scikit-learn ``LogisticRegression`` at each C on the row-level
design; a loop-based study-disjoint splitter written from the definition; hand-worked
tiny tables for the deduplication rules and the subsample sizes; a binomial test that the
random rule picks each of a patient's two studies half the time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy.stats import binomtest
from sklearn.linear_model import LogisticRegression

from medaudit.agreement._base import estimator_label, family_of, parse_estimator
from medaudit.agreement.design import FoldKey, JudgmentData, fold_rows, run_design
from medaudit.agreement.estimators import HDCal, Pool
from medaudit.agreement.robustness import (
    RobustnessConfig,
    leave_finding_out,
    one_study_per_patient,
    repeated_patient_institutions,
    size_matched_studies,
    subsample_studies,
    variants,
)
from medaudit.exceptions import MedauditError, SchemaError
from tests.agreement.test_design import _table
from tests.agreement.test_estimators import _row_design, _rows


# ----------------------------------------------------------------------------- labels and C
def test_estimator_labels_round_trip_and_refuse_bad_options():
    assert parse_estimator("hdcal[C=0.01]") == ("hdcal", {"C": 0.01})
    assert parse_estimator("target_only[C=100]") == ("target_only", {"C": 100.0})
    assert parse_estimator("naive") == ("naive", {})
    assert estimator_label("hdcal", C=0.01) == "hdcal[C=0.01]"
    assert parse_estimator(estimator_label("additive", C=10.0)) == ("additive", {"C": 10.0})
    assert family_of("hdcal[C=0.1]") == "ii" and family_of("beta_binomial") == "iii"
    for bad, msg in (("hdcall", "Did you mean 'hdcal'"), ("naive[C=1]", "no options"),
                     ("hdcal[C=-1]", "positive"), ("hdcal[C=x]", "number"),
                     ("hdcal[C=1", "key\\[option=value"), ("hdcal[tol=1]", "options C")):
        with pytest.raises(MedauditError, match=msg):
            parse_estimator(bad)


@pytest.mark.parametrize("C", [0.01, 100.0])
def test_hdcal_at_any_C_equals_row_level_sklearn(C):
    d, k, r, c = _rows(seed=4)
    est = HDCal(C=C)
    est._tol = 1e-10
    est.fit(Pool.from_rows(d, k, r, c, target=2))
    blocks = ["r", "k", "d", "dk"]
    ref = {"r": r, "k": k, "d": d, "dk": [f"{a}:{b}" for a, b in zip(d, k, strict=True)]}
    lr = LogisticRegression(C=C, max_iter=1000, tol=1e-10).fit(_row_design(d, k, r, blocks, ref), c)
    gd, gk, gr = (a.ravel() for a in np.meshgrid(np.arange(3), np.arange(4), np.arange(2),
                                                 indexing="ij"))
    np.testing.assert_allclose(est.predict(gd, gk, gr),
                               lr.predict_proba(_row_design(gd, gk, gr, blocks, ref))[:, 1], atol=1e-7)
    assert est.info_["C"] == C


@pytest.fixture(scope="module")
def data() -> JudgmentData:
    return JudgmentData.from_columns(**_table(n_studies=60))


def test_design_passes_C_to_each_fit(data):
    labels = ["naive", "hdcal", "hdcal[C=0.01]", "hdcal[C=1]"]
    res = run_design(data, estimators=labels, budgets=(0, 25), repeats=1, selection=False)
    again = run_design(data, estimators=["hdcal"], budgets=(0, 25), repeats=1, selection=False,
                       options={"hdcal": {"C": 0.01}})
    for f, g in zip(res.loio, again.loio, strict=True):
        assert f.info["hdcal[C=0.01]"]["C"] == 0.01 and f.info["hdcal"]["C"] == 1.0
        np.testing.assert_array_equal(f.prob["hdcal[C=1]"], f.prob["hdcal"])  # the M2.4 default
        np.testing.assert_array_equal(f.prob["hdcal[C=0.01]"], g.prob["hdcal"])  # option by key
        # the fold's own pool, fitted directly at C = 0.01
        pool_rows, _ = fold_rows(data, f.key)
        pool = Pool.from_rows(data.institution[pool_rows], data.finding[pool_rows],
                              data.direction[pool_rows], data.correct[pool_rows], target=f.key.target)
        d = np.full(f.finding.size, f.key.target)
        np.testing.assert_allclose(f.prob["hdcal[C=0.01]"],
                                   HDCal(C=0.01).fit(pool).predict(d, f.finding, f.direction),
                                   rtol=0, atol=0)
    assert res.settings["options"] == {"hdcal[C=0.01]": {"C": 0.01}, "hdcal[C=1]": {"C": 1.0}}
    with pytest.raises(MedauditError, match="no options"):
        run_design(data, estimators=["naive"], budgets=(0,), repeats=1, selection=False,
                   options={"naive": {"C": 2.0}})


# ----------------------------------------------------------------------------- study-disjoint
def _slow_study_split(data: JudgmentData, key: FoldKey, seed: int) -> tuple[set, set]:
    """From the definition: studies in one seeded permutation, rows of each study in order;
    the shot is the first ``budget`` rows, the test set the rows of untouched studies."""
    rows = data.rows(key.model, key.target)
    studies = sorted(set(data.study[rows].tolist()))
    perm = np.random.default_rng(seed).permutation(len(studies))
    listed = []
    for j in perm:
        s = studies[j]
        listed += sorted((int(i) for i in rows if data.study[i] == s), key=lambda i: data.finding[i])
    shot = listed[:key.budget]
    touched = {int(data.study[i]) for i in shot}
    test = {i for i in listed if int(data.study[i]) not in touched}
    return set(shot), test


@pytest.mark.parametrize("budget", [0, 1, 25, 26, 50])
def test_study_disjoint_shots_match_the_definition(data, budget):
    key = FoldKey("loio", 1, 0, (1, 2), budget, 3)
    pool, test = fold_rows(data, key, split="study")
    shot = pool[data.institution[pool] == 0]
    want_shot, want_test = _slow_study_split(data, key, 42 + 3)
    assert set(shot.tolist()) == want_shot and set(test.tolist()) == want_test
    assert shot.size == budget  # the budget stays exactly n judgments
    assert not set(data.study[shot].tolist()) & set(data.study[test].tolist())
    dropped = set(data.rows(1, 0).tolist()) - want_shot - want_test
    # only the boundary study loses rows (at most its other findings)
    assert len({int(data.study[i]) for i in dropped}) <= 1 and len(dropped) < 4


def test_study_disjoint_budgets_are_nested(data):
    shots = [set(fold_rows(data, FoldKey("loio", 0, 2, (0, 1), b, 1), split="study")[0].tolist())
             for b in (25, 50, 100)]
    assert shots[0] < shots[1] < shots[2]
    with pytest.raises(MedauditError, match="split"):
        fold_rows(data, FoldKey("loio", 0, 2, (0, 1), 25, 1), split="studies")


def test_run_design_records_the_split(data):
    res = run_design(data, estimators=["naive", "beta_binomial"], budgets=(0, 25), repeats=1,
                     selection=False, split="study")
    assert res.settings["split"] == "study"
    f = next(f for f in res.loio if f.key.budget == 25)
    _, test = fold_rows(data, f.key, split="study")
    assert f.n_test == test.size and f.n_shot == 25


# ----------------------------------------------------------------------------- data changes
def _toy() -> pd.DataFrame:
    """Institution A: patient p1 has studies s3 and s1 (s3 earlier by date), p2 has s2;
    institution B: patient q1 has b1 and b2.  Two findings per study."""
    rows = []
    for inst, sid, pid, date in (("A", "s3", "p1", "2020-01"), ("A", "s1", "p1", "2021-05"),
                                 ("A", "s2", "p2", "2019-03"), ("B", "b1", "q1", "2018-01"),
                                 ("B", "b2", "q1", "2017-01")):
        for f in ("f1", "f2"):
            rows.append({"institution": inst, "study_id": sid, "patient_id": pid, "date": date,
                         "finding": f, "model": "m"})
    return pd.DataFrame(rows)


def test_one_study_per_patient_first_by_id_and_by_date():
    t = _toy()
    assert repeated_patient_institutions(t) == ["A", "B"]
    by_id = one_study_per_patient(t, institutions=["A"], rule="first")
    assert sorted(set(by_id["study_id"])) == ["b1", "b2", "s1", "s2"]  # B untouched
    assert len(by_id) == 8  # whole studies: both findings
    by_date = one_study_per_patient(t, institutions=["A", "B"], rule="first", order_by="date")
    assert sorted(set(by_date["study_id"])) == ["b2", "s2", "s3"]
    bad = t.copy()
    bad.loc[0, "date"] = "1999-01"
    with pytest.raises(SchemaError, match="one value per study"):
        one_study_per_patient(bad, institutions=["A"], rule="first", order_by="date")
    with pytest.raises(SchemaError, match="not in the judgment"):
        one_study_per_patient(t, institutions=["Z"], rule="first")
    with pytest.raises(SchemaError, match="order_by"):
        one_study_per_patient(t, institutions=["A"], rule="first", order_by="when")


def test_random_rule_picks_each_study_half_the_time():
    t = _toy()
    picks = [one_study_per_patient(t, institutions=["A"], rule="random", rng=s)
             for s in range(300)]
    for p in picks[:20]:
        a = p[p["institution"] == "A"]
        assert a.groupby("patient_id")["study_id"].nunique().eq(1).all()
        assert set(a["patient_id"]) == {"p1", "p2"}
    n_s1 = sum("s1" in set(p["study_id"]) for p in picks)
    assert binomtest(n_s1, 300, 0.5).pvalue > 0.01
    pd.testing.assert_frame_equal(one_study_per_patient(t, institutions=["A"], rule="random", rng=42),
                                  one_study_per_patient(t, institutions=["A"], rule="random", rng=42))


def test_size_matched_control_and_subsample_sizes():
    t = _toy()
    c = size_matched_studies(t, n_studies={"A": 2}, rng=3)
    assert c[c["institution"] == "A"]["study_id"].nunique() == 2
    assert set(c[c["institution"] == "B"]["study_id"]) == {"b1", "b2"}
    with pytest.raises(SchemaError, match="asked"):
        size_matched_studies(t, n_studies={"A": 4}, rng=3)
    # floor(0.75 n + 1/2): 10 -> 8, 4 -> 3, 2 -> 2 (1.5 rounds up), 1 -> 1
    studies = [("A", 10), ("B", 4), ("C", 2), ("D", 1)]
    big = pd.DataFrame([{"institution": i, "study_id": f"{i}{s}", "patient_id": f"{i}{s}",
                         "finding": f} for i, n in studies for s in range(n) for f in ("f1", "f2")])
    sub = subsample_studies(big, fraction=0.75, rng=0)
    assert sub.groupby("institution")["study_id"].nunique().to_dict() == {"A": 8, "B": 3, "C": 2, "D": 1}
    assert (sub.groupby("study_id").size() == 2).all()  # whole studies
    with pytest.raises(SchemaError, match="fraction"):
        subsample_studies(big, fraction=1.0, rng=0)


def test_leave_finding_out():
    t = _toy()
    out = leave_finding_out(t, "f1")
    assert set(out["finding"]) == {"f2"} and len(out) == len(t) / 2
    with pytest.raises(SchemaError, match="not in the judgment"):
        leave_finding_out(t, "f9")


# ----------------------------------------------------------------------------- variants
@pytest.fixture(scope="module")
def sim():
    from medaudit.agreement.judgments import validate_judgments
    from medaudit.simulate import simulate_paper002

    raw = simulate_paper002(rng=3, scale=0.03)
    return {p: validate_judgments(raw, uncertain=p, source="sim")[0]
            for p in ("exclude", "negative", "positive")}


def test_config_list_shorthand_and_validation():
    from medaudit.blocks.agreement import AgreementConfig

    a = AgreementConfig.model_validate({"robustness": ["subsample", "study_disjoint"]})
    assert a.robustness.analyses == ["subsample", "study_disjoint"] and a.robustness.fraction == 0.75
    full = AgreementConfig.model_validate({"robustness": {"analyses": ["hdcal_penalty_oracle"],
                                                          "penalty_grid": [0.5, 2]}})
    assert full.robustness.penalty_grid == [0.5, 2]
    for bad in ({"robustness": ["subsampel"]}, {"robustness": {"penalty_grid": [1, -1]}},
                {"robustness": {"matched_estimators": ["hdcal", "additive"]}},
                {"robustness": ["subsample", "subsample"]}, {"logistic_C": {"naive": 1}},
                {"logistic_C": {"hdcal": 0}}):
        with pytest.raises(ValidationError):
            AgreementConfig.model_validate(bad)


def test_variants_name_what_changed(sim):
    cfg = RobustnessConfig(analyses=["uncertain_labels", "one_study_per_patient",
                                     "leave_one_finding_out", "subsample", "study_disjoint",
                                     "hdcal_penalty_oracle", "binary_matched"],
                           control_draws=2, subsample_draws=2, penalty_grid=[0.1, 1.0])
    t = sim["exclude"]
    vs = variants(t, protocol="narrative", config=cfg, models=["medgemma", "chexagent"],
                  uncertain_tables=sim)
    got = [(v.analysis, v.parameter) for v in vs]
    findings = sorted(set(t["finding"]))
    assert got == [("uncertain_labels", f"uncertain={p}") for p in ("exclude", "negative", "positive")] + [
        ("one_study_per_patient", "institution=mimic,rule=first"),
        ("one_study_per_patient", "institution=mimic,rule=random"),
        ("one_study_per_patient", "institution=mimic,rule=size_matched_control,draw=0"),
        ("one_study_per_patient", "institution=mimic,rule=size_matched_control,draw=1")] + [
        ("leave_one_finding_out", f"finding={f}") for f in findings] + [
        ("subsample", "fraction=0.75,draw=0"), ("subsample", "fraction=0.75,draw=1"),
        ("study_disjoint", "split=study"), ("hdcal_penalty_oracle", "C=0.1|1"),
        ("binary_matched", "protocol=binary")]
    by = {(v.analysis, v.parameter): v for v in vs}
    first = by[("one_study_per_patient", "institution=mimic,rule=first")].table
    m = first[first["institution"] == "mimic"]
    assert m.groupby("patient_id")["study_id"].nunique().max() == 1
    n_kept = m["study_id"].nunique()
    ctrl = by[("one_study_per_patient", "institution=mimic,rule=size_matched_control,draw=0")]
    assert ctrl.table[ctrl.table["institution"] == "mimic"]["study_id"].nunique() == n_kept
    assert ctrl.seed == 42 and by[("subsample", "fraction=0.75,draw=1")].seed == 43
    assert by[("study_disjoint", "split=study")].split == "study"
    assert by[("hdcal_penalty_oracle", "C=0.1|1")].estimators[-2:] == ("hdcal[C=0.1]", "hdcal[C=1]")
    b = by[("binary_matched", "protocol=binary")]
    assert set(b.table["protocol"]) == {"binary"} and b.protocol == "binary"
    assert all(set(v.table["model"]) <= {"medgemma", "chexagent"} for v in vs)


def test_variants_refuse_what_cannot_run(sim):
    t = sim["exclude"]
    with pytest.raises(SchemaError, match="judgment_variants"):
        variants(t, protocol="narrative", config=RobustnessConfig(analyses=["uncertain_labels"]))
    no_repeats = t[t["institution"] != "mimic"]
    with pytest.raises(SchemaError, match="nothing to deduplicate"):
        variants(no_repeats, protocol="narrative",
                 config=RobustnessConfig(analyses=["one_study_per_patient"]))
    with pytest.raises(SchemaError, match="agreement.robustness.institutions names \\['nowhere'\\]"):
        variants(t, protocol="narrative",
                 config=RobustnessConfig(analyses=["one_study_per_patient"], institutions=["nowhere"]))
    with pytest.raises(SchemaError, match="primary protocol"):
        variants(t, protocol="binary", config=RobustnessConfig(analyses=["binary_matched"]))
    with pytest.raises(SchemaError, match="no 'chat' verdicts"):
        variants(t, protocol="narrative",
                 config=RobustnessConfig(analyses=["binary_matched"], matched_protocol="chat"))
