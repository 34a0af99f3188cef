"""Reading score tables from CSV or Parquet with clear errors.

Identifier columns (:data:`ID_COLUMNS`, plus any the caller declares, such as a wide file's
``id_column``) and name columns (:data:`NAME_COLUMNS`) are always read as text, from CSV and
from Parquet: ``007`` and ``7`` are two images (or cohorts), and ``001`` stays ``001`` (a
number parser would make both ``7`` and ``1``).

A CSV is UTF-8 text separated by commas (``docs/conventions.md``).  :func:`read_table` refuses,
naming the file and the line, what pandas would otherwise misread or report in its own terms:
bytes that are not UTF-8 (a file saved as Latin-1 or UTF-16), a header that is one field
holding ``;`` or tabs (another separator), a header naming one column twice (pandas would
rename the second ``score.1``) and a row with fewer fields than the header (pandas would fill
the rest with missing values).  A Parquet file naming one column twice is refused too.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import SchemaError
from medaudit.io.messages import one_line, quote
from medaudit.io.paths import input_file
from medaudit.io.schema import RowOrigin, _close

__all__ = ["ID_COLUMNS", "NAME_COLUMNS", "read_table", "read_wide", "ids_as_text"]

#: columns that hold identifiers: read as text, never as numbers
ID_COLUMNS = ("image_id", "study_id", "patient_id", "item_id")
#: columns that hold names (a score table's cohorts, models, prompts, negative groups and
#: splits): read as text as well, so that cohorts "01" and "1" stay two cohorts and "007"
#: keeps its zeros; periods and subgroups are not among them (numbered periods run in number
#: order, and a numeric subgroup column may be banded)
NAME_COLUMNS = ("cohort", "model", "prompt", "negative_group", "split")


def ids_as_text(table: pd.DataFrame, columns: Sequence[str] = ID_COLUMNS) -> pd.DataFrame:
    """Return ``table`` with the identifier ``columns`` it has as text (missing cells stay missing).

    For a table that arrived typed (Parquet, a DataFrame built in code): integers become their
    digits, integral floats (a Parquet column of ids with a gap) their integer digits, text is
    kept as it is.  A CSV should instead be read with these columns as text from the start
    (:func:`read_table` does), because ``007`` parsed as a number cannot be recovered.

    Examples
    --------
    >>> t = ids_as_text(pd.DataFrame({"image_id": [7, 8], "score": [0.5, 0.25]}))
    >>> t["image_id"].tolist(), t["score"].tolist()
    (['7', '8'], [0.5, 0.25])
    """
    out = table
    for col in columns:
        if col not in table.columns:
            continue
        s = table[col]
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
            v = s.to_numpy(dtype=float, na_value=np.nan) if pd.api.types.is_float_dtype(s) else None
            if v is not None and np.all(np.isnan(v) | (v == np.round(v))):
                text = s.astype("Int64").astype(str).where(s.notna(), None)
            else:
                text = s.astype(str).where(s.notna(), None)
            text = text.astype(object)
        else:
            text = s.astype(object).where(s.isna(), s.astype(str))
        if out is table:
            out = table.copy()
        out[col] = text
    return out


def read_table(path: str | Path, *, what: str = "score table", id_columns: Sequence[str] = (),
               **csv_options) -> pd.DataFrame:
    """Read a CSV or Parquet table; every failure is one error naming the file.

    Parameters
    ----------
    path : path
        A ``.csv``/``.txt`` or ``.parquet``/``.pq`` file.
    what : str, default="score table"
        Names the table in messages.
    id_columns : sequence of str, default=()
        Identifier columns besides :data:`ID_COLUMNS` (e.g. a wide file's ``id_column``);
        all of them are read as text.
    **csv_options
        Passed to :func:`pandas.read_csv` (default: only empty cells are missing values, so
        "NA" stays a name).
    """
    path = Path(path)
    input_file(path, what=what, noun="table file (.csv or .parquet)")
    suffix = path.suffix.lower()
    ids = tuple(dict.fromkeys((*ID_COLUMNS, *NAME_COLUMNS, *id_columns)))
    dtype = csv_options.pop("dtype", None)
    dtype = {**{c: str for c in ids}, **(dtype or {})} if isinstance(dtype, dict) or dtype is None \
        else dtype
    csv_options = {"keep_default_na": False, "na_values": [""], "dtype": dtype, **csv_options}
    try:
        if suffix in (".parquet", ".pq"):
            _unique_header(_parquet_names(path), path)
            return ids_as_text(pd.read_parquet(path), ids)
        if suffix in (".csv", ".txt"):
            _refuse_binary(path, suffix)
            sep = csv_options.get("sep", csv_options.get("delimiter", ","))
            header = _csv_header(path, sep)
            table = pd.read_csv(path, **csv_options)
            if "index_col" not in csv_options and not isinstance(table.index, pd.RangeIndex):
                # rows with one field more than the header: pandas silently makes the first
                # column the index and shifts every value one column left (score <- a
                # decimal's digits), which a later check would misdescribe
                raise SchemaError(
                    f"{str(path)!r}: the data rows have more fields than the header's "
                    f"{len(header)} columns (a decimal comma such as 0,35, or a comma inside an "
                    "unquoted value?); use '.' as the decimal point and quote values that "
                    "hold the separator.")
            lines = _record_lines(path, table, sep, len(header))
            # data row i is line i + 2 of the file (line 1 is the header): messages name lines
            table.attrs["first_line"] = 2
            table.attrs["rows_read"] = len(table)
            if lines is not None:  # blank lines or line breaks inside cells: each row's own
                table.attrs["origin"] = RowOrigin("line", lines)
            return table
    except SchemaError:
        raise
    except UnicodeDecodeError as exc:
        raise SchemaError(_not_utf8(path, exc)) from None
    except Exception as exc:  # noqa: BLE001 - re-raised with the file named
        raise SchemaError(f"could not read {str(path)!r}: {one_line(str(exc))}") from exc
    raise SchemaError(f"{str(path)!r}: unsupported file type {suffix!r}; use .csv or .parquet.")


_RESAVE = "re-save it as UTF-8 (in Excel: Save As, \"CSV UTF-8 (Comma delimited)\")"

#: what a binary file named like a text table really is, by its first bytes
_MAGIC = ((b"PAR1", "a Parquet file", "rename it to .parquet"),
          (b"PK\x03\x04", "a zip archive (an Excel .xlsx workbook?)",
           "export the sheet as CSV UTF-8, or save the table as .parquet"),
          (b"\xd0\xcf\x11\xe0", "an old Excel .xls workbook",
           "export the sheet as CSV UTF-8, or save the table as .parquet"))


def _refuse_binary(path: Path, suffix: str) -> None:
    """An empty file, or a binary table (Parquet, Excel) named .csv, is named for what it is
    (pandas would say "No columns to parse" or call its bytes bad UTF-8)."""
    with open(path, "rb") as f:
        head = f.read(8)
    if not head:
        raise SchemaError(f"{str(path)!r} is empty (0 bytes); a table needs a header line and its "
                          "rows.")
    for magic, what, fix in _MAGIC:
        if head.startswith(magic):
            raise SchemaError(f"{str(path)!r} is {what}, not {suffix[1:].upper()} text; {fix}.")


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """The message for a file that is not UTF-8: its first undecodable line and byte."""
    data = path.read_bytes()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return f"{str(path)!r} is UTF-16 text, not UTF-8; {_RESAVE}."
    for n, line in enumerate(data.split(b"\n"), 1):  # no UTF-8 character holds a newline byte
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            return (f"{str(path)!r}: line {n} is not UTF-8 text (byte 0x{line[e.start]:02x} at "
                    f"character {len(line[:e.start].decode('utf-8', 'replace')) + 1}); {_RESAVE}.")
    return f"{str(path)!r} is not UTF-8 text ({exc.reason}); {_RESAVE}."


def _csv_header(path: Path, sep: str) -> list[str]:
    """The header's fields as written (pandas renames a repeated one); refuse a repeat or a
    header that is one field holding another separator."""
    with open(path, encoding="utf-8-sig", newline="") as f:  # pandas skips a BOM too
        header = next(csv.reader(f, delimiter=sep), [])
    if len(header) == 1 and sep == ",":
        other = next((name for c, name in ((";", "semicolons"), ("\t", "tabs")) if c in header[0]), None)
        if other is not None:
            raise SchemaError(f"{str(path)!r}: line 1 (the header) is one column, {quote(header[0])}: "
                              f"the file is separated by {other}, and medaudit reads comma-separated "
                              "files. Re-save it with commas (in Excel: Save As, \"CSV UTF-8 (Comma "
                              "delimited)\").")
    _unique_header(header, path)
    return header


def _parquet_names(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def _unique_header(names: Sequence[str], path: Path) -> None:
    first: dict[str, int] = {}
    for pos, name in enumerate(names, 1):
        if name == "":  # pandas names an unnamed column by its position: never a repeat
            continue
        if name in first:
            raise SchemaError(f"{str(path)!r}: duplicate column {quote(name)} (header positions "
                              f"{first[name]} and {pos}); rename one.")
        first[name] = pos


def _record_lines(path: Path, table: pd.DataFrame, sep: str, n_fields: int) -> np.ndarray | None:
    """Each data row's first file line when it is not row + 2; refuse a short row.

    A row is not on line ``i + 2`` after a blank line (pandas skips it) or a quoted cell that
    holds a line break; a row with fewer fields than the header ends in a missing cell
    (pandas fills the rest as missing).  Only a file where one of these can be the case (it
    has more lines than rows, or a missing cell in its last column) is read again, record
    by record.

    Returns
    -------
    ndarray of int or None
        The 1-based line each row starts on, or None when it is ``i + 2`` for row ``i``.

    Raises
    ------
    SchemaError
        A row has fewer fields than the header (naming its line and both counts).
    """
    data = path.read_bytes()
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    short = len(table.columns) and bool(table.iloc[:, -1].isna().any())
    if n_lines == len(table) + 1 and not short:
        return None
    reader = csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""), delimiter=sep)
    next(reader, None)
    starts, start = [], reader.line_num + 1
    for record in reader:
        if record:  # pandas skips a blank line
            if len(record) < n_fields:
                raise SchemaError(f"{str(path)!r}: line {start} has {len(record)} field(s), the header "
                                  f"{n_fields}; give every row a cell for every column (an empty cell "
                                  "is written as nothing between two commas).")
            starts.append(start)
        start = reader.line_num + 1
    # a reading that does not match pandas' row for row names no line rather than a wrong one
    return np.asarray(starts) if len(starts) == len(table) else None


def _where(path: Path, i: int) -> str:
    """Where data row ``i`` (0-based) of the file is, in the user's terms (1-based)."""
    if path.suffix.lower() in (".csv", ".txt"):
        return f"line {i + 2}"  # line 1 is the header
    return f"row {i + 1}"


def _empty(v: Any) -> bool:
    return v is None or (np.ndim(v) == 0 and bool(pd.isna(v))) or (isinstance(v, str) and not v.strip())


def _first_bad(path: Path, values: pd.Series, bad: np.ndarray) -> str:
    """``"'x' on line 5 (and 2 more row(s))"``: the first cell of ``values`` where ``bad`` holds."""
    i = int(np.flatnonzero(bad)[0])
    v = values.iloc[i]
    shown = "an empty cell" if _empty(v) else quote(v)
    more = int(bad.sum()) - 1
    return f"{shown} on {_where(path, i)}" + (f" (and {more} more row(s))" if more else "")


def _wide_field(wide: Any, name: str, default: Any) -> Any:
    # a WideScoresSpec, or an object with its older attributes (no cohort_column, keep_columns...)
    return getattr(wide, name, default)


def read_wide(path: str | Path, wide: Any) -> pd.DataFrame:
    """Read a wide prediction file into the long ScoreTable form.

    Parameters
    ----------
    path : path
        The file (CSV or Parquet).
    wide : WideScoresSpec
        The ``scores_wide:`` entry (:class:`medaudit.audit.spec.WideScoresSpec`), which says
        what every column is.

    Returns
    -------
    pandas.DataFrame
        One row per image x score column: ``image_id, cohort, model, prompt, score`` (and
        ``label``, ``seed`` and the ``keep_columns`` when given), score columns in file order.

    Raises
    ------
    SchemaError
        Naming the file, the column and the line: a declared column absent; a column that is
        none of id, label, cohort, kept, ignored or a score column (nothing is silently
        ignored); a score column with a cell that is not a finite number (often a column of
        text the default pattern took for a model); an empty cohort cell; a label other than
        0/1; an image id given twice for one cohort.

    Examples
    --------
    >>> import tempfile
    >>> from medaudit.audit.spec import WideScoresSpec
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d, "w.csv")
    ...     _ = p.write_text("image_id,hospital,label,a,b\\n1,h1,1,0.9,0.8\\n2,h2,0,0.2,0.4\\n")
    ...     long = read_wide(p, WideScoresSpec(path="w.csv", cohort_column="hospital"))
    >>> long[["image_id", "cohort", "model", "score"]].values.tolist()
    [['1', 'h1', 'a', 0.9], ['2', 'h2', 'a', 0.2], ['1', 'h1', 'b', 0.8], ['2', 'h2', 'b', 0.4]]
    """
    import re

    path = Path(path)
    cohort_column = _wide_field(wide, "cohort_column", None)
    keep = list(_wide_field(wide, "keep_columns", ()))
    ignore = list(_wide_field(wide, "ignore_columns", ()))
    text_columns = (wide.id_column,) + ((cohort_column,) if cohort_column is not None else ())
    table = read_table(path, what="prediction file", id_columns=text_columns)
    # no label column: labels come from the spec's ``annotations:`` (attached afterwards)
    roles = {wide.id_column: "id_column", wide.label_column: "label_column",
             cohort_column: "cohort_column", **{c: "keep_columns" for c in keep},
             **{c: "ignore_columns" for c in ignore}}
    roles.pop(None, None)
    for col, role in roles.items():
        if col not in table.columns:
            close = _close(str(col), [str(c) for c in table.columns if c not in roles])
            hint = f"; did you mean {quote(close)}?" if close is not None else ""
            raise SchemaError(f"{str(path)!r}: column {quote(col)} not found ({role}){hint}; "
                              f"columns are {quote(list(table.columns))}.")
    try:
        pattern = re.compile(wide.column_pattern)
    except re.error as exc:
        raise SchemaError(f"column_pattern {quote(wide.column_pattern)} is not a valid regular "
                          f"expression: {exc}") from None
    ids = table[wide.id_column]
    no_id = ids.map(_empty).to_numpy(dtype=bool)
    if no_id.any():
        raise SchemaError(f"{str(path)!r}: id_column {quote(wide.id_column)} is empty at "
                          f"{_first_bad(path, ids, no_id)}; every row needs its image id.")
    if cohort_column is not None:
        cohort = table[cohort_column]
        empty = (cohort.isna() | (cohort.astype(str).str.strip() == "")).to_numpy()
        if empty.any():
            raise SchemaError(f"{str(path)!r}: cohort_column {quote(cohort_column)} is empty at "
                              f"{_first_bad(path, cohort, empty)}; every row needs "
                              "its cohort.")
        cohort = cohort.astype(str)
    else:
        cohort = pd.Series(wide.cohort, index=table.index, dtype=object)
    if wide.label_column is not None:
        lab = pd.to_numeric(table[wide.label_column], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isin(lab, (0.0, 1.0))
        if bad.any():
            raise SchemaError(f"{str(path)!r}: label_column {quote(wide.label_column)} must be 0 or 1 "
                              f"(1 = positive); it has "
                              f"{_first_bad(path, table[wide.label_column], bad)}.")
    dup = pd.DataFrame({"c": cohort, "i": ids}).duplicated(keep=False).to_numpy()
    if dup.any():
        where = [_where(path, int(i)) for i in np.flatnonzero(dup)[:2]]
        raise SchemaError(f"{str(path)!r}: image {quote(ids[dup].iloc[0])} (id_column "
                          f"{quote(wide.id_column)}) appears more than once for one cohort "
                          f"({' and '.join(where)}); keep one row per image.")
    frames, unmatched, matched = [], [], []
    for col in table.columns:
        if col in roles:
            continue
        m = pattern.fullmatch(str(col))
        if m is None or "model" not in m.groupdict():
            unmatched.append(col)
            continue
        g = m.groupdict()
        matched.append(col)
        raw = table[col]
        score = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(score)
        if bad.any():
            # text where numbers belong: typically a column (a hospital, a note) that the
            # pattern took for a model; otherwise holes (empty cells, infinities)
            text = bad & np.isnan(score) & ~raw.map(_empty).to_numpy(dtype=bool)
            what = (f"{str(path)!r}: column {quote(col)} matches column_pattern "
                    f"{quote(wide.column_pattern)}, so it is read as the scores of model "
                    f"{quote(wide.model_prefix + g['model'])}, but it has "
                    f"{_first_bad(path, raw, text if text.any() else bad)} where a finite "
                    "number belongs")
            if not text.any():
                raise SchemaError(f"{what}; every image needs a finite score from every model.")
            raise SchemaError(
                f"{what}. If it is each row's cohort, give `cohort_column: {col}`; to carry it "
                "beside the scores (a subgroup such as sex) list it in `keep_columns:`; to leave "
                "it out, list it in `ignore_columns:`; or narrow column_pattern to the score "
                "columns.")
        # ids were read as text; an empty cell stays missing so validation names its row
        part = pd.DataFrame({"image_id": ids, "cohort": cohort,
                             "model": wide.model_prefix + g["model"],
                             "prompt": g.get("prompt") or wide.prompt, "score": score})
        if wide.label_column is not None:
            part["label"] = table[wide.label_column]
        if g.get("seed") is not None:
            part["seed"] = int(g["seed"])
        for c in keep:
            part[c] = table[c]
        frames.append(part)
    if unmatched:
        declared = ", ".join(f"{role} {quote(c)}" for c, role in roles.items()) or "the declared columns"
        scored = f"the score columns it matched are {quote(matched)}" if matched else \
            "it matched no column"
        raise SchemaError(
            f"{str(path)!r}: column(s) {quote(unmatched)} do not match column_pattern "
            f"{quote(wide.column_pattern)} (a score column's whole name must match it, with a "
            f"named group 'model'; {scored}) and are none of {declared}. List them in "
            "`keep_columns:` to carry them beside the scores (sex, negative_group, patient_id) or "
            "in `ignore_columns:` to leave them out; nothing is ignored unless declared.")
    if not frames:
        raise SchemaError(f"{str(path)!r}: no score columns found: no column besides the id, "
                          f"label, cohort, kept and ignored ones matches column_pattern "
                          f"{quote(wide.column_pattern)}.")
    return pd.concat(frames, ignore_index=True)
