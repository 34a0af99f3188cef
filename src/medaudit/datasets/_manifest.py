"""Shared pieces of the manifest builders: the :class:`Manifest` record and the step ledger.

Split out of :mod:`medaudit.datasets.manifests` (which re-exports every public name) so that the
paper-000 and paper-002 builders share one ``_finish`` and one counting rule.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from medaudit.exceptions import MedauditError, SchemaError

__all__ = ["MANIFEST_COLUMNS", "KNOWN_OVERLAPS", "Manifest"]

MANIFEST_COLUMNS = ("image_id", "dataset", "path", "label", "negative_group", "split", "patient_id")
KNOWN_OVERLAPS: dict[str, tuple[str, ...]] = {
    "tbx11k": ("The TBX11K download bundles copies of Montgomery and Shenzhen (imgs/extra, all_* lists); "
               "they are excluded here, but TBX11K images are not verified distinct from them: screen "
               "with medaudit.imaging.overlap (paper 000 found 249 candidate pairs, M0.13).",),
    "montgomery": ("Partly bundled inside the TBX11K download (imgs/extra/); screen against TBX11K.",),
    "shenzhen": ("Partly bundled inside the TBX11K download (imgs/extra/); screen against TBX11K.",),
    "vindr_cxr": ("VinDr-CXR is in CheXficient's documented pretraining data (exposure, M0.4).",),
    "mimic_cxr": ("MIMIC-CXR and CheXpert are common pretraining sources of CXR models; record exposure "
                  "per model card.",),
}


@dataclass(frozen=True)
class Manifest:
    """A cohort manifest: the table, each filter's counts, overlap notes and build parameters."""

    table: pd.DataFrame
    dataset: str
    counts: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Everything but the table (the JSON sidecar of :func:`write_manifest`)."""
        return {"dataset": self.dataset, "n_rows": len(self.table), "counts": list(self.counts),
                "known_overlaps": list(self.notes), "params": self.params}


class _Steps:
    """Collects ``(step, n_before, n_after)`` so no filter drops rows without reporting it."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def __call__(self, step: str, before: int, after: int, note: str = "") -> None:
        self.rows.append({"step": step, "n_before": int(before), "n_after": int(after),
                          "n_removed": int(before) - int(after), "note": note})


def _finish(df: pd.DataFrame, dataset: str, steps: _Steps, params: dict[str, Any],
            extra_notes: tuple[str, ...] = ()) -> Manifest:
    df = df.copy()
    df["dataset"] = dataset
    for col, default in (("negative_group", ""), ("split", ""), ("patient_id", "")):
        if col not in df.columns:
            df[col] = default
    if "label" not in df.columns:
        df["label"] = pd.NA
    df["label"] = df["label"].astype("Int64")
    dup = df["image_id"].duplicated(keep=False)
    if dup.any():
        raise SchemaError(f"{dataset}: image_id is not unique: {sorted(set(df.loc[dup, 'image_id']))[:5]}.")
    cols = list(MANIFEST_COLUMNS) + [c for c in df.columns if c not in MANIFEST_COLUMNS]
    df = df[cols].sort_values(["split", "image_id"], kind="stable").reset_index(drop=True)
    return Manifest(table=df, dataset=dataset, counts=tuple(steps.rows),
                    notes=KNOWN_OVERLAPS.get(dataset, ()) + extra_notes, params=params)


def _root(root: str | os.PathLike[str], what: str) -> Path:
    root = Path(root)
    if not root.exists():
        raise MedauditError(f"{what} root {str(root)!r} does not exist.")
    try:
        return root.resolve()
    except RuntimeError:  # a symbolic-link loop (Python < 3.13)
        raise MedauditError(f"{what} root {str(root)!r} goes through a symbolic link loop.") from None


def _check_files(df: pd.DataFrame, dataset: str) -> None:
    missing = [p for p in df["path"] if not Path(p).is_file()]
    if missing:
        raise SchemaError(f"{dataset}: {len(missing)} image file(s) listed are missing, e.g. "
                          f"{missing[:3]}; fix the layout or pass require_files=False "
                          "(--no-require-files).")


def _expect(dataset: str, found: Mapping[str, int], expected: Mapping[str, int], *,
            root: str | os.PathLike[str] | None = None) -> None:
    if dict(found) != dict(expected):
        where = f" in {str(root)!r}" if root is not None else ""
        raise SchemaError(f"{dataset}: counts {dict(found)}{where} differ from the published "
                          f"{dict(expected)}; check the download (or pass expect_counts=False, "
                          "--no-expect-counts, to build it anyway).")


def _find(root: Path, names: tuple[str, ...], what: str) -> Path:
    for name in names:
        hits = sorted(root.rglob(name))
        if hits:
            return hits[0]
    raise MedauditError(f"{what}: none of {list(names)} found under {str(root)!r}.")


def _read_csv(path: str | os.PathLike[str], **kwargs: Any) -> pd.DataFrame:
    """``pandas.read_csv`` of a dataset's own file; a file pandas cannot read (empty,
    missing the expected columns, malformed) is a :class:`SchemaError` naming it."""
    try:
        return pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, UnicodeDecodeError) as exc:
        raise SchemaError(f"could not read {str(path)!r}: {exc}") from None
