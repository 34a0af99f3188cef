"""ENHANCE (``enhance_isic_multiannotator``): student-group and MTurk crowd ratings of
asymmetry, border and colour on ISIC images, and the algorithmic scores in ``automated/``
used as real "models" (paper 001 real run).

Student files differ per group: the column meaning comes from each year's
``data_types.csv`` (as the dataset's own code reads it), and the rating scale of each
(year, group, attribute) is declared in :data:`ENHANCE_STUDENT_SCALES` ([RECON]: paper 001
does not give the scales, M1.1).  Every skipped cell or line is counted; every error names
the file, the line and the column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

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

__all__ = ["ENHANCE_ATTRIBUTES", "ENHANCE_STUDENT_SCALES", "ENHANCE_CROWD_SCALES",
           "read_enhance_students", "read_enhance_crowd", "read_enhance_automated",
           "enhance_tables", "enhance_scores", "enhance_hard_labels"]

ENHANCE_ATTRIBUTES = ("asymmetry", "border", "color")
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


def enhance_scores(root: str | Path | None = None, *,
                   attributes: Sequence[str] = ENHANCE_ATTRIBUTES
                   ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The four automated models as a long score table on the images every model scored.

    Each attribute is a cohort and every model scores every cohort (cross-attribute scores
    are weaker but real models).  Images some model lacks are left out (a paired analysis
    needs identical image sets) and counted.

    Returns
    -------
    scores : DataFrame
        ``image_id, cohort, model, prompt ("none"), score``, sorted by cohort, model and
        image (no label: the labels come from the annotations; the scores are counts and
        fractions, so an audit declares ``score_scale: logits``).
    counts : dict
        ``rows_by_model`` read, ``scored_by_all_models`` and ``scored_by_some_models_only``.
    """
    attributes = _check_attributes(attributes)
    auto, rows = read_enhance_automated(root)
    models = sorted(auto["model"].unique())
    per_model = auto.groupby("image_id")["model"].nunique()
    scored_all = per_model.index[per_model == len(models)]
    s = auto[auto["image_id"].isin(scored_all)]
    frames = [pd.DataFrame({"image_id": s["image_id"].to_numpy(), "cohort": attr,
                            "model": s["model"].to_numpy(), "prompt": "none",
                            "score": s["score"].to_numpy(dtype=float)}) for attr in attributes]
    scores = pd.concat(frames, ignore_index=True).sort_values(
        ["cohort", "model", "image_id"], kind="stable", ignore_index=True)
    return scores, {"rows_by_model": rows, "scored_by_all_models": int(scored_all.size),
                    "scored_by_some_models_only": int(per_model.size - scored_all.size)}


def enhance_tables(root: str | Path | None = None, *, source: Literal["student", "crowd"] = "student",
                   attributes: Sequence[str] = ENHANCE_ATTRIBUTES
                   ) -> tuple[LoadedAnnotations, pd.DataFrame, dict[str, Any]]:
    """Annotations and scores of ENHANCE on the items every model and the annotations share.

    The scores are :func:`enhance_scores`; items lacking a score from some model, and
    scored images without annotations, are left out here and counted in the returned
    ``counts`` (per cohort: annotated, scored by all models, kept, dropped on each side).

    Returns
    -------
    annotations : LoadedAnnotations
        Restricted to the kept items.
    scores : DataFrame
        As :func:`enhance_scores`, restricted to the kept items.
    counts : dict
        What was kept and dropped, per cohort.
    """
    ann = (read_enhance_students(root, attributes=attributes) if source == "student"
           else read_enhance_crowd(root, attributes=attributes))
    all_scores, _ = enhance_scores(root, attributes=attributes)
    keep_frames, score_frames, counts = [], [], {}
    for attr in attributes:
        a = ann.table[ann.table["cohort"] == attr]
        s = all_scores[all_scores["cohort"] == attr]
        items, scored_all = set(a["item_id"]), set(s["image_id"])
        kept = sorted(items & scored_all)
        counts[attr] = {"annotated_items": len(items), "scored_by_all_models": len(scored_all),
                        "kept_items": len(kept), "annotated_not_scored": len(items - scored_all),
                        "scored_not_annotated": len(scored_all - items)}
        keep_frames.append(a[a["item_id"].isin(kept)])
        score_frames.append(s[s["image_id"].isin(kept)])
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
