"""The claims file: export from a finished audit, write, read back, refuse what is not intact.

Witnesses: the committed JSON Schema (docs/claims.schema.json) applied with jsonschema
directly to every exported file; the content hash recomputed here with hashlib from the
results.json tables; each claim's numbers against its matrix row and its source-table row,
looked up by hand; a hand-built results.json for the export rules (levels, sides, run
provenance, non-finite numbers).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest

from medaudit.cli.main import main
from medaudit.exceptions import SchemaError
from medaudit.io.claimsfile import (
    CLAIMS_SCHEMA,
    export_claims,
    read_claims_file,
    schema_json,
    seal_claims,
    verify_claims_source,
    write_claims_file,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "claims.schema.json"


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    """The real-data example (TB predictions of kwang311): a source audit on two cohorts."""
    out = tmp_path_factory.mktemp("claims") / "kwang"
    assert main(["audit", str(ROOT / "examples" / "kwang311_tb.yaml"), "--out", str(out),
                 "--quiet"]) == 0
    return out


def _validate_with_committed_schema(doc):
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(doc)


def _canonical_sha(obj):
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_committed_schema_is_current_and_valid():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_json(), (
        "docs/claims.schema.json is out of date: write medaudit.io.claimsfile.schema_json() to it")
    jsonschema.Draft202012Validator.check_schema(CLAIMS_SCHEMA)


def test_exported_file_validates_and_round_trips(audit, tmp_path):
    doc = export_claims(audit)
    _validate_with_committed_schema(doc)
    path = write_claims_file(doc, tmp_path / "model.claims.json")
    _validate_with_committed_schema(json.loads(path.read_text(encoding="utf-8")))
    assert read_claims_file(path) == doc
    again = write_claims_file(export_claims(audit), tmp_path / "again.claims.json")
    assert again.read_bytes() == path.read_bytes()  # same audit, same bytes
    verify_claims_source(doc, audit)


def test_a_byte_order_mark_is_not_damage(audit, tmp_path):
    """Probe finding: a claims file saved by Notepad (UTF-8 with a BOM) was "not valid JSON
    ...; the file is damaged or truncated".  The content after the mark is read, and its
    integrity hash still holds."""
    path = write_claims_file(export_claims(audit), tmp_path / "plain.claims.json")
    bom = tmp_path / "bom.claims.json"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    assert read_claims_file(bom) == read_claims_file(path)


def test_claims_are_the_at_E_rows_with_their_source_provenance(audit):
    results = json.loads((audit / "results.json").read_text(encoding="utf-8"))
    at_e = [r for r in results["portability"] if r["change"] == "at E"]
    doc = export_claims(audit)
    assert [c["id"] for c in doc["claims"]] == [r["claim_id"] for r in at_e]
    assert {c["kind"] for c in doc["claims"]} == {"ranking", "reliability", "operating constraint"}
    metrics = results["blocks"]["discrimination"]["tables"]["metrics"]
    thresholds = results["blocks"]["transport"]["tables"]["thresholds"]
    for c, r in zip(doc["claims"], at_e, strict=True):
        assert (c["estimate"], c["ci_low"], c["ci_high"]) == (r["estimate"], r["ci_low"],
                                                              r["ci_high"])
        assert c["E"] == {k: r[k] for k in ("model", "prompt", "cohort", "negatives",
                                            "prevalence", "threshold", "criterion")}
        if c["kind"] == "reliability":
            src = [m for m in metrics if m["model"] == r["model"] and m["cohort"] == r["cohort"]
                   and m["criterion"] == "roc_auc"]
            assert len(src) == 1 and c["level"] == 0.9 and c["side"] == "greater"
        elif c["kind"] == "operating constraint":
            src = [t for t in thresholds if t["model"] == r["model"]
                   and t["threshold"] == r["threshold"]]
            assert len(src) == 1 and c["level"] == src[0]["target_value"]
            assert isinstance(c["E"]["threshold"], float)
        else:
            a, b = r["model"].split(" vs ")
            assert c["models"] == [a, b] and c["level"] == 0.0
            src = [d for d in results["blocks"]["discrimination"]["tables"]["model_differences"]
                   if {d["model_a"], d["model_b"]} == {a, b} and d["cohort"] == r["cohort"]
                   and d["criterion"] == "roc_auc_difference"]
            assert len(src) == 1
        assert (c["design"], c["n_resamples"], c["seed"]) == (
            src[0]["design"], src[0]["n_resamples"], src[0]["seed"])
        assert (c["n_pos"], c["n_neg"]) == (src[0]["n_pos"], src[0]["n_neg"])


def test_hashes_by_hand(audit):
    results = json.loads((audit / "results.json").read_text(encoding="utf-8"))
    doc = export_claims(audit)
    tables = {name: results["blocks"][name.split(".")[0]]["tables"][name.split(".")[1]]
              for name in doc["source"]["tables"]}
    assert doc["content_hash"]["value"] == _canonical_sha(tables)
    assert doc["source"]["spec_digest"] == "sha256:" + _canonical_sha(
        results["provenance"]["spec"])
    body = {k: v for k, v in doc.items() if k != "integrity"}
    assert doc["integrity"]["value"] == _canonical_sha(body)
    assert doc["producer"]["audit_versions"] == results["provenance"]["versions"]
    assert doc["source"]["data_source"] == results["provenance"]["inputs"]


# ----------------------------------------------------------------------------- refusals

def _written(audit, tmp_path, edit=None, reseal=False):
    doc = export_claims(audit)
    path = write_claims_file(doc, tmp_path / "c.claims.json")
    if edit is None:
        return path
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc)
    if reseal:
        doc = seal_claims(doc)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def _refused(path, *fragments):
    with pytest.raises(SchemaError) as info:
        read_claims_file(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path))
    for f in fragments:
        assert f in msg, msg
    return msg


def test_tampered_file_is_refused(audit, tmp_path):
    def edit(doc):
        doc["claims"][0]["ci_low"] += 0.01
    _refused(_written(audit, tmp_path, edit), "was changed after it was written")


def test_tampered_hash_is_refused(audit, tmp_path):
    def edit(doc):
        doc["integrity"]["value"] = "0" * 64
    _refused(_written(audit, tmp_path, edit), "integrity hash does not match")


def test_future_version_is_refused(audit, tmp_path):
    def edit(doc):
        doc["schema_version"] = "2.0"
    _refused(_written(audit, tmp_path, edit, reseal=True),
             "schema_version 2.0 is newer than this medaudit reads (1.0); upgrade medaudit")


@pytest.mark.parametrize("version", ["banana", 1, None])
def test_unknown_version_is_refused(audit, tmp_path, version):
    def edit(doc):
        doc["schema_version"] = version
    _refused(_written(audit, tmp_path, edit, reseal=True), "unknown claims-file schema_version")


def test_missing_version_is_refused(audit, tmp_path):
    def edit(doc):
        del doc["schema_version"]
    _refused(_written(audit, tmp_path, edit, reseal=True), "no schema_version")


def test_schema_violation_names_the_place(audit, tmp_path):
    def edit(doc):
        del doc["claims"][2]["level"]
    _refused(_written(audit, tmp_path, edit, reseal=True),
             "not a valid claims file at claims/2: 'level' is a required property")


def test_a_negative_class_count_is_refused(audit, tmp_path):
    # probe finding: a hand-edited n_pos of -5 was accepted and shown as the source's count
    def edit(doc):
        doc["claims"][0]["n_pos"] = -5
    _refused(_written(audit, tmp_path, edit, reseal=True),
             "not a valid claims file at claims/0/n_pos: -5 is less than the minimum of 0")


def test_threshold_must_be_a_number(audit, tmp_path):
    def edit(doc):
        c = next(c for c in doc["claims"] if c["E"]["threshold"] is not None)
        c["E"]["threshold"] = "0.42"
    _refused(_written(audit, tmp_path, edit, reseal=True), "/E/threshold: '0.42' is not of type")


def test_duplicate_ids_are_refused(audit, tmp_path):
    def edit(doc):
        doc["claims"][1]["id"] = doc["claims"][0]["id"]
    _refused(_written(audit, tmp_path, edit, reseal=True), "appears more than once")


def test_not_json_and_nan_are_refused(tmp_path):
    bad = tmp_path / "bad.claims.json"
    bad.write_text('{"schema_version": "1.0",\n "x": }', encoding="utf-8")
    _refused(bad, "line 2, column 7: not valid JSON")
    bad.write_text('{"schema_version": "1.0", "x": NaN}', encoding="utf-8")
    _refused(bad, "holds NaN")
    # a number beyond the range of a float reads as infinity: refused the same way (it was a
    # traceback from the integrity hash, which cannot write it back)
    bad.write_text('{"schema_version": "1.0", "x": 1e400}', encoding="utf-8")
    _refused(bad, "holds the number 1e400 (beyond the range of a float)")
    # review finding: the same as an integer (401 digits: OverflowError; 5,000: Python's
    # digit limit, ValueError) was a traceback too
    for digits in (401, 5000):
        bad.write_text('{"schema_version": "1.0", "x": 1' + "0" * digits + "}", encoding="utf-8")
        _refused(bad, "holds the number 1000000000000000000000000000000000000000... (beyond the "
                      "range of a float)")
    bad.write_text("[1, 2]", encoding="utf-8")
    _refused(bad, "not a medaudit claims file")


def test_write_refuses_an_invalid_document(audit, tmp_path):
    doc = export_claims(audit)
    doc["claims"][0]["E"]["threshold"] = "high"
    with pytest.raises(SchemaError, match="claims document: not a valid claims file at claims/0"):
        write_claims_file(doc, tmp_path / "x.claims.json")
    assert not (tmp_path / "x.claims.json").exists()


# ----------------------------------------------------------------------------- export rules

def _results(tmp_path, portability, tables, **prov):
    provenance = {"spec": {"name": "hand", "claims": {"auroc_at_least": 0.85}},
                  "confidence_level": 0.9, "n_resamples": 500, "seed": 7,
                  "designs": {"c1": "ordinary"}, "inputs": {"scores": {"path": "s.csv"}},
                  "versions": {"medaudit": "0.1.0"}, "cohorts": {"c1": {"n": 10, "n_pos": 4,
                                                                        "n_neg": 6, "x": 1}},
                  **prov}
    blocks = {}
    for name, records in tables.items():
        b, t = name.split(".")
        blocks.setdefault(b, {"tables": {}})["tables"][t] = records
    d = tmp_path / "audit"
    d.mkdir()
    (d / "results.json").write_text(json.dumps({"provenance": provenance, "blocks": blocks,
                                                "portability": portability}), encoding="utf-8")
    return d


def _row(claim_id, kind, text, **e):
    base = {"claim_id": claim_id, "claim": text, "kind": kind, "change": "at E", "changed_to": "",
            "model": "m", "prompt": "p", "cohort": "c1", "negatives": "all",
            "prevalence": "observed", "threshold": None, "criterion": "roc_auc", "estimate": 0.9,
            "ci_low": 0.8, "ci_high": 0.95, "verdict": "holds", "qualification": "",
            "source_table": "b.t"}
    return {**base, **e}


def test_export_rules_by_hand(tmp_path):
    rows = [
        _row("L1", "reliability", "m AUROC at least the spec's level"),
        _row("R1", "ranking", "a beats b on Brier", model="a vs b", criterion="brier_score",
             source_table="b.d"),
        _row("T1", "operating constraint", "keeps sensitivity ≥ 0.9", criterion="sensitivity",
             threshold="inf", estimate=None, ci_low=None, ci_high=None),
        {**_row("L1", "reliability", "x"), "change": "C"},  # not at E: left out
    ]
    tables = {"b.t": [{"model": "m", "prompt": "p", "cohort": "c1", "criterion": "roc_auc",
                       "design": "within_label", "n_resamples": 100, "seed": 3, "n_pos": 4.0,
                       "n_neg": 6.0}],
              "b.d": []}
    doc = export_claims(_results(tmp_path, rows, tables))
    _validate_with_committed_schema(doc)
    l1, r1, t1 = doc["claims"]
    assert (l1["level"], l1["side"], l1["provenance"]) == (0.85, "greater", "source row")
    assert (l1["design"], l1["n_resamples"], l1["seed"]) == ("within_label", 100, 3)
    assert (r1["level"], r1["side"], r1["models"]) == (0.0, "less", ["a", "b"])
    # no source row: the run's settings, and the cohort's design
    assert (r1["provenance"], r1["design"], r1["n_resamples"], r1["seed"]) == (
        "audit run", "ordinary", 500, 7)
    assert t1["level"] == 0.9 and t1["E"]["threshold"] is None
    assert "the source threshold is inf" in t1["qualification"]
    assert doc["source"]["cohorts"] == {"c1": {"n": 10, "n_pos": 4, "n_neg": 6}}
    assert doc["source"]["confidence_level"] == 0.9 and l1["confidence_level"] == 0.9
    assert doc["source"]["tables"] == ["b.d", "b.t"]


def test_declared_object_is_carried(tmp_path):
    rows = [_row("D1", "level", "m AUROC ≥ 0.8", declared={"type": "level", "metric": "roc_auc",
                                                           "op": ">=", "value": 0.8})]
    doc = export_claims(_results(tmp_path, rows, {"b.t": []}))
    assert doc["claims"][0]["declared"] == {"type": "level", "metric": "roc_auc", "op": ">=",
                                            "value": 0.8}
    assert doc["claims"][0]["level"] == 0.8


def test_verify_source_refuses_another_audit(audit, tmp_path):
    other = _results(tmp_path, [_row("L1", "reliability", "x ≥ 0.8")], {"b.t": []})
    doc = export_claims(audit)
    doc["source"]["tables"] = ["b.t"]
    with pytest.raises(SchemaError, match="do not match the claims file's content hash"):
        verify_claims_source(doc, other)


def test_export_refuses_what_is_not_an_audit(tmp_path):
    with pytest.raises(SchemaError, match="does not exist or is not a file; give a folder written by"):
        export_claims(tmp_path / "nowhere")
    (tmp_path / "results.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SchemaError, match="not the results of `medaudit audit`"):
        export_claims(tmp_path)


def _declared_claims_file(tmp_path):
    """A claims file of three declared claims (level, comparison, operating point)."""
    rows = [
        _row("D01", "level", "m: AUROC ≥ 0.7", claim_value=0.7, claim_side="greater",
             declared={"kind": "level", "model": "m", "metric": "roc_auc", "at_least": 0.7}),
        _row("D02", "comparison", "m is better than n on AUROC", model="m vs n",
             criterion="roc_auc_difference", claim_value=0.0, claim_side="greater",
             declared={"kind": "comparison", "model": "m", "than": "n", "metric": "roc_auc",
                       "margin": 0.0}),
        _row("D03", "operating point", "m: Se ≥ 0.8 at τ = 0.5", criterion="sensitivity",
             threshold=0.5, claim_value=0.8, claim_side="greater",
             declared={"kind": "operating_point", "model": "m", "sensitivity_at_least": 0.8,
                       "threshold": 0.5}),
    ]
    doc = export_claims(_results(tmp_path, rows, {"b.t": []}))
    return write_claims_file(doc, tmp_path / "d.claims.json")


@pytest.mark.parametrize("claim, key, value, fragment", [
    (0, "level", 95, "`declared` says at_least: 0.7 but `level` is 95"),
    (0, "side", "less", "`declared` says at_least: 0.7 but `level` is 0.7 and `side` 'less'"),
    (0, "kind", "comparison", "`declared` is a level claim but `kind` is 'comparison'"),
    (0, "E.model", "n", "`declared` names model 'm' but `E.model` is 'n'"),
    (0, "declared.at_least", 0.99, "`declared` says at_least: 0.99 but `level` is 0.7"),
    (1, "models", ["n", "m"], "`declared` compares ['m', 'n'] but `models` is ['n', 'm']"),
    (2, "E.threshold", 50, "`declared` says threshold: 0.5 but `E.threshold` is 50"),
    (2, "level", 0.1, "`declared` says sensitivity_at_least: 0.8 but `level` is 0.1"),
    (0, "ci_low", 0.99, "its interval runs backwards (ci_low 0.99 > ci_high 0.95)"),
    (1, "E.prevalence", 5, "`E.prevalence` is 5, not a prevalence in (0, 1)"),
    # probe findings: a resealed file judged on one metric and reported as another
    (0, "declared.metric", "brier_score",
     "`declared` is about metric 'brier_score' but `E.criterion` is 'roc_auc'"),
    (1, "declared.metric", "ece", "`declared` is about metric 'ece' but `E.criterion` is "
                                  "'roc_auc_difference'"),
])
def test_declared_claim_that_contradicts_its_entry_is_refused(tmp_path, claim, key, value,
                                                              fragment):
    # probe finding: a resealed file whose `level`, `E` or `kind` disagreed with `declared`
    # was judged on `declared` and reported with the other numbers ("level 95 ... holds")
    path = _declared_claims_file(tmp_path)
    assert read_claims_file(path)["claims"][claim]["declared"]
    doc = json.loads(path.read_text(encoding="utf-8"))
    target = doc["claims"][claim]
    *parents, last = key.split(".")
    for p in parents:
        target = target[p]
    target[last] = value
    path.write_text(json.dumps(seal_claims(doc), indent=2, ensure_ascii=False), encoding="utf-8")
    _refused(path, f"claim 'D0{claim + 1}' contradicts itself: {fragment}", "ask its producer")
    with pytest.raises(SchemaError, match="contradicts itself"):
        write_claims_file(doc, tmp_path / "again.claims.json")
    assert not (tmp_path / "again.claims.json").exists()


def test_a_level_claim_whose_text_says_the_other_side_is_refused(tmp_path):
    # probe finding: `side` and `declared` turned to at_most (consistently, and resealed) while
    # the text, which the page shows, still said "≥ 0.7": judged as one claim, shown as another
    path = _declared_claims_file(tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    c = doc["claims"][0]
    c["side"] = "less"
    c["declared"].update(at_least=None, at_most=0.7)
    path.write_text(json.dumps(seal_claims(doc), indent=2, ensure_ascii=False), encoding="utf-8")
    _refused(path, "claim 'D01' contradicts itself: its text 'm: AUROC ≥ 0.7' says ≥ but `side` "
                   "is 'less'")
