"""DICOM → PNG on real pydicom / pydicom-data files, each step against a slow per-pixel witness.

The witness is written from the standard, not from pydicom: modality rescale (PS3.3 C.11.1.1.2),
LUT lookup with clamping (C.11.1 / C.11.2.1.1), the LINEAR window (C.11.2.1.2.1), padding
(C.7.5.1.1.2), then methods.md M0.3's min–max over valid pixels, MONOCHROME1 inversion and
invalid → 0.  Window outputs use y in [0, 1]; the min–max step makes the output range irrelevant.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

pydicom = pytest.importorskip("pydicom")
from PIL import Image  # noqa: E402
from pydicom.data import get_testdata_file  # noqa: E402

from medaudit.exceptions import MedauditError  # noqa: E402
from medaudit.imaging import dicom as dc  # noqa: E402


def _file(name: str) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydicom warns when its online index is unreachable
        path = get_testdata_file(name)
    if path is None:
        pytest.skip(f"pydicom test file {name} is not installed (pydicom-data missing)")
    return Path(path)


def _lut(seq_item) -> tuple[int, int, list[int]]:
    """(first mapped value, number of entries, entries) of a LUT item (PS3.3 C.11.1.1.1)."""
    n, first, _bits = (int(v) for v in seq_item.LUTDescriptor)
    n = n or 65536
    value = seq_item["LUTData"].value
    # OW data arrive as little-endian bytes (these files are little endian); US as a list
    if isinstance(value, bytes):
        return first, n, list(struct.unpack(f"<{n}H", value[: 2 * n]))
    data = [int(v) for v in value]
    return first, n, data


def _lookup(x: float, first: int, n: int, data: list[int]) -> float:
    if x < first:
        return float(data[0])
    if x >= first + n - 1:
        return float(data[n - 1])
    return float(data[int(x) - first])


def _window(x: float, c: float, w: float) -> float:
    """PS3.3 C.11.2.1.2.1, LINEAR, output range [0, 1]."""
    if x <= c - 0.5 - (w - 1) / 2:
        return 0.0
    if x > c - 0.5 + (w - 1) / 2:
        return 1.0
    return (x - (c - 0.5)) / (w - 1) + 0.5


def _witness_value(raw: int, ds) -> float:
    if "ModalityLUTSequence" in ds:
        v = _lookup(raw, *_lut(ds.ModalityLUTSequence[0]))
    elif "RescaleSlope" in ds:
        v = raw * float(ds.RescaleSlope) + float(ds.RescaleIntercept)
    else:
        v = float(raw)
    if "VOILUTSequence" in ds:
        return _lookup(v, *_lut(ds.VOILUTSequence[0]))
    if "WindowCenter" in ds:
        c = ds.WindowCenter[0] if ds["WindowCenter"].VM > 1 else ds.WindowCenter
        w = ds.WindowWidth[0] if ds["WindowWidth"].VM > 1 else ds.WindowWidth
        return _window(v, float(c), float(w))
    return v


def _witness(ds, positions=None):
    """Slow conversion at ``positions`` (default: every pixel) of the flattened image."""
    raw = ds.pixel_array
    pad = ds.get("PixelPaddingValue")
    flat = raw.ravel().tolist()
    # lo/hi over the valid pixels: evaluate each distinct valid stored value once
    vals = [_witness_value(v, ds) for v in set(flat) if pad is None or v != pad]
    lo, hi = min(vals), max(vals)
    out = {}
    for k in (range(len(flat)) if positions is None else positions):
        v = flat[k]
        if pad is not None and v == pad:
            out[k] = 0
            continue
        x = 0.0 if hi == lo else (_witness_value(v, ds) - lo) / (hi - lo)
        if ds.PhotometricInterpretation == "MONOCHROME1":
            x = 1.0 - x
        out[k] = round(255 * x)  # Python rounds half to even, as np.rint does
    return out


def _sample(n_pixels: int, k: int = 3000, seed: int = 0):
    if n_pixels <= 20_000:
        return None
    return np.random.default_rng(seed).choice(n_pixels, size=k, replace=False).tolist()


def _compare(ours: np.ndarray, expected: dict[int, int]) -> None:
    flat = ours.ravel()
    idx = np.fromiter(expected, dtype=np.int64)
    exp = np.fromiter(expected.values(), dtype=np.int64)
    diff = np.abs(flat[idx].astype(np.int64) - exp)
    # float rounding at exact .5 boundaries may differ by one level; nothing else may
    assert diff.max() <= 1
    assert (diff == 0).mean() >= 0.999


@pytest.mark.parametrize("name", ["6154", "mlut_18.dcm", "vlut_04.dcm", "CT_small.dcm"])
def test_small_files_match_the_per_pixel_witness(name):
    ds = pydicom.dcmread(_file(name))
    got = dc.convert_dataset(ds)
    ref = pydicom.dcmread(_file(name))
    _compare(got.pixels, _witness(ref, positions=_sample(got.pixels.size)))
    assert got.pixels.dtype == np.uint8 and got.pixels.shape == ref.pixel_array.shape


def test_cr_rescale_window_monochrome1_is_exact_and_inverted():
    # 6154: CR, slope 0.684, intercept 200, window 1600/2800, MONOCHROME1 (pydicom's own test file)
    ds = pydicom.dcmread(_file("6154"))
    got = dc.convert_dataset(ds)
    ref = _witness(pydicom.dcmread(_file("6154")))
    assert np.array_equal(got.pixels.ravel(), np.fromiter(ref.values(), dtype=np.uint8))
    p = got.provenance
    assert p["modality_transform"] == {"kind": "rescale", "slope": 0.684, "intercept": 200.0}
    assert p["voi_transform"]["kind"] == "window" and p["voi_transform"]["center"] == 1600.0
    assert p["inverted"] is True
    # inversion: the largest stored value becomes the darkest output pixel
    raw = ds.pixel_array
    assert got.pixels.ravel()[raw.argmax()] == got.pixels.min()
    assert got.pixels.min() == 0 and got.pixels.max() == 255


@pytest.mark.parametrize("name", ["RG1_UNCR.dcm", "RG3_UNCR.dcm"])
def test_real_cr_radiographs_match_on_sampled_pixels(name):
    # RG1: chest PA CR, MONOCHROME1, 15 bits, window 15000/30000; RG3: extremity CR, 10 bits
    ds = pydicom.dcmread(_file(name))
    got = dc.convert_dataset(ds)
    assert got.provenance["photometric_interpretation"] == "MONOCHROME1"
    assert got.provenance["voi_transform"]["kind"] == "window"
    _compare(got.pixels, _witness(pydicom.dcmread(_file(name)), positions=_sample(got.pixels.size)))


def test_ct_padding_is_excluded_from_the_range_and_set_to_zero():
    # 693_UNCR: CT, rescale -1024, window 40/100, PixelPaddingValue -2000 on 55,772 pixels
    ds = pydicom.dcmread(_file("693_UNCR.dcm"))
    raw = ds.pixel_array
    got = dc.convert_dataset(ds)
    pad = raw == -2000
    assert got.provenance["padding"] == {"value": -2000, "range_limit": None, "n_pixels": int(pad.sum())}
    assert pad.sum() == 55772
    assert (got.pixels[pad] == 0).all()
    rng = np.random.default_rng(1)
    pos = np.concatenate([rng.choice(np.flatnonzero(pad.ravel()), 200, replace=False),
                          rng.choice(np.flatnonzero(~pad.ravel()), 3000, replace=False)]).tolist()
    _compare(got.pixels, _witness(pydicom.dcmread(_file("693_UNCR.dcm")), positions=pos))
    # without the window the padded pixels would set the range; masked, they do not
    nowin = pydicom.dcmread(_file("693_UNCR.dcm"))
    del nowin.WindowCenter, nowin.WindowWidth
    res = dc.convert_dataset(nowin)
    assert res.provenance["valid_min"] == float(raw[~pad].min()) - 1024.0
    del nowin.PixelPaddingValue
    assert dc.convert_dataset(nowin).provenance["valid_min"] == -2000.0 - 1024.0


def test_padding_range_limit_either_order():
    for limit in (-1500, -2500):
        ds = pydicom.dcmread(_file("693_UNCR.dcm"))
        raw = ds.pixel_array
        ds.PixelPaddingRangeLimit = limit
        lo, hi = sorted((-2000, limit))
        got = dc.convert_dataset(ds)
        mask = (raw >= lo) & (raw <= hi)
        assert got.provenance["padding"]["n_pixels"] == int(mask.sum())
        assert (got.pixels[mask] == 0).all()


def _float_dataset(values: np.ndarray):
    ds = pydicom.dcmread(_file("CT_small.dcm"))
    for kw in ("PixelData", "RescaleSlope", "RescaleIntercept", "PixelPaddingValue", "BitsStored",
               "HighBit", "PixelRepresentation", "WindowCenter", "WindowWidth"):
        if kw in ds:
            delattr(ds, kw)
    ds.BitsAllocated = 32
    ds.Rows, ds.Columns = values.shape
    ds.FloatPixelData = values.astype("<f4").tobytes()
    return ds


def test_non_finite_pixels_are_invalid():
    vals = np.arange(16.0).reshape(4, 4)
    vals[0, 0], vals[1, 1], vals[3, 3] = np.nan, np.inf, -np.inf
    got = dc.convert_dataset(_float_dataset(vals))
    finite = np.isfinite(vals)
    assert got.provenance["n_nonfinite"] == 3 and got.provenance["n_invalid"] == 3
    assert (got.pixels[~finite] == 0).all()
    # by hand: valid values 1..14 (0, 5, 15 are invalid) → lo 1, hi 14
    assert got.provenance["valid_min"] == 1.0 and got.provenance["valid_max"] == 14.0
    expected = np.rint(255 * (vals - 1) / 13)
    assert np.array_equal(got.pixels[finite], expected[finite].astype(np.uint8))


def test_constant_image_maps_to_zero_and_all_invalid_fails():
    got = dc.convert_dataset(_float_dataset(np.full((3, 3), 7.0)))
    assert got.provenance["constant_image"] is True and (got.pixels == 0).all()
    with pytest.raises(dc.DicomConversionError, match="no valid pixel"):
        dc.convert_dataset(_float_dataset(np.full((2, 2), np.nan)))


# ------------------------------------------------------------------------------ privacy
MARKERS = {
    "PatientName": "Zqxphiname^Wvuphigiven", "PatientID": "ZQXPHIID9931", "PatientBirthDate": "ZQXPHIBIRTH",
    "StudyDate": "ZQXPHISTUDYDATE", "InstitutionName": "ZQXPHIINSTITUTION", "AccessionNumber": "ZQXPHIACC",
    "ReferringPhysicianName": "ZQXPHIREFDOC", "OtherPatientIDs": "ZQXPHIOTHERID",
    "StudyDescription": "ZQXPHIDESCR", "InstitutionAddress": "ZQXPHIADDRESS",
}
NEEDLES = [m for v in MARKERS.values() for m in v.split("^")]


def _plant(src: Path, dst: Path) -> None:
    ds = pydicom.dcmread(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the planted dates are not valid DA values, on purpose
        for kw, val in MARKERS.items():
            setattr(ds, kw, val)
    item = pydicom.Dataset()
    item.AccessionNumber = "ZQXPHISEQACC"
    ds.RequestAttributesSequence = [item]
    ds.save_as(dst, enforce_file_format=False)


def test_no_identifying_value_reaches_any_output_log_or_error(tmp_path, capsys, caplog):
    from medaudit.cli.main import main

    src = tmp_path / "in"
    src.mkdir()
    _plant(_file("6154"), src / "good.dcm")
    _plant(_file("US1_UNCR.dcm"), src / "colour.dcm")  # fails: RGB
    _plant(_file("JPGLosslessP14SV1_1s_1f_8b.dcm"), src / "nodecoder.dcm")  # fails: no decoder
    trunc = src / "truncated.dcm"
    _plant(_file("CT_small.dcm"), trunc)
    data = trunc.read_bytes()
    trunc.write_bytes(data[: len(data) - 3000])  # fails: pixel data cut short
    needles = NEEDLES + ["ZQXPHISEQACC"]
    assert all(n.encode() in (src / "good.dcm").read_bytes() for n in needles)  # planted for real
    messages = []
    for f in sorted(src.iterdir()):
        try:
            dc.convert_file(f, tmp_path / f"{f.stem}.png")
        except dc.DicomConversionError as exc:
            messages.append(str(exc))
    assert len(messages) == 3
    caplog.clear()  # from here on everything logged comes from medaudit or pydicom under it
    caplog.set_level("DEBUG")
    rc = main(["dicom", "convert", str(src), str(tmp_path / "out"), "--verbose"])
    assert rc == 1
    captured = capsys.readouterr()
    blobs = [captured.out, captured.err, caplog.text, *messages]
    blobs += [p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*")
              if p.is_file() and p.parent != src]
    for needle in needles:
        for blob in blobs:
            assert needle.lower() not in blob.lower(), needle
    assert (tmp_path / "out" / "good.png").is_file()


def _malformed(src: Path, dst: Path, tag: int, value: str) -> None:
    """``src`` re-saved as implicit VR with ``value`` in ``tag``: read back with the dictionary
    VR (DS, IS, ...), the value cannot be parsed and pydicom's error would quote it."""
    from pydicom.uid import ImplicitVRLittleEndian

    ds = pydicom.dcmread(src)
    ds.add_new(tag, "LO", value)
    ds.file_meta.TransferSyntaxUID = ImplicitVRLittleEndian
    ds.save_as(dst, implicit_vr=True, little_endian=True, enforce_file_format=False)


def test_malformed_header_values_fail_the_file_not_the_batch_and_are_never_quoted(tmp_path, capsys):
    from medaudit.cli.main import main

    src = tmp_path / "in"
    src.mkdir()
    _malformed(_file("CT_small.dcm"), src / "slope.dcm", 0x00281053, "ZQXBADSLOPE")    # RescaleSlope
    _malformed(_file("CT_small.dcm"), src / "frames.dcm", 0x00280008, "ZQXBADFRAMES")  # NumberOfFrames
    _malformed(_file("CT_small.dcm"), src / "photo.dcm", 0x00280004, "ZQXBADPHOTO")    # Photometric
    shutil.copy(_file("CT_small.dcm"), src / "good.dcm")
    assert main(["dicom", "convert", str(src), str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    report = json.loads((tmp_path / "out" / "conversion_report.json").read_text())
    assert report["converted"] == ["good.dcm"] and report["n_failed"] == 3
    reasons = {f["source"]: f["reason"] for f in report["failures"]}
    assert "modality transformation (ValueError)" in reasons["slope.dcm"]
    assert "not a defined term" in reasons["photo.dcm"]
    blobs = [captured.out, captured.err] + [p.read_text() for p in (tmp_path / "out").rglob("*.json")]
    for needle in ("ZQXBADSLOPE", "ZQXBADFRAMES", "ZQXBADPHOTO"):
        assert not any(needle.lower() in b.lower() for b in blobs), needle
    # the public single-dataset call says the same
    with pytest.raises(dc.DicomConversionError) as info:
        dc.convert_dataset(pydicom.dcmread(src / "slope.dcm"))
    assert "ZQXBADSLOPE" not in str(info.value) and info.value.__cause__ is None


def test_constant_monochrome1_image_is_inverted_after_the_zero_map():
    # M0.3 order: hi == lo maps x' to 0 (step 6), then MONOCHROME1 inverts it (step 7) -> 255
    ds = _float_dataset(np.full((3, 3), 7.0))
    ds.PhotometricInterpretation = "MONOCHROME1"
    vals = np.full((3, 3), 7.0)
    vals[0, 0] = np.nan
    ds2 = _float_dataset(vals)
    ds2.PhotometricInterpretation = "MONOCHROME1"
    assert (dc.convert_dataset(ds).pixels == 255).all()
    got = dc.convert_dataset(ds2).pixels
    assert got[0, 0] == 0 and (got.ravel()[1:] == 255).all()  # invalid -> 0 after the inversion


# ------------------------------------------------------------------------------ folders
def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    for name in ("6154", "6247", "6278"):
        shutil.copy(_file(name), src / "sub" / name)
    shutil.copy(_file("CT_small.dcm"), src / "CT_small.dcm")
    shutil.copy(_file("MR_small.dcm"), src / "MR_small.dcm")
    return src


def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_folder_conversion_mirrors_layout_with_sidecars_and_is_deterministic(tmp_path):
    src = _folder(tmp_path)
    rep = dc.convert_folder(src, tmp_path / "a")
    dc.convert_folder(src, tmp_path / "b")
    assert len(rep.converted) == 5 and not rep.failures
    a = _tree(tmp_path / "a")
    assert a == _tree(tmp_path / "b")
    assert {"CT_small.png", "CT_small.json", "sub/6154.png", "sub/6154.json"} <= set(a)
    side = json.loads(a["sub/6154.json"])
    assert side["source"] == "sub/6154"
    assert side["source_sha256"] == hashlib.sha256((src / "sub" / "6154").read_bytes()).hexdigest()
    assert side["versions"]["pydicom"] == pydicom.__version__
    png = np.asarray(Image.open(tmp_path / "a" / "sub" / "6154.png"))
    assert png.dtype == np.uint8 and np.array_equal(
        png, dc.convert_dataset(pydicom.dcmread(src / "sub" / "6154")).pixels)


def test_resume_after_a_kill_recomputes_nothing_finished(tmp_path, monkeypatch):
    src = _folder(tmp_path)
    dc.convert_folder(src, tmp_path / "fresh")

    class Killed(Exception):
        pass

    def kill_after_two(i, n, name):
        if i == 2:
            raise Killed

    with pytest.raises(Killed):
        dc.convert_folder(src, tmp_path / "out", progress=kill_after_two)
    done = {p.name for p in (tmp_path / "out").rglob("*.png")}
    assert len(done) == 2
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*") if p.is_file()}
    calls = []
    real = dc.convert_dataset
    monkeypatch.setattr(dc, "convert_dataset", lambda ds: calls.append(1) or real(ds))
    rep = dc.convert_folder(src, tmp_path / "out")
    assert len(calls) == 3 and len(rep.skipped) == 2 and len(rep.converted) == 3
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())
    fresh, out = _tree(tmp_path / "fresh"), _tree(tmp_path / "out")
    fresh.pop("conversion_report.json"), out.pop("conversion_report.json")
    assert fresh == out
    # a changed source is converted again (its sidecar hash no longer matches)
    shutil.copy(_file("6247"), src / "sub" / "6154")
    calls.clear()
    rep = dc.convert_folder(src, tmp_path / "out")
    assert rep.converted == ("sub/6154",) and len(calls) == 1


def test_bad_files_are_reported_and_the_batch_continues(tmp_path):
    src = _folder(tmp_path)
    (src / "notes.txt").write_text("not dicom")
    shutil.copy(_file("emri_small.dcm"), src / "multi.dcm")
    shutil.copy(_file("JPGLosslessP14SV1_1s_1f_8b.dcm"), src / "jpegll.dcm")
    rep = dc.convert_folder(src, tmp_path / "out")
    reasons = dict(rep.failures)
    assert len(rep.converted) == 5
    assert "not a readable DICOM file" in reasons["notes.txt"]
    assert "multi-frame" in reasons["multi.dcm"]
    assert "could not decode" in reasons["jpegll.dcm"] and "JPEG Lossless" in reasons["jpegll.dcm"]
    report = json.loads((tmp_path / "out" / "conversion_report.json").read_text())
    assert report["n_failed"] == 3 and report["n_converted"] == 5


def test_bad_arguments_raise_clear_errors(tmp_path):
    with pytest.raises(MedauditError, match="does not exist"):
        dc.convert_folder(tmp_path / "nope", tmp_path / "out")
    src = _folder(tmp_path)
    with pytest.raises(MedauditError, match="inside the input folder"):
        dc.convert_folder(src, src / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MedauditError, match="no files"):
        dc.convert_folder(tmp_path / "empty", tmp_path / "out")
    # two inputs that would write the same output are both refused, neither overwritten
    shutil.copy(_file("CT_small.dcm"), src / "CT_small")
    rep = dc.convert_folder(src, tmp_path / "out2")
    assert {s for s, _ in rep.failures} == {"CT_small", "CT_small.dcm"}


def test_files_of_the_users_in_the_output_folder_are_never_replaced(tmp_path):
    """Probe finding: a PNG or JSON of the user's with an output's name was replaced without a
    flag. It is kept and that input is reported as failed, with the reason; medaudit's own
    earlier outputs are still redone or skipped as before."""
    src = _folder(tmp_path)
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "CT_small.png").write_bytes(b"MY PHOTO")
    (out / "MR_small.json").write_text("my json")
    (out / "sub" / "6154.png").write_bytes(b"mine too")
    (out / "sub" / "6154.json").write_text('{"output": "6154.png"}')  # not a medaudit sidecar
    rep = dc.convert_folder(src, out)
    reasons = dict(rep.failures)
    assert set(reasons) == {"CT_small.dcm", "MR_small.dcm", "sub/6154"}
    assert "no medaudit sidecar beside it" in reasons["CT_small.dcm"]
    assert "not a sidecar medaudit wrote" in reasons["MR_small.dcm"]
    assert rep.converted == ("sub/6247", "sub/6278")
    assert (out / "CT_small.png").read_bytes() == b"MY PHOTO"
    assert (out / "MR_small.json").read_text() == "my json"
    assert not (out / "MR_small.png").exists() and not (out / "CT_small.json").exists()
    assert (out / "sub" / "6154.png").read_bytes() == b"mine too"
    # medaudit's own conversion whose source changed is medaudit's to redo
    shutil.copy(_file("6154"), src / "sub" / "6247")
    again = dc.convert_folder(src, out)
    assert "sub/6247" in again.converted and "sub/6278" in again.skipped


def test_an_output_that_is_a_file_or_a_foreign_report_is_refused(tmp_path):
    src = _folder(tmp_path)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(MedauditError, match="exists and is not a folder"):
        dc.convert_folder(src, tmp_path / "afile")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "conversion_report.json").write_text("[1, 2]")
    with pytest.raises(MedauditError, match="not a conversion report medaudit wrote"):
        dc.convert_folder(src, tmp_path / "o")
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["conversion_report.json"]


def test_a_stop_between_sidecar_and_png_is_redone_not_taken_for_a_users_file(tmp_path, monkeypatch):
    """Probe finding: Ctrl-C between the PNG and its sidecar left a PNG without a sidecar,
    which every later run refused as a file of the user's.  The sidecar is written first now:
    a stop there leaves a medaudit sidecar without its PNG, which a rerun redoes; a killed
    write's temporary file is removed by the rerun.  Witness: an uninterrupted run's bytes."""
    src = _folder(tmp_path)
    dc.convert_folder(src, tmp_path / "fresh")
    real = dc._atomic_write
    written = []

    def stop_at_the_png(path, data):
        if path.suffix == ".png" and path.name == "6247.png":
            # as a kill mid-write leaves it: a temporary file of the PNG, then the stop
            (path.parent / f".{path.name}.abcd1234.tmp").write_bytes(data[:10])
            raise KeyboardInterrupt
        written.append(path.name)
        real(path, data)

    monkeypatch.setattr(dc, "_atomic_write", stop_at_the_png)
    with pytest.raises(KeyboardInterrupt):
        dc.convert_folder(src, tmp_path / "out")
    sub = tmp_path / "out" / "sub"
    assert (sub / "6247.json").is_file() and not (sub / "6247.png").exists()
    assert "6247.json" in written  # the sidecar came first
    monkeypatch.setattr(dc, "_atomic_write", real)
    rep = dc.convert_folder(src, tmp_path / "out")
    assert "sub/6247" in rep.converted and not rep.failures
    assert not list(sub.glob(".*.tmp"))
    fresh, out = _tree(tmp_path / "fresh"), _tree(tmp_path / "out")
    fresh.pop("conversion_report.json"), out.pop("conversion_report.json")
    assert fresh == out


def test_a_blocked_output_folder_or_the_reports_name_fails_that_file_not_the_batch(tmp_path):
    """Probe findings: a file of the user's where an output folder must go stopped the whole
    batch with [Errno 17]; an input named conversion_report.dcm wrote its sidecar over the
    folder's report."""
    src = _folder(tmp_path)
    shutil.copy(_file("CT_small.dcm"), src / "conversion_report.dcm")
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").write_text("a file of the user's")
    rep = dc.convert_folder(src, out)
    reasons = dict(rep.failures)
    assert set(reasons) == {"sub/6154", "sub/6247", "sub/6278", "conversion_report.dcm"}
    assert "cannot create the folder 'sub' in the output folder" in reasons["sub/6154"]
    assert "the folder's conversion report; rename the input" in reasons["conversion_report.dcm"]
    assert set(rep.converted) == {"CT_small.dcm", "MR_small.dcm"}
    assert (out / "sub").read_text() == "a file of the user's"
    report = json.loads((out / "conversion_report.json").read_text())
    assert report["n_failed"] == 4 and report["n_converted"] == 2
    assert dc.convert_folder(src, out).failures == rep.failures  # and so again, unchanged


def test_a_file_that_is_not_dicom_gets_no_advice_only_python_can_follow(tmp_path):
    # probe finding: the reason ended with pydicom's "Use force=True to force reading."
    src = tmp_path / "in"
    src.mkdir()
    (src / "x.dcm").write_text("hello")
    (src / "empty.dcm").write_bytes(b"")
    rep = dc.convert_folder(src, tmp_path / "out")
    reasons = dict(rep.failures)
    assert set(reasons) == {"x.dcm", "empty.dcm"}
    for why in reasons.values():
        assert why.startswith("not a readable DICOM file (InvalidDicomError: ") and "force" not in why


def test_symbolic_links_passed_over_are_listed_not_skipped_unsaid(tmp_path):
    # probe finding: a linked folder and a dangling link were left out without a word
    src = _folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(_file("CT_small.dcm"), elsewhere / "e.dcm")
    (src / "linkdir").symlink_to(elsewhere, target_is_directory=True)
    (src / "dangling.dcm").symlink_to(tmp_path / "nowhere.dcm")
    (src / "linked.dcm").symlink_to(src / "CT_small.dcm")  # a linked file is converted
    rep = dc.convert_folder(src, tmp_path / "out")
    reasons = dict(rep.failures)
    assert set(reasons) == {"linkdir", "dangling.dcm"}
    assert "link to a folder is not followed" in reasons["linkdir"]
    assert "target does not exist" in reasons["dangling.dcm"]
    assert "linked.dcm" in rep.converted and len(rep.converted) == 6


def test_converted_files_get_the_umask_permissions(tmp_path):
    # review: the private writer's mkstemp left PNGs and sidecars 0600; the shared
    # atomic_write_bytes gives the permissions of the umask, as every other output
    import os

    old = os.umask(0o022)
    try:
        src = _folder(tmp_path)
        dc.convert_folder(src, tmp_path / "out")
    finally:
        os.umask(old)
    for p in ("CT_small.png", "CT_small.json", "sub/6154.png"):
        assert (tmp_path / "out" / p).stat().st_mode & 0o777 == 0o644, p


def test_a_source_that_changed_and_now_fails_leaves_no_stale_png(tmp_path):
    """Probe finding: x.dcm converted, then replaced by a truncated copy: the second run
    reported the failure but left the PNG and sidecar of the former contents for the next
    step to read as this file's.  medaudit's own outputs of that source are removed."""
    src = tmp_path / "in"
    src.mkdir()
    good = _file("CT_small.dcm").read_bytes()
    (src / "x.dcm").write_bytes(good)
    (src / "y.dcm").write_bytes(good)
    out = tmp_path / "out"
    assert len(dc.convert_folder(src, out).converted) == 2
    (src / "x.dcm").write_bytes(good[:3000])
    report = dc.convert_folder(src, out)
    assert [f[0] for f in report.failures] == ["x.dcm"] and report.skipped == ("y.dcm",)
    assert "were removed" in report.failures[0][1]
    assert not (out / "x.png").exists() and not (out / "x.json").exists()
    assert (out / "y.png").exists() and (out / "y.json").exists()
    # a PNG of the user's under that name is never touched (not medaudit's: no sidecar)
    (out / "x.png").write_bytes(b"mine")
    report = dc.convert_folder(src, out)
    assert (out / "x.png").read_bytes() == b"mine" and "left as it is" in report.failures[0][1]


def test_a_conversion_of_the_same_bytes_is_kept_when_redoing_it_fails(tmp_path, monkeypatch):
    """Only outputs of another version of the source go: a conversion by an earlier method
    whose redo fails for a reason of this machine (a decoder gone) keeps its PNG."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "y.dcm").write_bytes(_file("CT_small.dcm").read_bytes())
    out = tmp_path / "out"
    dc.convert_folder(src, out)
    png = (out / "y.png").read_bytes()

    def fails(*a, **k):
        raise dc.DicomConversionError("no decoder for this transfer syntax")

    monkeypatch.setattr(dc, "METHOD_VERSION", "a later method")  # the output is to be redone
    monkeypatch.setattr(dc, "convert_file", fails)
    report = dc.convert_folder(src, out)
    assert report.failures == (("y.dcm", "no decoder for this transfer syntax"),)
    assert (out / "y.png").read_bytes() == png and (out / "y.json").exists()


def test_a_file_without_its_part_10_header_converts_as_the_same_image(tmp_path):
    """Older exports write the data set alone (no preamble, no 'DICM', no file meta): read
    as such when it then holds an image; the PNG equals the one of the full file.  A file
    without pixel data, or not DICOM at all, is refused as before."""
    import struct

    full = _file("CT_small.dcm").read_bytes()
    assert full[128:132] == b"DICM"
    group_length = struct.unpack("<I", full[140:144])[0]  # (0002,0000) UL, explicit VR LE
    src = tmp_path / "in"
    src.mkdir()
    (src / "bare.dcm").write_bytes(full[144 + group_length:])
    (src / "ref.dcm").write_bytes(full)
    shutil.copy(_file("no_meta.dcm"), src / "no_pixels.dcm")  # pydicom's: no image in it
    (src / "noise.dcm").write_bytes(bytes(range(256)) * 8)
    report = dc.convert_folder(src, tmp_path / "out")
    assert sorted(report.converted) == ["bare.dcm", "ref.dcm"]
    assert (tmp_path / "out" / "bare.png").read_bytes() == (tmp_path / "out" / "ref.png").read_bytes()
    side = json.loads((tmp_path / "out" / "bare.json").read_text())
    assert any("without a Part-10 file meta header" in m for m in side["library_messages"])
    why = dict(report.failures)
    assert why["no_pixels.dcm"].startswith("not a readable DICOM file (InvalidDicomError")
    assert why["noise.dcm"].startswith("not a readable DICOM file")


def test_every_failure_reason_is_one_line(tmp_path):
    """Probe finding: a decoder failure listed every plugin it tried on a line of its own.
    Files pydicom ships whose decoders may be missing here (JPEG-LS, 12-bit JPEG): whatever
    fails, fails on one line."""
    src = tmp_path / "in"
    src.mkdir()
    for name in ("MR_small_jpeg_ls_lossless.dcm", "JPEG-lossy.dcm", "JPEG2000.dcm"):
        shutil.copy(_file(name), src / name)
    report = dc.convert_folder(src, tmp_path / "out")
    assert len(report.converted) + len(report.failures) == 3
    for name, why in report.failures:
        assert "\n" not in why and why.startswith("could not decode the pixel data"), (name, why)


def test_a_decoder_message_of_many_lines_becomes_one(monkeypatch):
    """The test above checks nothing where every decoder is installed: here a decoder fails
    for certain, with the many-line message pydicom's plugin list gives."""
    def failing(self):
        raise RuntimeError("Unable to decode the pixel data:\n  gdcm: not installed\n"
                           "  pylibjpeg: plugin missing\n  pillow: cannot identify")

    monkeypatch.setattr(pydicom.dataset.Dataset, "pixel_array", property(failing))
    with pytest.raises(dc.DicomConversionError) as e:
        dc.convert_dataset(pydicom.dcmread(_file("6154")))
    why = str(e.value)
    assert why.startswith("could not decode the pixel data (transfer syntax ") and "\n" not in why
    assert "gdcm: not installed" in why  # the decoder's own words are kept, on one line


@pytest.mark.parametrize("width, function, ok", [(0.0, "LINEAR", False), (-5.0, "LINEAR", False),
                                                 (0.5, "LINEAR", False), (1.0, "LINEAR", True),
                                                 (0.5, "SIGMOID", True), (0.0, "SIGMOID", False)])
def test_a_window_width_dicom_does_not_allow_is_named(width, function, ok):
    """Probe finding: Window Width 0 or negative gave "malformed header ... (ValueError)"
    naming no tag.  PS3.3 C.11.2.1.2: at least 1 for LINEAR, above 0 for the others."""
    ds = pydicom.dcmread(_file("6154"))
    ds.WindowWidth = width
    ds.VOILUTFunction = function
    if ok:
        assert dc.convert_dataset(ds).provenance["voi_transform"]["width"] == width
    else:
        with pytest.raises(dc.DicomConversionError,
                           match=r"^Window Width \(0028,1051\) is .*; DICOM requires"):
            dc.convert_dataset(ds)
