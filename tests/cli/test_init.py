"""``medaudit init``: a commented starter spec that loads, matches the table and runs unchanged.

Witnesses: the cohorts, their sizes and classes, the models and the subgroup columns are counted
here with pandas from the table the test wrote; the YAML is read back with PyYAML
(``yaml.safe_load``), not with the writer; odd names round-trip (hypothesis).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from medaudit.audit.defaults import default_spec, describe_table, starter_yaml
from medaudit.audit.spec import load_spec
from medaudit.cli.main import main
from medaudit.exceptions import SchemaError
from medaudit.io.schema import CONTROL
from tests.cli.test_bad_inputs import _one_line

SITES = (("site-1", 150, 40), ("site-2", 150, 75))


def _table(*, prompt: str | None = None, seed: int = 0, sites=SITES) -> pd.DataFrame:
    """Two models (a, b) on two sites, a sex column, optionally one prompt."""
    rng = np.random.default_rng(seed)
    rows = []
    for site, n, n_pos in sites:
        label = np.r_[np.ones(n_pos, int), np.zeros(n - n_pos, int)]
        sex = rng.choice(["F", "M"], n)
        for model, shift in (("a", 0.35), ("b", 0.2)):
            score = np.clip(rng.normal(0.3 + shift * label, 0.15), 0.001, 0.999)
            rows += [{"image_id": f"{site}-{i:03d}", "cohort": site, "model": model,
                      **({"prompt": prompt} if prompt else {}), "score": float(score[i]),
                      "label": int(label[i]), "sex": sex[i]} for i in range(n)]
    return pd.DataFrame(rows)


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err.strip()


@pytest.fixture
def csv(tmp_path) -> Path:
    p = tmp_path / "data" / "scores.csv"
    p.parent.mkdir()
    _table().to_csv(p, index=False)
    return p


def test_init_without_prompt_column_writes_a_spec_that_matches_the_table(csv, tmp_path, capsys):
    out = tmp_path / "specs" / "spec.yaml"  # another folder: scores: must be relative to the spec
    rc, printed, err = _run(["init", csv, "--out", out], capsys)
    assert rc == 0 and err == ""
    assert f"wrote {out}" in printed and "medaudit audit" in printed
    spec, base = load_spec(out)
    table = pd.read_csv(csv)
    assert "prompt" not in table.columns
    assert set(spec.cohorts) == set(table["cohort"]) and list(spec.cohorts) == ["site-1", "site-2"]
    assert spec.primary_prompt == "none" and spec.score_scale == "probabilities"
    assert (base / spec.scores).resolve() == csv.resolve()
    # the table's sex column is a subgroup: written with the block that reads it
    assert list(spec.subgroups) == ["sex"]
    assert spec.blocks == ["discrimination", "operating_points", "subgroups"]
    text = out.read_text()
    models = sorted(table["model"].unique())
    assert f"#   2 models: {', '.join(models)}" in text
    for cohort, g in table.drop_duplicates(["cohort", "image_id"]).groupby("cohort"):
        n, pos = len(g), int(g["label"].sum())
        line = f"{n} images, {pos} positive, {n - pos} negative"
        assert f"#     {cohort}: {line}" in text and f"  {cohort}: {{role: primary}}  # {line}" in text
    assert "#   subgroup-like columns: sex (F, M)" in text
    assert "no prompt column" in text
    # every non-comment line is YAML that PyYAML reads as the validated spec says
    raw = yaml.safe_load(text)
    assert raw["cohorts"] == {c: {"role": "primary"} for c in ("site-1", "site-2")}
    assert raw["seed"] == spec.seed and raw["n_resamples"] == spec.n_resamples


def test_same_table_and_command_give_the_same_bytes(csv, tmp_path, capsys):
    out = tmp_path / "spec.yaml"
    assert _run(["init", csv, "--out", out], capsys)[0] == 0
    first = out.read_bytes()
    assert _run(["init", csv, "--out", out, "--overwrite"], capsys)[0] == 0
    assert out.read_bytes() == first


def test_every_key_written_has_a_comment(csv, tmp_path, capsys):
    out = tmp_path / "spec.yaml"
    assert _run(["init", csv, "--out", out], capsys)[0] == 0
    lines = out.read_text().splitlines()
    keys = [i for i, line in enumerate(lines) if re.match(r"^[a-z_]+:", line)]
    assert len(keys) >= 8
    for i in keys:
        assert lines[i - 1].startswith("#"), lines[i]


def test_init_spec_runs_unchanged(tmp_path, capsys):
    table = tmp_path / "scores.csv"
    _table(prompt="zero-shot").to_csv(table, index=False)
    spec = tmp_path / "spec.yaml"
    assert _run(["init", table, "--out", spec], capsys)[0] == 0
    out = tmp_path / "audit"
    rc, _, err = _run(["audit", spec, "--out", out, "--quiet"], capsys)
    assert rc == 0, err
    metrics = pd.read_csv(out / "tables" / "discrimination__metrics.csv")
    t = pd.read_csv(table)
    assert set(metrics["cohort"]) == set(t["cohort"]) and set(metrics["model"]) == set(t["model"])
    assert set(metrics["prompt"]) == {"zero-shot"}
    from sklearn.metrics import roc_auc_score

    for (c, m), g in t.groupby(["cohort", "model"]):
        row = metrics[(metrics.cohort == c) & (metrics.model == m) & (metrics.criterion == "roc_auc")]
        assert row["estimate"].item() == pytest.approx(roc_auc_score(g["label"], g["score"]), rel=1e-12)


def test_init_spec_without_prompt_column_runs_unchanged(csv, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    assert _run(["init", csv, "--out", spec], capsys)[0] == 0
    rc, _, err = _run(["audit", spec, "--out", tmp_path / "audit", "--quiet"], capsys)
    assert rc == 0, err
    metrics = pd.read_csv(tmp_path / "audit" / "tables" / "discrimination__metrics.csv")
    assert set(metrics["cohort"]) == {"site-1", "site-2"} and set(metrics["model"]) == {"a", "b"}


def test_a_table_without_cohort_column_is_one_site_for_init_summarize_and_audit(tmp_path, capsys):
    # the README: "cohort may be left out for one site"; init and summarize read it as audit does
    t = _table(sites=(("x", 120, 40),)).drop(columns="cohort")
    table = tmp_path / "scores.csv"
    t.to_csv(table, index=False)
    spec = tmp_path / "spec.yaml"
    rc, _, err = _run(["init", table, "--out", spec], capsys)
    assert rc == 0, err
    assert yaml.safe_load(spec.read_text())["cohorts"] == {"all": {"role": "primary"}}
    assert "without a cohort column is read as cohort 'all'" in spec.read_text()
    for argv in (["audit", spec, "--out", tmp_path / "a"], ["summarize", table, "--out", tmp_path / "s"]):
        rc, _, err = _run([*argv, "--quiet"], capsys)
        assert rc == 0, err
        metrics = pd.read_csv(argv[-1] / "tables" / "discrimination__metrics.csv")
        assert set(metrics["cohort"]) == {"all"}
        from sklearn.metrics import roc_auc_score

        for model, g in t.groupby("model"):
            row = metrics[(metrics.model == model) & (metrics.criterion == "roc_auc")]
            assert row["estimate"].item() == pytest.approx(roc_auc_score(g["label"], g["score"]),
                                                           rel=1e-12)


def test_one_site_with_one_class_is_one_line_without_cohort_advice(tmp_path, capsys):
    t = _table(sites=(("x", 120, 40),)).drop(columns="cohort")
    table = tmp_path / "pos.csv"
    t[t["label"] == 1].to_csv(table, index=False)
    rc, _, err = _run(["summarize", table, "--out", tmp_path / "s"], capsys)
    assert rc == 2 and err.count("\n") == 0, err
    assert "has only positives (label 1), 40 image(s)" in err and "leave" not in err
    assert not (tmp_path / "s").exists()


# ----------------------------------------------------------------------------- refusals
def test_existing_spec_is_kept_without_overwrite(csv, tmp_path, capsys):
    out = tmp_path / "spec.yaml"
    out.write_text("name: mine\n")
    rc, _, err = _run(["init", csv, "--out", out], capsys)
    assert rc == 2
    line = _one_line(err)
    assert str(out) in line and "exists" in line and "--overwrite" in line
    assert out.read_text() == "name: mine\n"
    # probe finding: --overwrite replaced any file; it replaces only a spec init wrote (an
    # edited one included), never a file of the user's
    rc, _, err = _run(["init", csv, "--out", out, "--overwrite"], capsys)
    assert rc == 2 and "is not a spec `medaudit init` wrote" in _one_line(err)
    assert out.read_text() == "name: mine\n"
    mine = tmp_path / "mine.yaml"
    assert _run(["init", csv, "--out", mine], capsys)[0] == 0
    mine.write_text(mine.read_text().replace("n_resamples:", "n_resamples: 999 #"))
    assert _run(["init", csv, "--out", mine, "--overwrite"], capsys)[0] == 0
    assert load_spec(mine)[0].name == "scores"
    assert "999" not in mine.read_text()


def test_the_table_itself_is_never_the_output(csv, tmp_path, capsys):
    before = csv.read_bytes()
    for argv in (["init", csv, "--out", csv], ["init", csv, "--out", csv, "--overwrite"]):
        rc, _, err = _run(argv, capsys)
        assert rc == 2 and "is the score table" in _one_line(err) and str(csv) in err
    link = tmp_path / "link.yaml"
    link.symlink_to(csv)
    rc, _, err = _run(["init", csv, "--out", link, "--overwrite"], capsys)
    assert rc == 2 and "symbolic link" in _one_line(err)
    assert csv.read_bytes() == before


@pytest.mark.parametrize("case", ["missing", "folder", "empty", "binary", "no_label", "bad_label",
                                  "suffix"])
def test_unreadable_or_invalid_table_is_one_line_naming_the_file(tmp_path, capsys, case):
    p = tmp_path / "scores.csv"
    if case == "folder":
        p.mkdir()
    elif case == "empty":
        p.write_text("")
    elif case == "binary":
        p = tmp_path / "scores.parquet"
        p.write_bytes(b"\x00\x01 not parquet")
    elif case in ("no_label", "bad_label"):
        t = _table()
        t = t.drop(columns="label") if case == "no_label" else t.assign(label="maybe")
        t.to_csv(p, index=False)
    elif case == "suffix":
        p = tmp_path / "scores.xlsx"
        p.write_text("x")
    out = tmp_path / "spec.yaml"
    rc, _, err = _run(["init", p, "--out", out], capsys)
    assert rc == 2
    assert str(p) in _one_line(err)
    assert not out.exists()


@pytest.mark.parametrize("out, match", [("spec.txt", "not a YAML file name"), (".", "is a folder")])
def test_bad_out_is_refused(csv, tmp_path, capsys, out, match):
    rc, _, err = _run(["init", csv, "--out", tmp_path / out], capsys)
    assert rc == 2 and match in _one_line(err)


# ----------------------------------------------------------------------------- inference
def test_what_the_table_says_is_inferred(tmp_path, capsys):
    t = _table(prompt="p").assign(score=lambda d: np.log(d.score / (1 - d.score)))  # logits
    t = pd.concat([t, t.assign(prompt="q")], ignore_index=True)
    t["negative_group"] = np.where(t.label == 0, np.where(t.image_id.str[-1] < "5", "healthy", "sick"), "")
    t["label_soft"] = t["label"] * 0.8
    t["age"] = np.arange(len(t)) % 97  # too many values for a subgroup: listed as another column
    t = pd.concat([t.assign(seed=1), t.assign(seed=2, score=t.score + 0.1)], ignore_index=True)
    p = tmp_path / "scores.parquet"
    t.to_parquet(p)
    out = tmp_path / "spec.yaml"
    assert _run(["init", p, "--out", out], capsys)[0] == 0
    spec, _ = load_spec(out)
    text = out.read_text()
    assert spec.score_scale == "logits" and spec.primary_prompt == "p"
    assert spec.blocks == ["discrimination", "operating_points", "prompts", "spectrum", "retained",
                           "subgroups"]
    assert [(e.cohort, e.groups) for e in spec.spectrum] == [
        ("site-1", ["healthy", "sick"]), ("site-2", ["healthy", "sick"])]
    assert "#   2 prompts: p, q" in text and "#   training seeds: 1, 2" in text
    assert "#   soft labels: label_soft" in text
    assert "other columns (kept, listed in the provenance, not used): age" in text
    images = t.drop_duplicates(["cohort", "image_id"])
    neg = images[(images.cohort == "site-1") & (images.label == 0)].negative_group.value_counts()
    assert f"negative groups healthy ({neg['healthy']}), sick ({neg['sick']})" in text


def test_a_cohort_with_one_class_is_left_out_with_a_reason(tmp_path, capsys):
    t = _table(sites=SITES + (("site-3", 20, 0),))
    p = tmp_path / "scores.csv"
    t.to_csv(p, index=False)
    out = tmp_path / "spec.yaml"
    assert _run(["init", p, "--out", out], capsys)[0] == 0
    spec, _ = load_spec(out)
    assert list(spec.cohorts) == ["site-1", "site-2"]
    assert "# site-3 is left out (20 images, 0 positive, 20 negative)" in out.read_text()


def test_no_cohort_with_both_classes_is_an_error(tmp_path, capsys):
    p = tmp_path / "scores.csv"
    _table(sites=(("site-1", 10, 0),)).to_csv(p, index=False)
    rc, _, err = _run(["init", p, "--out", tmp_path / "spec.yaml"], capsys)
    assert rc == 2 and "no cohort has both positives and negatives" in _one_line(err)


def test_starter_is_the_summarize_spec(csv):
    """init writes the spec summarize would run (plus the resampling defaults, stated)."""
    from medaudit.io.schema import validate_score_table

    t = validate_score_table(pd.read_csv(csv).assign(prompt="none")).drop(columns="prompt")
    raw = yaml.safe_load(starter_yaml(t, scores="scores.csv"))
    implied = default_spec(t, scores="scores.csv")
    # ... and the subgroups block for the subgroup columns it declares
    assert raw["subgroups"] and raw["blocks"] == [*implied["blocks"], "subgroups"]
    raw["blocks"] = implied["blocks"]
    assert {k: raw[k] for k in implied if k in raw} == {k: v for k, v in implied.items() if k in raw}
    assert implied["spectrum"] == [] and "spectrum" not in raw


_NAME = st.text(st.characters(blacklist_characters="|", blacklist_categories=("Cs",)), min_size=1,
                max_size=10).filter(lambda s: s.strip() == s and s != "")


@settings(max_examples=60)
@example(cohorts=["yes", "0", "a: b", "# x", "null"], models=["~", "-x"])
@example(cohorts=["line\nbreak", "nel\x85", "'q'", "\u2028", "é ü"], models=["\x00", '"'])
@given(cohorts=st.lists(_NAME, min_size=1, max_size=5, unique=True),
       models=st.lists(_NAME, min_size=1, max_size=2, unique=True))
def test_any_names_round_trip_through_the_yaml(cohorts, models):
    rows = [{"image_id": str(i), "cohort": c, "model": m, "score": 0.2 + 0.6 * (i % 2), "label": i % 2}
            for c in cohorts for m in models for i in range(4)]
    t = pd.DataFrame(rows)
    # the audit name is the report's title: a control character there is refused (init makes
    # the name from the file name with such characters replaced, test below)
    name = re.sub(CONTROL, "", cohorts[0]) or "x"
    if name != cohorts[0]:
        with pytest.raises(SchemaError, match=r"name: holds the control character U\+"):
            starter_yaml(t, scores="scores.csv", name=cohorts[0])
    text = starter_yaml(t, scores="scores.csv", name=name)
    raw = yaml.safe_load(text)
    assert list(raw["cohorts"]) == sorted(cohorts) and raw["name"] == name
    assert describe_table(t).models == tuple(sorted(models))
    # a name never breaks a line: every line is empty, a comment, a key or a cohort entry
    for line in text.splitlines():
        assert line == "" or line.startswith("#") or re.match(r"^([a-z_]+:( |$)|  \S)", line), line


@pytest.mark.parametrize("stem", ["line\nbreak", "rtl\u202egpj", "tab\there"])
def test_a_file_name_with_control_characters_names_the_audit_without_them(tmp_path, stem):
    # a file name may hold a line break or a text-direction override; the report title may not
    csv = tmp_path / f"{stem}.csv"
    _table().to_csv(csv, index=False)
    out = tmp_path / "spec.yaml"
    assert main(["init", str(csv), "--out", str(out), "--quiet"]) == 0
    text = out.read_text(encoding="utf-8")
    name = yaml.safe_load(text)["name"]
    assert name == re.sub(CONTROL, "_", stem) and not re.search(CONTROL, name)
    assert load_spec(out)[0].name == name
    for line in text.splitlines():
        assert line == "" or line.startswith("#") or re.match(r"^([a-z_]+:( |$)|  \S)", line), line


def test_a_site_column_beside_no_cohort_gets_the_rename_hint(tmp_path):
    # only a column named cohort makes cohorts: a 'site' column says how to make it one
    t = _table().drop(columns="cohort").assign(site=lambda d: d["image_id"].str.rsplit("-", n=1).str[0])
    t["image_id"] = t["image_id"].str.replace("-", "_")
    csv = tmp_path / "s.csv"
    t.to_csv(csv, index=False)
    assert main(["init", str(csv), "--out", str(tmp_path / "s.yaml"), "--quiet"]) == 0
    text = (tmp_path / "s.yaml").read_text(encoding="utf-8")
    assert "#     (site may name the institution: rename the column to cohort to audit each" in text
    with_cohort = tmp_path / "c.csv"
    _table().assign(site="x").to_csv(with_cohort, index=False)
    assert main(["init", str(with_cohort), "--out", str(tmp_path / "c.yaml"), "--quiet"]) == 0
    assert "may name the institution" not in (tmp_path / "c.yaml").read_text(encoding="utf-8")


def test_init_out_a_folder_suggests_a_spec_file_inside_it(tmp_path, capsys):
    scores = tmp_path / "s.csv"
    scores.write_text("image_id,model,score,label\na,m,0.2,0\nb,m,0.8,1\nc,m,0.3,0\nd,m,0.9,1\n")
    (tmp_path / "d").mkdir()
    assert main(["init", str(scores), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "is a folder; give a file name, e.g." in err and "spec.yaml'" in err


def test_summarize_runs_what_the_init_spec_runs_subgroups_included(csv, tmp_path, capsys):
    # probe finding: init wrote `subgroups: [sex]` with the subgroups block, summarize of the
    # same table ran no subgroups and never named the column: one default spec, two audits
    spec = tmp_path / "spec.yaml"
    assert _run(["init", csv, "--out", spec], capsys)[0] == 0
    assert yaml.safe_load(spec.read_text())["subgroups"] == ["sex"]
    a, s = tmp_path / "a", tmp_path / "s"
    assert _run(["audit", spec, "--out", a, "--quiet"], capsys)[0] == 0
    assert _run(["summarize", csv, "--out", s, "--quiet"], capsys)[0] == 0
    tables = sorted(p.name for p in (a / "tables").iterdir())
    assert "subgroups__metrics.csv" in tables
    assert sorted(p.name for p in (s / "tables").iterdir()) == tables
    for name in ("subgroups__metrics.csv", "discrimination__metrics.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(a / "tables" / name),
                                      pd.read_csv(s / "tables" / name))


def test_summarize_with_logits_on_scores_all_in_0_1_warns(csv, tmp_path, capsys):
    # probe finding: the flag silently dropped Brier, ECE and AURC from a table of probabilities
    rc, _, err = _run(["summarize", csv, "--out", tmp_path / "s", "--score-scale", "logits",
                       "--n-resamples", "20"], capsys)
    assert rc == 0
    (line,) = [x for x in err.splitlines() if x.startswith("medaudit: warning:")]
    assert "every score lies in [0, 1]" in line and "--score-scale logits was given" in line
    # real logits (some below 0) are not warned about
    t = pd.read_csv(csv)
    t["score"] = np.log(t["score"] / (1 - t["score"]))
    t.to_csv(tmp_path / "logits.csv", index=False)
    rc, _, err = _run(["summarize", tmp_path / "logits.csv", "--out", tmp_path / "l",
                       "--score-scale", "logits", "--n-resamples", "20"], capsys)
    assert rc == 0 and "warning" not in err


def test_one_stray_negative_among_probabilities_is_a_bad_row_not_logits(tmp_path, capsys):
    """Probe finding: one score of -0.01 among probabilities made init write
    `score_scale: logits`, so a port then carried τ = 0.4 as logit(0.4) and judged every
    claim on the wrong scale.  The table is refused, naming the line; a table of logits
    (negatives in number, values above 1) is still read as logits."""
    t = _table()
    t.loc[3, "score"] = -0.01
    p = tmp_path / "stray.csv"
    t.to_csv(p, index=False)
    rc, _, err = _run(["init", p, "--out", tmp_path / "s.yaml"], capsys)
    assert rc == 2 and "must be probabilities in [0, 1]; line 5 is outside" in err
    assert not (tmp_path / "s.yaml").exists()
    logits = _table()
    logits["score"] = np.log(logits["score"] / (1 - logits["score"]))
    q = tmp_path / "logits.csv"
    logits.to_csv(q, index=False)
    rc, _, err = _run(["init", q, "--out", tmp_path / "l.yaml"], capsys)
    assert rc == 0, err
    assert "score_scale: logits" in (tmp_path / "l.yaml").read_text()


def test_summarize_records_no_path_of_this_machine(csv, tmp_path, capsys, monkeypatch):
    """Probe finding: summarize recorded the table's absolute path in results.json, the
    report and a claims file exported from it; the same table audited from another folder
    gave other bytes.  It is recorded by its name, as an audit records its spec's `scores:`."""
    import shutil

    other = tmp_path / "elsewhere" / "scores.csv"
    other.parent.mkdir()
    shutil.copy(csv, other)
    monkeypatch.chdir(tmp_path)
    assert _run(["summarize", csv, "--out", tmp_path / "a", "--quiet", "--n-resamples", "50"],
                capsys)[0] == 0
    monkeypatch.chdir(other.parent)
    assert _run(["summarize", "scores.csv", "--out", tmp_path / "b", "--quiet",
                 "--n-resamples", "50"], capsys)[0] == 0
    results = (tmp_path / "a" / "results.json").read_text(encoding="utf-8")
    assert '"scores": "scores.csv"' in results and str(tmp_path) not in results
    for name in ("results.json", "report.html", "summary.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_a_home_out_path_is_written_where_it_was_checked(csv, tmp_path, monkeypatch, capsys):
    """Review finding: io.output checked "~/spec.yaml" as the home folder's file while the
    command wrote a folder named "~" in the working one (a quoted --out=~/x reaches the
    command unexpanded); a file of the user's at home is refused, not written beside."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert _run(["init", csv, "--out", "~/spec.yaml"], capsys)[0] == 0
    assert (home / "spec.yaml").is_file() and not (work / "~").exists()
    (home / "mine.yaml").write_text("my own\n")
    assert _run(["init", csv, "--out", "~/mine.yaml", "--overwrite"], capsys)[0] == 2
    assert (home / "mine.yaml").read_text() == "my own\n" and not (work / "~").exists()
