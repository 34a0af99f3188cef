"""Reading score tables from CSV or Parquet with clear errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from medaudit.exceptions import SchemaError

__all__ = ["read_table", "read_wide"]


def read_table(path: str | Path, *, what: str = "score table", **csv_options) -> pd.DataFrame:
    """Read a CSV or Parquet table; every failure is one error naming the file.

    ``what`` names the table in messages; ``csv_options`` go to :func:`pandas.read_csv`
    (default: only empty cells are missing values, so "NA" stays a name).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist.")
    if not path.is_file():
        raise SchemaError(f"{what} {str(path)!r} is a folder, not a table file (.csv or .parquet).")
    suffix = path.suffix.lower()
    csv_options = {"keep_default_na": False, "na_values": [""], **csv_options}
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".csv", ".txt"):
            return pd.read_csv(path, **csv_options)
    except Exception as exc:  # noqa: BLE001 - re-raised with the file named
        raise SchemaError(f"could not read {str(path)!r}: {exc}") from exc
    raise SchemaError(f"{str(path)!r}: unsupported file type {suffix!r}; use .csv or .parquet.")


def read_wide(path: str | Path, wide) -> pd.DataFrame:
    """Read a wide prediction file into the long ScoreTable form (see ``WideScoresSpec``)."""
    import re

    table = read_table(path)
    # no label column: labels come from the spec's ``annotations:`` (attached afterwards)
    fixed = tuple(c for c in (wide.id_column, wide.label_column) if c is not None)
    for col in fixed:
        if col not in table.columns:
            raise SchemaError(f"{str(path)!r}: column {col!r} not found; columns are "
                              f"{list(table.columns)}.")
    try:
        pattern = re.compile(wide.column_pattern)
    except re.error as exc:
        raise SchemaError(f"column_pattern {wide.column_pattern!r} is not a valid regular "
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
        part = pd.DataFrame({"image_id": table[wide.id_column].astype(str),
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
        raise SchemaError(f"{str(path)!r}: column(s) {unmatched} do not match column_pattern "
                          f"{wide.column_pattern!r} (which needs a named group 'model').")
    if not frames:
        raise SchemaError(f"{str(path)!r}: no score columns found.")
    return pd.concat(frames, ignore_index=True)
