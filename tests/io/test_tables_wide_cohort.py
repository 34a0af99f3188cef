"""Wide prediction files: the cohort from a column, declared kept/ignored columns, messages about the file.

Witness for the reading: the long table built by hand with ``pandas.melt`` from the same frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from medaudit.audit.spec import AuditSpec, WideScoresSpec
from medaudit.exceptions import SchemaError
from medaudit.io.tables import read_wide


def _wide(n: int = 12, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    label = np.tile([1, 0, 0], n // 3)
    return pd.DataFrame({
        "image_id": [f"{i:03d}" for i in range(n)],
        "hospital": np.repeat(["hospital_a", "hospital_b"], n // 2),
        "label": label,
        "sex": rng.choice(["F", "M"], n),
        "densenet": np.round(rng.uniform(size=n), 6),
        "resnet": np.round(rng.uniform(size=n), 6),
    })


def _by_hand(df: pd.DataFrame, keep=()) -> pd.DataFrame:
    """The long table, by pandas.melt (model columns in file order, rows in file order)."""
    long = df.melt(id_vars=["image_id", "hospital", "label", *keep], value_vars=["densenet", "resnet"],
                   var_name="model", value_name="score")
    long = long.rename(columns={"hospital": "cohort"}).assign(prompt="none")
    return long[["image_id", "cohort", "model", "prompt", "score", "label", *keep]]


def _compare(got: pd.DataFrame, want: pd.DataFrame) -> None:
    key = ["model", "cohort", "image_id"]
    got = got.sort_values(key, kind="stable").reset_index(drop=True)
    want = want.sort_values(key, kind="stable").reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_cohort_column_matches_melt_by_hand(tmp_path):
    df = _wide()
    p = tmp_path / "preds.csv"
    df.to_csv(p, index=False)
    w = WideScoresSpec(path="preds.csv", cohort_column="hospital", keep_columns=["sex"])
    long = read_wide(p, w)
    _compare(long, _by_hand(df, keep=["sex"]))
    assert long["image_id"].iloc[0] == "000"  # ids stay text


def test_cohort_column_is_text_and_parquet_reads_the_same(tmp_path):
    df = _wide().assign(hospital=np.repeat(["001", "002"], 6))  # cohort names that look like numbers
    p = tmp_path / "preds.parquet"
    df.to_parquet(p, index=False)
    long = read_wide(p, WideScoresSpec(path="p", cohort_column="hospital", ignore_columns=["sex"]))
    _compare(long, _by_hand(df))
    assert sorted(long["cohort"].unique()) == ["001", "002"]


def test_ignored_columns_are_left_out_and_nothing_else(tmp_path):
    df = _wide().assign(note="free text")
    p = tmp_path / "w.csv"
    df.to_csv(p, index=False)
    long = read_wide(p, WideScoresSpec(path="w.csv", cohort_column="hospital",
                                       ignore_columns=["note", "sex"]))
    assert "note" not in long.columns and "sex" not in long.columns
    assert sorted(long["model"].unique()) == ["densenet", "resnet"]


def test_a_column_of_text_taken_for_a_model_is_described_in_the_users_terms(tmp_path):
    # issue 16 item 8: a wide file with an extra column (the hospital) and no cohort_column
    df = _wide().drop(columns="sex")
    p = tmp_path / "preds.csv"
    df.to_csv(p, index=False)
    with pytest.raises(SchemaError) as e:
        read_wide(p, WideScoresSpec(path="preds.csv", cohort="all"))
    msg = str(e.value)
    assert "\n" not in msg
    assert str(p) in msg and "column 'hospital'" in msg
    assert "'hospital_a' on line 2 (and 11 more row(s))" in msg  # line 1 is the header
    assert "scores of model 'hospital'" in msg and "(?P<model>.+)" in msg
    assert "cohort_column: hospital" in msg and "keep_columns" in msg and "ignore_columns" in msg
    assert "row 0" not in msg  # nothing about an internal table


def test_an_empty_score_cell_names_its_line(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("image_id,label,a,b\n1,1,0.9,0.8\n2,0,,0.4\n")
    with pytest.raises(SchemaError, match=r"column 'a' .* has an empty cell on line 3 where a finite "
                                          r"number belongs; every image needs a finite score"):
        read_wide(p, WideScoresSpec(path="w.csv", cohort="c"))


def test_unmatched_columns_name_the_file_the_pattern_and_what_matched(tmp_path):
    p = tmp_path / "w.csv"
    pd.DataFrame({"stem": ["a"], "label": [0], "s42_X": [0.1], "notes": ["x"]}).to_csv(p, index=False)
    w = WideScoresSpec(path="w.csv", cohort="c", id_column="stem",
                       column_pattern=r"s(?P<seed>\d+)_(?P<model>\w+)")
    with pytest.raises(SchemaError) as e:
        read_wide(p, w)
    msg = str(e.value)
    assert msg.startswith(f"{str(p)!r}: column(s) ['notes'] do not match column_pattern ")
    assert "the score columns it matched are ['s42_X']" in msg
    assert "id_column 'stem'" in msg and "label_column 'label'" in msg
    assert "keep_columns" in msg and "ignore_columns" in msg


@pytest.mark.parametrize("body, match", [
    ("image_id,hospital,label,a\n1,h1,1,0.5\n2,,0,0.5\n", r"cohort_column 'hospital' is empty at an empty "
                                                           r"cell on line 3"),
    ("image_id,hospital,label,a\n1,h1,1,0.5\n1,h1,0,0.5\n", r"image '1' \(id_column 'image_id'\) appears "
                                                            r"more than once for one cohort \(line 2 and "
                                                            r"line 3\)"),
    ("image_id,hospital,label,a\n1,h1,1,0.5\n2,h1,yes,0.5\n", r"label_column 'label' must be 0 or 1 "
                                                              r"\(1 = positive\); it has 'yes' on line 3"),
    ("image_id,hospital,label,a\n1,h1,1,0.5\n,h1,0,0.5\n", r"id_column 'image_id' is empty at an empty cell "
                                                           r"on line 3"),
])
def test_cell_problems_name_the_line(tmp_path, body, match):
    p = tmp_path / "w.csv"
    p.write_text(body)
    with pytest.raises(SchemaError, match=match):
        read_wide(p, WideScoresSpec(path="w.csv", cohort_column="hospital"))


def test_same_image_id_in_two_cohorts_is_two_images(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("image_id,hospital,label,a\n1,h1,1,0.5\n1,h2,0,0.25\n")
    long = read_wide(p, WideScoresSpec(path="w.csv", cohort_column="hospital"))
    assert long[["image_id", "cohort", "score"]].values.tolist() == [["1", "h1", 0.5], ["1", "h2", 0.25]]


def test_parquet_problems_name_the_row(tmp_path):
    p = tmp_path / "w.parquet"
    pd.DataFrame({"image_id": ["1", "2"], "label": [1, 0], "a": ["0.5", "oops"]}).to_parquet(p)
    with pytest.raises(SchemaError, match=r"'oops' on row 2 where"):
        read_wide(p, WideScoresSpec(path="w.parquet", cohort="c"))


@pytest.mark.parametrize("entry, match", [
    ({"path": "w.csv"}, r"give exactly one of `cohort:` .* got neither"),
    ({"path": "w.csv", "cohort": "c", "cohort_column": "h"}, r"give exactly one of .* got both"),
    ({"path": "w.csv", "cohort_column": "label"}, r"column 'label' is named twice \(label_column and "
                                                  r"cohort_column\)"),
    ({"path": "w.csv", "cohort": "c", "keep_columns": ["sex"], "ignore_columns": ["sex"]},
     r"column 'sex' is named twice \(keep_columns and ignore_columns\)"),
    ({"path": "w.csv", "cohort": "c", "keep_columns": ["model"]}, r"keep_columns \['model'\] would replace"),
    ({"path": "w.csv", "cohort": "c", "column_pattern": r"s(?P<seed>\d+)_\w+"},
     r"needs a named group 'model'"),
    ({"path": "w.csv", "cohort": "c", "column_pattern": "s(?P<model>"}, r"not a valid regular expression"),
])
def test_entry_is_checked_when_the_spec_is_read(entry, match):
    with pytest.raises(ValidationError, match=match):
        WideScoresSpec.model_validate(entry)


def test_misspelt_key_inside_an_entry_suggests_the_entry_key():
    from medaudit.io.specfile import validate_model

    raw = {"name": "x", "scores_wide": [{"path": "w.csv", "cohort_colum": "h"}], "cohorts": {"h1": {}}}
    with pytest.raises(SchemaError, match=r"scores_wide\.0\.cohort_colum: unknown key; did you mean "
                                          r"'cohort_column'\?"):
        validate_model(raw, AuditSpec, source="spec.yaml", what="audit spec")


def _spec(tmp_path, df, **entry):
    import yaml

    df.to_csv(tmp_path / "preds.csv", index=False)
    spec = {"name": "wide", "scores_wide": [{"path": "preds.csv", **entry}],
            "cohorts": {"hospital_a": {}, "hospital_b": {}}, "blocks": ["discrimination"],
            "n_resamples": 50}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_audit_of_a_wide_file_with_a_cohort_column(tmp_path):
    from sklearn.metrics import roc_auc_score

    from medaudit.audit.context import build_context
    from medaudit.audit.spec import load_spec

    df = _wide(n=30, seed=3)
    spec, base = load_spec(_spec(tmp_path, df, cohort_column="hospital", keep_columns=["sex"]))
    loaded = build_context(spec, base)
    assert loaded.inputs["scores_wide"][0]["cohort"] == "per row: column hospital"
    t = loaded.context.scores
    for (cohort, model), g in t.groupby(["cohort", "model"]):
        raw = df[df.hospital == cohort]
        assert g["score"].tolist() == raw[model].tolist()
        assert roc_auc_score(g["label"], g["score"]) == roc_auc_score(raw["label"], raw[model])
    assert "sex" in t.columns


def test_wide_validation_errors_name_the_prediction_file(tmp_path):
    from medaudit.audit.context import build_context
    from medaudit.audit.spec import load_spec

    df = _wide().assign(densenet=lambda d: d.densenet * 4 - 2)  # logits, spec says probabilities
    spec, base = load_spec(_spec(tmp_path, df, cohort_column="hospital", ignore_columns=["sex"]))
    with pytest.raises(SchemaError) as e:
        build_context(spec, base)
    msg = str(e.value)
    assert msg.startswith("prediction file") and "preds.csv" in msg.split(":")[0]
    assert "column 'score' must be probabilities" in msg and "simulated" not in msg
