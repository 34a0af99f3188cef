"""The single-reader audit (M2.12): reader labels in the judgment table, kappa, risk tertiles.

Witness: a hand-worked table of eight studies, one finding and two models whose four
reliability cells have risks 0, 1/4, 1/2 and 3/4, so every count, the kappa (by hand and
with scikit-learn's ``cohen_kappa_score``) and each tertile's error rate are computed on
paper in the comments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from medaudit.agreement.judgments import NOT_AUDITED, validate_judgments
from medaudit.agreement.reader_audit import _tertile, reader_audit
from medaudit.exceptions import SchemaError

# reference of f per study; m1 / m2 verdicts; the reader's label ("" = not audited)
REF = {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 0, "s6": 0, "s7": 0, "s8": 1, "s9": 1}
M1 = {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 0, "s6": 0, "s7": 0, "s8": 0, "s9": ""}
M2 = {"s1": 1, "s2": 1, "s3": 0, "s4": 0, "s5": 1, "s6": 1, "s7": 0, "s8": 0, "s9": ""}
READER = {"s1": "present", "s3": "uncertain", "s5": "absent", "s8": "absent", "s9": "present"}


def raw() -> pd.DataFrame:
    rows = []
    for s, y in REF.items():
        for m, pred in (("m1", M1[s]), ("m2", M2[s])):
            rows.append({"study_id": s, "patient_id": f"p-{s}", "institution": "A", "model": m,
                         "protocol": "narrative", "finding": "f", "prediction": pred,
                         "reference": y, "reader_label": READER.get(s, "")})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def evaluable():
    # s9 is audited but unparsed for both models: it has no evaluable record
    t, rep = validate_judgments(raw(), min_parsed_findings=1)
    return t, rep


def test_reader_labels_are_coded_and_counted(evaluable):
    t, rep = evaluable
    codes = t.drop_duplicates("study_id").set_index("study_id")["reader_label"].to_dict()
    assert codes == {"s1": 1, "s2": NOT_AUDITED, "s3": -1, "s4": NOT_AUDITED, "s5": 0,
                     "s6": NOT_AUDITED, "s7": NOT_AUDITED, "s8": 0}
    # before any filter: five audited pairs in five studies, one uncertain
    assert rep.reader_audit == {"annotations": 5, "studies": 5, "uncertain": 1}
    assert rep.to_dict()["reader_audit"] == rep.reader_audit


def test_reader_label_errors_name_rows():
    bad = raw()
    bad.loc[0, "reader_label"] = "absent"  # s1: m1 row says absent, m2 row present
    with pytest.raises(SchemaError, match="contradictory reader labels"):
        validate_judgments(bad, min_parsed_findings=1)
    bad = raw()
    bad.loc[3, "reader_label"] = "maybe"
    with pytest.raises(SchemaError, match="reader_label"):
        validate_judgments(bad, min_parsed_findings=1)


def test_kappa_and_tertiles_by_hand(evaluable):
    t, _ = evaluable
    r = reader_audit(t, protocol="narrative")
    # audited pairs with a record: s1, s3, s5, s8; definite: s1, s5, s8
    assert (r.n_pairs_evaluable, r.n_pairs) == (4, 3)
    # reader [1, 0, 0] vs reference [1, 0, 1]: p_o = 2/3, p_e = 1/3*2/3 + 2/3*1/3 = 4/9,
    # kappa = (2/3 - 4/9) / (5/9) = 0.4
    assert r.raw_agreement == pytest.approx(2 / 3) and r.kappa == pytest.approx(0.4)
    assert r.kappa == pytest.approx(cohen_kappa_score([1, 0, 0], [1, 0, 1]))
    # cells over every evaluable row: m1-present {s1..s4} all right -> risk 0; m1-absent
    # {s5, s6, s7 right, s8 wrong} -> 1/4; m2-present {s1, s2 right, s5, s6 wrong} -> 1/2;
    # m2-absent {s3, s4, s8 wrong, s7 right} -> 3/4.  F = 1/4, 1/2, 3/4, 1 -> bottom {m1p},
    # middle {m1a}, top {m2p, m2a}.  Records (8, 6 definite): s1-m1 bottom ok; s5-m1, s8-m1
    # middle ok; s1-m2 top ok, s5-m2 top error (present vs absent), s8-m2 top ok.
    assert (r.n_records, r.n_records_definite) == (8, 6)
    tert = r.tertiles.set_index("tertile")
    assert tert["n_records"].tolist() == [1, 2, 3]
    assert tert["n_errors"].tolist() == [0, 0, 1]
    np.testing.assert_allclose(tert["error_rate"].to_numpy(), [0.0, 0.0, 1 / 3])
    assert tert["n_studies"].tolist() == [1, 2, 3] and tert["n_cells"].tolist() == [1, 1, 2]
    np.testing.assert_allclose(tert[["risk_low", "risk_high"]].to_numpy(),
                               [[0, 0], [0.25, 0.25], [0.5, 0.75]])
    # m2 only: two cells, F = 1/2 (m2p, risk 1/2) and 1 (m2a): middle and top, bottom empty
    r2 = reader_audit(t, protocol="narrative", models=["m2"])
    t2 = r2.tertiles.set_index("tertile")
    assert r2.n_records == 4 and t2["n_records"].tolist() == [0, 2, 1]
    assert t2["n_errors"].tolist() == [0, 1, 0] and np.isnan(t2.loc["bottom", "error_rate"])


def test_tertiles_keep_ties_together():
    # F = 2/6, 2/6, 3/6, 1, 1, 1 -> ceil(3F) = 1, 1, 2, 3, 3, 3
    assert _tertile(np.array([0.3, 0.1, 0.1, 0.2, 0.3, 0.3])).tolist() == [2, 0, 0, 1, 2, 2]
    assert _tertile(np.array([0.5, 0.5])).tolist() == [2, 2]
    assert _tertile(np.array([0.0, 1.0, 2.0])).tolist() == [0, 1, 2]


def test_reader_audit_refuses_tables_without_it(evaluable):
    t, _ = evaluable
    with pytest.raises(SchemaError, match="reader_label"):
        reader_audit(t.drop(columns="reader_label"), protocol="narrative")
    with pytest.raises(SchemaError, match="no audited"):
        reader_audit(t, protocol="binary")
