"""The spec-driven path: read the ``annotations:`` file and attach labels to the score table.

Called by :func:`medaudit.audit.context.build_context`:

* :func:`load_annotations` reads and validates the file named by the spec (or the data
  set its format names: ENHANCE, NIH readers, LIDC) and returns it with a provenance record
  (path, SHA-256, layout, columns, counts, rules, and the aggregation's drop counts);
* :func:`attach_labels` aggregates the annotations and joins them to the score table
  (``annotations.item_id`` to ``table.image_id``, and cohort when the annotations carry
  one), adding ``label_soft`` and, when the table has no usable ``label``, the hard
  ``label``.  Score rows without annotations and annotated items without scores are
  errors listing them, unless the spec says ``unannotated: drop`` / ``unscored: ignore``;
  what was dropped or ignored is counted in ``result.attrs["labels"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import SchemaError
from medaudit.labels.aggregate import aggregate_with_spec
from medaudit.labels.annotations import (
    AnnotationTable,
    RatingScale,
    read_annotations,
    validate_annotations,
)

__all__ = ["load_annotations", "attach_labels"]

_SEP = "\x1f"  # joins cohort and item id into one key (never in a file's text fields)


def _resolve(path: str, base_dir: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else (Path(base_dir) / p).resolve()


def _read_dataset(spec: Any, base_dir: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Validated annotations and provenance of a data-set format (enhance / nih / lidc)."""
    from medaudit.datasets._common import _root
    from medaudit.datasets.annotations import DATASET_FOLDERS, read_dataset, source_hashes

    root = _root(None if spec.path is None else _resolve(spec.path, base_dir),
                 DATASET_FOLDERS[spec.format])
    loaded = read_dataset(spec.format, root, options=spec.dataset, hedge=spec.hedge)
    scale = RatingScale.from_spec(spec.scale)
    if loaded.scale != (scale.low, scale.high):  # the spec validator sets the reader's scale
        raise SchemaError(f"format {spec.format}: the reader declares the scale {loaded.scale}, the "
                          f"spec {(scale.low, scale.high)}.")
    frame = validate_annotations(loaded.core(), scale=scale, source=f"{spec.format} at {root}",
                                 duplicates=spec.duplicates)
    # the default folder is recorded by name, not by this machine's absolute path
    where = str(spec.path) if spec.path is not None else f"../shared/data/{DATASET_FOLDERS[spec.format]}"
    prov = {"path": where, "format": spec.format,
            "dataset": dict(spec.dataset or {}), "sha256": source_hashes(loaded, root),
            "reader": loaded.to_dict()}
    return frame, prov


def load_annotations(spec: Any, base_dir: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read and validate the annotations of an ``AnnotationsSpec``.

    Parameters
    ----------
    spec : AnnotationsSpec
        The spec's ``annotations:`` section: a file (``format: long`` or ``crowd``) or a
        data set read by its reader (``format: enhance``, ``nih`` or ``lidc``; see
        :func:`medaudit.datasets.annotations.read_dataset`).
    base_dir : Path
        Directory relative paths are resolved against (the spec file's directory).

    Returns
    -------
    frame : DataFrame
        The validated long table (see :func:`~medaudit.labels.validate_annotations`).
    provenance : dict
        ``path``, ``sha256`` (of the file, or of every file a data-set reader used),
        ``format``, ``scale``, counts of rows, items, annotators and hedged ratings, the
        aggregation rules and its drop counts (and the reader's own counts and notes).
    """
    scale = RatingScale.from_spec(spec.scale)
    if spec.is_dataset:
        frame, prov = _read_dataset(spec, Path(base_dir))
    else:
        from medaudit.io import file_sha256

        path = _resolve(spec.path, Path(base_dir))
        frame = read_annotations(path, scale=scale, format=spec.format, columns=spec.columns(),
                                 cohort_column=spec.cohort_column, cohort=spec.cohort,
                                 duplicates=spec.duplicates)
        prov = {"path": str(spec.path), "sha256": file_sha256(path), "format": spec.format,
                "columns": dict(zip(("item", "annotator", "rating"), spec.columns(), strict=True))}
    # one order whatever the order of the file's rows: the annotation bootstrap draws by
    # position, so a shuffled file would otherwise give other intervals for the same data
    keys = [c for c in ("cohort", "item_id", "annotator") if c in frame.columns]
    frame = frame.sort_values(keys, key=lambda col: col.astype(str), kind="stable").reset_index(drop=True)
    if spec.hedge is None and "hedged" in frame.columns and frame["hedged"].to_numpy(dtype=bool).any():
        # said here, with the file and the spec key (the aggregation names its Python argument)
        h = frame["hedged"].to_numpy(dtype=bool)
        raise SchemaError(f"{prov.get('path') or 'annotations'}: {int(h.sum())} rating(s) are hedged "
                          f"(a code mapped to 'hedge'; the first is {_first_hedged(frame, h)}); "
                          "declare how they count with `annotations.hedge:` negative, positive, "
                          "exclude or half.")
    agg = aggregate_with_spec(frame, spec)  # fails early on an undeclared hedge policy
    prov.update({"scale": {"min": scale.low, "max": scale.high,
                           "codes": None if scale.codes is None else dict(scale.codes)},
                 **AnnotationTable(frame, scale, prov["path"]).counts(),
                 "rules": agg.rules, "aggregation": agg.counts})
    return frame, prov


def _first_hedged(frame: pd.DataFrame, hedged: Any) -> str:
    i = int(np.flatnonzero(hedged)[0])
    return f"item {frame['item_id'].iloc[i]!r} by annotator {frame['annotator'].iloc[i]!r}"


def _list(keys: list[str], reasons: dict[str, str] | None = None, limit: int = 10) -> str:
    shown = []
    for k in keys[:limit]:
        text = " / ".join(k.split(_SEP))
        if reasons and k in reasons:
            text += f" ({reasons[k]})"
        shown.append(text)
    more = f" ... and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(shown) + more


def attach_labels(table: pd.DataFrame, annotations: pd.DataFrame, spec: Any, *,
                  source: str) -> pd.DataFrame:
    """Add ``label_soft`` (and ``label`` when missing) from aggregated annotations.

    Parameters
    ----------
    table : DataFrame
        The raw score table (``image_id``, ``cohort``, ... ; ``label`` optional).
    annotations : DataFrame
        From :func:`load_annotations`.
    spec : AnnotationsSpec
    source : str
        Name of the score table in messages.

    Returns
    -------
    DataFrame
        A copy of ``table`` (rows of unannotated items removed only under
        ``unannotated: drop``) with ``label_soft``; ``label`` is the aggregated hard
        label when the table had none or only empty labels, else the table's own.
        ``attrs["labels"]`` records the join counts.
    """
    for c in ("image_id", "cohort"):
        if c not in table.columns:
            raise SchemaError(f"{source}: missing column {c!r}; labels are joined on image_id "
                              "(and cohort).")
    if "label_soft" in table.columns and table["label_soft"].notna().any():
        raise SchemaError(f"{source}: the score table already has label_soft values and the spec "
                          "gives annotations:; keep one source of soft labels.")
    agg = aggregate_with_spec(annotations, spec)
    by_cohort = "cohort" in agg.labels.columns
    lab = agg.labels
    if by_cohort:
        ann_key = (lab["cohort"].astype(str) + _SEP + lab["item_id"].astype(str)).to_numpy()
        drop_key = (agg.dropped["cohort"].astype(str) + _SEP
                    + agg.dropped["item_id"].astype(str)).tolist() if len(agg.dropped) else []
        row_key = (table["cohort"].astype(str) + _SEP + table["image_id"].astype(str)).to_numpy()
    else:
        ann_key = lab["item_id"].astype(str).to_numpy()
        drop_key = agg.dropped["item_id"].astype(str).tolist() if len(agg.dropped) else []
        row_key = table["image_id"].astype(str).to_numpy()
    reasons = dict(zip(drop_key, agg.dropped["reason"].tolist(), strict=True)) if drop_key else {}
    known = pd.Index(ann_key)
    pos = known.get_indexer(row_key)
    unannotated_rows = pos < 0
    score_items = sorted(set(row_key.tolist()))
    unannotated = sorted(set(row_key[unannotated_rows].tolist()))
    unscored = sorted(set(ann_key.tolist()) - set(score_items))
    what = "(cohort, image_id)" if by_cohort else "image_id"
    if unannotated and spec.unannotated == "error":
        raise SchemaError(
            f"{source}: {len(unannotated)} of {len(score_items)} scored item(s) have no usable "
            f"annotations (joined on {what}): {_list(unannotated, reasons)}. Add their ratings, or "
            "set annotations.unannotated: drop to drop their score rows (the count is recorded).")
    if unscored and spec.unscored == "error":
        raise SchemaError(
            f"annotations {spec.path or spec.format!r}: {len(unscored)} annotated item(s) have no scores in "
            f"{source} (joined on {what}): {_list(unscored)}. Check the ids, or set "
            "annotations.unscored: ignore (the count is recorded).")
    out = table.loc[~unannotated_rows].copy()
    pos = pos[~unannotated_rows]
    out["label_soft"] = lab["label_soft"].to_numpy(dtype=np.float64)[pos]
    hard = lab["label"].to_numpy(dtype=np.int64)[pos]
    own_label = "label" in out.columns and out["label"].notna().any()
    n_disagree = 0
    if own_label:
        own = pd.to_numeric(out["label"], errors="coerce").to_numpy(dtype=np.float64)
        n_disagree = int(np.sum(np.isfinite(own) & (own != hard)))
    else:
        out["label"] = hard
    out = out.reset_index(drop=True)
    out.attrs["labels"] = {
        "join": what, "n_score_items": len(score_items),
        "n_items_labelled": len(score_items) - len(unannotated),
        "n_unannotated_items_dropped": len(unannotated),
        "n_score_rows_dropped": int(unannotated_rows.sum()),
        "unannotated_examples": [" / ".join(k.split(_SEP)) for k in unannotated[:10]],
        "n_unscored_items_ignored": len(unscored),
        "label_source": "score table" if own_label else "annotations (hard rule)",
        "n_label_disagreements": n_disagree, "aggregation": agg.counts}
    return out
