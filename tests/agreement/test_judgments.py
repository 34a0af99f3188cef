"""JudgmentTable contract and the evaluable-set filters (paper 002, M2.1-M2.3).

Witnesses: filter counts worked out by hand on small tables; cells against a loop written
from the definition; invariance of the filters to row order (hypothesis); sha256 against
hashlib.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medaudit.agreement.judgments import cells, load_judgments, validate_judgments
from medaudit.agreement.spec import JudgmentsSpec
from medaudit.audit.spec import AuditSpec
from medaudit.exceptions import MedauditError, SchemaError


def _raw(rows):
    cols = ["study_id", "patient_id", "institution", "model", "protocol", "finding",
            "prediction", "reference"]
    return pd.DataFrame(rows, columns=cols)


def _hand_table() -> pd.DataFrame:
    """Six findings per study run; counts below are worked out by hand.

    s1/m: all six parsed; references 1, 0, -1, empty, 1, 0.
    s2/m: two unparseable (4 parsed -> evaluable at 4); references all 0.
    s3/m: three unparseable (3 parsed -> not evaluable); its 3 parsed rows go.
    """
    f = ["a", "b", "c", "d", "e", "f"]
    rows = []
    for fi, (p, r) in enumerate(zip(["present", "absent", "YES", "no", "0", "1"],
                                    [1, 0, -1, None, 1, 0], strict=True)):
        rows.append(["s1", "p1", "A", "m", "narrative", f[fi], p, r])
    for fi, p in enumerate(["", "unparseable", "present", "absent", "absent", "absent"]):
        rows.append(["s2", "p2", "A", "m", "narrative", f[fi], p, 0])
    for fi, p in enumerate(["Unparsed", None, "", "present", "present", "absent"]):
        rows.append(["s3", "p3", "A", "m", "narrative", f[fi], p, 1])
    return _raw(rows)


def test_filters_counted_in_order_by_hand():
    t, rep = validate_judgments(_hand_table(), uncertain="exclude", min_parsed_findings=4)
    assert rep.n_input_rows == 18
    s = {x.name: x for x in rep.steps}
    assert [x.name for x in rep.steps] == ["parse", "evaluable_study", "reference_eligible",
                                           "uncertain"]
    # 2 (s2) + 3 (s3) unparseable
    assert (s["parse"].rows_before, s["parse"].rows_removed, s["parse"].rows_after) == (18, 5, 13)
    # s3 keeps 3 parsed < 4: its 3 parsed rows go, 1 run
    assert (s["evaluable_study"].rows_removed, s["evaluable_study"].studies_removed) == (3, 1)
    assert s["reference_eligible"].rows_removed == 1  # s1/d unmentioned
    assert s["uncertain"].rows_removed == 1 and s["uncertain"].rows_mapped == 0  # s1/c
    assert rep.n_evaluable_rows == len(t) == 8
    s1 = t[t["study_id"] == "s1"].set_index("finding")
    assert s1["prediction"].to_dict() == {"a": 1, "b": 0, "e": 0, "f": 1}
    assert s1["correct"].to_dict() == {"a": 1, "b": 1, "e": 0, "f": 0}
    assert s1["direction"].to_dict() == {"a": "present", "b": "absent", "e": "absent",
                                         "f": "present"}
    assert t["prediction"].dtype == np.int64 and t["reference"].dtype == np.int64
    assert t["correct"].dtype == np.int64
    # every original column survives
    assert set(_hand_table().columns) <= set(t.columns)


@pytest.mark.parametrize("policy, ref_c, n_rows", [("negative", 0, 9), ("positive", 1, 9)])
def test_uncertain_policy_maps_instead_of_dropping(policy, ref_c, n_rows):
    t, rep = validate_judgments(_hand_table(), uncertain=policy)
    assert len(t) == n_rows
    assert rep.step("uncertain").rows_mapped == 1 and rep.step("uncertain").rows_removed == 0
    row = t[(t["study_id"] == "s1") & (t["finding"] == "c")].iloc[0]
    assert row["reference"] == ref_c and row["uncertain_mapped"] == 1
    assert row["correct"] == int(row["prediction"] == ref_c)  # prediction YES -> 1


def test_min_parsed_findings_threshold():
    # at 3, s3 becomes evaluable: its 3 parsed rows all have reference 1
    t, rep = validate_judgments(_hand_table(), min_parsed_findings=3)
    assert rep.step("evaluable_study").rows_removed == 0
    assert (t["study_id"] == "s3").sum() == 3
    # at 5, s2 (4 parsed) goes too, and finding d is left with s1/d only, unmentioned
    with pytest.raises(SchemaError, match=r"finding 'd' at institution 'A'.*'parse': 3, "
                                          r"'evaluable_study': 1, 'reference_eligible': 0"):
        validate_judgments(_hand_table(), min_parsed_findings=5, uncertain="negative")


def test_report_by_model_and_to_dict():
    _, rep = validate_judgments(_hand_table())
    (b,) = rep.by_model
    assert (b["rows"], b["parsed"], b["evaluable_study"], b["eligible"]) == (18, 13, 10, 8)
    assert b["studies_evaluable"] == 2
    d = rep.to_dict()
    assert d["steps"][0]["name"] == "parse" and d["uncertain"] == "exclude"


@pytest.mark.parametrize("bad, col", [("maybe", "prediction"), (2, "prediction"),
                                      (0.5, "prediction")])
def test_unknown_prediction_value_names_the_row(bad, col):
    raw = _hand_table().astype({col: object})
    raw.loc[7, col] = bad
    with pytest.raises(SchemaError, match=r"column 'prediction'.*at row 8;"):
        validate_judgments(raw)


@pytest.mark.parametrize("bad", [2, "yes", "-2"])
def test_unknown_reference_value_names_the_row(bad):
    raw = _hand_table().astype({"reference": object})
    raw.loc[4, "reference"] = bad
    with pytest.raises(SchemaError, match=r"column 'reference'.*at row 5;"):
        validate_judgments(raw)


def test_duplicate_key_is_an_error_naming_rows():
    raw = pd.concat([_hand_table(), _hand_table().iloc[[2]]], ignore_index=True)
    with pytest.raises(SchemaError, match=r"repeat a \(study_id, model, protocol, finding\) key "
                                          r"at rows 3, 19,"):
        validate_judgments(raw)


def test_unknown_protocol_is_an_error():
    raw = _hand_table()
    raw.loc[3, "protocol"] = "chat"
    with pytest.raises(SchemaError, match=r"unknown protocol\(s\) \['chat'\] at row 4;"):
        validate_judgments(raw)
    t, _ = validate_judgments(raw.assign(protocol="chat"), protocols=["chat"])
    assert set(t["protocol"]) == {"chat"}


def test_contradictory_study_rows_are_errors():
    raw = _hand_table()
    raw.loc[0, "institution"] = "B"
    with pytest.raises(SchemaError, match="study 's1' has contradictory rows.*'institution'"):
        validate_judgments(raw)
    raw = _hand_table()
    raw.loc[1, "patient_id"] = "p9"
    with pytest.raises(SchemaError, match="study 's1' has contradictory rows.*'patient_id'"):
        validate_judgments(raw)


def test_contradictory_reference_needs_reference_by_model():
    a = _hand_table()
    b = a.assign(model="m2")
    b.loc[b["finding"] == "a", "reference"] = 0  # s1/a, s2/a, s3/a differ from model m
    raw = pd.concat([a, b], ignore_index=True)
    with pytest.raises(SchemaError, match="contradictory reference labels"):
        validate_judgments(raw)
    t, _ = validate_judgments(raw, reference_by_model=True)
    assert set(t["model"]) == {"m", "m2"}


def test_finding_without_eligible_reference_at_an_institution_is_an_error():
    raw = _hand_table()
    raw.loc[raw["finding"] == "f", "reference"] = None  # f unmentioned everywhere at A
    with pytest.raises(SchemaError, match=r"finding 'f' at institution 'A' has no eligible"):
        validate_judgments(raw)


def test_missing_column_and_empty_text_and_bad_options():
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['reference'\]"):
        validate_judgments(_hand_table().drop(columns="reference"))
    raw = _hand_table()
    raw.loc[5, "patient_id"] = " "
    with pytest.raises(SchemaError, match=r"column 'patient_id' is empty at row 6;"):
        validate_judgments(raw)
    # a table read from a file, then reordered: its file lines no longer hold, so the row is
    # named by position and index (review finding: the reset index passed for "as read")
    raw.attrs["first_line"] = 2  # as io.tables marks a table read with its header on line 1
    with pytest.raises(SchemaError, match=r"column 'patient_id' is empty at line 7;"):
        validate_judgments(raw)
    back = raw.iloc[::-1]
    with pytest.raises(SchemaError, match=r"column 'patient_id' is empty at row \d+ \(index 5\);"):
        validate_judgments(back)
    with pytest.raises(MedauditError, match="uncertain='drop' is not a valid option"):
        validate_judgments(_hand_table(), uncertain="drop")
    with pytest.raises(MedauditError, match="min_parsed_findings"):
        validate_judgments(_hand_table(), min_parsed_findings=0)
    with pytest.raises(SchemaError, match="no rows"):
        validate_judgments(_hand_table().iloc[:0])


def test_logits_optional_and_checked():
    raw = _hand_table()
    raw["logit_yes"] = np.linspace(-2, 2, len(raw))
    raw["logit_no"] = ""
    t, _ = validate_judgments(raw)
    assert t["logit_no"].isna().all() and np.isfinite(t["logit_yes"]).all()
    raw["logit_no"] = 0.0
    raw.loc[6, "logit_no"] = np.inf
    with pytest.raises(SchemaError, match=r"'logit_no' must be finite.*; inf at row 7\."):
        validate_judgments(raw)


def _random_raw(seed: int, n_studies: int = 20) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    rows = []
    for s in range(n_studies):
        inst = "AB"[s % 2]
        refs = g.choice(np.array([1, 0, -1, None], dtype=object), size=6, p=[.35, .45, .1, .1])
        for m in ("m1", "m2"):
            for f, r in zip("abcdef", refs, strict=True):
                p = g.choice(["present", "absent", "", "1", "0"], p=[.4, .4, .08, .06, .06])
                rows.append([f"s{s}", f"p{s // 3}", inst, m, "narrative", f, p, r])
    return _raw(rows)


def _slow_cells(t: pd.DataFrame) -> dict:
    out: dict = {}
    for r in t.itertuples():
        key = (r.model, r.institution, r.finding, "present" if r.prediction == 1 else "absent")
        n, k = out.get(key, (0, 0))
        out[key] = (n + 1, k + int(r.prediction == r.reference))
    return out


def test_cells_against_a_loop_from_the_definition():
    t, _ = validate_judgments(_random_raw(3, 30), min_parsed_findings=4, uncertain="negative")
    c = cells(t)
    got = {(r.model, r.institution, r.finding, r.direction): (r.n, r.k) for r in c.itertuples()}
    assert got == _slow_cells(t)
    assert c["n"].sum() == len(t) and c["k"].sum() == t["correct"].sum()


def test_cells_refuse_mixed_protocols():
    raw = pd.concat([_hand_table(), _hand_table().assign(protocol="binary")], ignore_index=True)
    t, _ = validate_judgments(raw)
    with pytest.raises(MedauditError, match="several protocols"):
        cells(t)
    c = cells(t, by=("model", "protocol", "institution", "finding", "direction"))
    assert set(c["protocol"]) == {"binary", "narrative"}


@settings(max_examples=40)
@given(seed=st.integers(0, 2**16), perm_seed=st.integers(0, 2**16),
       policy=st.sampled_from(["exclude", "negative", "positive"]))
def test_filters_do_not_depend_on_row_order(seed, perm_seed, policy):
    raw = _random_raw(seed)
    try:
        t1, r1 = validate_judgments(raw, uncertain=policy)
    except SchemaError as exc:  # a finding emptied at an institution: same for any order
        with pytest.raises(SchemaError, match="no eligible"):
            validate_judgments(raw.sample(frac=1, random_state=perm_seed), uncertain=policy)
        assert "no eligible" in str(exc)
        return
    t2, r2 = validate_judgments(raw.sample(frac=1, random_state=perm_seed), uncertain=policy)
    assert [s.to_dict() for s in r1.steps] == [s.to_dict() for s in r2.steps]
    key = ["study_id", "model", "finding"]
    a = t1.sort_values(key).reset_index(drop=True)
    b = t2.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**16))
def test_policies_are_consistent(seed):
    raw = _random_raw(seed)
    try:
        te, re_ = validate_judgments(raw, uncertain="exclude")
    except SchemaError:
        return
    tn, rn = validate_judgments(raw, uncertain="negative")
    tp, _ = validate_judgments(raw, uncertain="positive")
    n_unc = re_.step("uncertain").rows_removed
    assert len(tn) == len(tp) == len(te) + n_unc == rn.step("uncertain").rows_after
    assert rn.step("uncertain").rows_mapped == n_unc
    # mapped rows: negative -> correct iff predicted absent; positive -> iff predicted present
    mn, mp = tn[tn["uncertain_mapped"] == 1], tp[tp["uncertain_mapped"] == 1]
    assert (mn["correct"] == 1 - mn["prediction"]).all()
    assert (mp["correct"] == mp["prediction"]).all()


def _spec(**kw) -> JudgmentsSpec:
    return JudgmentsSpec.model_validate(kw)


def test_load_judgments_from_csv_records_sha256(tmp_path: Path):
    raw = _hand_table().rename(columns={"study_id": "Study"})
    path = tmp_path / "j.csv"
    raw.to_csv(path, index=False)
    t, prov = load_judgments(_spec(path="j.csv", columns={"Study": "study_id"}), tmp_path, seed=1)
    assert prov["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert prov["filters"]["n_evaluable_rows"] == len(t) == 8
    with pytest.raises(SchemaError, match="renames column"):
        load_judgments(_spec(path="j.csv", columns={"Nope": "study_id"}), tmp_path, seed=1)
    raw.to_parquet(tmp_path / "j.parquet")
    t2, _ = load_judgments(_spec(path="j.parquet", columns={"Study": "study_id"}), tmp_path, seed=1)
    pd.testing.assert_frame_equal(t, t2)


def test_load_judgments_simulated_passes_seed_and_scale(monkeypatch):
    seen = {}

    def fake(*, rng, scale, include_degenerate):
        seen.update(rng=rng, scale=scale, include_degenerate=include_degenerate)
        return _hand_table()

    import medaudit.simulate

    monkeypatch.setattr(medaudit.simulate, "simulate_paper002", fake)
    t, prov = load_judgments(_spec(simulate="paper002", simulate_scale=0.1, uncertain="positive"),
                             Path("."), seed=42)
    assert seen == {"rng": 42, "scale": 0.1, "include_degenerate": False}
    assert prov["generator_seed"] == 42 and prov["filters"]["uncertain"] == "positive"
    assert len(t) == 9


def test_specs():
    with pytest.raises(ValueError, match="exactly one of"):
        _spec()
    with pytest.raises(ValueError, match="exactly one of"):
        _spec(path="x.csv", simulate="paper002")
    s = AuditSpec.model_validate({"name": "j", "judgments": {"path": "x.csv"}})
    assert s.blocks == ["error_structure", "agreement"] and not s.has_scores
    from medaudit.blocks.error_structure import ErrorStructureConfig as ErrorStructureSpec

    with pytest.raises(ValueError, match="two different protocols"):
        ErrorStructureSpec(protocol_pair=["binary", "binary"])
    with pytest.raises(ValueError, match="alpha"):
        ErrorStructureSpec(alpha=1.5)


def test_fully_unparseable_run_is_removed_by_the_parse_step():
    extra = _raw([["s4", "p4", "A", "m", "narrative", f, "", 0] for f in "abcdef"])
    _, rep = validate_judgments(pd.concat([_hand_table(), extra], ignore_index=True))
    assert rep.step("parse").rows_removed == 5 + 6
    # s3 (3 parsed) is the only run the evaluable-study rule removes rows from
    assert rep.step("evaluable_study").studies_removed == 1
    assert rep.step("evaluable_study").rows_removed == 3


def _vlm_table():
    """A JudgmentTable built with the VLM adapter's own pieces, the way run_binary and
    run_narrative build theirs (parser verdicts, binary_verdicts, normalise_reference)."""
    vlm = pytest.importorskip("medaudit.adapters.vlm")
    reports = {"s1": "No acute cardiopulmonary process.",
               "s2": "Mild cardiomegaly. No pleural effusion or pneumothorax. No edema. "
                     "No consolidation. Atelectasis at the left base.",
               "s3": "Possible atelectasis."}  # too few findings parsed: not evaluable
    refs = {"s1": [0, 0, -1, None, 0, 0], "s2": [1, 1, 0, 0, 0, 0], "s3": [1, 0, 0, 0, 0, 0]}
    g = np.random.default_rng(0)
    rows = []
    for i, (sid, text) in enumerate(reports.items()):
        parsed = vlm.parse_report(text)
        ly, ln = g.normal(size=6), g.normal(size=6)
        binary = vlm.binary_verdicts(ly, ln)
        for j, f in enumerate(vlm.FINDINGS):
            common = {"study_id": sid, "patient_id": f"p{i}", "institution": "A" if i < 2 else "B",
                      "model": "medgemma", "finding": f,
                      "reference": vlm.normalise_reference(refs[sid][j])}
            rows.append({**common, "protocol": "narrative", "prediction": parsed.judgments[f],
                         "logit_yes": np.nan, "logit_no": np.nan})
            rows.append({**common, "protocol": "binary", "prediction": str(binary.prediction[j]),
                         "logit_yes": ly[j], "logit_no": ln[j]})
    return vlm, pd.DataFrame(rows, columns=list(vlm.JUDGMENT_COLUMNS))


def test_vlm_adapter_tables_are_accepted(tmp_path: Path):
    vlm, raw = _vlm_table()
    ev = vlm.evaluable_studies(raw)
    t, rep = validate_judgments(raw, min_parsed_findings=4)
    # the adapter and the filters agree on which (study, protocol) runs are evaluable
    kept = set(map(tuple, t[["study_id", "protocol"]].drop_duplicates().to_numpy()))
    assert kept == set(map(tuple, ev.loc[ev["evaluable"], ["study_id", "protocol"]].to_numpy()))
    assert rep.step("parse").rows_removed == int((raw["prediction"] == "unparsed").sum())
    assert rep.step("reference_eligible").rows_removed == 2  # s1 edema, narrative + binary
    assert rep.step("uncertain").rows_removed == 2  # s1 consolidation ('uncertain')
    b = t[t["protocol"] == "binary"]
    assert (b["prediction"] == (b["logit_yes"] > b["logit_no"]).astype(int)).all()
    assert t.loc[t["protocol"] == "narrative", "logit_yes"].isna().all()
    # the same table after a CSV round trip (references come back as 1/0/'uncertain'/'missing')
    raw.to_csv(tmp_path / "vlm.csv", index=False)
    t2, _ = load_judgments(_spec(path="vlm.csv"), tmp_path, seed=0)
    key = ["study_id", "protocol", "finding"]
    cols = ["prediction", "reference", "correct", "direction"]
    pd.testing.assert_frame_equal(t.sort_values(key)[cols].reset_index(drop=True),
                                  t2.sort_values(key)[cols].reset_index(drop=True))


def test_judgment_variants_read_once_validate_three_ways(tmp_path: Path):
    from medaudit.agreement.judgments import judgment_variants

    _hand_table().to_csv(tmp_path / "j.csv", index=False)
    v, prov = judgment_variants(_spec(path="j.csv", uncertain="exclude"), tmp_path, seed=0)
    assert set(v) == {"exclude", "negative", "positive"}
    # hand table: one uncertain row (s1/c, predicted YES) -> 8 rows excluded, 9 mapped
    assert (len(v["exclude"]), len(v["negative"]), len(v["positive"])) == (8, 9, 9)
    row = {p: v[p].query("study_id == 's1' and finding == 'c'") for p in ("negative", "positive")}
    assert (row["negative"]["correct"].item(), row["positive"]["correct"].item()) == (0, 1)
    assert prov["negative"]["steps"][3]["rows_mapped"] == 1


def test_a_model_none_of_whose_rows_can_be_read_is_said():
    # probe finding: a model whose every prediction was empty vanished from every table, with
    # only `parsed: 0` in the provenance
    t = _hand_table()
    silent = t[t["study_id"] == "s1"].assign(model="quiet", prediction="")
    with pytest.warns(UserWarning, match=r"hand: no judgment of model\(s\) 'quiet' \(6 rows\) could "
                                         r"be read as a verdict"):
        out, rep = validate_judgments(pd.concat([t, silent], ignore_index=True), source="hand",
                                      min_parsed_findings=1)
    assert "quiet" not in set(out["model"])
    assert [r["parsed"] for r in rep.by_model if r["model"] == "quiet"] == [0]


def test_a_judgment_file_is_named_by_its_lines(tmp_path):
    """Rows of a table read from a CSV file are named by the file's lines (line 1 is the
    header), as the score table's messages name them; a table in memory by its rows from 1."""
    from medaudit.io.tables import read_table

    raw = _hand_table().astype({"prediction": object})
    raw.loc[7, "prediction"] = "maybe"
    raw.to_csv(tmp_path / "j.csv", index=False)
    with pytest.raises(SchemaError, match=r"column 'prediction' has value\(s\) \['maybe'\] at line 9;"):
        validate_judgments(read_table(tmp_path / "j.csv"), source="j.csv")
    with pytest.raises(SchemaError, match=r"\['maybe'\] at row 8;"):
        validate_judgments(raw)
    # a table filtered after reading is no longer the file's lines (pandas keeps the attrs):
    # its rows are named, with the index label that df.loc reads
    read = read_table(tmp_path / "j.csv")
    with pytest.raises(SchemaError, match=r"\['maybe'\] at row 7;"):
        validate_judgments(read.iloc[1:], source="j.csv")
    with pytest.raises(SchemaError, match=r"\['maybe'\] at row 7;"):
        validate_judgments(read.iloc[1:].reset_index(drop=True), source="j.csv")
