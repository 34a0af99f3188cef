"""Real data through the spec's data-set formats, and LIDC label stability (issue 4).

Witnesses:
* LIDC: the exact bootstrap distribution of each nodule's resampled mean rating — the
  k-fold convolution of its empirical rating distribution, computed here with integer
  polynomial products (numpy.convolve) — gives P(hard label flips) for every nodule; the
  engine's mean flip rate over the 2,637 nodules must agree within 4 standard errors of
  that mean and every nodule within 5; nodules with one rating or identical ratings
  never flip (pandas on the raw CSV); the README's counts.
* format: enhance / nih / lidc: the same tables as the readers called directly, file
  digests by hashlib, the reader's scale taken when the spec gives none and a clash refused.
* the ENHANCE automated scores (dataset_scores) against the raw CSVs read with the csv module.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from medaudit.datasets import annotations as ds
from medaudit.labels import label_stability_with_spec, load_annotations
from medaudit.labels.spec import AnnotationsSpec

B = 1000


@pytest.fixture(scope="module")
def lidc(lidc_root):
    spec = AnnotationsSpec(format="lidc", path=str(lidc_root), hard="threshold", threshold=3)
    frame, prov = load_annotations(spec, Path("."))
    return spec, frame, prov


def _exact_flip(ratings: np.ndarray) -> float:
    """P(the resampled mean's side of 3 differs from the original's), by convolution."""
    k = ratings.size
    pmf = np.bincount(ratings.astype(int), minlength=6).astype(object)  # counts of 0..5
    dist = np.array([1], dtype=object)
    for _ in range(k):
        dist = np.convolve(dist, pmf)  # exact integer counts of each sum of k draws
    sums = np.arange(dist.size)
    total = sum(dist)
    pos = sum(dist[sums > 3 * k])
    p_pos = pos / total
    return float(1 - p_pos) if ratings.mean() > 3 else float(p_pos)


def test_lidc_format_reads_what_the_reader_reads(lidc, lidc_root):
    spec, frame, prov = lidc
    direct = ds.read_lidc(lidc_root)
    assert (spec.scale.low, spec.scale.high) == (1.0, 5.0)  # the reader's scale, not 0-1
    assert len(frame) == len(direct.table) == 6859 - 81
    assert_frame = frame[["item_id", "annotator", "cohort"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(assert_frame, direct.table[["item_id", "annotator", "cohort"]]
                                  .reset_index(drop=True))
    assert prov["sha256"] == {"lidc_annotations_by_nodule.csv": hashlib.sha256(
        (lidc_root / "lidc_annotations_by_nodule.csv").read_bytes()).hexdigest()}
    assert prov["reader"]["counts"]["merged_items_excluded"] == 14  # README


def test_lidc_label_stability_matches_exact_flip_probabilities(lidc, lidc_root):
    spec, frame, _ = lidc
    st = label_stability_with_spec(frame, spec, n_resamples=B, rng=2026)
    raw = pd.read_csv(lidc_root / "lidc_annotations_by_nodule.csv")
    raw["item"] = (raw["patient_id"] + "/scan" + raw["scan_id"].astype(str) + "/nodule"
                   + raw["nodule_idx"].astype(str))
    size = raw.groupby("item")["malignancy"].transform("size")
    raw = raw[size <= 4]
    by = raw.groupby("item")["malignancy"]
    items = st.items.set_index("item_id")
    assert len(items) == by.ngroups == 2637
    exact = by.agg(lambda v: _exact_flip(v.to_numpy())).loc[items.index]
    got = items["flip_rate"]
    se_each = np.sqrt(exact * (1 - exact) / B)
    assert (np.abs(got - exact) <= 5 * se_each + 1e-12).all()
    se_mean = np.sqrt((exact * (1 - exact)).sum() / B) / len(exact)
    assert abs(got.mean() - exact.mean()) <= 4 * se_mean
    assert (exact > 0).sum() > 500  # the real data really has unstable nodules
    still = (by.nunique() == 1).loc[items.index]
    assert (got[still] == 0).all() and (items.loc[still, "soft_ci_low"]
                                         == items.loc[still, "soft_ci_high"]).all()
    # the soft label is the normalised mean rating; the hard label mean > 3
    mean = by.mean().loc[items.index]
    np.testing.assert_allclose(items["label_soft"], (mean - 1) / 4, rtol=1e-12)
    assert (items["label"] == (mean > 3).astype(float)).all()
    s = st.summary.set_index("n_ratings")
    assert s.loc["1", "mean_flip_rate"] == 0 and s.loc["all", "n_items"] == 2637
    # more readers, more room to disagree: flip rates rise with the number of ratings here
    assert s.loc["2", "mean_flip_rate"] < s.loc["3", "mean_flip_rate"] < s.loc["4", "mean_flip_rate"]


def test_lidc_example_script(lidc_root, tmp_path):
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples" / "lidc_label_stability.py"
    spec = importlib.util.spec_from_file_location("lidc_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "out"
    assert mod.main([str(out), "--data", str(lidc_root), "--n-resamples", "50"]) == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(first) == {"items.csv", "summary.csv", "provenance.json", ".medaudit-output"}
    assert mod.main([str(out), "--data", str(lidc_root), "--n-resamples", "50", "--overwrite"]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first  # byte-identical rerun


def test_enhance_and_nih_formats(enhance_root, nih_root, enhance_students, nih_readers):
    e_spec = AnnotationsSpec(format="enhance", path=str(enhance_root))
    e_frame, e_prov = load_annotations(e_spec, Path("."))
    assert len(e_frame) == len(enhance_students.table)
    np.testing.assert_array_equal(e_frame["value"].to_numpy(),
                                  enhance_students.table["rating"].to_numpy())
    assert len(e_prov["sha256"]) == 24 and e_prov["reader"]["counts"]["malformed_id_rows"] == 2
    n_spec = AnnotationsSpec(format="nih", path=str(nih_root), dataset={"findings": ["Effusion"]})
    n_frame, _ = load_annotations(n_spec, Path("."))
    want = nih_readers.table[nih_readers.table["cohort"] == "Effusion"]
    assert len(n_frame) == len(want) == 4050
    four = dict(format="nih", path=str(nih_root), hedge="half",
                dataset={"reads": "four_findings", "set_id": "test"})
    # the file repeats some reads (same reader, image, finding); refused unless declared
    with pytest.raises(Exception, match=r"repeat an \(cohort, item_id, annotator\) pair"):
        load_annotations(AnnotationsSpec(**four), Path("."))
    f_frame, f_prov = load_annotations(AnnotationsSpec(**four, duplicates="keep"), Path("."))
    assert (f_frame["value"] == 0.5).any()
    raw = pd.read_csv(nih_root / "labels" / "four_findings_expert_labels" /
                      "four_findings_expert_labels_individual_readers.csv", dtype=str)
    raw = raw[raw["Set ID"] == "test"]
    n_rep = int(raw.duplicated(["Image ID", "Reader ID"], keep=False).sum()) * 4  # 4 findings
    assert f_prov["reader"]["counts"]["repeated_reads"] == n_rep > 0
    with pytest.raises(Exception, match="declare annotations.hedge"):
        load_annotations(AnnotationsSpec(format="nih", path=str(nih_root),
                                         dataset={"reads": "four_findings"}), Path("."))


def test_format_spec_errors():
    with pytest.raises(ValidationError, match=r"scale \[0, 1\] differs"):
        AnnotationsSpec(format="lidc", scale={"min": 0, "max": 1})
    with pytest.raises(ValidationError, match="does not take option"):
        AnnotationsSpec(format="lidc", dataset={"reader": 1})
    with pytest.raises(ValidationError, match="do not apply"):
        AnnotationsSpec(format="enhance", item_column="ID")
    with pytest.raises(ValidationError, match="annotator identities"):
        AnnotationsSpec(format="lidc", soft="glad", hard="posterior")
    with pytest.raises(ValidationError, match="needs `path:`"):
        AnnotationsSpec(format="long")
    with pytest.raises(ValidationError, match="belong to format"):
        AnnotationsSpec(path="a.csv", dataset={"source": "crowd"})
    s = AnnotationsSpec(format="lidc", dataset={"characteristic": "calcification"})
    assert (s.scale.low, s.scale.high) == (1.0, 6.0)


def test_enhance_dataset_scores_against_raw_csv(enhance_root):
    scores, prov = ds.dataset_scores("enhance", enhance_root)
    auto = enhance_root / "0_data" / "automated"
    with open(auto / "computer_color.csv", newline="") as fh:
        color = {r["ID"]: float(r["i"]) for r in csv.DictReader(fh)}
    with open(auto / "computer_border_.csv", newline="") as fh:
        border = {r["ID"].removesuffix("_segmentation") for r in csv.DictReader(fh)}
    with open(auto / "computer_asymmetry_0.9.csv", newline="") as fh:
        asym = {r["ID"] for r in csv.DictReader(fh)}
    every = set(color) & border & asym
    assert prov["counts"]["scored_by_all_models"] == len(every) == 1966
    sub = scores[(scores["cohort"] == "border") & (scores["model"] == "auto_color_count")]
    assert set(sub["image_id"]) == every
    assert all(color[i] == s for i, s in zip(sub["image_id"], sub["score"], strict=True))
    assert prov["sha256"]["0_data/automated/computer_color.csv"] == hashlib.sha256(
        (auto / "computer_color.csv").read_bytes()).hexdigest()
    with pytest.raises(Exception, match="only ENHANCE"):
        ds.dataset_scores("lidc")


def test_dataset_modules_stay_small():
    import medaudit.labels.stability as stability

    src = Path(ds.__file__).parent
    for path in [src / f"{name}.py" for name in ("annotations", "_common", "enhance", "nih", "lidc")
                 ] + [Path(stability.__file__)]:
        assert len(path.read_text().splitlines()) < 600, path.name
