"""Hostile-input probe, input side: every bad file gets one line naming the file, the line or
column and what to do; nothing is silently renamed, pooled or reinterpreted.

Witnesses: the raw bytes and header of each file as written here (the line a message names is
counted in the text the test writes), pyarrow for a Parquet file naming one column twice.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from medaudit.cli.main import main
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from medaudit.io.tables import read_table

FAST = ["--n-resamples", "50", "--n-permutations", "99", "--quiet"]
HEADER = "image_id,cohort,model,score,label"


def _rows(n: int = 12) -> list[str]:
    """Valid rows: two models on ``n`` images of one cohort, both classes."""
    rng = np.random.default_rng(0)
    return [f"i{i},site1,{m},{rng.uniform():.4f},{i % 2}" for i in range(n) for m in ("a", "b")]


def _write(path, header: str = HEADER, rows: list[str] | None = None) -> str:
    path.write_text("\n".join([header, *(_rows() if rows is None else rows)]) + "\n", encoding="utf-8")
    return str(path)


def _audit(tmp_path, csv: str, capsys) -> tuple[int, str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"scores: {csv}\nn_resamples: 50\nn_permutations: 99\n", encoding="utf-8")
    rc = main(["audit", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    return rc, err


# ----------------------------------------------------------------------- 1: near-miss headers
@pytest.mark.parametrize("bad, meant", [("Cohort", "cohort"), ("cohrot", "cohort"), ("Prompt", "prompt")])
def test_a_near_miss_of_cohort_or_prompt_is_refused_not_filled(tmp_path, capsys, bad, meant):
    header = HEADER.replace("cohort", bad) if meant == "cohort" else HEADER + f",{bad}"
    rows = _rows() if meant == "cohort" else [r + ",p1" for r in _rows()]
    csv = _write(tmp_path / "s.csv", header, rows)
    rc, err = _audit(tmp_path, csv, capsys)
    assert rc == 2 and f"column '{bad}' is not a ScoreTable column; did you mean '{meant}'?" in err
    assert not (tmp_path / "out").exists()
    # summarize and init read the table through the same check
    assert main(["summarize", csv, "--out", str(tmp_path / "o2"), *FAST]) == 2
    assert f"did you mean '{meant}'" in capsys.readouterr().err
    assert main(["init", csv, "--out", str(tmp_path / "i.yaml"), "--quiet"]) == 2
    assert f"did you mean '{meant}'" in capsys.readouterr().err


def test_a_wide_file_names_the_near_miss_of_a_declared_column(tmp_path):
    from medaudit.audit.spec import WideScoresSpec
    from medaudit.io.tables import read_wide

    p = tmp_path / "w.csv"
    p.write_text("Image_ID,label,a\n1,1,0.9\n2,0,0.2\n", encoding="utf-8")
    with pytest.raises(SchemaError, match=r"'image_id' not found \(id_column\); did you mean 'Image_ID'"):
        read_wide(p, WideScoresSpec(path="w.csv", cohort="c"))


# ----------------------------------------------------------------------- 2: duplicate headers
def test_a_repeated_header_is_refused_in_a_long_table(tmp_path, capsys):
    csv = _write(tmp_path / "dup.csv", HEADER + ",score", [r + ",0.5" for r in _rows()])
    rc, err = _audit(tmp_path, csv, capsys)
    assert rc == 2 and "duplicate column 'score' (header positions 4 and 6); rename one." in err
    assert main(["init", csv, "--out", str(tmp_path / "i.yaml"), "--quiet"]) == 2
    assert "duplicate column 'score'" in capsys.readouterr().err
    assert not (tmp_path / "i.yaml").exists()


def test_a_repeated_header_does_not_invent_a_wide_model(tmp_path, capsys):
    (tmp_path / "wd.csv").write_text("image_id,label,modelA,modelB,modelA\ni0,0,0.1,0.8,0.1\n"
                                     "i1,1,0.7,0.2,0.9\n", encoding="utf-8")
    spec = tmp_path / "wd.yaml"
    spec.write_text("scores_wide: [{path: wd.csv, cohort: c}]\nn_resamples: 50\nblocks: [discrimination]\n",
                    encoding="utf-8")
    assert main(["audit", str(spec), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "wd.csv" in err and "duplicate column 'modelA' (header positions 3 and 5); rename one." in err


def test_a_parquet_file_naming_a_column_twice_is_refused_in_those_words(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "d.parquet"
    pq.write_table(pa.table([pa.array(["1"]), pa.array([0.5]), pa.array([0.7])],
                            names=["image_id", "score", "score"]), p)
    with pytest.raises(SchemaError, match=r"duplicate column 'score' \(header positions 2 and 3\)"):
        read_table(p)


# ----------------------------------------------------------------------- 3: names
@pytest.mark.parametrize("col, value, what", [
    ("model", " a", "whitespace at the start or end"), ("model", "a ", "whitespace at the start or end"),
    ("cohort", "site1 ", "whitespace at the start or end"), ("model", '"mo\ndel"', "control character"),
    ("cohort", '"si\tte"', "control character"), ("image_id", '"i\r1"', "control character")])
def test_padded_names_and_control_characters_are_refused(tmp_path, col, value, what):
    rows = _rows()
    i = HEADER.split(",").index(col)
    cells = rows[4].split(",")
    cells[i] = value
    rows[4] = ",".join(cells)  # data row 4: line 6 of the file
    p = _write(tmp_path / "n.csv", rows=rows)
    shown = repr(value.strip('"'))
    with pytest.raises(SchemaError) as e:
        validate_score_table(read_table(p).assign(prompt="none"), source=p)
    msg = str(e.value)
    assert "\n" not in msg and f"column {col!r}" in msg and what in msg
    assert f"(line 6: {shown})" in msg and ("Remove" in msg)


def test_an_id_may_keep_its_spaces_and_a_cohort_its_bar(tmp_path):
    # an id is what the file says (" 007" is not "007"); '|' in a cohort is never a separator
    rows = [r.replace("site1", "site|1") for r in _rows()]
    rows[0] = rows[0].replace("i0,", " i0,", 1)
    t = validate_score_table(read_table(_write(tmp_path / "k.csv", rows=rows)).assign(prompt="none"))
    assert set(t["cohort"]) == {"site|1"} and " i0" in set(t["image_id"])


# ----------------------------------------------------------------------- 4: summarize percentages
def test_summarize_refuses_percentages_as_audit_does(tmp_path, capsys):
    rows = [",".join([*r.split(",")[:3], f"{100 * float(r.split(',')[3]):.2f}", r.split(",")[4]])
            for r in _rows()]
    csv = _write(tmp_path / "pct.csv", rows=rows)
    rc, audit_err = _audit(tmp_path, csv, capsys)
    assert rc == 2
    assert main(["summarize", csv, "--out", str(tmp_path / "s2"), *FAST]) == 2
    err = capsys.readouterr().err.strip()
    assert not (tmp_path / "s2").exists()
    for e in (audit_err, err):
        assert "column 'score' must be probabilities in [0, 1]" in e
        assert "look like percentages: divide them by 100" in e
    assert "Pass --score-scale logits" in err
    assert audit_err.split("Declare")[0] == err.split("Pass")[0]  # the one validator's words


def test_summarize_still_takes_negative_scores_for_logits(tmp_path):
    rows = [",".join([*r.split(",")[:3], f"{8 * float(r.split(',')[3]) - 4:.3f}", r.split(",")[4]])
            for r in _rows()]
    from medaudit.audit.defaults import infer_score_scale

    assert infer_score_scale(read_table(_write(tmp_path / "lg.csv", rows=rows))) == "logits"


# ----------------------------------------------------------------------- 5: what a cell holds
def test_an_empty_cell_is_called_empty_and_a_short_row_is_counted(tmp_path):
    rows = _rows()
    rows[5] = rows[5].rsplit(",", 2)[0] + ",,1"  # empty score: line 7
    with pytest.raises(SchemaError, match=r"column 'score' must be finite numbers; line 7 is not "
                                          r"\(line 7 is empty\)"):
        validate_score_table(read_table(_write(tmp_path / "e.csv", rows=rows)).assign(prompt="x"))
    rows = _rows()
    rows[1] = rows[1].rsplit(",", 1)[0]  # no label field: line 3
    with pytest.raises(SchemaError, match=r"short.csv': line 3 has 4 field\(s\), the header 5"):
        read_table(_write(tmp_path / "short.csv", rows=rows))


def test_lines_are_file_lines_after_blank_lines_and_line_breaks_in_cells(tmp_path):
    rows = _rows()
    rows.insert(2, "")  # a blank line 4 (pandas skips it)
    rows[0] = rows[0].replace(",a,", ',"a\nb",', 1)  # row 0 spans lines 2-3
    rows[6] = rows[6].rsplit(",", 1)[0] + ",yes"
    text = "\n".join([HEADER, *rows]) + "\n"
    line = next(n for n, s in enumerate(text.split("\n"), 1) if s.endswith(",yes"))
    p = tmp_path / "b.csv"
    p.write_text(text, encoding="utf-8")
    t = read_table(p).assign(prompt="x")
    t.loc[0, "model"] = "a"  # leave only the label to be refused
    with pytest.raises(SchemaError, match=rf"line {line} is not \(line {line} has 'yes'\)"):
        validate_score_table(t)


def test_rows_kept_or_stacked_are_named_by_file_and_line(tmp_path):
    from medaudit.io.schema import stack_files, take_rows

    a = read_table(_write(tmp_path / "jan.csv"))
    rows = _rows()
    rows[3] = rows[3].rsplit(",", 1)[0] + ",yes"
    b = read_table(_write(tmp_path / "feb.csv", rows=rows))
    both = stack_files([a, b], ["jan.csv", "feb.csv"], source="period files jan.csv, feb.csv")
    kept = take_rows(both, np.arange(len(both)) % 2 == 1)  # every other row, file lines kept
    with pytest.raises(SchemaError, match=r"feb.csv line 5 is not \(feb.csv line 5 has 'yes'\)"):
        validate_score_table(kept.assign(prompt="x"), source=kept.attrs["source"])
    # reordered (attrs travel with a sort), the lines no longer hold: rows by position
    from medaudit.io.schema import row_places

    mask = np.zeros(len(both), dtype=bool)
    mask[0] = True
    assert row_places(both, mask) == "jan.csv line 2"
    assert row_places(both.iloc[::-1], mask).startswith("row 1 (index ")


def test_monitor_period_files_name_the_file_line_and_value(tmp_path):
    from medaudit.monitor import read_period_files
    from medaudit.port import load_local

    _write(tmp_path / "2026-01.csv")
    rows = _rows()
    rows[3] = rows[3].rsplit(",", 1)[0] + ",yes"  # line 5 of the file
    rows[5] = rows[5].rsplit(",", 1)[0] + ","  # an empty label: not known yet, drift only
    _write(tmp_path / "2026-02.csv", rows=rows)
    table, _ = read_period_files([tmp_path / "2026-01.csv", tmp_path / "2026-02.csv"])
    with pytest.raises(SchemaError) as e:
        load_local(table, keep_unlabelled=True)
    msg = str(e.value)
    assert msg.startswith(f"period files {tmp_path / '2026-01.csv'}, {tmp_path / '2026-02.csv'}: "
                          "column 'label' must be 0 or 1")
    assert f"({tmp_path / '2026-02.csv'} line 5 has 'yes')" in msg


# ----------------------------------------------------------------------- 6: empty period files
@pytest.mark.parametrize("text, match", [
    (HEADER + "\n", "the period file has no rows"),
    ("foo,bar\n1,2\n", r"missing column\(s\) \['image_id', 'model', 'score', 'label'\]"),
    (HEADER.replace(",", ";") + "\ni0;site1;a;0.5;1\n", "separated by semicolons")])
def test_a_period_file_without_usable_data_is_refused(tmp_path, text, match):
    from medaudit.monitor import read_period_files

    _write(tmp_path / "2026-01.csv")
    (tmp_path / "2026-02.csv").write_text(text, encoding="utf-8")
    with pytest.raises(SchemaError, match=match) as e:
        read_period_files([tmp_path / "2026-01.csv", tmp_path / "2026-02.csv"])
    assert "2026-02.csv" in str(e.value)


# ----------------------------------------------------------------------- 7: encoding, separator
def test_a_latin1_file_names_its_line_and_the_remedy(tmp_path):
    p = tmp_path / "l.csv"
    p.write_bytes((HEADER + "\ni0,site1,a,0.5,1\ni1,site1,caf").encode() + b"\xe9,0.5,0\n")
    with pytest.raises(SchemaError) as e:
        read_table(p)
    msg = str(e.value)
    assert "l.csv" in msg and "line 3 is not UTF-8 text (byte 0xe9" in msg and "re-save it as UTF-8" in msg


def test_a_utf16_file_is_named_as_such(tmp_path):
    p = tmp_path / "u.csv"
    p.write_bytes((HEADER + "\ni0,site1,a,0.5,1\n").encode("utf-16"))
    with pytest.raises(SchemaError, match="is UTF-16 text, not UTF-8; re-save it as UTF-8"):
        read_table(p)


@pytest.mark.parametrize("sep, word", [(";", "semicolons"), ("\t", "tabs")])
def test_another_separator_is_named(tmp_path, capsys, sep, word):
    csv = _write(tmp_path / "semi.csv", HEADER.replace(",", sep), [r.replace(",", sep) for r in _rows()])
    rc, err = _audit(tmp_path, csv, capsys)
    assert rc == 2 and "line 1 (the header) is one column" in err
    assert f"separated by {word}" in err and "Re-save it with commas" in err


def test_a_valid_table_reads_as_before(tmp_path):
    p = _write(tmp_path / "ok.csv")
    t = read_table(p)
    assert t.attrs["first_line"] == 2 and "origin" not in t.attrs
    pd.testing.assert_frame_equal(t, pd.read_csv(p, keep_default_na=False, na_values=[""],
                                                 dtype={"image_id": str}))


@pytest.mark.parametrize("value", ["3,496", "0,35", "1,234.5"])
def test_a_score_with_a_comma_says_how_to_write_it(tmp_path, capsys, value):
    # probe finding: a score exported with thousands separators or a decimal comma ('"3,496"'
    # quoted in a comma-separated file) got only "must be finite numbers"
    rows = _rows()
    rows[0] = f'i0,site1,a,"{value}",0'
    rc, err = _audit(tmp_path, _write(tmp_path / "s.csv", rows=rows), capsys)
    assert rc == 2 and f"line 2 has '{value}'" in err
    assert err.endswith("write them without thousands separators and with '.' as the decimal "
                        "point.")
    assert not (tmp_path / "out").exists()
    rows[0] = "i0,site1,a,abc,0"
    rc, err = _audit(tmp_path, _write(tmp_path / "t.csv", rows=rows), capsys)
    assert rc == 2 and "thousands" not in err


def test_unquoted_decimal_commas_that_add_a_field_to_every_row_are_named(tmp_path, capsys):
    # found trying the README on an own CSV: '0,35' unquoted in every row gives each row one
    # field more than the header; pandas made the first column the index and shifted every
    # value left, so the score column held a decimal's digits ('outside [0, 1], max 6e16')
    rows = [r.replace("0.", "0,", 1) for r in _rows()]
    assert all(r.count(",") == _rows()[0].count(",") + 1 for r in rows)
    rc, err = _audit(tmp_path, _write(tmp_path / "s.csv", rows=rows), capsys)
    assert rc == 2 and "the data rows have more fields than the header's 5 columns" in err
    assert "decimal point" in err and "outside" not in err
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------- probe: tables in memory
def _frame(n=40):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"image_id": [f"i{i}" for i in range(n)], "model": "a",
                         "label": np.repeat([0, 1], n // 2), "score": rng.random(n)})


def test_multiindex_columns_are_one_line():
    import medaudit

    df = _frame()
    df.columns = pd.MultiIndex.from_tuples([(c, "x") for c in df.columns])
    with pytest.raises(SchemaError, match=r"the columns have 2 levels \(a MultiIndex\)"):
        medaudit.audit(df, n_resamples=20)


@pytest.mark.parametrize("column", ["model", "image_id"])
@pytest.mark.parametrize("blank", ["", "   "])
def test_an_empty_name_in_memory_is_refused_as_in_a_csv(column, blank):
    """A CSV reads an empty cell as missing and refuses it; the same cell in a DataFrame is ""
    and was accepted (a model called "" then gave the claim " ranks above b")."""
    df = _frame().astype({column: object})
    df.loc[3, column] = blank
    with pytest.raises(SchemaError, match=rf"column '{column}' is empty at row 4"):
        validate_score_table(df.assign(cohort="c", prompt="p"))


def test_the_one_class_cohort_hint_can_be_followed_as_written():
    """The hint shows `cohorts:` as a mapping, in YAML and in Python, and following it works."""
    import medaudit

    df = pd.concat([_frame().assign(cohort="c1"), _frame().assign(cohort="c2", label=1)])
    with pytest.raises(SchemaError, match=r"cohort 'c2' has only label 1.*cohorts=\{'c1': \{\}\}"):
        medaudit.audit(df, n_resamples=20)
    ok = medaudit.audit(df, n_resamples=20, cohorts={"c1": {}})
    assert set(ok.tables["discrimination.metrics"]["cohort"]) == {"c1"}


def test_port_refuses_claims_it_would_drop(tmp_path):
    import medaudit
    from medaudit.exceptions import MedauditError
    from medaudit.monitor import monitor

    for run in (medaudit.port, monitor):
        with pytest.raises(MedauditError, match="claims= is not an option of a port or a monitor"):
            run(tmp_path / "x.claims.json", _frame(), claims=[{"model": "a"}])


def test_a_misspelt_claim_key_is_named_with_its_correction():
    import medaudit

    with pytest.raises(SchemaError, match=r"declared claim 1 has no key saying what it claims; "
                                          r"did you mean 'at_leest' -> 'at_least'\?"):
        medaudit.audit(_frame(), n_resamples=20,
                       claims=[{"model": "a", "metric": "roc_auc", "at_leest": 0.75}])
    # a claim without any such key and no near miss keeps the general message
    with pytest.raises(SchemaError, match="a declared claim needs `kind:`"):
        medaudit.audit(_frame(), n_resamples=20, claims=[{"model": "a", "metric": "roc_auc"}])


def test_the_missing_column_message_does_not_ask_for_what_is_filled_in(tmp_path, capsys):
    # cohort and prompt may be left out (one of each): the message says so instead of listing
    # them among the columns a table needs
    csv = _write(tmp_path / "s.csv", "image_id,model,prob,label", [f"i{i},a,0.5,{i % 2}" for i in range(6)])
    assert main(["init", csv, "--out", str(tmp_path / "i.yaml"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "missing column(s) ['score']" in err and "needs ['image_id', 'model', 'score', 'label'] (and " \
        "['cohort', 'prompt'] where there is more than one of either; optional:" in err


@pytest.mark.parametrize("index, says", [
    (None, "row 6 has 2"), (range(1000, 1040), "row 6 (index 1005) has 2"),
    ([f"r{k}" for k in range(40)], "row 6 (index 'r5') has 2")])
def test_a_dataframe_row_is_named_by_position_and_by_its_index_label(index, says):
    """Probe finding: with an index 1000, 1001, ... a bad label at df.loc[1005] was called
    'row 6' only; the label df.loc reads is given beside the position."""
    import medaudit
    from medaudit.exceptions import MedauditError

    df = pd.DataFrame({"image_id": [f"i{k}" for k in range(40)], "model": "m",
                       "score": np.linspace(0, 1, 40), "label": [0, 1] * 20})
    df.loc[5, "label"] = 2
    if index is not None:
        df = df.set_axis(list(index))
    with pytest.raises(MedauditError, match=re.escape(says)):
        medaudit.audit(df, n_resamples=20)


def test_every_missing_column_gets_its_near_miss():
    """Probe finding: four upper-case names got three hints; 'SCORE' -> 'score' was left out."""
    from medaudit.io.schema import require_columns

    with pytest.raises(SchemaError) as e:
        require_columns(pd.DataFrame(columns=["IMAGE_ID", "MODEL", "SCORE", "LABEL"]),
                        ["image_id", "model", "score", "label"], source="t", what="ScoreTable")
    for c in ("image_id", "model", "score", "label"):
        assert f"'{c.upper()}' -> '{c}'" in str(e.value)


def test_a_soft_label_missing_on_some_rows_is_called_missing():
    # probe finding: empty label_soft cells were "must lie in [0, 1]; lines ... do not"
    import medaudit

    df = pd.DataFrame({"image_id": list("abcd"), "model": "m", "label": [1, 0, 1, 0],
                       "score": [0.9, 0.1, 0.8, 0.3], "label_soft": [0.9, None, 0.7, ""]})
    with pytest.raises(SchemaError) as e:
        medaudit.audit(df, n_resamples=20)
    msg = str(e.value)
    assert "column 'label_soft' is empty on rows 2, 4; give a soft label for every row" in msg
    assert "\n" not in msg
    df["label_soft"] = [0.9, 0.2, 1.5, 0.3]
    with pytest.raises(SchemaError, match=r"column 'label_soft' must lie in \[0, 1\]; row 3 does not"):
        medaudit.audit(df, n_resamples=20)


@pytest.mark.parametrize("names", [("caf\u00e9", "cafe\u0301"), ("m  two", "m two"),
                                   ("a\u00a0b", "a b"), ("mA", "m\u200bA"), ("ab", "a\u00adb")])
def test_names_that_print_alike_are_refused(names):
    """Probe finding: cohorts 'café' (precomposed) and 'café' (e + combining accent), models
    'm  two' and 'm two' were two names the page printed alike ("m two ranks above m two")."""
    from medaudit.io.schema import validate_score_table

    rows = [{"image_id": f"i{i}", "cohort": "c", "model": m, "prompt": "p", "score": i / 4,
             "label": i % 2} for m in names for i in range(4)]
    with pytest.raises(SchemaError, match=rf"column 'model' holds the names .*{re.escape(ascii(names[0]))}"
                                          r".* would print alike"):
        validate_score_table(pd.DataFrame(rows), source="t")
    # names that differ visibly pass
    ok = pd.DataFrame(rows).assign(model=lambda t: t["model"].map({names[0]: "x", names[1]: "y"}))
    assert set(validate_score_table(ok, source="t")["model"]) == {"x", "y"}
