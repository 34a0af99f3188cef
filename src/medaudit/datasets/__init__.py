"""Every public dataset the papers use: readers of their on-disk layouts and manifest builders.

One home for reading the shared public data in place (never copied):

* :mod:`~medaudit.datasets.manifests` (with :mod:`~medaudit.datasets.manifests_paper002`) —
  tidy image manifests of the papers' cohorts from their standard layouts (Montgomery,
  Shenzhen, TBX11K lists, VinDr-CXR, MIMIC-CXR, OpenI, PadChest, Kermany, NIH; M0.2, M2.1);
* :mod:`~medaudit.datasets.annotations` — multi-annotator data sets as annotation tables
  (ENHANCE students and crowd, the NIH expert readers, LIDC-IDRI; paper 001) and ENHANCE's
  algorithmic scores as a score table (:func:`read_dataset`, :func:`dataset_scores`);
* :mod:`~medaudit.datasets.readers` — real judgment tables from public per-reader labels
  (NIH expert panel and VinDr-CXR radiologists; paper 002).

Each reader reports what it skipped and why, names the file, row and column of every
error, and returns the source files' hashes for provenance.
"""

from __future__ import annotations

from medaudit.datasets._common import shared_data_dir, source_hashes
from medaudit.datasets.annotations import (
    DATASET_FOLDERS,
    DATASET_OPTIONS,
    dataset_scale,
    dataset_scores,
    read_dataset,
)
from medaudit.datasets.manifests import (
    BUILDERS,
    MANIFEST_COLUMNS,
    Manifest,
    build_manifest,
    read_manifest,
    write_manifest,
)

__all__ = ["DATASET_FOLDERS", "DATASET_OPTIONS", "dataset_scale", "dataset_scores", "read_dataset",
           "shared_data_dir", "source_hashes", "BUILDERS", "MANIFEST_COLUMNS", "Manifest",
           "build_manifest", "read_manifest", "write_manifest"]
