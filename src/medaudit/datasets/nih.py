"""NIH ChestX-ray14 expert readers (``nih_cxr14_google_expert_readers``): the same 5
radiologists on 810 images (Abnormal + 14 findings, and ``Other``) and the 4-finding
YES/NO/HEDGE reads; the cohort is the finding.  Errors name the file, line and column.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from medaudit.datasets._common import LoadedAnnotations, _numbers, _read_csv, _root
from medaudit.exceptions import MedauditError, SchemaError

__all__ = ["NIH_FINDINGS", "NIH_FOUR_FINDINGS", "read_nih_readers", "read_nih_four_findings",
           "read_nih_metadata"]

NIH_FINDINGS = ("Abnormal", "Atelectasis", "Cardiomegaly", "Effusion", "Infiltration", "Mass",
                "Nodule", "Pneumonia", "Pneumothorax", "Consolidation", "Edema", "Emphysema",
                "Fibrosis", "Pleural Thickening", "Hernia", "Other")
NIH_FOUR_FINDINGS = ("Fracture", "Pneumothorax", "Airspace opacity", "Nodule/mass")
_NIH = "nih_cxr14_google_expert_readers"


def _readers_csv(root: str | Path | None, name: str, findings: Sequence[str],
                 allowed: Sequence[str], keys: list[str]) -> tuple[Path, Path, pd.DataFrame]:
    """The dataset root, the per-reader CSV ``labels/<name>`` and its text, columns checked."""
    root = _root(root, _NIH)
    bad = [f for f in findings if f not in allowed]
    if bad or not findings:
        raise MedauditError(f"findings must be a non-empty subset of {tuple(allowed)}; got {bad}.")
    path = root / "labels" / name
    df = _read_csv(path)
    if missing := [c for c in [*keys, *findings] if c not in df.columns]:
        raise SchemaError(f"{path}: missing column(s) {missing}.")
    return root, path, df


def read_nih_readers(root: str | Path | None = None, *, findings: Sequence[str] = NIH_FINDINGS
                     ) -> LoadedAnnotations:
    """The 5 radiologists' reads of the 810 PA images, one cohort per finding.

    ``rating`` is 1 for YES (or Abnormal = 1) and 0 for NO; ``annotator`` is the Reader ID;
    ``patient_id`` travels along (folds and clusters must respect patients).  Any other
    value is an error naming the file, line and column.
    """
    root, path, df = _readers_csv(
        root, "all_findings_expert_labels/all_findings_expert_labels_test_individual_readers.csv",
        findings, NIH_FINDINGS, ["Image ID", "Patient ID", "Reader ID"])
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
    root, path, df = _readers_csv(
        root, "four_findings_expert_labels/four_findings_expert_labels_individual_readers.csv",
        findings, NIH_FOUR_FINDINGS, ["Image ID", "Patient ID", "Reader ID", "Set ID"])
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
    # the file holds a few repeated reads (same reader, image and finding on two lines, not
    # always agreeing): kept and counted here; an audit refuses them unless it declares
    # annotations.duplicates: keep
    rep = table.duplicated(["cohort", "item_id", "annotator"], keep=False).to_numpy()
    counts["repeated_reads"] = int(rep.sum())
    notes = [f"HEDGE policy: {hedge}"]
    if rep.any():
        r = table.loc[rep].iloc[0]
        same = rep & (table[["cohort", "item_id", "annotator"]] == r[["cohort", "item_id",
                                                                        "annotator"]]).all(axis=1)
        notes.append(f"{int(rep.sum())} reads repeat a (finding, image, reader) triple, e.g. reader "
                     f"{r['annotator']} on {r['item_id']} ({r['cohort']}) at lines "
                     f"{sorted(table.loc[same, 'line'].tolist())}")
    return LoadedAnnotations(table=table, scale=(0.0, 1.0), counts=counts, notes=tuple(notes))


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
