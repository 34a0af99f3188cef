"""Real judgment tables from public per-reader chest X-ray labels (paper 002 machinery on real data).

No generative-VLM verdict tables are public, so radiologists serve as the categorical
"models" (issue 5, item 5).  Sources, read in place (never copied into the repository):

* **NIH ChestX-ray14, Google all-findings expert labels** (``nih_dir``, see its README):
  810 PA images x the same 5 board-certified radiologists, 14 findings YES/NO; three of the
  five (:data:`NIH_PANEL`) were designated ground-truth readers, whose majority is the
  published ``test_labels.csv``.
* **NIH ChestX-ray14, Google four-findings labels**: 4,376 images, 13,081 reader rows from a
  pool of 22 readers (mostly 3 per image), YES/NO/HEDGE (:func:`read_nih_four_findings`).
* **VinDr-CXR training labels** shipped inside the installed ``torchxrayvision`` wheel
  (``torchxrayvision/data/vinbigdata-train.csv.gz``): 15,000 images, each read by 3 of 17
  radiologists, one row per drawn box (or one "No finding" row).  A radiologist asserts a
  finding on an image when they drew at least one box of that class.

The two-institution design (:func:`nih_vindr_judgments`) -- declared, and recorded in
the provenance:

* institutions ``NIH`` and ``VinDr``; findings the two share among paper 002's six
  (atelectasis, cardiomegaly, consolidation, pleural effusion, pneumothorax; edema is not
  labelled in VinDr-CXR); protocol ``read``; study = image; VinDr has no patient id, so
  ``patient_id`` = image id;
* a **three-reader panel** per image (NIH: the designated readers; VinDr: the image's 3
  radiologists); models ``reader_1``..``reader_3`` are the panel slots in reader-id order
  (NIH: numeric id; VinDr: the number in ``R<k>``), so a slot is one person at NIH and a
  rotating radiologist at VinDr;
* the reference of slot r is formed by the **other two** panel readers (the reader is left
  out of its own reference): 1 when both say present, 0 when both say absent, and -1
  (uncertain) when they split -- excluded under the default uncertain policy;
* with ``comparison_readers=True``, NIH's two non-panel readers are models
  ``nih_comparison_1``/``_2`` judged against the panel majority (= the published labels).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import MedauditError, SchemaError

__all__ = ["NIH_PANEL", "NIH_FINDINGS", "VINDR_FINDINGS", "SHARED_FINDINGS", "vindr_csv_path",
           "read_nih_all_findings", "read_nih_four_findings", "nih_published_labels",
           "read_vindr_readers", "panel_judgments", "nih_vindr_judgments"]

#: the three designated ground-truth readers of the all-findings set (README)
NIH_PANEL = ("4343882785", "4343883593", "4343883996")
NIH_FINDINGS = {"Atelectasis": "atelectasis", "Cardiomegaly": "cardiomegaly",
                "Consolidation": "consolidation", "Edema": "edema",
                "Effusion": "pleural effusion", "Pneumothorax": "pneumothorax"}
VINDR_FINDINGS = {"Atelectasis": "atelectasis", "Cardiomegaly": "cardiomegaly",
                  "Consolidation": "consolidation", "Pleural effusion": "pleural effusion",
                  "Pneumothorax": "pneumothorax"}
SHARED_FINDINGS = tuple(sorted(set(NIH_FINDINGS.values()) & set(VINDR_FINDINGS.values())))
_ALL = "all_findings_expert_labels"
_FOUR = "four_findings_expert_labels"
_YESNO = {"YES": 1, "NO": 0}


def vindr_csv_path() -> Path:
    """The VinDr-CXR per-radiologist CSV inside the installed torchxrayvision package.

    Located through the package's import spec, without importing it (importing
    torchxrayvision imports torch, which takes seconds).
    """
    import importlib.util

    spec = importlib.util.find_spec("torchxrayvision")
    if spec is None or not spec.submodule_search_locations:
        raise MedauditError("the VinDr-CXR reader labels are read from the installed "
                            "torchxrayvision package; install it or give readers.vindr_csv.")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "vinbigdata-train.csv.gz"
    if not path.is_file():
        raise MedauditError(f"the installed torchxrayvision ({_txv_version()}) does not ship "
                            f"{path.name}; give readers.vindr_csv.")
    return path


def _txv_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchxrayvision")
    except PackageNotFoundError:  # pragma: no cover
        return None


def _read(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist; point readers.nih_dir at the "
                                "folder holding all_findings_expert_labels/ (see its README).")
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _codes(df: pd.DataFrame, cols: dict[str, str], vocab: dict[str, int], path: Path) -> None:
    for c in cols:
        bad = ~df[c].isin(list(vocab))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise SchemaError(f"{path}: column {c!r} has {df[c].iloc[i]!r} on line {i + 2}; expected "
                              f"{sorted(vocab)}.")


def read_nih_all_findings(nih_dir: str | Path, *, findings: dict[str, str] | None = None
                          ) -> pd.DataFrame:
    """Per-reader verdicts of the NIH all-findings set, long: one row per image x reader x finding.

    Columns ``study_id, patient_id, reader, finding, verdict`` (1 YES, 0 NO).
    """
    findings = NIH_FINDINGS if findings is None else findings
    path = Path(nih_dir) / "labels" / _ALL / f"{_ALL}_test_individual_readers.csv"
    df = _read(path)
    _codes(df, findings, _YESNO, path)
    long = df.melt(id_vars=["Image ID", "Patient ID", "Reader ID"], value_vars=list(findings),
                   var_name="finding", value_name="verdict")
    return pd.DataFrame({"study_id": long["Image ID"], "patient_id": long["Patient ID"],
                         "reader": long["Reader ID"], "finding": long["finding"].map(findings),
                         "verdict": long["verdict"].map(_YESNO).astype(np.int64)})


def nih_published_labels(nih_dir: str | Path, *, findings: dict[str, str] | None = None
                         ) -> pd.DataFrame:
    """The published majority-of-panel labels (``test_labels.csv``), long: study_id, finding, label."""
    findings = NIH_FINDINGS if findings is None else findings
    path = Path(nih_dir) / "labels" / _ALL / f"{_ALL}_test_labels.csv"
    df = _read(path)
    _codes(df, findings, _YESNO, path)
    long = df.melt(id_vars=["Image ID"], value_vars=list(findings), var_name="finding",
                   value_name="label")
    return pd.DataFrame({"study_id": long["Image ID"], "finding": long["finding"].map(findings),
                         "label": long["label"].map(_YESNO).astype(np.int64)})


def read_nih_four_findings(nih_dir: str | Path) -> pd.DataFrame:
    """Per-reader verdicts of the four-findings set: 1 YES, 0 NO, -1 HEDGE (uncertain).

    Columns ``study_id, patient_id, reader, finding, verdict, split``; findings fracture,
    pneumothorax, airspace opacity, nodule/mass (HEDGE only occurs for the last two and
    pneumothorax).
    """
    path = Path(nih_dir) / "labels" / _FOUR / f"{_FOUR}_individual_readers.csv"
    df = _read(path)
    cols = {"Fracture": "fracture", "Pneumothorax": "pneumothorax",
            "Airspace opacity": "airspace opacity", "Nodule/mass": "nodule/mass"}
    vocab = {**_YESNO, "HEDGE": -1}
    _codes(df, cols, vocab, path)
    long = df.melt(id_vars=["Image ID", "Patient ID", "Reader ID", "Set ID"],
                   value_vars=list(cols), var_name="finding", value_name="verdict")
    return pd.DataFrame({"study_id": long["Image ID"], "patient_id": long["Patient ID"],
                         "reader": long["Reader ID"], "finding": long["finding"].map(cols),
                         "verdict": long["verdict"].map(vocab).astype(np.int64),
                         "split": long["Set ID"]})


def read_vindr_readers(csv: str | Path | None = None, *, findings: dict[str, str] | None = None
                       ) -> pd.DataFrame:
    """Per-radiologist image-level verdicts of VinDr-CXR (training set), long.

    A radiologist read an image when they have any row for it; they assert a finding when
    at least one of their boxes has that class.  Columns ``study_id, reader, finding,
    verdict`` (1/0), one row per image x radiologist x finding.
    """
    findings = VINDR_FINDINGS if findings is None else findings
    path = vindr_csv_path() if csv is None else Path(csv)
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist.")
    df = pd.read_csv(path, usecols=["image_id", "class_name", "rad_id"], dtype=str)
    unknown = sorted(set(findings) - set(df["class_name"]))
    if unknown:
        raise SchemaError(f"{path}: no box of class(es) {unknown}; classes present: "
                          f"{sorted(df['class_name'].unique())}.")
    reads = df[["image_id", "rad_id"]].drop_duplicates()
    grid = reads.merge(pd.DataFrame({"class_name": list(findings)}), how="cross")
    boxes = df[df["class_name"].isin(list(findings))].drop_duplicates()
    boxes = boxes.assign(verdict=1)
    out = grid.merge(boxes, on=["image_id", "rad_id", "class_name"], how="left")
    return pd.DataFrame({"study_id": out["image_id"], "reader": out["rad_id"],
                         "finding": out["class_name"].map(findings),
                         "verdict": out["verdict"].fillna(0).astype(np.int64)})


def panel_judgments(verdicts: pd.DataFrame, *, institution: str, sort_key: Any = None,
                    n_panel: int = 3) -> pd.DataFrame:
    """Leave-one-reader-out JudgmentTable of a panel of ``n_panel`` (= 3) readers per study.

    Models ``reader_1``..``reader_3`` are the panel slots in ``sort_key(reader)`` order; the
    reference of a slot is the verdict of the other two readers when they agree and -1
    (uncertain) when they split.  ``verdicts`` has ``study_id, reader, finding, verdict``
    (and optionally ``patient_id``; the study id otherwise).
    """
    if n_panel != 3:
        raise MedauditError("panel_judgments implements the 3-reader panel (two others agree "
                            f"or split); got n_panel={n_panel}.")
    v = verdicts.copy()
    if "patient_id" not in v.columns:
        v["patient_id"] = v["study_id"]
    per = v.groupby("study_id")["reader"].nunique()
    bad = per[per != n_panel]
    if len(bad):
        raise SchemaError(f"{institution}: {len(bad)} image(s) do not have exactly {n_panel} panel "
                          f"readers, e.g. {bad.index[0]!r} has {int(bad.iloc[0])}.")
    readers = v[["study_id", "reader"]].drop_duplicates()
    key = readers["reader"].map(sort_key) if sort_key is not None else readers["reader"]
    readers = readers.assign(_k=key.to_numpy()).sort_values(["study_id", "_k"], kind="stable")
    readers["slot"] = readers.groupby("study_id").cumcount() + 1
    v = v.merge(readers[["study_id", "reader", "slot"]], on=["study_id", "reader"])
    dup = v.duplicated(["study_id", "finding", "slot"])
    if dup.any():
        r = v[dup].iloc[0]
        raise SchemaError(f"{institution}: reader {r['reader']!r} has two verdicts for finding "
                          f"{r['finding']!r} on image {r['study_id']!r}.")
    wide = v.set_index(["study_id", "patient_id", "finding", "slot"])["verdict"].unstack("slot")
    if wide.isna().any().any():
        raise SchemaError(f"{institution}: some reader lacks a verdict for some finding.")
    wide = wide.astype(np.int64)
    frames = []
    for s in range(1, n_panel + 1):
        o1, o2 = (wide[c].to_numpy() for c in range(1, n_panel + 1) if c != s)
        frames.append(pd.DataFrame({
            "study_id": wide.index.get_level_values("study_id"),
            "patient_id": wide.index.get_level_values("patient_id"), "institution": institution,
            "model": f"reader_{s}", "protocol": "read",
            "finding": wide.index.get_level_values("finding"),
            "prediction": wide[s].to_numpy(), "reference": np.where(o1 == o2, o1, -1)}))
    return pd.concat(frames, ignore_index=True)


def _num(reader: str) -> int:
    return int("".join(ch for ch in str(reader) if ch.isdigit()))


def nih_vindr_judgments(nih_dir: str | Path, *, vindr_csv: str | Path | None = None,
                        findings: tuple[str, ...] = SHARED_FINDINGS,
                        comparison_readers: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The two-institution reader JudgmentTable (NIH, VinDr) and its declared design.

    Returns the raw JudgmentTable (protocol ``read``; references depend on the model, so
    validate with ``reference_by_model=True``) and a provenance dict (rule, sources with
    sha256, counts).
    """
    from medaudit.io import file_sha256

    unknown = [f for f in findings if f not in SHARED_FINDINGS]
    if unknown:
        raise MedauditError(f"readers.findings {unknown} are not labelled at both institutions; "
                            f"choose from {list(SHARED_FINDINGS)}.")
    nih_map = {k: v for k, v in NIH_FINDINGS.items() if v in findings}
    vin_map = {k: v for k, v in VINDR_FINDINGS.items() if v in findings}
    nih = read_nih_all_findings(nih_dir, findings=nih_map)
    panel = nih[nih["reader"].isin(NIH_PANEL)]
    parts = [panel_judgments(panel, institution="NIH", sort_key=_num)]
    others = sorted(set(nih["reader"]) - set(NIH_PANEL), key=_num)
    if comparison_readers:
        maj = (panel.groupby(["study_id", "finding"])["verdict"].sum() >= 2).astype(np.int64)
        for i, r in enumerate(others, start=1):
            g = nih[nih["reader"] == r]
            parts.append(pd.DataFrame({
                "study_id": g["study_id"].to_numpy(), "patient_id": g["patient_id"].to_numpy(),
                "institution": "NIH", "model": f"nih_comparison_{i}", "protocol": "read",
                "finding": g["finding"].to_numpy(), "prediction": g["verdict"].to_numpy(),
                "reference": maj.loc[list(zip(g["study_id"], g["finding"], strict=True))].to_numpy()}))
    vin_path = vindr_csv_path() if vindr_csv is None else Path(vindr_csv)
    vin = read_vindr_readers(vin_path, findings=vin_map)
    parts.append(panel_judgments(vin, institution="VinDr", sort_key=_num))
    raw = pd.concat(parts, ignore_index=True)
    nih_file = Path(nih_dir) / "labels" / _ALL / f"{_ALL}_test_individual_readers.csv"
    txv = _txv_version()
    design = {
        "institutions": ["NIH", "VinDr"], "findings": list(findings), "protocol": "read",
        "models": sorted(raw["model"].unique()),
        "rule": "models reader_1..3 = the 3-reader panel in reader-id order (NIH: designated "
                "ground-truth readers; VinDr: the image's 3 radiologists); the reference of a "
                "slot = the other two panel readers when they agree, -1 (uncertain) when they "
                "split; nih_comparison_k = NIH's non-panel readers against the panel majority",
        "nih_panel": list(NIH_PANEL), "nih_comparison_readers": others if comparison_readers else [],
        "vindr_present_rule": "a radiologist asserts a finding when they drew >= 1 box of it",
        "patient_id": "NIH Patient ID; VinDr image id (no patient id released)",
        "sources": {"nih": {"path": str(nih_file), "sha256": file_sha256(nih_file)},
                    "vindr": {"path": str(vin_path), "sha256": file_sha256(vin_path),
                              "torchxrayvision": txv}},
        "n_images": {"NIH": int(nih["study_id"].nunique()), "VinDr": int(vin["study_id"].nunique())},
    }
    return raw, design
