"""``medaudit port SOURCE LOCAL_SPEC.yaml --out DIR``: plumbing, refusals in one line, atomic output.

The numbers are witnessed in tests/port/test_port.py; here the command writes what
``medaudit.port`` returns, byte for byte, refuses bad sources with one line naming the
file, and a failing run writes nothing.
"""

from __future__ import annotations

import json

import pandas as pd

from medaudit.cli.main import main
from medaudit.io.claimsfile import seal_claims
from tests.port._source import claims_file, local_spec, source_audit  # noqa: F401


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("medaudit: error: ") and err.count("\n") == 0, err
    return err


def test_port_writes_the_report_and_is_byte_identical(claims_file, local_spec, tmp_path):  # noqa: F811
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["port", str(claims_file), str(local_spec), "--out", str(a), "--quiet"]) == 0
    assert main(["port", str(claims_file), str(local_spec), "--out", str(b), "--quiet"]) == 0
    for p in sorted(a.iterdir()):
        assert p.read_bytes() == (b / p.name).read_bytes(), p.name
    page = (a / "report.html").read_text(encoding="utf-8")
    assert page.index('id="port-claims"') < page.index('id="provenance"')
    csv = (a / "port__claims.csv").read_text(encoding="utf-8").splitlines()
    assert csv[0].startswith("claim_id,claim,kind,") and len(csv) == 1 + len(
        json.loads(claims_file.read_text(encoding="utf-8"))["claims"])


def test_port_from_an_audit_folder(source_audit, local_spec, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "p"
    assert main(["port", str(source_audit), str(local_spec), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "source claims:" in said and "report.html" in said
    verdicts = pd.read_csv(out / "port__claims.csv")["verdict"].value_counts()
    for v, k in verdicts.items():  # "holds: 2", not "2 holds"
        assert f"{v}: {k}" in said.splitlines()[0]
    assert main(["port", str(source_audit), str(local_spec), "--out", str(out)]) == 2
    assert "exists" in _one_line(capsys)


def test_overwrite_keeps_files_of_the_user_in_the_port_folder(claims_file, local_spec, tmp_path,  # noqa: F811
                                                               capsys):
    out = tmp_path / "p"
    argv = ["port", str(claims_file), str(local_spec), "--out", str(out), "--quiet"]
    assert main(argv) == 0
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    (out / "mynotes.txt").write_text("notes\n", encoding="utf-8")
    assert main([*argv, "--overwrite"]) == 2
    err = _one_line(capsys)
    assert "mynotes.txt" in err and "did not write" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {**written, "mynotes.txt": b"notes\n"}
    (out / "mynotes.txt").unlink()
    assert main([*argv, "--overwrite"]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == written


def test_tampered_file_refused_in_one_line_and_nothing_written(claims_file, local_spec, tmp_path,  # noqa: F811
                                                               capsys):
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    doc["claims"][1]["level"] = 0.5
    bad = tmp_path / "edited.claims.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["port", str(bad), str(local_spec), "--out", str(out)]) == 2
    err = _one_line(capsys)
    assert str(bad) in err and "changed after it was written" in err
    assert not out.exists() and not list(tmp_path.glob(".out.*"))


def test_future_version_and_schema_violation_refused(claims_file, local_spec, tmp_path, capsys):  # noqa: F811
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    future = tmp_path / "future.claims.json"
    future.write_text(json.dumps(seal_claims({**doc, "schema_version": "2.0"})), encoding="utf-8")
    assert main(["port", str(future), str(local_spec), "--out", str(tmp_path / "o")]) == 2
    err = _one_line(capsys)
    assert str(future) in err and "upgrade medaudit" in err
    del doc["claims"][0]["E"]
    invalid = tmp_path / "invalid.claims.json"
    invalid.write_text(json.dumps(seal_claims(doc)), encoding="utf-8")
    assert main(["port", str(invalid), str(local_spec), "--out", str(tmp_path / "o")]) == 2
    err = _one_line(capsys)
    assert str(invalid) in err and "not a valid claims file at claims/0" in err
    assert not (tmp_path / "o").exists()


def test_bad_cohort_and_missing_source(claims_file, local_spec, tmp_path, capsys):  # noqa: F811
    assert main(["port", str(claims_file), str(local_spec), "--out", str(tmp_path / "o"),
                 "--cohort", "elsewhere"]) == 2
    assert "cohort 'elsewhere' is not in the local data" in _one_line(capsys)
    assert main(["port", str(tmp_path / "none.claims.json"), str(local_spec), "--out",
                 str(tmp_path / "o")]) == 2
    assert "none.claims.json" in _one_line(capsys)
    assert not (tmp_path / "o").exists()


def test_not_a_claims_file_and_out_inside_the_source(source_audit, local_spec, tmp_path, capsys):  # noqa: F811
    other = tmp_path / "notes.json"
    other.write_text('{"hello": 1}', encoding="utf-8")
    assert main(["port", str(other), str(local_spec), "--out", str(tmp_path / "o")]) == 2
    err = _one_line(capsys)
    assert str(other) in err and "not a medaudit claims file" in err
    before = sorted(p.name for p in source_audit.iterdir())
    assert main(["port", str(source_audit), str(local_spec), "--out",
                 str(source_audit / "port")]) == 2
    assert "inside" in _one_line(capsys)
    assert sorted(p.name for p in source_audit.iterdir()) == before


def test_bad_local_spec_is_one_line(claims_file, tmp_path, capsys):  # noqa: F811
    spec = tmp_path / "site.yaml"
    spec.write_text("simulate: paper000\nprimary_prompt: clinical\nn_resampels: 10\n", encoding="utf-8")
    assert main(["port", str(claims_file), str(spec), "--out", str(tmp_path / "o")]) == 2
    err = _one_line(capsys)
    assert "n_resampels" in err and not (tmp_path / "o").exists()


def test_arguments_given_the_wrong_way_say_so(claims_file, local_spec, tmp_path, capsys):  # noqa: F811
    # probe findings: the claims file given as the spec got "the audit spec is invalid (6
    # problems)", and a score table given as the spec "must be a YAML mapping, not a str"
    assert main(["port", str(local_spec), str(claims_file), "--out", str(tmp_path / "o")]) == 2
    assert "is a YAML file (an audit spec?), not claims: the source comes first" in _one_line(capsys)
    assert main(["port", str(claims_file), str(claims_file), "--out", str(tmp_path / "o")]) == 2
    assert "is a claims file, not an audit spec: give it as the source" in _one_line(capsys)
    table = tmp_path / "site.csv"
    table.write_text("image_id,model,score,label\ni1,a,0.9,1\ni2,a,0.1,0\n", encoding="utf-8")
    for cmd in ("port", "monitor"):
        assert main([cmd, str(claims_file), str(table), "--out", str(tmp_path / "o")]) == 2
        err = _one_line(capsys)
        assert "looks like a score table, not a YAML audit spec" in err
        assert f"`medaudit init {table}`" in err
    assert not (tmp_path / "o").exists()


def test_a_claims_file_without_claims_is_refused_by_port_and_monitor(claims_file, local_spec,  # noqa: F811
                                                                     tmp_path, capsys):
    # schema-valid and sealed, but checking nothing would read as "no claim failed"
    doc = json.loads(claims_file.read_text(encoding="utf-8"))
    empty = tmp_path / "empty.claims.json"
    empty.write_text(json.dumps(seal_claims({**doc, "claims": []})), encoding="utf-8")
    for command in ("port", "monitor"):
        out = tmp_path / command
        assert main([command, str(empty), str(local_spec), "--out", str(out)]) == 2
        err = _one_line(capsys)
        assert str(empty) in err and "holds no claims" in err and "claims: declared:" in err
        assert not out.exists()


def test_the_flag_the_resampling_limit_names_exists(claims_file, local_spec, tmp_path, capsys,  # noqa: F811
                                                   monkeypatch):
    """Probe finding: `port --n-resamples 200000` said "pass --allow-large", which port did
    not accept ("unrecognized argument"). It does now, and hands it to the local run."""
    assert main(["port", str(claims_file), str(local_spec), "--out", str(tmp_path / "o"),
                 "--n-resamples", "200000"]) == 2
    assert "--allow-large" in _one_line(capsys)
    import medaudit.port as port_module

    seen = {}

    def fake(source, **kw):
        seen.update(kw)
        raise SystemExit(0)

    monkeypatch.setattr(port_module, "port", fake)
    try:
        main(["port", str(claims_file), str(local_spec), "--out", str(tmp_path / "o"),
              "--n-resamples", "200000", "--allow-large"])
    except SystemExit:
        pass
    assert seen["allow_large"] is True and seen["n_resamples"] == 200000
