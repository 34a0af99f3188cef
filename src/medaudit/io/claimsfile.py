"""The claims file: what a model developer publishes with a model, and what a receiving site checks.

A claims file (``*.claims.json``) is a versioned JSON document holding the claims of a
finished audit at their own evaluation specification E (the matrix rows whose change is
"at E"), each with its E, the source estimate and interval, the design, B, seed and the
level it is judged against, plus a ``declared`` object for the declared-claim vocabulary.
Its format is :data:`CLAIMS_SCHEMA` (JSON Schema 2020-12; written to
``docs/claims.schema.json``, described in ``docs/claims-file.md``).

Two hashes, both SHA-256 of canonical JSON (sorted keys, no spaces, UTF-8, no NaN):

* ``content_hash`` — of the source tables the claims were read from (``{"block.table":
  records}`` as results.json stores them): ties the file to one audit's numbers;
  :func:`verify_claims_source` recomputes it from the audit folder;
* ``integrity`` — of the document itself without ``integrity``: :func:`read_claims_file`
  refuses a file changed after it was written.

Neither is a signature: whoever can edit the file can recompute them.  They catch a file
edited by hand or damaged in transit, and tell which audit a file came from.

Functions: :func:`export_claims` (audit folder -> document), :func:`write_claims_file`,
:func:`read_claims_file` (schema version, JSON Schema and integrity checked; one clear line
on refusal), :func:`seal_claims`, :func:`verify_claims_source`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medaudit.exceptions import SchemaError
from medaudit.io.messages import one_line, quote
from medaudit.io.output import FileKind, atomic_write_bytes, check_output_file, check_results_unchanged

__all__ = ["SCHEMA_VERSION", "KNOWN_SCHEMA_VERSIONS", "CLAIMS_SCHEMA", "SITE_VERDICTS",
           "export_claims", "write_claims_file", "read_claims_file", "check_claims", "seal_claims",
           "verify_claims_source", "canonical_json", "sha256_of", "schema_json", "read_json",
           "read_claims_source", "require_claims", "is_claims_file", "CLAIMS_FILE"]

#: the version this medaudit writes; a reader refuses any version it does not know
SCHEMA_VERSION = "1.0"
KNOWN_SCHEMA_VERSIONS = ("1.0",)
FORMAT = "medaudit-claims"
AT_E = "at E"
#: criteria where lower is better: a ranking claim on them holds when A - B < 0 (as planning)
LOWER_IS_BETTER = ("brier_score", "log_loss", "ece", "aurc", "selective_risk", "ece_equal_mass",
                   "debiased_l2_ce")
E_KEYS = ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion")
#: the verdicts of a source claim re-evaluated at a receiving site (``medaudit port``), in the
#: order a report's legend lists them
SITE_VERDICTS: dict[str, str] = {
    "holds": "the local interval excludes the claimed level on the claimed side",
    "does not hold": "the local interval lies wholly on the wrong side of the claimed level",
    "reversed": "a comparison or ranking whose local interval excludes 0 on the other side",
    "unresolved": "the local interval spans the claimed level: more local cases would tell "
                  "(the sample that would resolve it is given)",
    "not attainable": "the level is above the achievable ceiling of the local reference standard",
    "by construction": "true because the threshold was chosen again on the local data (asked "
                       "for): not evidence",
    "not assessable here": "the claim cannot be evaluated on the local data (the reason is given: "
                           "a model or prompt absent locally, one class only, a kind of claim "
                           "that compares source cohorts)",
}
_HEX64 = "^[0-9a-f]{64}$"
_NUM_OR_NULL = {"type": ["number", "null"]}
_HASH = {"type": "object", "additionalProperties": False, "required": ["algorithm", "of", "value"],
         "properties": {"algorithm": {"const": "sha256"}, "of": {"type": "string"},
                        "value": {"type": "string", "pattern": _HEX64}}}

CLAIMS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:medaudit:claims-file:1.0",
    "title": "medaudit claims file",
    "description": "Claims of a finished medaudit audit at their evaluation specification E, "
                   "published with a model so that a receiving site can check them on its data.",
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "format", "producer", "source", "content_hash", "claims",
                 "integrity"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION,
                           "description": "Version of this format; readers refuse versions they "
                                          "do not know."},
        "format": {"const": FORMAT},
        "producer": {
            "type": "object", "additionalProperties": False, "required": ["name", "version"],
            "properties": {
                "name": {"const": "medaudit"},
                "version": {"type": "string", "description": "medaudit that wrote the file"},
                "audit_versions": {"type": "object", "additionalProperties": {"type": "string"},
                                   "description": "library versions of the audit run"}}},
        "source": {
            "type": "object", "additionalProperties": False,
            "required": ["name", "data_source", "spec_digest", "confidence_level", "tables"],
            "properties": {
                "name": {"type": ["string", "null"], "description": "the audit's name"},
                "data_source": {"type": "object",
                                "description": "where the audit's data came from (its inputs "
                                               "record: dataset, score files and their hashes, or "
                                               "the simulation)"},
                "spec_digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$",
                                "description": "SHA-256 of the canonical JSON of the audit spec"},
                "confidence_level": {"type": "number", "exclusiveMinimum": 0,
                                     "exclusiveMaximum": 1},
                "tables": {"type": "array", "uniqueItems": True,
                           "items": {"type": "string", "pattern": "^[A-Za-z0-9_]+\\.[A-Za-z0-9_]+$"},
                           "description": "the source tables (block.table) the claims were read "
                                          "from"},
                "cohorts": {"type": "object", "description": "class counts of each cohort"},
                "score_scale": {"enum": ["probabilities", "logits"],
                                "description": "the scale of the audit's scores, on which every "
                                               "threshold of the file is a number (absent in "
                                               "files written before it was recorded)"}}},
        "content_hash": {**_HASH, "description": "SHA-256 of the canonical JSON of the source "
                                                 "tables the claims were read from"},
        "claims": {"type": "array", "items": {"$ref": "#/$defs/claim"}},
        "integrity": {**_HASH, "description": "SHA-256 of the canonical JSON of this document "
                                              "without its integrity member"},
    },
    "$defs": {
        "claim": {
            "type": "object", "additionalProperties": False,
            "required": ["id", "text", "kind", "E", "estimate", "ci_low", "ci_high",
                         "confidence_level", "design", "n_resamples", "seed", "level", "side",
                         "verdict", "declared"],
            "properties": {
                "id": {"type": "string", "minLength": 1},
                "text": {"type": "string"},
                "kind": {"type": "string", "minLength": 1},
                "E": {"$ref": "#/$defs/E"},
                "models": {"type": "array", "items": {"type": "string"}, "minItems": 2,
                           "maxItems": 2, "description": "a comparison's two models, A then B"},
                "estimate": _NUM_OR_NULL, "ci_low": _NUM_OR_NULL, "ci_high": _NUM_OR_NULL,
                "confidence_level": {"type": "number", "exclusiveMinimum": 0,
                                     "exclusiveMaximum": 1},
                "design": {"type": ["string", "null"]},
                "n_resamples": {"type": ["integer", "null"], "minimum": 1,
                                "description": "B, the number of resamples"},
                "seed": {"type": ["integer", "null"], "minimum": 0},
                "level": {**_NUM_OR_NULL, "description": "the value the claim is judged "
                                                         "against (0 for a difference)"},
                "side": {"enum": ["greater", "less", None],
                         "description": "greater: holds when the metric (or A - B) exceeds "
                                        "level; less: when it is below"},
                "verdict": {"type": "string"},
                "qualification": {"type": "string"},
                "source_table": {"type": "string"},
                "n_pos": {**_NUM_OR_NULL, "minimum": 0}, "n_neg": {**_NUM_OR_NULL, "minimum": 0},
                "provenance": {"enum": ["source row", "audit run"],
                               "description": "where design, B and seed were read"},
                "declared": {"type": "object",
                             "description": "the declared-claim specification (free JSON)"},
            },
        },
        "E": {
            "type": "object", "additionalProperties": False, "required": list(E_KEYS),
            "properties": {
                "model": {"type": "string"}, "prompt": {"type": ["string", "null"]},
                "cohort": {"type": ["string", "null"]}, "negatives": {"type": ["string", "null"]},
                "prevalence": {"type": ["string", "number", "null"]},
                "threshold": {**_NUM_OR_NULL, "description": "a fixed threshold, as a number"},
                "criterion": {"type": "string"}},
        },
    },
}


# ----------------------------------------------------------------------------- hashing

def canonical_json(obj: Any) -> bytes:
    """The canonical bytes that are hashed: sorted keys, no spaces, UTF-8, NaN refused."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sha256_of(obj: Any) -> str:
    """SHA-256 (hex) of :func:`canonical_json` of ``obj``.

    Examples
    --------
    >>> sha256_of({"b": 1, "a": [1.5, None]}) == sha256_of({"a": [1.5, None], "b": 1})
    True
    """
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def schema_json() -> str:
    """:data:`CLAIMS_SCHEMA` as the text of ``docs/claims.schema.json``."""
    return json.dumps(CLAIMS_SCHEMA, indent=2, ensure_ascii=False) + "\n"


def seal_claims(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the document with its ``integrity`` hash (re)computed."""
    doc = {k: copy.deepcopy(v) for k, v in obj.items() if k != "integrity"}
    doc["integrity"] = {"algorithm": "sha256",
                        "of": "canonical JSON of this document without integrity",
                        "value": sha256_of(doc)}
    return doc


# ----------------------------------------------------------------------------- export

def _finite(v: Any) -> float | None:
    """A JSON number, or None (results.json stores NaN as null and infinities as text)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def _int(v: Any) -> int | None:
    f = _finite(v)
    return int(f) if f is not None and f == int(f) else None


def _level(row: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """The value a claim is judged against and on which side (the planning block's rule)."""
    if _finite(row.get("level")) is not None:  # a matrix that carries it (declared claims)
        return float(row["level"]), str(row.get("side") or "greater")
    if _finite(row.get("claim_value")) is not None and row.get("claim_side") in ("greater", "less"):
        # the claims block writes each declared claim's value and side on its row: "ECE ≤ 0.1"
        # and a comparison against 0 (or -margin) have no "≥ L" in their text to read
        return float(row["claim_value"]), str(row["claim_side"])
    kind, crit = str(row.get("kind")), str(row.get("criterion") or "").split("[", 1)[0]
    if kind in ("ranking", "estimator"):
        return 0.0, "less" if crit in LOWER_IS_BETTER else "greater"
    m = re.search(r"≥\s*([0-9]*\.?[0-9]+)", str(row.get("claim", "")))
    if m:
        return float(m.group(1)), "greater"
    at_least = (spec.get("claims") or {}).get("auroc_at_least")
    if kind == "reliability" and _finite(at_least) is not None:
        return float(at_least), "greater"
    return None, None


def _declared(row: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """The declared-claim specification of a row: its own, else the spec's entry with its id.

    A receiving site re-states the claim from it (the constraint levels of an operating
    point, a threshold rule, a ranking's order), not from the row's text.
    """
    if isinstance(row.get("declared"), dict):
        return dict(row["declared"])
    if row.get("origin") != "declared":
        return {}
    entries = (spec.get("claims") or {}).get("declared") if isinstance(spec.get("claims"), dict) \
        else spec.get("claims")
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("id") == row.get("claim_id"):
            return copy.deepcopy(entry)
    return {}


def _source_rows(row: Mapping[str, Any], tables: Mapping[str, list[dict[str, Any]]]
                 ) -> list[dict[str, Any]]:
    """Rows of the claim's source table with its E (the model pair for a comparison)."""
    records = tables.get(str(row.get("source_table")), [])
    models = [m.strip() for m in str(row.get("model", "")).split(" vs ")]

    def same(r: Mapping[str, Any]) -> bool:
        for key in ("prompt", "cohort", "negatives"):
            if key in r and row.get(key) is not None and r[key] != row[key]:
                return False
        if len(models) == 2 and "model_a" in r:
            return {r.get("model_a"), r.get("model_b")} == set(models)
        return r.get("model") == row.get("model")

    hits = [r for r in records if same(r)]
    crit = str(row.get("criterion"))
    exact = [r for r in hits if r.get("criterion") in (crit, f"{crit}_difference")]
    if exact:
        return exact
    tau = _finite(row.get("threshold"))
    at_tau = [r for r in hits if tau is not None and _finite(r.get("threshold")) == tau]
    return at_tau or hits


def _claim(row: Mapping[str, Any], tables: Mapping[str, list[dict[str, Any]]],
           prov: Mapping[str, Any]) -> dict[str, Any]:
    spec = prov.get("spec") or {}
    level, side = _level(row, spec)
    found = _source_rows(row, tables)
    keys = {(r.get("design"), r.get("n_resamples"), r.get("seed")) for r in found}
    if found and len(keys) == 1:
        src = found[0]
        design, b, seed, origin = src.get("design"), src.get("n_resamples"), src.get("seed"), \
            "source row"
        n_pos, n_neg = _finite(src.get("n_pos")), _finite(src.get("n_neg"))
    else:  # no single source row: the run's settings (the design of the claim's cohort)
        design = (prov.get("designs") or {}).get(row.get("cohort"))
        b, seed, origin = prov.get("n_resamples"), prov.get("seed"), "audit run"
        n_pos = n_neg = None
    qual = str(row.get("qualification") or "")
    tau = row.get("threshold")
    if isinstance(tau, str) and tau in ("inf", "-inf"):
        qual = "; ".join(x for x in (qual, f"the source threshold is {tau}") if x)
    prevalence = row.get("prevalence")
    out = {
        "id": str(row["claim_id"]), "text": str(row.get("claim") or ""),
        "kind": str(row.get("kind") or ""),
        "E": {"model": str(row.get("model") or ""), "prompt": row.get("prompt"),
              "cohort": row.get("cohort"), "negatives": row.get("negatives"),
              "prevalence": prevalence if isinstance(prevalence, str) or prevalence is None
              else _finite(prevalence),
              "threshold": _finite(tau), "criterion": str(row.get("criterion") or "")},
        "estimate": _finite(row.get("estimate")), "ci_low": _finite(row.get("ci_low")),
        "ci_high": _finite(row.get("ci_high")),
        "confidence_level": float(prov.get("confidence_level", 0.95)),
        "design": design if isinstance(design, str) else None, "n_resamples": _int(b),
        "seed": _int(seed), "level": level, "side": side,
        "verdict": str(row.get("verdict") or ""), "qualification": qual,
        "source_table": str(row.get("source_table") or ""), "n_pos": n_pos, "n_neg": n_neg,
        "provenance": origin,
        "declared": _declared(row, spec),
    }
    models = [m.strip() for m in out["E"]["model"].split(" vs ")]
    if len(models) == 2:
        out["models"] = models
    return out


class _NonFinite(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_int(text: str) -> int:
    # an integer beyond a float's range (309 digits and up) fails wherever it is used as a
    # number (and past 4,300 digits Python refuses to read it): refused here, in one line
    if len(text.lstrip("-")) > 308:
        raise _NonFinite(f"the number {text[:40]}... (beyond the range of a float)")
    return int(text)


def _finite_float(text: str) -> float:
    # json reads a number too large for a float (1e400) as infinity, which no JSON writer
    # can write back (the integrity hash included): refused as the Infinity token is
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(f"the number {text[:40]} (beyond the range of a float)")
    return value


def read_json(path: Path, *, what: str, fix: str) -> Any:
    """Parse the JSON file ``path``; one line naming it (and the line and column) on failure.

    ``what`` names the kind of file in the message ("results.json", "a claims file"), ``fix``
    says what to do.  ``NaN`` and ``Infinity`` tokens (not JSON) are refused.
    """
    if not path.is_file():
        raise SchemaError(f"{str(path)!r} does not exist or is not a file; {fix}")
    if path.suffix.lower() in (".yaml", ".yml"):
        raise SchemaError(f"{path} is a YAML file (an audit spec?), not {what}; {fix}")
    if path.suffix.lower() in (".csv", ".tsv", ".txt", ".parquet"):
        # a table (the score table, say) is not a damaged JSON file: say what it is
        raise SchemaError(f"{path} is a table ({path.suffix.lower()}), not {what}; {fix}")
    try:
        # utf-8-sig: a byte-order mark (Notepad adds one on save) is not damage; the content
        # after it, which the integrity hash covers, is what is read
        return json.loads(path.read_bytes().decode("utf-8-sig"), parse_constant=_refuse_constant,
                          parse_float=_finite_float, parse_int=_finite_int)
    except _NonFinite as exc:
        raise SchemaError(f"{path}: holds {exc.args[0]}, which is not a finite JSON number (a "
                          f"missing one is null), so it is not {what} written by medaudit; {fix}"
                          ) from None
    except UnicodeDecodeError:
        raise SchemaError(f"{path}: not UTF-8 text, so not {what}; {fix}") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON "
                          f"({exc.msg}); the file is damaged or truncated. {fix}") from None


def _load_results(audit_dir: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    path = Path(audit_dir)
    path = path / "results.json" if path.is_dir() else path
    data = read_json(path, what="results.json", fix="give a folder written by `medaudit audit "
                     "SPEC.yaml --out DIR` (or its results.json), or rerun the audit.")
    check_results_unchanged(path)  # a claims file would publish edited numbers as the audit's
    if not isinstance(data, dict) or not isinstance(data.get("portability"), list) or not isinstance(
            data.get("provenance"), dict) or not isinstance(data.get("blocks"), dict):
        raise SchemaError(f"{path}: not the results of `medaudit audit` (it needs portability, "
                          "provenance and blocks).")
    return path, data


def _source_tables(data: Mapping[str, Any], names: list[str]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for name in names:
        block, _, table = name.partition(".")
        out[name] = ((data["blocks"].get(block) or {}).get("tables") or {}).get(table, [])
    return out


def export_claims(audit_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The claims file of a finished audit, as a sealed document (not yet written).

    Parameters
    ----------
    audit_dir : path
        A folder written by ``medaudit audit`` (or its ``results.json``).

    Returns
    -------
    dict
        Valid against :data:`CLAIMS_SCHEMA`: one claim per matrix row whose change is
        "at E", in matrix order (declared claims first, as the matrix has them).

    Notes
    -----
    Design, B and seed come from the claim's row in its source table (matched on E: model
    or model pair, prompt, cohort, negatives, criterion, else threshold); where no single
    row matches, from the run's settings (``provenance: "audit run"``).  The level is the
    matrix's own where it has one, else the planning block's rule: differences against 0 on
    the side where the criterion is better, "≥ L" in the claim's text, else the spec's
    ``claims.auroc_at_least``.  Non-finite numbers (stored as null or "inf") become null.
    """
    path, data = _load_results(audit_dir)
    prov = data["provenance"]
    rows = [r for r in data["portability"] if isinstance(r, dict) and r.get("change") == AT_E]
    names = sorted({str(r.get("source_table")) for r in rows if r.get("source_table")})
    tables = _source_tables(data, names)
    claims = [_claim(r, tables, prov) for r in rows]
    seen: set[str] = set()
    for c in claims:
        if c["id"] in seen:
            raise SchemaError(f"{path}: claim {c['id']!r} is at E twice in the matrix; results.json "
                              "was edited or is damaged. Rerun the audit.")
        seen.add(c["id"])
    from medaudit import __version__

    spec = prov.get("spec") or {}
    doc = {
        "schema_version": SCHEMA_VERSION, "format": FORMAT,
        "producer": {"name": "medaudit", "version": __version__,
                     "audit_versions": {str(k): str(v) for k, v in
                                        (prov.get("versions") or {}).items()}},
        "source": {"name": spec.get("name"), "data_source": dict(prov.get("inputs") or {}),
                   "spec_digest": "sha256:" + sha256_of(spec),
                   "confidence_level": float(prov.get("confidence_level", 0.95)),
                   "tables": names,
                   "cohorts": {str(k): {kk: vv for kk, vv in v.items() if kk in ("n", "n_pos", "n_neg")}
                               for k, v in (prov.get("cohorts") or {}).items() if isinstance(v, dict)},
                   # a threshold is a number on this scale: a site with the other scale
                   # converts it (port) instead of reading 0.5 as a logit
                   "score_scale": str(spec.get("score_scale") or "probabilities")},
        "content_hash": {"algorithm": "sha256",
                         "of": "canonical JSON of the source tables {block.table: records}",
                         "value": sha256_of(tables)},
        "claims": claims,
    }
    return seal_claims(doc)


def verify_claims_source(obj: Mapping[str, Any], audit_dir: str | os.PathLike[str]) -> None:
    """Check that the claims came from this audit: the source tables' hash and the spec digest.

    Raises :class:`~medaudit.exceptions.SchemaError` with one line when either differs.
    """
    path, data = _load_results(audit_dir)
    names = list(obj["source"]["tables"])
    got = sha256_of(_source_tables(data, names))
    if got != obj["content_hash"]["value"]:
        raise SchemaError(f"{path}: its tables {names!r} do not match the claims file's content "
                          "hash: the claims were exported from another audit (or a rerun with "
                          "other numbers). Export the claims again from this audit.")
    digest = "sha256:" + sha256_of(data["provenance"].get("spec") or {})
    if digest != obj["source"]["spec_digest"]:
        raise SchemaError(f"{path}: its spec differs from the one the claims file names "
                          "(spec_digest); export the claims again from this audit.")


# ----------------------------------------------------------------------------- files

def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(CLAIMS_SCHEMA)


def _check(doc: Any, where: str) -> None:
    """Schema version, JSON Schema, unique ids and integrity; one line naming ``where``."""
    if not isinstance(doc, dict):
        raise SchemaError(f"{where}: not a medaudit claims file (a JSON {type(doc).__name__}, not an "
                          "object).")
    version = doc.get("schema_version")
    if "schema_version" not in doc:
        raise SchemaError(f"{where}: not a medaudit claims file (no schema_version); export one "
                          "with `medaudit claims export AUDIT_DIR`.")
    if version not in KNOWN_SCHEMA_VERSIONS:
        known = ", ".join(KNOWN_SCHEMA_VERSIONS)
        m = re.fullmatch(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
        newest = max(tuple(map(int, v.split("."))) for v in KNOWN_SCHEMA_VERSIONS)
        if m and (int(m.group(1)), int(m.group(2))) > newest:
            raise SchemaError(f"{where}: claims-file schema_version {version} is newer than this "
                              f"medaudit reads ({known}); upgrade medaudit to read it.")
        if not isinstance(version, str) and str(version) in KNOWN_SCHEMA_VERSIONS:
            # a hand-edited file with the number 1.0 where the text "1.0" belongs
            raise SchemaError(f"{where}: schema_version must be the text {quote(str(version))}, "
                              f"not the number {version!r}; quote it in the file.")
        raise SchemaError(f"{where}: unknown claims-file schema_version {quote(version)} (this "
                          f"medaudit reads {known}); ask its producer for a file in a known "
                          "version.")
    import jsonschema

    err = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if err is not None:
        at = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise SchemaError(one_line(f"{where}: not a valid claims file at {at}: {err.message}; "
                                   "export it again with `medaudit claims export AUDIT_DIR`.",
                                   limit=400))
    ids = [c["id"] for c in doc["claims"]]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SchemaError(f"{where}: claim id {quote(dup[0])} appears more than once; ids must be "
                          "unique.")
    want = seal_claims(doc)["integrity"]["value"]
    if doc["integrity"]["value"] != want:
        raise SchemaError(f"{where}: the claims file was changed after it was written (its integrity "
                          "hash does not match its content); do not use it: ask its producer for "
                          "the original, or export it again from the audit.")
    for c in doc["claims"]:
        why = _contradiction(c)
        if why:
            raise SchemaError(f"{where}: claim {quote(c['id'])} contradicts itself: {why}; ask its "
                              "producer for a consistent file (`medaudit claims export AUDIT_DIR` "
                              "writes one).")


#: a declared claim's kind -> the kind its claims-file entry carries
_DECLARED_KIND = {"level": "level", "comparison": "comparison",
                  "operating_point": "operating point", "ranking": "ranking"}


def _same(a: Any, b: Any) -> bool:
    fa, fb = _finite(a), _finite(b)
    return fa is not None and fb is not None and math.isclose(fa, fb, rel_tol=1e-12, abs_tol=1e-12)


def _contradiction(c: Mapping[str, Any]) -> str | None:
    """Where a claim contradicts itself, in words: an interval that runs backwards, a
    numeric prevalence outside (0, 1), or a ``declared`` mapping that disagrees with its
    kind, E, level or side.

    A site re-states the claim from ``declared`` while the tables and the page show ``E``,
    ``level`` and ``side``: a file (written by hand or by another tool) in which the two
    differ would be judged on one claim and reported as another.  None when they agree or
    ``declared`` is empty (a generated claim).
    """
    lo, hi = _finite(c.get("ci_low")), _finite(c.get("ci_high"))
    if lo is not None and hi is not None and lo > hi:
        return f"its interval runs backwards (ci_low {lo!r} > ci_high {hi!r})"
    prev = c["E"].get("prevalence")
    if not isinstance(prev, (str, type(None))) and not 0.0 < float(prev) < 1.0:
        return f"`E.prevalence` is {prev!r}, not a prevalence in (0, 1) (or \"observed\")"
    d = c.get("declared") or {}
    if not isinstance(d, Mapping) or not d:
        return None
    e, kind = c["E"], d.get("kind")
    if kind in _DECLARED_KIND and c["kind"] != _DECLARED_KIND[kind]:
        return f"`declared` is a {kind} claim but `kind` is {quote(c['kind'])}"
    if kind in ("level", "comparison") and d.get("metric") is not None and (
            _metric_base(d["metric"]) != _metric_base(e["criterion"])):
        return (f"`declared` is about metric {quote(d['metric'])} but `E.criterion` is "
                f"{quote(e['criterion'])}")
    if kind == "comparison":
        pair = [d.get("model"), d.get("than")]
        if c.get("models") is not None and list(c["models"]) != pair:
            return f"`declared` compares {pair} but `models` is {list(c['models'])}"
        if e["model"] != f"{pair[0]} vs {pair[1]}":
            return f"`declared` compares {pair} but `E.model` is {quote(e['model'])}"
        return None
    if kind in ("level", "operating_point") and d.get("model") != e["model"]:
        return f"`declared` names model {quote(d.get('model'))} but `E.model` is {quote(e['model'])}"
    if kind == "level":
        for key, side in (("at_least", "greater"), ("at_most", "less")):
            if d.get(key) is not None and not (_same(d[key], c["level"]) and c["side"] == side):
                return (f"`declared` says {key}: {d[key]!r} but `level` is {c['level']!r} and "
                        f"`side` {c['side']!r}")
        # the page shows the text: one that says the other side is another claim
        text = c.get("text") if isinstance(c.get("text"), str) else ""
        says = {s for s, sign in (("greater", "≥"), ("less", "≤")) if sign in text}
        if len(says) == 1 and c["side"] not in says:
            return (f"its text {quote(text)} says {'≥' if 'greater' in says else '≤'} but "
                    f"`side` is {c['side']!r}")
    if kind == "operating_point":
        crit = str(e["criterion"]).split("[", 1)[0]
        rate = "sensitivity" if crit == "sensitivity_at_specificity" else crit
        bound = d.get(f"{rate}_at_least")
        if rate in ("sensitivity", "specificity") and bound is not None and not _same(
                bound, c["level"]):
            return f"`declared` says {rate}_at_least: {bound!r} but `level` is {c['level']!r}"
        tau = d.get("threshold")
        if _finite(tau) is not None and e.get("threshold") is not None and not _same(
                tau, e["threshold"]):
            return f"`declared` says threshold: {tau!r} but `E.threshold` is {e['threshold']!r}"
    return None


def _metric_base(metric: Any) -> str:
    """A metric id without options, the ``_difference`` of a contrast or the ``soft_`` of its
    soft-label twin: what ``declared.metric`` and ``E.criterion`` of one claim share."""
    base = str(metric).split("[", 1)[0]
    return base.removesuffix("_difference").removeprefix("soft_")


def is_claims_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a claims file medaudit wrote: a JSON object with the keys it writes.

    Recognised by content, not by name: ``format`` is ``"medaudit-claims"``, a
    ``schema_version`` is given and every top-level key of the schema is present (the
    integrity hash is not checked: a damaged claims file is still one medaudit wrote).
    """
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(doc, dict) and doc.get("format") == FORMAT
            and isinstance(doc.get("schema_version"), str)
            and set(CLAIMS_SCHEMA["required"]) <= set(doc))


#: what ``claims export --overwrite`` (and :func:`write_claims_file`) may replace
CLAIMS_FILE = FileKind("a claims file medaudit wrote", is_claims_file)


def write_claims_file(obj: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Seal, validate and write a claims document (deterministic bytes: sorted keys, indent 2).

    Returns the path written.  A document that does not validate is refused with one line
    and nothing is written; an existing ``path`` is replaced only when it is a claims file
    medaudit wrote (:data:`CLAIMS_FILE`).
    """
    out = check_output_file(path, kind=CLAIMS_FILE)
    doc = seal_claims(obj)
    _check(doc, "claims document")
    text = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write_bytes(out, text.encode("utf-8"))
    return out


def read_claims_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a claims file; return the document.

    Refused with :class:`~medaudit.exceptions.SchemaError`, one line naming the file and what
    to do: not JSON (line and column), an unknown or future ``schema_version``, a document
    the JSON Schema rejects (the JSON path of the first problem), duplicate claim ids, an
    integrity hash that does not match the content (a tampered or damaged file), or a claim
    whose ``declared`` mapping contradicts its kind, E, level or side.
    """
    p = Path(path)
    doc = read_json(p, what="a claims file", fix="give the path of a claims file (*.claims.json) "
                    "as its producer wrote it.")
    _check(doc, str(p))
    return doc


def check_claims(doc: Any, where: str) -> None:
    """Check a claims document as :func:`read_claims_file` does (version, schema, ids, integrity).

    ``where`` names it in the one-line :class:`~medaudit.exceptions.SchemaError`.
    """
    _check(doc, where)


def require_claims(doc: Mapping[str, Any], where: str | os.PathLike[str]) -> None:
    """Refuse a claims document that holds no claim: a site would check nothing and pass.

    An empty list is valid JSON for the schema, but porting or monitoring it writes a
    portability matrix of nothing, which reads as "no claim failed"; the one-line
    :class:`~medaudit.exceptions.SchemaError` names ``where`` and says how to give claims.
    """
    if not doc.get("claims"):
        raise SchemaError(f"{where}: holds no claims, so there is nothing to check on local data. "
                          "Declare the claims in the source audit's spec (`claims: declared:`) or "
                          "let it generate them (`claims: generate: [...]`, see docs/spec.md), "
                          "rerun that audit and export again.")


def read_claims_source(source: str | os.PathLike[str]) -> tuple[dict[str, Any], Path]:
    """The claims of ``source`` and the file they were read from.

    ``source`` is an audit folder (its ``results.json`` is exported on the fly with
    :func:`export_claims`), a ``results.json``, or a claims file (read and checked with
    :func:`read_claims_file`: an unknown or future version, a tampered file or one the
    schema rejects is refused with one line naming it).  A source that holds no claim is
    refused too (:func:`require_claims`): checking nothing would read as passing.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise SchemaError(f"the source must be a path (an audit folder written by `medaudit audit`, "
                          f"its results.json, or a *.claims.json); got {type(source).__name__}.")
    p = Path(source)
    if p.is_dir() or p.name == "results.json":
        doc, where = export_claims(p), (p / "results.json" if p.is_dir() else p)
        check_claims(doc, str(where))
    elif not p.exists():
        raise SchemaError(f"{str(p)!r} does not exist; give an audit folder written by `medaudit "
                          "audit`, its results.json, or a claims file (*.claims.json).")
    elif p.suffix.lower() in (".yaml", ".yml"):  # `port SPEC.yaml CLAIMS` for `port CLAIMS SPEC.yaml`
        raise SchemaError(f"{str(p)!r} is a YAML file (an audit spec?), not claims: the source "
                          "comes first (an audit folder, its results.json or a *.claims.json), "
                          "then the local data's spec.")
    else:
        doc, where = read_claims_file(p), p
    require_claims(doc, where)
    return doc, where
