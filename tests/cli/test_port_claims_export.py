"""``medaudit claims export AUDIT_DIR``: the file beside the folder, validated, never destroying.

Witnesses: the committed docs/claims.schema.json applied with jsonschema to the written
file; the bytes of ``export_claims`` written by hand; the audit folder's bytes before and
after (the export never writes inside it).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from medaudit.cli.main import main
from medaudit.io.claimsfile import export_claims
from tests.port._source import source_audit  # noqa: F401 - a session fixture

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "claims.schema.json").read_text(encoding="utf-8"))


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_default_file_is_beside_the_folder_and_validates(source_audit, tmp_path):  # noqa: F811
    before = _tree(source_audit)
    out = source_audit.with_name(source_audit.name + ".claims.json")
    out.unlink(missing_ok=True)
    assert main(["claims", "export", str(source_audit), "--quiet"]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    want = json.dumps(export_claims(source_audit), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert out.read_text(encoding="utf-8") == want
    assert _tree(source_audit) == before  # nothing written inside the audit
    out.unlink()


def test_export_from_results_json_and_out(source_audit, tmp_path):  # noqa: F811
    out = tmp_path / "m.claims.json"
    assert main(["claims", "export", str(source_audit / "results.json"), "--out", str(out),
                 "--quiet"]) == 0
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(out.read_text(encoding="utf-8")))


def test_existing_file_needs_overwrite(source_audit, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "x.claims.json"
    out.write_text("mine", encoding="utf-8")
    assert main(["claims", "export", str(source_audit), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "exists" in err and "--overwrite" in err, err
    assert out.read_text(encoding="utf-8") == "mine"
    # --overwrite replaces only a claims file medaudit wrote: "mine" stays
    assert main(["claims", "export", str(source_audit), "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a claims file medaudit wrote" in err, err
    assert out.read_text(encoding="utf-8") == "mine"
    out.write_text(json.dumps({**export_claims(source_audit), "claims": []}), encoding="utf-8")
    assert main(["claims", "export", str(source_audit), "--out", str(out), "--overwrite",
                 "--quiet"]) == 0
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(out.read_text(encoding="utf-8")))
    assert json.loads(out.read_text(encoding="utf-8"))["claims"]


def test_an_audit_without_claims_is_not_exported(source_audit, tmp_path, capsys):  # noqa: F811
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(source_audit, bare)
    results = json.loads((bare / "results.json").read_text(encoding="utf-8"))
    results["portability"] = []  # an audit whose spec stated no claim
    (bare / "results.json").write_text(json.dumps(results), encoding="utf-8")
    from medaudit.io.output import record_written

    record_written(bare, ["results.json"])  # as if the audit had written it so (else: edited)
    assert export_claims(bare)["claims"] == []  # the library reads it; the command refuses it
    out = tmp_path / "bare.claims.json"
    assert main(["claims", "export", str(bare), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds no claims" in err and str(bare) in err, err
    assert not out.exists()


def test_never_inside_the_audit_folder(source_audit, capsys):  # noqa: F811
    before = _tree(source_audit)
    assert main(["claims", "export", str(source_audit), "--out",
                 str(source_audit / "claims.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "inside the audit folder" in err, err
    assert _tree(source_audit) == before


def test_not_an_audit_is_one_line(tmp_path, capsys):
    assert main(["claims", "export", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("medaudit: error: ") and err.count("\n") == 0 and "nothing" in err
