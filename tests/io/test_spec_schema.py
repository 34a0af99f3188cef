"""Bad input gets a clear error and no output: the spec, the score table, wide files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from medaudit.audit.spec import AuditSpec, check_spec_against_table, load_spec
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from medaudit.io.tables import read_wide
from medaudit.simulate import simulate_paper000

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "paper000_simulated.yaml"


@pytest.fixture(scope="module")
def table():
    return validate_score_table(pd.DataFrame(simulate_paper000(scale=0.03)["table"]))


def _spec_dict():
    return yaml.safe_load(EXAMPLE.read_text())


def _write(tmp_path, data) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return p


def test_example_spec_is_valid():
    spec, base = load_spec(EXAMPLE)
    assert spec.simulate == "paper000" and base == EXAMPLE.parent


def test_malformed_yaml(tmp_path):
    with pytest.raises(SchemaError, match="malformed YAML"):
        load_spec(_write(tmp_path, "name: x\ncohorts: [a, b\n"))


def test_spec_not_a_mapping(tmp_path):
    with pytest.raises(SchemaError, match="must be a YAML mapping"):
        load_spec(_write(tmp_path, "- a\n- b\n"))


def test_unknown_key_suggests_closest(tmp_path):
    d = _spec_dict()
    d["n_resample"] = d.pop("n_resamples")
    with pytest.raises(SchemaError, match="n_resample: unknown key; did you mean 'n_resamples'"):
        load_spec(_write(tmp_path, d))


def test_unknown_nested_key(tmp_path):
    d = _spec_dict()
    d["transport"][0]["target"] = 0.9
    with pytest.raises(SchemaError, match=r"transport\.0\.target: unknown key; did you mean"):
        load_spec(_write(tmp_path, d))


def test_unknown_block(tmp_path):
    d = _spec_dict()
    d["blocks"] = ["discrimination", "spectrun"]
    with pytest.raises(SchemaError, match="blocks.1"):
        load_spec(_write(tmp_path, d))


@pytest.mark.parametrize("key, value, want", [
    ("blocks", "discrimination", "blocks: Input should be a valid list; got 'discrimination': "
                                 "write a list, e.g. [discrimination]"),
    ("subgroups", "sex", "subgroups: Input should be a valid list; got 'sex': write a list, e.g. "
                         "[sex]"),
    ("cohorts", "montgomery", "cohorts: Input should be a valid dictionary; got 'montgomery': "
                              "write a mapping (key: value lines under it)"),
])
def test_scalar_where_a_list_or_mapping_goes_says_how_to_write_it(tmp_path, key, value, want):
    # probe finding: `subgroups: sex` got pydantic's "Input should be a valid list" alone
    d = _spec_dict()
    d[key] = value
    with pytest.raises(SchemaError) as info:
        load_spec(_write(tmp_path, d))
    assert want in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("value", [0.0, 1.0, 1.5, -0.1])
def test_prevalence_outside_unit_interval(tmp_path, value):
    d = _spec_dict()
    d["prevalence"][0]["grid"] = [0.1, value]
    with pytest.raises(SchemaError, match="strictly between 0 and 1"):
        load_spec(_write(tmp_path, d))


def test_primary_prevalence_must_be_in_grid(tmp_path):
    d = _spec_dict()
    d["prevalence"][0]["primary"] = 0.3
    with pytest.raises(SchemaError, match="must be in grid"):
        load_spec(_write(tmp_path, d))


def test_exactly_one_input(tmp_path):
    d = _spec_dict()
    d["scores"] = "x.csv"
    with pytest.raises(SchemaError, match="exactly one of"):
        load_spec(_write(tmp_path, d))


def test_missing_spec_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_spec(tmp_path / "nope.yaml")


def _spec(**changes) -> AuditSpec:
    d = _spec_dict()
    d.update(changes)
    return AuditSpec.model_validate(d)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"primary_prompt": "clinicl"}, "unknown prompt 'clinicl' \\(did you mean 'clinical'\\?\\)"),
        ({"cohorts": {"montgomery": {}, "shenzen": {}}}, "unknown cohort 'shenzen'"),
        ({"models": [{"name": "sim-medsiglp"}]}, "unknown model 'sim-medsiglp'"),
        ({"spectrum": [{"cohort": "tbx11k-val", "groups": ["healthy", "sik"]}]},
         "unknown negative group 'sik'"),
        ({"transport": [{"source": "tbx11k-train", "targets": ["vindrr"]}]}, "unknown cohort 'vindrr'"),
    ],
    ids=["prompt", "cohort", "model", "group", "transport-target"],
)
def test_spec_names_checked_against_table(table, changes, message):
    with pytest.raises(SchemaError, match=message):
        check_spec_against_table(_spec(**changes), table, source="t")


def test_cohort_without_both_classes(table):
    t = table[~((table.cohort == "montgomery") & (table.label == 1))]
    with pytest.raises(SchemaError, match="cohort 'montgomery' has only label 0") as e:
        check_spec_against_table(_spec(), t, source="t")
    assert "leave it out of `cohorts:` to audit the others" in str(e.value)  # and what to do


# --------------------------------------------------------------------- score table
def _raw(table):
    return table.copy()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda t: t.drop(columns=["cohort"]), r"missing column\(s\) \['cohort'\]"),
        (lambda t: t.iloc[:0], "no rows"),
        (lambda t: pd.concat([t, t.iloc[[5]]]), r"repeat a \(model, prompt, cohort, image_id\) key"),
        (lambda t: t.assign(label=np.where(t.index == 7, 2, t.label)), r"'label' must be 0 or 1.*row 8"),
        (lambda t: t.assign(label=np.where(t.index == 3, "yes", t.label.astype(str))), "row 4 has 'yes'"),
        (lambda t: t.assign(score=np.where(t.index == 4, 2.8, t.score)), r"probabilities in \[0, 1\].*2\.8"),
        (lambda t: t.assign(score=np.where(t.index == 2, np.nan, t.score)),
         r"'score' must be finite.*row 3 is not"),
        (lambda t: t.assign(negative_group=np.where(t.label == 1, "healthy", t.negative_group)),
         "must be empty for positives"),
        (lambda t: t.assign(model=np.where(t.index == 9, None, t.model)), r"'model' is empty at row 10"),
        (lambda t: t.assign(label=np.where((t.image_id == t.image_id.iloc[0]) & (t.prompt == "photo"),
                                           1 - t.label, t.label)), "different \\['label'"),
    ],
    ids=["missing-column", "empty", "duplicate", "label-2", "label-text", "prob-2.8", "nan",
         "positive-in-group", "empty-model", "label-conflict"],
)
def test_score_table_errors(table, mutate, message):
    """Row numbers in messages are 1-based and labelled "row" (in-memory tables)."""
    bad = mutate(_raw(table)).reset_index(drop=True)
    with pytest.raises(SchemaError, match=message):
        validate_score_table(bad, source="scores.csv")


def test_error_names_the_source(table):
    with pytest.raises(SchemaError, match="^my/file.parquet: "):
        validate_score_table(table.drop(columns=["score"]), source="my/file.parquet")


def test_logits_allowed_when_declared(table):
    t = table.assign(score=table.score * 10 - 5)
    out = validate_score_table(t, probabilities=False)
    assert out.score.max() > 1


# ------------------------------------------------------------------------ wide files
class _W:
    def __init__(self, **kw):
        self.id_column, self.label_column = "stem", "label"
        self.column_pattern, self.model_prefix, self.prompt = r"s(?P<seed>\d+)_(?P<model>\w+)", "", "none"
        self.cohort = "c"
        self.__dict__.update(kw)


def test_read_wide(tmp_path):
    p = tmp_path / "w.csv"
    pd.DataFrame({"stem": ["a", "b"], "label": [0, 1], "s42_X": [0.1, 0.9],
                  "s43_X": [0.2, 0.8]}).to_csv(p, index=False)
    long = read_wide(p, _W())
    assert set(long.seed) == {42, 43} and set(long.model) == {"X"} and len(long) == 4


def test_read_wide_refuses_unmatched_columns(tmp_path):
    p = tmp_path / "w.csv"
    pd.DataFrame({"stem": ["a"], "label": [0], "s42_X": [0.1], "notes": ["x"]}).to_csv(p, index=False)
    with pytest.raises(SchemaError, match=r"column\(s\) \['notes'\] do not match"):
        read_wide(p, _W())


def test_read_wide_missing_id_column(tmp_path):
    p = tmp_path / "w.csv"
    pd.DataFrame({"id": ["a"], "label": [0], "s42_X": [0.1]}).to_csv(p, index=False)
    with pytest.raises(SchemaError, match="column 'stem' not found"):
        read_wide(p, _W())


def test_separator_in_names_is_refused(table):
    bad = table.assign(model=np.where(table.index == 0, "a|b", table.model))
    with pytest.raises(SchemaError, match=r"'model' may not contain '\|'.*row 1"):
        validate_score_table(bad)


def test_logit_advice_names_the_real_key(table):
    with pytest.raises(SchemaError, match="`score_scale: logits`"):
        validate_score_table(table.assign(score=table.score * 10))


def test_one_class_cohorts_are_not_suggested_as_the_others(table):
    """With every cohort one-class, naming the others as the way out sends the user to a
    cohort that fails the same way (probe finding): the advice is to add the other class."""
    t = table[table.label == 0]
    with pytest.raises(SchemaError, match="has only label 0") as e:
        check_spec_against_table(_spec(), t, source="t")
    assert "add the images of the other class" in str(e.value)
    assert "to audit the others" not in str(e.value)


def test_an_empty_block_list_is_refused_not_run(tmp_path):
    # blocks: [] would "succeed" with 0 tables and an empty report
    d = _spec_dict()
    d["blocks"] = []
    with pytest.raises(SchemaError, match=r"blocks: \[\] selects no block to run"):
        load_spec(_write(tmp_path, d))
    d["blocks"] = ["discrimination"]
    assert load_spec(_write(tmp_path, d))[0].blocks == ["discrimination"]
