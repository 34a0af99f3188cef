"""Manifests of the papers' cohorts built from the datasets' standard on-disk layouts.

A manifest is a tidy table, one row per image record, with at least :data:`MANIFEST_COLUMNS`
(``image_id, dataset, path, label, negative_group, split, patient_id``) plus dataset-specific
columns (``subtype``, named control groups, the six paper-002 findings, ...).  ``path`` is the
absolute path of the image.  Every filter a builder applies is recorded with its counts in
``Manifest.counts``; known overlaps with other datasets travel as ``Manifest.notes``.

Paper 000 (methods.md M0.2): Montgomery, Shenzhen, TBX11K (official labeled lists), VinDr-CXR test.
Paper 002 (M2.1): MIMIC-CXR (CheXpert-labeler output), OpenI, PadChest (explicit mapping dictionary).
Shared test data: the TBX11K TB-positive subset, Kermany paediatric test split, the NIH 810 images.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._validation import as_generator
from medaudit.exceptions import MedauditError, SchemaError

__all__ = [
    "MANIFEST_COLUMNS", "FINDINGS", "PADCHEST_MAPPING", "PADCHEST_NEVER", "OPENI_MESH_MAPPING",
    "KNOWN_OVERLAPS", "Manifest", "montgomery_manifest", "shenzhen_manifest", "tbx11k_manifest",
    "tbx11k_tb_subset_manifest", "vindr_manifest", "kermany_manifest", "nih810_manifest",
    "mimic_manifest", "openi_manifest", "padchest_manifest", "build_manifest", "write_manifest",
    "read_manifest", "BUILDERS",
]

MANIFEST_COLUMNS = ("image_id", "dataset", "path", "label", "negative_group", "split", "patient_id")
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
KNOWN_OVERLAPS: dict[str, tuple[str, ...]] = {
    "tbx11k": ("The TBX11K download bundles copies of Montgomery and Shenzhen (imgs/extra, all_* lists); "
               "they are excluded here, but TBX11K images are not verified distinct from them: screen "
               "with medaudit.imaging.overlap (paper 000 found 249 candidate pairs, M0.13).",),
    "montgomery": ("Partly bundled inside the TBX11K download (imgs/extra/); screen against TBX11K.",),
    "shenzhen": ("Partly bundled inside the TBX11K download (imgs/extra/); screen against TBX11K.",),
    "vindr_cxr": ("VinDr-CXR is in CheXficient's documented pretraining data (exposure, M0.4).",),
    "mimic_cxr": ("MIMIC-CXR and CheXpert are common pretraining sources of CXR models; record exposure "
                  "per model card.",),
}


@dataclass(frozen=True)
class Manifest:
    """A cohort manifest: the table, each filter's counts, overlap notes and build parameters."""

    table: pd.DataFrame
    dataset: str
    counts: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Everything but the table (the JSON sidecar of :func:`write_manifest`)."""
        return {"dataset": self.dataset, "n_rows": len(self.table), "counts": list(self.counts),
                "known_overlaps": list(self.notes), "params": self.params}


class _Steps:
    """Collects ``(step, n_before, n_after)`` so no filter drops rows without reporting it."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def __call__(self, step: str, before: int, after: int, note: str = "") -> None:
        self.rows.append({"step": step, "n_before": int(before), "n_after": int(after),
                          "n_removed": int(before) - int(after), "note": note})


def _finish(df: pd.DataFrame, dataset: str, steps: _Steps, params: dict[str, Any],
            extra_notes: tuple[str, ...] = ()) -> Manifest:
    df = df.copy()
    df["dataset"] = dataset
    for col, default in (("negative_group", ""), ("split", ""), ("patient_id", "")):
        if col not in df.columns:
            df[col] = default
    if "label" not in df.columns:
        df["label"] = pd.NA
    df["label"] = df["label"].astype("Int64")
    dup = df["image_id"].duplicated(keep=False)
    if dup.any():
        raise SchemaError(f"{dataset}: image_id is not unique: {sorted(set(df.loc[dup, 'image_id']))[:5]}.")
    cols = list(MANIFEST_COLUMNS) + [c for c in df.columns if c not in MANIFEST_COLUMNS]
    df = df[cols].sort_values(["split", "image_id"], kind="stable").reset_index(drop=True)
    return Manifest(table=df, dataset=dataset, counts=tuple(steps.rows),
                    notes=KNOWN_OVERLAPS.get(dataset, ()) + extra_notes, params=params)


def _root(root: str | os.PathLike[str], what: str) -> Path:
    root = Path(root)
    if not root.exists():
        raise MedauditError(f"{what} root {str(root)!r} does not exist.")
    return root.resolve()


def _check_files(df: pd.DataFrame, dataset: str) -> None:
    missing = [p for p in df["path"] if not Path(p).is_file()]
    if missing:
        raise SchemaError(f"{dataset}: {len(missing)} image file(s) listed are missing, e.g. "
                          f"{missing[:3]}; fix the layout or pass require_files=False.")


def _expect(dataset: str, found: Mapping[str, int], expected: Mapping[str, int]) -> None:
    if dict(found) != dict(expected):
        raise SchemaError(f"{dataset}: counts {dict(found)} differ from the published {dict(expected)}; "
                          "check the download (or pass expect_counts=False to build it anyway).")


def _find(root: Path, names: tuple[str, ...], what: str) -> Path:
    for name in names:
        hits = sorted(root.rglob(name))
        if hits:
            return hits[0]
    raise MedauditError(f"{what}: none of {list(names)} found under {str(root)!r}.")


# ------------------------------------------------------------------------------ paper 000
def _nlm(root: Any, dataset: str, prefix: str, expected: tuple[int, int], expect_counts: bool) -> Manifest:
    root = _root(root, dataset)
    steps = _Steps()
    # The NLM downloads keep the radiographs in CXR_png/ and same-named lung masks in ManualMask/;
    # without a CXR_png folder the PNGs directly in root are used.
    dirs = sorted(d for d in root.rglob("CXR_png") if d.is_dir()) or [root]
    pngs = sorted(p for d in dirs for p in d.glob("*.png"))
    rx = re.compile(rf"^{prefix}_(\d{{4}})_([01])\.png$")
    rows = [{"image_id": p.stem, "path": str(p), "label": int(m.group(2))}
            for p in pngs if (m := rx.match(p.name))]
    steps(f"PNG files in {[str(d.relative_to(root)) for d in dirs]} named {prefix}_NNNN_[01].png "
          "(label = suffix, 1 = TB)", len(pngs), len(rows), "other PNG files are not images of the cohort")
    df = pd.DataFrame(rows, columns=["image_id", "path", "label"])
    df["negative_group"] = np.where(df["label"] == 1, "", "normal")
    if expect_counts:
        _expect(dataset, {"tb": int((df["label"] == 1).sum()), "normal": int((df["label"] == 0).sum())},
                {"tb": expected[0], "normal": expected[1]})
    return _finish(df, dataset, steps, {"root": str(root), "label_rule": "file-name suffix _1 = TB"})


def montgomery_manifest(root: str | os.PathLike[str], *, expect_counts: bool = True) -> Manifest:
    """Montgomery County set (``MCUCXR_NNNN_[01].png``); 58 TB / 80 normal checked."""
    return _nlm(root, "montgomery", "MCUCXR", (58, 80), expect_counts)


def shenzhen_manifest(root: str | os.PathLike[str], *, expect_counts: bool = True) -> Manifest:
    """Shenzhen set (``CHNCXR_NNNN_[01].png``); 336 TB / 326 normal checked."""
    return _nlm(root, "shenzhen", "CHNCXR", (336, 326), expect_counts)


_TBX_CLASS = {"health": (0, "healthy"), "sick": (0, "sick"), "tb": (1, "")}
_TBX_COUNTS = {"train": {"tb": 600, "healthy": 3000, "sick": 3000},
               "val": {"tb": 200, "healthy": 800, "sick": 800}}


def tbx11k_manifest(root: str | os.PathLike[str], *, lists_dir: str | os.PathLike[str] | None = None,
                    require_files: bool = True, expect_counts: bool = True) -> Manifest:
    """TBX11K from the official labeled lists ``TBX11K_train.txt`` and ``TBX11K_val.txt``.

    The unlabeled test split (``all_test.txt``) is never read; entries of other folders (the
    bundled ``extra/`` NLM and DA/DB copies, present in the ``all_*`` lists) are excluded and
    counted.  Label: ``tb`` → 1; ``health``/``sick`` → 0 with ``negative_group`` and ``subtype``
    ``healthy``/``sick``.  Paths are ``root/imgs/<list entry>``.
    """
    root = _root(root, "tbx11k")
    lists = Path(lists_dir) if lists_dir is not None else root / "lists"
    steps = _Steps()
    frames = []
    for split in ("train", "val"):
        f = lists / f"TBX11K_{split}.txt"
        if not f.is_file():
            raise MedauditError(f"tbx11k: official list {str(f)!r} not found (give lists_dir=).")
        entries = [ln.strip() for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
        keep = [e for e in entries if e.split("/")[0] in _TBX_CLASS]
        steps(f"{f.name}: entries of health/, sick/, tb/ (bundled extra/ and test/ excluded)",
              len(entries), len(keep))
        cls = [_TBX_CLASS[e.split("/")[0]] for e in keep]
        frames.append(pd.DataFrame({
            "image_id": [Path(e).stem for e in keep], "path": [str(root / "imgs" / e) for e in keep],
            "label": [c[0] for c in cls], "negative_group": [c[1] for c in cls],
            "subtype": [c[1] or "tb" for c in cls], "split": split}))
    df = pd.concat(frames, ignore_index=True)
    if expect_counts:
        for split, exp in _TBX_COUNTS.items():
            _expect(f"tbx11k {split}", df.loc[df["split"] == split, "subtype"].value_counts().to_dict(), exp)
    if require_files:
        _check_files(df, "tbx11k")
    return _finish(df, "tbx11k", steps, {"root": str(root), "lists_dir": str(lists.resolve()),
                                         "lists": ["TBX11K_train.txt", "TBX11K_val.txt"]})


def tbx11k_tb_subset_manifest(root: str | os.PathLike[str]) -> Manifest:
    """The shared TBX11K TB-positive subset (``labels.csv`` + ``images_256/``; positives only).

    Every image is checked against the official list of its split (``lists/TBX11K_<split>.txt``).
    """
    root = _root(root, "tbx11k_tb_subset")
    steps = _Steps()
    lab = pd.read_csv(root / "labels.csv", dtype={"image": str, "subset_split": str})
    df = pd.DataFrame({"image_id": lab["image"].str.replace(".png", "", regex=False),
                       "path": [str(root / "images_256" / i) for i in lab["image"]], "label": 1,
                       "negative_group": "", "subtype": "tb", "split": lab["subset_split"],
                       "tb_type": lab["tb_type_from_xml"].fillna("").astype(str)})
    for split in ("train", "val"):
        listed = {Path(e.strip()).stem for e in (root / "lists" / f"TBX11K_{split}.txt").read_text().split()
                  if e.startswith("tb/")}
        ours = set(df.loc[df["split"] == split, "image_id"])
        if ours != listed:
            raise SchemaError(f"tbx11k_tb_subset: {split} images differ from the official list "
                              f"({len(ours ^ listed)} differences, e.g. {sorted(ours ^ listed)[:3]}).")
    steps("labels.csv rows (all TB-positive; checked against the official lists)", len(lab), len(df))
    _check_files(df, "tbx11k_tb_subset")
    return _finish(df, "tbx11k", steps, {"root": str(root), "subset": "TB-positive images only"})


_VINDR_GROUPS = {"no_finding": "No finding", "pneumonia": "Pneumonia", "lung_tumor": "Lung tumor",
                 "copd": "COPD"}


def vindr_manifest(root: str | os.PathLike[str], *, labels_csv: str | os.PathLike[str] | None = None,
                   image_dir: str | os.PathLike[str] | None = None, image_suffix: str = ".dicom",
                   require_files: bool = True, expect_counts: bool = True) -> Manifest:
    """VinDr-CXR v1.0.0 test set with its consensus global labels (TB endpoint, M0.2).

    Reads ``annotations/image_labels_test.csv`` (one row per image).  ``label`` = Tuberculosis.
    Named control groups count only TB-negative images (``no_finding``, ``pneumonia``,
    ``lung_tumor``, ``copd`` booleans); ``negative_group`` joins the names with ';' (they may
    overlap), ``other`` for a TB-negative image without a named group, '' for positives.  Images:
    ``image_dir/<image_id><image_suffix>`` (default ``root/test/*.dicom``; point it at PNGs you
    converted).  Checked counts: 3,000 images, 164 TB, 2,051 / 210 / 73 named controls.
    """
    root = _root(root, "vindr_cxr")
    csv = Path(labels_csv) if labels_csv is not None else root / "annotations" / "image_labels_test.csv"
    lab = pd.read_csv(csv, dtype={"image_id": str})
    need = ["image_id", "Tuberculosis", *_VINDR_GROUPS.values()]
    missing = [c for c in need if c not in lab.columns]
    if missing:
        raise SchemaError(f"{str(csv)!r} lacks column(s) {missing}.")
    if lab["image_id"].duplicated().any() or "rad_id" in lab.columns:
        raise SchemaError(f"{str(csv)!r} has several rows per image (per-reader labels?); the test "
                          "set's consensus labels (image_labels_test.csv) are needed.")
    for c in need[1:]:
        bad = ~lab[c].isin([0, 1])
        if bad.any():
            raise SchemaError(f"{str(csv)!r}: column {c!r} must be 0/1; "
                              f"row {int(np.flatnonzero(bad)[0]) + 2}.")
    steps = _Steps()
    tb = lab["Tuberculosis"].astype(int)
    img = Path(image_dir) if image_dir is not None else root / "test"
    df = pd.DataFrame({"image_id": lab["image_id"], "label": tb, "split": "test",
                       "path": [str((img / f"{i}{image_suffix}").resolve()) for i in lab["image_id"]]})
    for name, col in _VINDR_GROUPS.items():
        df[name] = (lab[col].astype(int) == 1) & (tb == 0)  # a control only when TB-negative
    names = np.array(list(_VINDR_GROUPS))
    member = df[list(_VINDR_GROUPS)].to_numpy()
    df["negative_group"] = [";".join(sorted(names[m])) or "other" for m in member]
    df.loc[tb == 1, "negative_group"] = ""
    steps("test images with consensus global labels", len(lab), len(df))
    if expect_counts:
        _expect("vindr_cxr", {"images": len(df), "tb": int(tb.sum()),
                              **{k: int(df[k].sum()) for k in ("no_finding", "pneumonia", "lung_tumor")}},
                {"images": 3000, "tb": 164, "no_finding": 2051, "pneumonia": 210, "lung_tumor": 73})
    if require_files:
        _check_files(df, "vindr_cxr")
    return _finish(df, "vindr_cxr", steps, {"root": str(root), "labels_csv": str(csv)},
                   ("COPD controls (n=2) are descriptive only.",))


def kermany_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Kermany paediatric test split (shared ``labels.csv``): label = pneumonia, 234 / 390 checked."""
    root = _root(root, "kermany")
    lab = pd.read_csv(root / "labels.csv", dtype=str, keep_default_na=False)
    df = pd.DataFrame({"image_id": lab["path"].str.replace(r"\.[^.]+$", "", regex=True),
                       "path": [str(root / p) for p in lab["path"]], "label": lab["pneumonia"].astype(int),
                       "subtype": lab["subtype_from_filename"], "split": "test"})
    df["negative_group"] = np.where(df["label"] == 1, "", "normal")
    steps = _Steps()
    steps("labels.csv rows", len(lab), len(df))
    _expect("kermany", {"pneumonia": int(df["label"].sum()), "normal": int((df["label"] == 0).sum())},
            {"pneumonia": 390, "normal": 234})
    _check_files(df, "kermany")
    return _finish(df, "kermany", steps, {"root": str(root), "endpoint": "pneumonia"},
                   ("Paediatric (1-5 y) AP images; resized to 224x224 by the mirror's author.",))


def nih810_manifest(root: str | os.PathLike[str]) -> Manifest:
    """The 810 NIH ChestX-ray14 images with Google's majority expert labels (label = Abnormal)."""
    root = _root(root, "nih_810")
    lab = pd.read_csv(root / "labels" / "all_findings_expert_labels" /
                      "all_findings_expert_labels_test_labels.csv", dtype=str)
    meta = pd.read_csv(root / "nih_Data_Entry_2017_v2020_subset_810.csv", dtype=str)
    meta = meta.set_index("Image Index")
    bad = ~lab["Abnormal"].isin(["YES", "NO"])
    if bad.any():
        raise SchemaError(f"nih_810: Abnormal must be YES/NO; row {int(np.flatnonzero(bad)[0]) + 2}.")
    df = pd.DataFrame({"image_id": lab["Image ID"].str.replace(".png", "", regex=False),
                       "path": [str(root / "images_256" / i) for i in lab["Image ID"]],
                       "label": (lab["Abnormal"] == "YES").astype(int), "split": "test",
                       "patient_id": lab["Patient ID"],
                       "view": meta["View Position"].reindex(lab["Image ID"]).to_numpy()})
    df["negative_group"] = np.where(df["label"] == 1, "", "normal")
    steps = _Steps()
    steps("expert-labelled test images", len(lab), len(df))
    _expect("nih_810", {"images": len(df)}, {"images": 810})
    _check_files(df, "nih_810")
    return _finish(df, "nih_810", steps, {"root": str(root), "endpoint": "Abnormal (majority of 3)"})


# ------------------------------------------------------------------------------ paper 002
def _sample(df: pd.DataFrame, n: int | None, rng: Any, steps: _Steps, what: str) -> tuple[pd.DataFrame, Any]:
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
                      n_studies: int | None = 5000, rng: Any = 42,
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
    raw = pd.read_csv(csv, usecols=cols, dtype={"ImageID": str, "StudyID": str, "PatientID": str,
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


def mimic_manifest(root: str | os.PathLike[str], *, n_studies: int | None = 5000, rng: Any = 42,
                   views: tuple[str, ...] = ("PA", "AP"), require_files: bool = True) -> Manifest:
    """MIMIC-CXR-JPG with the CheXpert-labeler output (``mimic-cxr-2.0.0-chexpert.csv[.gz]``).

    Studies with labeler output and a frontal image (``ViewPosition`` in ``views``; first by that
    order, then ``dicom_id``) → seeded sample of ``n_studies`` (no patient de-duplication, as in
    paper 002).  Findings keep the labeler codes: 1 positive, 0 negative, -1 uncertain, missing =
    unmentioned.  Path: ``root/files/pXX/p<subject>/s<study>/<dicom_id>.jpg``.
    """
    root = _root(root, "mimic_cxr")
    lab = pd.read_csv(_find(root, ("mimic-cxr-2.0.0-chexpert.csv.gz", "mimic-cxr-2.0.0-chexpert.csv"),
                            "mimic_cxr labels"), dtype={"subject_id": str, "study_id": str})
    meta = pd.read_csv(_find(root, ("mimic-cxr-2.0.0-metadata.csv.gz", "mimic-cxr-2.0.0-metadata.csv"),
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


# ------------------------------------------------------------------------------ dispatch, I/O
BUILDERS: dict[str, Callable[..., Manifest]] = {
    "montgomery": montgomery_manifest, "shenzhen": shenzhen_manifest, "tbx11k": tbx11k_manifest,
    "tbx11k_tb_subset": tbx11k_tb_subset_manifest, "vindr_cxr": vindr_manifest,
    "kermany": kermany_manifest, "nih_810": nih810_manifest, "mimic_cxr": mimic_manifest,
    "openi": openi_manifest, "padchest": padchest_manifest,
}


def build_manifest(dataset: str, root: str | os.PathLike[str], **options: Any) -> Manifest:
    """Build the manifest of ``dataset`` (a key of :data:`BUILDERS`) from ``root``."""
    if dataset not in BUILDERS:
        raise MedauditError(f"unknown dataset {dataset!r}; known: {', '.join(sorted(BUILDERS))}.")
    return BUILDERS[dataset](root, **options)


def write_manifest(manifest: Manifest, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the table as CSV at ``path`` and its counts/notes as ``path`` with suffix ``.json``."""
    import json
    import tempfile

    path = Path(path)
    side = path.with_suffix(".json")
    if not overwrite and (path.exists() or side.exists()):
        raise FileExistsError(f"{str(path)!r} exists; choose another --out or pass --overwrite.")
    path.parent.mkdir(parents=True, exist_ok=True)
    texts = ((path, manifest.table.to_csv(index=False)),
             (side, json.dumps(manifest.to_dict(), sort_keys=True, indent=2, default=str) + "\n"))
    # both files are complete on disk before either replaces anything; a failure leaves no temp
    temps: list[tuple[str, Path]] = []
    try:
        for target, text in texts:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temps.append((tmp, target))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        for tmp, target in temps:
            os.replace(tmp, target)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def read_manifest(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a manifest CSV (identifiers as strings) and check its columns."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"manifest {str(path)!r} does not exist.")
    df = pd.read_csv(path, dtype={"image_id": str, "dataset": str, "path": str, "negative_group": str,
                                  "split": str, "patient_id": str, "study_id": str},
                     keep_default_na=False, na_values={c: [""] for c in ("label", "age", *FINDINGS)})
    missing = [c for c in ("image_id", "dataset", "path") if c not in df.columns]
    if missing:
        raise SchemaError(f"{str(path)!r} lacks manifest column(s) {missing}; "
                          f"columns are {list(df.columns)}.")
    return df
