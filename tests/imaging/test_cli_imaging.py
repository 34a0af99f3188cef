"""`medaudit dicom convert`, `medaudit manifest` and `medaudit overlap` run in-process."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from medaudit.cli.imaging import DATASETS
from medaudit.cli.main import main
from medaudit.datasets.manifests import BUILDERS

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _dicom(name: str) -> Path:
    pydicom_data = pytest.importorskip("pydicom.data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = pydicom_data.get_testdata_file(name)
    if path is None:
        pytest.skip(f"pydicom test file {name} is not installed")
    return Path(path)


def test_dataset_names_match_the_builders():
    assert tuple(sorted(BUILDERS)) == DATASETS


def test_dicom_convert_exit_codes_and_failure_report(tmp_path, capsys):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(_dicom("6154"), src / "a.dcm")
    assert main(["dicom", "convert", str(src), str(tmp_path / "out"), "--quiet"]) == 0
    assert (tmp_path / "out" / "a.png").is_file() and capsys.readouterr().out == ""
    (src / "junk.dcm").write_bytes(b"\x00" * 10)
    assert main(["dicom", "convert", str(src), str(tmp_path / "out")]) == 1
    cap = capsys.readouterr()
    assert "converted 0, skipped 1 already finished, failed 1" in cap.out
    assert "could not convert junk.dcm: not a readable DICOM file" in cap.err
    assert main(["dicom", "convert", str(tmp_path / "nope"), str(tmp_path / "o2")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_manifest_and_overlap_commands(tmp_path, capsys):
    ker = SHARED / "kermany_pediatric_pneumonia_test224"
    if not ker.exists():
        pytest.skip(f"shared data {ker} is absent")
    out = tmp_path / "kermany.csv"
    assert main(["manifest", "kermany", str(ker), "--out", str(out), "--quiet"]) == 0
    assert json.loads(out.with_suffix(".json").read_text())["n_rows"] == 624
    assert main(["manifest", "kermany", str(ker), "--out", str(out)]) == 2  # exists, no --overwrite
    assert main(["manifest", "kermany", str(ker), "--out", str(out), "--n-studies", "5"]) == 2
    assert "does not apply" in capsys.readouterr().err
    # overlap of a small manifest against a planted byte copy of one of its images
    small = pd.read_csv(out).head(20)
    small.to_csv(tmp_path / "small.csv", index=False)
    shutil.copy(small["path"][0], tmp_path / "copy.jpeg")
    pd.DataFrame({"image_id": ["copy"], "dataset": ["planted"], "path": [str(tmp_path / "copy.jpeg")],
                  "label": [0], "negative_group": [""], "split": ["x"], "patient_id": [""]}).to_csv(
        tmp_path / "planted.csv", index=False)
    res = tmp_path / "ov"
    assert main(["overlap", str(tmp_path / "small.csv"), str(tmp_path / "planted.csv"), "--out", str(res),
                 "--quiet"]) == 0
    ex = pd.read_csv(res / "exclusion.csv")
    assert list(ex.columns) == ["dataset", "image_id", "path", "reason"]
    assert {"copy", small["image_id"][0]} <= set(ex["image_id"])
    assert main(["overlap", str(tmp_path / "small.csv"), "--out", str(res)]) == 2  # exists
    assert main(["overlap", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o3")]) == 2
