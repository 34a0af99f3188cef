"""``medaudit audit``: run the blocks a spec names, build claims, write every output atomically."""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import math
import platform
from pathlib import Path
from typing import Any

import pandas as pd

from medaudit import __version__
from medaudit.audit.claims import CLAIM_COLUMNS, build_claims
from medaudit.audit.context import build_context
from medaudit.blocks._base import E_COLUMNS, PROVENANCE_COLUMNS, AuditContext, BlockResult
from medaudit.exceptions import SchemaError
from medaudit.io.output import atomic_directory, write_json
from medaudit.io.schema import describe
from medaudit.io.spec import AuditSpec, load_spec

__all__ = ["run_blocks", "run_audit", "versions", "AuditOutcome", "write_outcome", "load_outcome"]

log = logging.getLogger("medaudit")


def versions() -> dict[str, str]:
    """Versions of everything that can move a number (recorded in results.json)."""
    out = {"medaudit": __version__, "python": platform.python_version()}
    for mod in ("numpy", "scipy", "statsmodels", "pandas", "pyarrow", "pydantic", "yaml"):
        try:
            out[mod] = importlib.import_module(mod).__version__
        except (ImportError, AttributeError):  # pragma: no cover - optional
            continue
    return out


def run_blocks(ctx: AuditContext, *, progress: Any = None) -> dict[str, BlockResult]:
    """Run the spec's blocks in the spec's order; each block is pure (tables in, tables out)."""
    results: dict[str, BlockResult] = {}
    for name in ctx.spec.blocks:
        if progress is not None:
            progress(name)
        log.info("running block %s", name)
        module = importlib.import_module(f"medaudit.blocks.{name}")
        results[name] = module.run(ctx)
    return results


class AuditOutcome:
    """What an audit produced (kept in memory for tests and for the report)."""

    def __init__(self, spec: AuditSpec, results: dict[str, BlockResult], claims: pd.DataFrame,
                 provenance: dict[str, Any]):
        self.spec, self.results, self.claims, self.provenance = spec, results, claims, provenance


def _provenance(spec: AuditSpec, ctx: AuditContext, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "spec": spec.model_dump(mode="json"),
        "inputs": inputs,
        "cohorts": describe(ctx.scores),
        "versions": versions(),
        "seed": spec.seed,
        "seed_derivation": "per cell: SeedSequence([seed, sha256(key part)[:4] ...])",
        "n_resamples": spec.n_resamples,
        "n_permutations": spec.n_permutations,
        "confidence_level": spec.confidence_level,
        "ci_method": "percentile (numpy linear interpolation), point estimate on the full sample",
        "designs": {c: v.design for c, v in spec.cohorts.items()},
        "multiplicity": {
            "prompts": f"BH at q={spec.prompts.alpha} over alternatives x models x "
                       f"{spec.prompts.test_cohorts or 'primary cohorts'}",
            "spectrum": "Holm over all negative-group permutation tests",
            "other": "descriptive (no correction)",
        },
    }


def audit(spec: AuditSpec, base_dir: str | Path = ".", *, progress: Any = None,
          step: Any = None) -> AuditOutcome:
    """Run a whole audit in memory; ``progress(block)`` and ``step(text)`` report progress."""
    from medaudit.backends import make_backend

    ctx, inputs = build_context(spec, base_dir)
    if step is not None:
        ctx = dataclasses.replace(ctx, progress=step)
    backend = make_backend(ctx.spec.execution)
    try:
        # where cells ran goes to the log only: results.json is the same on every backend
        log.info("execution backend: %s", backend.describe())
        results = run_blocks(dataclasses.replace(ctx, backend=backend), progress=progress)
    finally:
        backend.close()
    claims = build_claims(results, ctx.spec)
    provenance = _provenance(ctx.spec, ctx, inputs)
    provenance["spec"].pop("execution", None)
    return AuditOutcome(ctx.spec, results, claims, provenance)


def write_outcome(outcome: AuditOutcome, out: str | Path, *, overwrite: bool = False) -> Path:
    """Write tables (CSV + Parquet), results.json, summary.md, report.html and figures atomically.

    The report and figures are rendered from the ``results.json`` just written (via
    :func:`load_outcome`), so ``medaudit report DIR`` reproduces them byte for byte.
    """
    from medaudit.report.html import write_report
    from medaudit.report.summary import audit_summary

    out = Path(out)
    with atomic_directory(out, overwrite=overwrite) as tmp:
        (tmp / "tables").mkdir()
        blocks_json: dict[str, Any] = {}
        for name, res in outcome.results.items():
            blocks_json[name] = {"notes": list(res.notes), "tables": {},
                                 # JSON objects are written with sorted keys: keep the order
                                 "table_names": list(res.tables),
                                 "columns": {t: [str(c) for c in df.columns]
                                             for t, df in res.tables.items()}}
            for tname, df in res.tables.items():
                stem = f"{name}__{tname}"
                df.to_csv(tmp / "tables" / f"{stem}.csv", index=False, float_format="%.17g")
                _to_parquet(df, tmp / "tables" / f"{stem}.parquet")
                blocks_json[name]["tables"][tname] = df.to_dict("records")
        outcome.claims.to_csv(tmp / "portability.csv", index=False, float_format="%.17g")
        _to_parquet(outcome.claims, tmp / "portability.parquet")
        write_json(tmp / "results.json", {"provenance": outcome.provenance, "blocks": blocks_json,
                                          "portability": outcome.claims.to_dict("records"),
                                          # sorted keys lose the spec's declared cohort order
                                          "key_order": {"cohorts": list(outcome.spec.cohorts)}})
        (tmp / "summary.md").write_text(audit_summary(outcome), encoding="utf-8")
        write_report(load_outcome(tmp), tmp)
    return out


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

    Nothing is recomputed: the tables are the records ``write_outcome`` stored, in their
    original block, table and column order.
    """
    directory = Path(directory)
    path = directory / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist; point at a directory written by "
                                "`medaudit audit SPEC.yaml --out DIR`.")
    data = json.loads(path.read_text(encoding="utf-8"))
    missing = [k for k in ("provenance", "blocks", "portability") if k not in data]
    if missing or "spec" not in data.get("provenance", {}):
        raise SchemaError(f"{path}: not the results of `medaudit audit` (it lacks "
                          f"{missing or ['provenance.spec']}); `medaudit demo` and `medaudit "
                          "summarize` outputs have no portability report.")
    prov = data["provenance"]
    order = (data.get("key_order") or {}).get("cohorts") or []
    cohorts = prov["spec"].get("cohorts") or {}
    prov["spec"]["cohorts"] = {c: cohorts[c] for c in [*order, *cohorts] if c in cohorts}
    spec = AuditSpec.model_validate(prov["spec"])
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
                                    notes=tuple(b.get("notes", ())))
    claims = _records_frame(data["portability"], list(CLAIM_COLUMNS))
    return AuditOutcome(spec, results, claims, prov)


def _to_parquet(df: pd.DataFrame, path: Path) -> None:
    # mixed-type object columns (e.g. prevalence "observed" or 0.5) are stored as text
    safe = df.copy()
    for c in safe.columns:
        if safe[c].dtype == object:
            kinds = {type(v) for v in safe[c] if v is not None and not (isinstance(v, float)
                                                                          and v != v)}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                safe[c] = safe[c].map(lambda v: None if v is None else str(v))
    safe.to_parquet(path, index=False)


def run_audit(spec_path: str | Path, out: str | Path, *, overwrite: bool = False,
              progress: Any = None) -> AuditOutcome:
    """Load ``spec_path``, run it, and write ``out``; nothing is written if anything fails."""
    spec, base = load_spec(spec_path)
    outcome = audit(spec, base, progress=progress)
    write_outcome(outcome, out, overwrite=overwrite)
    return outcome
