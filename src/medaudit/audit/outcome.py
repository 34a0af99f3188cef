"""What an audit produced, and its files: the block tables and ``results.json``, written and read back.

:class:`AuditOutcome` is the in-memory result of an audit (spec, block results, the
portability matrix, provenance).  :func:`write_results` writes its tables (CSV and
Parquet) and ``results.json``; :func:`load_outcome` rebuilds the outcome from
``results.json`` without recomputing anything.  This module sits below both the runner
(``medaudit.audit.run``) and the report (``medaudit.report``), which is how
``medaudit report DIR`` re-renders a finished audit byte for byte.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import BLOCKS
from medaudit.blocks.block import BlockResult
from medaudit.blocks.claimkit import CLAIM_COLUMNS, VERDICTS
from medaudit.blocks.rows import E_COLUMNS, PROVENANCE_COLUMNS
from medaudit.exceptions import SchemaError
from medaudit.io.messages import quote
from medaudit.io.output import atomic_write_bytes, check_results_unchanged, json_text, write_csv
from medaudit.io.specfile import validate_model

__all__ = ["AuditOutcome", "write_results", "results_text", "load_outcome", "to_parquet"]


@dataclass(frozen=True, eq=False)
class AuditOutcome:
    """What an audit produced: spec, block results in run order, the matrix, provenance."""

    spec: AuditSpec
    results: Mapping[str, BlockResult]
    #: the portability matrix in long form (one row per claim x changed element)
    claims: pd.DataFrame
    provenance: dict[str, Any] = field(default_factory=dict)


def results_text(outcome: AuditOutcome) -> tuple[str, AuditOutcome]:
    """The text of ``results.json`` for ``outcome`` and the outcome :func:`load_outcome`
    rebuilds from it (read from the text itself: no file is written or read).

    The report is drawn from the rebuilt outcome, so it can start before the files are
    written and still be what ``medaudit report DIR`` draws from the file.
    """
    blocks_json: dict[str, Any] = {}
    for name, res in outcome.results.items():
        blocks_json[name] = {"notes": list(res.notes), "tables": {},
                             # JSON objects are written with sorted keys: keep the order
                             "table_names": list(res.tables),
                             "columns": {t: [str(c) for c in df.columns]
                                         for t, df in res.tables.items()}}
        if res.provenance:
            blocks_json[name]["provenance"] = res.provenance
        for tname, df in res.tables.items():
            blocks_json[name]["tables"][tname] = df.to_dict("records")
    text = json_text({"provenance": outcome.provenance, "blocks": blocks_json,
                      "portability": outcome.claims.to_dict("records"),
                      # sorted keys lose the spec's declared cohort order
                      "key_order": {"cohorts": list(outcome.spec.cohorts)}})
    return text, _rebuild(json.loads(text), Path("results.json"))


def write_results(outcome: AuditOutcome, directory: Path, *, text: str | None = None) -> None:
    """Write ``tables/`` (CSV + Parquet), ``portability.csv``/``.parquet`` and ``results.json``.

    ``text``: the results.json text when already made (:func:`results_text`).  The files
    are not synced one by one: the folder is meant to be an :func:`atomic_directory`,
    which syncs them together before it is renamed into place.
    """
    (directory / "tables").mkdir()
    for name, res in outcome.results.items():
        for tname, df in res.tables.items():
            _write_table(df, directory / "tables" / f"{name}__{tname}")
    _write_table(outcome.claims, directory / "portability")
    if text is None:
        text = results_text(outcome)[0]
    atomic_write_bytes(directory / "results.json", (text + "\n").encode("utf-8"), sync=False)


def _write_table(df: pd.DataFrame, stem: Path) -> None:
    """``stem.csv`` and ``stem.parquet`` of one frame (each copies only what it must change)."""
    write_csv(df, stem.with_name(stem.name + ".csv"), sync=False)
    to_parquet(df, stem.with_name(stem.name + ".parquet"))


def to_parquet(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` as Parquet; mixed-type object columns (prevalence "observed" or 0.5) as text."""
    text_cols = {}
    for c in df.columns:
        if df[c].dtype == object:
            kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float)
                                                                        and v != v)}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                text_cols[c] = df[c].map(lambda v: None if v is None else str(v))
    safe = df
    if text_cols:  # a shallow copy with the converted columns; the frame itself is untouched
        safe = df.copy(deep=False)
        for c, v in text_cols.items():
            safe[c] = v
    safe.to_parquet(path, index=False)


_INF = {"inf": math.inf, "-inf": -math.inf}  # how write_json stores infinities


def _records_frame(records: list[dict[str, Any]], columns: list[str] | None) -> pd.DataFrame:
    """A DataFrame from ``results.json`` records (null -> NaN/None, "inf" -> float)."""
    if columns is None:  # results.json written before column orders were recorded
        seen = list(dict.fromkeys(k for r in records for k in r))
        first = [c for c in (*E_COLUMNS, *PROVENANCE_COLUMNS) if c in seen]
        columns = first + [c for c in seen if c not in first]
    df = pd.DataFrame.from_records(records, columns=columns) if records else pd.DataFrame(
        columns=columns)
    for c in df.columns:
        if df[c].dtype != object:
            continue
        vals = [v for v in df[c] if v is not None]
        if vals and any(isinstance(v, str) and v in _INF for v in vals) and all(
                (isinstance(v, str) and v in _INF)
                or (isinstance(v, int | float) and not isinstance(v, bool)) for v in vals):
            df[c] = [math.nan if v is None else (_INF[v] if isinstance(v, str) else float(v))
                     for v in df[c]]
    return df


def load_outcome(directory: str | Path) -> AuditOutcome:
    """Rebuild an :class:`AuditOutcome` (spec, block tables, claims, provenance) from results.json.

    Nothing is recomputed: the tables are the records :func:`write_results` stored, in
    their original block, table and column order.
    """
    directory = Path(directory)
    path = directory / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist; point at a directory written by "
                                "`medaudit audit SPEC.yaml --out DIR`.")
    check_results_unchanged(path)  # edited numbers are never read back as the audit's
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SchemaError(f"{path}: not UTF-8 text; results.json is damaged. Rerun the audit "
                          "to write it again.") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); the file "
                          "is damaged or truncated. Rerun the audit to write it again.") from None
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: not the results of `medaudit audit` (a JSON "
                          f"{type(data).__name__}, not an object).")
    missing = [k for k in ("provenance", "blocks", "portability") if k not in data]
    if missing or not isinstance(data.get("provenance"), dict) or "spec" not in data["provenance"]:
        raise SchemaError(f"{path}: not the results of `medaudit audit` (it lacks "
                          f"{missing or ['provenance.spec']}).")
    _check_read_fields(data, path)
    try:
        return _rebuild(data, path)
    except SchemaError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # edited by hand or by a tool
        raise SchemaError(f"{path}: results.json was edited or is damaged ({type(exc).__name__}: "
                          f"{quote(str(exc))}); rerun the audit to write it again.") from None


def _check_read_fields(data: dict[str, Any], path: Path) -> None:
    """The provenance and claim fields the report prints, as the audit writes them.

    A results.json that lost its marker (copied on its own) is not checked for edits
    (:func:`check_results_unchanged` needs the manifest beside it), so a wrong type would
    otherwise surface as a traceback from the page's template, and a wrong value (B = -5,
    "700 % intervals", a verdict outside the vocabulary) as a page that states it.
    """
    def bad(key: str, expected: str, value: Any) -> SchemaError:
        return SchemaError(f"{path}: {key} must be {expected}; got {repr(value)[:80]}. "
                           "results.json was edited or is damaged: rerun the audit to write it "
                           "again.")

    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    prov = data["provenance"]
    for key in ("cohorts", "designs", "multiplicity", "inputs", "versions", "spec"):
        if key in prov and not isinstance(prov[key], dict):
            raise bad(f"provenance.{key}", "an object", prov[key])
    for key in ("n_resamples", "n_permutations"):
        if prov.get(key) is not None and not (whole(prov[key]) and prov[key] >= 1):
            raise bad(f"provenance.{key}", "a whole number >= 1", prov[key])
    if prov.get("seed") is not None and not (whole(prov["seed"]) and prov["seed"] >= 0):
        raise bad("provenance.seed", "a whole number >= 0", prov["seed"])
    level = prov.get("confidence_level")
    if level is not None and not (isinstance(level, (int, float)) and not isinstance(level, bool)
                                  and 0.0 < float(level) < 1.0):
        raise bad("provenance.confidence_level", "a number between 0 and 1", level)
    blocks = data["blocks"]
    if not isinstance(blocks, dict):
        raise bad("blocks", "an object (block name -> its tables)", type(blocks).__name__)
    for name, b in blocks.items():
        if name not in BLOCKS:
            raise bad(f"blocks.{name}", f"a block of this medaudit ({', '.join(BLOCKS)})", name)
        if not isinstance(b, dict):
            raise bad(f"blocks.{name}", "an object", type(b).__name__)
        for key, kind in (("tables", dict), ("columns", dict), ("table_names", list),
                          ("notes", list), ("provenance", dict)):
            if key in b and not isinstance(b[key], kind):
                raise bad(f"blocks.{name}.{key}", f"a JSON {'object' if kind is dict else 'list'}",
                          type(b[key]).__name__)
        for t, rows in (b.get("tables") or {}).items():
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise bad(f"blocks.{name}.tables.{t}", "a list of rows (objects)",
                          type(rows).__name__)
    claims = data["portability"]
    if not isinstance(claims, list) or not all(isinstance(r, dict) for r in claims):
        raise bad("portability", "a list of claim rows (objects)", type(claims).__name__)
    for i, r in enumerate(claims):
        missing = [k for k in CLAIM_COLUMNS if k not in r]
        if missing:
            raise bad(f"portability[{i}]", f"a claim row with {missing}", sorted(r)[:6])
        if not isinstance(r["verdict"], str) or r["verdict"] not in VERDICTS:
            raise bad(f"portability[{i}].verdict", f"one of {list(VERDICTS)}", r["verdict"])
        for key in ("estimate", "ci_low", "ci_high"):
            v = r[key]
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise bad(f"portability[{i}].{key}", "a number or null", v)


def _rebuild(data: dict[str, Any], path: Path) -> AuditOutcome:
    prov = data["provenance"]
    order = (data.get("key_order") or {}).get("cohorts") or []
    cohorts = prov["spec"].get("cohorts") or {}
    prov["spec"]["cohorts"] = {c: cohorts[c] for c in [*order, *cohorts] if c in cohorts}
    spec = validate_model(prov["spec"], AuditSpec, source=f"{path} (its provenance.spec)",
                          what="embedded audit spec")
    blocks = data["blocks"]
    names = [b for b in spec.blocks if b in blocks] + sorted(b for b in blocks if b not in spec.blocks)
    results: dict[str, BlockResult] = {}
    for name in names:
        b = blocks[name]
        tables = b.get("tables", {})
        tnames = [t for t in b.get("table_names", []) if t in tables]
        tnames += sorted(t for t in tables if t not in tnames)
        cols = b.get("columns", {})
        results[name] = BlockResult(name=name,
                                    tables={t: _records_frame(tables[t], cols.get(t)) for t in tnames},
                                    notes=tuple(b.get("notes", ())),
                                    provenance=dict(b.get("provenance") or {}))
    claims = _records_frame(data["portability"], list(CLAIM_COLUMNS))
    return AuditOutcome(spec, results, claims, prov)
