"""Images to evidence: DICOM → PNG conversion and the overlap screen.

* :mod:`medaudit.imaging.dicom` — DICOM → 8-bit PNG as paper 000 specifies (M0.3), with a
  provenance sidecar per image, resumable folder conversion and no identifying header value in
  any output;
* :mod:`medaudit.imaging.overlap` — SHA-256 and 64-bit pHash overlap screen with conservative
  exclusion (M0.13).

pydicom, Pillow and imagehash are imported only when a function needs them.
"""

from __future__ import annotations

from medaudit.imaging.dicom import (
    ConvertedImage,
    DicomConversionError,
    FolderReport,
    convert_dataset,
    convert_file,
    convert_folder,
)
from medaudit.imaging.overlap import (
    OverlapResult,
    apply_exclusion,
    exclusion,
    hamming_pairs,
    hash_images,
    screen_overlap,
    write_overlap,
)

__all__ = [
    "ConvertedImage", "DicomConversionError", "FolderReport", "convert_dataset", "convert_file",
    "convert_folder", "OverlapResult", "apply_exclusion", "exclusion", "hamming_pairs",
    "hash_images", "screen_overlap", "write_overlap",
]

# The manifests of the papers' cohorts moved to :mod:`medaudit.datasets` (one home for every
# public dataset); build them with ``medaudit.datasets.build_manifest``.
