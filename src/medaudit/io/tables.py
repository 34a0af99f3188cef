"""Reading score tables from CSV or Parquet with clear errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from medaudit.exceptions import SchemaError

__all__ = ["read_table"]


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet table; the error names the file when it cannot be read."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"score table {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".csv", ".txt"):
            return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except Exception as exc:  # noqa: BLE001 - re-raised with the file named
        raise SchemaError(f"could not read {str(path)!r}: {exc}") from exc
    raise SchemaError(f"{str(path)!r}: unsupported file type {suffix!r}; use .csv or .parquet.")
