"""The AnnotationTable: raw ratings, one row per (item, annotator), checked against a declared scale.

Long layout ``item_id, annotator, rating`` (+ optional ``cohort``); crowd-tool layout
``task, worker, label`` (crowd-kit's).  Validation turns each raw rating into a number
on the declared :class:`RatingScale` (column ``value``) or marks it hedged (``hedged``);
a rating off the scale, a missing item or annotator id, or a repeated (item, annotator)
pair is an error naming the rows (0-based data rows) and the column.  Nothing is
dropped, flipped or coerced silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from medaudit.exceptions import SchemaError
from medaudit.io.schema import row_places
from medaudit.labels.scale import RatingScale, code_key

__all__ = ["ANNOTATION_COLUMNS", "RatingScale", "AnnotationTable", "validate_annotations",
           "read_annotations", "code_key"]

ANNOTATION_COLUMNS = ("item_id", "annotator", "rating")
_LAYOUTS = {"long": ("item_id", "annotator", "rating"), "crowd": ("task", "worker", "label")}




def validate_annotations(
    table: pd.DataFrame, *, scale: RatingScale, source: str = "annotations",
    columns: tuple[str, str, str] = ANNOTATION_COLUMNS, cohort_column: str | None = None,
    cohort: str | None = None, duplicates: str = "error",
) -> pd.DataFrame:
    """Return the validated long table, or raise :class:`SchemaError`.

    Parameters
    ----------
    table : DataFrame
        Raw annotations, one row per (item, annotator) rating.
    scale : RatingScale
        The declared scale; every rating must be on it.
    source : str
        Name used in messages (the file path when read from disk).
    columns : (item, annotator, rating), default=("item_id", "annotator", "rating")
        Column names in ``table`` (crowd layout: ``("task", "worker", "label")``).
    cohort_column : str, optional
        Column holding each item's cohort; default ``"cohort"`` when present.
    cohort : str, optional
        The cohort of every row (a file without a cohort column).
    duplicates : {"error", "keep"}, default="error"
        A repeated (cohort, item, annotator) triple: an error, or kept as two ratings.

    Returns
    -------
    DataFrame
        Columns ``item_id, annotator, rating, value, hedged`` (+ ``cohort``) in input
        order: ids as text, ``rating`` the raw value, ``value`` the number on the scale
        (NaN when hedged).

    Examples
    --------
    >>> t = pd.DataFrame({"item_id": [1, 1, 2], "annotator": ["a", "b", "a"],
    ...                   "rating": ["YES", "HEDGE", "NO"]})
    >>> v = validate_annotations(t, scale=RatingScale.from_codes({"YES": 1, "NO": 0,
    ...                          "HEDGE": "hedge"}))
    >>> v["value"].tolist(), v["hedged"].tolist()
    ([1.0, nan, 0.0], [False, True, False])
    """
    if duplicates not in ("error", "keep"):
        raise SchemaError(f"duplicates must be 'error' or 'keep'; got {duplicates!r}.")
    if not isinstance(scale, RatingScale):
        raise SchemaError(f"scale must be a RatingScale (RatingScale.numeric(lo, hi) or "
                          f"RatingScale.from_codes({{...}})); got {type(scale).__name__}.")
    item_c, ann_c, rat_c = columns
    if cohort_column is None and "cohort" in table.columns:
        cohort_column = "cohort"
    need = [item_c, ann_c, rat_c] + ([cohort_column] if cohort_column else [])
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise SchemaError(f"{source}: missing column(s) {missing}; the file has "
                          f"{list(table.columns)}. Name the columns in the spec (item_column, "
                          "annotator_column, rating_column) or use format: crowd for task/worker/label.")
    if len(table) == 0:
        raise SchemaError(f"{source}: the annotation table has no rows.")
    if cohort is not None and cohort_column is not None:
        raise SchemaError(f"{source}: the table has a cohort column {cohort_column!r} and the spec "
                          f"names cohort {cohort!r}; give only one.")
    t = table.reset_index(drop=True)
    for col, what in ((item_c, "item id"), (ann_c, "annotator id"), (rat_c, "rating")) + (
            ((cohort_column, "cohort"),) if cohort_column else ()):
        empty = t[col].isna().to_numpy() | (t[col].astype(str).str.strip() == "").to_numpy()
        if empty.any():
            raise SchemaError(f"{source}: column {col!r} ({what}) is empty at {row_places(table, empty)}; "
                              f"every row of ratings needs its {what}.")
    value, hedged = scale.encode(table[rat_c], source=source, column=rat_c)
    out = pd.DataFrame({"item_id": t[item_c].astype(str).to_numpy(),
                        "annotator": t[ann_c].astype(str).to_numpy(),
                        "rating": t[rat_c].to_numpy(), "value": value, "hedged": hedged})
    if cohort_column is not None:
        out.insert(0, "cohort", t[cohort_column].astype(str).to_numpy())
    elif cohort is not None:
        out.insert(0, "cohort", str(cohort))
    key = [c for c in ("cohort", "item_id", "annotator") if c in out.columns]
    dup = out.duplicated(key, keep=False).to_numpy()
    if dup.any() and duplicates == "error":
        ex = out.loc[dup, key].head(2).to_dict("records")
        raise SchemaError(f"{source}: {int(dup.sum())} rows repeat an ({', '.join(key)}) pair at "
                          f"{row_places(table, dup)}, e.g. {ex}. Keep one rating per annotator and item, "
                          "or declare annotations.duplicates: keep to count each as a rating.")
    return out


def read_annotations(
    path: str | Path, *, scale: RatingScale, format: str = "long",
    columns: tuple[str, str, str] | None = None, cohort_column: str | None = None,
    cohort: str | None = None, duplicates: str = "error",
) -> pd.DataFrame:
    """Read and validate an annotation file (CSV or Parquet) in the long or crowd layout.

    ``columns`` defaults to the layout's names: ``item_id, annotator, rating`` (long) or
    ``task, worker, label`` (crowd).  Other arguments as in :func:`validate_annotations`.
    """
    from medaudit.io.tables import read_table

    if format not in _LAYOUTS:
        raise SchemaError(f"format must be one of {list(_LAYOUTS)}; got {format!r}.")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"annotation file {str(path)!r} does not exist.")
    return validate_annotations(read_table(path), scale=scale, source=str(path),
                                columns=columns or _LAYOUTS[format], cohort_column=cohort_column,
                                cohort=cohort, duplicates=duplicates)


@dataclass(frozen=True)
class AnnotationTable:
    """A validated annotation table with its scale (see :func:`validate_annotations`)."""

    frame: pd.DataFrame
    scale: RatingScale
    source: str = "annotations"

    @classmethod
    def from_frame(cls, table: pd.DataFrame, *, scale: RatingScale, source: str = "annotations",
                   **kwargs: Any) -> AnnotationTable:
        return cls(validate_annotations(table, scale=scale, source=source, **kwargs), scale, source)

    @classmethod
    def read(cls, path: str | Path, *, scale: RatingScale, **kwargs: Any) -> AnnotationTable:
        return cls(read_annotations(path, scale=scale, **kwargs), scale, str(path))

    @property
    def has_cohort(self) -> bool:
        return "cohort" in self.frame.columns

    def counts(self) -> dict[str, Any]:
        """Rows, items, annotators and hedged ratings (per cohort when there is one)."""
        f = self.frame
        key = ["cohort", "item_id"] if self.has_cohort else ["item_id"]
        per_item = f.groupby(key, sort=True).size()
        out: dict[str, Any] = {"n_ratings": int(len(f)), "n_items": int(per_item.size),
                               "n_annotators": int(f["annotator"].nunique()),
                               "n_hedged": int(f["hedged"].sum()),
                               "ratings_per_item": {"min": int(per_item.min()),
                                                    "max": int(per_item.max())}}
        if self.has_cohort:
            out["items_by_cohort"] = {str(k): int(v) for k, v in
                                      f.groupby("cohort", sort=True)["item_id"].nunique().items()}
        return out

    def aggregate(self, **rules: Any):
        """Aggregate to soft and hard labels (:func:`medaudit.labels.aggregate_labels`)."""
        from medaudit.labels.aggregate import aggregate_labels

        return aggregate_labels(self.frame, scale=self.scale, **rules)
