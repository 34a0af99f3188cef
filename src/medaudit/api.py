"""The Python entry point: ``medaudit.audit(df, *, spec=None, **options) -> Audit``.

An audit from a notebook, with the same blocks, cells, seeds and tables as ``medaudit
audit SPEC --out DIR``::

    import medaudit
    result = medaudit.audit(df, claims=[{"model": "a", "metric": "roc_auc", "at_least": 0.8}])
    result.matrix          # the portability matrix, one row per claim x change of E
    result.tables["discrimination.metrics"]
    result.write("audit-out")

``df`` is a score table (one row per image x model [x prompt], columns ``image_id``,
``cohort`` (optional with one cohort), ``model``, ``score``, ``label``, optional
``prompt``, ``label_soft``, ``negative_group`` and any subgroup columns) as a
:class:`pandas.DataFrame` or the path of a CSV/Parquet file.  ``spec`` is an audit spec
(a YAML path, a mapping or an :class:`~medaudit.audit.spec.AuditSpec`); ``options`` are
spec keys (``n_resamples=500``, ``subgroups=["sex"]``, ``claims=[...]``) that override it.
Declared claims are mappings as in the spec or the same objects in Python
(:class:`LevelClaim`, :class:`ComparisonClaim`, :class:`OperatingPointClaim`,
:class:`RankingClaim`, with :class:`ThresholdFrom`).
Every key is documented in ``docs/spec.md``.
"""

from __future__ import annotations

import contextlib
import html as _html
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from medaudit.audit.context import spec_inputs
from medaudit.audit.outcome import AuditOutcome, load_outcome, write_results
from medaudit.audit.run import audit as _run_audit
from medaudit.audit.run import write_outcome
from medaudit.audit.spec import IN_MEMORY, AuditSpec
from medaudit.blocks.claimkit import CLAIM_COLUMNS
from medaudit.blocks.claims import (
    ComparisonClaim,
    LevelClaim,
    OperatingPointClaim,
    RankingClaim,
    ThresholdFrom,
)
from medaudit.exceptions import MedauditError
from medaudit.io.specfile import read_yaml_mapping, validate_model

__all__ = ["audit", "Audit", "LevelClaim", "ComparisonClaim", "OperatingPointClaim", "RankingClaim",
           "ThresholdFrom"]


@dataclass(frozen=True, eq=False)
class Audit:
    """The result of :func:`audit`: tables, claims, the matrix and provenance; writable and renderable.

    Attributes
    ----------
    tables : dict of str to DataFrame
        Every block table, keyed ``"block.table"`` (``"discrimination.metrics"``), with the
        E columns (model, prompt, cohort, negatives, prevalence, threshold, criterion) and
        the provenance columns (design, n_resamples, seed, family) on every result row.
    matrix : DataFrame
        The portability matrix in long form: one row per claim x changed element of E
        (declared claims first), the columns of ``portability.csv``.
    claims : DataFrame
        One row per claim at its own E (the matrix rows with ``change == "at E"``).
    provenance : dict
        What every number depends on: spec, inputs (with hashes), seed, B, designs,
        multiplicity families, versions.
    notes : dict of str to list of str
        Each block's notes, as in the report.
    """

    outcome: AuditOutcome = field(repr=False)
    tables: dict[str, pd.DataFrame] = field(repr=False)
    matrix: pd.DataFrame = field(repr=False)
    claims: pd.DataFrame = field(repr=False)
    provenance: dict[str, Any] = field(repr=False)
    notes: dict[str, list[str]] = field(repr=False)
    #: the files the audit read (an output folder may not touch them)
    _inputs: dict[str, list[Path]] = field(repr=False, default_factory=dict)

    @property
    def spec(self) -> AuditSpec:
        """The validated spec the audit ran (with everything inferred filled in)."""
        return self.outcome.spec

    def write(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the audit's folder (tables, ``results.json``, summary, report, figures) as
        ``medaudit audit`` does: atomically, and over an existing folder only with
        ``overwrite=True`` when medaudit wrote it."""
        from medaudit.io.output import check_output_dir

        with _python_words("directory"):
            check_output_dir(directory, inputs=self._inputs, overwrite=overwrite)
            return write_outcome(self.outcome, directory, overwrite=overwrite, inputs=self._inputs)

    def report(self, path: str | os.PathLike[str]) -> Path:
        """Write the self-contained HTML report alone to ``path`` (the page ``write`` puts in
        ``report.html``, byte for byte); an existing ``path`` only when it is a page medaudit
        wrote."""
        from medaudit.io.output import check_output_file
        from medaudit.report.html import REPORT_PAGE, Report, render_figures

        path = Path(path).expanduser()
        with _python_words("path", overwrite="report()"):
            check_output_file(path, inputs=self._inputs, kind=REPORT_PAGE)
        with tempfile.TemporaryDirectory(prefix="medaudit-report-") as tmp:
            write_results(self.outcome, Path(tmp))
            outcome = load_outcome(tmp)
            return Report(outcome, figures=render_figures(outcome)).save(path)

    def _blocks_run(self) -> list[str]:
        # a block with nothing to run on (no prompts, no negative groups) has empty tables
        return [name for name, r in self.outcome.results.items()
                if any(len(t) for t in r.tables.values())]

    def __repr__(self) -> str:
        n = self.claims["claim_id"].nunique() if len(self.claims) else 0
        return (f"<medaudit.Audit {self.spec.name!r}: {n} claims, {len(self._blocks_run())} "
                f"blocks run, {len(self.tables)} tables>")

    def _repr_html_(self) -> str:
        """The claims at E with their verdicts, for Jupyter."""
        cols = [c for c in ("claim_id", "claim", "kind", "model", "cohort", "criterion",
                            "estimate", "ci_low", "ci_high", "verdict") if c in self.claims.columns]
        head = (f"<p><strong>medaudit audit {_html.escape(str(self.spec.name))}</strong>: "
                f"{self.claims['claim_id'].nunique() if len(self.claims) else 0} claims; "
                f"blocks run {_html.escape(', '.join(self._blocks_run()))}; seed "
                f"{self.provenance.get('seed')}, B = {self.provenance.get('n_resamples')}</p>")
        if not len(self.claims):
            return head + "<p>No claims.</p>"
        return head + self.claims[cols].to_html(index=False, escape=True, float_format="%.3f",
                                                na_rep="")


@contextlib.contextmanager
def _python_words(noun: str, overwrite: str = "overwrite=True") -> Iterator[None]:
    """Output refusals in the words of the Python call: the checks behind ``write`` and
    ``report`` speak to the command line (``--out``, ``--overwrite``), whose flags a
    Python user never typed."""
    from medaudit.io.output import OutputPathError

    try:
        yield
    except (OutputPathError, FileExistsError) as exc:
        text = re.sub(r"--overwrite\b", overwrite, str(exc))
        text = re.sub(r"--out\b", noun, text)
        raise type(exc)(text) from None


def _check_call(data: Any, options: dict[str, Any]) -> None:
    """The ways a notebook user passes the table that a spec key cannot take, said in Python."""
    if "data" in options:
        raise MedauditError("pass the table as the first argument, not as data=...: "
                            "medaudit.audit(df, ...) (the parameter is positional only).")
    for key in ("scores", "scores_wide"):
        if isinstance(options.get(key), pd.DataFrame):
            raise MedauditError(f"{key}= takes a file path (as the spec key does); pass a "
                                "DataFrame as the first argument: medaudit.audit(df, ...).")
    if isinstance(data, pd.DataFrame):
        # a key column kept in the index (df.set_index("image_id")): the schema would only
        # say it is missing
        names = [n for n in data.index.names if n is not None]
        held = [n for n in ("image_id", "model", "cohort", "label", "score")
                if n in names and n not in data.columns]
        if held:
            raise MedauditError(f"the table holds {held} in its index, not as columns; pass "
                                "df.reset_index() (the score table's keys are columns).")


#: option keys that name a file, and the sections whose `path:` does
_PATH_KEYS = ("scores",)
_PATH_SECTIONS = ("scores_wide", "annotations", "judgments")


def _from_here(options: dict[str, Any], base: Path) -> dict[str, Any]:
    """``options`` with their relative file paths made absolute from the working folder.

    Paths inside a spec file start at its folder (``base``); a path the caller passes in the
    call is the caller's, as the table given first is (probe finding: `scores="s.csv"`
    beside `spec="specs/spec.yaml"` read specs/s.csv, another file of the same name).
    """
    if base == Path("."):
        return options

    def here(p: Any) -> Any:
        if isinstance(p, (str, os.PathLike)) and not str(p).startswith("dataset:") and \
                not Path(p).expanduser().is_absolute():
            return str(Path(p).expanduser().resolve())
        return p

    out = dict(options)
    for k in _PATH_KEYS:
        if k in out:
            out[k] = here(out[k])
    for k in _PATH_SECTIONS:
        v = out.get(k)
        if isinstance(v, Mapping) and "path" in v:
            out[k] = {**v, "path": here(v["path"])}
        elif isinstance(v, list):  # scores_wide: a list of files
            out[k] = [{**e, "path": here(e["path"])} if isinstance(e, Mapping) and "path" in e
                      else e for e in v]
    return out


def _spec_mapping(spec: Any) -> tuple[dict[str, Any], Path]:
    """The spec as a mapping of the keys the user set, and the folder relative paths start from."""
    if spec is None:
        return {}, Path(".")
    if isinstance(spec, AuditSpec):
        return spec.model_dump(mode="json", exclude_unset=True), Path(".")
    if isinstance(spec, Mapping):
        return dict(spec), Path(".")
    if isinstance(spec, (str, os.PathLike)):
        path = Path(spec)
        # a score table given where the spec goes gets `medaudit init`'s advice
        raw = read_yaml_mapping(path, what="audit spec")
        if raw.get("format") == "medaudit-claims" and "schema_version" in raw:
            # `medaudit port SPEC CLAIMS` for `port CLAIMS SPEC`
            raise MedauditError(f"{str(path)!r} is a claims file, not an audit spec: give it as "
                                "the source (the first argument of `medaudit port` / `monitor`) "
                                "and the local data's spec second.")
        return raw, path.parent
    raise MedauditError(f"spec must be a YAML path, a mapping or an AuditSpec; got "
                        f"{type(spec).__name__}.")


def _with_data(raw: Mapping[str, Any], data: Any, *, noun: str = "data"
               ) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """The spec mapping ``raw`` reading ``data`` in place of the inputs it names, and the table.

    A DataFrame is kept as given (the spec then names
    :data:`~medaudit.audit.spec.IN_MEMORY`); a path is made absolute, because it was given
    from the caller's folder, not the spec's.  The simulation or wide files the spec names
    give way to ``data``.

    Raises
    ------
    MedauditError
        ``data`` is neither a DataFrame nor a path; ``noun`` names it in the message.
    """
    raw = dict(raw)
    table = None
    if isinstance(data, pd.DataFrame):
        table = data
        raw["scores"] = IN_MEMORY
    elif isinstance(data, (str, os.PathLike)):
        raw["scores"] = str(Path(data).resolve())
    else:
        raise MedauditError(f"{noun} must be a pandas DataFrame or the path of a CSV/Parquet "
                            f"score table; got {type(data).__name__}.")
    for k in ("simulate", "scores_wide"):
        raw.pop(k, None)
    return raw, table


def audit(data: pd.DataFrame | str | os.PathLike[str] | None = None, /, *, spec: Any = None,
          **options: Any) -> Audit:
    """Run an audit on a score table and return its tables, claims and matrix.

    Parameters
    ----------
    data : DataFrame or path, optional
        The score table (a DataFrame, or a CSV/Parquet path); optional when the spec gives
        its inputs itself (``scores:``, ``scores_wide:``, ``simulate:``, ``judgments:``).
    spec : path, mapping or AuditSpec, optional
        An audit spec; relative paths inside a YAML spec start at its folder.
    **options
        Spec keys that override ``spec`` (``n_resamples``, ``seed``, ``cohorts``,
        ``subgroups``, ``claims``, a block's section, ...): see ``docs/spec.md``.  An
        option replaces the whole key of the spec, not part of it: ``claims={...}`` is the
        new ``claims:`` section, so give every key of a section you change.

    Returns
    -------
    Audit

    Raises
    ------
    medaudit.exceptions.MedauditError
        A spec key or value that is not valid, or a table that fails validation: one
        line naming the key, column or row and what to do.

    Examples
    --------
    >>> import numpy as np, pandas as pd, medaudit
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([1, 0], 40)
    >>> df = pd.DataFrame({"image_id": [f"i{i}" for i in range(80)] * 2,
    ...                    "model": ["a"] * 80 + ["b"] * 80, "label": np.r_[y, y],
    ...                    "score": np.r_[0.3 * y + rng.uniform(0, 0.7, 80), rng.uniform(0, 1, 80)]})
    >>> res = medaudit.audit(df, n_resamples=200, claims=[
    ...     {"model": "a", "metric": "roc_auc", "at_least": 0.6},
    ...     {"model": "a", "than": "b", "metric": "roc_auc"}])
    >>> res.claims[["claim_id", "verdict"]].to_dict("list")
    {'claim_id': ['D01', 'D02'], 'verdict': ['holds', 'holds']}
    """
    _check_call(data, options)
    raw, base = _spec_mapping(spec)
    raw = {**raw, **_from_here(options, base)}
    table: pd.DataFrame | None = None
    if data is not None:
        # the first argument replaces the table a spec file names (a spec from `medaudit
        # init` always names one); a table given twice in the call itself is ambiguous
        given = [k for k in ("scores", "simulate", "scores_wide") if options.get(k) is not None]
        if given:
            raise MedauditError(f"the data is given twice: as the first argument and as "
                                f"{given[0]}=...; pass one (medaudit.audit(df, ...) or "
                                f"medaudit.audit({given[0]}=..., ...)).")
        raw, table = _with_data(raw, data)
    s = validate_model(raw, AuditSpec, source="medaudit.audit() options", what="audit spec")
    outcome = _run_audit(s, base, table=table)
    inputs = spec_inputs(outcome.spec, base, spec if isinstance(spec, (str, os.PathLike)) else None)
    # copies: the outcome is what write() and report() publish, and a user editing a table of
    # the result must not change it (probe finding: edits reached portability.csv)
    tables = {f"{b}.{t}": df.copy() for b, r in outcome.results.items()
              for t, df in r.tables.items()}
    matrix = outcome.claims.copy()
    if matrix.empty:
        matrix = pd.DataFrame(columns=list(CLAIM_COLUMNS))
    claims = matrix[matrix["change"] == "at E"].reset_index(drop=True)
    return Audit(outcome=outcome, tables=tables, matrix=matrix, claims=claims,
                 provenance=outcome.provenance,
                 notes={b: list(r.notes) for b, r in outcome.results.items()}, _inputs=inputs)
