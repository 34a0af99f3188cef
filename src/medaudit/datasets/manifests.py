"""Manifests of the papers' cohorts built from the datasets' standard on-disk layouts.

A manifest is a tidy table, one row per image record, with at least :data:`MANIFEST_COLUMNS`
(``image_id, dataset, path, label, negative_group, split, patient_id``) plus dataset-specific
columns (``subtype``, named control groups, the six paper-002 findings, ...).  ``path`` is the
absolute path of the image.  Every filter a builder applies is recorded with its counts in
``Manifest.counts``; known overlaps with other datasets travel as ``Manifest.notes``.

Paper 000 (methods.md M0.2): Montgomery, Shenzhen, TBX11K (official labeled lists), VinDr-CXR test.
Paper 002 (M2.1): MIMIC-CXR (CheXpert-labeler output), OpenI, PadChest (explicit mapping dictionary).
Shared test data: the TBX11K TB-positive subset, Kermany paediatric test split, the NIH 810 images.

The paper-002 builders live in :mod:`medaudit.datasets.manifests_paper002` and the shared record in
:mod:`medaudit.datasets._manifest`; every public name is re-exported here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.datasets._manifest import (
    KNOWN_OVERLAPS,
    MANIFEST_COLUMNS,
    Manifest,
    _check_files,
    _expect,
    _finish,
    _read_csv,
    _root,
    _Steps,
)
from medaudit.datasets.manifests_paper002 import (
    FINDINGS,
    OPENI_MESH_MAPPING,
    PADCHEST_MAPPING,
    PADCHEST_NEVER,
    mimic_manifest,
    openi_manifest,
    padchest_manifest,
)
from medaudit.exceptions import MedauditError, SchemaError

__all__ = [
    "MANIFEST_COLUMNS", "FINDINGS", "PADCHEST_MAPPING", "PADCHEST_NEVER", "OPENI_MESH_MAPPING",
    "KNOWN_OVERLAPS", "Manifest", "montgomery_manifest", "shenzhen_manifest", "tbx11k_manifest",
    "tbx11k_tb_subset_manifest", "vindr_manifest", "kermany_manifest", "nih810_manifest",
    "mimic_manifest", "openi_manifest", "padchest_manifest", "build_manifest", "write_manifest",
    "read_manifest", "BUILDERS",
]


# ------------------------------------------------------------------------------ paper 000
def _nlm(root: Any, dataset: str, prefix: str, expected: tuple[int, int], expect_counts: bool) -> Manifest:
    given = str(root)
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
    if not rows:
        raise SchemaError(f"{dataset}: no {prefix}_NNNN_[01].png image found in {given!r} (looked in "
                          f"its CXR_png folders, or in the folder itself; {len(pngs)} other PNG "
                          "file(s)); point ROOT at the unpacked download.")
    df = pd.DataFrame(rows, columns=["image_id", "path", "label"])
    df["negative_group"] = np.where(df["label"] == 1, "", "normal")
    if expect_counts:
        _expect(dataset, {"tb": int((df["label"] == 1).sum()), "normal": int((df["label"] == 0).sum())},
                {"tb": expected[0], "normal": expected[1]}, root=given)
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
            raise MedauditError(f"tbx11k: official list {str(f)!r} not found; ROOT must hold the "
                                "dataset's lists/ folder (in Python, or give lists_dir=).")
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
            _expect(f"tbx11k {split}", df.loc[df["split"] == split, "subtype"].value_counts().to_dict(), exp,
                    root=root)
    if require_files:
        _check_files(df, "tbx11k")
    return _finish(df, "tbx11k", steps, {"root": str(root), "lists_dir": str(lists.resolve()),
                                         "lists": ["TBX11K_train.txt", "TBX11K_val.txt"]})


def tbx11k_tb_subset_manifest(root: str | os.PathLike[str], *,
                              require_files: bool = True) -> Manifest:
    """The shared TBX11K TB-positive subset (``labels.csv`` + ``images_256/``; positives only).

    Every image is checked against the official list of its split (``lists/TBX11K_<split>.txt``).
    """
    root = _root(root, "tbx11k_tb_subset")
    steps = _Steps()
    lab = _read_csv(root / "labels.csv", dtype={"image": str, "subset_split": str})
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
    if require_files:
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
    lab = _read_csv(csv, dtype={"image_id": str})
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
                {"images": 3000, "tb": 164, "no_finding": 2051, "pneumonia": 210, "lung_tumor": 73},
                root=root)
    if require_files:
        _check_files(df, "vindr_cxr")
    return _finish(df, "vindr_cxr", steps, {"root": str(root), "labels_csv": str(csv)},
                   ("COPD controls (n=2) are descriptive only.",))


def kermany_manifest(root: str | os.PathLike[str], *, expect_counts: bool = True,
                     require_files: bool = True) -> Manifest:
    """Kermany paediatric test split (shared ``labels.csv``): label = pneumonia, 234 / 390 checked
    (``expect_counts=False``: a subset or another copy; ``require_files=False``: images elsewhere)."""
    root = _root(root, "kermany")
    lab = _read_csv(root / "labels.csv", dtype=str, keep_default_na=False)
    names = lab["path"]  # read first: a table without it is another dataset's (a KeyError)
    text = lab["pneumonia"].str.strip()
    bad = ~text.isin(["0", "1"]).to_numpy()
    if bad.any():  # astype(int) would raise a bare ValueError, and admit 3 or -1
        i = int(np.flatnonzero(bad)[0])
        raise SchemaError(f"{str(root / 'labels.csv')!r}: column 'pneumonia', line {i + 2}: "
                          f"{lab['pneumonia'].iloc[i]!r} is not 0 or 1 ({int(bad.sum())} such "
                          "cell(s)); every image needs its label.")
    df = pd.DataFrame({"image_id": names.str.replace(r"\.[^.]+$", "", regex=True),
                       "path": [str(root / p) for p in names], "label": text.astype(int),
                       "subtype": lab["subtype_from_filename"], "split": "test"})
    df["negative_group"] = np.where(df["label"] == 1, "", "normal")
    steps = _Steps()
    steps("labels.csv rows", len(lab), len(df))
    if expect_counts:
        _expect("kermany", {"pneumonia": int(df["label"].sum()),
                            "normal": int((df["label"] == 0).sum())},
                {"pneumonia": 390, "normal": 234}, root=root)
    if require_files:
        _check_files(df, "kermany")
    return _finish(df, "kermany", steps, {"root": str(root), "endpoint": "pneumonia"},
                   ("Paediatric (1-5 y) AP images; resized to 224x224 by the mirror's author.",))


def nih810_manifest(root: str | os.PathLike[str], *, expect_counts: bool = True,
                     require_files: bool = True) -> Manifest:
    """The 810 NIH ChestX-ray14 images with Google's majority expert labels (label = Abnormal;
    ``expect_counts`` and ``require_files`` as for :func:`kermany_manifest`)."""
    root = _root(root, "nih_810")
    lab = _read_csv(root / "labels" / "all_findings_expert_labels" /
                      "all_findings_expert_labels_test_labels.csv", dtype=str)
    meta = _read_csv(root / "nih_Data_Entry_2017_v2020_subset_810.csv", dtype=str)
    meta = meta.set_index("Image Index")
    bad = ~lab["Abnormal"].isin(["YES", "NO"])
    if bad.any():
        raise SchemaError(f"nih_810: Abnormal must be YES/NO; line {int(np.flatnonzero(bad)[0]) + 2} "
                          "of all_findings_expert_labels_test_labels.csv.")
    df = pd.DataFrame({"image_id": lab["Image ID"].str.replace(".png", "", regex=False),
                       "path": [str(root / "images_256" / i) for i in lab["Image ID"]],
                       "label": (lab["Abnormal"] == "YES").astype(int), "split": "test",
                       "patient_id": lab["Patient ID"],
                       "view": meta["View Position"].reindex(lab["Image ID"]).to_numpy()})
    df["negative_group"] = np.where(df["label"] == 1, "", "normal")
    steps = _Steps()
    steps("expert-labelled test images", len(lab), len(df))
    if expect_counts:
        _expect("nih_810", {"images": len(df)}, {"images": 810}, root=root)
    if require_files:
        _check_files(df, "nih_810")
    return _finish(df, "nih_810", steps, {"root": str(root), "endpoint": "Abnormal (majority of 3)"})


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
    if not Path(root).exists():
        raise MedauditError(f"dataset root {str(root)!r} does not exist; give the folder of "
                            f"{dataset!r} as it ships.")
    try:
        return BUILDERS[dataset](root, **options)
    except (KeyError, FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
        # another dataset's folder (or a file) given as the root: what the builder looked
        # for is named, not a pandas KeyError or a bare [Errno 2] on a path inside it
        what = (f"a table there has no column {exc.args[0]!r}" if isinstance(exc, KeyError)
                else f"{exc.strerror.lower()}: {exc.filename!r}")
        raise MedauditError(f"{str(root)!r} does not have the layout of dataset {dataset!r} "
                            f"({what}); give that dataset's folder as it ships (README: "
                            "`medaudit manifest`), or the DATASET that matches this folder.") from None


def _is_counts_file(side: Path) -> bool:
    """Whether ``side`` is the counts file medaudit writes beside a manifest."""
    from medaudit.io.output import json_object

    return json_object(side, ("counts", "dataset", "n_rows")) is not None


def is_manifest_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a manifest medaudit wrote: a manifest CSV header, and its counts
    file beside it."""
    from medaudit.io.output import file_starts_with

    path = Path(path)
    return (path.is_file() and not path.is_symlink()
            and file_starts_with(path, b"image_id,dataset,path,", b"image_id,dataset,path\n")
            and _is_counts_file(path.with_suffix(".json")))


def write_manifest(manifest: Manifest, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the table as CSV at ``path`` and its counts/notes as ``path`` with suffix ``.json``.

    ``overwrite`` replaces only a manifest medaudit wrote (and its counts file): never a file
    of the user's that has either name.
    """
    import json
    import tempfile

    from medaudit.io.output import OutputPathError, default_file_mode

    path = Path(path)
    side = path.with_suffix(".json")
    if path.suffix.lower() == ".json":  # the counts file's own name (any case: macOS, Windows)
        raise OutputPathError(f"--out {str(path)!r} ends in .json, the name of the counts file "
                              "written beside the manifest; give a .csv name.")
    for target, ours, what in ((path, is_manifest_file, "a manifest medaudit wrote"),
                               (side, _is_counts_file, "the counts file of a manifest medaudit wrote")):
        if not os.path.lexists(target):
            continue
        if not overwrite:
            raise FileExistsError(f"{str(target)!r} exists; choose another --out or pass --overwrite.")
        if target.is_symlink() or not target.is_file() or not ours(target):
            raise OutputPathError(f"{str(target)!r} exists and is not {what}; --overwrite replaces only "
                                  "medaudit's own manifest and counts file, never a file of yours. "
                                  "Choose another --out.")
    path.parent.mkdir(parents=True, exist_ok=True)
    texts = ((path, manifest.table.to_csv(index=False)),
             (side, json.dumps(manifest.to_dict(), sort_keys=True, indent=2, default=str) + "\n"))
    # both files are complete on disk before either replaces anything; a failure leaves no temp
    temps: list[tuple[str, Path]] = []
    try:
        for target, text in texts:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temps.append((tmp, target))
            os.fchmod(fd, default_file_mode())  # the user's umask, not mkstemp's 0600
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
    from medaudit.io.tables import read_table

    df = read_table(path, what="manifest",
                    dtype={"image_id": str, "dataset": str, "path": str, "negative_group": str,
                           "split": str, "patient_id": str, "study_id": str},
                    na_values={c: [""] for c in ("label", "age", *FINDINGS)})
    missing = [c for c in ("image_id", "dataset", "path") if c not in df.columns]
    if missing:
        raise SchemaError(f"{str(path)!r} lacks manifest column(s) {missing}; "
                          f"columns are {list(df.columns)}.")
    return df
