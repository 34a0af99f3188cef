"""Paper 002 cohorts (methods.md M2.1): MIMIC-CXR, OpenI and PadChest manifests.

Re-exported by :mod:`medaudit.datasets.manifests`; import from there.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._validation import RNGLike, as_generator
from medaudit.datasets._manifest import Manifest, _check_files, _find, _finish, _read_csv, _root, _Steps
from medaudit.exceptions import MedauditError, SchemaError

__all__ = ["FINDINGS", "PADCHEST_MAPPING", "PADCHEST_NEVER", "OPENI_MESH_MAPPING", "mimic_manifest",
           "openi_manifest", "padchest_manifest"]

#: paper 002's six findings (M2.1), in its order
FINDINGS = ("atelectasis", "cardiomegaly", "consolidation", "edema", "pleural_effusion", "pneumothorax")
#: methods.md M2.1 proposed default (lower-cased, stripped PadChest label strings)
PADCHEST_MAPPING: dict[str, tuple[str, ...]] = {
    "atelectasis": ("atelectasis", "laminar atelectasis", "lobar atelectasis", "segmental atelectasis",
                    "round atelectasis", "total atelectasis"),
    "cardiomegaly": ("cardiomegaly",),
    "consolidation": ("consolidation",),
    "edema": ("pulmonary edema",),
    "pleural_effusion": ("pleural effusion", "loculated pleural effusion", "loculated fissural effusion",
                         "hydropneumothorax"),
    "pneumothorax": ("pneumothorax", "hydropneumothorax"),
}
#: labels that must never map to a finding (the one rule paper 002 quotes)
PADCHEST_NEVER: dict[str, tuple[str, ...]] = {"pleural_effusion": ("pericardial effusion",)}
#: OpenI labels are [MISSING] in paper 002; this default maps MeSH *major* terms (first component)
OPENI_MESH_MAPPING: dict[str, tuple[str, ...]] = {
    "atelectasis": ("pulmonary atelectasis",), "cardiomegaly": ("cardiomegaly",),
    "consolidation": ("consolidation",), "edema": ("pulmonary edema",),
    "pleural_effusion": ("pleural effusion",), "pneumothorax": ("pneumothorax", "hydropneumothorax"),
}


def _sample(df: pd.DataFrame, n: int | None, rng: RNGLike, steps: _Steps, what: str
            ) -> tuple[pd.DataFrame, Any]:
    if n is None:
        return df, None
    if n > len(df):
        raise MedauditError(f"{what}: n_studies={n} but only {len(df)} eligible studies; lower n_studies.")
    gen, record = as_generator(rng)
    chosen = np.sort(gen.choice(len(df), size=n, replace=False))  # study order kept
    steps(f"seeded sample of {n} studies (numpy Generator.choice without replacement)", len(df), n)
    return df.iloc[chosen].reset_index(drop=True), record


#: values of PadChest's ``Pediatric`` column (lower-cased): flagged paediatric, or not
_PAED_YES = frozenset({"ped", "yes"})
_PAED_NO = frozenset({"no", ""})


def _check_mapping(mapping: Mapping[str, tuple[str, ...]], never: Mapping[str, tuple[str, ...]]) -> None:
    for finding, terms in mapping.items():
        if finding not in FINDINGS:
            raise MedauditError(f"mapping key {finding!r} is not one of {FINDINGS}.")
        clash = set(terms) & set(never.get(finding, ()))
        if clash:
            raise MedauditError(f"mapping for {finding!r} contains {sorted(clash)}, "
                                "which must never map to it.")


def _map_labels(labels: list[list[str]], mapping: Mapping[str, tuple[str, ...]],
                never: Mapping[str, tuple[str, ...]]) -> dict[str, list[int]]:
    _check_mapping(mapping, never)
    sets = {f: set(mapping.get(f, ())) for f in FINDINGS}
    # unmatched = definite negative (paper 002: every parsed row carried a definite label)
    return {f: [int(any(t in sets[f] for t in row)) for row in labels] for f in FINDINGS}


def padchest_manifest(labels_csv: str | os.PathLike[str], *, image_dir: str | os.PathLike[str] | None = None,
                      n_studies: int | None = 5000, rng: RNGLike = 42,
                      mapping: Mapping[str, tuple[str, ...]] = PADCHEST_MAPPING,
                      exclude_labels: tuple[str, ...] = ("exclude",), min_age: int = 18,
                      views: tuple[str, ...] = ("PA", "AP", "AP_horizontal"),
                      require_files: bool = False) -> Manifest:
    """PadChest for paper 002: mapped labels, paediatric exclusion, patient de-duplication, sampling.

    Order: rows with parseable ``Labels`` → drop images labelled any of ``exclude_labels`` →
    drop paediatric (``Pediatric`` flag ``PED``/``Yes``, or age = study year − birth year < ``min_age``) →
    frontal images (``Projection`` in ``views``, first by that order then ``ImageID``), one per
    study → one study per ``PatientID`` (earliest ``StudyDate``, then ``StudyID``) → seeded sample
    of ``n_studies``.  Findings come from :data:`PADCHEST_MAPPING`; "pericardial effusion" never
    maps to pleural effusion; unmatched labels are definite negatives.
    """
    _check_mapping(mapping, PADCHEST_NEVER)
    csv = Path(labels_csv)
    if not csv.is_file():
        raise MedauditError(f"padchest: labels file {str(csv)!r} not found.")
    cols = ["ImageID", "ImageDir", "StudyDate_DICOM", "StudyID", "PatientID", "PatientBirth",
            "Projection", "Pediatric", "Labels"]
    raw = _read_csv(csv, usecols=cols, dtype={"ImageID": str, "StudyID": str, "PatientID": str,
                                                 "StudyDate_DICOM": str, "Projection": str,
                                                 "Pediatric": str, "Labels": str, "ImageDir": str})
    steps = _Steps()

    def parse(s: Any) -> list[str] | None:
        try:
            val = ast.literal_eval(s) if isinstance(s, str) else None
        except (ValueError, SyntaxError):
            return None
        return [str(v).strip().lower() for v in val if str(v).strip()] if isinstance(val, list) else None

    parsed = raw["Labels"].map(parse)
    ok = parsed.notna()
    steps("rows whose Labels parse as a list", len(raw), int(ok.sum()))
    df = raw[ok].assign(labels=parsed[ok]).reset_index(drop=True)
    drop = df["labels"].map(lambda ls: any(x in exclude_labels for x in ls))
    steps(f"images not labelled {list(exclude_labels)}", len(df), int((~drop).sum()))
    df = df[~drop]
    age = pd.to_numeric(df["StudyDate_DICOM"].str[:4], errors="coerce") - pd.to_numeric(df["PatientBirth"],
                                                                                        errors="coerce")
    # PadChest writes the flag as "PED" / "No"; "yes"/"no" are accepted too.  Any other value
    # is refused rather than read as "not paediatric".
    flag = df["Pediatric"].fillna("").str.strip().str.lower()
    odd = ~flag.isin(_PAED_YES | _PAED_NO)
    if odd.any():
        row = df.index[odd.to_numpy()][0]
        raise SchemaError(f"padchest: {str(csv)!r} column 'Pediatric' must be 'PED'/'Yes' or 'No' "
                          f"(or empty); got {df.loc[row, 'Pediatric']!r} (ImageID "
                          f"{df.loc[row, 'ImageID']!r}).")
    paed = flag.isin(_PAED_YES) | (age < min_age)
    steps(f"adults (not flagged paediatric, age >= {min_age} or unknown)", len(df), int((~paed).sum()),
          f"{int(age[~paed].isna().sum())} retained rows have no computable age")
    df = df[~paed].assign(age=age[~paed])
    rank = {v: i for i, v in enumerate(views)}
    front = df["Projection"].isin(views)
    steps(f"frontal images (Projection in {list(views)})", len(df), int(front.sum()))
    df = df[front].assign(_v=df.loc[front, "Projection"].map(rank))
    df = df.sort_values(["StudyID", "_v", "ImageID"], kind="stable").drop_duplicates("StudyID")
    steps("one frontal image per study", int(front.sum()), len(df))
    before = len(df)
    if df["PatientID"].isna().any():  # drop_duplicates would merge every such study into one
        raise SchemaError(f"padchest: {int(df['PatientID'].isna().sum())} eligible row(s) have no "
                          f"PatientID (e.g. ImageID {df.loc[df['PatientID'].isna(), 'ImageID'].iloc[0]!r}); "
                          "patient de-duplication needs it.")
    df = df.sort_values(["PatientID", "StudyDate_DICOM", "StudyID"], kind="stable")
    df = df.drop_duplicates("PatientID")
    steps("one study per patient (earliest)", before, len(df))
    df = df.sort_values("StudyID", kind="stable").reset_index(drop=True)
    df, record = _sample(df, n_studies, rng, steps, "padchest")
    img = Path(image_dir).resolve() if image_dir is not None else csv.resolve().parent
    out = pd.DataFrame({"image_id": df["ImageID"], "study_id": df["StudyID"], "patient_id": df["PatientID"],
                        "path": [str(img / str(d) / i) for d, i in zip(df["ImageDir"], df["ImageID"],
                                                                          strict=True)],
                        "view": df["Projection"], "age": df["age"], "institution": "padchest",
                        "source_labels": df["labels"].map("|".join)})
    for f, v in _map_labels(df["labels"].tolist(), mapping, PADCHEST_NEVER).items():
        out[f] = pd.array(v, dtype="Int64")
    if require_files:
        _check_files(out, "padchest")
    return _finish(out, "padchest", steps, {"labels_csv": str(csv), "rng": record, "n_studies": n_studies,
                                            "mapping": {k: list(v) for k, v in mapping.items()},
                                            "never": {k: list(v) for k, v in PADCHEST_NEVER.items()}})


def mimic_manifest(root: str | os.PathLike[str], *, n_studies: int | None = 5000, rng: RNGLike = 42,
                   views: tuple[str, ...] = ("PA", "AP"), require_files: bool = True) -> Manifest:
    """MIMIC-CXR-JPG with the CheXpert-labeler output (``mimic-cxr-2.0.0-chexpert.csv[.gz]``).

    Studies with labeler output and a frontal image (``ViewPosition`` in ``views``; first by that
    order, then ``dicom_id``) → seeded sample of ``n_studies`` (no patient de-duplication, as in
    paper 002).  Findings keep the labeler codes: 1 positive, 0 negative, -1 uncertain, missing =
    unmentioned.  Path: ``root/files/pXX/p<subject>/s<study>/<dicom_id>.jpg``.
    """
    root = _root(root, "mimic_cxr")
    lab = _read_csv(_find(root, ("mimic-cxr-2.0.0-chexpert.csv.gz", "mimic-cxr-2.0.0-chexpert.csv"),
                            "mimic_cxr labels"), dtype={"subject_id": str, "study_id": str})
    meta = _read_csv(_find(root, ("mimic-cxr-2.0.0-metadata.csv.gz", "mimic-cxr-2.0.0-metadata.csv"),
                             "mimic_cxr metadata"),
                       dtype={"subject_id": str, "study_id": str, "dicom_id": str},
                       usecols=["dicom_id", "subject_id", "study_id", "ViewPosition"])
    names = {"atelectasis": "Atelectasis", "cardiomegaly": "Cardiomegaly", "consolidation": "Consolidation",
             "edema": "Edema", "pleural_effusion": "Pleural Effusion", "pneumothorax": "Pneumothorax"}
    missing = [c for c in names.values() if c not in lab.columns]
    if missing:
        raise SchemaError(f"mimic_cxr labels lack column(s) {missing}.")
    for c in names.values():
        bad = lab[c].notna() & ~lab[c].isin([1, 0, -1])
        if bad.any():
            raise SchemaError(f"mimic_cxr labels: {c!r} must be 1, 0, -1 or blank; row "
                              f"{int(np.flatnonzero(bad)[0]) + 2}.")
    steps = _Steps()
    rank = {v: i for i, v in enumerate(views)}
    front = meta[meta["ViewPosition"].isin(views)].assign(_v=lambda d: d["ViewPosition"].map(rank))
    front = front.sort_values(["study_id", "_v", "dicom_id"], kind="stable").drop_duplicates("study_id")
    df = lab.merge(front, on=["subject_id", "study_id"], how="inner", validate="one_to_one")
    steps(f"labelled studies with a frontal image ({list(views)})", len(lab), len(df))
    df = df.sort_values("study_id", kind="stable").reset_index(drop=True)
    df, record = _sample(df, n_studies, rng, steps, "mimic_cxr")
    out = pd.DataFrame({"image_id": df["dicom_id"], "study_id": df["study_id"],
                        "patient_id": df["subject_id"],
                        "path": [str(root / "files" / f"p{s[:2]}" / f"p{s}" / f"s{t}" / f"{d}.jpg")
                                 for s, t, d in zip(df["subject_id"], df["study_id"], df["dicom_id"],
                                                    strict=True)],
                        "view": df["ViewPosition"], "institution": "mimic_cxr"})
    for f, c in names.items():
        out[f] = pd.array(df[c].to_numpy(), dtype="Int64") if len(df) else pd.array([], dtype="Int64")
    if require_files:
        _check_files(out, "mimic_cxr")
    return _finish(out, "mimic_cxr", steps, {"root": str(root), "rng": record, "n_studies": n_studies,
                                             "labeler": "CheXpert (1/0/-1/blank)"})


def openi_manifest(reports: str | os.PathLike[str], *, image_dir: str | os.PathLike[str] | None = None,
                   mapping: Mapping[str, tuple[str, ...]] = OPENI_MESH_MAPPING,
                   require_files: bool = False) -> Manifest:
    """OpenI (Indiana) from its XML reports (a folder or the ``NLMCXR_reports.tgz`` archive).

    One row per report (study = patient ``uId``) with at least one image; the first listed image
    is used (paper 002 kept no image rule, [MISSING]).  Labels are [MISSING] in paper 002; this
    default maps MeSH *major* terms through :data:`OPENI_MESH_MAPPING`, unmatched = negative.
    Path: ``image_dir/<image id>.png``.
    """
    import tarfile
    import xml.etree.ElementTree as ET

    src = Path(reports)
    if not src.exists():
        raise MedauditError(f"openi: reports {str(src)!r} not found (a folder of XML or a .tgz).")
    docs: list[tuple[str, bytes]] = []
    if src.is_dir():
        docs = [(p.name, p.read_bytes()) for p in sorted(src.rglob("*.xml"))]
    else:
        with tarfile.open(src, "r:*") as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                if m.isfile() and m.name.endswith(".xml"):
                    docs.append((m.name, tar.extractfile(m).read()))  # type: ignore[union-attr]
    rows = []
    for name, data in docs:
        try:
            r = ET.fromstring(data)
            uid = r.find("uId").attrib["id"]  # type: ignore[union-attr]
        except (ET.ParseError, AttributeError, KeyError):
            raise SchemaError(f"openi: {name!r} is not a readable OpenI report (no uId).") from None
        imgs = [n.attrib.get("id", "") for n in r.findall(".//parentImage")]
        terms = sorted({(n.text or "").split("/")[0].strip().lower() for n in r.findall(".//MeSH/major")})
        rows.append({"study_id": uid, "images": imgs, "terms": terms})
    steps = _Steps()
    if not rows:
        raise SchemaError(f"openi: no XML report found in {str(src)!r}; point it at the folder or "
                          "the NLMCXR_reports.tgz archive of OpenI reports.")
    with_img = [row for row in rows if row["images"]]
    steps("reports with at least one image", len(rows), len(with_img))
    img = Path(image_dir).resolve() if image_dir is not None else src.resolve().parent
    out = pd.DataFrame({"image_id": [r["images"][0] for r in with_img],
                        "study_id": [r["study_id"] for r in with_img],
                        "patient_id": [r["study_id"] for r in with_img],
                        "path": [str(img / f"{r['images'][0]}.png") for r in with_img],
                        "institution": "openi", "source_labels": ["|".join(r["terms"]) for r in with_img]})
    for f, v in _map_labels([r["terms"] for r in with_img], mapping, {}).items():
        out[f] = pd.array(v, dtype="Int64")
    if require_files:
        _check_files(out, "openi")
    return _finish(out, "openi", steps, {"reports": str(src),
                                         "mapping": {k: list(v) for k, v in mapping.items()},
                                         "label_source": "MeSH major terms (paper 002: [MISSING])"})
