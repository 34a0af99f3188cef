"""`medaudit dicom convert`, `medaudit manifest` and `medaudit overlap` run in-process."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
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


def test_manifest_overwrite_replaces_only_a_manifest_medaudit_wrote(tmp_path, capsys):
    """Probe finding: `manifest --overwrite` replaced any file, a spec included, and its .json
    beside it; only a manifest medaudit wrote (with its counts file) is replaced now."""
    ker = SHARED / "kermany_pediatric_pneumonia_test224"
    if not ker.exists():
        pytest.skip(f"shared data {ker} is absent")
    run = ["manifest", "kermany", str(ker), "--quiet", "--overwrite", "--out"]
    (tmp_path / "mine.csv").write_text("mine\n")
    (tmp_path / "spec.yaml").write_text("scores: x.csv\n")
    (tmp_path / "m3.json").write_text('{"mine": 1}\n')
    assert main([*run, str(tmp_path / "mine.csv")]) == 2
    assert "is not a manifest medaudit wrote" in capsys.readouterr().err
    assert main([*run, str(tmp_path / "spec.yaml")]) == 2
    assert main([*run, str(tmp_path / "m3.csv")]) == 2
    assert "'m3.json' exists and is not the counts file" in capsys.readouterr().err.replace(
        str(tmp_path) + "/", "")
    assert (tmp_path / "mine.csv").read_text() == "mine\n"
    assert (tmp_path / "spec.yaml").read_text() == "scores: x.csv\n"
    assert (tmp_path / "m3.json").read_text() == '{"mine": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m3.json", "mine.csv", "spec.yaml"]
    for bad, says in ((str(tmp_path / "d") + "/", "names a folder"),
                      (str(tmp_path / "q.json"), "ends in .json")):
        assert main([*run, bad]) == 2 and says in capsys.readouterr().err
    ok = tmp_path / "k.csv"
    assert main([*run, str(ok)]) == 0 and main([*run, str(ok)]) == 0  # its own: replaced


def test_manifest_help_examples_use_options_their_dataset_takes():
    import inspect
    import shlex

    from medaudit.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["manifest"]
    lines = [ln.strip() for ln in sub.epilog.splitlines() if ln.strip().startswith("medaudit manifest")]
    assert lines
    flags = {"--no-expect-counts": "expect_counts", "--no-require-files": "require_files",
             "--n-studies": "n_studies", "--seed": "rng"}
    for line in lines:
        words = shlex.split(line.split("  ")[0])
        params = inspect.signature(BUILDERS[words[2]]).parameters
        assert all(flags[w] in params for w in words if w in flags), line


@pytest.mark.parametrize("dataset, folder, what", [
    ("kermany", "tbx11k_tb_positive_subset", "a table there has no column 'path'"),
    ("tbx11k_tb_subset", "kermany_pediatric_pneumonia_test224", "a table there has no column 'image'"),
    ("nih_810", "kermany_pediatric_pneumonia_test224", "no such file or directory: "),
])
def test_a_root_of_another_dataset_is_one_line_naming_what_was_looked_for(dataset, folder, what,
                                                                          tmp_path, capsys):
    # probe finding: a traceback ending in KeyError: 'path' (or a bare [Errno 2])
    root = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / folder
    if not root.is_dir():
        pytest.skip(f"shared data {root} is absent")
    assert main(["manifest", dataset, str(root), "--out", str(tmp_path / "m.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and "Errno" not in err, err
    assert f"does not have the layout of dataset {dataset!r} ({what}" in err
    assert not (tmp_path / "m.csv").exists()


def test_a_manifest_of_medaudit_manifest_is_a_scoring_manifest(tmp_path):
    # probe finding: `medaudit score` refused `medaudit manifest`'s output ("missing column(s)
    # ['cohort']"); its dataset column now names the cohort
    from medaudit.adapters.zeroshot import read_manifest

    root = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / \
        "kermany_pediatric_pneumonia_test224"
    if not root.is_dir():
        pytest.skip(f"shared data {root} is absent")
    out = tmp_path / "k.csv"
    assert main(["manifest", "kermany", str(root), "--out", str(out), "--quiet"]) == 0
    raw = pd.read_csv(out, dtype=str, keep_default_na=False)
    t = read_manifest(out)
    assert len(t) == len(raw) and set(t["cohort"]) == {"kermany"}
    assert t["image_id"].tolist() == raw["image_id"].tolist()
    assert t["label"].tolist() == raw["label"].astype(int).tolist()


def test_overlap_reads_relative_image_paths_against_their_manifest(tmp_path, monkeypatch, capsys):
    # probe finding: the same manifest hashed its images from its own folder and reported
    # "file not found" for every row from another (paths were read against the working folder)
    from PIL import Image

    d = tmp_path / "data"
    d.mkdir()
    rng = np.random.default_rng(0)
    for k in range(3):
        Image.fromarray(rng.integers(0, 255, (40, 40), dtype=np.uint8)).save(d / f"i{k}.png")
    pd.DataFrame({"image_id": ["a", "b"], "dataset": "one", "path": ["i0.png", "i1.png"]}).to_csv(
        d / "one.csv", index=False)
    pd.DataFrame({"image_id": ["c"], "dataset": "two", "path": [str(d / "i0.png")]}).to_csv(
        d / "two.csv", index=False)
    monkeypatch.chdir(tmp_path)  # not the manifests' folder
    assert main(["overlap", "data/one.csv", "data/two.csv", "--out", "ov", "--quiet"]) == 0
    hashes = pd.read_csv(tmp_path / "ov" / "hashes.csv", keep_default_na=False)
    assert (hashes["error"] == "").all()
    pairs = pd.read_csv(tmp_path / "ov" / "pairs.csv")
    assert set(zip(pairs["image_a"], pairs["image_b"], strict=True)) == {("a", "c")}  # one file
    # and they are written as the manifest gives them, whatever folder the command ran in
    # (probe finding: 'data/i0.png' from here, 'i0.png' from data/), errors included
    assert hashes["path"].tolist()[:2] == ["i0.png", "i1.png"]
    (d / "bad.png").write_bytes(b"not an image")
    pd.DataFrame({"image_id": ["x"], "dataset": "three", "path": ["bad.png"]}).to_csv(
        d / "three.csv", index=False)
    assert main(["overlap", "data/one.csv", "data/three.csv", "--out", "ov2", "--quiet"]) == 1
    monkeypatch.chdir(d)
    assert main(["overlap", "one.csv", "three.csv", "--out", str(tmp_path / "ov3"), "--quiet"]) == 1
    for name in ("hashes.csv", "pairs.csv", "exclusion.csv", "overlap.json"):
        assert (tmp_path / "ov2" / name).read_bytes() == (tmp_path / "ov3" / name).read_bytes(), name
    assert "'bad.png'" in (tmp_path / "ov2" / "hashes.csv").read_text()


def test_overlap_names_a_manifest_given_twice_and_empty_cells(tmp_path, capsys):
    """Probe findings: the same manifest twice gave "(dataset, image_id) must be unique"
    naming no file; an empty dataset cell was a group of its own, an empty path the
    working folder ("Is a directory")."""
    from PIL import Image

    Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(tmp_path / "a.png")
    pd.DataFrame({"image_id": ["a"], "dataset": "d", "path": ["a.png"]}).to_csv(
        tmp_path / "m.csv", index=False)
    assert main(["overlap", str(tmp_path / "m.csv"), str(tmp_path / "m.csv"), "--out",
                 str(tmp_path / "o1"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "m.csv' and '" in err and "both list image 'a' of dataset 'd'" in err
    for col in ("dataset", "path"):
        t = pd.DataFrame({"image_id": ["a", "b"], "dataset": "d", "path": ["a.png", "a.png"]})
        t.loc[1, col] = ""
        t.to_csv(tmp_path / "e.csv", index=False)
        assert main(["overlap", str(tmp_path / "e.csv"), "--out", str(tmp_path / f"o-{col}"),
                     "--quiet"]) == 2
        assert f"column '{col}' is empty at {tmp_path / 'e.csv'} line 3;" in capsys.readouterr().err
