"""DICOM → 8-bit PNG exactly as paper 000 specifies (methods.md M0.3).

Steps, in order: read the stored pixels; mark padding (``PixelPaddingValue`` and, when present,
``PixelPaddingRangeLimit``, compared with the *stored* values as PS3.3 C.7.5.1.1.2 defines them);
apply the modality transformation (Modality LUT or rescale, :func:`pydicom.pixels.apply_modality_lut`);
apply the first VOI LUT or window when the header has one (:func:`pydicom.pixels.apply_voi_lut`,
a LUT preferred over a window as pydicom does); mark non-finite values invalid; min–max scale over the
valid pixels only (hi == lo maps to 0); invert MONOCHROME1 *after* the VOI step; set invalid pixels to 0;
``rint(255·x)`` to uint8.

Privacy: no header value that could identify a patient (names, IDs, dates, institution, accession,
…) is written to a PNG, a sidecar, a report, a log line or an exception message.  pydicom's own
warnings and log records raised while a file is processed are captured, scrubbed of every such
value and kept in the sidecar; messages of errors are scrubbed the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from medaudit.exceptions import MedauditError
from medaudit.io.messages import one_line
from medaudit.io.output import atomic_write_bytes, atomic_write_temps, file_sha256, json_object

__all__ = [
    "DicomConversionError",
    "ConvertedImage",
    "FolderReport",
    "convert_dataset",
    "convert_file",
    "convert_folder",
    "list_inputs",
    "METHOD_VERSION",
]

#: bumped whenever the pixel pipeline changes, so that resumed runs never reuse stale outputs
METHOD_VERSION = "medaudit-dicom-png/1 (methods.md M0.3)"

#: keywords whose values must never leave this module (plus every PN, DA, DT and TM element)
PHI_KEYWORDS = (
    "PatientName", "PatientID", "OtherPatientIDs", "OtherPatientNames", "PatientBirthDate",
    "PatientBirthTime", "PatientAge", "PatientAddress", "PatientTelephoneNumbers",
    "PatientMotherBirthName", "IssuerOfPatientID", "MedicalRecordLocator", "InstitutionName",
    "InstitutionAddress", "InstitutionalDepartmentName", "AccessionNumber", "StudyID",
    "ReferringPhysicianName", "PerformingPhysicianName", "OperatorsName", "NameOfPhysiciansReadingStudy",
    "StationName", "DeviceSerialNumber", "StudyInstanceUID", "SeriesInstanceUID", "SOPInstanceUID",
    "FrameOfReferenceUID", "StudyDescription", "RequestingPhysician", "ImageComments",
    "AdditionalPatientHistory", "PatientComments", "EthnicGroup", "Occupation", "MilitaryRank",
    "BranchOfService", "CountryOfResidence", "RegionOfResidence", "PatientWeight", "PatientSize",
)
_PHI_VRS = {"PN", "DA", "DT", "TM"}
#: defined terms of PhotometricInterpretation (PS3.3 C.7.6.3.1.2): the only values echoed
_PHOTOMETRIC_TERMS = frozenset({"MONOCHROME1", "MONOCHROME2", "PALETTE COLOR", "RGB", "YBR_FULL",
                                "YBR_FULL_422", "YBR_PARTIAL_422", "YBR_PARTIAL_420", "YBR_ICT",
                                "YBR_RCT", "HSV", "ARGB", "CMYK", "XYB"})
#: values shorter than this are not scrubbed (a one- or two-character value such as "2" would
#: mangle every message while identifying nobody)
_MIN_SCRUB = 3


class DicomConversionError(MedauditError):
    """A DICOM file could not be converted; the message never contains a header value."""


@dataclass(frozen=True)
class ConvertedImage:
    """One converted image: the 8-bit pixels and how they were obtained (no identifying values)."""

    pixels: NDArray[np.uint8]
    provenance: dict[str, Any]


@dataclass(frozen=True)
class FolderReport:
    """Outcome of :func:`convert_folder`: files converted now, skipped as finished, and failures."""

    converted: tuple[str, ...]
    skipped: tuple[str, ...]
    failures: tuple[tuple[str, str], ...] = field(default=())

    @property
    def n_files(self) -> int:
        return len(self.converted) + len(self.skipped) + len(self.failures)

    def to_dict(self) -> dict[str, Any]:
        return {"n_files": self.n_files, "n_converted": len(self.converted),
                "n_skipped": len(self.skipped), "n_failed": len(self.failures),
                "converted": list(self.converted), "skipped": list(self.skipped),
                "failures": [{"source": s, "reason": r} for s, r in self.failures],
                "method": METHOD_VERSION}


# ----------------------------------------------------------------------------------- privacy
def _phi_values(ds: Any) -> list[str]:
    """Every string an identifying element of ``ds`` holds (recursing into sequences)."""
    out: set[str] = set()

    def add(value: Any) -> None:
        if value is None:
            return
        if isinstance(value, (list, tuple)) or type(value).__name__ == "MultiValue":
            for v in value:
                add(v)
            return
        text = str(value).strip()
        if len(text) >= _MIN_SCRUB:
            out.add(text)
            # names are also written with their components ("Doe^John" → "Doe", "John")
            for part in text.replace("=", "^").split("^"):
                if len(part.strip()) >= _MIN_SCRUB:
                    out.add(part.strip())

    def walk(d: Any) -> None:
        for elem in d:
            try:
                if elem.VR == "SQ":
                    for item in elem.value:
                        walk(item)
                elif elem.keyword in PHI_KEYWORDS or elem.VR in _PHI_VRS:
                    add(elem.value)
            except Exception:  # noqa: BLE001 - a value that cannot be read cannot be scrubbed or leaked
                continue

    with contextlib.suppress(Exception):
        walk(ds)
    # longest first so that a value containing another is removed whole
    return sorted(out, key=lambda s: (-len(s), s))


def _scrub(text: str, secrets: list[str], *, limit: int = 600) -> str:
    for s in secrets:
        text = text.replace(s, "[removed]")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@contextlib.contextmanager
def _quiet_pydicom(sink: list[str]) -> Iterator[None]:
    """Capture pydicom's warnings and log records into ``sink`` (they may quote header values)."""
    import pydicom.config as cfg

    logger = logging.getLogger("pydicom")

    class _Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            sink.append(record.getMessage())

    handler = _Catch()
    old = (logger.propagate, logger.handlers[:], cfg.settings.reading_validation_mode)
    logger.handlers[:] = [handler]
    logger.propagate = False
    # invalid values are not checked while reading: the check's warnings quote the value itself
    cfg.settings.reading_validation_mode = cfg.IGNORE
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        sink.extend(str(w.message) for w in caught)
    finally:
        logger.propagate, logger.handlers[:], cfg.settings.reading_validation_mode = old


# ------------------------------------------------------------------------------- pixel pipeline
def _padding_mask(raw: NDArray[Any], ds: Any) -> tuple[NDArray[np.bool_], dict[str, Any]]:
    if "PixelPaddingValue" not in ds:
        return np.zeros(raw.shape, dtype=bool), {"value": None, "range_limit": None, "n_pixels": 0}
    value = int(ds.PixelPaddingValue)
    limit = ds.get("PixelPaddingRangeLimit")
    if limit is None:
        mask = raw == value
    else:
        lo, hi = sorted((value, int(limit)))  # either order is allowed by the standard
        mask = (raw >= lo) & (raw <= hi)
    return mask, {"value": value, "range_limit": None if limit is None else int(limit),
                  "n_pixels": int(mask.sum())}


def _modality(raw: NDArray[Any], ds: Any) -> tuple[NDArray[Any], dict[str, Any]]:
    from pydicom.pixels import apply_modality_lut

    if ds.get("ModalityLUTSequence"):
        info: dict[str, Any] = {"kind": "modality_lut",
                                "lut_descriptor": [int(v) for v in ds.ModalityLUTSequence[0].LUTDescriptor]}
    elif "RescaleSlope" in ds and "RescaleIntercept" in ds:
        info = {"kind": "rescale", "slope": float(ds.RescaleSlope), "intercept": float(ds.RescaleIntercept)}
    else:
        info = {"kind": "none"}
    out = apply_modality_lut(raw, ds)
    # A VOI LUT indexes by integer input; an integral float result is made integral again so that
    # pydicom's LUT lookup is exact (it warns, rightly, on float input).
    if out.dtype.kind == "f" and np.isfinite(out).all() and np.array_equal(out, np.rint(out)):
        out = out.astype(np.int64)
    return out, info


def _voi(arr: NDArray[Any], ds: Any) -> tuple[NDArray[Any], dict[str, Any]]:
    from pydicom.pixels import apply_voi_lut

    has_lut = bool(ds.get("VOILUTSequence")) and all(
        ds.VOILUTSequence[0].get(k) is not None for k in ("LUTDescriptor", "LUTData"))
    has_window = ds.get("WindowCenter") is not None and ds.get("WindowWidth") is not None
    if has_lut:
        info: dict[str, Any] = {"kind": "voi_lut", "index": 0, "n_available": len(ds.VOILUTSequence),
                                "lut_descriptor": [int(v) for v in ds.VOILUTSequence[0].LUTDescriptor]}
    elif has_window:
        c, w = ds["WindowCenter"], ds["WindowWidth"]
        info = {"kind": "window", "index": 0, "n_available": int(c.VM),
                "center": float(c.value[0] if c.VM > 1 else c.value),
                "width": float(w.value[0] if w.VM > 1 else w.value),
                "function": str(ds.get("VOILUTFunction", "LINEAR")).upper()}
        # PS3.3 C.11.2.1.2: the width is at least 1 (LINEAR) or above 0 (the others); pydicom
        # would divide by it or raise a bare ValueError
        low = 1.0 if info["function"] == "LINEAR" else 0.0
        if not (np.isfinite(info["width"]) and (info["width"] >= low if low else info["width"] > 0)):
            raise DicomConversionError(
                f"Window Width (0028,1051) is {info['width']:g}; DICOM requires "
                f"{'at least 1' if low else 'above 0'} for VOI LUT Function {info['function']}. "
                "Fix the header or remove the window.")
    else:
        return arr, {"kind": "none"}
    return apply_voi_lut(arr, ds, index=0, prefer_lut=True), info


def convert_dataset(ds: Any) -> ConvertedImage:
    """Convert one pydicom ``Dataset`` to 8-bit grayscale pixels (M0.3).

    Parameters
    ----------
    ds : pydicom.Dataset
        A single-frame MONOCHROME1 or MONOCHROME2 image with pixel data.

    Returns
    -------
    ConvertedImage
        ``pixels`` (uint8, shape (rows, columns)) and ``provenance`` (which transformations
        were applied, photometric interpretation, shape, intensity range, pixel counts).

    Raises
    ------
    DicomConversionError
        No pixel data, a multi-frame or colour image, no decoder for the transfer syntax,
        or no valid pixel at all.  Messages never contain a header value.
    """
    stage = ["reading the header"]
    try:
        return _convert(ds, stage)
    except DicomConversionError as exc:
        # decoder messages are quoted: scrub them here too, not only in convert_file
        raise DicomConversionError(_scrub(str(exc), _phi_values(ds))) from None
    except Exception as exc:  # noqa: BLE001 - a malformed header fails in many ways
        # The message of such an error quotes the offending header value ("could not convert
        # string to float: '...'"), so only its type and the step are reported.
        raise DicomConversionError(
            f"malformed header or pixel data while {stage[0]} ({type(exc).__name__}); "
            "check the file with a DICOM validator.") from None


def _convert(ds: Any, stage: list[str]) -> ConvertedImage:
    """:func:`convert_dataset` itself; ``stage[0]`` names the step under way (for errors)."""
    if "PixelData" not in ds and "FloatPixelData" not in ds and "DoubleFloatPixelData" not in ds:
        raise DicomConversionError("the file has no pixel data (not an image object).")
    photometric = str(ds.get("PhotometricInterpretation", "")).strip().upper()
    if photometric not in ("MONOCHROME1", "MONOCHROME2"):
        # only a defined term is echoed: a free-text value could be anything
        shown = repr(photometric) if photometric in _PHOTOMETRIC_TERMS else (
            "(missing)" if not photometric else "(not a defined term)")
        raise DicomConversionError(
            f"photometric interpretation {shown} is not supported; only "
            "MONOCHROME1 and MONOCHROME2 radiographs are converted.")
    n_frames = int(ds.get("NumberOfFrames", 1) or 1)
    if n_frames != 1:
        raise DicomConversionError(f"multi-frame image ({n_frames} frames); only single-frame "
                                   "radiographs are converted.")
    tsyntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
    stage[0] = "decoding the pixel data"
    try:
        raw = ds.pixel_array
    except Exception as exc:  # noqa: BLE001 - decoder errors come in many types
        name = getattr(tsyntax, "name", str(tsyntax))
        # a decoder's message may list every plugin it tried, a line each: one line here
        raise DicomConversionError(f"could not decode the pixel data (transfer syntax {name}): "
                                   f"{type(exc).__name__}: {one_line(str(exc))}") from None
    if raw.ndim != 2:
        raise DicomConversionError(f"pixel array has shape {raw.shape}; expected one 2-D frame.")

    stage[0] = "reading the pixel padding"
    padding, pad_info = _padding_mask(raw, ds)
    stage[0] = "applying the modality transformation"
    values, mod_info = _modality(raw, ds)
    stage[0] = "applying the VOI transformation"
    values, voi_info = _voi(values, ds)
    stage[0] = "scaling the pixels"
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    valid = finite & ~padding
    if not valid.any():
        raise DicomConversionError("no valid pixel: every pixel is padding or non-finite.")
    lo, hi = float(values[valid].min()), float(values[valid].max())
    if hi > lo:
        x = (np.where(valid, values, lo) - lo) / (hi - lo)
    else:  # a constant image carries no contrast; mapped to 0 (methods.md M0.3 [AMBIG])
        x = np.zeros(values.shape)
    inverted = photometric == "MONOCHROME1"
    if inverted:
        x = 1.0 - x
    x[~valid] = 0.0  # after the inversion: invalid pixels are black in the output
    pixels = np.rint(255.0 * x).astype(np.uint8)
    prov = {
        "photometric_interpretation": photometric, "inverted": inverted,
        "shape": [int(s) for s in raw.shape], "stored_dtype": str(raw.dtype),
        "bits_stored": int(ds.get("BitsStored", 0) or 0),
        "pixel_representation": int(ds.get("PixelRepresentation", 0) or 0),
        "transfer_syntax": None if tsyntax is None else str(tsyntax),
        "modality_transform": mod_info, "voi_transform": voi_info, "padding": pad_info,
        "n_nonfinite": int((~finite).sum()), "n_invalid": int((~valid).sum()),
        "valid_min": lo, "valid_max": hi, "constant_image": not hi > lo,
    }
    return ConvertedImage(pixels=pixels, provenance=prov)


# ------------------------------------------------------------------------------- files


def _versions() -> dict[str, str]:
    import PIL
    import pydicom

    from medaudit import __version__

    return {"medaudit": __version__, "pydicom": pydicom.__version__, "numpy": np.__version__,
            "pillow": PIL.__version__}


def _atomic_write(path: Path, data: bytes) -> None:
    # the shared writer: temporary ``.NAME.XXXXXXXX.tmp`` removed on any exception, file
    # permissions of the umask (mkstemp alone left converted PNGs readable by their owner only)
    atomic_write_bytes(path, data, sync=False)


def _remove_stale_temps(path: Path) -> None:
    """Remove the temporary files :func:`_atomic_write` leaves when killed mid-write: a rerun
    converting ``path`` again owns them."""
    for p in atomic_write_temps(path):
        with contextlib.suppress(OSError):
            p.unlink()


def _png_bytes(pixels: NDArray[np.uint8]) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")  # no text chunks: nothing but pixels
    return buf.getvalue()


def convert_file(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
                 source_name: str | None = None) -> dict[str, Any]:
    """Convert one DICOM file to ``dst`` (PNG) and write its sidecar ``dst`` with suffix ``.json``.

    Both files are written atomically, the sidecar first: a run stopped between the two leaves
    a sidecar (medaudit's, so a rerun redoes it) without the PNG it names, never a PNG without
    its sidecar (which a rerun would have to take for a file of the user's).  A sidecar whose
    hashes match the source and the PNG means a finished conversion.  Returns the sidecar's
    content.

    Parameters
    ----------
    src, dst : path
        The DICOM file and the PNG to write (its folder must exist).
    source_name : str, optional
        How the sidecar names the source (default: the file name, never a header value).

    Raises
    ------
    DicomConversionError
        The file is not readable DICOM or cannot be converted (message scrubbed of header values).
    """
    import pydicom

    src, dst = Path(src), Path(dst)
    notes: list[str] = []
    secrets: list[str] = []
    try:
        with _quiet_pydicom(notes):
            try:
                ds = pydicom.dcmread(src)
            except Exception as exc:  # noqa: BLE001 - every reader failure is reported the same way
                # older exports write the data set without the Part-10 preamble and file
                # meta header: read as such only when it then holds an image (force=True
                # reads any file as something, so nothing less is accepted)
                ds = _headerless(src) if isinstance(exc, pydicom.errors.InvalidDicomError) else None
                if ds is None:
                    # pydicom's advice to its Python callers ("Use force=True to force
                    # reading.") is nothing a user of the command can act on
                    why = re.sub(r"\s*Use force=True to force reading\.?", "", str(exc)).strip()
                    raise DicomConversionError(
                        f"not a readable DICOM file ({type(exc).__name__}: {why})") from None
                notes.append("read without a Part-10 file meta header (no 'DICM' preamble): "
                             "the transfer syntax is taken as pydicom infers it")
            secrets = _phi_values(ds)
            converted = convert_dataset(ds)
    except DicomConversionError as exc:
        raise DicomConversionError(_scrub(str(exc), secrets)) from None
    png = _png_bytes(converted.pixels)
    sidecar = {
        "source": source_name if source_name is not None else src.name,
        "source_sha256": file_sha256(src),
        "output": dst.name,
        "output_sha256": hashlib.sha256(png).hexdigest(),
        "method": METHOD_VERSION,
        "versions": _versions(),
        "library_messages": [_scrub(m, secrets) for m in notes],
        **converted.provenance,
    }
    _atomic_write(dst.with_suffix(".json"),
                  (json.dumps(sidecar, sort_keys=True, indent=2) + "\n").encode("utf-8"))
    _atomic_write(dst, png)
    return sidecar


def _headerless(src: Path) -> Any:
    """The data set of a DICOM file written without its Part-10 header, or None unless it
    holds an image (pixel data with rows, columns and a photometric interpretation)."""
    import pydicom
    from pydicom.dataset import FileMetaDataset
    from pydicom.uid import ExplicitVRBigEndian, ExplicitVRLittleEndian, ImplicitVRLittleEndian

    try:
        ds = pydicom.dcmread(src, force=True)
        ok = all(k in ds for k in ("PixelData", "Rows", "Columns", "PhotometricInterpretation"))
        implicit, little = ds.original_encoding
    except Exception:  # noqa: BLE001 - not DICOM after all: the first error is reported
        return None
    if not ok or implicit is None:
        return None
    # the encoding the reader found is the transfer syntax (pixel data without a header
    # cannot be compressed: an encapsulated one then fails to decode, and says so)
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = (ImplicitVRLittleEndian if implicit else
                                      ExplicitVRLittleEndian if little else ExplicitVRBigEndian)
    return ds


def _output_name(rel: Path) -> Path:
    if rel.suffix.lower() in (".dcm", ".dicom", ".dic"):
        return rel.with_suffix(".png")
    return rel.with_name(rel.name + ".png")


def _finished(src: Path, dst: Path) -> bool:
    """True when ``dst`` and its sidecar exist and match the source and the current method."""
    side = dst.with_suffix(".json")
    if not (dst.is_file() and side.is_file()):
        return False
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
        # an unreadable source is not finished: convert_file then reports why it fails
        return (isinstance(meta, dict) and meta.get("method") == METHOD_VERSION
                and meta.get("source_sha256") == file_sha256(src)
                and meta.get("output_sha256") == file_sha256(dst))
    except (OSError, ValueError):
        return False


def _drop_stale(src: Path, dst: Path) -> str:
    """Remove the PNG and sidecar of ``dst`` (medaudit's: the caller checked) when they are
    of another version of ``src`` than the one that just failed, and say so for the report.

    Left, a later step would read them as this file's.  A conversion of these very bytes
    (failing now for another reason, such as a decoder no longer installed) is kept."""
    side = dst.with_suffix(".json")
    meta = json_object(side, ("source_sha256",)) if side.is_file() else None
    try:
        same = meta is not None and meta["source_sha256"] == file_sha256(src)
    except OSError:
        same = False
    stale = [p for p in (dst, side) if os.path.lexists(p)]
    if same or not stale:
        return ""
    try:
        for p in stale:
            p.unlink()
    except OSError as exc:
        return (f" (its earlier {dst.name}, of the file's former contents, could not be removed: "
                f"{exc.strerror}; remove it before using the folder)")
    return (f" (its earlier {' and '.join(p.name for p in stale)}, of the file's former contents, "
            "were removed)")


def _medaudit_sidecar(side: Path, png_name: str) -> bool:
    """Whether ``side`` is the sidecar medaudit wrote for the PNG ``png_name`` (any method
    version: a conversion by an earlier medaudit is medaudit's to redo)."""
    meta = json_object(side, ("output", "method", "source_sha256", "output_sha256"))
    return meta is not None and meta["output"] == png_name and isinstance(meta["method"], str)


def _not_ours(dst: Path) -> str | None:
    """Why the outputs of ``dst`` may not be written: a PNG or sidecar already there that
    medaudit did not write (a file of the user's is never replaced), or None."""
    side = dst.with_suffix(".json")
    for p in (dst, side):
        if os.path.lexists(p) and (p.is_symlink() or not p.is_file()):
            return f"{p.name!r} in the output folder is not a plain file; it was left as it is."
    if os.path.lexists(side) and not _medaudit_sidecar(side, dst.name):
        return (f"{side.name!r} in the output folder is not a sidecar medaudit wrote; it was left "
                "as it is (move it, or choose another output folder).")
    if os.path.lexists(dst) and not os.path.lexists(side):
        return (f"{dst.name!r} in the output folder has no medaudit sidecar beside it, so it is not "
                "a conversion of medaudit's; it was left as it is (move it, or choose another "
                "output folder).")
    return None


def _folder_blocked(out: Path, folder: Path) -> str | None:
    """Make ``folder`` (inside ``out``); why it cannot be made (a file of that name is in the
    way), or None.  One input's blocked folder fails that input, not the batch."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = folder.relative_to(out).as_posix()
        return (f"cannot create the folder {where!r} in the output folder ({exc.strerror}: a "
                "file of that name is in the way?); it was left as it is.")
    return None


def _is_report(path: Path) -> bool:
    return json_object(path, ("converted", "skipped", "failures")) is not None


def list_inputs(src: str | os.PathLike[str]) -> list[tuple[Path, Path]]:
    """The files :func:`convert_folder` would process, as ``(path, relative path)``, sorted."""
    src = Path(src)
    if src.is_file():
        return [(src, Path(src.name))]
    files = []
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            files.append((p, rel))
    return files


def _unfollowed_links(src: Path) -> list[tuple[str, str]]:
    """The symbolic links under ``src`` that :func:`list_inputs` passes over, each with why:
    a link to a folder is not followed (it may lead out of ``src``, or round in a loop) and a
    dangling link has nothing to read.  Listed as failures, so none is skipped unsaid."""
    if not src.is_dir():
        return []
    out = []
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        if not p.is_symlink() or any(part.startswith(".") for part in rel.parts):
            continue
        if p.is_dir():
            out.append((rel.as_posix(), "a symbolic link to a folder is not followed; give the "
                                        "folder itself (or convert it as an input of its own)."))
        elif not p.exists():
            out.append((rel.as_posix(), "a symbolic link whose target does not exist."))
    return out


def convert_folder(src: str | os.PathLike[str], out: str | os.PathLike[str], *,
                   progress: Callable[[int, int, str], None] | None = None) -> FolderReport:
    """Convert every file under ``src`` (recursively) into ``out``, mirroring the folder layout.

    ``a/b/IM1.dcm`` becomes ``out/a/b/IM1.png`` with ``out/a/b/IM1.json`` (a file without a DICOM
    suffix keeps its name and gains ``.png``).  Resumable: an output whose sidecar matches the
    source's SHA-256, the PNG's SHA-256 and the current method is skipped, not recomputed.  Each
    file is written atomically, so an interrupted run leaves only finished outputs.  Files that
    cannot be converted (not DICOM, no decoder, colour, …) are listed with the reason; the rest
    of the batch continues.  A report ``out/conversion_report.json`` is written at the end.

    Parameters
    ----------
    src : path
        Folder (or one file) to convert; hidden files and folders are ignored.
    out : path
        Output folder (created); must not lie inside ``src``.
    progress : callable, optional
        Called as ``progress(i, n, source)`` after each file (1-based ``i``).  An exception it raises
        stops the run (files finished so far stay finished).

    Returns
    -------
    FolderReport
    """
    src, out = Path(src), Path(out)
    if not src.exists():
        raise MedauditError(f"input {str(src)!r} does not exist; give a folder of DICOM files.")
    if src.is_dir() and (out.resolve() == src.resolve() or src.resolve() in out.resolve().parents):
        raise MedauditError(f"output folder {str(out)!r} lies inside the input folder {str(src)!r}; "
                            "choose an output outside it.")
    inputs = list_inputs(src)
    if not inputs:
        raise MedauditError(f"input folder {str(src)!r} contains no files.")
    if os.path.lexists(out) and not out.is_dir():
        raise MedauditError(f"output {str(out)!r} exists and is not a folder; give the folder to "
                            "write the PNG files into (it is created when missing).")
    report_path = out / "conversion_report.json"
    if os.path.lexists(report_path) and (report_path.is_symlink() or not _is_report(report_path)):
        raise MedauditError(f"{str(report_path)!r} exists and is not a conversion report medaudit "
                            "wrote; move it, or choose another output folder (nothing was written).")
    out.mkdir(parents=True, exist_ok=True)
    targets: dict[Path, list[Path]] = {}
    for _, rel in inputs:
        targets.setdefault(_output_name(rel), []).append(rel)
    converted: list[str] = []
    skipped: list[str] = []
    failures: list[tuple[str, str]] = _unfollowed_links(src)
    for i, (path, rel) in enumerate(inputs, start=1):
        name = rel.as_posix()
        dst_rel = _output_name(rel)
        clash = [r.as_posix() for r in targets[dst_rel] if r != rel]
        dst = out / dst_rel
        if clash:
            failures.append((name, f"output name {dst_rel.as_posix()!r} is also the output of "
                                   f"{', '.join(clash)}; rename one of the inputs."))
        elif dst.with_suffix(".json") == report_path:
            failures.append((name, f"its sidecar would be {report_path.name!r}, the folder's "
                                   "conversion report; rename the input."))
        elif (blocked := _folder_blocked(out, dst.parent)) is not None:
            failures.append((name, blocked))
        else:
            if _finished(path, dst):
                skipped.append(name)
            elif (why := _not_ours(dst)) is not None:
                failures.append((name, why))
            else:
                try:
                    _remove_stale_temps(dst)
                    _remove_stale_temps(dst.with_suffix(".json"))
                    convert_file(path, dst, source_name=name)
                    converted.append(name)
                except DicomConversionError as exc:
                    failures.append((name, str(exc) + _drop_stale(path, dst)))
        if progress is not None:
            progress(i, len(inputs), name)
    report = FolderReport(converted=tuple(converted), skipped=tuple(skipped), failures=tuple(failures))
    _atomic_write(report_path,
                  (json.dumps(report.to_dict(), sort_keys=True, indent=2) + "\n").encode("utf-8"))
    return report
