"""Manifests: published counts on the real lists and label tables, synthetic on-disk layouts shaped
like the real downloads, hand-worked PadChest/MIMIC/VinDr rules, counts reported by every filter."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.datasets import manifests as mf
from medaudit.exceptions import MedauditError, SchemaError

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
TBX = SHARED / "tbx11k_tb_positive_subset"


def _xrv_data() -> Path:
    spec = importlib.util.find_spec("torchxrayvision")
    if spec is None or spec.origin is None:
        pytest.skip("torchxrayvision (which ships the PadChest and OpenI label tables) is not installed")
    return Path(spec.origin).parent / "data"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data {path} is absent")
    return path


# ------------------------------------------------------------------------------ paper 000
def test_tbx11k_official_lists_give_the_published_counts():
    m = mf.tbx11k_manifest(_need(TBX), require_files=False)
    t = m.table
    assert len(t) == 8400  # 6,600 train + 1,800 val (M0.2)
    for split, (tb, healthy, sick) in {"train": (600, 3000, 3000), "val": (200, 800, 800)}.items():
        s = t[t["split"] == split]
        assert (s["label"] == 1).sum() == tb
        assert (s["negative_group"] == "healthy").sum() == healthy
        assert (s["negative_group"] == "sick").sum() == sick
    assert set(t["subtype"]) == {"tb", "healthy", "sick"}
    assert not t["path"].str.contains("/extra/|/test/").any()
    assert [c["n_removed"] for c in m.counts] == [0, 0]
    with pytest.raises(SchemaError, match="missing"):
        mf.tbx11k_manifest(TBX)  # healthy and sick images are not in the shared subset


def test_tbx11k_excludes_bundled_copies_and_never_reads_the_test_list(tmp_path):
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "TBX11K_train.txt").write_text("tb/tb0001.png\nhealth/h1.png\nextra/shenzhen/CHNCXR_0001_1.png\n"
                                            "sick/s1.png\n")
    (lists / "TBX11K_val.txt").write_text("tb/tb0002.png\nextra/montgomery/MCUCXR_0001_0.png\n")
    (lists / "all_test.txt").write_text("test/x.png\n")
    for e in ("tb/tb0001.png", "health/h1.png", "sick/s1.png", "tb/tb0002.png"):
        (tmp_path / "imgs" / e).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "imgs" / e).write_bytes(b"")
    m = mf.tbx11k_manifest(tmp_path, expect_counts=False)
    assert m.table["image_id"].tolist() == ["h1", "s1", "tb0001", "tb0002"]
    assert m.table["label"].tolist() == [0, 0, 1, 1]
    assert [(c["n_before"], c["n_after"]) for c in m.counts] == [(4, 3), (2, 1)]
    assert any("Montgomery" in n for n in m.notes)
    with pytest.raises(SchemaError, match="published"):
        mf.tbx11k_manifest(tmp_path)


def test_tbx11k_positive_subset_matches_the_official_lists():
    t = mf.tbx11k_tb_subset_manifest(_need(TBX)).table
    assert t["split"].value_counts().to_dict() == {"train": 600, "val": 200}
    assert (t["label"] == 1).all() and t["tb_type"].value_counts()["active"] == 630


def _nlm_layout(root: Path, prefix: str, n_pos: int, n_neg: int) -> None:
    cxr = root / "CXR_png"
    mask = root / "ManualMask" / "leftMask"
    cxr.mkdir(parents=True)
    mask.mkdir(parents=True)
    for k in range(n_pos + n_neg):
        name = f"{prefix}_{k + 1:04d}_{int(k < n_pos)}.png"
        (cxr / name).write_bytes(b"")
        (mask / name).write_bytes(b"")  # same-named lung masks must not enter the manifest
    (cxr / "Thumbs.png").write_bytes(b"")


@pytest.mark.parametrize("fn,prefix,pos,neg", [(mf.montgomery_manifest, "MCUCXR", 58, 80),
                                               (mf.shenzhen_manifest, "CHNCXR", 336, 326)])
def test_nlm_sets_label_from_suffix_and_check_counts(tmp_path, fn, prefix, pos, neg):
    _nlm_layout(tmp_path / "a", prefix, pos, neg)
    m = fn(tmp_path / "a")
    assert len(m.table) == pos + neg and m.table["label"].sum() == pos
    assert m.counts[0]["n_before"] == pos + neg + 1 and m.counts[0]["n_removed"] == 1
    row = m.table[m.table["image_id"] == f"{prefix}_0001_1"].iloc[0]
    assert row["label"] == 1 and row["negative_group"] == ""
    _nlm_layout(tmp_path / "b", prefix, pos - 1, neg)
    with pytest.raises(SchemaError, match="published"):
        fn(tmp_path / "b")
    assert len(fn(tmp_path / "b", expect_counts=False).table) == pos - 1 + neg


def _vindr_layout(root: Path) -> None:
    """3,000 test images whose label totals are the published ones (M0.2)."""
    n = 3000
    lab = {c: np.zeros(n, dtype=int) for c in ("Tuberculosis", "No finding", "Pneumonia", "Lung tumor",
                                               "COPD", "Other diseases")}
    lab["Tuberculosis"][:164] = 1
    lab["Pneumonia"][128:164] = 1          # 36 TB+ images also carry pneumonia → 246 - 36 = 210 controls
    lab["Pneumonia"][164:374] = 1          # 210 TB-negative pneumonia
    lab["Lung tumor"][157:164] = 1         # 7 TB+ → 80 - 7 = 73 controls
    lab["Lung tumor"][364:437] = 1         # 73 TB-negative (10 of them also pneumonia)
    lab["COPD"][500:502] = 1
    lab["No finding"][949:] = 1            # 2,051 no finding
    df = pd.DataFrame({"image_id": [f"img{k:05d}" for k in range(n)], **lab})
    (root / "annotations").mkdir(parents=True)
    df.to_csv(root / "annotations" / "image_labels_test.csv", index=False)


def test_vindr_named_groups_count_only_tb_negative_images(tmp_path):
    _vindr_layout(tmp_path)
    m = mf.vindr_manifest(tmp_path, require_files=False)
    t = m.table
    assert (t["label"] == 1).sum() == 164 and (t["label"] == 0).sum() == 2836
    assert t["pneumonia"].sum() == 246 - 36 and t["lung_tumor"].sum() == 80 - 7
    assert t["no_finding"].sum() == 2051
    assert (t.loc[t["label"] == 1, "negative_group"] == "").all()
    both = t[(t["pneumonia"]) & (t["lung_tumor"])]
    assert len(both) == 10 and (both["negative_group"] == "lung_tumor;pneumonia").all()
    assert t["path"].str.endswith(".dicom").all()
    with pytest.raises(SchemaError, match="missing"):
        mf.vindr_manifest(tmp_path)
    per_reader = pd.read_csv(tmp_path / "annotations" / "image_labels_test.csv").assign(rad_id="R1")
    per_reader.to_csv(tmp_path / "readers.csv", index=False)
    with pytest.raises(SchemaError, match="per-reader"):
        mf.vindr_manifest(tmp_path, labels_csv=tmp_path / "readers.csv", require_files=False)


def test_kermany_and_nih_real_counts():
    k = mf.kermany_manifest(_need(SHARED / "kermany_pediatric_pneumonia_test224")).table
    assert (k["label"] == 1).sum() == 390 and (k["label"] == 0).sum() == 234
    n = mf.nih810_manifest(_need(SHARED / "nih_cxr14_google_expert_readers")).table
    assert len(n) == 810 and n["patient_id"].ne("").all()
    raw = pd.read_csv(SHARED / "nih_cxr14_google_expert_readers" / "labels" / "all_findings_expert_labels"
                      / "all_findings_expert_labels_test_labels.csv")
    assert n["label"].sum() == (raw["Abnormal"] == "YES").sum()


def _kermany_copy(tmp_path: Path, edit) -> Path:
    """The real kermany folder with its labels.csv as ``edit`` returns it (images linked)."""
    src = _need(SHARED / "kermany_pediatric_pneumonia_test224")
    root = tmp_path / "kermany"
    root.mkdir(parents=True)
    for d in src.iterdir():
        if d.is_dir():
            (root / d.name).symlink_to(d.resolve())
    lab = pd.read_csv(src / "labels.csv", dtype=str, keep_default_na=False)
    edit(lab).to_csv(root / "labels.csv", index=False)
    return root


@pytest.mark.parametrize("value", ["yes", "", "3", "-1"])
def test_kermany_label_outside_0_1_names_the_line(tmp_path, value):
    """Probe finding: 'yes' or an empty cell raised a bare ValueError from astype(int), and 3
    or -1 passed into the manifest (the count check alone caught nothing when counts held)."""
    root = _kermany_copy(tmp_path, lambda lab: lab.assign(pneumonia=lab["pneumonia"].where(
        lab.index != 3, value)))
    with pytest.raises(SchemaError, match=rf"labels\.csv': column 'pneumonia', line 5: '{value}' "
                                          r"is not 0 or 1 \(1 such cell\(s\)\)"):
        mf.kermany_manifest(root)


def test_the_advice_of_a_failed_check_is_an_option_of_the_builder(tmp_path):
    """The count and file checks say to pass expect_counts=False / require_files=False; the
    builders that run them take those options (kermany, nih_810 and tbx11k_tb_subset did not)."""
    import inspect

    root = _kermany_copy(tmp_path, lambda lab: lab.drop(index=[0, 1]))
    with pytest.raises(SchemaError, match="expect_counts=False"):
        mf.kermany_manifest(root)
    m = mf.kermany_manifest(root, expect_counts=False)
    assert len(m.table) == 622
    # an image listed but not on disk: refused, or listed anyway with require_files=False
    root2 = _kermany_copy(tmp_path / "b", lambda lab: pd.concat(
        [lab, lab.iloc[[0]].assign(path="NORMAL/not-there.jpeg")], ignore_index=True))
    with pytest.raises(SchemaError, match="require_files=False"):
        mf.kermany_manifest(root2, expect_counts=False)
    m2 = mf.kermany_manifest(root2, expect_counts=False, require_files=False)
    assert len(m2.table) == 625 and m2.table["path"].str.endswith("not-there.jpeg").any()
    for name, fn in mf.BUILDERS.items():
        src = inspect.getsource(fn)
        params = inspect.signature(fn).parameters
        if "_check_files(" in src:
            assert "require_files" in params, name
        if "_expect(" in src or "_nlm(" in src:
            assert "expect_counts" in params, name


# ------------------------------------------------------------------------------ paper 002
def test_openi_report_count_matches_the_reconstructed_3851():
    m = mf.openi_manifest(_xrv_data() / "NLMCXR_reports.tgz")
    assert len(m.table) == 27_702 // 2 - 10_000  # methods.md M2.1 [RECON]
    assert m.counts[0]["n_before"] == 3955
    assert set(m.table[list(mf.FINDINGS)].stack().unique()) <= {0, 1}


def _padchest_csv(path: Path) -> None:
    rows = [  # ImageID, StudyID, PatientID, date, birth, projection, pediatric, labels
        ("a1.png", "S1", "P1", "20150101", 1950, "PA", "No", "['pleural effusion', 'cardiomegaly']"),
        ("a2.png", "S1", "P1", "20150101", 1950, "L", "No", "['pleural effusion', 'cardiomegaly']"),
        ("b1.png", "S2", "P1", "20160101", 1950, "PA", "No", "['pneumothorax']"),   # later study of P1
        ("c1.png", "S3", "P2", "20150101", 2005, "PA", "No", "['consolidation']"),  # age 10
        ("d1.png", "S4", "P3", "20150101", 1960, "PA", "Yes", "['normal']"),         # flagged paediatric
        ("e1.png", "S5", "P4", "20150101", 1960, "AP", "No", "['pericardial effusion']"),
        ("f1.png", "S6", "P5", "20150101", 1960, "PA", "No", "['Hydropneumothorax ', 'laminar atelectasis']"),
        ("g1.png", "S7", "P6", "20150101", 1960, "L", "No", "['normal']"),          # lateral only
        ("h1.png", "S8", "P7", "20150101", 1960, "PA", "No", "['exclude']"),
        ("i1.png", "S9", "P8", "20150101", 1960, "PA", "No", None),                   # no labels
        ("j1.png", "S10", "P9", "20150101", 1960, "PA", "No", "['pulmonary edema', 'copd signs']"),
    ]
    df = pd.DataFrame(rows, columns=["ImageID", "StudyID", "PatientID", "StudyDate_DICOM", "PatientBirth",
                                     "Projection", "Pediatric", "Labels"])
    df["ImageDir"] = 0
    df.to_csv(path, index=False)


def test_padchest_rules_by_hand(tmp_path):
    _padchest_csv(tmp_path / "pc.csv")
    m = mf.padchest_manifest(tmp_path / "pc.csv", n_studies=None)
    t = m.table.set_index("study_id")
    assert sorted(t.index) == ["S1", "S10", "S5", "S6"]
    assert t.loc["S1", "image_id"] == "a1.png"  # frontal image of the earliest study of P1
    assert t.loc["S1", ["pleural_effusion", "cardiomegaly", "pneumothorax"]].tolist() == [1, 1, 0]
    assert t.loc["S5", list(mf.FINDINGS)].sum() == 0  # pericardial effusion never maps to pleural effusion
    assert t.loc["S6", ["pleural_effusion", "pneumothorax", "atelectasis"]].tolist() == [1, 1, 1]
    assert t.loc["S10", "edema"] == 1
    steps = [(c["n_before"], c["n_after"]) for c in m.counts]
    assert steps == [(11, 10), (10, 9), (9, 7), (7, 5), (5, 5), (5, 4)]
    with pytest.raises(MedauditError, match="only 4 eligible"):
        mf.padchest_manifest(tmp_path / "pc.csv", n_studies=5)
    with pytest.raises(MedauditError, match="never map"):
        mf.padchest_manifest(tmp_path / "pc.csv", mapping={"pleural_effusion": ("pericardial effusion",)})


def test_padchest_real_table_sample():
    csv = _xrv_data() / "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv.gz"
    m = mf.padchest_manifest(csv)
    t = m.table
    assert len(t) == 5000 and t["patient_id"].is_unique and t["study_id"].is_unique
    assert not (t["age"] < 18).any()
    peri = t["source_labels"].str.split("|").map(lambda ls: "pericardial effusion" in ls and not any(
        x in mf.PADCHEST_MAPPING["pleural_effusion"] for x in ls))
    assert (t.loc[peri, "pleural_effusion"] == 0).all()
    assert m.params["rng"]["seed"] == 42
    # adults only, one study per patient, frontal: the reported counts chain and end at 5,000
    assert [c["n_after"] for c in m.counts][-1] == 5000
    assert all(a["n_after"] == b["n_before"] for a, b in zip(m.counts[:-2], m.counts[1:-1], strict=True))


def test_padchest_ped_flag_excludes_even_adult_ages():
    # PadChest writes its paediatric flag as "PED" (not "Yes"); 4 flagged rows have a computed
    # age >= 18, so only the flag removes them.  Witness: the raw CSV's own flag column.
    csv = _xrv_data() / "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv.gz"
    raw = pd.read_csv(csv, usecols=["ImageID", "Pediatric"], dtype=str)
    assert set(raw["Pediatric"]) == {"PED", "No"}
    flagged = set(raw.loc[raw["Pediatric"] == "PED", "ImageID"])
    t = mf.padchest_manifest(csv, n_studies=None).table
    assert len(t) > 60_000 and not t["image_id"].isin(flagged).any()


def test_padchest_flag_values_and_missing_patient_are_refused(tmp_path):
    _padchest_csv(tmp_path / "pc.csv")
    df = pd.read_csv(tmp_path / "pc.csv", dtype=str)
    df.loc[df["ImageID"] == "d1.png", "Pediatric"] = "PED"  # the real spelling: same result as "Yes"
    df.to_csv(tmp_path / "ped.csv", index=False)
    assert sorted(mf.padchest_manifest(tmp_path / "ped.csv", n_studies=None).table["study_id"]) == [
        "S1", "S10", "S5", "S6"]
    df.loc[df["ImageID"] == "j1.png", "Pediatric"] = "unknown"
    df.to_csv(tmp_path / "odd.csv", index=False)
    with pytest.raises(SchemaError, match="Pediatric.*'unknown'"):
        mf.padchest_manifest(tmp_path / "odd.csv", n_studies=None)
    df.loc[df["ImageID"] == "j1.png", ["Pediatric", "PatientID"]] = ["No", None]
    df.to_csv(tmp_path / "nopid.csv", index=False)
    with pytest.raises(SchemaError, match="no PatientID"):
        mf.padchest_manifest(tmp_path / "nopid.csv", n_studies=None)


def test_padchest_sample_is_decided_by_the_seed(tmp_path):
    _padchest_csv(tmp_path / "pc.csv")
    draws = {seed: tuple(mf.padchest_manifest(tmp_path / "pc.csv", n_studies=2, rng=seed).table["study_id"])
             for seed in range(8)}
    assert draws[3] == tuple(mf.padchest_manifest(tmp_path / "pc.csv", n_studies=2, rng=3).table["study_id"])
    assert len(set(draws.values())) > 1


def _mimic_layout(root: Path) -> None:
    lab = pd.DataFrame({"subject_id": ["10000001", "10000001", "10000002", "10000003"],
                        "study_id": ["50000001", "50000002", "50000003", "50000004"],
                        "Atelectasis": [1.0, -1.0, None, 0.0], "Cardiomegaly": [0.0, None, 1.0, None],
                        "Consolidation": [None] * 4, "Edema": [1.0, 0.0, 0.0, -1.0],
                        "Pleural Effusion": [None, 1.0, 0.0, 0.0], "Pneumothorax": [0.0] * 4,
                        "No Finding": [None] * 4})
    meta = pd.DataFrame({"dicom_id": ["d1", "d2", "d3", "d4", "d5"],
                         "subject_id": ["10000001", "10000001", "10000001", "10000002", "10000003"],
                         "study_id": ["50000001", "50000001", "50000002", "50000003", "50000004"],
                         "ViewPosition": ["LATERAL", "AP", "PA", "LL", "AP"]})
    root.mkdir(parents=True)
    lab.to_csv(root / "mimic-cxr-2.0.0-chexpert.csv.gz", index=False)
    meta.to_csv(root / "mimic-cxr-2.0.0-metadata.csv", index=False)
    for s, t, d in (("10000001", "50000001", "d2"), ("10000001", "50000002", "d3"),
                    ("10000003", "50000004", "d5")):
        p = root / "files" / f"p{s[:2]}" / f"p{s}" / f"s{t}" / f"{d}.jpg"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")


def test_mimic_keeps_labeler_codes_frontal_images_and_samples_by_seed(tmp_path):
    _mimic_layout(tmp_path / "m")
    m = mf.mimic_manifest(tmp_path / "m", n_studies=None)
    t = m.table.set_index("study_id")
    assert sorted(t.index) == ["50000001", "50000002", "50000004"]  # 50000003 has only a lateral
    assert t.loc["50000001", "image_id"] == "d2"
    assert t.loc["50000002", "atelectasis"] == -1 and pd.isna(t.loc["50000002", "cardiomegaly"])
    assert t.loc["50000001", "patient_id"] == t.loc["50000002", "patient_id"]  # no de-duplication
    a = mf.mimic_manifest(tmp_path / "m", n_studies=2, rng=5).table
    assert a.equals(mf.mimic_manifest(tmp_path / "m", n_studies=2, rng=5).table) and len(a) == 2
    (tmp_path / "m" / "files" / "p10" / "p10000003" / "s50000004" / "d5.jpg").unlink()
    with pytest.raises(SchemaError, match="missing"):
        mf.mimic_manifest(tmp_path / "m", n_studies=None)


# ------------------------------------------------------------------------------ I/O
def test_write_and_read_round_trip_is_byte_identical(tmp_path):
    _vindr_layout(tmp_path / "v")
    m = mf.vindr_manifest(tmp_path / "v", require_files=False)
    mf.write_manifest(m, tmp_path / "a.csv")
    mf.write_manifest(mf.vindr_manifest(tmp_path / "v", require_files=False), tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    back = mf.read_manifest(tmp_path / "a.csv")
    assert back["image_id"].tolist() == m.table["image_id"].tolist()
    assert back["label"].tolist() == m.table["label"].tolist()
    with pytest.raises(FileExistsError):
        mf.write_manifest(m, tmp_path / "a.csv")
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind
    with pytest.raises(MedauditError, match="unknown dataset"):
        mf.build_manifest("chexpert", tmp_path)


def test_split_modules_reexport_every_public_name():
    """The paper-002 builders and the shared record moved to their own modules; the façade
    still serves every public name, and each is the very object of the module defining it."""
    from medaudit.datasets import _manifest as base
    from medaudit.datasets import manifests_paper002 as p002

    for mod in (base, p002):
        for name in mod.__all__:
            assert getattr(mf, name) is getattr(mod, name), name
        assert set(mod.__all__) <= set(mf.__all__)
    assert all(hasattr(mf, n) for n in mf.__all__)
    assert mf.BUILDERS["padchest"] is p002.padchest_manifest
    for mod in (mf, base, p002):  # house rule: modules under ~600 lines
        assert len(Path(mod.__file__).read_text().splitlines()) < 600


def test_unreadable_dataset_files_are_named_not_tracebacks(tmp_path):
    """An empty OpenI folder and an empty or column-less PadChest CSV: SchemaError naming them."""
    from medaudit.datasets.manifests import openi_manifest, padchest_manifest
    from medaudit.exceptions import SchemaError

    (tmp_path / "reports").mkdir()
    with pytest.raises(SchemaError, match="openi: no XML report found"):
        openi_manifest(tmp_path / "reports")
    empty = tmp_path / "pad.csv"
    empty.write_text("")
    with pytest.raises(SchemaError, match=r"could not read '.*pad\.csv'"):
        padchest_manifest(empty)
    empty.write_text("a,b\n1,2\n")
    with pytest.raises(SchemaError, match=r"could not read '.*pad\.csv'"):
        padchest_manifest(empty)
