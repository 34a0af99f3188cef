"""Reading score tables from CSV or Parquet with clear errors.

Identifier columns (:data:`ID_COLUMNS`, plus any the caller declares, such as a wide file's
``id_column``) are always read as text, from CSV and from Parquet: ``007`` and ``7`` are two
images, and ``001`` stays ``001`` (a number parser would make both ``7`` and ``1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medaudit.exceptions import SchemaError
from medaudit.io.messages import one_line, quote
from medaudit.io.paths import input_file

__all__ = ["ID_COLUMNS", "read_table", "read_wide", "ids_as_text"]

#: columns that hold identifiers: read as text, never as numbers
ID_COLUMNS = ("image_id", "study_id", "patient_id", "item_id")


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
    ids = tuple(dict.fromkeys((*ID_COLUMNS, *id_columns)))
    dtype = csv_options.pop("dtype", None)
    dtype = {**{c: str for c in ids}, **(dtype or {})} if isinstance(dtype, dict) or dtype is None \
        else dtype
    csv_options = {"keep_default_na": False, "na_values": [""], "dtype": dtype, **csv_options}
    try:
        if suffix in (".parquet", ".pq"):
            return ids_as_text(pd.read_parquet(path), ids)
        if suffix in (".csv", ".txt"):
            table = pd.read_csv(path, **csv_options)
            # data row i is line i + 2 of the file (line 1 is the header): messages name lines
            table.attrs["first_line"] = 2
            return table
    except Exception as exc:  # noqa: BLE001 - re-raised with the file named
        raise SchemaError(f"could not read {str(path)!r}: {one_line(str(exc))}") from exc
    raise SchemaError(f"{str(path)!r}: unsupported file type {suffix!r}; use .csv or .parquet.")


def read_wide(path: str | Path, wide) -> pd.DataFrame:
    """Read a wide prediction file into the long ScoreTable form (see ``WideScoresSpec``)."""
    import re

    table = read_table(path, id_columns=(wide.id_column,))
    # no label column: labels come from the spec's ``annotations:`` (attached afterwards)
    fixed = tuple(c for c in (wide.id_column, wide.label_column) if c is not None)
    for col in fixed:
        if col not in table.columns:
            raise SchemaError(f"{str(path)!r}: column {quote(col)} not found; columns are "
                              f"{quote(list(table.columns))}.")
    try:
        pattern = re.compile(wide.column_pattern)
    except re.error as exc:
        raise SchemaError(f"column_pattern {quote(wide.column_pattern)} is not a valid regular "
                          f"expression: {exc}") from None
    frames = []
    unmatched = []
    for col in table.columns:
        if col in fixed:
            continue
        m = pattern.fullmatch(str(col))
        if m is None or "model" not in m.groupdict():
            unmatched.append(col)
            continue
        g = m.groupdict()
        # ids were read as text; an empty cell stays missing so validation names its row
        part = pd.DataFrame({"image_id": table[wide.id_column],
                             "cohort": wide.cohort,
                             "model": wide.model_prefix + g["model"],
                             "prompt": g.get("prompt") or wide.prompt,
                             "score": table[col]})
        if wide.label_column is not None:
            part["label"] = table[wide.label_column]
        if g.get("seed") is not None:
            part["seed"] = int(g["seed"])
        frames.append(part)
    if unmatched:
        raise SchemaError(f"{str(path)!r}: column(s) {quote(unmatched)} do not match column_pattern "
                          f"{quote(wide.column_pattern)} (which needs a named group 'model').")
    if not frames:
        raise SchemaError(f"{str(path)!r}: no score columns found.")
    return pd.concat(frames, ignore_index=True)
