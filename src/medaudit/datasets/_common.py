"""Shared pieces of the real-data readers: the loaded-table record, data-folder lookup and
cell parsing whose errors name the file, the line (1-based, header included) and the column.

Used by :mod:`medaudit.datasets.enhance`, :mod:`medaudit.datasets.nih` and
:mod:`medaudit.datasets.lidc`; :mod:`medaudit.datasets.annotations` re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import SchemaError

__all__ = ["ANNOTATION_COLUMNS", "LoadedAnnotations", "shared_data_dir", "source_hashes"]

ANNOTATION_COLUMNS = ("item_id", "annotator", "rating", "cohort")


@dataclass(frozen=True)
class LoadedAnnotations:
    """A long annotation table read from disk, with its declared scale and filter counts.

    Attributes
    ----------
    table : DataFrame
        ``item_id, annotator, rating, cohort`` first, then provenance columns
        (``source_file``, ``line``, ``column`` and reader-specific ones).
    scale : tuple of float
        Declared (min, max) of ``rating``.
    counts : dict
        Rows read, annotations kept and every skipped category with its count.
    notes : tuple of str
        Caveats a reader of the results must see (layout quirks, identity limits).
    """

    table: pd.DataFrame
    scale: tuple[float, float]
    counts: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def core(self) -> pd.DataFrame:
        """Only ``item_id, annotator, rating, cohort`` (what an audit's annotation file holds)."""
        return self.table.loc[:, list(ANNOTATION_COLUMNS)].reset_index(drop=True)

    def to_dict(self) -> dict[str, Any]:
        """Provenance record (no table)."""
        return {"scale": list(self.scale), "counts": dict(self.counts), "notes": list(self.notes),
                "n_items": int(self.table[["cohort", "item_id"]].drop_duplicates().shape[0]),
                "n_annotations": int(len(self.table))}


def shared_data_dir() -> Path:
    """``../shared/data`` relative to the repository root (from this file's location)."""
    return Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def _root(root: str | Path | None, folder: str) -> Path:
    base = Path(root) if root is not None else shared_data_dir() / folder
    if not base.is_dir():
        raise FileNotFoundError(f"data folder {str(base)!r} does not exist; pass root= the folder "
                                f"holding {folder!r} (see ../shared/data/README.md).")
    return base


def _read_csv(path: Path, *, sep: str = ",") -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist.")
    try:
        # every cell as text: numbers are parsed here with errors naming the cell
        return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except Exception as exc:  # noqa: BLE001 - re-raised with the file named
        raise SchemaError(f"could not read {str(path)!r}: {exc}") from exc


def _numbers(values: pd.Series, *, path: Path, column: str, missing: Iterable[str] = ("",)
             ) -> tuple[np.ndarray, np.ndarray]:
    """Parse a text column to float; returns (values, is_missing) or raises naming the cell."""
    text = values.astype(str).str.strip()
    miss = text.isin(list(missing)).to_numpy().copy()
    num = pd.to_numeric(text.where(~miss), errors="coerce").to_numpy(dtype=float).copy()
    bad = ~miss & ~np.isfinite(num)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SchemaError(f"{path}: column {column!r}, line {i + 2}: {values.iloc[i]!r} is not a "
                          f"number ({int(bad.sum())} such cell(s)); fix the file or declare the "
                          "value as missing.")
    return num, miss


def _check_scale(num: np.ndarray, lo: float, hi: float, *, path: Path, column: str) -> None:
    out = np.isfinite(num) & ((num < lo) | (num > hi))
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise SchemaError(f"{path}: column {column!r}, line {i + 2}: rating {num[i]:g} is outside "
                          f"the declared scale [{lo:g}, {hi:g}] ({int(out.sum())} cell(s)); declare "
                          "the right scale (scales=...) rather than clipping.")


def source_hashes(loaded: LoadedAnnotations, root: Path) -> dict[str, str]:
    """SHA-256 of every file a reader took rows from (``source_file`` relative to ``root``)."""
    from medaudit.io import file_sha256

    files = sorted(set(loaded.table["source_file"].astype(str)))
    return {f: file_sha256(Path(root) / f) for f in files}

