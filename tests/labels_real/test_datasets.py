"""The real-data readers against the dataset READMEs, hand-read cells and raw-file counts.

Witnesses: counts printed in the READMEs (shared/data and upstream raumannsr/ENHANCE
README at 61b4176, nih labels READMEs, LIDC README); cells read by hand from the CSVs;
line counts made here with the ``csv`` module; the NIH ground-truth file (majority of
three designated readers) recomputed from the individual reads.
"""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pandas as pd
import pytest

from medaudit.datasets import annotations as ds
from medaudit.exceptions import MedauditError, SchemaError


def _nonblank_lines(path) -> int:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh, delimiter=";"))[1:]
    return sum(any(c.strip() for c in r) for r in rows)


def test_enhance_student_counts(enhance_root, enhance_students):
    c = enhance_students.counts
    assert c["files"] == 8 + 6 + 10  # student/readme.md: 8, 6 and 10 group files
    files = sorted((enhance_root / "0_data" / "student").glob("*/group*.csv"))
    assert c["rows"] == sum(_nonblank_lines(p) for p in files)
    t = enhance_students.table
    assert set(t["cohort"]) == {"asymmetry", "border", "color"}
    assert t["rating"].between(0, 1).all()
    n_items = t.groupby("cohort")["item_id"].nunique()
    # upstream README: 1,631 ISIC images per attribute.  We keep 1,633 well-formed ids; the
    # upstream code's row cleaning (pandas dropna over whole rows) differs by a couple of items
    assert (abs(n_items - 1631) <= 2).all(), n_items.to_dict()
    # two malformed ids are left out and listed, never repaired
    assert c["malformed_id_rows"] == 2
    assert any("'ISIC_0010327.'" in n for n in enhance_students.notes)
    assert t["item_id"].str.fullmatch(r"ISIC_\d{7}").all()
    assert not t.duplicated(["cohort", "item_id", "annotator"]).any()


def test_enhance_hand_read_cells(enhance_students):
    t = enhance_students.table

    def cell(item: str, column: str, year: str) -> pd.Series:
        r = t[(t["item_id"] == item) & (t["column"] == column) & (t["year"] == year)]
        assert len(r) == 1
        return r.iloc[0]

    # 2017-2018/group01.csv line 2: ISIC_0000002;2;1;2;2;4;4;4;3;4 (ABCD scales)
    r = cell("ISIC_0000002", "Asymmetry_1_1", "2017-2018")
    assert (r["rating_raw"], r["rating"], r["line"]) == (2.0, 1.0, 2)
    assert cell("ISIC_0000002", "Border_1_2", "2017-2018")["rating"] == pytest.approx(4 / 8)
    assert cell("ISIC_0000002", "Color_1_1", "2017-2018")["rating"] == pytest.approx((4 - 1) / 5)
    # 2017-2018/group06.csv line 3: ISIC_0000469 border ' 40 ' on the 0-100 scale
    r = cell("ISIC_0000469", "Border_6_3", "2017-2018")
    assert (r["rating_raw"], r["rating"], r["scale_basis"]) == (40.0, 0.4, "percent")


def test_enhance_hard_labels_follow_paper_rule():
    tiny = pd.DataFrame({"cohort": "asymmetry", "item_id": ["a", "a", "a", "b", "b"],
                         "annotator": list("xyzxy"), "rating": [0.5, 0.5, 1.0, 0.0, 0.5],
                         "rating_raw": [1.0, 1.0, 2.0, 0.0, 1.0]})
    out = ds.enhance_hard_labels(tiny).set_index("item_id")
    # a: raw mean 4/3 > 1 -> 1, soft mean 2/3; b: raw mean 0.5 -> 0, soft 0.25
    assert out.loc["a", "label"] == 1 and out.loc["a", "label_soft"] == pytest.approx(2 / 3)
    assert out.loc["b", "label"] == 0 and out.loc["b", "label_soft"] == pytest.approx(0.25)


def test_enhance_crowd_and_automated_counts(enhance_root):
    crowd = ds.read_enhance_crowd(enhance_root)
    assert crowd.table.groupby("cohort")["item_id"].nunique().eq(1250).all()  # upstream README
    assert len(crowd.table) == 3 * 3 * 1250
    ph2 = ds.read_enhance_crowd(enhance_root, collection="ph2")
    assert ph2.table.groupby("cohort")["item_id"].nunique().eq(200).all()
    scores, counts = ds.read_enhance_automated(enhance_root)
    # upstream README: automated ISIC asymmetry 1,970, border 1,996, colour 2,000
    assert counts == {"auto_asymmetry_axes": 1970, "auto_asymmetry_nonoverlap": 1970,
                      "auto_border_peaks": 1996, "auto_color_count": 2000}
    raw = pd.read_csv(enhance_root / "0_data" / "automated" / "computer_asymmetry_0.9.csv")
    got = scores[scores["model"] == "auto_asymmetry_nonoverlap"].set_index("image_id")["score"]
    np.testing.assert_allclose(got.loc[raw["ID"]].to_numpy(), 1.0 - raw["ii"].to_numpy())


def test_enhance_tables_report_what_they_drop(enhance_root):
    ann, scores, info = ds.enhance_tables(enhance_root)
    for attr, c in info["cohorts"].items():
        assert c["kept_items"] == c["annotated_items"] - c["annotated_not_scored"]
        kept = set(ann.table.loc[ann.table["cohort"] == attr, "item_id"])
        assert kept == set(scores.loc[scores["cohort"] == attr, "image_id"])
        assert len(kept) == c["kept_items"]


def test_nih_readers_match_readme_and_ground_truth(nih_root, nih_readers):
    c = nih_readers.counts
    assert (c["rows"], c["images"], c["readers"]) == (4050, 810, 5)  # README: 4,050 = 810 x 5
    t = nih_readers.table
    assert len(t) == 4050 * 16 and set(t["rating"]) == {0.0, 1.0}
    # test_labels.csv is the majority of readers 4343882785, 4343883593, 4343883996
    gt = pd.read_csv(nih_root / "labels" / "all_findings_expert_labels" /
                     "all_findings_expert_labels_test_labels.csv", dtype=str)
    three = t[t["annotator"].isin(["4343882785", "4343883593", "4343883996"])]
    maj = three.groupby(["cohort", "item_id"])["rating"].sum().ge(2)
    for f in ds.NIH_FINDINGS:
        if f == "Other":  # README: Other also turns YES when abnormal without a majority finding
            continue
        want = gt.set_index("Image ID")[f].map({"YES": True, "NO": False})
        got = maj.loc[f].loc[want.index]
        assert (got.to_numpy() == want.to_numpy()).all(), f


def test_nih_four_findings_hedge_policies(nih_root):
    ex = ds.read_nih_four_findings(nih_root, hedge="exclude")
    half = ds.read_nih_four_findings(nih_root, hedge="half")
    assert ex.counts["rows"] == 13081  # README: 13,081 reader rows
    assert half.table["item_id"].nunique() == 4376
    assert half.table["annotator"].nunique() == 22
    hedged = half.table[half.table["rating"] == 0.5]
    assert set(hedged["cohort"]) == {"Pneumothorax", "Nodule/mass"}  # README: HEDGE only there
    assert len(half.table) - len(ex.table) == ex.counts["hedge_excluded"] == len(hedged)
    with pytest.raises(TypeError):
        ds.read_nih_four_findings(nih_root)  # the hedge policy must be declared


def test_lidc_counts_follow_readme(lidc_root):
    kept = ds.read_lidc(lidc_root)
    allr = ds.read_lidc(lidc_root, max_annotations=None)
    assert (allr.counts["rows"], allr.counts["items"]) == (6859, 2651)  # README
    assert kept.counts["merged_items_excluded"] == 14  # README: 14 clusters with 5-8
    sizes = allr.table.groupby("item_id").size()
    assert sizes[sizes > 4].between(5, 8).all()
    assert kept.scale == (1.0, 5.0) and kept.table["rating"].between(1, 5).all()
    assert kept.table["annotator"].is_unique  # no reader identity: one annotator per annotation


# ----------------------------------------------------------------------------- bad input
def _mini_enhance(tmp_path, enhance_root, cell: str):
    root = tmp_path / "enh"
    d = root / "0_data" / "student" / "2017-2018"
    d.mkdir(parents=True)
    shutil.copy(enhance_root / "0_data" / "student" / "2017-2018" / "data_types.csv", d)
    (d / "group01.csv").write_text("ID;Asymmetry_1_1;Asymmetry_1_2;Asymmetry_1_3\n"
                                   f"ISIC_0000002;1;{cell};0\n", encoding="utf-8")
    return root


def test_student_errors_name_file_line_column(tmp_path, enhance_root):
    root = _mini_enhance(tmp_path, enhance_root, "x")
    with pytest.raises(SchemaError, match=r"group01\.csv: column 'Asymmetry_1_2', line 2: 'x'"):
        ds.read_enhance_students(root, attributes=["asymmetry"])
    root = _mini_enhance(tmp_path / "b", enhance_root, "3")
    with pytest.raises(SchemaError, match=r"line 2: rating 3 is outside the declared scale \[0, 2\]"):
        ds.read_enhance_students(root, attributes=["asymmetry"])
    with pytest.raises(MedauditError, match="attributes must be"):
        ds.read_enhance_students(root, attributes=["diameter"])


def test_crowd_and_nih_and_lidc_errors(tmp_path):
    c = tmp_path / "enh" / "0_data" / "crowd"
    c.mkdir(parents=True)
    (c / "asymmetry.csv").write_text("ID,i,ii,iii\nISIC_0000001,0,1,2\nISIC_0000002,0,5,1\n")
    with pytest.raises(SchemaError, match=r"column 'ii', line 3: rating 5 is outside"):
        ds.read_enhance_crowd(tmp_path / "enh", attributes=["asymmetry"])
    n = tmp_path / "nih" / "labels" / "all_findings_expert_labels"
    n.mkdir(parents=True)
    (n / "all_findings_expert_labels_test_individual_readers.csv").write_text(
        "Image ID,Patient ID,Reader ID,Effusion\na.png,1,7,YES\nb.png,2,7,MAYBE\n")
    with pytest.raises(SchemaError, match=r"column 'Effusion', line 3: 'MAYBE' is not YES/NO"):
        ds.read_nih_readers(tmp_path / "nih", findings=["Effusion"])
    (n / "all_findings_expert_labels_test_individual_readers.csv").write_text(
        "Image ID,Patient ID,Reader ID,Effusion\na.png,1,,YES\n")
    with pytest.raises(SchemaError, match=r"column 'Reader ID', line 2 is empty"):
        ds.read_nih_readers(tmp_path / "nih", findings=["Effusion"])
    lidc = tmp_path / "lidc"
    lidc.mkdir()
    (lidc / "lidc_annotations_by_nodule.csv").write_text(
        "patient_id,scan_id,nodule_idx,annotation_id,malignancy\nP1,1,0,5,3\nP1,1,0,6,7\n")
    with pytest.raises(SchemaError, match=r"column 'malignancy', line 3: rating 7 is outside"):
        ds.read_lidc(lidc)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ds.read_lidc(tmp_path / "nowhere")
