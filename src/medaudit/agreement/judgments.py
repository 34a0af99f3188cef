"""The JudgmentTable of paper 002: categorical verdicts against reference labels (M2.1-M2.3).

Contract
--------
**Raw JudgmentTable** -- one row per (study, model, protocol, finding), columns

``study_id, patient_id, institution, model, protocol, finding, prediction, reference``

plus optional ``logit_yes, logit_no`` (the answer-token logits of the binary protocol;
empty where not recorded) and ``reader_label`` (a reader-audit label of the study and
finding, M2.12: ``present``/``absent``/``uncertain``, ``1``/``0``/``-1``, empty where the
pair was not audited; one label per (study, finding)).  Any further columns travel along
unchanged.

* ``prediction``: ``1``/``0`` or ``present``/``absent``/``yes``/``no`` (case-insensitive,
  surrounding blanks ignored), or empty / ``unparseable`` / ``unparsed`` (a response the
  parser could not read).  Anything else is an error naming the rows.
* ``reference``: ``1``, ``0``, ``-1`` (uncertain; also the word ``uncertain``) or empty
  (unmentioned; also the word ``missing``).  Anything else is an error.
* ``protocol`` must be one of the declared protocols (default ``narrative``, ``binary``).
* The key (study_id, model, protocol, finding) is unique; a study belongs to one
  institution and one patient; and, unless ``reference_by_model=True`` (designs whose
  reference depends on the model, e.g. a reader judged against the *other* readers), the
  reference of a (study, finding) is the same in every row.  Violations are errors that
  name the rows.

:func:`validate_judgments` ``(df, *, source, uncertain="exclude", min_parsed_findings=4)
-> (table, report)`` applies the evaluable-set filters of M2.1 **in this order**, each
counted in the report:

1. ``parse`` -- rows whose prediction is unparseable are dropped;
2. ``evaluable_study`` -- a (study, model, protocol) is kept only when at least
   ``min_parsed_findings`` of its findings parsed (paper: 4 of 6); all its rows go otherwise;
3. ``reference_eligible`` -- rows whose reference is unmentioned (empty) are dropped;
4. ``uncertain`` -- uncertain references (-1) are mapped to 0 (``"negative"``), to 1
   (``"positive"``) or dropped (``"exclude"``, the paper's primary choice).

The **evaluable table** has every original column, with ``prediction`` and ``reference``
as int 0/1, plus ``correct`` = 1[prediction == reference] (int; the target c of M2.3),
``direction`` = ``"present"``/``"absent"`` (the predicted direction r = y-hat) and
``uncertain_mapped`` (1 where the uncertain policy set the reference); a ``reader_label``
column becomes int codes 1, 0, -1 (uncertain) and -9 (not audited).  Row order is the
input order; the index is reset.

:func:`cells` ``(table) -> DataFrame`` counts the reliability cells (model, institution,
finding, direction) with ``n`` judgments and ``k = sum(correct)``.

:func:`load_judgments` ``(spec, base_dir, *, seed) -> (table, provenance)`` reads a CSV or
Parquet file (``spec.path``, relative to ``base_dir``), or builds the embedded simulated
study (``spec.simulate == "paper002"``) or the real reader table (``spec.readers``),
validates it and returns the evaluable table with its provenance (sha256 of the file,
filter counts).  :func:`judgment_variants` reads the same source once and returns the
evaluable table under each uncertain policy (the M2.12 sensitivity).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._validation import check_option
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.messages import quote
from medaudit.io.schema import CONTROL, require_columns, row_place, row_places

__all__ = ["JUDGMENT_COLUMNS", "OPTIONAL_COLUMNS", "NOT_AUDITED", "CELL_KEYS", "UNCERTAIN_POLICIES",
           "PROTOCOLS", "FilterStep", "JudgmentReport", "validate_judgments", "cells",
           "load_judgments", "judgment_variants", "parse_prediction", "parse_reference"]

JUDGMENT_COLUMNS = ("study_id", "patient_id", "institution", "model", "protocol", "finding",
                    "prediction", "reference")
OPTIONAL_COLUMNS = ("logit_yes", "logit_no", "reader_label")
LOGIT_COLUMNS = ("logit_yes", "logit_no")
#: reader-audit label codes (M2.12): 1 present, 0 absent, -1 uncertain, -9 not audited
NOT_AUDITED = -9
_READER_WORDS = {"1": 1, "present": 1, "yes": 1, "0": 0, "absent": 0, "no": 0, "-1": -1,
                 "uncertain": -1, "": NOT_AUDITED}
KEY = ("study_id", "model", "protocol", "finding")
CELL_KEYS = ("model", "institution", "finding", "direction")
UNCERTAIN_POLICIES = ("exclude", "negative", "positive")
PROTOCOLS = ("narrative", "binary")
_TEXT = ("study_id", "patient_id", "institution", "model", "protocol", "finding")

# prediction vocabulary: 1 present, 0 absent, -9 unparseable (codes, so no float NaN games)
_UNPARSED = -9
_PRED_WORDS = {"1": 1, "present": 1, "yes": 1, "0": 0, "absent": 0, "no": 0,
               "": _UNPARSED, "unparseable": _UNPARSED, "unparsed": _UNPARSED}
# reference vocabulary: 1, 0, -1 uncertain, -9 unmentioned
_UNMENTIONED = -9
_REF_WORDS = {"1": 1, "0": 0, "-1": -1, "uncertain": -1, "": _UNMENTIONED, "missing": _UNMENTIONED}




def _words(values: pd.Series) -> np.ndarray:
    """Lower-cased stripped text of each cell; numbers written without a trailing ``.0``."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values.tolist()):
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            out[i] = ""
        elif isinstance(v, (bool, np.bool_)):
            out[i] = str(int(v))  # True -> "1": a boolean verdict column
        elif isinstance(v, (int, np.integer)):
            out[i] = str(int(v))
        elif isinstance(v, (float, np.floating)):
            out[i] = str(int(v)) if float(v).is_integer() else repr(float(v))
        else:
            s = str(v).strip().lower()
            try:  # "1.0", "-1.0" as written by some CSV exporters
                f = float(s)
                s = str(int(f)) if f.is_integer() else s
            except ValueError:
                pass
            out[i] = s
    return out


def _series(values: Any) -> pd.Series:
    """``values`` as an object Series, still naming its rows as the table it came from
    (a file's lines: ``attrs``) when it is a column of one."""
    out = pd.Series(list(values), dtype=object)
    if isinstance(values, pd.Series):
        out.attrs = dict(values.attrs)
    return out


def _code(values: pd.Series, vocab: dict[str, int], column: str, source: str,
          allowed: str) -> np.ndarray:
    w = _words(values)
    codes = np.array([vocab.get(x, -99) for x in w], dtype=np.int64)
    bad = codes == -99
    if bad.any():
        seen = sorted({values.iloc[i] for i in np.flatnonzero(bad)[:20]}, key=repr)[:5]
        raise SchemaError(f"{source}: column {column!r} has value(s) {seen} at "
                          f"{row_places(values, bad)}; allowed: {allowed}.")
    return codes


def parse_prediction(values: Any, *, source: str = "prediction") -> np.ndarray:
    """Codes of verdicts: 1 present, 0 absent, -9 unparseable (see the module contract).

    Examples
    --------
    >>> parse_prediction(["Present", "no", 1, "", "unparseable", 0.0]).tolist()
    [1, 0, 1, -9, -9, 0]
    """
    return _code(_series(values), _PRED_WORDS, "prediction", source,
                 "1/0, present/absent, yes/no (any case), or empty/'unparseable'")


def parse_reference(values: Any, *, source: str = "reference") -> np.ndarray:
    """Codes of reference labels: 1, 0, -1 uncertain, -9 unmentioned.

    Examples
    --------
    >>> parse_reference([1, 0, -1, None, "uncertain", "1.0"]).tolist()
    [1, 0, -1, -9, -1, 1]
    """
    return _code(_series(values), _REF_WORDS, "reference", source,
                 "1, 0, -1 (uncertain) or empty (unmentioned)")


@dataclass(frozen=True)
class FilterStep:
    """One evaluable-set filter: how many rows (and study runs) it saw, removed and kept."""

    name: str
    description: str
    rows_before: int
    rows_removed: int
    rows_after: int
    #: (study, model, protocol) runs whose parsed rows the evaluable-study rule removed, else 0
    studies_removed: int = 0
    #: rows whose reference the uncertain policy set (not removed), else 0
    rows_mapped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "rows_before": self.rows_before, "rows_removed": self.rows_removed,
                "rows_after": self.rows_after, "studies_removed": self.studies_removed,
                "rows_mapped": self.rows_mapped}


@dataclass(frozen=True)
class JudgmentReport:
    """What the evaluable-set filters did, in order, with per-(model, institution) counts."""

    source: str
    uncertain: str
    min_parsed_findings: int
    n_input_rows: int
    n_evaluable_rows: int
    steps: tuple[FilterStep, ...]
    #: one dict per (model, institution, protocol): rows in, parsed, evaluable-study, eligible
    by_model: tuple[dict[str, Any], ...] = field(default=())
    #: the reader audit in the raw table (``reader_label``): annotated (study, finding)
    #: pairs, studies and uncertain labels, before any filter; None without the column
    reader_audit: dict[str, int] | None = None

    def step(self, name: str) -> FilterStep:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "uncertain": self.uncertain,
                "min_parsed_findings": self.min_parsed_findings,
                "n_input_rows": self.n_input_rows, "n_evaluable_rows": self.n_evaluable_rows,
                "steps": [s.to_dict() for s in self.steps], "by_model": list(self.by_model),
                **({"reader_audit": self.reader_audit} if self.reader_audit is not None else {})}


def _check_structure(t: pd.DataFrame, source: str, protocols: tuple[str, ...],
                     reference_by_model: bool, ref: np.ndarray) -> None:
    dup = t.duplicated(list(KEY), keep=False).to_numpy()
    if dup.any():
        ex = t.loc[dup, list(KEY)].head(2).to_dict("records")
        raise SchemaError(f"{source}: {int(dup.sum())} rows repeat a (study_id, model, protocol, "
                          f"finding) key at {row_places(t, dup)}, e.g. {ex}; keep exactly one "
                          "verdict per key.")
    bad = ~t["protocol"].isin(protocols).to_numpy()
    if bad.any():
        vals = sorted(set(t.loc[bad, "protocol"]))[:5]
        raise SchemaError(f"{source}: unknown protocol(s) {vals} at {row_places(t, bad)}; the "
                          f"declared protocols are {list(protocols)} (JudgmentsSpec.protocols).")
    for col in ("institution", "patient_id"):
        n = t.groupby("study_id", sort=False)[col].nunique()
        if (n > 1).any():
            sid = n[n > 1].index[0]
            rows = np.flatnonzero((t["study_id"] == sid).to_numpy())
            raise SchemaError(f"{source}: study {sid!r} has contradictory rows: different "
                              f"{col!r} values {sorted(set(t.loc[rows, col]))} at "
                              f"{row_places(t, np.isin(np.arange(len(t)), rows))}; a study belongs to "
                              f"one {col.replace('_id', '')}.")
    if not reference_by_model:
        r = pd.Series(ref, index=t.index)
        n = r.groupby([t["study_id"], t["finding"]], sort=False).nunique()
        if (n > 1).any():
            sid, fnd = n[n > 1].index[0]
            m = ((t["study_id"] == sid) & (t["finding"] == fnd)).to_numpy()
            raise SchemaError(
                f"{source}: study {sid!r}, finding {fnd!r} has contradictory reference labels "
                f"{sorted({str(v) for v in t.loc[m, 'reference']})} at {row_places(t, m)}; the "
                "institution's reference is one label per study and finding (set "
                "reference_by_model=True only for designs whose reference depends on the model).")


def _reader_labels(t: pd.DataFrame, source: str) -> dict[str, int] | None:
    """Code ``reader_label`` in place (one label per study and finding); the audit's size."""
    if "reader_label" not in t.columns:
        return None
    code = _code(t["reader_label"], _READER_WORDS, "reader_label", source,
                 "present/absent/uncertain (or 1/0/-1), empty where the pair was not audited")
    r = pd.Series(code, index=t.index)
    n = r.groupby([t["study_id"], t["finding"]], sort=False).nunique()
    if (n > 1).any():
        sid, fnd = n[n > 1].index[0]
        m = ((t["study_id"] == sid) & (t["finding"] == fnd)).to_numpy()
        raise SchemaError(f"{source}: study {sid!r}, finding {fnd!r} has contradictory reader "
                          f"labels {sorted({str(v) for v in t.loc[m, 'reader_label']})} at "
                          f"{row_places(t, m)}; a reader audit gives one label per study and finding.")
    t["reader_label"] = code
    read = t.loc[code != NOT_AUDITED, ["study_id", "finding"]].drop_duplicates()
    unc = t.loc[code == -1, ["study_id", "finding"]].drop_duplicates()
    return {"annotations": int(len(read)), "studies": int(read["study_id"].nunique()),
            "uncertain": int(len(unc))}


def _logits(t: pd.DataFrame, source: str) -> None:
    for col in LOGIT_COLUMNS:
        if col not in t.columns:
            continue
        raw = t[col]
        num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        given = raw.notna().to_numpy() & (raw.astype(str).str.strip() != "").to_numpy()
        bad = given & ~np.isfinite(num)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise SchemaError(f"{source}: column {col!r} must be finite numbers (or empty where "
                              f"not recorded); {quote(raw.iloc[i])} at {row_place(t, i)}"
                              + (f" (all such: {row_places(t, bad)})." if bad.sum() > 1 else "."))
        t[col] = np.where(given, num, np.nan)


def validate_judgments(
    df: pd.DataFrame,
    *,
    source: str = "judgment table",
    uncertain: str = "exclude",
    min_parsed_findings: int = 4,
    protocols: tuple[str, ...] | list[str] = PROTOCOLS,
    reference_by_model: bool = False,
) -> tuple[pd.DataFrame, JudgmentReport]:
    """Validate a raw JudgmentTable and apply the evaluable-set filters of M2.1 in order.

    Parameters
    ----------
    df : DataFrame
        The raw JudgmentTable (see the module contract).
    source : str, default="judgment table"
        Name used in messages (the file path when read from disk).
    uncertain : {"exclude", "negative", "positive"}, default="exclude"
        What an uncertain reference (-1) becomes: dropped, 0 or 1.
    min_parsed_findings : int, default=4
        A (study, model, protocol) is evaluable when at least this many of its findings
        parsed (paper 002: 4 of 6).
    protocols : sequence of str, default=("narrative", "binary")
        The declared protocols; any other value is an error.
    reference_by_model : bool, default=False
        Allow the reference of a (study, finding) to differ between models (e.g. each reader
        judged against the other readers); otherwise contradictory references are an error.

    Returns
    -------
    table : DataFrame
        The evaluable table (columns in the module contract).
    report : JudgmentReport
        Counts of each filter in order.

    Raises
    ------
    SchemaError
        Missing columns, unknown values, repeated keys, contradictory studies, or a finding
        of an institution left with no eligible row; the message names rows and columns.

    Examples
    --------
    >>> raw = pd.DataFrame({"study_id": ["s1", "s1", "s2"], "patient_id": "p1",
    ...                     "institution": "A", "model": "m", "protocol": "narrative",
    ...                     "finding": ["f1", "f2", "f2"], "prediction": ["present", "absent", "NO"],
    ...                     "reference": [1, -1, 1]})
    >>> t, rep = validate_judgments(raw, min_parsed_findings=1)
    >>> t[["study_id", "finding", "prediction", "reference", "correct", "direction"]].values.tolist()
    [['s1', 'f1', 1, 1, 1, 'present'], ['s2', 'f2', 0, 1, 0, 'absent']]
    >>> rep.step("uncertain").rows_removed
    1
    """
    uncertain = check_option(uncertain, UNCERTAIN_POLICIES, name="uncertain")
    if isinstance(min_parsed_findings, bool) or not isinstance(
            min_parsed_findings, (int, np.integer)) or min_parsed_findings < 1:
        raise MedauditError(f"min_parsed_findings must be a positive integer; got "
                            f"{min_parsed_findings!r}.")
    protocols = tuple(str(p) for p in protocols)
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"{source}: a JudgmentTable must be a pandas DataFrame; got "
                          f"{type(df).__name__}.")
    require_columns(df, JUDGMENT_COLUMNS, source=source, what="JudgmentTable",
                    optional=OPTIONAL_COLUMNS)
    t = df.reset_index(drop=True).copy()
    for col in _TEXT:
        empty = t[col].isna().to_numpy() | (t[col].astype(str).str.strip() == "").to_numpy()
        if empty.any():
            raise SchemaError(f"{source}: column {col!r} is empty at {row_places(df, empty)}; every "
                              "row needs a value (use the study id as patient id when the "
                              "patient is unknown, and say so).")
        t[col] = t[col].astype(str)
        # printed in the matrix and the page as names: the score table's rule
        ctrl = t[col].str.contains(CONTROL, regex=True).to_numpy(dtype=bool)
        if ctrl.any():
            raise SchemaError(f"{source}: column {col!r} holds a control character (a line break, "
                              f"tab, text-direction override, ...) at {row_places(df, ctrl)} "
                              f"({t[col].iloc[int(np.flatnonzero(ctrl)[0])]!r}); remove it.")
    pred = parse_prediction(t["prediction"], source=source)
    ref = parse_reference(t["reference"], source=source)
    _check_structure(t, source, protocols, reference_by_model, ref)
    _logits(t, source)
    audit = _reader_labels(t, source)
    run = ["study_id", "model", "protocol"]
    steps: list[FilterStep] = []
    n0 = len(t)

    # 1. parse filter
    keep = pred != _UNPARSED
    steps.append(FilterStep("parse", "unparseable responses dropped", n0, int((~keep).sum()),
                            int(keep.sum())))
    # 2. evaluable-study rule: parsed findings per (study, model, protocol)
    n_parsed = pd.Series(keep.astype(np.int64)).groupby([t[c] for c in run], sort=False
                                                          ).transform("sum").to_numpy()
    study_ok = n_parsed >= min_parsed_findings
    # runs that lose parsed rows here (a run with nothing parsed went in the parse step)
    runs_out = t.loc[keep & ~study_ok, run].drop_duplicates().shape[0]
    before = int(keep.sum())
    keep2 = keep & study_ok
    steps.append(FilterStep(
        "evaluable_study", f"(study, model, protocol) runs with fewer than {min_parsed_findings} "
        "parsed findings dropped", before, before - int(keep2.sum()), int(keep2.sum()),
        studies_removed=int(runs_out)))
    # 3. reference eligibility: unmentioned labels carry no reference
    keep3 = keep2 & (ref != _UNMENTIONED)
    steps.append(FilterStep("reference_eligible", "rows with an unmentioned (empty) reference "
                            "dropped", int(keep2.sum()), int(keep2.sum() - keep3.sum()),
                            int(keep3.sum())))
    # 4. uncertain policy
    unc = keep3 & (ref == -1)
    ref_out = ref.copy()
    if uncertain == "exclude":
        keep4 = keep3 & ~unc
        mapped = 0
    else:
        keep4 = keep3
        ref_out[unc] = 0 if uncertain == "negative" else 1
        mapped = int(unc.sum())
    steps.append(FilterStep("uncertain", f"uncertain references (-1): {uncertain}",
                            int(keep3.sum()), int(keep3.sum() - keep4.sum()), int(keep4.sum()),
                            rows_mapped=mapped))

    by_model = []
    grp = t.groupby(["model", "institution", "protocol"], sort=True).indices
    for (m, inst, prot), idx in grp.items():
        by_model.append({"model": m, "institution": inst, "protocol": prot,
                         "rows": int(idx.size), "parsed": int(keep[idx].sum()),
                         "evaluable_study": int(keep2[idx].sum()),
                         "eligible": int(keep4[idx].sum()),
                         "studies_evaluable": int(t.loc[idx[keep2[idx]], "study_id"].nunique())})

    # a model none of whose rows could be read takes no part in any table: said (probe
    # finding: it vanished from every table with only `parsed: 0` in the provenance)
    rows_of = pd.Series(keep).groupby(t["model"].to_numpy(), sort=True).agg(["size", "sum"])
    if len(silent := rows_of[rows_of["sum"] == 0]):
        names = ", ".join(f"{m!r} ({int(n)} rows)" for m, n in silent["size"].items())
        warnings.warn(f"{source}: no judgment of model(s) {names} could be read as a verdict "
                      "(empty or unparseable predictions), so they take no part in the analysis.",
                      UserWarning, stacklevel=2)

    # a finding of an institution that had rows but none survived cannot be analysed
    had = t.groupby(["institution", "finding"], sort=True).size()
    kept = t[keep4].groupby(["institution", "finding"], sort=True).size()
    lost = [k for k in had.index if k not in kept.index]
    if lost:
        inst, fnd = lost[0]
        m = ((t["institution"] == inst) & (t["finding"] == fnd)).to_numpy()
        counts = {s.name: int((m & mk).sum()) for s, mk in
                  zip(steps, (keep, keep2, keep3, keep4), strict=True)}
        raise SchemaError(
            f"{source}: finding {fnd!r} at institution {inst!r} has no eligible reference label "
            f"after the filters ({int(m.sum())} rows; kept after each step: {counts}; uncertain "
            f"policy {uncertain!r}); {len(lost)} (institution, finding) pair(s) are empty: "
            f"{lost[:5]}. Drop the finding for that institution or supply definite labels.")

    out = t.loc[keep4].copy()
    out["prediction"] = pred[keep4].astype(np.int64)
    out["reference"] = ref_out[keep4].astype(np.int64)
    out["correct"] = (out["prediction"].to_numpy() == out["reference"].to_numpy()).astype(np.int64)
    out["direction"] = np.where(out["prediction"].to_numpy() == 1, "present", "absent")
    out["direction"] = out["direction"].astype(object)
    out["uncertain_mapped"] = unc[keep4].astype(np.int64)
    out = out.reset_index(drop=True)
    report = JudgmentReport(source=source, uncertain=uncertain,
                            min_parsed_findings=int(min_parsed_findings), n_input_rows=n0,
                            n_evaluable_rows=len(out), steps=tuple(steps),
                            by_model=tuple(by_model), reader_audit=audit)
    return out, report


def cells(table: pd.DataFrame, *, by: tuple[str, ...] = CELL_KEYS) -> pd.DataFrame:
    """Reliability cells (model, institution, finding, direction) with ``n`` and ``k``.

    ``n`` is the number of evaluable judgments in the cell and ``k = sum(correct)``; rows
    are sorted by the keys.  A table holding several protocols must be filtered to one
    first (or ``"protocol"`` added to ``by``): cells never mix protocols silently.

    Examples
    --------
    >>> t = pd.DataFrame({"model": "m", "institution": "A", "finding": ["f", "f", "f"],
    ...                   "protocol": "narrative", "direction": ["present", "present", "absent"],
    ...                   "correct": [1, 0, 1]})
    >>> cells(t)[["direction", "n", "k"]].values.tolist()
    [['absent', 1, 1], ['present', 2, 1]]
    """
    need = [*by, "correct"]
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise SchemaError(f"cells: the table lacks column(s) {missing}; pass the evaluable table "
                          "returned by validate_judgments.")
    if "protocol" in table.columns and "protocol" not in by and table["protocol"].nunique() > 1:
        raise MedauditError(f"cells: the table holds several protocols "
                            f"{sorted(table['protocol'].unique())}; filter it to one protocol or "
                            "pass by=(..., 'protocol').")
    g = table.groupby(list(by), sort=True)["correct"]
    out = pd.DataFrame({"n": g.size(), "k": g.sum()}).reset_index()
    out["n"] = out["n"].astype(np.int64)
    out["k"] = out["k"].astype(np.int64)
    return out


def _resolve(base_dir: Path, p: str) -> Path:
    return Path(p) if Path(p).is_absolute() else (base_dir / p).resolve()


def _read_raw(spec: Any, base_dir: Path, seed: int
              ) -> tuple[pd.DataFrame, str, dict[str, Any], tuple[str, ...], bool]:
    """The raw table named by ``spec``, renamed, with its source, provenance and filter design."""
    base_dir = Path(base_dir)
    prov: dict[str, Any]
    protocols, by_model = tuple(spec.protocols), spec.reference_by_model
    if getattr(spec, "simulate", None) == "paper002":
        from medaudit.simulate import simulate_paper002

        degenerate = bool(getattr(spec, "simulate_degenerate", False))
        raw = simulate_paper002(rng=seed, scale=spec.simulate_scale,
                                include_degenerate=degenerate)
        raw = raw if isinstance(raw, pd.DataFrame) else pd.DataFrame(raw)
        source = "simulated paper-002 judgment table"
        prov = {"simulated": True, "generator": "medaudit.simulate.simulate_paper002",
                "generator_seed": int(seed), "scale": spec.simulate_scale,
                "degenerate_model": degenerate}
    elif getattr(spec, "readers", None) is not None:
        from medaudit.datasets.readers import nih_vindr_judgments

        r = spec.readers
        raw, design = nih_vindr_judgments(
            _resolve(base_dir, r.nih_dir),
            vindr_csv=None if r.vindr_csv is None else _resolve(base_dir, r.vindr_csv),
            findings=tuple(r.findings), comparison_readers=r.comparison_readers)
        source = "reader judgment table (NIH ChestX-ray14 + VinDr-CXR)"
        prov = {"readers": design}
        # the design fixes these: verdicts are reads, and a reader's reference leaves it out
        protocols, by_model = ("read",), True
    elif getattr(spec, "path", None) is not None:
        from medaudit.io import file_sha256
        from medaudit.io.tables import read_table

        path = _resolve(base_dir, spec.path)
        raw = read_table(path)
        source = str(spec.path)
        prov = {"judgments": str(spec.path), "sha256": file_sha256(path)}
    else:
        raise MedauditError("judgments: give `path:`, `simulate: paper002` or `readers:`.")
    rename = dict(getattr(spec, "columns", None) or {})
    if rename:
        absent = [c for c in rename if c not in raw.columns]
        if absent:
            raise SchemaError(f"{source}: judgments.columns renames column(s) {absent} that the "
                              f"table lacks; it has {list(raw.columns)}.")
        raw = raw.rename(columns=rename)
    return raw, source, prov, protocols, by_model


def load_judgments(spec: Any, base_dir: Path, *, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read (or simulate, or build from reader labels), validate and filter the judgment table.

    Parameters
    ----------
    spec : JudgmentsSpec
        ``path`` (CSV/Parquet, relative to ``base_dir``), ``simulate="paper002"`` or
        ``readers``; plus the filter settings (``uncertain``, ``min_parsed_findings``,
        ``protocols``, ``reference_by_model``; the reader design fixes the last two to
        ``("read",)`` and True) and a ``columns`` rename map.
    base_dir : Path
        Directory of the spec file.
    seed : int
        Seed of the simulated study (the audit seed).

    Returns
    -------
    table : DataFrame
        The evaluable table.
    provenance : dict
        Where the table came from (path and sha256, or generator and seed, or the reader
        design) and the filter counts.
    """
    raw, source, prov, protocols, by_model = _read_raw(spec, base_dir, seed)
    table, report = validate_judgments(
        raw, source=source, uncertain=spec.uncertain,
        min_parsed_findings=spec.min_parsed_findings, protocols=protocols,
        reference_by_model=by_model)
    prov["filters"] = report.to_dict()
    return table, prov


def judgment_variants(spec: Any, base_dir: Path, *, seed: int
                      ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The evaluable table under every uncertain-label policy (M2.12 sensitivity).

    The raw table is read once and validated with ``uncertain`` = ``"exclude"``,
    ``"negative"`` and ``"positive"`` (every other filter setting from ``spec``).

    Returns
    -------
    variants : dict policy -> DataFrame
    provenance : dict policy -> filter counts
    """
    raw, source, _, protocols, by_model = _read_raw(spec, base_dir, seed)
    out, prov = {}, {}
    for policy in UNCERTAIN_POLICIES:
        out[policy], rep = validate_judgments(
            raw, source=source, uncertain=policy, min_parsed_findings=spec.min_parsed_findings,
            protocols=protocols, reference_by_model=by_model)
        prov[policy] = rep.to_dict()
    return out, prov
